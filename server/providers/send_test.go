package providers_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/server/providers/providerstest"
)

// upstream is what every fake upstream offers.
type upstream interface {
	Enqueue(...providerstest.Reply)
	Requests() []providerstest.Request
}

// Every kind's request goes through one send (issue 29): each carries the
// request id, gw's attempt span as its trace parent (never the caller's),
// the kind's auth and a JSON content type, and each maps the upstream's
// refusals to the same error kinds.
func TestSendEveryKind(t *testing.T) {
	set := providers.NewSet(nil)
	adapter := func(kind catalog.Kind) providers.Adapter {
		a, ok := set.For(kind)
		if !ok {
			t.Fatalf("no adapter for %s", kind)
		}
		return a
	}
	native := func(dialect string, kind catalog.Kind, model string) providers.Adapter {
		a, ok := set.Native(dialect, kind, model)
		if !ok {
			t.Fatalf("no %s adapter for %s", dialect, kind)
		}
		return a
	}
	const chatBody = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	chat := func(base, model, secret string, s providers.Settings) *providers.Call {
		req, err := providers.ParseChatRequest([]byte(chatBody))
		if err != nil {
			t.Fatal(err)
		}
		return &providers.Call{Request: req, BaseURL: base, UpstreamModel: model, ResponseModel: "x/" + model, Secret: secret,
			Settings: s, CredentialID: "cred-1", DefaultMaxTokens: 1024}
	}
	nativeCall := func(body, base, model, secret string, s providers.Settings) *providers.Call {
		c := chat(base, model, secret, s)
		members, err := providers.ParseObject([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		c.Native = &providers.NativeRequest{Body: []byte(body), Members: members}
		return c
	}
	const messagesBody = `{"model":"m","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`
	const responsesBody = `{"model":"m","input":"hi"}`
	const embeddingsBody = `{"model":"m","input":"hi"}`
	bearer := func(secret string) func(http.Header) bool {
		return func(h http.Header) bool { return h.Get("Authorization") == "Bearer "+secret }
	}
	header := func(name, secret string) func(http.Header) bool {
		return func(h http.Header) bool { return h.Get(name) == secret }
	}
	sigV4 := func(h http.Header) bool { return strings.HasPrefix(h.Get("Authorization"), "AWS4-HMAC-SHA256 ") }
	googleToken := func(h http.Header) bool {
		return strings.HasPrefix(h.Get("Authorization"), "Bearer ") && len(h.Get("Authorization")) > len("Bearer ")
	}

	oa := providerstest.NewOpenAI(t, "sk-openai")
	an := providerstest.NewAnthropic(t, "sk-ant")
	ge := providerstest.NewGemini(t, "AIza-gemini")
	br := providerstest.NewBedrock(t, "us-east-1")
	vx := providerstest.NewVertex(t, "proj", "us-east5")
	az := providerstest.NewAzure(t, "az-key", "2025-04-01-preview", "dep-4o", "dep-emb")
	brSet := providers.Settings{Region: "us-east-1"}
	vxSet := providers.Settings{Project: "proj", Location: "us-east5", TokenURL: vx.TokenURL()}
	azSet := providers.Settings{APIVersion: "2025-04-01-preview", Deployments: map[string]string{"gpt-4o": "dep-4o", "text-embedding-3-small": "dep-emb"}}

	cases := []struct {
		name    string
		adapter providers.Adapter
		call    *providers.Call
		up      upstream
		auth    func(http.Header) bool
	}{
		{"chat/openai", adapter(catalog.KindOpenAI), chat(oa.BaseURL(), "gpt-4o", "sk-openai", providers.Settings{}), oa, bearer("sk-openai")},
		{"chat/anthropic", adapter(catalog.KindAnthropic), chat(an.BaseURL(), "claude-sonnet-4-5", "sk-ant", providers.Settings{}), an, header("X-Api-Key", "sk-ant")},
		{"chat/gemini", adapter(catalog.KindGemini), chat(ge.BaseURL(), "gemini-2.5-flash", "AIza-gemini", providers.Settings{}), ge, header("X-Goog-Api-Key", "AIza-gemini")},
		{"chat/bedrock", adapter(catalog.KindBedrock), chat(br.BaseURL(), "amazon.nova-lite-v1:0", br.Secret(), brSet), br, sigV4},
		{"chat/vertex-gemini", adapter(catalog.KindVertex), chat(vx.BaseURL(), "gemini-2.5-flash", vx.ServiceAccount(), vxSet), vx, googleToken},
		{"chat/vertex-claude", adapter(catalog.KindVertex), chat(vx.BaseURL(), "claude-sonnet-4-5", vx.ServiceAccount(), vxSet), vx, googleToken},
		{"chat/azure", adapter(catalog.KindAzureOpenAI), chat(az.BaseURL(), "gpt-4o", "az-key", azSet), az, header("Api-Key", "az-key")},
		{"messages/anthropic", native("messages", catalog.KindAnthropic, "claude-sonnet-4-5"), nativeCall(messagesBody, an.BaseURL(), "claude-sonnet-4-5", "sk-ant", providers.Settings{}), an, header("X-Api-Key", "sk-ant")},
		{"messages/bedrock", native("messages", catalog.KindBedrock, "anthropic.claude-sonnet-4-5"), nativeCall(messagesBody, br.BaseURL(), "anthropic.claude-sonnet-4-5", br.Secret(), brSet), br, sigV4},
		{"messages/vertex", native("messages", catalog.KindVertex, "claude-sonnet-4-5"), nativeCall(messagesBody, vx.BaseURL(), "claude-sonnet-4-5", vx.ServiceAccount(), vxSet), vx, googleToken},
		{"responses/openai", native("responses", catalog.KindOpenAI, "gpt-4o"), nativeCall(responsesBody, oa.BaseURL(), "gpt-4o", "sk-openai", providers.Settings{}), oa, bearer("sk-openai")},
		{"embeddings/openai", native("embeddings", catalog.KindOpenAI, "text-embedding-3-small"), nativeCall(embeddingsBody, oa.BaseURL(), "text-embedding-3-small", "sk-openai", providers.Settings{}), oa, bearer("sk-openai")},
		{"embeddings/azure", native("embeddings", catalog.KindAzureOpenAI, "text-embedding-3-small"), nativeCall(embeddingsBody, az.BaseURL(), "text-embedding-3-small", "az-key", azSet), az, header("Api-Key", "az-key")},
		{"embeddings/gemini", native("embeddings", catalog.KindGemini, "gemini-embedding-001"), nativeCall(embeddingsBody, ge.BaseURL(), "gemini-embedding-001", "AIza-gemini", providers.Settings{}), ge, header("X-Goog-Api-Key", "AIza-gemini")},
		{"embeddings/bedrock", native("embeddings", catalog.KindBedrock, "amazon.titan-embed-text-v2:0"), nativeCall(embeddingsBody, br.BaseURL(), "amazon.titan-embed-text-v2:0", br.Secret(), brSet), br, sigV4},
	}
	const callerTrace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	traceID, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	spanID, _ := trace.SpanIDFromHex("1111111111111111")
	// gw's attempt span, a child of the caller's in the caller's trace.
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: traceID, SpanID: spanID, TraceFlags: trace.FlagsSampled}))
	const gwTrace = "00-4bf92f3577b34da6a3ce929d0e0e4736-1111111111111111-01"
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.call.RequestID, c.call.Header = "req-"+c.name, http.Header{"Traceparent": {callerTrace}}
			before := len(c.up.Requests())
			if _, err := c.adapter.Complete(ctx, c.call); err != nil {
				t.Fatalf("complete: %v", err)
			}
			reqs := c.up.Requests()
			if len(reqs) != before+1 {
				t.Fatalf("%d upstream requests, want 1", len(reqs)-before)
			}
			h := reqs[len(reqs)-1].Header
			if got := h.Get("X-Request-Id"); got != "req-"+c.name {
				t.Errorf("X-Request-Id %q", got)
			}
			if got := h.Get("Traceparent"); got != gwTrace {
				t.Errorf("traceparent %q, want gw's span %q (the caller's is %q)", got, gwTrace, callerTrace)
			}
			if got := h.Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type %q", got)
			}
			if !c.auth(h) {
				t.Errorf("not authorized as the kind is: %v", h)
			}
			for status, kind := range map[int]providers.ErrorKind{429: providers.RateLimited, 503: providers.Unavailable, 400: providers.Rejected} {
				c.up.Enqueue(providerstest.Reply{Status: status, Message: "no"})
				_, err := c.adapter.Complete(ctx, c.call)
				var e *providers.Error
				if !errors.As(err, &e) || e.Kind != kind || e.Status != status {
					t.Errorf("a %d answer: %v, want %s", status, err, kind)
				}
			}
		})
	}
}
