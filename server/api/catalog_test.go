package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/wire"
)

func TestCatalog(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		cat := decodeData[wire.Catalog](t, e.must("GET", "/api/v1/instance/catalog", e.ownerKey, nil))
		if len(cat.Models) < 40 || len(cat.Providers) < 7 {
			t.Fatalf("seeded catalog: %d models, %d providers", len(cat.Models), len(cat.Providers))
		}
		model := map[string]any{"id": "openai/gw-test-model", "provider": "openai", "name": "Test", "context_window": 1000, "max_output_tokens": 100,
			"pricing":      map[string]any{"input_per_mtok": "1", "output_per_mtok": "2.5", "cache_read_per_mtok": "0.1", "cache_write_per_mtok": "1"},
			"capabilities": []string{"streaming"}, "modalities": []string{"text"}, "created": 1700000000}
		e.must("POST", "/api/v1/instance/catalog/models", e.ownerKey, model)
		model["pricing"].(map[string]any)["input_per_mtok"] = "1e3"
		if st, raw := e.do("POST", "/api/v1/instance/catalog/models", e.ownerKey, model); st != 422 || !strings.Contains(string(raw), "input_per_mtok") {
			t.Fatalf("bad price: %d %s", st, raw)
		}
		// Organization view: availability follows credentials.
		orgCat := func() map[string]bool {
			c := decodeData[wire.Catalog](t, e.must("GET", "/api/v1/organizations/default/catalog", e.ownerKey, nil))
			out := map[string]bool{}
			for _, m := range c.Models {
				out[m.ID] = *m.Available
			}
			return out
		}
		if orgCat()["openai/gw-test-model"] {
			t.Fatal("available without a credential")
		}
		e.must("POST", "/api/v1/organizations/default/provider-credentials", e.ownerKey, map[string]any{"provider": "openai", "label": "x", "secret": "s"})
		if !orgCat()["openai/gw-test-model"] || orgCat()["anthropic/claude-sonnet-4-5-20250929"] {
			t.Fatal("availability does not follow the openai credential")
		}
		retired := decodeData[wire.CatalogModel](t, e.must("DELETE", "/api/v1/instance/catalog/models/openai/gw-test-model", e.ownerKey, nil))
		if retired.RetiredAt == nil {
			t.Fatalf("retire: %+v", retired)
		}
		if _, ok := orgCat()["openai/gw-test-model"]; ok {
			t.Fatal("retired model still in force")
		}
		if st, _ := e.do("DELETE", "/api/v1/instance/catalog/models/openai/none", e.ownerKey, nil); st != 404 {
			t.Fatalf("retire unknown: %d", st)
		}
		doc := `{"providers":[{"id":"local","name":"Local vLLM","kind":"openai-compatible"}],"models":[{"id":"local/llama","provider":"local","name":"Llama","context_window":8192,"max_output_tokens":2048,"pricing":{"input_per_mtok":"0","output_per_mtok":"0","cache_read_per_mtok":"0","cache_write_per_mtok":"0"},"capabilities":["streaming"],"modalities":["text"],"created":1700000000}]}`
		res := decodeData[wire.CatalogImportResult](t, e.must("POST", "/api/v1/instance/catalog/import", e.ownerKey, doc))
		if res.Providers != 1 || res.Models != 1 {
			t.Fatalf("import: %+v", res)
		}
		orphan := `{"providers":[],"models":[{"id":"ghost/m","provider":"ghost","name":"G","context_window":1,"max_output_tokens":1,"pricing":{"input_per_mtok":"0","output_per_mtok":"0","cache_read_per_mtok":"0","cache_write_per_mtok":"0"},"capabilities":[],"modalities":["text"],"created":1}]}`
		if st, raw := e.do("POST", "/api/v1/instance/catalog/import", e.ownerKey, orphan); st != 422 {
			t.Fatalf("model without provider: %d %s", st, raw)
		}
	})
}

