package dataplane_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/secrets"
)

// BenchmarkResponseCache measures a deterministic chat completion in one
// run through a plane whose workspace caches nothing ("off"), a miss
// (cache on, Cache-Control: no-cache: the key computed, the upstream
// called, the answer recorded and kept) and a hit (answered from the
// cache, metered, no upstream call). The upstream is an in-process fake,
// so "hit" against "miss" is a floor of what a hit saves.
//
//	go test -run '^$' -bench ResponseCache -benchmem ./server/dataplane
func BenchmarkResponseCache(b *testing.B) {
	answer := []byte(`{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello!","refusal":null},"logprobs":null,"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29}}`)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	}))
	b.Cleanup(up.Close)
	plane := func(on bool) (http.Handler, string) {
		edit := func(body *bundle.Body, _ *secrets.Keyring) {
			if on {
				body.Workspaces[0].ResponseCache = &bundle.ResponseCache{TTLSeconds: 3600, MaxEntryBytes: 1 << 20}
			}
		}
		token, signed, pub, kr := benchBundleEdit(b, up.URL+"/v1", "", nil, edit)
		p := dataplane.NewPlane(pub, dataplane.Options{Keyring: kr, Usage: &countingSink{}})
		if err := p.Admit(signed); err != nil {
			b.Fatal(err)
		}
		p.MarkReady()
		return p, token
	}
	body := []byte(`{"model":"openai/gpt-4o-mini","temperature":0,"messages":[{"role":"user","content":"Hello!"}]}`)
	run := func(b *testing.B, h http.Handler, token, cacheControl, want string) {
		b.ReportAllocs()
		for b.Loop() {
			req := httptest.NewRequest(http.MethodPost, "/inf/v1/chat/completions", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			if cacheControl != "" {
				req.Header.Set("Cache-Control", cacheControl)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != http.StatusOK || w.Header().Get("X-Gw-Cache") != want {
				b.Fatalf("status %d, x-gw-cache %q (want %q): %s", w.Code, w.Header().Get("X-Gw-Cache"), want, w.Body)
			}
		}
	}
	offH, offToken := plane(false)
	onH, onToken := plane(true)
	// Warm both planes (connections to the fake, pools) before timing.
	for range 200 {
		for _, pl := range []struct {
			h     http.Handler
			token string
		}{{offH, offToken}, {onH, onToken}} {
			req := httptest.NewRequest(http.MethodPost, "/inf/v1/chat/completions", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+pl.token)
			req.Header.Set("Cache-Control", "no-cache")
			pl.h.ServeHTTP(httptest.NewRecorder(), req)
		}
	}
	var offNs, missNs float64
	b.Run("off", func(b *testing.B) {
		run(b, offH, offToken, "", "")
		offNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("miss", func(b *testing.B) {
		run(b, onH, onToken, "no-cache", "miss")
		missNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		b.ReportMetric(missNs/offNs, "ratio-to-off")
	})
	b.Run("hit", func(b *testing.B) {
		run(b, onH, onToken, "", "hit")
		ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		b.ReportMetric(ns/offNs, "ratio-to-off")
		b.ReportMetric(ns/missNs, "ratio-to-miss")
	})
}
