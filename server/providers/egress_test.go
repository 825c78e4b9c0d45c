package providers_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/egress"
	"github.com/gw-gateway/gw/server/egress/egresstest"
	"github.com/gw-gateway/gw/server/providers"
)

// The adapters' client holds upstream and token-endpoint connections to
// the egress policy: an Entra ID token_url at the metadata service is
// refused before a byte leaves (the credential is named, the class too),
// and a base URL the policy refuses is never dialled.
func TestClientHoldsConnectionsToTheEgressPolicy(t *testing.T) {
	var hits atomic.Int64
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(upstream.Close)
	res := egresstest.NewResolver().Set("llm.example", "127.0.0.1")
	client := providers.NewGuardedHTTPClient(func() egress.Policy { return egress.Policy{DenyPrivate: true, Resolver: res} })
	azure := &providers.OpenAI{Client: client, Dialect: providers.DialectAzure}

	c := call(t, upstream.URL, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	c.CredentialID = "cred-entra"
	c.Secret = `{"tenant_id":"t","client_id":"c","client_secret":"entra-secret-value"}`
	c.Settings = providers.Settings{TokenURL: "http://169.254.169.254/metadata/identity/oauth2/token"}
	_, err := azure.Complete(context.Background(), c)
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Kind != providers.Unauthorized || !strings.Contains(pe.Message, "cred-entra") ||
		!strings.Contains(pe.Message, "cloud metadata service") || strings.Contains(err.Error(), "entra-secret-value") {
		t.Fatalf("token endpoint at the metadata service: %v", err)
	}

	openai := &providers.OpenAI{Client: client, Dialect: providers.DialectOpenAI}
	port := upstream.URL[strings.LastIndex(upstream.URL, ":"):]
	for _, base := range []string{upstream.URL + "/v1", "http://llm.example" + port + "/v1"} {
		_, err = openai.Complete(context.Background(), call(t, base, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
		var refused *egress.Refusal
		if !errors.As(err, &refused) || refused.Class != egress.Loopback {
			t.Errorf("%s under --egress-deny-private: %v", base, err)
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("the upstream saw %d requests", hits.Load())
	}
}

// A bedrock credential's batch bucket is dialled under the same policy:
// its S3 endpoint, refused (loopback under --egress-deny-private), is
// never reached, and the refusal names the class; the job API, at the
// credential's base URL, likewise.
func TestBedrockBatchBucketHeldToTheEgressPolicy(t *testing.T) {
	var hits atomic.Int64
	store := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(store.Close)
	client := providers.NewGuardedHTTPClient(func() egress.Policy { return egress.Policy{DenyPrivate: true} })
	api := providers.NewSet(client).BatchAPI()
	c := &providers.Call{CredentialID: "cred-bedrock", BaseURL: store.URL, UpstreamModel: "anthropic.claude-3-haiku-20240307-v1:0",
		Secret: `{"access_key_id":"AKIAEXAMPLE","secret_access_key":"bedrock-secret-value"}`,
		Settings: providers.Settings{Region: "us-east-1", BatchS3URI: "s3://gw-batches/", BatchRoleARN: "arn:aws:iam::123456789012:role/r",
			BatchS3Endpoint: store.URL}}
	reqs := []providers.BatchRequest{{CustomID: "gw-1", Body: []byte(`{"model":"m","max_tokens":5,"messages":[]}`)}}
	_, err := api.Upload(context.Background(), catalog.KindBedrock, c, "/v1/messages", "gw-batch-x-g1", reqs)
	if err == nil || !strings.Contains(err.Error(), "loopback") || strings.Contains(err.Error(), "bedrock-secret-value") {
		t.Fatalf("upload to a refused bucket: %v", err)
	}
	_, err = api.Get(context.Background(), catalog.KindBedrock, c, "arn:aws:bedrock:us-east-1:123456789012:model-invocation-job/x")
	var refused *egress.Refusal
	if !errors.As(err, &refused) || refused.Class != egress.Loopback {
		t.Fatalf("the job API at a refused address: %v", err)
	}
	if hits.Load() != 0 {
		t.Fatalf("the refused store saw %d requests", hits.Load())
	}
}
