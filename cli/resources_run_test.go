package cli

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
	"go.yaml.in/yaml/v3"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/publish"
	"github.com/gw-gateway/gw/server/reseal"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// resEnv is the real management API and the real data plane on a fresh
// SQLite database, as gw serve runs them in one process, bootstrapped
// (instance owner, organization and workspace "default"), with the CLI
// pointed at it through GW_SERVER, GW_TOKEN, GW_ORG and GW_WORKSPACE.
type resEnv struct {
	t    *testing.T
	url  string
	boot wire.BootstrapResult
	st   *store.Store
	kr   *secrets.Keyring
	cfg  string
	// usage holds the usage events the data plane recorded.
	usage *memUsage

	mu   sync.Mutex
	hits map[string]int
}

func newResEnv(t *testing.T) *resEnv {
	t.Helper()
	return newResEnvOn(t, storetest.Open(t, storetest.SQLite))
}

// newResEnvOn is newResEnv on a database of the caller's (storetest.Each
// runs a test on both dialects).
func newResEnvOn(t *testing.T, db *bun.DB) *resEnv {
	t.Helper()
	ctx := context.Background()
	st := store.New(db)
	key, err := secrets.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	kr := secrets.NewKeyring(key)
	signer, err := publish.SigningKey(ctx, st, kr)
	if err != nil {
		t.Fatal(err)
	}
	usage := &memUsage{}
	plane := dataplane.NewPlane(signer.Public().(ed25519.PublicKey), dataplane.Options{Keyring: kr, Usage: usage})
	refresher := &publish.Refresher{Compiler: &publish.Compiler{Store: st, Signer: signer}, Plane: plane, Store: st}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := api.New(ctx, st, api.Options{Keyring: kr, Bundles: refresher, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	booted, err := backend.Bootstrap(ctx, st, backend.System("test"), backend.BootstrapInput{Email: "owner@example.com", Password: "correct horse battery"}, nil)
	boot := wire.BootstrapResult{}
	if err == nil {
		boot = api.BootstrapResult(booted)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := refresher.RefreshAll(ctx); err != nil {
		t.Fatal(err)
	}
	e := &resEnv{t: t, boot: boot, st: st, kr: kr, usage: usage, cfg: filepath.Join(t.TempDir(), "config.yaml"), hits: map[string]int{}}
	mux := http.NewServeMux()
	mux.Handle("/api/v1/", s)
	mux.Handle("/inf/v1/", plane)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.hits[r.Method+" "+r.URL.Path]++
		e.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	e.url = srv.URL
	t.Setenv("GW_SERVER", srv.URL)
	t.Setenv("GW_TOKEN", boot.ManagementKey.Token)
	t.Setenv("GW_ORG", boot.Organization.Slug)
	t.Setenv("GW_WORKSPACE", boot.Workspace.Slug)
	for _, k := range []string{"GW_CONTEXT", "GW_INFERENCE_KEY", "GW_DATA_PLANE_URL"} {
		t.Setenv(k, "")
	}
	return e
}

// memUsage is the data plane's usage sink in these tests: the events, in
// memory.
type memUsage struct {
	mu     sync.Mutex
	events []wire.UsageEventIn
}

func (m *memUsage) Record(ev wire.UsageEventIn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, ev)
}

func (m *memUsage) all() []wire.UsageEventIn {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]wire.UsageEventIn(nil), m.events...)
}

type gwResult struct {
	code        int
	out, errOut string
}

// gw runs the CLI with stdin; nothing is a terminal.
func (e *resEnv) gw(stdin string, args ...string) gwResult {
	return e.gwIO(&cmdutil.IOStreams{In: strings.NewReader(stdin)}, args...)
}

func (e *resEnv) gwIO(ios *cmdutil.IOStreams, args ...string) gwResult {
	e.t.Helper()
	var out, errOut bytes.Buffer
	ios.Out, ios.ErrOut = &out, &errOut
	f := &cmdutil.Factory{IO: ios, ConfigPath: e.cfg}
	code := Run(context.Background(), f, args)
	return gwResult{code: code, out: out.String(), errOut: errOut.String()}
}

