package cli

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// flagCase is one invocation of a resource command through its runF:
// either the options it parsed are checked, or it fails with a usage
// error (exit 2) containing wantErr before runF is reached.
type flagCase[O any] struct {
	name    string
	args    []string
	env     map[string]string
	wantErr string
	check   func(t *testing.T, o *O)
}

func runFlagCases[O any](t *testing.T, build func(*Factory, func(context.Context, *O) error) *cobra.Command, cases []flagCase[O]) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			f, _, _ := testFactory()
			var got *O
			cmd := build(f, func(_ context.Context, o *O) error { got = o; return nil })
			cmd.SetArgs(c.args)
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			err := cmd.Execute()
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				if !isUsageError(err) {
					t.Fatalf("%v is not a usage error (exit 2)", err)
				}
				if got != nil {
					t.Fatal("runF ran despite the error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got == nil {
				t.Fatal("runF was not called")
			}
			if c.check != nil {
				c.check(t, got)
			}
		})
	}
}

const badOutput = "--output must be table, wide, json or yaml"

func TestOrgsFlags(t *testing.T) {
	runFlagCases(t, NewCmdOrgsList, []flagCase[OrgsListOptions]{
		{name: "defaults", check: func(t *testing.T, o *OrgsListOptions) {
			if o.Output != OutputTable || o.Paging != (resourcePaging{}) {
				t.Errorf("%+v", o)
			}
		}},
		{name: "paging", args: []string{"--limit", "20", "--all", "--cursor", "c1", "-o", "json"}, check: func(t *testing.T, o *OrgsListOptions) {
			if o.Output != OutputJSON || o.Paging != (resourcePaging{Limit: 20, All: true, Cursor: "c1"}) {
				t.Errorf("%+v", o)
			}
		}},
		{name: "limit too large", args: []string{"--limit", "201"}, wantErr: "--limit must be between 1 and 200"},
		{name: "limit zero given", args: []string{"--limit", "-1"}, wantErr: "--limit"},
		{name: "bad output", args: []string{"-o", "xml"}, wantErr: badOutput},
		{name: "positional", args: []string{"x"}, wantErr: "unknown command"},
	})
	runFlagCases(t, NewCmdOrgsGet, []flagCase[OrgsGetOptions]{
		{name: "current", check: func(t *testing.T, o *OrgsGetOptions) {
			if o.Org != "" {
				t.Errorf("%+v", o)
			}
		}},
		{name: "named", args: []string{"acme", "-o", "yaml"}, check: func(t *testing.T, o *OrgsGetOptions) {
			if o.Org != "acme" || o.Output != OutputYAML {
				t.Errorf("%+v", o)
			}
		}},
		{name: "two", args: []string{"a", "b"}, wantErr: "accepts at most 1 arg"},
		{name: "bad output", args: []string{"-o", "csv"}, wantErr: badOutput},
	})
	runFlagCases(t, NewCmdOrgsCreate, []flagCase[OrgsCreateOptions]{
		{name: "name and slug", args: []string{"--name", "Acme Inc", "--slug", "acme"}, check: func(t *testing.T, o *OrgsCreateOptions) {
			if o.Name != "Acme Inc" || o.Slug != "acme" {
				t.Errorf("%+v", o)
			}
		}},
		{name: "no name", args: []string{"--slug", "acme"}, wantErr: "required flag(s) --name"},
		{name: "bad output", args: []string{"--name", "x", "-o", "xml"}, wantErr: badOutput},
	})
	runFlagCases(t, NewCmdOrgsUpdate, []flagCase[OrgsUpdateOptions]{
		{name: "name only", args: []string{"acme", "--name", "New"}, check: func(t *testing.T, o *OrgsUpdateOptions) {
			if o.Org != "acme" || o.Name == nil || *o.Name != "New" || o.Slug != nil {
				t.Errorf("%+v", o)
			}
		}},
		{name: "empty slug is a change", args: []string{"--slug", ""}, check: func(t *testing.T, o *OrgsUpdateOptions) {
			if o.Slug == nil || *o.Slug != "" || o.Name != nil {
				t.Errorf("%+v", o)
			}
		}},
		{name: "nothing", args: []string{"acme"}, wantErr: "nothing to change"},
	})
	runFlagCases(t, NewCmdOrgsDelete, []flagCase[OrgsDeleteOptions]{
		{name: "yes", args: []string{"acme", "--yes"}, check: func(t *testing.T, o *OrgsDeleteOptions) {
			if o.Org != "acme" || !o.Yes {
				t.Errorf("%+v", o)
			}
		}},
		{name: "no confirmation flag", args: []string{"acme"}, check: func(t *testing.T, o *OrgsDeleteOptions) {
			if o.Yes {
				t.Errorf("%+v", o)
			}
		}},
		{name: "never the current org", args: []string{}, wantErr: "accepts 1 arg"},
		{name: "bad output", args: []string{"acme", "-o", "xml"}, wantErr: badOutput},
	})
}

