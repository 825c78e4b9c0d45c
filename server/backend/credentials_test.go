package backend_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/catalogdb"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// fakeSeal seals by naming: the rules do not depend on the cipher.
func fakeSeal(secret []byte, id uuid.UUID) (string, error) { return "sealed:" + id.String(), nil }

func TestCredentialRules(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		if err := catalogdb.Seed(ctx, w.st); err != nil {
			t.Fatal(err)
		}
		orgScope := store.CredentialScope{OrgID: &w.org.ID}
		wsScope := store.CredentialScope{OrgID: &w.org.ID, WorkspaceID: &w.ws.ID}
		url := "http://127.0.0.1:8000/v1"
		label := "renamed"
		secret := "sk-a-long-enough-secret-1234"
		var openai, compatible *store.ProviderCredential
		refused := errors.New("the provider's kind refuses this secret")
		checkRules(t, w.st, w.org.ID, []rule{
			{name: "create at the organization", op: func() error {
				var err error
				openai, err = backend.CreateCredential(ctx, w.st, w.admin, backend.CredentialCreate{Scope: orgScope, Provider: "openai",
					Label: "main", Secret: secret, Seal: fakeSeal})
				if err == nil && (openai.SecretHint != "…1234" || openai.SecretSealed != "sealed:"+openai.ID.String()) {
					t.Errorf("hint %q, sealed %q", openai.SecretHint, openai.SecretSealed)
				}
				return err
			}, action: "provider_credential.created", by: &w.admin},
			// A second credential of the provider with the label, at the
			// scope, case aside, is refused (issue 26, row 12); another
			// provider or another scope may reuse the label.
			{name: "create a second openai credential labelled main", op: func() error {
				_, err := backend.CreateCredential(ctx, w.st, w.admin, backend.CredentialCreate{Scope: orgScope, Provider: "openai",
					Label: "Main", Secret: secret, Seal: fakeSeal})
				if err == nil || !strings.Contains(err.Error(), `label "main" is taken at this scope by openai credential `+openai.ID.String()) {
					t.Errorf("err %v", err)
				}
				return err
			}, kind: backend.Conflict},
			{name: "label an anthropic credential main too", op: func() error {
				_, err := backend.CreateCredential(ctx, w.st, w.admin, backend.CredentialCreate{Scope: orgScope, Provider: "anthropic",
					Label: "main", Secret: secret, Seal: fakeSeal})
				return err
			}, action: "provider_credential.created", by: &w.admin},
			{name: "label an openai credential main in the workspace", op: func() error {
				_, err := backend.CreateCredential(ctx, w.st, w.admin, backend.CredentialCreate{Scope: wsScope, Provider: "openai",
					Label: "main", Secret: secret, Seal: fakeSeal})
				return err
			}, action: "provider_credential.created", by: &w.admin},
			{name: "create an openai-compatible one with its URL", op: func() error {
				var err error
				compatible, err = backend.CreateCredential(ctx, w.st, w.admin, backend.CredentialCreate{Scope: wsScope, Provider: "openai-compatible",
					Label: "vllm", Secret: "short", BaseURL: &url, Seal: fakeSeal})
				return err
			}, action: "provider_credential.created", by: &w.admin},
			{name: "read it at another scope", op: func() error {
				_, err := backend.ScopedCredential(ctx, w.st, orgScope, compatible.ID)
				return err
			}, kind: backend.NotFound},
			{name: "update it from another scope", op: func() error {
				_, err := backend.UpdateCredential(ctx, w.st, w.admin, orgScope, compatible.ID, backend.CredentialUpdate{Label: &label, Seal: fakeSeal})
				return err
			}, kind: backend.NotFound},
			{name: "clear the URL of a provider the catalog gives none", op: func() error {
				_, err := backend.UpdateCredential(ctx, w.st, w.admin, wsScope, compatible.ID, backend.CredentialUpdate{ClearBaseURL: true,
					Secret: &secret, Seal: fakeSeal})
				return err
			}, kind: invalid},
			{name: "a check that refuses stops the update", op: func() error {
				_, err := backend.UpdateCredential(ctx, w.st, w.admin, orgScope, openai.ID, backend.CredentialUpdate{Label: &label, Seal: fakeSeal,
					Check: func(*store.ProviderCredential) error { return refused }})
				if !errors.Is(err, refused) {
					t.Errorf("err %v", err)
				}
				return nil
			}},
			{name: "clear the URL of one the catalog gives", op: func() error {
				_, err := backend.UpdateCredential(ctx, w.st, w.admin, orgScope, openai.ID, backend.CredentialUpdate{ClearBaseURL: true,
					Secret: &secret, Label: &label, Seal: fakeSeal})
				return err
			}, action: "provider_credential.updated", by: &w.admin},
			{name: "delete it from another organization", op: func() error {
				other := uuid.New()
				return backend.DeleteCredential(ctx, w.st, w.admin, store.CredentialScope{OrgID: &other}, openai.ID)
			}, kind: backend.NotFound},
			{name: "delete it", op: func() error { return backend.DeleteCredential(ctx, w.st, w.admin, orgScope, openai.ID) },
				action: "provider_credential.deleted", by: &w.admin},
		})
		c, err := w.st.GetProviderCredential(ctx, compatible.ID)
		if err != nil || c.Label != "vllm" || c.BaseURL == nil {
			t.Fatalf("refused updates changed the credential: %+v %v", c, err)
		}

		// Relabelling into a label its provider holds at the scope is
		// refused like creating it.
		second, err := backend.CreateCredential(ctx, w.st, w.admin, backend.CredentialCreate{Scope: wsScope, Provider: "openai-compatible",
			Label: "vllm-2", Secret: "short", BaseURL: &url, Seal: fakeSeal})
		if err != nil {
			t.Fatal(err)
		}
		taken := "VLLM"
		_, err = backend.UpdateCredential(ctx, w.st, w.admin, wsScope, second.ID, backend.CredentialUpdate{Label: &taken, Seal: fakeSeal})
		var be *backend.Error
		if !errors.As(err, &be) || be.Kind != backend.Conflict {
			t.Fatalf("relabel into a taken label: %v", err)
		}
	})
}

