package api_test

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/egress"
	"github.com/gw-gateway/gw/server/egress/egresstest"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/publish"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// egressEnv is an env whose names resolve from a table, with an
// organization admin and a workspace admin (session cookies) beside the
// instance owner.
type egressEnv struct {
	*env
	orgAdmin, wsAdmin string
}

func eachEgressEnv(t *testing.T, opts api.Options, fn func(t *testing.T, e *egressEnv)) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		o := opts
		if o.Egress.Resolver == nil {
			o.Egress.Resolver = egresstest.NewResolver().Set("169.254.169.254.nip.io", "169.254.169.254").
				Set("llm.internal", "10.20.30.40")
		}
		e := &egressEnv{env: newEnv(t, db, o)}
		org, c := e.signup("org-admin@example.com")
		e.orgAdmin = "cookie:" + c
		e.must("POST", "/api/v1/organizations/default/members", e.ownerKey, map[string]any{"user_id": org.User.ID, "role": "admin"})
		ws, c := e.signup("ws-admin@example.com")
		e.wsAdmin = "cookie:" + c
		e.must("POST", "/api/v1/organizations/default/members", e.ownerKey, map[string]any{"user_id": ws.User.ID, "role": "member"})
		e.must("POST", wsBase+"/members", e.ownerKey, map[string]any{"user_id": ws.User.ID, "role": "admin"})
		fn(t, e)
	})
}

// refused checks a 422 with one item at loc naming the address class.
func refused(t *testing.T, what string, status int, raw []byte, loc, class string) {
	t.Helper()
	if status != http.StatusUnprocessableEntity || !containsAll(issueSet(t, raw), []string{loc + ":value_error"}) ||
		!strings.Contains(string(raw), class) {
		t.Fatalf("%s: %d %s, want 422 at %s naming %q", what, status, raw, loc, class)
	}
}

// Issue 27 row 1: every address form of the metadata service, link-local
// and unspecified addresses, as a base URL, a token_url or a service
// account's token_uri, is refused when saved (422 naming the field and
// the class), from a workspace admin, an organization admin and the
// instance owner alike; by default loopback and private addresses stay
// allowed.
func TestCredentialURLsRefusedByEgressPolicy(t *testing.T) {
	sa := providerstest.NewVertex(t, "gw-test-project", "us-east5").ServiceAccount()
	metadataSA := strings.Replace(sa, `"token_uri":"http://127.0.0.1`, `"token_uri":"http://169.254.169.254`, 1)
	if metadataSA == sa {
		t.Fatal("the fake's service account has no 127.0.0.1 token_uri to replace")
	}
	eachEgressEnv(t, api.Options{}, func(t *testing.T, e *egressEnv) {
		actors := []struct {
			name, cred string
			places     []string
		}{
			{"workspace admin", e.wsAdmin, credentialPlaces[2:]},
			{"organization admin", e.orgAdmin, credentialPlaces[1:]},
			{"instance owner", e.ownerKey, credentialPlaces},
		}
		bad := map[string]string{
			"http://169.254.169.254/latest/meta-data/": "cloud metadata service",
			"http://[::ffff:169.254.169.254]/v1":       "cloud metadata service",
			"http://2852039166/v1":                     "cloud metadata service",
			"http://0251.0376.0251.0376/v1":            "cloud metadata service",
			"http://0xa9fea9fe/v1":                     "cloud metadata service",
			"http://metadata.google.internal/v1":       "cloud metadata service",
			"http://169.254.169.254.nip.io/v1":         "cloud metadata service",
			"http://[fd00:ec2::254]/v1":                "cloud metadata service",
			"http://169.254.10.1/v1":                   "link-local address",
			"http://[fe80::1]/v1":                      "link-local address",
			"http://0.0.0.0/v1":                        "unspecified address",
		}
		for _, a := range actors {
			for _, place := range a.places {
				for u, class := range bad {
					st, raw := e.do("POST", place, a.cred, map[string]any{"provider": "openai", "label": uniqueLabel(), "secret": "sk-0123456789abcdef", "base_url": u})
					refused(t, a.name+" POST "+place+" "+u, st, raw, "body.base_url", class)
				}
				st, raw := e.do("POST", place, a.cred, map[string]any{"provider": "vertex", "label": uniqueLabel(), "secret": sa,
					"settings": map[string]any{"location": "us-east5", "token_url": "http://metadata.google.internal/computeMetadata/v1/token"}})
				refused(t, a.name+" token_url", st, raw, "body.settings.token_url", "cloud metadata service")
				st, raw = e.do("POST", place, a.cred, map[string]any{"provider": "vertex", "label": uniqueLabel(), "secret": metadataSA,
					"settings": map[string]any{"location": "us-east5"}})
				refused(t, a.name+" token_uri", st, raw, "body.secret.token_uri", "cloud metadata service")
				if strings.Contains(string(raw), "PRIVATE KEY") {
					t.Fatalf("the refusal echoes the service account's key: %s", raw)
				}

				// Loopback and private upstreams are allowed by default,
				// and a PATCH is held to the same policy.
				for _, u := range []string{"http://10.0.0.1/v1", "http://[fd00::1]/v1", "http://127.0.0.1:8000/v1", "http://llm.internal/v1"} {
					e.must("POST", place, a.cred, map[string]any{"provider": "openai", "label": uniqueLabel(), "secret": "sk-0123456789abcdef", "base_url": u})
				}
				c := decodeData[wire.ProviderCredential](t, e.must("POST", place, a.cred,
					map[string]any{"provider": "openai", "label": uniqueLabel(), "secret": "sk-0123456789abcdef"}))
				st, raw = e.do("PATCH", place+"/"+c.ID.String(), a.cred, map[string]any{"base_url": "http://2852039166/v1", "secret": "sk-0123456789abcdef"})
				refused(t, a.name+" PATCH base_url", st, raw, "body.base_url", "cloud metadata service")
			}
		}
	})
}