func TestInvitationsFlags(t *testing.T) {
	runFlagCases(t, NewCmdInvitationsList, []flagCase[InvitationsListOptions]{
		{name: "bad output", args: []string{"-o", "xml"}, wantErr: badOutput},
		{name: "json", args: []string{"-o", "json"}, check: func(t *testing.T, o *InvitationsListOptions) {
			if o.Output != OutputJSON {
				t.Errorf("%+v", o)
			}
		}},
	})
	runFlagCases(t, NewCmdInvitationsCreate, []flagCase[InvitationsCreateOptions]{
		{name: "default role", args: []string{"--email", "a@b.c"}, check: func(t *testing.T, o *InvitationsCreateOptions) {
			if o.Email != "a@b.c" || o.Role != "member" {
				t.Errorf("%+v", o)
			}
		}},
		{name: "no email", wantErr: "--email"},
		{name: "bad role", args: []string{"--email", "a@b.c", "--role", "guest"}, wantErr: "--role"},
	})
	runFlagCases(t, NewCmdInvitationsReissue, []flagCase[InvitationsReissueOptions]{
		{name: "id", args: []string{"inv-1"}, check: func(t *testing.T, o *InvitationsReissueOptions) {
			if o.ID != "inv-1" {
				t.Errorf("%+v", o)
			}
		}},
		{name: "missing", wantErr: "accepts 1 arg"},
	})
	runFlagCases(t, NewCmdInvitationsRevoke, []flagCase[InvitationsRevokeOptions]{
		{name: "yes", args: []string{"inv-1", "--yes"}, check: func(t *testing.T, o *InvitationsRevokeOptions) {
			if o.ID != "inv-1" || !o.Yes {
				t.Errorf("%+v", o)
			}
		}},
		{name: "bad output", args: []string{"inv-1", "-o", "toml"}, wantErr: badOutput},
	})
	runFlagCases(t, NewCmdInvitationsAccept, []flagCase[InvitationsAcceptOptions]{
		{name: "password from stdin", args: []string{"inv_tok", "--password-stdin", "--name", "Bob"}, check: func(t *testing.T, o *InvitationsAcceptOptions) {
			if o.Token != "inv_tok" || !o.Password.Stdin || o.Name != "Bob" || o.NewAccount {
				t.Errorf("%+v", o)
			}
		}},
		{name: "two password sources", args: []string{"inv_tok", "--password-stdin", "--password-file", "pw"}, wantErr: "cannot be used together"},
		{name: "no token", wantErr: "accepts 1 arg"},
	})
}

