package telemetry

import (
	"context"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// LogHandler is gw serve's log handler: slog's text or JSON handler (every
// log call but the access log's goes through it unchanged), with what the
// access log needs to write its line itself. Middleware.Wrap formats that
// line into a pooled buffer — the same bytes slog's handler would write for
// the same attributes (TestAccessLogLineIsSlogs, FuzzAccessLogLine) — and
// hands it to the same writer in one Write: through slog it was 23
// attributes in a Record, a buffer and a walk of them per request, and a
// runtime.Callers for a source no one asked for (≈ 3 % of gw's CPU,
// docs/performance.md, "sixth round").
//
// Loggers derived with With or WithGroup get slog's own handler (their
// lines have attributes of their own), which writes to the same writer.
type LogHandler struct {
	slog.Handler
	json bool
	// fast: the handler's options leave the line as appendAccessLine
	// writes it (no ReplaceAttr, no AddSource).
	fast bool
	out  io.Writer
}

// NewLogHandler returns the text (or, with json, the JSON) handler of slog
// over w with opts (nil: slog's defaults, what gw serve uses).
func NewLogHandler(w io.Writer, json bool, opts *slog.HandlerOptions) *LogHandler {
	// The access log writes to w beside slog's handler, which serializes
	// its own writes only: a writer that is not safe for concurrent use is
	// shared through a lock (slog's then takes two, uncontended).
	if _, safe := w.(*LogWriter); !safe && w != io.Discard {
		w = &lockedWriter{w: w}
	}
	h := &LogHandler{json: json, out: w, fast: opts == nil || opts.ReplaceAttr == nil && !opts.AddSource}
	if json {
		h.Handler = slog.NewJSONHandler(w, opts)
	} else {
		h.Handler = slog.NewTextHandler(w, opts)
	}
	return h
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// accessLine is what one access log line says.
type accessLine struct {
	method, path, requestID string
	status                  int
	durationMS              int64
	inference               *Inference
}

// attrs appends the line's attributes, in the line's order, to all.
func (l *accessLine) attrs(all []slog.Attr) []slog.Attr {
	all = append(all, slog.String("method", l.method), slog.String("path", l.path), slog.Int("status", l.status),
		slog.Int64("duration_ms", l.durationMS), slog.String("request_id", l.requestID))
	if in := l.inference; in != nil {
		all = appendInferenceAttrs(all, in)
	}
	return all
}

// logAccess writes l at Info, from preformatted bytes when log's handler
// is a LogHandler whose options allow it, and through slog otherwise.
func logAccess(log *slog.Logger, l *accessLine) {
	if h, ok := log.Handler().(*LogHandler); ok && h.fast {
		if !h.Enabled(context.Background(), slog.LevelInfo) {
			return
		}
		bp := linePool.Get().(*[]byte)
		b, ok := appendAccessLine((*bp)[:0], h.json, time.Now(), l)
		if ok {
			// A failed write has nowhere to go but the log, as with slog's.
			_, _ = h.out.Write(b)
		}
		if cap(b) <= maxPooledLine {
			*bp = b
			linePool.Put(bp)
		}
		if ok {
			return
		}
	}
	// One array for the line's attributes, the inference's included.
	var all [5 + inferenceAttrCount]slog.Attr
	log.LogAttrs(context.Background(), slog.LevelInfo, "request", l.attrs(all[:0])...)
}

var linePool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// maxPooledLine keeps a line with a huge path from pinning its buffer.
const maxPooledLine = 16 << 10

// The keys of the line, in its order, as each format writes them with the
// separator before them: written once here, never escaped per line (none
// needs escaping in either format).
const (
	kMethod = iota
	kPath
	kStatus
	kDurationMS
	kRequestID
	kEndpoint
	kOrgID
	kWorkspaceID
	kKeyID
	kModelRequested
	kModel
	kProvider
	kOutcome
	kReason
	kStream
	kInputTokens
	kOutputTokens
	kCacheReadTokens
	kCacheWriteTokens
	kCostUSD
	kAttempts
	kTotalMS
	kUpstreamMS
	nKeys
)

var lineKeys = [nKeys]string{"method", "path", "status", "duration_ms", "request_id", "endpoint", "org_id", "workspace_id", "key_id",
	"model_requested", "model", "provider", "outcome", "reason", "stream", "input_tokens", "output_tokens", "cache_read_tokens",
	"cache_write_tokens", "cost_usd", "attempts", "total_ms", "upstream_ms"}

// textKeys[k] is ` key=`, jsonKeys[k] is `,"key":`.
var textKeys, jsonKeys = func() (t, j [nKeys]string) {
	for k, name := range lineKeys {
		t[k] = " " + name + "="
		j[k] = `,"` + name + `":`
	}
	return t, j
}()

// lineEncoder appends a line's attributes in one format.
type lineEncoder struct {
	b    []byte
	json bool
	keys *[nKeys]string // textKeys or jsonKeys
	ok   bool
}

func (e *lineEncoder) key(k int) { e.b = append(e.b, e.keys[k]...) }

func (e *lineEncoder) str(k int, s string) {
	e.key(k)
	if e.json {
		e.b = append(e.b, '"')
		e.b = appendEscapedJSONString(e.b, s)
		e.b = append(e.b, '"')
	} else if needsQuoting(s) {
		e.b = strconv.AppendQuote(e.b, s)
	} else {
		e.b = append(e.b, s...)
	}
}

func (e *lineEncoder) int(k int, n int64) {
	e.key(k)
	e.b = strconv.AppendInt(e.b, n, 10)
}

func (e *lineEncoder) bool(k int, v bool) {
	e.key(k)
	e.b = strconv.AppendBool(e.b, v)
}

// float writes f as slog does: the text handler with strconv's 'g', the
// JSON handler through encoding/json (ES6 number formatting; NaN and the
// infinities are an error there, which this line leaves to slog).
func (e *lineEncoder) float(k int, f float64) {
	e.key(k)
	if !e.json {
		e.b = strconv.AppendFloat(e.b, f, 'g', -1, 64)
		return
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		e.ok = false
		return
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	e.b = strconv.AppendFloat(e.b, f, format, -1, 64)
	if format == 'e' {
		// e-09 as e-9, as encoding/json writes it.
		if n := len(e.b); n >= 4 && e.b[n-4] == 'e' && e.b[n-3] == '-' && e.b[n-2] == '0' {
			e.b[n-2] = e.b[n-1]
			e.b = e.b[:n-1]
		}
	}
}

// appendAccessLine appends l as slog's text (or JSON) handler with default
// options writes it at Info, message "request", time t, newline included.
// It reports false when it cannot write the line exactly as slog would (a
// time outside years 0–9999, which slog writes with an error); the caller
// then logs through slog.
func appendAccessLine(b []byte, json bool, t time.Time, l *accessLine) ([]byte, bool) {
	if y := t.Year(); y < 0 || y >= 10000 {
		return b, false
	}
	e := lineEncoder{b: b, json: json, keys: &textKeys, ok: true}
	if json {
		e.keys = &jsonKeys
	}
	if json {
		e.b = append(e.b, `{"time":"`...)
		e.b = t.AppendFormat(e.b, time.RFC3339Nano)
		e.b = append(e.b, `","level":"INFO","msg":"request"`...)
	} else {
		e.b = append(e.b, "time="...)
		e.b = appendRFC3339Millis(e.b, t)
		e.b = append(e.b, " level=INFO msg=request"...)
	}
	e.str(kMethod, l.method)
	e.str(kPath, l.path)
	e.int(kStatus, int64(l.status))
	e.int(kDurationMS, l.durationMS)
	e.str(kRequestID, l.requestID)
	if in := l.inference; in != nil {
		e.str(kEndpoint, in.Endpoint)
		e.str(kOrgID, in.OrgID)
		e.str(kWorkspaceID, in.WorkspaceID)
		e.str(kKeyID, in.KeyID)
		e.str(kModelRequested, in.RequestedModel)
		e.str(kModel, in.Model)
		e.str(kProvider, in.Provider)
		e.str(kOutcome, in.Outcome)
		e.str(kReason, in.Reason)
		e.bool(kStream, in.Stream)
		e.int(kInputTokens, in.InputTokens)
		e.int(kOutputTokens, in.OutputTokens)
		e.int(kCacheReadTokens, in.CacheReadTokens)
		e.int(kCacheWriteTokens, in.CacheWriteTokens)
		e.str(kCostUSD, in.CostUSD)
		e.int(kAttempts, int64(in.Attempts))
		e.float(kTotalMS, durationMS(in.Duration))
		e.float(kUpstreamMS, durationMS(in.Upstream))
	}
	if json {
		e.b = append(e.b, '}')
	}
	e.b = append(e.b, '\n')
	return e.b, e.ok
}

// durationMS is d in milliseconds to the microsecond, as the line has it.
func durationMS(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// What follows is slog's own formatting (log/slog, Go 1.26: handler.go,
// text_handler.go, json_handler.go), which it does not export.

// appendRFC3339Millis is the text handler's time: RFC 3339 with exactly
// three digits of milliseconds.
func appendRFC3339Millis(b []byte, t time.Time) []byte {
	// RFC3339Nano trims trailing zeros: a tenth of a millisecond added
	// makes exactly four digits, of which the fourth is dropped.
	const prefixLen = len("2006-01-02T15:04:05.000")
	n := len(b)
	t = t.Truncate(time.Millisecond).Add(time.Millisecond / 10)
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b[:n+prefixLen], b[n+prefixLen+1:]...)
}

// needsQuoting is the text handler's test for a string it writes with
// strconv.Quote: empty, or holding a space (Unicode's), '=', '"', a control
// or non-printing character, or invalid UTF-8. slog's own tests each ASCII
// byte against four conditions; textPlain holds their answer.
func needsQuoting(s string) bool {
	if len(s) == 0 {
		return true
	}
	for i := 0; i < len(s); {
		b := s[i]
		if textPlain[b] {
			i++
			continue
		}
		if b < utf8.RuneSelf {
			return true
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return true
		}
		i += size
	}
	return false
}

// textPlain: the ASCII bytes the text handler writes unquoted (slog's
// needsQuoting: b == '\\' || b != ' ' && b != '=' && safeSet[b]).
var textPlain = func() (plain [256]bool) {
	for b := range utf8.RuneSelf {
		plain[b] = b == '\\' || b != ' ' && b != '=' && safeSet[b]
	}
	return plain
}()

// appendEscapedJSONString is the JSON handler's string escaping: '"', '\\'
// and control characters escaped, invalid UTF-8 as \ufffd, U+2028 and
// U+2029 escaped; '<', '>' and '&' left as they are.
func appendEscapedJSONString(buf []byte, s string) []byte {
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if safeSet[b] {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch b {
			case '\\', '"':
				buf = append(buf, '\\', b)
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			buf = append(buf, s[start:i]...)
			buf = append(buf, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(buf, s[start:]...)
}

// safeSet: the ASCII bytes a JSON string holds unescaped (all but the
// control characters, '"' and '\\'; encoding/json's tables.go).
var safeSet = func() (set [utf8.RuneSelf]bool) {
	for b := ' '; b < utf8.RuneSelf; b++ {
		set[b] = b != '"' && b != '\\'
	}
	return set
}()
