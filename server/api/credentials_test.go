package api_test

import (
	"context"
	"crypto/ed25519"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/publish"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
	"github.com/uptrace/bun"
)

// Each cloud kind's credential is checked for what it needs: the JSON
// secret of its kind (never echoed back), the settings it requires, none
// it does not take; the settings are shown (the secret never), replaced
// whole by a PATCH, and a new token_url needs the secret again.
func TestCredentialSettingsPerKind(t *testing.T) {
	sa := providerstest.NewVertex(t, "gw-test-project", "us-east5").ServiceAccount()
	const awsSecret = `{"access_key_id":"AKIAEXAMPLE","secret_access_key":"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}`
	eachEnv(t, func(t *testing.T, e *env) {
		for _, place := range credentialPlaces {
			refusals := []struct {
				body map[string]any
				want []string
			}{
				{map[string]any{"provider": "bedrock", "label": "b", "secret": awsSecret}, []string{"body.settings.region:missing"}},
				{map[string]any{"provider": "bedrock", "label": "b", "secret": "wJalrXUtnFEMI-not-json", "settings": map[string]any{"region": "mars-1"}},
					[]string{"body.secret:value_error", "body.settings.region:string_pattern_mismatch"}},
				{map[string]any{"provider": "vertex", "label": "v", "secret": `{"type":"authorized_user","refresh_token":"1//secret-refresh"}`,
					"settings": map[string]any{"location": "us-east5"}}, []string{"body.secret:value_error"}},
				{map[string]any{"provider": "vertex", "label": "v", "secret": sa}, []string{"body.settings.location:missing"}},
				{map[string]any{"provider": "openai", "label": "o", "secret": "sk-0123456789abcdef", "settings": map[string]any{"region": "us-east-1"}},
					[]string{"body.settings.region:extra_forbidden"}},
				{map[string]any{"provider": "azure-openai", "label": "a", "secret": "azure-key-0123456789"}, []string{"body.base_url:missing"}},
				{map[string]any{"provider": "azure-openai", "label": "a", "secret": `{"tenant_id":"t","client_id":"c"}`, "base_url": "https://r.openai.azure.com",
					"settings": map[string]any{"api_version": "yesterday", "deployments": map[string]any{"gpt-4o": "bad name!"}, "colour": "blue"}},
					[]string{"body.secret:value_error", "body.settings.api_version:string_pattern_mismatch", "body.settings.deployments:value_error",
						"body.settings.colour:extra_forbidden"}},
			}
			for _, r := range refusals {
				st, raw := e.do("POST", place, e.ownerKey, r.body)
				if got := issueSet(t, raw); st != http.StatusUnprocessableEntity || !containsAll(got, r.want) {
					t.Fatalf("%s %v: %d %s, want %v", place, r.body["provider"], st, raw, r.want)
				}
				for _, secret := range []string{"wJalrXUtnFEMI", "1//secret-refresh"} {
					if strings.Contains(string(raw), secret) {
						t.Fatalf("the refusal echoes the secret: %s", raw)
					}
				}
			}

			raw := e.must("POST", place, e.ownerKey, map[string]any{"provider": "bedrock", "label": "aws", "secret": awsSecret,
				"settings": map[string]any{"region": "eu-west-1"}})
			c := decodeData[wire.ProviderCredential](t, raw)
			// The hint names the access key, not the JSON's tail `"}`.
			if c.Settings == nil || c.Settings.Region != "eu-west-1" || strings.Contains(string(raw), "wJalrXUtnFEMI") || c.SecretHint != "AKIA…MPLE" {
				t.Fatalf("bedrock credential: %s", raw)
			}
			// A second bedrock credential labelled aws here is refused, 409.
			st, dup := e.do("POST", place, e.ownerKey, map[string]any{"provider": "bedrock", "label": "AWS", "secret": awsSecret,
				"settings": map[string]any{"region": "eu-west-1"}})
			if st != http.StatusConflict || !strings.Contains(string(dup), `label \"aws\" is taken at this scope by bedrock credential `+c.ID.String()) {
				t.Fatalf("a second credential labelled aws: %d %s", st, dup)
			}
			raw = e.must("POST", place, e.ownerKey, map[string]any{"provider": "vertex", "label": "gcp", "secret": sa,
				"settings": map[string]any{"location": "us-east5", "project": "other-project"}})
			if v := decodeData[wire.ProviderCredential](t, raw); v.Settings == nil || v.Settings.Location != "us-east5" ||
				strings.Contains(string(raw), "PRIVATE KEY") || !strings.Contains(v.SecretHint, "@") || !strings.HasSuffix(v.SecretHint, " (key …ey-1)") {
				t.Fatalf("vertex credential: %s", raw)
			}
			raw = e.must("POST", place, e.ownerKey, map[string]any{"provider": "azure-openai", "label": "az", "secret": "azure-key-0123456789",
				"base_url": "https://r.openai.azure.com", "settings": map[string]any{"deployments": map[string]any{"gpt-4o": "prod-4o"}}})
			az := decodeData[wire.ProviderCredential](t, raw)
			if az.Settings == nil || az.Settings.Deployments["gpt-4o"] != "prod-4o" {
				t.Fatalf("azure credential: %s", raw)
			}
			raw = e.must("POST", place, e.ownerKey, map[string]any{"provider": "gemini", "label": "g", "secret": "AIza0123456789abcdef"})
			if g := decodeData[wire.ProviderCredential](t, raw); g.Settings != nil {
				t.Fatalf("gemini credential: %s", raw)
			}

			// A PATCH replaces the settings whole and checks them for the kind.
			st, raw = e.do("PATCH", place+"/"+c.ID.String(), e.ownerKey, map[string]any{"settings": map[string]any{"location": "us-east5"}})
			if got := issueSet(t, raw); st != http.StatusUnprocessableEntity ||
				!containsAll(got, []string{"body.settings.location:extra_forbidden", "body.settings.region:missing"}) {
				t.Fatalf("PATCH bedrock settings: %d %s", st, raw)
			}
			raw = e.must("PATCH", place+"/"+c.ID.String(), e.ownerKey, map[string]any{"settings": map[string]any{"region": "us-west-2"}})
			if got := decodeData[wire.ProviderCredential](t, raw); got.Settings == nil || got.Settings.Region != "us-west-2" {
				t.Fatalf("PATCH bedrock settings: %s", raw)
			}
			// A new token endpoint is where the Entra ID client secret goes.
			st, raw = e.do("PATCH", place+"/"+az.ID.String(), e.ownerKey, map[string]any{"settings": map[string]any{"token_url": "https://evil.example.com/token"}})
			if got := issueSet(t, raw); st != http.StatusUnprocessableEntity || !containsAll(got, []string{"body.secret:missing"}) {
				t.Fatalf("PATCH token_url without the secret: %d %s", st, raw)
			}
			e.must("PATCH", place+"/"+az.ID.String(), e.ownerKey, map[string]any{"secret": `{"tenant_id":"t","client_id":"c","client_secret":"s"}`,
				"settings": map[string]any{"token_url": "https://login.example.com/token"}})
		}

		// Another organization's URL never reaches this one's credential.
		e.must("POST", "/api/v1/instance/organizations", e.ownerKey, map[string]any{"name": "Other", "slug": "other"})
		list := decodeData[[]wire.ProviderCredential](t, e.must("GET", credentialPlaces[1], e.ownerKey, nil))
		for _, method := range []string{"GET", "PATCH", "DELETE"} {
			st, raw := e.do(method, "/api/v1/organizations/other/provider-credentials/"+list[0].ID.String(), e.ownerKey,
				map[string]any{"settings": map[string]any{"region": "us-east-1"}})
			if st != http.StatusNotFound {
				t.Fatalf("%s another organization's credential: %d %s", method, st, raw)
			}
		}
	})
}

