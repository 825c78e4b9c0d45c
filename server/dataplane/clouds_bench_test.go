package dataplane_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/cputest"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/reseal"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store/fixture"
)

// benchKind is one upstream kind in BenchmarkChatCompletionsOverheadKinds:
// a model of it, its credential, and an upstream answer in its protocol.
type benchKind struct {
	kind, model, provider string
	secret, settings      string
	answer                string
	contentType           string
}

// BenchmarkChatCompletionsOverheadKinds is BenchmarkChatCompletionsOverhead
// for each upstream kind: the same Chat Completions request through gw to
// a model of each kind, whose fake upstream answers at once in its own
// protocol (Converse signed with SigV4 for Bedrock; generateContent with a
// cached OAuth token for Vertex AI; an api-key for the Gemini API and
// Azure). "ratio-to-openai" is a kind's ns/op over the openai kind's from
// the same run, which runs first.
//
//	go test -run '^$' -bench ChatCompletionsOverheadKinds -benchmem ./server/dataplane
func BenchmarkChatCompletionsOverheadKinds(b *testing.B) {
	openAIAnswer := `{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello! How can I help you today?","refusal":null},"logprobs":null,"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":0}},"system_fingerprint":"fp_bench"}`
	geminiAnswer := `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hello! How can I help you today?"}]},"finishReason":"STOP","index":0}],` +
		`"usageMetadata":{"promptTokenCount":19,"candidatesTokenCount":10,"totalTokenCount":29},"modelVersion":"gemini-2.5-flash","responseId":"bench"}`
	kinds := []benchKind{
		{kind: "openai", model: "openai/gpt-4o-mini", provider: "openai", secret: "sk-upstream-bench", answer: openAIAnswer},
		{kind: "anthropic", model: haiku, provider: "anthropic", secret: "sk-ant-bench", answer: `{"id":"msg_bench","type":"message","role":"assistant",` +
			`"model":"claude-haiku-4-5","content":[{"type":"text","text":"Hello! How can I help you today?"}],"stop_reason":"end_turn","stop_sequence":null,` +
			`"usage":{"input_tokens":19,"output_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}`},
		{kind: "bedrock", model: bedrockNova, provider: "bedrock", secret: `{"access_key_id":"AKIABENCH","secret_access_key":"bench/secret"}`,
			settings: `{"region":"us-east-1"}`, answer: `{"output":{"message":{"role":"assistant","content":[{"text":"Hello! How can I help you today?"}]}},` +
				`"stopReason":"end_turn","usage":{"inputTokens":19,"outputTokens":10,"totalTokens":29},"metrics":{"latencyMs":100}}`},
		{kind: "vertex", model: vertexGemini, provider: "vertex", settings: `{"location":"us-east5"}`, answer: geminiAnswer},
		{kind: "gemini", model: geminiFlash, provider: "gemini", secret: "AIzaBench", answer: geminiAnswer},
		{kind: "azure-openai", model: azureMini, provider: "azure-openai", secret: "azure-bench-key", answer: openAIAnswer},
	}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/token" {
			_, _ = io.WriteString(w, `{"access_token":"ya29.bench","token_type":"Bearer","expires_in":3600}`)
			return
		}
		for _, k := range kinds {
			if strings.HasPrefix(r.URL.Path, "/"+k.kind+"/") {
				_, _ = io.WriteString(w, k.answer)
				return
			}
		}
		http.NotFound(w, r)
	}))
	b.Cleanup(upstream.Close)
	kinds[3].secret = benchServiceAccount(upstream.URL + "/token")

	token, signed, pub, kr := benchKindsBundle(b, upstream.URL, kinds)
	sink := &countingSink{}
	plane := dataplane.NewPlane(pub, dataplane.Options{Keyring: kr, Usage: sink})
	if err := plane.Admit(signed); err != nil {
		b.Fatal(err)
	}
	plane.MarkReady()
	gw := httptest.NewServer(plane)
	b.Cleanup(gw.Close)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	const messages = `"messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Hello!"}],"temperature":0.7`

	// One request of each kind first: connections, the Vertex token and
	// the opened secrets are set up before anything is timed.
	for _, k := range kinds {
		b.Run("warm="+k.kind, func(b *testing.B) {
			b.N = 1
			benchPost(b, client, gw.URL+"/inf/v1/chat/completions", token, `{"model":"`+k.model+`",`+messages+`}`)
		})
	}
	var openAINs, openAICPU float64
	for _, k := range kinds {
		b.Run("kind="+k.kind, func(b *testing.B) {
			b.ReportAllocs()
			before := cputest.Process()
			benchPost(b, client, gw.URL+"/inf/v1/chat/completions", token, `{"model":"`+k.model+`",`+messages+`}`)
			cpu := float64(cputest.Process()-before) / float64(b.N)
			ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			if k.kind == "openai" {
				openAINs, openAICPU = ns, cpu
			}
			b.ReportMetric(ns/openAINs, "ratio-to-openai")
			// CPU time (client, gw and upstream, all in this process)
			// holds still on a machine others share, where elapsed time
			// does not.
			b.ReportMetric(cpu, "cpu-ns/op")
			b.ReportMetric(cpu/openAICPU, "cpu-ratio-to-openai")
		})
	}
}

