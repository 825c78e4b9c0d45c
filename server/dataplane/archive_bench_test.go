package dataplane_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/gw-gateway/gw/server/archive"
	"github.com/gw-gateway/gw/server/archive/archivetest"
	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/egress"
	"github.com/gw-gateway/gw/server/secrets"
)

// BenchmarkArchiveOverhead measures what the payload archive (issue 32)
// adds to a chat completion: the same request through two planes in one
// run, "off" (the workspace archives nothing) and "on" (request and
// answer archived to a real versitygw, the writer spooling and uploading
// in the background of the same process, so its CPU counts), and
// "on-store-down" (the store unreachable: uploads back off, payloads are
// spooled). The ratios are per request, wall clock, in process.
//
//	GW_TEST_S3_BIN=… go test -run '^$' -bench ArchiveOverhead -benchmem ./server/dataplane
func BenchmarkArchiveOverhead(b *testing.B) {
	s3 := archivetest.Start(b)
	dest := archive.Destination{Endpoint: s3.Endpoint(), Region: "us-east-1", Bucket: "bench", PathStyle: true,
		AccessKeyID: archivetest.Access, SecretAccessKey: archivetest.Secret}
	if err := archive.NewClient(dest, egress.NewDialer(func() egress.Policy { return egress.Policy{} })).CreateBucket(context.Background()); err != nil {
		b.Fatal(err)
	}
	answer := []byte(`{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello!","refusal":null},"logprobs":null,"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29}}`)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	}))
	b.Cleanup(up.Close)
	upstream := up.URL
	plane := func(on bool, dest archive.Destination) (http.Handler, string) {
		edit := func(body *bundle.Body, kr *secrets.Keyring) {
			if !on {
				return
			}
			w := &body.Workspaces[0]
			sealed, err := kr.Seal([]byte(dest.SecretAccessKey), secrets.ArchiveAAD(w.ID, dest.Endpoint, dest.Bucket, dest.AccessKeyID))
			if err != nil {
				b.Fatal(err)
			}
			w.Archive = &bundle.Archive{Endpoint: dest.Endpoint, Bucket: dest.Bucket, PathStyle: true, AccessKeyID: dest.AccessKeyID,
				SecretSealed: sealed, Include: []string{"request", "response"}}
		}
		token, signed, pub, kr := benchBundleEdit(b, upstream+"/v1", "", nil, edit)
		p := dataplane.NewPlane(pub, dataplane.Options{Keyring: kr, Usage: &countingSink{}, ArchiveDir: filepath.Join(b.TempDir(), "spool")})
		if err := p.Admit(signed); err != nil {
			b.Fatal(err)
		}
		p.MarkReady()
		b.Cleanup(func() { p.CloseArchive(context.Background()) })
		return p, token
	}
	body := []byte(`{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"Hello!"}]}`)
	run := func(b *testing.B, h http.Handler, token string) {
		b.ReportAllocs()
		for b.Loop() {
			req := httptest.NewRequest(http.MethodPost, "/inf/v1/chat/completions", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != http.StatusOK {
				b.Fatalf("status %d: %s", w.Code, w.Body)
			}
		}
	}
	offH, offToken := plane(false, dest)
	onH, onToken := plane(true, dest)
	// The store down: uploads back off, so what remains is the request's
	// own share (the tap, the queue) and the spooling.
	down := dest
	down.Endpoint = "http://127.0.0.1:1"
	downH, downToken := plane(true, down)
	var offNs float64
	b.Run("off", func(b *testing.B) {
		run(b, offH, offToken)
		offNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("on", func(b *testing.B) {
		run(b, onH, onToken)
		ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		b.ReportMetric(ns-offNs, "added-ns/op")
		b.ReportMetric(ns/offNs, "ratio")
	})
	b.Run("on-store-down", func(b *testing.B) {
		run(b, downH, downToken)
		ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		b.ReportMetric(ns-offNs, "added-ns/op")
		b.ReportMetric(ns/offNs, "ratio")
	})
}
