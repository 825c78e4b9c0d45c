package providers

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"reflect"
	"testing"
)

// TestNewRequestIsNetHTTPs: an upstream request made from a URL parsed
// once (urlCache) is the request http.NewRequestWithContext makes of the
// URL, the first time and every time after, each with a URL of its own;
// a URL that does not parse fails as it does there, and is not kept, nor
// one with a password.
func TestNewRequestIsNetHTTPs(t *testing.T) {
	urls := []string{
		"http://127.0.0.1:8080/v1/chat/completions",
		"https://api.openai.com/v1/chat/completions",
		"https://example.com:/v1/messages",
		"http://[::1]:9000/openai/chat/completions",
		"http://[fe80::1%25en0]/x",
		"https://res.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21",
		"http://user:secret@host.test/v1/x",
		"http://host.test/a%2Fb/c",
		"http://host.test/p?q=1#frag",
		"HTTP://Host.Test/Mixed",
	}
	for _, u := range urls {
		want, err := http.NewRequestWithContext(context.Background(), http.MethodPost, u, http.NoBody)
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		for i := range 3 {
			got, err := newRequest(context.Background(), "", u, nil)
			if err != nil {
				t.Fatalf("%s (%d): %v", u, i, err)
			}
			if got.Method != want.Method || got.Host != want.Host || !reflect.DeepEqual(got.URL, want.URL) ||
				got.Proto != want.Proto || got.Body != want.Body || !reflect.DeepEqual(got.Header, want.Header) {
				t.Fatalf("%s (%d): %s %s %+v, want %s %s %+v", u, i, got.Method, got.Host, *got.URL, want.Method, want.Host, *want.URL)
			}
			if got.URL.String() != want.URL.String() {
				t.Fatalf("%s (%d): writes %s, want %s", u, i, got.URL, want.URL)
			}
			// Each request's URL is its own: changing one changes no other.
			got.URL.Path += "/changed"
		}
	}
	if _, kept := upstreamURLs.m.Load("http://user:secret@host.test/v1/x"); kept {
		t.Fatal("a URL with a password is kept")
	}
	for _, bad := range []string{"http://host.test/%zz", "://nothing", "http://[::1/x"} {
		_, want := http.NewRequest(http.MethodPost, bad, nil)
		for range 2 {
			_, err := newRequest(context.Background(), "", bad, nil)
			var e *Error
			if !errors.As(err, &e) || e.Kind != Unavailable || e.Cause == nil || e.Cause.Error() != want.Error() {
				t.Fatalf("%q: %v, want an unavailable error caused by %v", bad, err, want)
			}
		}
		if _, kept := upstreamURLs.m.Load(bad); kept {
			t.Fatalf("%q: a URL that does not parse is kept", bad)
		}
	}
}

// TestURLCacheIsBounded: past its bound the cache keeps nothing more and
// still parses every URL.
func TestURLCacheIsBounded(t *testing.T) {
	c := urlCache{max: 2}
	for i, u := range []string{"http://a.test/", "http://b.test/", "http://c.test/", "http://a.test/"} {
		p, err := c.parse(u)
		if err != nil || p.url.String() != u {
			t.Fatalf("%d %s: %v %v", i, u, p, err)
		}
	}
	if _, kept := c.m.Load("http://c.test/"); kept || c.n.Load() != 2 {
		t.Fatalf("kept %d URLs, the third among them %v; want the first two", c.n.Load(), kept)
	}
}

func BenchmarkNewRequest(b *testing.B) {
	const u = "http://127.0.0.1:8080/v1/chat/completions"
	body := rope{[]byte(`{"model":"gpt-4o-mini"}`)}
	b.Run("net/http", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = http.NewRequestWithContext(context.Background(), http.MethodPost, u, bytes.NewReader(body[0]))
		}
	})
	b.Run("newRequest", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = newRequest(context.Background(), "", u, body)
		}
	})
}
