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

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/publish"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

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