// The instance's egress setting: read by instance principals, changed by
// an instance owner alone (an instance admin, an organization admin and a
// workspace admin are refused), audited, and in force for the next save:
// its deny refuses, its allow makes exceptions, and lifts a built-in
// refusal only for the very range it names.
func TestInstanceEgressSetting(t *testing.T) {
	eachEgressEnv(t, api.Options{}, func(t *testing.T, e *egressEnv) {
		const path = "/api/v1/instance/settings"
		got := decodeData[wire.InstanceSettings](t, e.must("GET", path, e.ownerKey, nil))
		if len(got.Egress.Deny) != 0 || len(got.Egress.Allow) != 0 || got.Revision != 0 || got.EgressDenyPrivate ||
			!strings.Contains(strings.Join(got.BuiltinDeny, " "), "169.254.169.254/32") {
			t.Fatalf("initial settings %+v", got)
		}

		carol, c := e.signup("instance-admin@example.com")
		e.must("PATCH", "/api/v1/instance/users/"+carol.User.ID.String(), e.ownerKey, map[string]any{"instance_role": "admin"})
		widen := map[string]any{"egress": map[string]any{"allow": []string{"169.254.169.254/32", "169.254.0.0/16"}}}
		for name, cred := range map[string]string{"instance admin": "cookie:" + c, "organization admin": e.orgAdmin, "workspace admin": e.wsAdmin} {
			if st, raw := e.do("PATCH", path, cred, widen); st != http.StatusForbidden {
				t.Fatalf("%s widens the egress policy: %d %s", name, st, raw)
			}
		}
		if st, raw := e.do("GET", path, e.wsAdmin, nil); st != http.StatusForbidden {
			t.Fatalf("a workspace admin reads the instance settings: %d %s", st, raw)
		}

		st, raw := e.do("PATCH", path, e.ownerKey, map[string]any{"egress": map[string]any{
			"deny": []any{"10.1.2.3/8", "example.com", 7}, "allow": []any{"::ffff:10.0.0.0/104"}, "colour": "red"}})
		if got := issueSet(t, raw); st != http.StatusUnprocessableEntity || !containsAll(got, []string{"body.egress.deny.0:value_error",
			"body.egress.deny.1:value_error", "body.egress.deny.2:string_type", "body.egress.allow.0:value_error", "body.egress.colour:extra_forbidden"}) {
			t.Fatalf("bad ranges: %d %s", st, raw)
		}
		if !strings.Contains(string(raw), "the range is 10.0.0.0/8") {
			t.Fatalf("the host-bits refusal does not say the range: %s", raw)
		}

		got = decodeData[wire.InstanceSettings](t, e.must("PATCH", path, e.ownerKey, map[string]any{"egress": map[string]any{
			"deny": []string{"10.0.0.0/8", "10.0.0.0/8"}, "allow": []string{"10.1.0.0/16", "169.254.169.254"}}}))
		if strings.Join(got.Egress.Deny, " ") != "10.0.0.0/8" || strings.Join(got.Egress.Allow, " ") != "10.1.0.0/16 169.254.169.254/32" ||
			got.Revision != 1 || got.UpdatedAt == nil {
			t.Fatalf("after the PATCH: %+v", got)
		}
		if ev := e.lastAudit("instance.settings_updated"); ev == nil || ev.Details["new_egress"] == nil || ev.Details["old_egress"] == nil {
			t.Fatalf("audit %+v", ev)
		}

		place := credentialPlaces[2]
		cases := map[string]string{
			"http://10.2.0.1/v1":     "private address (denied by the instance's egress policy)",
			"http://llm.internal/v1": "private address (denied by the instance's egress policy)",
			"http://169.254.1.1/v1":  "link-local address",
		}
		for u, class := range cases {
			st, raw := e.do("POST", place, e.wsAdmin, map[string]any{"provider": "openai", "label": uniqueLabel(), "secret": "sk-0123456789abcdef", "base_url": u})
			refused(t, u, st, raw, "body.base_url", class)
		}
		for _, u := range []string{"http://10.1.2.3/v1", "http://169.254.169.254/v1", "http://192.168.1.1/v1"} {
			e.must("POST", place, e.wsAdmin, map[string]any{"provider": "openai", "label": uniqueLabel(), "secret": "sk-0123456789abcdef", "base_url": u})
		}
	})
}