// Item 1: a key holding only catalog.manage re-imported a provider with its
// own base_url, and every credential without a URL of its own then sent its
// secret there.
func TestCatalogCannotRedirectCredentialSecrets(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		importProvider(e, "hosted", "https://llm.example.com/v1")
		e.must("POST", "/api/v1/organizations/default/provider-credentials", e.ownerKey,
			map[string]any{"provider": "hosted", "label": "follows the catalog", "secret": "sk-upstream-0123456789"})
		catalogOnly := e.key("/api/v1/instance", e.ownerKey, []string{"catalog.read", "catalog.manage"}, nil).Token
		evil := `{"providers":[{"id":"hosted","name":"hosted","kind":"openai-compatible","base_url":"https://attacker.example/v1"}]}`
		evilEntry := `{"id":"hosted","name":"hosted","kind":"openai-compatible","base_url":"https://attacker.example/v1"}`
		cases := []struct {
			name, path, cred string
			body             string
			status           int
			detail           string
		}{
			{"import, unconfirmed", "/api/v1/instance/catalog/import", catalogOnly, evil, 409, "https://llm.example.com/v1 → https://attacker.example/v1 (1 credential)"},
			{"provider, unconfirmed", "/api/v1/instance/catalog/providers", catalogOnly, evilEntry, 409, "confirm_base_url_change=true"},
			{"import, confirmed without credential rights", "/api/v1/instance/catalog/import?confirm_base_url_change=true", catalogOnly, evil, 403, "provider-credentials.manage"},
			{"provider, confirmed without credential rights", "/api/v1/instance/catalog/providers?confirm_base_url_change=true", catalogOnly, evilEntry, 403, "provider-credentials.manage"},
			{"owner, unconfirmed", "/api/v1/instance/catalog/import", e.ownerKey, evil, 409, "give those credentials their own base_url"},
			{"bad confirmation value", "/api/v1/instance/catalog/import?confirm_base_url_change=yes", e.ownerKey, evil, 422, "literal_error"},
		}
		for _, c := range cases {
			status, raw := e.do("POST", c.path, c.cred, c.body)
			if status != c.status || !strings.Contains(string(raw), c.detail) {
				t.Errorf("%s: %d %s, want %d containing %q", c.name, status, raw, c.status, c.detail)
			}
		}
		rows := e.must("GET", "/api/v1/instance/catalog", e.ownerKey, nil)
		if strings.Contains(string(rows), "attacker.example") {
			t.Fatalf("the refused change was written: %s", rows)
		}
		// The same key may still edit what moves no secret: a new model.
		model := `{"id":"hosted/m2","provider":"hosted","name":"M2","context_window":8192,"max_output_tokens":2048,` +
			`"pricing":{"input_per_mtok":"1","output_per_mtok":"2","cache_read_per_mtok":"0","cache_write_per_mtok":"0"},` +
			`"capabilities":["streaming"],"modalities":["text"],"created":1700000000}`
		e.must("POST", "/api/v1/instance/catalog/import", catalogOnly,
			`{"providers":[{"id":"hosted","name":"Hosted","kind":"openai-compatible","base_url":"https://llm.example.com/v1"}],"models":[`+model+`]}`)
		if ev := e.lastAudit("catalog.imported"); ev == nil || fmt.Sprint(ev.Details["models_added"]) != "[hosted/m2]" {
			t.Fatalf("import audit does not name the model added: %+v", ev)
		}
		// Someone who manages credentials may move them, explicitly; the
		// audit entry says from where to where, never the secret.
		e.must("POST", "/api/v1/instance/catalog/import?confirm_base_url_change=true", e.ownerKey, evil)
		ev := e.lastAudit("catalog.imported")
		if ev == nil {
			t.Fatal("no audit entry for the confirmed import")
		}
		got := fmt.Sprint(ev.Details["base_url_changes"])
		for _, want := range []string{"old_base_url:https://llm.example.com/v1", "new_base_url:https://attacker.example/v1", "credentials_moved:1", "provider:hosted"} {
			if !strings.Contains(got, want) {
				t.Fatalf("base_url_changes %s lacks %s", got, want)
			}
		}
		for _, ev := range e.auditEvents() {
			if strings.Contains(fmt.Sprint(ev.Details), "sk-upstream-0123456789") {
				t.Fatalf("a secret reached the audit log: %+v", ev)
			}
		}
		// A credential with its own URL is not moved, so not counted.
		importProvider(e, "own", "https://one.example/v1")
		e.must("POST", "/api/v1/instance/provider-credentials", e.ownerKey,
			map[string]any{"provider": "own", "label": "pinned", "secret": "sk-upstream-abcdefghij", "base_url": "https://one.example/v1"})
		e.must("POST", "/api/v1/instance/catalog/import", catalogOnly,
			`{"providers":[{"id":"own","name":"own","kind":"openai-compatible","base_url":"https://two.example/v1"}]}`)
	})
}