// A secret's hint tells keys apart without giving any away; a JSON
// credential is hinted by the member naming it, never its tail `"}`
// (issue 26, row 12).
func TestSecretHint(t *testing.T) {
	for _, c := range []struct{ name, secret, want string }{
		{"an api key", "sk-proj-0123456789abcdefWXYZ", "…WXYZ"},
		{"a short one", "short-key", ""},
		{"bedrock", `{"access_key_id":"AKIAIOSFODNN7EXAMPLE","secret_access_key":"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}`, "AKIA…MPLE"},
		{"bedrock, temporary", `{"access_key_id":"ASIAXYZ0123456789ABC","secret_access_key":"s","session_token":"FwoGZX"}`, "ASIA…9ABC"},
		{"vertex", `{"type":"service_account","project_id":"p","private_key_id":"8f1e2d3c4b5a69788796a5b4c3d2e1f0a1b2c3d4",` +
			`"private_key":"-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n","client_email":"gw@p.iam.gserviceaccount.com"}`,
			"gw@p.iam.gserviceaccount.com (key …c3d4)"},
		{"entra id", `{"tenant_id":"t","client_id":"0b9c5f5e-1111-4222-8333-444455556666","client_secret":"Qx8~secret"}`, "client 0b9c…6666"},
		{"another object", `{"api_key":"sk-0123456789abcdef"}`, ""},
		{"not json after all", `{not json, but long enough`, ""},
	} {
		got := backend.SecretHint(c.secret)
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
		if strings.Contains(got, `"`) || strings.Contains(got, "}") || strings.Contains(got, "secret") || strings.Contains(got, "EXAMPLEKEY") {
			t.Errorf("%s: the hint %q shows the secret", c.name, got)
		}
	}
}
