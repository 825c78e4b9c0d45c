package client

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// IngestUsageLines sends the lines joined into one JSON body with its
// length declared (the control plane reads a body into a buffer of that
// length), as JSON, with the key; the answer is decoded.
func TestIngestUsageLinesBody(t *testing.T) {
	var got struct {
		body, ctype, auth string
		length            int64
		chunked           bool
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		got.body, got.length, got.chunked = string(raw), r.ContentLength, len(r.TransferEncoding) > 0
		got.ctype, got.auth = r.Header.Get("Content-Type"), r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"data":{"accepted":2,"duplicates":1}}`)
	}))
	defer srv.Close()
	c, err := New(Options{Server: srv.URL, Token: "sk-gw-dp"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.IngestUsageLines(context.Background(), []json.RawMessage{json.RawMessage(`{"id":"a"}`), json.RawMessage(`{"id":"b","x":[1,2]}`)})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"events":[{"id":"a"},{"id":"b","x":[1,2]}]}`
	if got.body != want || got.length != int64(len(want)) || got.chunked || got.ctype != "application/json" || got.auth != "Bearer sk-gw-dp" {
		t.Fatalf("sent %+v, want the body %s with its length", got, want)
	}
	if res.Accepted != 2 || res.Duplicates != 1 {
		t.Fatalf("answer %+v", res)
	}
}