func TestServiceAccountsFlags(t *testing.T) {
	runFlagCases(t, NewCmdServiceAccountsList, []flagCase[ServiceAccountsListOptions]{
		{name: "bad output", args: []string{"-o", "xml"}, wantErr: badOutput},
	})
	runFlagCases(t, NewCmdServiceAccountsGet, []flagCase[ServiceAccountsGetOptions]{
		{name: "id", args: []string{"sa-1", "-o", "json"}, check: func(t *testing.T, o *ServiceAccountsGetOptions) {
			if o.ID != "sa-1" || o.Output != OutputJSON {
				t.Errorf("%+v", o)
			}
		}},
		{name: "missing", wantErr: "accepts 1 arg"},
	})
	runFlagCases(t, NewCmdServiceAccountsCreate, []flagCase[ServiceAccountsCreateOptions]{
		{name: "label defaults to the name", args: []string{"--name", "ci-bot", "--permissions", "organizations.read, members.read", "--expires-in", "30d"},
			check: func(t *testing.T, o *ServiceAccountsCreateOptions) {
				if o.Name != "ci-bot" || o.Label != "ci-bot" || strings.Join(o.Permissions, ",") != "organizations.read,members.read" {
					t.Errorf("%+v", o)
				}
				if o.ExpiresAt == nil || time.Until(*o.ExpiresAt) < 29*24*time.Hour {
					t.Errorf("expires %v", o.ExpiresAt)
				}
			}},
		{name: "repeated permissions flags", args: []string{"--name", "x", "--permissions", "audit.read", "--permissions", "usage.read"},
			check: func(t *testing.T, o *ServiceAccountsCreateOptions) {
				if len(o.Permissions) != 2 || o.ExpiresAt != nil {
					t.Errorf("%+v", o)
				}
			}},
		{name: "no permissions", args: []string{"--name", "x"}, wantErr: "--permissions"},
		{name: "unknown permission", args: []string{"--name", "x", "--permissions", "root.all"}, wantErr: "unknown permission"},
		{name: "two expiries", args: []string{"--name", "x", "--permissions", "audit.read", "--expires-in", "1h", "--expires-at", "2099-01-01T00:00:00Z"},
			wantErr: "cannot be used together"},
	})
	runFlagCases(t, NewCmdServiceAccountsDelete, []flagCase[ServiceAccountsDeleteOptions]{
		{name: "yes", args: []string{"sa-1", "--yes"}, check: func(t *testing.T, o *ServiceAccountsDeleteOptions) {
			if !o.Yes || o.ID != "sa-1" {
				t.Errorf("%+v", o)
			}
		}},
		{name: "missing", wantErr: "accepts 1 arg"},
	})
}

func TestKeysFlags(t *testing.T) {
	runFlagCases(t, NewCmdKeysList, []flagCase[KeysListOptions]{
		{name: "org by default", check: func(t *testing.T, o *KeysListOptions) {
			if o.Scope != "org" || o.User != "" {
				t.Errorf("%+v", o)
			}
		}},
		{name: "instance filter", args: []string{"--scope", "instance", "--user", "a@b.c"}, check: func(t *testing.T, o *KeysListOptions) {
			if o.Scope != "instance" || o.User != "a@b.c" {
				t.Errorf("%+v", o)
			}
		}},
		{name: "user needs instance", args: []string{"--user", "a@b.c"}, wantErr: "--scope instance"},
		{name: "bad scope", args: []string{"--scope", "platform"}, wantErr: "--scope must be one of instance, org, workspace"},
		{name: "bad output", args: []string{"-o", "xml"}, wantErr: badOutput},
	})
	runFlagCases(t, NewCmdKeysGet, []flagCase[KeysGetOptions]{
		{name: "workspace", args: []string{"k1", "--scope", "workspace"}, check: func(t *testing.T, o *KeysGetOptions) {
			if o.ID != "k1" || o.Scope != "workspace" {
				t.Errorf("%+v", o)
			}
		}},
		{name: "missing", wantErr: "accepts 1 arg"},
	})
	runFlagCases(t, NewCmdKeysCreate, []flagCase[KeysCreateOptions]{
		{name: "full", args: []string{"--permissions", "workspaces.read", "--label", "ci", "--scope", "workspace", "--expires-at", "2099-01-01T00:00:00Z"},
			check: func(t *testing.T, o *KeysCreateOptions) {
				if o.Scope != "workspace" || o.Label != "ci" || o.ExpiresAt == nil || o.ExpiresAt.Year() != 2099 {
					t.Errorf("%+v", o)
				}
			}},
		{name: "no label", args: []string{"--permissions", "workspaces.read"}, wantErr: "--label"},
		{name: "empty permissions", args: []string{"--permissions", ",", "--label", "x"}, wantErr: "at least one permission"},
		{name: "past expiry", args: []string{"--permissions", "audit.read", "--label", "x", "--expires-at", "2001-01-01T00:00:00Z"}, wantErr: "not in the future"},
		{name: "bad lifetime", args: []string{"--permissions", "audit.read", "--label", "x", "--expires-in", "soon"}, wantErr: "--expires-in"},
		{name: "bad output", args: []string{"--permissions", "audit.read", "--label", "x", "-o", "xml"}, wantErr: badOutput},
	})
	runFlagCases(t, NewCmdKeysRevoke, []flagCase[KeysRevokeOptions]{
		{name: "instance", args: []string{"k1", "--scope", "instance", "--yes"}, check: func(t *testing.T, o *KeysRevokeOptions) {
			if o.ID != "k1" || o.Scope != "instance" || !o.Yes {
				t.Errorf("%+v", o)
			}
		}},
		{name: "missing", wantErr: "accepts 1 arg"},
	})
}

