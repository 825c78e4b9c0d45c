package telemetry

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// benchLogger is the logger gw serve builds, over w.
func benchLogger(w io.Writer, json bool) *slog.Logger {
	return slog.New(NewLogHandler(w, json, nil))
}

type discardResponse struct{ h http.Header }

func (d *discardResponse) Header() http.Header         { return d.h }
func (d *discardResponse) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardResponse) WriteHeader(int)             {}

// BenchmarkAccessLog is the middleware around a handler that does
// nothing but hand it an inference record: what the access log line
// costs a request, in either format, into a LogWriter as gw serve has it.
func BenchmarkAccessLog(b *testing.B) {
	in := &Inference{Endpoint: "chat.completions", OrgID: "0193b2c4-5d6e-7f80-9a1b-2c3d4e5f6a7b", WorkspaceID: "0193b2c4-5d6e-7f80-9a1b-2c3d4e5f6a7c",
		KeyID: "0193b2c4-5d6e-7f80-9a1b-2c3d4e5f6a7d", RequestedModel: "openai/gpt-4o-mini", Model: "openai/gpt-4o-mini", Provider: "openai",
		Status: 200, Outcome: "ok", InputTokens: 19, OutputTokens: 10, CostUSD: "0.00000885", Attempts: 1,
		Duration: 1234567 * time.Nanosecond, Upstream: 876543 * time.Nanosecond}
	for _, format := range []string{"text", "json"} {
		b.Run(format, func(b *testing.B) {
			out := NewLogWriter(io.Discard, 0)
			defer out.Close()
			mw := &Middleware{Log: benchLogger(out, format == "json"), APIPrefix: "/api/v1/"}
			h := mw.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { SetInference(r.Context(), in) }))
			r := httptest.NewRequest(http.MethodPost, "/inf/v1/chat/completions", nil)
			r.Header.Set("X-Request-Id", "req_0123456789abcdef01234567")
			w := &discardResponse{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(w, r)
			}
		})
	}
}

// BenchmarkAccessLogLine is the line alone, into io.Discard: "slog" is the
// way every line went before (LogAttrs, which a logger of slog's own
// handler still takes), "preformatted" gw serve's LogHandler.
func BenchmarkAccessLogLine(b *testing.B) {
	l := &accessLine{method: "POST", path: "/inf/v1/chat/completions", status: 200, durationMS: 1, requestID: "req_0123456789abcdef01234567",
		inference: &Inference{Endpoint: "chat.completions", OrgID: "0193b2c4-5d6e-7f80-9a1b-2c3d4e5f6a7b", WorkspaceID: "0193b2c4-5d6e-7f80-9a1b-2c3d4e5f6a7c",
			KeyID: "0193b2c4-5d6e-7f80-9a1b-2c3d4e5f6a7d", RequestedModel: "openai/gpt-4o-mini", Model: "openai/gpt-4o-mini", Provider: "openai",
			Status: 200, Outcome: "ok", InputTokens: 19, OutputTokens: 10, CostUSD: "0.00000885", Attempts: 1,
			Duration: 1234567 * time.Nanosecond, Upstream: 876543 * time.Nanosecond}}
	for _, format := range []string{"text", "json"} {
		json := format == "json"
		var own slog.Handler = slog.NewTextHandler(io.Discard, nil)
		if json {
			own = slog.NewJSONHandler(io.Discard, nil)
		}
		for _, c := range []struct {
			name string
			log  *slog.Logger
		}{{"slog", slog.New(own)}, {"preformatted", slog.New(NewLogHandler(io.Discard, json, nil))}} {
			b.Run(format+"/"+c.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					logAccess(c.log, l)
				}
			})
		}
	}
}
