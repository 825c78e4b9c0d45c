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
			{map[string]any{"provider": "gemini", "label": "g", "secret": "AIzaFake0123456789",
				"settings": map[string]any{"batches": "native"}}, "body.settings.batches:extra_forbidden"},
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

// A bedrock credential's batch inference settings (docs/batches.md): the
// S3 prefix and the role, each in its form and each needing the other, an
// S3 endpoint held to the egress policy like a base URL (the metadata
// service refused), shown back as saved; a PATCH to another endpoint
// needs the secret again.
func TestCredentialBedrockBatchSettings(t *testing.T) {
	const awsSecret = `{"access_key_id":"AKIAEXAMPLE","secret_access_key":"wJalrXUtnFEMIEXAMPLEKEY"}`
	eachEnv(t, func(t *testing.T, e *env) {
		place := credentialPlaces[1]
		body := func(settings map[string]any) map[string]any {
			s := map[string]any{"region": "us-east-1"}
			for k, v := range settings {
				s[k] = v
			}
			return map[string]any{"provider": "bedrock", "label": "b", "secret": awsSecret, "settings": s}
		}
		const role = "arn:aws:iam::123456789012:role/gw-batch"
		for _, r := range []struct {
			settings map[string]any
			want     string
		}{
			{map[string]any{"batch_s3_uri": "s3://Bad_Bucket/", "batch_role_arn": role}, "body.settings.batch_s3_uri:string_pattern_mismatch"},
			{map[string]any{"batch_s3_uri": "s3://gw-batches/jobs", "batch_role_arn": role}, "body.settings.batch_s3_uri:string_pattern_mismatch"},
			{map[string]any{"batch_s3_uri": "s3://gw-batches/", "batch_role_arn": "gw-batch"}, "body.settings.batch_role_arn:string_pattern_mismatch"},
			{map[string]any{"batch_s3_uri": "s3://gw-batches/"}, "body.settings.batch_role_arn:missing"},
			{map[string]any{"batch_role_arn": role}, "body.settings.batch_s3_uri:missing"},
			{map[string]any{"batch_s3_endpoint": "https://s3.example.com"}, "body.settings.batch_s3_uri:missing"},
			{map[string]any{"batch_s3_uri": "s3://gw-batches/", "batch_role_arn": role, "batch_s3_endpoint": "s3.example.com"},
				"body.settings.batch_s3_endpoint:string_pattern_mismatch"},
			{map[string]any{"batch_s3_uri": "s3://gw-batches/", "batch_role_arn": role, "batch_s3_endpoint": "http://169.254.169.254/"},
				"body.settings.batch_s3_endpoint:value_error"},
		} {
			st, raw := e.do("POST", place, e.ownerKey, body(r.settings))
			if got := issueSet(t, raw); st != http.StatusUnprocessableEntity || !containsAll(got, []string{r.want}) {
				t.Fatalf("%v: %d %s, want %s", r.settings, st, raw, r.want)
			}
		}
		// The batch settings on another kind are not taken.
		st, raw := e.do("POST", place, e.ownerKey, map[string]any{"provider": "openai", "label": "o", "secret": "sk-0123456789abcdef",
			"settings": map[string]any{"batch_s3_uri": "s3://gw-batches/"}})
		if got := issueSet(t, raw); st != http.StatusUnprocessableEntity || !containsAll(got, []string{"body.settings.batch_s3_uri:extra_forbidden"}) {
			t.Fatalf("openai with batch_s3_uri: %d %s", st, raw)
		}
		raw = e.must("POST", place, e.ownerKey, body(map[string]any{"batch_s3_uri": "s3://gw-batches/jobs/", "batch_role_arn": role,
			"batch_s3_endpoint": "http://127.0.0.1:9000"}))
		c := decodeData[wire.ProviderCredential](t, raw)
		if c.Settings == nil || c.Settings.BatchS3URI != "s3://gw-batches/jobs/" || c.Settings.BatchRoleARN != role ||
			c.Settings.BatchS3Endpoint != "http://127.0.0.1:9000" {
			t.Fatalf("bedrock credential: %s", raw)
		}
		moved := map[string]any{"settings": map[string]any{"region": "us-east-1", "batch_s3_uri": "s3://gw-batches/jobs/", "batch_role_arn": role,
			"batch_s3_endpoint": "https://s3.other.example.com"}}
		st, raw = e.do("PATCH", place+"/"+c.ID.String(), e.ownerKey, moved)
		if got := issueSet(t, raw); st != http.StatusUnprocessableEntity || !containsAll(got, []string{"body.secret:missing"}) {
			t.Fatalf("PATCH batch_s3_endpoint without the secret: %d %s", st, raw)
		}
		moved["secret"] = awsSecret
		raw = e.must("PATCH", place+"/"+c.ID.String(), e.ownerKey, moved)
		if c := decodeData[wire.ProviderCredential](t, raw); c.Settings.BatchS3Endpoint != "https://s3.other.example.com" {
			t.Fatalf("after the PATCH: %s", raw)
		}
	})
}