func TestInferenceKeysFlags(t *testing.T) {
	runFlagCases(t, NewCmdInferenceKeysList, []flagCase[InferenceKeysListOptions]{
		{name: "bad output", args: []string{"-o", "xml"}, wantErr: badOutput},
	})
	runFlagCases(t, NewCmdInferenceKeysGet, []flagCase[InferenceKeysGetOptions]{
		{name: "id", args: []string{"k1"}, check: func(t *testing.T, o *InferenceKeysGetOptions) {
			if o.ID != "k1" {
				t.Errorf("%+v", o)
			}
		}},
		{name: "missing", wantErr: "accepts 1 arg"},
	})
	runFlagCases(t, NewCmdInferenceKeysCreate, []flagCase[InferenceKeysCreateOptions]{
		{name: "owner and lifetime", args: []string{"--name", "app", "--user", "bob@example.com", "--expires-in", "12h"},
			check: func(t *testing.T, o *InferenceKeysCreateOptions) {
				if o.Name != "app" || o.User != "bob@example.com" || o.ExpiresAt == nil {
					t.Errorf("%+v", o)
				}
			}},
		{name: "no name", wantErr: "--name"},
		{name: "zero lifetime", args: []string{"--name", "x", "--expires-in", "0d"}, wantErr: "positive"},
	})
	runFlagCases(t, NewCmdInferenceKeysRevoke, []flagCase[InferenceKeysRevokeOptions]{
		{name: "yes", args: []string{"k1", "--yes"}, check: func(t *testing.T, o *InferenceKeysRevokeOptions) {
			if !o.Yes {
				t.Errorf("%+v", o)
			}
		}},
		{name: "missing", wantErr: "accepts 1 arg"},
	})
}

func TestCatalogFlags(t *testing.T) {
	runFlagCases(t, NewCmdCatalogList, []flagCase[CatalogListOptions]{
		{name: "providers at instance", args: []string{"--scope", "instance", "--providers"}, check: func(t *testing.T, o *CatalogListOptions) {
			if o.Scope != "instance" || !o.Providers {
				t.Errorf("%+v", o)
			}
		}},
		{name: "bad scope", args: []string{"--scope", "platform"}, wantErr: "--scope"},
		{name: "bad output", args: []string{"-o", "xml"}, wantErr: badOutput},
	})
	runFlagCases(t, NewCmdCatalogImport, []flagCase[CatalogImportOptions]{
		{name: "file", args: []string{"-f", "catalog.yaml", "--dry-run"}, check: func(t *testing.T, o *CatalogImportOptions) {
			if o.File != "catalog.yaml" || !o.DryRun {
				t.Errorf("%+v", o)
			}
		}},
		{name: "no file", wantErr: "--file"},
	})
	runFlagCases(t, NewCmdCatalogRetire, []flagCase[CatalogRetireOptions]{
		{name: "model with slashes", args: []string{"openai/gpt-4o-mini", "--yes"}, check: func(t *testing.T, o *CatalogRetireOptions) {
			if o.Model != "openai/gpt-4o-mini" || o.Provider != "" || !o.Yes {
				t.Errorf("%+v", o)
			}
		}},
		{name: "provider", args: []string{"--provider", "groq"}, check: func(t *testing.T, o *CatalogRetireOptions) {
			if o.Provider != "groq" || o.Model != "" {
				t.Errorf("%+v", o)
			}
		}},
		{name: "both", args: []string{"openai/gpt-4o", "--provider", "groq"}, wantErr: "exactly one"},
		{name: "neither", wantErr: "exactly one"},
	})
}