// benchServiceAccountKey is a fixed key of no account anywhere: a key
// generated per run would make instruction counts of the benchmark (under
// callgrind) differ from run to run by the search for its primes.
const benchServiceAccountKey = `-----BEGIN PRIVATE KEY-----
MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQDDA0MtuIe7PRwe
PMy7uQCvYf9Q93bxWSYmd1UGHtD1kZlwXB4vm/KGz022eU0YvI9AVqdskduN753v
tL44vwSKLTHeo1q+vfztsVUcQBfwQoWzad8NnSr1Oz6Ylhek5FlY2d6Dsh8/c57V
aryiEaRtRb00xgfH+LYJ5gMgJN8ojVz6hs6DxwkzXiqgspb3622fpVXM0qfXkHNx
qhyo7zYDacneuNlFPd+HrXRjRqSEAM5gqt8oUB+4QH4kivOFBjgKxtBAlX285js7
+uR1p98pZccAXn6gr6He5tFyqk9oVAUKgPpzeE26J8yhq8oJC7DzmNXvK7Y4Wsl6
ZtxgCWI3AgMBAAECggEAAlTWJ0RG/yKOZQAmFHJ0QySBSGcE+YKu1ZPkpNOWfPEW
LAU16SzMm/b7f1x44vxSHBtNGhuuS8abFUQMaCJEfCBpMbezPIeJ8A+ILHPJtXoe
HhR8ca2410CzkWBt/O8r8Ed+hQWKoRgRRIznn2pllFbambhqXGYpSvoAfJBkSJhO
tHhtNoY/0o+6yG7kdZOr6mFOhLKHHHZRgFo5j4paAS3SBKmmxHQeRrLGlkAbQ164
eM3aReSgkQgHI1v0CXVzX1xxDI1EDujnexc/6fftqd1gufaWs4gt5BdCfSoqpISa
8WxbACk8dp8ekZH4p5094RqhYagRe3rv3q+xteyZTQKBgQDqlButRyZkr/tgxsgv
nxORG/WPCGj0BW45SO3Uq5anR806LEoZ8sc234sKPcG65M4wUxYDzl0FGRnOZEFx
XC661Rw88Qcf5wRoM5+ldC3FuY6HXJ1J2hMS/kPUYO+Wfwllxc5SOuTVA9v3r5I/
gv1MrX8Sjokv/WIvIUQb2HNb5QKBgQDU0jMIv1XekjxIvHOrUZy5X4JklLGlxjsS
Pbx5E8GW5C8z440oK8hEvAxuDxMKI9vre2xQ5anDqETawRL6GfqrLY7+z18d5o7e
ToeuWjz0vw++oTOC07hbKhqMiEjqrb52vk+ERjjCw9Qu5nzL1/AropCJnULoZkpW
Ls1X7zl76wKBgQDKe5HwXmwbmXRJMwz1XkDLjvDFyCKgEFf2hqcUXhCq0GWsAzLr
dw7SpN8lte0V4A7C09U679SHZAVMjGmY6lND3lSDniHiPc0mDPmPHduswuDuotj6
OI0iZewy1IG6zGlWOgpAHKoN3UjwYdLBk9YFa/U2FWcBz5wCxpo91vasqQKBgDmK
/DGJSnZ7o8Em8z+HOZEFugPoEIB6MM6l0qgKJ3XdDMZC6I/MBsJO9i1r9gHv4C6z
mH3nGxfED5n2SmNFUvmlv9w1xcoX5NlG8ni5/XFPl7o7a+obxOUhZTxKPSz2/WCt
5GIneoFu4ZgsyeFz6YRi2CHdW5Hq1n6m+O6lyC0xAoGAJriobb76PyI9atTNnmCo
MwU+QuKy36gJ2co76Gwhuh3FwZ8xhWYymGeRC/aXjjFreXwEfAlxL8WUAspWME9/
atyhlS1acZNzuYOVE/OT5MXgF0xnUpzLseOW+yWE4a13ASYvG9fZabpQy2rQyB02
9BXEDLz+utSzyJw0HyK8CcM=
-----END PRIVATE KEY-----
`

