package dataplane_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/bundle/bundletest"
)

// The benchmarks run at bundletest.Benchmark scale: 500 models, 10,000
// keys, 200 policies. Each discovery benchmark has a baseline sub-benchmark,
// a handler that writes the same bytes with the same headers and does
// nothing else, so the figures read as a ratio on any machine:
//
//	go test -run '^$' -bench . -benchmem ./server/dataplane

// benchPlane admits the benchmark organization and picks the key with the
// longest model list, the most expensive one to answer.
func benchPlane(b *testing.B) (*admitEnv, *bundletest.Synthetic, string, []byte) {
	b.Helper()
	a := newAdmitEnv(b)
	syn := synthetic(b, 1, bundletest.Benchmark)
	if err := a.plane.Admit(a.sign(b, syn.Body)); err != nil {
		b.Fatal(err)
	}
	var token string
	var longest []byte
	for _, tok := range syn.Tokens {
		w := serve(a, http.MethodGet, "/inf/v1/models", tok)
		if w.Code == http.StatusOK && w.Body.Len() > len(longest) {
			token, longest = tok, w.Body.Bytes()
		}
	}
	return a, syn, token, longest
}

func serve(a *admitEnv, method, path, token string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, nil)
	r.Header.Set("Authorization", "Bearer "+token)
	w := httptest.NewRecorder()
	a.plane.ServeHTTP(w, r)
	return w
}

// fixedBytes is the baseline: a handler that writes a constant response.
func fixedBytes(body []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	})
}

func benchHandler(b *testing.B, h http.Handler, path, token string) {
	r := httptest.NewRequest(http.MethodGet, path, nil)
	r.Header.Set("Authorization", "Bearer "+token)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d", w.Code)
		}
	}
}

// discardWriter is a reusable ResponseWriter that keeps nothing, so the
// "discard" sub-benchmarks measure the handlers alone, without the
// recorder's copy of the body.
type discardWriter struct {
	h    http.Header
	code int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) WriteHeader(code int)        { d.code = code }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }

func benchHandlerDiscarding(b *testing.B, h http.Handler, path, token string) {
	r := httptest.NewRequest(http.MethodGet, path, nil)
	r.Header.Set("Authorization", "Bearer "+token)
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		h.ServeHTTP(w, r)
		if w.code != http.StatusOK {
			b.Fatalf("status %d", w.code)
		}
	}
}

func BenchmarkDiscoveryList(b *testing.B) {
	a, _, token, longest := benchPlane(b)
	b.Logf("list of the benchmark key: %d bytes", len(longest))
	b.Run("gw", func(b *testing.B) { benchHandler(b, a.plane, "/inf/v1/models", token) })
	b.Run("baseline", func(b *testing.B) { benchHandler(b, fixedBytes(longest), "/inf/v1/models", token) })
	b.Run("gw-discard", func(b *testing.B) { benchHandlerDiscarding(b, a.plane, "/inf/v1/models", token) })
	b.Run("baseline-discard", func(b *testing.B) { benchHandlerDiscarding(b, fixedBytes(longest), "/inf/v1/models", token) })
}

func BenchmarkDiscoveryGet(b *testing.B) {
	a, _, token, _ := benchPlane(b)
	const path = "/inf/v1/models/openai/gpt-4o-mini"
	one := serve(a, http.MethodGet, path, token)
	if one.Code != http.StatusOK {
		b.Fatalf("benchmark model not visible: %d", one.Code)
	}
	b.Run("gw", func(b *testing.B) { benchHandler(b, a.plane, path, token) })
	b.Run("baseline", func(b *testing.B) { benchHandler(b, fixedBytes(one.Body.Bytes()), path, token) })
	b.Run("gw-discard", func(b *testing.B) { benchHandlerDiscarding(b, a.plane, path, token) })
	b.Run("baseline-discard", func(b *testing.B) { benchHandlerDiscarding(b, fixedBytes(one.Body.Bytes()), path, token) })
}

// BenchmarkAdmit measures admitting a new version of the benchmark
// organization: verification (hash, signature, strict parse, checks) and
// the index build; "verify" is the first part alone.
func BenchmarkAdmit(b *testing.B) {
	a := newAdmitEnv(b)
	syn := synthetic(b, 1, bundletest.Benchmark)
	first := a.sign(b, syn.Body)
	b.Logf("bundle body: %d bytes", len(first.Body))
	b.Run("verify", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := bundle.Verify(first, a.pub); err != nil {
				b.Fatal(err)
			}
		}
	})
	body := *syn.Body
	b.Run("admit", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			body.Version++
			s := a.sign(b, &body)
			b.StartTimer()
			if err := a.plane.Admit(s); err != nil {
				b.Fatal(err)
			}
		}
	})
}
