package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/wire"
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
			if c.Settings == nil || c.Settings.Region != "eu-west-1" || strings.Contains(string(raw), "wJalrXUtnFEMI") {
				t.Fatalf("bedrock credential: %s", raw)
			}
			raw = e.must("POST", place, e.ownerKey, map[string]any{"provider": "vertex", "label": "gcp", "secret": sa,
				"settings": map[string]any{"location": "us-east5", "project": "other-project"}})
			if v := decodeData[wire.ProviderCredential](t, raw); v.Settings == nil || v.Settings.Location != "us-east5" ||
				strings.Contains(string(raw), "PRIVATE KEY") {
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
			st, raw := e.do("PATCH", place+"/"+c.ID.String(), e.ownerKey, map[string]any{"settings": map[string]any{"location": "us-east5"}})
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