var credentialPlaces = []string{
	"/api/v1/instance/provider-credentials",
	"/api/v1/organizations/default/provider-credentials",
	wsBase + "/provider-credentials",
}

// importProvider adds an openai-compatible provider with one model to the
// catalog; baseURL may be empty.
func importProvider(e *env, id, baseURL string) {
	e.t.Helper()
	url := ""
	if baseURL != "" {
		url = `,"base_url":"` + baseURL + `"`
	}
	doc := `{"providers":[{"id":"` + id + `","name":"` + id + `","kind":"openai-compatible"` + url + `}],` +
		`"models":[{"id":"` + id + `/m1","provider":"` + id + `","name":"M1","context_window":8192,"max_output_tokens":2048,` +
		`"pricing":{"input_per_mtok":"1","output_per_mtok":"2","cache_read_per_mtok":"0","cache_write_per_mtok":"0"},` +
		`"capabilities":["streaming"],"modalities":["text"],"created":1700000000}]}`
	e.must("POST", "/api/v1/instance/catalog/import", e.ownerKey, doc)
}

// A provider the catalog gives a base URL (Groq, Mistral, DeepSeek, or one
// imported with base_url) needs none in its credentials, at any scope; a
// provider without one in the catalog still does, on creation and when a
// credential's own URL is cleared.
func TestCredentialBaseURLDefaultsToTheCatalogs(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		importProvider(e, "hosted", "https://llm.example.com/v1")
		importProvider(e, "bare", "")
		for _, place := range credentialPlaces {
			for _, provider := range []string{"groq", "mistral", "deepseek", "hosted"} {
				raw := e.must("POST", place, e.ownerKey, map[string]any{"provider": provider, "label": "x", "secret": "sk-0123456789abcdef"})
				if c := decodeData[wire.ProviderCredential](t, raw); c.Provider != provider || c.BaseURL != nil {
					t.Fatalf("%s %s: %s", place, provider, raw)
				}
			}
			for _, provider := range []string{"openai-compatible", "bare"} {
				st, raw := e.do("POST", place, e.ownerKey, map[string]any{"provider": provider, "label": "x", "secret": "s"})
				if got := issueSet(t, raw); st != http.StatusUnprocessableEntity || !containsAll(got, []string{"body.base_url:missing"}) {
					t.Fatalf("%s %s without base_url: %d %s", place, provider, st, raw)
				}
			}

			// Clearing a credential's own URL falls back to the catalog's,
			// and is refused where there is none to fall back to.
			for provider, want := range map[string]int{"groq": http.StatusOK, "bare": http.StatusUnprocessableEntity} {
				raw := e.must("POST", place, e.ownerKey, map[string]any{"provider": provider, "label": "own", "secret": "s",
					"base_url": "https://proxy.example.com/v1"})
				c := decodeData[wire.ProviderCredential](t, raw)
				st, raw := e.do("PATCH", place+"/"+c.ID.String(), e.ownerKey, map[string]any{"base_url": nil, "secret": "s2"})
				if st != want {
					t.Fatalf("%s: clearing %s's base_url: %d %s", place, provider, st, raw)
				}
				got := decodeData[wire.ProviderCredential](t, e.must("GET", place+"/"+c.ID.String(), e.ownerKey, nil))
				if cleared := got.BaseURL == nil; cleared != (want == http.StatusOK) {
					t.Fatalf("%s: %s's base_url after the PATCH: %v", place, provider, got.BaseURL)
				}
				if want != http.StatusOK && !containsAll(issueSet(t, raw), []string{"body.base_url:missing"}) {
					t.Fatalf("%s: clearing %s's base_url: %s", place, provider, raw)
				}
			}
		}
	})
}