// gw serve --egress-deny-private refuses loopback and private targets when
// they are saved; the instance owner's allow makes exceptions.
func TestEgressDenyPrivate(t *testing.T) {
	res := egresstest.NewResolver().Set("llm.internal", "10.20.30.40")
	eachEgressEnv(t, api.Options{Egress: egress.Policy{DenyPrivate: true, Resolver: res}}, func(t *testing.T, e *egressEnv) {
		if got := decodeData[wire.InstanceSettings](t, e.must("GET", "/api/v1/instance/settings", e.ownerKey, nil)); !got.EgressDenyPrivate {
			t.Fatalf("settings %+v", got)
		}
		place := credentialPlaces[1]
		cases := map[string]string{
			"http://10.0.0.1/v1":       "private address (denied by the instance's egress policy)",
			"http://[fd00::1]/v1":      "private address (denied by the instance's egress policy)",
			"http://llm.internal/v1":   "private address (denied by the instance's egress policy)",
			"http://127.0.0.1:8000/v1": "loopback address (denied by the instance's egress policy)",
			"http://localhost:8000/v1": "loopback address (denied by the instance's egress policy)",
			"http://[::1]:8000/v1":     "loopback address (denied by the instance's egress policy)",
		}
		for u, class := range cases {
			st, raw := e.do("POST", place, e.orgAdmin, map[string]any{"provider": "openai", "label": uniqueLabel(), "secret": "sk-0123456789abcdef", "base_url": u})
			refused(t, u, st, raw, "body.base_url", class)
		}
		e.must("PATCH", "/api/v1/instance/settings", e.ownerKey, map[string]any{"egress": map[string]any{"allow": []string{"127.0.0.1/32"}}})
		e.must("POST", place, e.orgAdmin, map[string]any{"provider": "openai", "label": uniqueLabel(), "secret": "sk-0123456789abcdef",
			"base_url": "http://127.0.0.1:8000/v1"})
	})
}