func TestModelsFlags(t *testing.T) {
	runFlagCases(t, NewCmdModelsList, []flagCase[ModelsListOptions]{
		{name: "key flag", args: []string{"--key", "sk-gw-abc"}, check: func(t *testing.T, o *ModelsListOptions) {
			if o.Target.Key != "sk-gw-abc" {
				t.Errorf("%+v", o)
			}
		}},
		{name: "key from env", env: map[string]string{"GW_INFERENCE_KEY": "sk-gw-env", "GW_DATA_PLANE_URL": "http://dp:8080"},
			check: func(t *testing.T, o *ModelsListOptions) {
				if o.Target.Key != "sk-gw-env" || o.Target.DataPlaneURL != "http://dp:8080" {
					t.Errorf("%+v", o)
				}
			}},
		{name: "flag beats env", args: []string{"--key", "sk-gw-flag"}, env: map[string]string{"GW_INFERENCE_KEY": "sk-gw-env"},
			check: func(t *testing.T, o *ModelsListOptions) {
				if o.Target.Key != "sk-gw-flag" {
					t.Errorf("%+v", o)
				}
			}},
		{name: "no key", env: map[string]string{"GW_INFERENCE_KEY": ""}, wantErr: "no inference key"},
		{name: "bad output", args: []string{"--key", "k", "-o", "xml"}, wantErr: badOutput},
	})
	runFlagCases(t, NewCmdModelsGet, []flagCase[ModelsGetOptions]{
		{name: "slashes", args: []string{"openai/gpt-4o-mini", "--key", "sk-gw-abc"}, check: func(t *testing.T, o *ModelsGetOptions) {
			if o.ID != "openai/gpt-4o-mini" {
				t.Errorf("%+v", o)
			}
		}},
		{name: "missing", args: []string{"--key", "k"}, wantErr: "accepts 1 arg"},
	})
}

func TestActivityFlags(t *testing.T) {
	runFlagCases(t, NewCmdActivityList, []flagCase[ActivityListOptions]{
		{name: "defaults", check: func(t *testing.T, o *ActivityListOptions) {
			if o.Scope != "org" || o.Paging != (resourcePaging{}) {
				t.Errorf("%+v", o)
			}
		}},
		{name: "instance all", args: []string{"--scope", "instance", "--all", "--limit", "200"}, check: func(t *testing.T, o *ActivityListOptions) {
			if o.Scope != "instance" || !o.Paging.All || o.Paging.Limit != 200 {
				t.Errorf("%+v", o)
			}
		}},
		{name: "no workspace activity", args: []string{"--scope", "workspace"}, wantErr: "--scope must be one of instance, org"},
		{name: "bad output", args: []string{"-o", "xml"}, wantErr: badOutput},
	})
}

// TestResourceCommandsExitCodes runs bad invocations through the whole
// tree: every one is a usage error, exit 2, before any network.
func TestResourceCommandsExitCodes(t *testing.T) {
	t.Setenv("GW_SERVER", "http://127.0.0.1:1")
	t.Setenv("GW_TOKEN", "sk-cp-x")
	for _, args := range [][]string{
		{"orgs", "list", "-o", "xml"},
		{"orgs", "get", "-o", "xml"},
		{"workspaces", "members", "list", "-o", "xml"},
		{"keys", "list", "--scope", "galaxy"},
		{"credentials", "create", "--provider", "openai"},
		{"credentials", "create", "--provider", "openai", "--label", "x", "--secret", "leak"},
		{"catalog", "retire"},
		{"activity", "list", "--limit", "0", "--all", "--cursor", "x", "--scope", "org", "--output", "html"},
		{"models", "get"},
		{"invitations", "accept"},
	} {
		f, _, errOut := testFactory()
		f.ConfigPath = t.TempDir() + "/config.yaml"
		if code := Run(context.Background(), f, args); code != ExitUsage {
			t.Errorf("gw %s: exit %d, want %d (%s)", strings.Join(args, " "), code, ExitUsage, errOut)
		}
	}
}
