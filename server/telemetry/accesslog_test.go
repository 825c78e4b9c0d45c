package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// slogLine is the line slog's own handler (default options) writes for l
// at time at: what appendAccessLine must write byte for byte.
func slogLine(t testing.TB, asJSON bool, at time.Time, l *accessLine) []byte {
	t.Helper()
	var buf bytes.Buffer
	var h slog.Handler = slog.NewTextHandler(&buf, nil)
	if asJSON {
		h = slog.NewJSONHandler(&buf, nil)
	}
	r := slog.NewRecord(at, slog.LevelInfo, "request", 0)
	r.AddAttrs(l.attrs(nil)...)
	if err := h.Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// checkLine requires appendAccessLine to write l as slog does, in both
// formats, after a prefix it must keep.
func checkLine(t testing.TB, at time.Time, l *accessLine) {
	t.Helper()
	for _, asJSON := range []bool{false, true} {
		want := slogLine(t, asJSON, at, l)
		got, ok := appendAccessLine([]byte("prefix"), asJSON, at, l)
		if !ok {
			t.Fatalf("json %v: line at %v not written", asJSON, at)
		}
		if !bytes.HasPrefix(got, []byte("prefix")) || !bytes.Equal(got[len("prefix"):], want) {
			t.Fatalf("json %v:\n got %q\nwant %q", asJSON, got, "prefix"+string(want))
		}
	}
}

var hostileStrings = []string{
	"", " ", "plain", "a b", "a=b", `say "hi"`, `back\slash`, `\`, "line\nbreak", "cr\rlf", "tab\there",
	"\x00\x01\x1f", "del\x7f", "\xff\xfe", "bad \xc3\x28 utf8", "trunc\xe2\x82", "ünïcødé", "日本語", "🙂",
	"nbsp\u00a0", "zwsp\u200b", "ls\u2028ps\u2029", "bom\ufeff", "\ufffd", "<script>&amp;</script>", "{\"json\":1}",
	"/inf/v1/chat/completions", "req_0123456789abcdef01234567", "-", "true", "1.5", "a.b:c_d-e",
}

func hostileInference(s string, n int64, d time.Duration) *Inference {
	return &Inference{Endpoint: s, OrgID: s + "o", WorkspaceID: "w" + s, KeyID: s, RequestedModel: s, Model: s, Provider: s,
		Outcome: s, Reason: s, Stream: n%2 == 0, InputTokens: n, OutputTokens: -n, CacheReadTokens: n / 3, CacheWriteTokens: n * 7,
		CostUSD: s, Attempts: int(n), Duration: d, Upstream: -d}
}

func TestAccessLogLineIsSlogs(t *testing.T) {
	times := []time.Time{
		time.Date(2026, 11, 29, 9, 30, 0, 0, time.UTC),
		time.Date(2026, 11, 29, 9, 30, 0, 123456789, time.UTC),
		time.Date(2026, 11, 29, 9, 30, 59, 999999999, time.FixedZone("", 5*3600+1800)),
		time.Date(2026, 1, 1, 0, 0, 0, 100000, time.FixedZone("", -8*3600)),
		time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Now(),
	}
	numbers := []int64{0, 1, -1, 200, 599, math.MaxInt64, math.MinInt64, math.MaxInt32 + 1}
	durations := []time.Duration{0, time.Microsecond, 999 * time.Nanosecond, 1234567 * time.Nanosecond, -1500 * time.Microsecond,
		time.Second, 90 * time.Minute, math.MaxInt64, math.MinInt64, 1e15, 1e18 + 1, 7}
	for _, at := range times {
		for _, s := range hostileStrings {
			checkLine(t, at, &accessLine{method: s, path: s, status: 200, durationMS: 3, requestID: s})
			checkLine(t, at, &accessLine{method: "POST", path: "/inf/v1/" + s, status: 200, durationMS: 3, requestID: "r" + s,
				inference: hostileInference(s, 10, time.Millisecond)})
		}
	}
	for _, n := range numbers {
		for _, d := range durations {
			checkLine(t, times[1], &accessLine{method: "GET", path: "/x", status: int(n), durationMS: n, requestID: "id",
				inference: hostileInference("x", n, d)})
		}
	}
}

// The years slog writes with an error (JSON) or a mangled time (text) are
// left to slog.
func TestAccessLogLineOutOfRangeYear(t *testing.T) {
	for _, at := range []time.Time{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)} {
		for _, asJSON := range []bool{false, true} {
			if _, ok := appendAccessLine(nil, asJSON, at, &accessLine{method: "GET"}); ok {
				t.Errorf("json %v: line at %v written", asJSON, at)
			}
		}
	}
}

func FuzzAccessLogLine(f *testing.F) {
	for i, s := range hostileStrings {
		f.Add(s, s, "r"+s, s, int64(i)*1e9, int64(200+i), int64(i)*1_234_567, int64(-i)*7e5, 3600*i, i%2 == 0)
	}
	f.Add("GET", "/x", "id", "", int64(math.MaxInt64), int64(math.MinInt64), int64(math.MaxInt64), int64(math.MinInt64), -50400, true)
	f.Fuzz(func(t *testing.T, method, path, id, other string, unixNano, n, total, upstream int64, offset int, inference bool) {
		at := time.Unix(0, unixNano).In(time.FixedZone("", offset%(26*3600)))
		l := &accessLine{method: method, path: path, status: int(n), durationMS: n, requestID: id}
		if inference {
			in := hostileInference(other, n, time.Duration(total))
			in.Upstream = time.Duration(upstream)
			in.Model, in.Reason = method+other, other+path
			l.inference = in
		}
		checkLine(t, at, l)
	})
}

func TestAccessLogAllocations(t *testing.T) {
	l := &accessLine{method: "POST", path: "/inf/v1/chat/completions", status: 200, durationMS: 12, requestID: "req_0123456789abcdef01234567",
		inference: hostileInference("openai/gpt-4o-mini", 19, 1234567*time.Nanosecond)}
	for _, asJSON := range []bool{false, true} {
		log := slog.New(NewLogHandler(io.Discard, asJSON, nil))
		logAccess(log, l) // the pool's first buffer
		if n := testing.AllocsPerRun(200, func() { logAccess(log, l) }); n != 0 {
			t.Errorf("json %v: %v allocations a line, want 0", asJSON, n)
		}
	}
}

// Where the line cannot be written from preformatted bytes, slog writes
// it; where the level is above Info, no one does.
func TestAccessLogFallsBackToSlog(t *testing.T) {
	l := &accessLine{method: "GET", path: "/a b", status: 404, durationMS: 1, requestID: "id", inference: hostileInference("m", 1, time.Millisecond)}
	upper := func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		if a.Value.Kind() == slog.KindString {
			a.Value = slog.StringValue(strings.ToUpper(a.Value.String()))
		}
		return a
	}
	for _, asJSON := range []bool{false, true} {
		for _, c := range []struct {
			name string
			opts *slog.HandlerOptions
			want string // a part of the line, "" for none
		}{
			{"ReplaceAttr", &slog.HandlerOptions{ReplaceAttr: upper}, "INFO"},
			{"AddSource", &slog.HandlerOptions{AddSource: true}, "source"},
			{"level warn", &slog.HandlerOptions{Level: slog.LevelWarn}, ""},
			{"level debug", &slog.HandlerOptions{Level: slog.LevelDebug}, "request_id"},
		} {
			var buf bytes.Buffer
			logAccess(slog.New(NewLogHandler(&buf, asJSON, c.opts)), l)
			if c.want == "" {
				if buf.Len() != 0 {
					t.Errorf("json %v, %s: wrote %q", asJSON, c.name, buf.String())
				}
				continue
			}
			if !strings.Contains(buf.String(), c.want) {
				t.Errorf("json %v, %s: %q lacks %q", asJSON, c.name, buf.String(), c.want)
			}
			if c.opts.ReplaceAttr != nil && (strings.Contains(buf.String(), "time") || !strings.Contains(buf.String(), "/A B")) {
				t.Errorf("json %v, %s: ReplaceAttr not applied: %q", asJSON, c.name, buf.String())
			}
		}
		// A logger of slog's own handler, or one derived with attributes
		// of its own, writes through slog.
		var buf bytes.Buffer
		logAccess(slog.New(NewLogHandler(&buf, asJSON, nil)).With("plane", "data"), l)
		if !strings.Contains(buf.String(), "plane") || !strings.Contains(buf.String(), "request_id") {
			t.Errorf("json %v: derived logger wrote %q", asJSON, buf.String())
		}
	}
}

// The middleware's line, in either format, is slog's for the same fields
// at the time the line carries.
func TestMiddlewareAccessLogLine(t *testing.T) {
	in := hostileInference("openai/gpt-4o-mini", 19, 1234567*time.Nanosecond)
	for _, asJSON := range []bool{false, true} {
		var buf bytes.Buffer
		mw := &Middleware{Log: slog.New(NewLogHandler(&buf, asJSON, nil))}
		h := mw.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			SetInference(r.Context(), in)
			w.WriteHeader(http.StatusTeapot)
		}))
		r := httptest.NewRequest(http.MethodPost, "/inf/v1/chat/completions?q=1", nil)
		r.Header.Set("X-Request-Id", "caller-id")
		h.ServeHTTP(httptest.NewRecorder(), r)
		line := buf.String()
		var at time.Time
		var err error
		if asJSON {
			var m struct{ Time time.Time }
			err = json.Unmarshal([]byte(line), &m)
			at = m.Time
		} else {
			ts, _, _ := strings.Cut(strings.TrimPrefix(line, "time="), " ")
			at, err = time.Parse(time.RFC3339Nano, ts)
		}
		if err != nil {
			t.Fatalf("json %v: %v in %q", asJSON, err, line)
		}
		// duration_ms is 0 or more: read it from the line too.
		_, rest, _ := strings.Cut(line, "duration_ms")
		var ms int64
		for _, c := range strings.TrimLeft(rest, `=":`) {
			if c < '0' || c > '9' {
				break
			}
			ms = ms*10 + int64(c-'0')
		}
		want := slogLine(t, asJSON, at, &accessLine{method: "POST", path: "/inf/v1/chat/completions", status: http.StatusTeapot,
			durationMS: ms, requestID: "caller-id", inference: in})
		if line != string(want) {
			t.Errorf("json %v:\n got %q\nwant %q", asJSON, line, want)
		}
	}
}

// The access log's lines and slog's share a writer that is not safe for
// concurrent use (LogHandler's lock): every line arrives whole (and -race
// sees no unsynchronized write).
func TestLogHandlerSharesItsWriter(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		var buf bytes.Buffer
		log := slog.New(NewLogHandler(&buf, asJSON, nil))
		l := &accessLine{method: "GET", path: "/x", status: 200, requestID: "id", inference: hostileInference("m", 1, time.Millisecond)}
		const goroutines, lines = 4, 50
		done := make(chan struct{})
		for range goroutines {
			go func() {
				defer func() { done <- struct{}{} }()
				for range lines {
					logAccess(log, l)
					log.Info("other", "k", "v")
				}
			}()
		}
		for range goroutines {
			<-done
		}
		got := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
		if len(got) != 2*goroutines*lines {
			t.Fatalf("json %v: %d lines, want %d", asJSON, len(got), 2*goroutines*lines)
		}
		for _, line := range got {
			if asJSON && !json.Valid([]byte(line)) || !asJSON && !strings.HasPrefix(line, "time=") {
				t.Fatalf("json %v: torn line %q", asJSON, line)
			}
		}
	}
}
