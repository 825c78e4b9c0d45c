package dataplane_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/reseal"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store/fixture"
	"github.com/gw-gateway/gw/server/telemetry"
	"github.com/gw-gateway/gw/wire"
)

// BenchmarkChatCompletionsOverhead measures what the gateway adds to a
// non-streaming chat completion: the same client sends the same request
// to a fake upstream that answers at once, directly (the baseline, run
// first in the same process) and through gw, both over loopback HTTP with
// kept-alive connections. The gateway's path is complete: key lookup,
// parsing, policy evaluation (a workspace policy with an allowlist, a
// request limit and a fallback rule), the opened secret, the upstream call
// with a rewritten body, the rewritten answer and a usage event.
//
//	go test -run '^$' -bench ChatCompletionsOverhead -benchmem ./server/dataplane
//
// "gw" reports, beside its own ns/op, the baseline's (direct-ns/op), the
// difference (overhead-ns/op), gw's time as a multiple of it (ratio), and
// as a multiple of a reverse proxy that forwards bytes and does nothing
// else (ratio-to-byte-proxy), the floor of any gateway.
func BenchmarkChatCompletionsOverhead(b *testing.B) {
	answer := []byte(`{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello! How can I help you today?","refusal":null},"logprobs":null,"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":0}},"system_fingerprint":"fp_bench"}`)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	}))
	b.Cleanup(upstream.Close)

	token, signed, pub, kr := benchBundle(b, upstream.URL+"/v1")
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
	direct := func(b *testing.B) {
		benchPost(b, client, upstream.URL+"/v1/chat/completions", "sk-upstream-bench", `{"model":"gpt-4o-mini",`+messages+`}`)
	}
	through := func(b *testing.B) {
		benchPost(b, client, gw.URL+"/inf/v1/chat/completions", token, `{"model":"openai/gpt-4o-mini",`+messages+`}`)
	}

	// A reverse proxy that only forwards bytes is the floor of any
	// gateway: its cost over "direct" is the second HTTP exchange itself.
	target, err := url.Parse(upstream.URL)
	if err != nil {
		b.Fatal(err)
	}
	proxy := httptest.NewServer(httputil.NewSingleHostReverseProxy(target))
	b.Cleanup(proxy.Close)
	forwarded := func(b *testing.B) {
		benchPost(b, client, proxy.URL+"/v1/chat/completions", "sk-upstream-bench", `{"model":"gpt-4o-mini",`+messages+`}`)
	}

	// The baselines run to completion before "gw" starts, so "gw" can
	// report itself against them.
	var directNs, proxyNs float64
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		direct(b)
		directNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("byte-proxy", func(b *testing.B) {
		b.ReportAllocs()
		forwarded(b)
		proxyNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("gw", func(b *testing.B) {
		b.ReportAllocs()
		before := sink.n.Load()
		through(b)
		gwNs := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		b.ReportMetric(directNs, "direct-ns/op")
		b.ReportMetric(gwNs-directNs, "overhead-ns/op")
		b.ReportMetric(gwNs/directNs, "ratio")
		b.ReportMetric(gwNs/proxyNs, "ratio-to-byte-proxy")
		if n := sink.n.Load() - before; n != int64(b.N) {
			b.Fatalf("%d usage events for %d requests", n, b.N)
		}
	})

	// The same path with the Prometheus metrics on (a plane of its own,
	// same bundle), to hold their cost to the budget in docs/operations.md:
	// compare its ns/op with "gw" from the same run.
	metered := dataplane.NewPlane(pub, dataplane.Options{Keyring: kr, Usage: sink, Metrics: telemetry.NewMetrics("bench", "data-plane")})
	if err := metered.Admit(signed); err != nil {
		b.Fatal(err)
	}
	metered.MarkReady()
	gwm := httptest.NewServer(metered)
	b.Cleanup(gwm.Close)
	b.Run("gw-metrics", func(b *testing.B) {
		b.ReportAllocs()
		benchPost(b, client, gwm.URL+"/inf/v1/chat/completions", token, `{"model":"openai/gpt-4o-mini",`+messages+`}`)
		b.ReportMetric(directNs, "direct-ns/op")
	})
}

func benchPost(b *testing.B, client *http.Client, url, token, body string) {
	payload := []byte(body)
	for b.Loop() {
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(payload))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

// benchBundle signs a one-workspace organization with an openai credential
// at baseURL and a typical workspace policy, without a database.
func benchBundle(b testing.TB, baseURL string) (string, bundle.Signed, ed25519.PublicKey, *secrets.Keyring) {
	return benchBundleWith(b, baseURL, "", nil)
}

// benchBundleWith is benchBundle with extra rules in the policy and rate
// limits on the key.
func benchBundleWith(b testing.TB, baseURL, extraRules string, limits *bundle.RateLimits) (string, bundle.Signed, ed25519.PublicKey, *secrets.Keyring) {
	b.Helper()
	return benchBundleEdit(b, baseURL, extraRules, limits, nil)
}

// benchBundleEdit is benchBundleWith with edit applied to the body (its
// one workspace first) before it is signed.
func benchBundleEdit(b testing.TB, baseURL, extraRules string, limits *bundle.RateLimits, edit func(*bundle.Body, *secrets.Keyring)) (string, bundle.Signed, ed25519.PublicKey, *secrets.Keyring) {
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
	token, _, hash := auth.NewToken(auth.InferenceKeyPrefix)
	ws, credID := uuid.New(), uuid.New()
	sealed, err := kr.Seal([]byte("sk-upstream-bench"), reseal.CredentialAAD(credID))
	if err != nil {
		b.Fatal(err)
	}
	def, err := policy.ParseDefinitionJSON([]byte(`{"target":{"kind":"workspace"},"rules":[
		{"match":{"kind":"all_requests"},"action":{"kind":"models","names":["openai/gpt-4o-mini","openai/gpt-4o","anthropic/claude-haiku-4-5-20251001"]}},
		{"match":{"kind":"all_requests"},"action":{"kind":"request_limits","max_output_tokens":4096}},
		{"match":{"kind":"all_requests"},"action":{"kind":"fallback","models":["openai/gpt-4o"],"on":["rate_limited"],"max_attempts":2,"timeout_ms":30000}}` +
		extraRules + `]}`))
	if err != nil {
		b.Fatal(err)
	}
	body := &bundle.Body{
		Format: bundle.Format, OrgID: uuid.New(), Version: 1, CompiledAt: time.Now().UTC(),
		Workspaces:  []bundle.Workspace{{ID: ws, Slug: "main", Name: "Main"}},
		Keys:        []bundle.Key{{ID: uuid.New(), WorkspaceID: ws, OwnerID: uuid.New(), TokenHash: hash, RateLimits: limits}},
		Policies:    []bundle.Policy{{ID: uuid.New(), WorkspaceID: ws, Name: "typical", Definition: def}},
		Catalog:     *cat,
		Credentials: []bundle.Credential{{ID: credID, Scope: policy.ScopeOrg, Provider: "openai", BaseURL: &baseURL, SecretSealed: sealed}},
	}
	if edit != nil {
		edit(body, kr)
	}
	signed, err := bundle.Sign(body, priv)
	if err != nil {
		b.Fatal(err)
	}
	return token, signed, pub, kr
}

// countingSink counts usage events and keeps none.
type countingSink struct{ n atomic.Int64 }

func (c *countingSink) Record(wire.UsageEventIn) { c.n.Add(1) }
