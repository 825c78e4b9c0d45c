package api_test

import (
	"net/http"
	"testing"

	"github.com/gw-gateway/gw/wire"
)

// settings.batches (docs/batches.md) says where an openai, azure-openai or
// anthropic credential's batch lines run: "native" or "gateway", checked
// when saved; another value, or the setting on a kind without a batch API
// gw speaks, is a 422 naming it.
func TestCredentialBatchesSetting(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		place := credentialPlaces[0]
		refusals := []struct {
			body map[string]any
			want string
		}{
			{map[string]any{"provider": "openai", "label": "o", "secret": "sk-0123456789abcdef", "settings": map[string]any{"batches": "sometimes"}},
				"body.settings.batches:string_pattern_mismatch"},
			{map[string]any{"provider": "anthropic", "label": "a", "secret": "sk-ant-0123456789abcdef", "settings": map[string]any{"batches": ""}},
				"body.settings.batches:string_too_short"},
			{map[string]any{"provider": "bedrock", "label": "b", "secret": `{"access_key_id":"AKIAEXAMPLE","secret_access_key":"wJalrXUtnFEMIEXAMPLEKEY"}`,
				"settings": map[string]any{"region": "us-east-1", "batches": "native"}}, "body.settings.batches:extra_forbidden"},
		}
		for _, r := range refusals {
			st, raw := e.do("POST", place, e.ownerKey, r.body)
			if got := issueSet(t, raw); st != http.StatusUnprocessableEntity || !containsAll(got, []string{r.want}) {
				t.Fatalf("%v: %d %s, want %s", r.body, st, raw, r.want)
			}
		}
		raw := e.must("POST", place, e.ownerKey, map[string]any{"provider": "openai", "label": "o", "secret": "sk-0123456789abcdef",
			"settings": map[string]any{"batches": "gateway"}})
		if c := decodeData[wire.ProviderCredential](t, raw); c.Settings == nil || c.Settings.Batches != "gateway" {
			t.Fatalf("openai credential: %s", raw)
		}
	})
}