type usageSink struct {
	mu     sync.Mutex
	events []wire.UsageEventIn
}

func (s *usageSink) Record(e wire.UsageEventIn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, e)
}

// A credential created without base_url reaches the upstream at the
// catalog's URL: the control plane and a data plane together, the
// provider imported with a fake upstream's URL, at every scope.
func TestCredentialWithoutBaseURLRoutesToTheCatalogsURL(t *testing.T) {
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
		plane := dataplane.NewPlane(signer.Public().(ed25519.PublicKey), dataplane.Options{Keyring: kr, Usage: &usageSink{}})
		refresher := &publish.Refresher{Compiler: &publish.Compiler{Store: st, Signer: signer}, Plane: plane, Store: st}
		e := newEnv(t, db, api.Options{Keyring: kr, Bundles: refresher})
		if err := refresher.RefreshAll(ctx); err != nil {
			t.Fatal(err)
		}
		plane.MarkReady()
		inf := httptest.NewServer(plane)
		t.Cleanup(inf.Close)

		token := decodeData[wire.InferenceKey](t, e.must("POST", wsBase+"/inference-keys", e.ownerKey, map[string]any{"name": "app"})).Token
		for i, place := range credentialPlaces {
			upstream := providerstest.NewOpenAI(t, "sk-upstream-0123456789abcdef")
			provider := []string{"hosted-platform", "hosted-org", "hosted-workspace"}[i]
			importProvider(e, provider, upstream.BaseURL())
			e.must("POST", place, e.ownerKey, map[string]any{"provider": provider, "label": "x", "secret": upstream.Key})

			req, err := http.NewRequest(http.MethodPost, inf.URL+"/inf/v1/chat/completions",
				strings.NewReader(`{"model":"`+provider+`/m1","messages":[{"role":"user","content":"hi"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || len(upstream.Requests()) != 1 {
				t.Fatalf("%s: %d %s; upstream saw %d requests", place, resp.StatusCode, body, len(upstream.Requests()))
			}
		}
	})
}

func TestProviderCredentials(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		const secret = "sk-upstream-secret-0123456789abcd"
		places := []struct{ path, level string }{
			{"/api/v1/instance/provider-credentials", "platform"},
			{"/api/v1/organizations/default/provider-credentials", "org"},
			{wsBase + "/provider-credentials", "workspace"},
		}
		for _, p := range places {
			raw := e.must("POST", p.path, e.ownerKey, map[string]any{"provider": "openai", "label": "main", "secret": secret})
			c := decodeData[wire.ProviderCredential](t, raw)
			if strings.Contains(string(raw), secret) || c.Scope.Level != p.level || c.SecretHint != "…abcd" {
				t.Fatalf("%s create: %s", p.path, raw)
			}
			for _, path := range []string{p.path, p.path + "/" + c.ID.String()} {
				if raw := e.must("GET", path, e.ownerKey, nil); strings.Contains(string(raw), secret) || strings.Contains(string(raw), "sealed") {
					t.Fatalf("GET %s leaks the secret: %s", path, raw)
				}
			}
			raw = e.must("PATCH", p.path+"/"+c.ID.String(), e.ownerKey, map[string]any{"label": "renamed", "secret": "another-secret-value-wxyz"})
			if c := decodeData[wire.ProviderCredential](t, raw); c.Label != "renamed" || c.SecretHint != "…wxyz" {
				t.Fatalf("update: %s", raw)
			}
		}
		// A credential is only reachable through its own scope's URL.
		list := decodeData[[]wire.ProviderCredential](t, e.must("GET", places[1].path, e.ownerKey, nil))
		if len(list) != 1 {
			t.Fatalf("org list: %+v", list)
		}
		if st, _ := e.do("GET", places[2].path+"/"+list[0].ID.String(), e.ownerKey, nil); st != 404 {
			t.Fatalf("org credential through the workspace URL: %d", st)
		}

		cases := []struct {
			name string
			body any
			want []string // "loc:type"
		}{
			{"unknown provider", map[string]any{"provider": "nope", "label": "x", "secret": "s"}, []string{"body.provider:value_error"}},
			{"missing fields", map[string]any{}, []string{"body.provider:missing", "body.label:missing", "body.secret:missing"}},
			{"label too long", map[string]any{"provider": "openai", "label": strings.Repeat("l", 81), "secret": "s"}, []string{"body.label:string_too_long"}},
			{"bad base url", map[string]any{"provider": "openai", "label": "x", "secret": "s", "base_url": "ftp://u:p@h"}, []string{"body.base_url:url_parsing"}},
			{"compatible needs url", map[string]any{"provider": "openai-compatible", "label": "x", "secret": "s"}, []string{"body.base_url:missing"}},
			{"extra member", map[string]any{"provider": "openai", "label": "x", "secret": "s", "kind": 1}, []string{"body.kind:extra_forbidden"}},
		}
		for _, c := range cases {
			st, raw := e.do("POST", places[1].path, e.ownerKey, c.body)
			if st != 422 {
				t.Errorf("%s: %d %s", c.name, st, raw)
				continue
			}
			if got := issueSet(t, raw); !containsAll(got, c.want) {
				t.Errorf("%s: issues %v, want %v", c.name, got, c.want)
			}
		}
		del := decodeData[wire.Deleted](t, e.must("DELETE", places[1].path+"/"+list[0].ID.String(), e.ownerKey, nil))
		if del.ID != list[0].ID {
			t.Fatalf("delete: %+v", del)
		}
		if raw := e.must("GET", "/api/v1/instance/activity?limit=200", e.ownerKey, nil); strings.Contains(string(raw), secret) {
			t.Fatal("the audit log contains a provider secret")
		}
	})
}

// A credential's destination cannot change without its secret being given
// again: otherwise whoever manages it could send the sealed secret to a
// host of theirs.
func TestCredentialBaseURLNeedsTheSecret(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		base := "/api/v1/organizations/default/provider-credentials"
		c := decodeData[wire.ProviderCredential](t, e.must("POST", base, e.ownerKey,
			map[string]any{"provider": "openai", "label": "x", "secret": "sk-real-0123456789abcdef", "base_url": "https://legit.example/v1"}))
		code, raw := e.do("PATCH", base+"/"+c.ID.String(), e.ownerKey, map[string]any{"base_url": "https://evil.example/v1"})
		if code != 422 || !containsAll(issueSet(t, raw), []string{"body.secret:missing"}) {
			t.Fatalf("moving the secret: %d %s", code, raw)
		}
		if code, _ := e.do("PATCH", base+"/"+c.ID.String(), e.ownerKey, map[string]any{"base_url": nil}); code != 422 {
			t.Fatalf("clearing base_url without the secret: %d", code)
		}
		e.must("PATCH", base+"/"+c.ID.String(), e.ownerKey, map[string]any{"base_url": "https://new.example/v1", "secret": "sk-new-0123456789abcdef"})
	})
}
