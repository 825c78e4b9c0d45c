package providers

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestRoundTripIsDo holds roundTrip through the adapters' client to what
// client.Do answers the same requests with: answers (a redirect's too,
// with or without a Location) and errors, word for word.
func TestRoundTripIsDo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/found":
			w.Header().Set("Location", "/elsewhere")
			w.WriteHeader(http.StatusFound)
		case "/temporary":
			w.Header().Set("Location", "http://example.invalid/x")
			w.WriteHeader(http.StatusTemporaryRedirect)
		case "/nowhere":
			w.WriteHeader(http.StatusMovedPermanently)
		case "/hang-up":
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		w.Header().Set("X-Seen", r.Header.Get("X-Sent"))
		_, _ = w.Write(append([]byte("echo:"), body...))
	}))
	defer srv.Close()
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	refused := "http://" + closed.Addr().String() + "/x"
	closed.Close()
	tlsURL := strings.Replace(srv.URL, "http://", "https://", 1) + "/x"

	client := NewHTTPClient()
	for _, u := range []string{srv.URL + "/ok", srv.URL + "/found", srv.URL + "/temporary", srv.URL + "/nowhere",
		srv.URL + "/hang-up", refused, tlsURL} {
		var answers [2]string
		for i, send := range []func(*http.Request) (*http.Response, error){client.Do, func(r *http.Request) (*http.Response, error) {
			return roundTrip(client, r)
		}} {
			req, _ := http.NewRequest(http.MethodPost, u, bytes.NewReader([]byte(`{"a":1}`)))
			req.Header.Set("X-Sent", "yes")
			resp, err := send(req)
			if err != nil {
				answers[i] = "error: " + err.Error()
				continue
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			answers[i] = resp.Status + " " + resp.Header.Get("Location") + " " + resp.Header.Get("X-Seen") + " " + string(body)
		}
		t.Logf("%s: %s", u, answers[0])
		if answers[0] != answers[1] {
			t.Errorf("%s: Do %q, roundTrip %q", u, answers[0], answers[1])
		}
	}
}

// stubTransport answers every request with one response, allocating
// nothing itself.
type stubTransport struct{ resp *http.Response }

func (s stubTransport) RoundTrip(*http.Request) (*http.Response, error) { return s.resp, nil }

// TestRoundTripSkipsTheClient: through the adapters' client the request
// goes to the transport as it is (no copy of its headers for redirects);
// through any other client, by Do.
func TestRoundTripSkipsTheClient(t *testing.T) {
	stub := stubTransport{&http.Response{StatusCode: 200, Body: http.NoBody}}
	guarded := NewHTTPClient()
	guarded.Transport = stub
	req, _ := http.NewRequest(http.MethodPost, "http://upstream.test/v1/chat/completions", http.NoBody)
	req.Header.Set("Authorization", "Bearer k")
	req.Header.Set("Content-Type", "application/json")
	if n := testing.AllocsPerRun(100, func() { _, _ = roundTrip(guarded, req) }); n != 0 {
		t.Errorf("roundTrip through the adapters' client: %v allocations, want 0", n)
	}
	followed := &http.Client{Transport: stub}
	if n := testing.AllocsPerRun(100, func() { _, _ = roundTrip(followed, req) }); n == 0 {
		t.Error("roundTrip through a client that follows redirects did not go through Do")
	}
}

// BenchmarkRoundTrip compares client.Do with roundTrip through the
// adapters' client, against a transport that answers at once.
func BenchmarkRoundTrip(b *testing.B) {
	client := NewHTTPClient()
	client.Transport = stubTransport{&http.Response{StatusCode: 200, Body: http.NoBody}}
	req, _ := http.NewRequest(http.MethodPost, "http://upstream.test/v1/chat/completions", http.NoBody)
	for _, h := range []string{"Authorization", "Content-Type", "Accept", "X-Request-Id"} {
		req.Header.Set(h, "value")
	}
	b.Run("Do", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = client.Do(req)
		}
	})
	b.Run("roundTrip", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = roundTrip(client, req)
		}
	})
}

// TestRoundTripBrokenTransport: a transport that answers nothing, or an
// answer without a body, is read as Do reads it.
func TestRoundTripBrokenTransport(t *testing.T) {
	for _, resp := range []*http.Response{nil, {StatusCode: 200}, {StatusCode: 200, ContentLength: 5}} {
		var answers [2]string
		for i := range answers {
			client := NewHTTPClient()
			client.Transport = stubTransport{resp}
			if resp != nil {
				r := *resp
				client.Transport = stubTransport{&r}
			}
			req, _ := http.NewRequest(http.MethodPost, "http://upstream.test/x", http.NoBody)
			send := client.Do
			if i == 1 {
				send = func(r *http.Request) (*http.Response, error) { return roundTrip(client, r) }
			}
			got, err := send(req)
			if err != nil {
				answers[i] = "error: " + err.Error()
				continue
			}
			body, _ := io.ReadAll(got.Body)
			answers[i] = got.Status + " body " + string(body)
		}
		if answers[0] != answers[1] {
			t.Errorf("%+v: Do %q, roundTrip %q", resp, answers[0], answers[1])
		}
	}
}