// Connect time, end to end: a name that resolved to 127.0.0.1 when the
// credential was saved and resolves to the metadata service when the data
// plane dials (DNS rebinding) reaches nothing; and the instance's setting
// reaches the data plane in its bundle: a deny the owner adds refuses an
// upstream that was served a moment before, an allow opens it again.
func TestEgressAtConnectTime(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		key, err := secrets.GenerateKey()
		if err != nil {
			t.Fatal(err)
		}
		kr := secrets.NewKeyring(key)
		st := store.New(db)
		signer, err := publish.SigningKey(ctx, st, kr)
		if err != nil {
			t.Fatal(err)
		}
		res := egresstest.NewResolver()
		plane := dataplane.NewPlane(signer.Public().(ed25519.PublicKey), dataplane.Options{Keyring: kr, Usage: &usageSink{},
			Egress: egress.Policy{Resolver: res}})
		refresher := &publish.Refresher{Compiler: &publish.Compiler{Store: st, Signer: signer}, Plane: plane, Store: st}
		e := newEnv(t, db, api.Options{Keyring: kr, Bundles: refresher, Egress: egress.Policy{Resolver: res}})
		if err := refresher.RefreshAll(ctx); err != nil {
			t.Fatal(err)
		}
		plane.MarkReady()
		inf := httptest.NewServer(plane)
		t.Cleanup(inf.Close)
		token := decodeData[wire.InferenceKey](t, e.must("POST", wsBase+"/inference-keys", e.ownerKey, map[string]any{"name": "app"})).Token
		chat := func(model string) (int, string) {
			req, _ := http.NewRequest(http.MethodPost, inf.URL+"/inf/v1/chat/completions",
				strings.NewReader(`{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`))
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(body)
		}

		rebound := providerstest.NewOpenAI(t, "sk-upstream-0123456789abcdef")
		u, _ := url.Parse(rebound.URL)
		res.Set("llm.rebind.example", "127.0.0.1").Set("llm.rebind.example", "169.254.169.254")
		importProvider(e, "rebind", "")
		e.must("POST", wsBase+"/provider-credentials", e.ownerKey, map[string]any{"provider": "rebind", "label": uniqueLabel(), "secret": rebound.Key,
			"base_url": "http://llm.rebind.example:" + u.Port() + "/v1"})
		if code, body := chat("rebind/m1"); code == http.StatusOK || len(rebound.Requests()) != 0 || res.Asked("llm.rebind.example") != 2 {
			t.Fatalf("after rebinding: %d %s; upstream saw %d requests, %d look-ups", code, body, len(rebound.Requests()), res.Asked("llm.rebind.example"))
		}

		local := providerstest.NewOpenAI(t, "sk-upstream-0123456789abcdef")
		importProvider(e, "local", "")
		e.must("POST", wsBase+"/provider-credentials", e.ownerKey, map[string]any{"provider": "local", "label": uniqueLabel(), "secret": local.Key,
			"base_url": local.BaseURL()})
		if code, body := chat("local/m1"); code != http.StatusOK || len(local.Requests()) != 1 {
			t.Fatalf("loopback upstream by default: %d %s", code, body)
		}
		e.must("PATCH", "/api/v1/instance/settings", e.ownerKey, map[string]any{"egress": map[string]any{"deny": []string{"127.0.0.0/8"}}})
		if code, body := chat("local/m1"); code == http.StatusOK || len(local.Requests()) != 1 {
			t.Fatalf("after the owner denied loopback: %d %s; upstream saw %d requests", code, body, len(local.Requests()))
		}
		e.must("PATCH", "/api/v1/instance/settings", e.ownerKey, map[string]any{"egress": map[string]any{"deny": []string{"127.0.0.0/8"},
			"allow": []string{"127.0.0.1"}}})
		if code, body := chat("local/m1"); code != http.StatusOK || len(local.Requests()) != 2 {
			t.Fatalf("after the owner allowed 127.0.0.1: %d %s", code, body)
		}
	})
}

// A catalog provider's base_url is held to the same policy when saved, for
// the forms that need no look-up (address literals in every encoding,
// metadata names); the names of a catalog document are left to the
// dialer, so an import never waits on DNS.
func TestCatalogBaseURLEgress(t *testing.T) {
	eachEgressEnv(t, api.Options{}, func(t *testing.T, e *egressEnv) {
		provider := func(id, baseURL string) string {
			return `{"id":"` + id + `","name":"` + id + `","kind":"openai-compatible","base_url":"` + baseURL + `"}`
		}
		st, raw := e.do("POST", "/api/v1/instance/catalog/import", e.ownerKey,
			`{"providers":[`+provider("fine", "https://llm.example.com/v1")+`,`+provider("meta", "http://[::ffff:169.254.169.254]/v1")+`]}`)
		refused(t, "import", st, raw, "body.providers.1.base_url", "cloud metadata service")
		st, raw = e.do("POST", "/api/v1/instance/catalog/providers", e.ownerKey, provider("meta", "http://metadata.google.internal/v1"))
		refused(t, "put provider", st, raw, "body.base_url", "cloud metadata service")
		e.must("POST", "/api/v1/instance/catalog/providers", e.ownerKey, provider("named", "http://169.254.169.254.nip.io/v1"))
	})
}

// uniqueLabel gives each credential a test saves its own label: a second
// credential of a provider with a label it has at the scope is refused.
func uniqueLabel() string { return fmt.Sprintf("label-%d", labelSeq.Add(1)) }

var labelSeq atomic.Int64