// ok runs the CLI and fails the test unless it exits 0; it returns stdout.
func (e *resEnv) ok(args ...string) string {
	e.t.Helper()
	r := e.gw("", args...)
	if r.code != ExitOK {
		e.t.Fatalf("gw %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.out, r.errOut)
	}
	return r.out
}

// code runs the CLI and checks its exit code; it returns the result.
func (e *resEnv) code(want int, stdin string, args ...string) gwResult {
	e.t.Helper()
	r := e.gw(stdin, args...)
	if r.code != want {
		e.t.Fatalf("gw %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, want, r.out, r.errOut)
	}
	return r
}

func (e *resEnv) hitCount(key string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.hits[key]
}

// rawData GETs a management path with the owner key and returns its data
// member as generic JSON.
func (e *resEnv) rawData(path string) any {
	e.t.Helper()
	req, _ := http.NewRequest("GET", e.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+e.boot.ManagementKey.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var env struct {
		Data any `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		e.t.Fatal(err)
	}
	return env.Data
}

func decodeJSONOut[T any](t *testing.T, out string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out)
	}
	return v
}

func genericJSON(t *testing.T, raw string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, raw)
	}
	return v
}

func mustContain(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s does not contain %q:\n%s", what, w, got)
		}
	}
}

// piped tables are tab-separated rows without a header.
func tableRows(out string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if line != "" {
			rows = append(rows, strings.Split(line, "\t"))
		}
	}
	return rows
}

func TestOrgsRun(t *testing.T) {
	e := newResEnv(t)
	for _, name := range []string{"Acme", "Beta", "Gamma", "Delta", "Epsilon"} {
		o := decodeJSONOut[wire.Organization](t, e.ok("orgs", "create", "--name", name, "-o", "json"))
		if o.Name != name || o.Slug != strings.ToLower(name) {
			t.Fatalf("created %+v", o)
		}
	}

	// json prints the wire objects exactly as the server sent them.
	got := genericJSON(t, e.ok("orgs", "get", "acme", "-o", "json"))
	if want := e.rawData("/api/v1/organizations/acme"); !reflect.DeepEqual(got, want) {
		t.Fatalf("orgs get json\n got %v\nwant %v", got, want)
	}
	var y any
	if err := yaml.Unmarshal([]byte(e.ok("orgs", "get", "acme", "-o", "yaml")), &y); err != nil || y.(map[string]any)["slug"] != "acme" {
		t.Fatalf("orgs get yaml: %v %v", y, err)
	}
	// Without an argument, get shows the effective organization.
	mustContain(t, "orgs get", e.ok("orgs", "get"), "slug\t"+e.boot.Organization.Slug)

	// --all follows the cursors: six organizations in pages of two.
	before := e.hitCount("GET /api/v1/organizations")
	all := decodeJSONOut[[]wire.Organization](t, e.ok("orgs", "list", "--all", "--limit", "2", "-o", "json"))
	if len(all) != 6 {
		t.Fatalf("--all listed %d organizations, want 6", len(all))
	}
	seen := map[uuid.UUID]bool{}
	for _, o := range all {
		seen[o.ID] = true
	}
	if len(seen) != 6 {
		t.Fatalf("--all repeated organizations: %v", all)
	}
	if pages := e.hitCount("GET /api/v1/organizations") - before; pages != 3 {
		t.Fatalf("--all --limit 2 fetched %d pages, want 3", pages)
	}

	// One page: what is left is announced on stderr with the cursor.
	r := e.code(ExitOK, "", "orgs", "list", "--limit", "2")
	rows := tableRows(r.out)
	if len(rows) != 2 || len(rows[0]) != 4 || rows[0][0] != all[0].ID.String() {
		t.Fatalf("one page of 2, piped: %q", r.out)
	}
	mustContain(t, "stderr", r.errOut, "more results", "--cursor ")
	cursor := strings.Fields(r.errOut[strings.Index(r.errOut, "--cursor ")+len("--cursor "):])[0]
	next := tableRows(e.ok("orgs", "list", "--limit", "2", "--cursor", cursor))
	if len(next) != 2 || next[0][0] != all[2].ID.String() {
		t.Fatalf("second page %v, want from %s", next, all[2].ID)
	}
	// The last page says nothing more.
	if r := e.code(ExitOK, "", "orgs", "list", "--limit", "50"); r.errOut != "" || len(tableRows(r.out)) != 6 {
		t.Fatalf("full page: %q %q", r.out, r.errOut)
	}

	// A table on a terminal is aligned, with a header.
	term := e.gwIO(&cmdutil.IOStreams{In: strings.NewReader(""), ForceTerminal: true}, "orgs", "list", "--limit", "1")
	if !strings.HasPrefix(term.out, "ID ") || !strings.Contains(term.out, "SLUG") || strings.Contains(term.out, "\t") {
		t.Fatalf("terminal table:\n%s", term.out)
	}

	upd := decodeJSONOut[wire.Organization](t, e.ok("orgs", "update", "beta", "--name", "Beta Two", "-o", "json"))
	if upd.Name != "Beta Two" || upd.Slug != "beta" {
		t.Fatalf("update %+v", upd)
	}

	// Destructive without a terminal and without --yes: refused, exit 2,
	// nothing deleted.
	r = e.code(ExitUsage, "", "orgs", "delete", "gamma")
	mustContain(t, "stderr", r.errOut, "--yes")
	e.ok("orgs", "get", "gamma")
	d := decodeJSONOut[wire.Deleted](t, e.ok("orgs", "delete", "gamma", "--yes", "-o", "json"))
	if d.DeletedAt.IsZero() {
		t.Fatalf("deleted %+v", d)
	}
	r = e.code(ExitError, "", "orgs", "get", "gamma")
	mustContain(t, "stderr", r.errOut, "404")

	// A bad credential is exit 4.
	t.Setenv("GW_TOKEN", "sk-cp-not-a-real-key")
	e.code(ExitAuth, "", "orgs", "list")
}

func TestWorkspacesAndMembersRun(t *testing.T) {
	e := newResEnv(t)
	w := decodeJSONOut[wire.Workspace](t, e.ok("workspaces", "create", "--name", "Research", "-o", "json"))
	if w.Slug != "research" || w.OrgID != e.boot.Organization.ID {
		t.Fatalf("created %+v", w)
	}
	rows := tableRows(e.ok("workspaces", "list"))
	if len(rows) != 2 {
		t.Fatalf("workspaces list: %v", rows)
	}
	got := genericJSON(t, e.ok("workspaces", "list", "-o", "json"))
	if want := e.rawData("/api/v1/organizations/" + e.boot.Organization.Slug + "/workspaces"); !reflect.DeepEqual(got, want) {
		t.Fatalf("workspaces list json\n got %v\nwant %v", got, want)
	}
	mustContain(t, "workspaces get", e.ok("workspaces", "get", "research"), "id\t"+w.ID.String())
	mustContain(t, "workspaces update", e.ok("workspaces", "update", "research", "--name", "R&D"), "name\tR&D")

	// A second person joins through an invitation, creating the account.
	r := e.code(ExitOK, "", "invitations", "create", "--email", "bob@example.com", "--role", "member")
	token := strings.TrimSpace(r.out)
	if !strings.HasPrefix(token, "inv_") && len(token) < 20 {
		t.Fatalf("invitation token on stdout: %q", r.out)
	}
	mustContain(t, "stderr", r.errOut, "shown only once")
	invs := decodeJSONOut[[]wire.Invitation](t, e.ok("invitations", "list", "-o", "json"))
	if len(invs) != 1 || invs[0].Token != "" || invs[0].Status != "pending" {
		t.Fatalf("invitations list %+v", invs)
	}
	// Reissuing hands out a new token; the old one stops working.
	r = e.code(ExitOK, "", "invitations", "reissue", invs[0].ID.String())
	newToken := strings.TrimSpace(r.out)
	if newToken == token || newToken == "" {
		t.Fatalf("reissued token %q", newToken)
	}
	e.code(ExitError, "a long enough password\n", "invitations", "accept", token, "--password-stdin")
	r = e.code(ExitOK, "a long enough password\n", "invitations", "accept", newToken, "--password-stdin", "--name", "Bob", "-o", "json")
	acc := decodeJSONOut[wire.InvitationAccepted](t, r.out)
	if acc.User.Email != "bob@example.com" || acc.Membership.Role != "member" {
		t.Fatalf("accepted %+v", acc)
	}
	bob := acc.User.ID.String()

	// A second invitation is revoked (with --yes; without, refused).
	inv := decodeJSONOut[wire.Invitation](t, e.ok("invitations", "create", "--email", "carol@example.com", "-o", "json"))
	if inv.Token == "" {
		t.Fatal("json output of invitations create lacks the token")
	}
	e.code(ExitUsage, "", "invitations", "revoke", inv.ID.String())
	rev := decodeJSONOut[wire.Invitation](t, e.ok("invitations", "revoke", inv.ID.String(), "--yes", "-o", "json"))
	if rev.Status != "revoked" {
		t.Fatalf("revoked %+v", rev)
	}

	// Members: by email or id.
	ms := decodeJSONOut[[]wire.Member](t, e.ok("members", "list", "-o", "json"))
	if len(ms) != 2 {
		t.Fatalf("members %+v", ms)
	}
	m := decodeJSONOut[wire.Member](t, e.ok("members", "update", "bob@example.com", "--role", "admin", "-o", "json"))
	if m.Role != "admin" || m.UserID.String() != bob {
		t.Fatalf("member update %+v", m)
	}

	// Workspace members of "research".
	t.Setenv("GW_WORKSPACE", "research")
	wm := decodeJSONOut[wire.WorkspaceMember](t, e.ok("workspaces", "members", "add", "bob@example.com", "--role", "viewer", "-o", "json"))
	if wm.UserID.String() != bob || wm.Role != "viewer" {
		t.Fatalf("workspace member add %+v", wm)
	}
	mustContain(t, "workspace members", e.ok("workspaces", "members", "list"), bob+"\tbob@example.com\tBob\tviewer")
	mustContain(t, "workspace member update", e.ok("workspaces", "members", "update", bob, "--role", "admin"), "\tadmin")
	e.code(ExitUsage, "", "workspaces", "members", "remove", bob)
	e.ok("workspaces", "members", "remove", bob, "--yes")
	if rows := tableRows(e.ok("workspaces", "members", "list")); len(rows) != 0 {
		t.Fatalf("after remove: %v", rows)
	}

	e.code(ExitUsage, "", "members", "remove", "bob@example.com")
	e.ok("members", "remove", "bob@example.com", "--yes")
	if ms := decodeJSONOut[[]wire.Member](t, e.ok("members", "list", "-o", "json")); len(ms) != 1 {
		t.Fatalf("after remove: %+v", ms)
	}

	// Deleting a workspace: refused without --yes, then done.
	e.code(ExitUsage, "", "workspaces", "delete", "research")
	e.ok("workspaces", "get", "research")
	e.ok("workspaces", "delete", "research", "--yes")
	e.code(ExitError, "", "workspaces", "get", "research")
}

func TestServiceAccountsAndKeysRun(t *testing.T) {
	e := newResEnv(t)
	r := e.code(ExitOK, "", "service-accounts", "create", "--name", "ci-bot", "--permissions", "organizations.read,members.read", "--label", "ci")
	saToken := strings.TrimSpace(r.out)
	if !strings.HasPrefix(saToken, "sk-cp-") || strings.Count(r.out, "\n") != 1 {
		t.Fatalf("service account token on stdout: %q", r.out)
	}
	mustContain(t, "stderr", r.errOut, "shown only once", "ci-bot")
	sas := decodeJSONOut[[]wire.User](t, e.ok("service-accounts", "list", "-o", "json"))
	if len(sas) != 1 || !sas[0].ServiceAccount || sas[0].Name != "ci-bot" {
		t.Fatalf("service accounts %+v", sas)
	}
	mustContain(t, "get", e.ok("service-accounts", "get", sas[0].ID.String()), "name\tci-bot")

	// The key works, with its permissions and no more.
	t.Setenv("GW_TOKEN", saToken)
	e.ok("orgs", "get")
	e.code(ExitError, "", "workspaces", "create", "--name", "nope")
	t.Setenv("GW_TOKEN", e.boot.ManagementKey.Token)

	// Management keys at organization scope.
	r = e.code(ExitOK, "", "keys", "create", "--permissions", "workspaces.read", "--label", "laptop", "--expires-in", "30d")
	keyToken := strings.TrimSpace(r.out)
	if !strings.HasPrefix(keyToken, "sk-cp-") {
		t.Fatalf("key token %q", r.out)
	}
	mustContain(t, "stderr", r.errOut, "shown only once")
	keys := decodeJSONOut[[]wire.ManagementKey](t, e.ok("keys", "list", "-o", "json"))
	var k wire.ManagementKey
	for _, x := range keys {
		if x.Label == "laptop" {
			k = x
		}
		if x.Token != "" {
			t.Fatalf("list shows a token: %+v", x)
		}
	}
	if k.ExpiresAt == nil || k.Scope.Level != wire.ScopeOrganization {
		t.Fatalf("laptop key %+v in %+v", k, keys)
	}
	mustContain(t, "keys get", e.ok("keys", "get", k.ID.String()), "permissions\tworkspaces.read", "label\tlaptop")

	// At instance scope every key is listed; --user narrows to one owner.
	inst := decodeJSONOut[[]wire.ManagementKey](t, e.ok("keys", "list", "--scope", "instance", "-o", "json"))
	mine := decodeJSONOut[[]wire.ManagementKey](t, e.ok("keys", "list", "--scope", "instance", "--user", "owner@example.com", "-o", "json"))
	if len(inst) != 3 || len(mine) != 2 {
		t.Fatalf("instance keys: all %d, owner's %d", len(inst), len(mine))
	}
	for _, x := range mine {
		if x.UserID != e.boot.User.ID {
			t.Fatalf("--user listed %+v", x)
		}
	}
	e.code(ExitUsage, "", "keys", "list", "--user", "owner@example.com")

	e.code(ExitUsage, "", "keys", "revoke", k.ID.String())
	rk := decodeJSONOut[wire.ManagementKey](t, e.ok("keys", "revoke", k.ID.String(), "--yes", "-o", "json"))
	if rk.Status != wire.KeyRevoked {
		t.Fatalf("revoked %+v", rk)
	}
	t.Setenv("GW_TOKEN", keyToken)
	e.code(ExitAuth, "", "workspaces", "list")
	t.Setenv("GW_TOKEN", e.boot.ManagementKey.Token)

	e.code(ExitUsage, "", "service-accounts", "delete", sas[0].ID.String())
	e.ok("service-accounts", "delete", sas[0].ID.String(), "--yes")
	t.Setenv("GW_TOKEN", saToken)
	e.code(ExitAuth, "", "orgs", "get")
}

func TestCredentialsSecretNeverShown(t *testing.T) {
	e := newResEnv(t)
	raw := make([]byte, 16)
	_, _ = rand.Read(raw)
	secret := "sk-upstream-" + hex.EncodeToString(raw)
	var seen strings.Builder
	record := func(r gwResult) gwResult {
		seen.WriteString(r.out)
		seen.WriteString(r.errOut)
		return r
	}

	// No terminal and no source: refused, nothing sent.
	r := record(e.code(ExitUsage, "", "credentials", "create", "--provider", "openai", "--label", "main"))
	mustContain(t, "stderr", r.errOut, "--secret-file", "--secret-stdin")
	if n := e.hitCount("POST /api/v1/organizations/" + e.boot.Organization.Slug + "/provider-credentials"); n != 0 {
		t.Fatalf("create without a secret reached the server %d times", n)
	}

	r = record(e.code(ExitOK, secret+"\n", "credentials", "create", "--provider", "openai", "--label", "main", "--secret-stdin", "-o", "json"))
	cred := decodeJSONOut[wire.ProviderCredential](t, r.out)
	if cred.Provider != "openai" || cred.Scope.Level != wire.CredentialOrganization || cred.SecretHint != "…"+secret[len(secret)-4:] {
		t.Fatalf("created %+v", cred)
	}
	// What was sealed is the secret, its trailing newline dropped.
	stored, err := e.st.GetProviderCredential(context.Background(), cred.ID)
	if err != nil {
		t.Fatal(err)
	}
	if plain, err := e.kr.Open(stored.SecretSealed, reseal.CredentialAAD(cred.ID)); err != nil || string(plain) != secret {
		t.Fatalf("sealed secret %q %v", plain, err)
	}

	id := cred.ID.String()
	for _, args := range [][]string{
		{"credentials", "list"}, {"credentials", "list", "-o", "json"}, {"credentials", "list", "-o", "yaml"},
		{"credentials", "get", id}, {"credentials", "get", id, "-o", "json"},
		{"activity", "list", "--all", "-o", "json"},
	} {
		record(e.code(ExitOK, "", args...))
	}
	mustContain(t, "credentials list", e.ok("credentials", "list"), id+"\topenai\tmain\torg:")

	// Rotation from a file; the label changes too.
	file := filepath.Join(t.TempDir(), "secret")
	rotated := secret + "-rotated"
	if err := os.WriteFile(file, []byte(rotated+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = record(e.code(ExitOK, "", "credentials", "update", id, "--secret-file", file, "--label", "primary", "-o", "json"))
	if upd := decodeJSONOut[wire.ProviderCredential](t, r.out); upd.Label != "primary" || upd.SecretHint != "…"+rotated[len(rotated)-4:] {
		t.Fatalf("updated %+v", upd)
	}
	record(e.code(ExitUsage, "", "credentials", "update", id, "--secret-file", file, "--secret-stdin"))

	// At the workspace and platform scopes.
	record(e.code(ExitOK, secret, "credentials", "create", "--scope", "workspace", "--provider", "anthropic", "--label", "ws", "--secret-stdin"))
	record(e.code(ExitOK, secret, "credentials", "create", "--scope", "platform", "--provider", "openai", "--label", "shared", "--secret-stdin"))
	if cs := decodeJSONOut[[]wire.ProviderCredential](t, record(e.code(ExitOK, "", "credentials", "list", "--scope", "workspace", "-o", "json")).out); len(cs) != 1 || cs[0].Provider != "anthropic" {
		t.Fatalf("workspace credentials %+v", cs)
	}
	if cs := decodeJSONOut[[]wire.ProviderCredential](t, record(e.code(ExitOK, "", "credentials", "list", "--scope", "platform", "-o", "json")).out); len(cs) != 1 || cs[0].Scope.Level != wire.CredentialPlatform {
		t.Fatalf("platform credentials %+v", cs)
	}

	record(e.code(ExitUsage, "", "credentials", "delete", id))
	record(e.code(ExitOK, "", "credentials", "delete", id, "--yes"))
	record(e.code(ExitError, "", "credentials", "get", id))

	for _, s := range []string{secret, rotated, secret[:len(secret)-4]} {
		if strings.Contains(seen.String(), s) {
			t.Fatalf("a secret appeared in the CLI's output")
		}
	}
}

func TestInferenceKeysAndModelsRun(t *testing.T) {
	e := newResEnv(t)
	// Discovery lists models with a configured credential: none yet.
	r := e.code(ExitOK, "", "inference-keys", "create", "--name", "app", "--expires-in", "90d")
	token := strings.TrimSpace(r.out)
	if !strings.HasPrefix(token, "sk-gw-") {
		t.Fatalf("inference key on stdout: %q", r.out)
	}
	mustContain(t, "stderr", r.errOut, "shown only once")
	if ms := decodeJSONOut[[]map[string]any](t, e.ok("models", "list", "--key", token, "-o", "json")); len(ms) != 0 {
		t.Fatalf("models without a credential: %v", ms)
	}

	e.code(ExitOK, "upstream-secret-value\n", "credentials", "create", "--provider", "openai", "--label", "main", "--secret-stdin")

	// json is the data plane's objects exactly.
	out := e.ok("models", "list", "--key", token, "-o", "json")
	req, _ := http.NewRequest("GET", e.url+"/inf/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Data any `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := genericJSON(t, out); !reflect.DeepEqual(got, list.Data) {
		t.Fatalf("models list json\n got %v\nwant %v", got, list.Data)
	}
	models := decodeJSONOut[[]map[string]any](t, out)
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	if want := len(cat.ModelsByProvider("openai")); len(models) != want || want == 0 {
		t.Fatalf("discovered %d models, want the %d of openai", len(models), want)
	}
	rows := tableRows(e.ok("models", "list", "--key", token))
	if len(rows) != len(models) || rows[0][0] != models[0]["id"] || rows[0][1] != "openai" {
		t.Fatalf("models table %v", rows)
	}

	// A model id with a slash, from the environment's key.
	t.Setenv("GW_INFERENCE_KEY", token)
	id := models[0]["id"].(string)
	if !strings.Contains(id, "/") {
		t.Fatalf("model id %q", id)
	}
	m := decodeJSONOut[map[string]any](t, e.ok("models", "get", id, "-o", "json"))
	if m["id"] != id || m["object"] != "model" {
		t.Fatalf("models get %v", m)
	}
	mustContain(t, "models get", e.ok("models", "get", id), "id\t"+id, "provider\topenai")
	r = e.code(ExitError, "", "models", "get", "anthropic/claude-none")
	mustContain(t, "stderr", r.errOut, "404")
	e.code(ExitAuth, "", "models", "list", "--key", "sk-gw-wrong")
	// A management key is refused by the data plane.
	e.code(ExitAuth, "", "models", "list", "--key", e.boot.ManagementKey.Token)

	// The inference key's metadata, then revocation.
	ks := decodeJSONOut[[]wire.InferenceKey](t, e.ok("inference-keys", "list", "-o", "json"))
	if len(ks) != 1 || ks[0].Token != "" || ks[0].ExpiresAt == nil {
		t.Fatalf("inference keys %+v", ks)
	}
	mustContain(t, "inference-keys get", e.ok("inference-keys", "get", ks[0].ID.String()), "name\tapp", "status\tactive")
	e.code(ExitUsage, "", "inference-keys", "revoke", ks[0].ID.String())
	e.ok("inference-keys", "revoke", ks[0].ID.String(), "--yes")
	e.code(ExitAuth, "", "models", "list")
}

func TestCatalogRun(t *testing.T) {
	e := newResEnv(t)
	cat := decodeJSONOut[wire.Catalog](t, e.ok("catalog", "list", "-o", "json"))
	if len(cat.Models) == 0 || cat.Models[0].Available == nil {
		t.Fatalf("org catalog %+v", cat.Models[:1])
	}
	rows := tableRows(e.ok("catalog", "list"))
	if len(rows) != len(cat.Models) || rows[0][len(rows[0])-1] != "no-credential" {
		t.Fatalf("catalog table %v", rows[0])
	}
	if ps := tableRows(e.ok("catalog", "list", "--providers")); len(ps) != len(cat.Providers) {
		t.Fatalf("providers %v", ps)
	}

	// Import: a valid document, then a broken one that is refused locally
	// with every problem listed and nothing sent.
	dir := t.TempDir()
	good := filepath.Join(dir, "catalog.yaml")
	if err := os.WriteFile(good, catalog.DefaultYAML(), 0o600); err != nil {
		t.Fatal(err)
	}
	def, _ := catalog.Default()
	res := decodeJSONOut[wire.CatalogImportResult](t, e.ok("catalog", "import", "-f", good, "-o", "json"))
	if res.Providers != len(def.Providers) || res.Models != len(def.Models) {
		t.Fatalf("import %+v", res)
	}
	bad := filepath.Join(dir, "bad.yaml")
	doc := "providers:\n  - id: x\n    name: X\n    kind: nonsense\n    base_url: https://x.example/v1\nmodels:\n  - id: x/m\n    provider: nowhere\n"
	if err := os.WriteFile(bad, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	before := e.hitCount("POST /api/v1/instance/catalog/import")
	// A bad file is a usage error, as for gw policies apply (issue 22, row 9).
	r := e.code(ExitUsage, "", "catalog", "import", "-f", bad)
	mustContain(t, "stderr", r.errOut, "problem(s)", "kind")
	e.code(ExitUsage, "", "catalog", "import", "-f", filepath.Join(dir, "missing.yaml"))
	if e.hitCount("POST /api/v1/instance/catalog/import") != before {
		t.Fatal("an invalid document was sent")
	}
	r = e.code(ExitOK, "", "catalog", "import", "-f", good, "--dry-run")
	mustContain(t, "stderr", r.errOut, "dry run")
	if e.hitCount("POST /api/v1/instance/catalog/import") != before {
		t.Fatal("--dry-run sent the document")
	}
	// From stdin.
	e.code(ExitOK, string(catalog.DefaultYAML()), "catalog", "import", "-f", "-")

	// Retire a model whose id has a slash.
	id := cat.Models[0].ID
	e.code(ExitUsage, "", "catalog", "retire", id)
	m := decodeJSONOut[wire.CatalogModel](t, e.ok("catalog", "retire", id, "--yes", "-o", "json"))
	if m.ID != id || m.RetiredAt == nil {
		t.Fatalf("retired %+v", m)
	}
	inst := decodeJSONOut[wire.Catalog](t, e.ok("catalog", "list", "--scope", "instance", "-o", "json"))
	for _, x := range inst.Models {
		if x.ID == id && x.RetiredAt == nil {
			t.Fatalf("%s not retired in the instance catalog", id)
		}
	}
	for _, x := range decodeJSONOut[wire.Catalog](t, e.ok("catalog", "list", "-o", "json")).Models {
		if x.ID == id {
			t.Fatalf("retired %s still in force", id)
		}
	}
	p := decodeJSONOut[wire.CatalogProvider](t, e.ok("catalog", "retire", "--provider", "groq", "--yes", "-o", "json"))
	if p.RetiredAt == nil {
		t.Fatalf("provider %+v", p)
	}
}

func TestActivityRun(t *testing.T) {
	e := newResEnv(t)
	for _, name := range []string{"a", "b", "c", "d"} {
		e.ok("workspaces", "create", "--name", name)
	}
	all := decodeJSONOut[[]wire.AuditEvent](t, e.ok("activity", "list", "--limit", "200", "-o", "json"))
	if len(all) < 5 || all[0].Action != "workspace.created" {
		t.Fatalf("activity %d events, first %+v", len(all), all[0])
	}
	before := e.hitCount("GET /api/v1/organizations/" + e.boot.Organization.Slug + "/activity")
	paged := decodeJSONOut[[]wire.AuditEvent](t, e.ok("activity", "list", "--all", "--limit", "2", "-o", "json"))
	if len(paged) != len(all) {
		t.Fatalf("--all --limit 2 listed %d events, want %d", len(paged), len(all))
	}
	for i := range all {
		if paged[i].ID != all[i].ID {
			t.Fatalf("event %d differs across paging", i)
		}
	}
	if pages := e.hitCount("GET /api/v1/organizations/"+e.boot.Organization.Slug+"/activity") - before; pages != (len(all)+1)/2 {
		t.Fatalf("fetched %d pages for %d events", pages, len(all))
	}
	mustContain(t, "activity table", e.ok("activity", "list", "--limit", "1"), "workspace.created\tuser:"+e.boot.User.ID.String())
	inst := decodeJSONOut[[]wire.AuditEvent](t, e.ok("activity", "list", "--scope", "instance", "--all", "-o", "json"))
	if len(inst) < len(all) {
		t.Fatalf("instance activity %d < organization's %d", len(inst), len(all))
	}
}

// postAsOwner sends a JSON body to the API with the owner's key, for setup
// the CLI has no command for (usage shipped by a data plane, a raw policy),
// and fails the test unless it is accepted.
func (e *resEnv) postAsOwner(t *testing.T, path string, body any) {
	t.Helper()
	var raw []byte
	switch b := body.(type) {
	case []byte:
		raw = b
	case string:
		raw = []byte(b)
	default:
		t.Fatalf("postAsOwner: body of type %T", body)
	}
	req, _ := http.NewRequest("POST", e.url+path, bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bearer "+e.boot.ManagementKey.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("POST %s: %s", path, resp.Status)
	}
}