// benchServiceAccount is a service account key file whose tokens come
// from tokenURL.
func benchServiceAccount(tokenURL string) string {
	sa, _ := json.Marshal(map[string]string{"type": "service_account", "project_id": "bench-project",
		"client_email": "bench@bench-project.iam.gserviceaccount.com", "private_key": benchServiceAccountKey, "token_uri": tokenURL})
	return string(sa)
}

// benchKindsBundle signs an organization with a credential of each kind,
// each at base+"/"+kind, and a workspace policy allowing their models.
func benchKindsBundle(b *testing.B, base string, kinds []benchKind) (string, bundle.Signed, ed25519.PublicKey, *secrets.Keyring) {
	b.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	cat, err := catalog.Default()
	if err != nil {
		b.Fatal(err)
	}
	kr := fixture.Keyring(b)
	tok, _, hash := auth.NewToken(auth.InferenceKeyPrefix)
	ws := uuid.New()
	var models []string
	var creds []bundle.Credential
	for _, k := range kinds {
		id := uuid.New()
		sealed, err := kr.Seal([]byte(k.secret), reseal.CredentialAAD(id))
		if err != nil {
			b.Fatal(err)
		}
		url := base + "/" + k.kind
		c := bundle.Credential{ID: id, Scope: policy.ScopeOrg, Provider: k.provider, BaseURL: &url, SecretSealed: sealed}
		if k.settings != "" {
			c.Settings = json.RawMessage(k.settings)
		}
		creds = append(creds, c)
		models = append(models, `"`+k.model+`"`)
	}
	def, err := policy.ParseDefinitionJSON([]byte(`{"target":{"kind":"workspace"},"rules":[
		{"match":{"kind":"all_requests"},"action":{"kind":"models","names":[` + strings.Join(models, ",") + `]}},
		{"match":{"kind":"all_requests"},"action":{"kind":"request_limits","max_output_tokens":4096}}]}`))
	if err != nil {
		b.Fatal(err)
	}
	body := &bundle.Body{
		Format: bundle.Format, OrgID: uuid.New(), Version: 1, CompiledAt: time.Now().UTC(),
		Workspaces:  []bundle.Workspace{{ID: ws, Slug: "main", Name: "Main"}},
		Keys:        []bundle.Key{{ID: uuid.New(), WorkspaceID: ws, OwnerID: uuid.New(), TokenHash: hash}},
		Policies:    []bundle.Policy{{ID: uuid.New(), WorkspaceID: ws, Name: "kinds", Definition: def}},
		Catalog:     *cat,
		Credentials: creds,
	}
	signed, err := bundle.Sign(body, priv)
	if err != nil {
		b.Fatal(err)
	}
	return tok, signed, pub, kr
}
