package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/wire"
)

// A vertex credential's batch prediction settings (docs/batches.md):
// batch_gcs_uri, a gs://bucket/ or gs://bucket/prefix/, and
// batch_gcs_endpoint, an http(s) URL held to the egress policy, checked
// when saved (422 naming the field); an endpoint with no bucket, or either
// on another kind, is refused; a new endpoint needs the secret again.
func TestVertexBatchSettings(t *testing.T) {
	sa := providerstest.NewVertex(t, "gw-test-project", "us-east5").ServiceAccount()
	eachEgressEnv(t, api.Options{}, func(t *testing.T, e *egressEnv) {
		place := credentialPlaces[0]
		vertex := func(settings map[string]any) map[string]any {
			settings["location"] = "us-east5"
			return map[string]any{"provider": "vertex", "label": uniqueLabel(), "secret": sa, "settings": settings}
		}
		for _, r := range []struct {
			body map[string]any
			want string
		}{
			{vertex(map[string]any{"batch_gcs_uri": "s3://bucket/prefix/"}), "body.settings.batch_gcs_uri:string_pattern_mismatch"},
			{vertex(map[string]any{"batch_gcs_uri": "gs://bucket/prefix"}), "body.settings.batch_gcs_uri:string_pattern_mismatch"},
			{vertex(map[string]any{"batch_gcs_uri": "gs://Bucket_Upper/"}), "body.settings.batch_gcs_uri:string_pattern_mismatch"},
			{vertex(map[string]any{"batch_gcs_uri": "gs://bucket"}), "body.settings.batch_gcs_uri:string_pattern_mismatch"},
			{vertex(map[string]any{"batch_gcs_uri": "gs://bucket//x/"}), "body.settings.batch_gcs_uri:string_pattern_mismatch"},
			{vertex(map[string]any{"batch_gcs_endpoint": "http://127.0.0.1:4443"}), "body.settings.batch_gcs_uri:missing"},
			{vertex(map[string]any{"batch_gcs_uri": "gs://bucket/", "batch_gcs_endpoint": "ftp://storage.example.com"}),
				"body.settings.batch_gcs_endpoint:string_pattern_mismatch"},
			{vertex(map[string]any{"batches": "later"}), "body.settings.batches:string_pattern_mismatch"},
			{map[string]any{"provider": "openai", "label": uniqueLabel(), "secret": "sk-0123456789abcdef",
				"settings": map[string]any{"batch_gcs_uri": "gs://bucket/"}}, "body.settings.batch_gcs_uri:extra_forbidden"},
		} {
			st, raw := e.do("POST", place, e.ownerKey, r.body)
			if got := issueSet(t, raw); st != http.StatusUnprocessableEntity || !containsAll(got, []string{r.want}) {
				t.Fatalf("%v: %d %s, want %s", r.body["settings"], st, raw, r.want)
			}
			if strings.Contains(string(raw), "PRIVATE KEY") {
				t.Fatalf("the refusal echoes the service account's key: %s", raw)
			}
		}
		// The storage endpoint is held to the egress policy, as a base URL is.
		st, raw := e.do("POST", place, e.ownerKey, vertex(map[string]any{"batch_gcs_uri": "gs://bucket/",
			"batch_gcs_endpoint": "http://metadata.google.internal/storage"}))
		refused(t, "batch_gcs_endpoint", st, raw, "body.settings.batch_gcs_endpoint", "cloud metadata service")

		raw = e.must("POST", place, e.ownerKey, vertex(map[string]any{"batch_gcs_uri": "gs://gw-batches/jobs/", "batch_gcs_endpoint": "http://127.0.0.1:4443",
			"batches": "native"}))
		c := decodeData[wire.ProviderCredential](t, raw)
		if c.Settings == nil || c.Settings.BatchGCSURI != "gs://gw-batches/jobs/" || c.Settings.BatchGCSEndpoint != "http://127.0.0.1:4443" || c.Settings.Batches != "native" {
			t.Fatalf("vertex credential: %s", raw)
		}
		// A new endpoint would carry the service account's tokens to a new
		// host: it needs the secret again.
		st, raw = e.do("PATCH", place+"/"+c.ID.String(), e.ownerKey, map[string]any{"settings": map[string]any{"location": "us-east5",
			"batch_gcs_uri": "gs://gw-batches/jobs/", "batch_gcs_endpoint": "http://127.0.0.2:4443"}})
		if got := issueSet(t, raw); st != http.StatusUnprocessableEntity || !containsAll(got, []string{"body.secret:missing"}) {
			t.Fatalf("PATCH batch_gcs_endpoint without the secret: %d %s", st, raw)
		}
		e.must("PATCH", place+"/"+c.ID.String(), e.ownerKey, map[string]any{"secret": sa, "settings": map[string]any{"location": "us-east5",
			"batch_gcs_uri": "gs://gw-batches/other/", "batch_gcs_endpoint": "http://127.0.0.2:4443"}})
	})
}
