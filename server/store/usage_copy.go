package store

import (
	"encoding/binary"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/wire"
)

// The PostgreSQL loader's COPY source (issue 33): a batch of usage events
// written straight into PostgreSQL's binary COPY format, as bytes, with no
// value boxed into an interface and no column types asked of the server
// first (what pgx's CopyFrom does per call). What is stored is what the
// typed path stores (TestUsageCopyMatchesPgx holds it): uuids as their 16
// bytes, text as bun writes it (invalid UTF-8 as U+FFFD), bigints, times
// as microseconds since 2000-01-01 UTC truncated as pgx truncates them,
// attempts and provenance as the JSON wire/usagejson.go writes.

// copyUsageEventsInSQL copies a binary batch into the session's table.
var copyUsageEventsInSQL = "COPY " + usageEventsIn + " (" + strings.Join(usageEventColumns, ", ") + ") FROM STDIN BINARY"

// pgCopySignature starts every binary COPY stream: the signature, no
// flags, no header extension.
const pgCopySignature = "PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00"

// usageCopyReader is a batch as a binary COPY stream, encoded a few rows
// at a time as pgconn reads it.
type usageCopyReader struct {
	events []UsageEvent
	next   int
	buf    []byte
	off    int
	done   bool
}

var usageCopyBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 96<<10); return &b }}

func newUsageCopyReader(events []UsageEvent) *usageCopyReader {
	b := usageCopyBuffers.Get().(*[]byte)
	return &usageCopyReader{events: events, buf: append((*b)[:0], pgCopySignature...)}
}

// release returns the reader's buffer; the reader is not used after.
func (r *usageCopyReader) release() {
	b := r.buf[:0]
	r.buf = nil
	usageCopyBuffers.Put(&b)
}

// Read implements io.Reader.
func (r *usageCopyReader) Read(p []byte) (int, error) {
	for len(r.buf)-r.off < len(p) && !r.done {
		if r.off > 0 {
			r.buf = r.buf[:copy(r.buf, r.buf[r.off:])]
			r.off = 0
		}
		if r.next == len(r.events) {
			r.buf = binary.BigEndian.AppendUint16(r.buf, 0xffff) // the trailer: -1
			r.done = true
			break
		}
		var err error
		if r.buf, err = appendUsageCopyRow(r.buf, &r.events[r.next]); err != nil {
			return 0, err
		}
		r.next++
	}
	n := copy(p, r.buf[r.off:])
	r.off += n
	if n == 0 && r.done {
		return 0, io.EOF
	}
	return n, nil
}

// appendUsageCopyRow appends e as one tuple, in usageEventColumns' order.
func appendUsageCopyRow(b []byte, e *UsageEvent) ([]byte, error) {
	tags, err := tagsText(e)
	if err != nil {
		return nil, err
	}
	guardrails, err := guardrailsText(e)
	if err != nil {
		return nil, err
	}
	b = binary.BigEndian.AppendUint16(b, uint16(len(usageEventColumns)))
	b = copyUUID(b, &e.ID)
	b = copyUUID(b, &e.OrgID)
	b = copyUUID(b, &e.WorkspaceID)
	b = copyUUID(b, e.InferenceKeyID)
	b = copyUUID(b, e.ManagementKeyID)
	b = copyUUID(b, e.OwnerID)
	b = copyText(b, e.Model)
	b = copyText(b, e.Provider)
	b = copyUUID(b, e.ProviderCredentialID)
	b = copyInt8(b, e.InputTokens)
	b = copyInt8(b, e.OutputTokens)
	b = copyInt8(b, e.CacheReadTokens)
	b = copyInt8(b, e.CacheWriteTokens)
	b = copyInt8(b, e.CostNanoUSD)
	b = copyText(b, e.Status)
	b = copyInt8(b, e.LatencyMS)
	b = copyTime(b, e.OccurredAt)
	b = copyInt8(b, e.Bucket)
	b = copyTime(b, e.ReceivedAt)
	b = copyTextOrNull(b, e.RequestID)
	b = copyTextOrNull(b, e.Endpoint)
	b = copyTextOrNull(b, e.Reason)
	b = copyText(b, e.RequestedModel)
	at := len(b)
	if e.Attempts == nil {
		b = append(b, 0, 0, 0, 2, '[', ']')
	} else {
		b = wire.AppendUsageAttemptsJSON(append(b, 0, 0, 0, 0), e.Attempts)
		binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	}
	b = copyText(b, e.UsageSource)
	b = copyInt8(b, e.ReasoningTokens)
	b = copyInt8(b, e.CacheWrite1hTokens)
	if e.Provenance == nil || e.ProvenanceID != nil {
		b = copyNull(b)
	} else {
		// Valid UTF-8 as written (wire.AppendUsageProvenanceJSON), so as bun writes it.
		at := len(b)
		b = wire.AppendUsageProvenanceJSON(append(b, 0, 0, 0, 0), (*wire.UsageProvenance)(e.Provenance))
		binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	}
	b = copyTextOrNull(b, tags)
	b = copyUUID(b, e.TagSetID)
	b = copyTextOrNull(b, guardrails)
	b = copyInt8(b, e.CacheSavingNanoUSD)
	b = copyTextOrNull(b, e.ServiceTier)
	b = copyTextOrNull(b, e.BatchID)
	b = copyUUID(b, e.ProvenanceID)
	return b, nil
}

func copyNull(b []byte) []byte { return append(b, 0xff, 0xff, 0xff, 0xff) }

func copyUUID(b []byte, id *uuid.UUID) []byte {
	if id == nil {
		return copyNull(b)
	}
	return append(append(b, 0, 0, 0, 16), id[:]...)
}

func copyInt8(b []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(append(b, 0, 0, 0, 8), uint64(v))
}

// pgEpochMicros is 2000-01-01 00:00:00 UTC in microseconds since 1970.
const pgEpochMicros = 946684800 * 1_000_000

// copyTime is t as a timestamptz, truncated to the microsecond as pgx's
// codec truncates it.
func copyTime(b []byte, t time.Time) []byte {
	micros := t.Unix()*1_000_000 + int64(t.Nanosecond())/1000
	return copyInt8(b, micros-pgEpochMicros)
}

// copyText is s as bun writes it: each byte that is not valid UTF-8 as
// U+FFFD.
func copyText(b []byte, s string) []byte {
	at := len(b)
	b = append(b, 0, 0, 0, 0)
	if utf8.ValidString(s) {
		b = append(b, s...)
	} else {
		for _, r := range s {
			b = utf8.AppendRune(b, r)
		}
	}
	binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	return b
}

func copyTextOrNull(b []byte, s *string) []byte {
	if s == nil {
		return copyNull(b)
	}
	return copyText(b, *s)
}
