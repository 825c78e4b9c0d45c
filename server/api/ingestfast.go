package api

import (
	"bytes"
	"encoding/json"
	"math"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/tags"
	"github.com/gw-gateway/gw/server/usage"
	"github.com/gw-gateway/gw/wire"
)

// decodeUsageIngest decodes a batch of usage events in one pass, straight
// into typed values, for the batches gw's data planes send (json.Marshal
// of wire.UsageIngest). The generic reading (readUsageIngest) parsed the
// whole body into maps, walked them and re-encoded each provenance to
// decode it again: 62 % of the control plane's CPU under a data plane's
// load.
//
// It answers ok only for a body that readUsageIngest accepts with the same
// events, and gives up (ok false) on anything it cannot be sure of: a
// member it does not know or has already read, a null where the generic
// reading wants a value, a number other than a plain integer, a string
// with invalid UTF-8, U+0000, a lone surrogate or a control character
// where the generic reading refuses one, any event usage.Check refuses.
// The caller then reads the body the generic way, which words every
// problem; so no answer but a success ever comes from here.
// FuzzUsageIngestFastPath holds the two to that.
func decodeUsageIngest(data []byte) ([]wire.UsageEventIn, bool) {
	d := ingestDecoder{data: data}
	events := d.batch()
	if d.fail {
		return nil, false
	}
	for i := range events {
		if usage.Check(events[i]) != nil {
			return nil, false
		}
	}
	return events, true
}

// ingestDecoder is a strict JSON scanner over one batch. fail is sticky:
// once set, the position is at the end, every read fails, and every loop
// ends.
type ingestDecoder struct {
	data []byte
	pos  int
	fail bool
	// buf holds the last string read that had escapes; a string read
	// is used (or copied) before the next is read.
	buf []byte
	// texts shares the strings a batch repeats in every event (models,
	// providers, statuses, policy names): one allocation each per batch.
	texts map[string]string
	// lastProvenance is the last provenance read, as written and as read:
	// a batch's events repeat it (one key's calls to one model on one
	// bundle), and a value written the same way is read the same way.
	lastProvenance struct {
		raw   []byte
		value *wire.UsageProvenance
	}
}

const (
	// maxSharedTexts bounds texts against a batch of distinct strings.
	maxSharedTexts = 4096
	// maxToolArgumentsDepth bounds the nesting of tool arguments the
	// scanner follows; deeper ones take the generic reading.
	maxToolArgumentsDepth = 64
)

func (d *ingestDecoder) bail() {
	d.fail = true
	d.pos = len(d.data)
}

// peek skips JSON whitespace and returns the next byte, 0 at the end.
func (d *ingestDecoder) peek() byte {
	for d.pos < len(d.data) {
		switch c := d.data[d.pos]; c {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return c
		}
	}
	return 0
}

func (d *ingestDecoder) expect(c byte) {
	if d.peek() != c {
		d.bail()
		return
	}
	d.pos++
}

// literal consumes word (true, false, null) or fails.
func (d *ingestDecoder) literal(word string) {
	if !bytes.HasPrefix(d.data[d.pos:], []byte(word)) {
		d.bail()
		return
	}
	d.pos += len(word)
}

// null consumes a null and says whether there was one.
func (d *ingestDecoder) null() bool {
	if d.peek() != 'n' {
		return false
	}
	d.literal("null")
	return !d.fail
}

func (d *ingestDecoder) bool() bool {
	switch d.peek() {
	case 't':
		d.literal("true")
		return !d.fail
	case 'f':
		d.literal("false")
	default:
		d.bail()
	}
	return false
}

// openObject consumes an object's '{' and says whether members follow.
func (d *ingestDecoder) openObject() bool {
	d.expect('{')
	if d.peek() == '}' {
		d.pos++
		return false
	}
	return !d.fail
}

// openArray consumes an array's '[' and says whether items follow.
func (d *ingestDecoder) openArray() bool {
	d.expect('[')
	if d.peek() == ']' {
		d.pos++
		return false
	}
	return !d.fail
}

// more consumes what follows a member or an item: a comma (true: another
// follows) or the closing end (false).
func (d *ingestDecoder) more(end byte) bool {
	switch d.peek() {
	case ',':
		d.pos++
		return true
	case end:
		d.pos++
		return false
	}
	d.bail()
	return false
}

// key reads a member's name and its colon.
func (d *ingestDecoder) key() []byte {
	k := d.str()
	d.expect(':')
	return k
}

// once marks member bit as read, failing on a member read twice (the
// generic reading keeps the last of them).
func (d *ingestDecoder) once(seen *uint64, bit uint) {
	if *seen&(1<<bit) != 0 {
		d.bail()
	}
	*seen |= 1 << bit
}

// present is once for a member whose value may be null: it reports
// whether the value is not null (a null is read).
func (d *ingestDecoder) present(seen *uint64, bit uint) bool {
	d.once(seen, bit)
	return !d.null()
}

// str reads a string: a view of the body when it has no escapes, else of
// buf. It fails on what the generic reading would not keep as it is:
// invalid UTF-8 (replaced there), an escaped U+0000 (refused there), a
// lone surrogate (replaced there); and on what is not JSON.
func (d *ingestDecoder) str() []byte {
	if d.peek() != '"' {
		d.bail()
		return nil
	}
	d.pos++
	start, ascii := d.pos, true
	for d.pos < len(d.data) {
		switch c := d.data[d.pos]; {
		case c == '"':
			s := d.data[start:d.pos]
			d.pos++
			if !ascii && !utf8.Valid(s) {
				d.bail()
				return nil
			}
			return s
		case c == '\\':
			return d.escaped(start)
		case c < 0x20:
			d.bail()
			return nil
		case c >= utf8.RuneSelf:
			ascii = false
		}
		d.pos++
	}
	d.bail()
	return nil
}

// escaped reads the rest of a string that has an escape at pos into buf.
func (d *ingestDecoder) escaped(start int) []byte {
	d.buf = append(d.buf[:0], d.data[start:d.pos]...)
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			d.pos++
			if !utf8.Valid(d.buf) {
				d.bail()
				return nil
			}
			return d.buf
		case c < 0x20:
			d.bail()
			return nil
		case c != '\\':
			d.buf = append(d.buf, c)
			d.pos++
			continue
		}
		if d.pos+1 >= len(d.data) {
			break
		}
		e := d.data[d.pos+1]
		d.pos += 2
		switch e {
		case '"', '\\', '/':
			d.buf = append(d.buf, e)
		case 'b':
			d.buf = append(d.buf, '\b')
		case 'f':
			d.buf = append(d.buf, '\f')
		case 'n':
			d.buf = append(d.buf, '\n')
		case 'r':
			d.buf = append(d.buf, '\r')
		case 't':
			d.buf = append(d.buf, '\t')
		case 'u':
			r := d.hex4()
			if utf16IsHigh(r) && bytes.HasPrefix(d.data[d.pos:], []byte(`\u`)) {
				d.pos += 2
				if lo := d.hex4(); lo >= 0xDC00 && lo <= 0xDFFF {
					r = utf16.DecodeRune(r, lo)
				} else {
					r = -1
				}
			}
			if r <= 0 || (r >= 0xD800 && r <= 0xDFFF) {
				d.bail()
				return nil
			}
			d.buf = utf8.AppendRune(d.buf, r)
		default:
			d.bail()
			return nil
		}
	}
	d.bail()
	return nil
}

func utf16IsHigh(r rune) bool { return r >= 0xD800 && r <= 0xDBFF }

// hex4 reads the four hex digits of a \u escape; -1 when they are not.
func (d *ingestDecoder) hex4() rune {
	if d.pos+4 > len(d.data) {
		return -1
	}
	var r rune
	for _, c := range d.data[d.pos : d.pos+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	d.pos += 4
	return r
}

// text reads a string that batches repeat, shared within the batch.
func (d *ingestDecoder) text() string {
	b := d.str()
	if s, ok := d.texts[string(b)]; ok {
		return s
	}
	s := string(b)
	if d.texts == nil {
		d.texts = make(map[string]string, 64)
	}
	if len(d.texts) < maxSharedTexts {
		d.texts[s] = s
	}
	return s
}

// optText reads a string or null (nil).
func (d *ingestDecoder) optText() *string {
	if d.null() {
		return nil
	}
	s := d.text()
	return &s
}

// int reads a JSON integer within int64: what validate.Int and
// encoding/json both read the same way. A fraction or an exponent (1.0,
// 1e3: whole for validate.Int, refused by encoding/json) and anything
// past int64 fail.
func (d *ingestDecoder) int() int64 {
	neg := d.peek() == '-'
	if neg {
		d.pos++
	}
	start := d.pos
	var n uint64
	for d.pos < len(d.data) && d.data[d.pos] >= '0' && d.data[d.pos] <= '9' {
		n = n*10 + uint64(d.data[d.pos]-'0')
		d.pos++
	}
	digits := d.pos - start
	if digits == 0 || digits > 19 || (digits > 1 && d.data[start] == '0') {
		d.bail()
		return 0
	}
	if d.pos < len(d.data) {
		switch d.data[d.pos] {
		case '.', 'e', 'E':
			d.bail()
			return 0
		}
	}
	switch {
	case neg && n <= 1<<63:
		return -int64(n) // -(1<<63) wraps to itself, math.MinInt64
	case !neg && n <= math.MaxInt64:
		return int64(n)
	}
	d.bail()
	return 0
}

// uuid reads a UUID as validate.UUID does: a string of its canonical 36
// characters.
func (d *ingestDecoder) uuid() uuid.UUID {
	b := d.str()
	if len(b) != 36 {
		d.bail()
		return uuid.Nil
	}
	return d.uuidOf(b)
}

// uuidOf parses b as uuid.UUID's UnmarshalText does (encoding/json's
// reading of a provenance's ids).
func (d *ingestDecoder) uuidOf(b []byte) uuid.UUID {
	id, err := uuid.ParseBytes(b)
	if err != nil {
		d.bail()
	}
	return id
}

func (d *ingestDecoder) optUUID() *uuid.UUID {
	if d.null() {
		return nil
	}
	id := d.uuid()
	return &id
}

// batch reads {"events": [...]}, the body's only member, and nothing after.
func (d *ingestDecoder) batch() []wire.UsageEventIn {
	if !d.openObject() || string(d.key()) != "events" || !d.openArray() {
		d.bail()
		return nil
	}
	// A shipped event is 400 bytes or more: room for all without growing.
	events := make([]wire.UsageEventIn, 0, min(usage.MaxIngestBatch, len(d.data)/256+1))
	for {
		if len(events) == usage.MaxIngestBatch {
			d.bail()
			return nil
		}
		events = append(events, wire.UsageEventIn{})
		d.event(&events[len(events)-1])
		if !d.more(']') {
			break
		}
	}
	if d.more('}') || d.peek() != 0 || d.pos != len(d.data) {
		d.bail()
	}
	return events
}

// The members of an event, as bits of the set read.
const (
	evID = iota
	evOrgID
	evWorkspaceID
	evInferenceKeyID
	evManagementKeyID
	evOwnerID
	evModel
	evProvider
	evProviderCredentialID
	evInputTokens
	evOutputTokens
	evCacheReadTokens
	evCacheWriteTokens
	evCostUSD
	evStatus
	evLatencyMS
	evOccurredAt
	evRequestID
	evEndpoint
	evReason
	evRequestedModel
	evAttempts
	evUsageSource
	evReasoningTokens
	evCacheWrite1hTokens
	evProvenance
	evServiceTier
	evBatchID
	evTags
	evGuardrails
	evToolArguments
	evToolArgumentsBytes
	evCacheSavingUSD
)

// evRequired are the members readUsageEvent requires; the others may be
// absent or null.
const evRequired = 1<<evID | 1<<evOrgID | 1<<evWorkspaceID | 1<<evModel | 1<<evProvider |
	1<<evInputTokens | 1<<evOutputTokens | 1<<evCacheReadTokens | 1<<evCacheWriteTokens |
	1<<evCostUSD | 1<<evStatus | 1<<evLatencyMS | 1<<evOccurredAt

// event reads one event's members as readUsageEvent reads them.
func (d *ingestDecoder) event(e *wire.UsageEventIn) {
	var seen uint64
	if !d.openObject() {
		d.bail()
		return
	}
	for {
		switch k := d.key(); string(k) {
		case "id":
			d.once(&seen, evID)
			e.ID = d.uuid()
		case "org_id":
			d.once(&seen, evOrgID)
			e.OrgID = d.uuid()
		case "workspace_id":
			d.once(&seen, evWorkspaceID)
			e.WorkspaceID = d.uuid()
		case "inference_key_id":
			d.once(&seen, evInferenceKeyID)
			e.InferenceKeyID = d.optUUID()
		case "management_key_id":
			d.once(&seen, evManagementKeyID)
			e.ManagementKeyID = d.optUUID()
		case "owner_id":
			d.once(&seen, evOwnerID)
			e.OwnerID = d.optUUID()
		case "model":
			d.once(&seen, evModel)
			e.Model = d.text()
		case "provider":
			d.once(&seen, evProvider)
			e.Provider = d.text()
		case "provider_credential_id":
			d.once(&seen, evProviderCredentialID)
			e.ProviderCredentialID = d.optUUID()
		case "input_tokens":
			d.once(&seen, evInputTokens)
			e.InputTokens = d.int()
		case "output_tokens":
			d.once(&seen, evOutputTokens)
			e.OutputTokens = d.int()
		case "cache_read_tokens":
			d.once(&seen, evCacheReadTokens)
			e.CacheReadTokens = d.int()
		case "cache_write_tokens":
			d.once(&seen, evCacheWriteTokens)
			e.CacheWriteTokens = d.int()
		case "cost_usd":
			d.once(&seen, evCostUSD)
			e.CostUSD = d.text()
		case "status":
			d.once(&seen, evStatus)
			e.Status = d.text()
		case "latency_ms":
			d.once(&seen, evLatencyMS)
			e.LatencyMS = d.int()
		case "occurred_at":
			d.once(&seen, evOccurredAt)
			d.occurredAt(e)
		default:
			d.eventMore(e, k, &seen)
		}
		if !d.more('}') {
			break
		}
	}
	if seen&evRequired != evRequired {
		d.bail()
	}
}

// occurredAt reads the time as validate.DateTime does.
func (d *ingestDecoder) occurredAt(e *wire.UsageEventIn) {
	t, err := time.Parse(time.RFC3339Nano, string(d.str()))
	if err != nil {
		d.bail()
		return
	}
	e.OccurredAt = t.UTC()
}

// eventMore reads the optional members newer data planes send.
func (d *ingestDecoder) eventMore(e *wire.UsageEventIn, k []byte, seen *uint64) {
	switch string(k) {
	case "request_id":
		if d.present(seen, evRequestID) {
			s := string(d.str())
			e.RequestID = &s
		}
	case "endpoint":
		d.once(seen, evEndpoint)
		e.Endpoint = d.optText()
	case "reason":
		d.once(seen, evReason)
		e.Reason = d.optText()
	case "requested_model":
		if d.present(seen, evRequestedModel) {
			e.RequestedModel = d.text()
		}
	case "attempts":
		if d.present(seen, evAttempts) {
			e.Attempts = d.attempts()
		}
	case "usage_source":
		if d.present(seen, evUsageSource) {
			e.UsageSource = d.text()
		}
	case "reasoning_tokens":
		if d.present(seen, evReasoningTokens) {
			e.ReasoningTokens = d.int()
		}
	case "cache_write_1h_tokens":
		if d.present(seen, evCacheWrite1hTokens) {
			e.CacheWrite1hTokens = d.int()
		}
	case "provenance":
		if d.present(seen, evProvenance) {
			e.Provenance = d.provenance()
		}
	case "service_tier":
		d.once(seen, evServiceTier)
		e.ServiceTier = d.optText()
	case "batch_id":
		d.once(seen, evBatchID)
		e.BatchID = d.optText()
	case "tags":
		if d.present(seen, evTags) {
			e.Tags = d.tags()
		}
	case "guardrails":
		if d.present(seen, evGuardrails) {
			e.Guardrails = d.guardrails()
		}
	case "tool_arguments":
		if d.present(seen, evToolArguments) {
			e.ToolArguments = d.toolArguments()
		}
	case "tool_arguments_bytes":
		if d.present(seen, evToolArgumentsBytes) {
			e.ToolArgumentsBytes = d.int()
		}
	case "cache_saving_usd":
		d.once(seen, evCacheSavingUSD)
		e.CacheSavingUSD = d.optText()
	default:
		d.bail()
	}
}

// attempts reads an attempt chain as readUsageAttempt reads each: every
// member required, failure null or a string.
func (d *ingestDecoder) attempts() []wire.UsageAttempt {
	out := []wire.UsageAttempt{}
	if !d.openArray() {
		return out
	}
	for {
		if len(out) == usage.MaxAttempts {
			d.bail()
			return nil
		}
		var a wire.UsageAttempt
		var seen uint64
		if !d.openObject() {
			d.bail()
			return nil
		}
		for {
			switch string(d.key()) {
			case "model":
				d.once(&seen, 0)
				a.Model = d.text()
			case "provider":
				d.once(&seen, 1)
				a.Provider = d.text()
			case "failure":
				d.once(&seen, 2)
				a.Failure = d.optText()
			case "latency_ms":
				d.once(&seen, 3)
				a.LatencyMS = d.int()
			default:
				d.bail()
			}
			if !d.more('}') {
				break
			}
		}
		if seen != 0b1111 {
			d.bail()
			return nil
		}
		out = append(out, a)
		if !d.more(']') {
			return out
		}
	}
}

// tags reads an event's tags as readTagsAt does. The keys and values it
// would refuse, usage.Check's tags.Check refuses too (the same CheckKey
// and CheckValue), so decodeUsageIngest gives up on them there.
func (d *ingestDecoder) tags() map[string]string {
	out := map[string]string{}
	if !d.openObject() {
		return out
	}
	for {
		k := d.text()
		d.expect(':')
		v := d.text()
		if _, dup := out[k]; dup || len(out) == tags.MaxPairs {
			d.bail()
			return nil
		}
		out[k] = v
		if !d.more('}') {
			return out
		}
	}
}

// guardrails reads an event's guardrail records as readGuardrailRecords
// does: names without control characters, at most 200 characters;
// detectors 1 to 64, at most 16 of them, [] when absent or null.
func (d *ingestDecoder) guardrails() []wire.GuardrailRecord {
	out := []wire.GuardrailRecord{}
	if !d.openArray() {
		return out
	}
	for {
		if len(out) == usage.MaxGuardrailRecords {
			d.bail()
			return nil
		}
		rec := wire.GuardrailRecord{Detectors: []string{}}
		var seen uint64
		if !d.openObject() {
			d.bail()
			return nil
		}
		for {
			switch string(d.key()) {
			case "id":
				d.once(&seen, 0)
				rec.ID = d.label(0, 200)
			case "name":
				d.once(&seen, 1)
				rec.Name = d.label(0, 200)
			case "stage":
				d.once(&seen, 2)
				rec.Stage = d.label(0, 200)
			case "outcome":
				d.once(&seen, 3)
				rec.Outcome = d.label(0, 200)
			case "detectors":
				d.once(&seen, 4)
				if !d.null() && d.openArray() {
					for {
						if len(rec.Detectors) == 16 {
							d.bail()
							return nil
						}
						rec.Detectors = append(rec.Detectors, d.label(1, 64))
						if !d.more(']') {
							break
						}
					}
				}
			default:
				d.bail()
			}
			if !d.more('}') {
				break
			}
		}
		if seen&0b1111 != 0b1111 {
			d.bail()
			return nil
		}
		out = append(out, rec)
		if !d.more(']') {
			return out
		}
	}
}

// label reads a string as validate.String with NoControl and the bounds in
// characters reads it, failing where that reports a problem.
func (d *ingestDecoder) label(lo, hi int) string {
	s := d.text()
	n := 0
	for _, r := range s {
		if unicode.IsControl(r) {
			d.bail()
			return ""
		}
		n++
	}
	if n < lo || n > hi {
		d.bail()
	}
	return s
}

// toolArguments reads a tool call's arguments as the generic reading does:
// an object, decoded to a generic value and re-encoded by json.Marshal (its
// keys sorted, its strings escaped the encoder's way, its numbers as sent).
// Its strings are checked for what RefuseNUL refuses as they are scanned.
func (d *ingestDecoder) toolArguments() json.RawMessage {
	if d.peek() != '{' {
		d.bail()
		return nil
	}
	start := d.pos
	d.skip(0)
	if d.fail {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(d.data[start:d.pos]))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		d.bail()
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		d.bail()
		return nil
	}
	return raw
}

// skip scans one JSON value strictly, strings through str.
func (d *ingestDecoder) skip(depth int) {
	if depth > maxToolArgumentsDepth {
		d.bail()
		return
	}
	switch c := d.peek(); {
	case c == '{':
		if d.openObject() {
			for {
				d.key()
				d.skip(depth + 1)
				if !d.more('}') {
					return
				}
			}
		}
	case c == '[':
		if d.openArray() {
			for {
				d.skip(depth + 1)
				if !d.more(']') {
					return
				}
			}
		}
	case c == '"':
		d.str()
	case c == 't':
		d.literal("true")
	case c == 'f':
		d.literal("false")
	case c == 'n':
		d.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		d.number()
	default:
		d.bail()
	}
}

// number scans a JSON number: -?(0|[1-9]d*)(.d+)?([eE][+-]?d+)?.
func (d *ingestDecoder) number() {
	digits := func() int {
		n := 0
		for d.pos < len(d.data) && d.data[d.pos] >= '0' && d.data[d.pos] <= '9' {
			d.pos++
			n++
		}
		return n
	}
	if d.data[d.pos] == '-' {
		d.pos++
	}
	start := d.pos
	if n := digits(); n == 0 || (n > 1 && d.data[start] == '0') {
		d.bail()
		return
	}
	if d.pos < len(d.data) && d.data[d.pos] == '.' {
		d.pos++
		if digits() == 0 {
			d.bail()
			return
		}
	}
	if d.pos < len(d.data) && (d.data[d.pos] == 'e' || d.data[d.pos] == 'E') {
		d.pos++
		if d.pos < len(d.data) && (d.data[d.pos] == '+' || d.data[d.pos] == '-') {
			d.pos++
		}
		if digits() == 0 {
			d.bail()
		}
	}
}

// provenance reads an event's provenance as readProvenance's re-decoding
// (encoding/json into wire.UsageProvenance, unknown members refused) reads
// it, with names matched exactly (encoding/json also takes other cases)
// and no null for a string, number or boolean (encoding/json leaves the
// zero value).
//
// A provenance written byte for byte as the one before it is that value
// again: the events share it, read once (decoding each afresh was 6.2 of
// the 55 µs an event the control plane spent under a data plane's load,
// issue 33, seventeenth round). A JSON object ends at its own closing brace, so the
// same bytes at the start of the rest of the body are the whole value.
// Nothing downstream writes into an event's provenance.
func (d *ingestDecoder) provenance() *wire.UsageProvenance {
	d.peek()
	start := d.pos
	if last := &d.lastProvenance; last.value != nil && bytes.HasPrefix(d.data[start:], last.raw) {
		d.pos += len(last.raw)
		return last.value
	}
	p := d.readProvenance()
	if !d.fail {
		d.lastProvenance.raw, d.lastProvenance.value = d.data[start:d.pos], p
	}
	return p
}

func (d *ingestDecoder) readProvenance() *wire.UsageProvenance {
	p := new(wire.UsageProvenance)
	if !d.openObject() {
		return p
	}
	var seen uint64
	for {
		switch string(d.key()) {
		case "prices":
			if d.present(&seen, 0) {
				p.Prices = d.prices()
			}
		case "bundle_version":
			d.once(&seen, 1)
			p.BundleVersion = d.int()
		case "policies":
			if d.present(&seen, 2) {
				p.Policies = d.policies()
			}
		case "budgets":
			if d.present(&seen, 3) {
				p.Budgets = d.budgets()
			}
		case "over_bound":
			d.once(&seen, 4)
			p.OverBound = d.bool()
		case "upstream_usage":
			if d.present(&seen, 5) {
				p.UpstreamUsage = d.counts()
			}
		default:
			d.bail()
		}
		if !d.more('}') {
			return p
		}
	}
}

func (d *ingestDecoder) prices() *wire.UsagePrices {
	p := new(wire.UsagePrices)
	if !d.openObject() {
		return p
	}
	var seen uint64
	for {
		switch string(d.key()) {
		case "input_per_mtok":
			d.once(&seen, 0)
			p.InputPerMTok = d.text()
		case "output_per_mtok":
			d.once(&seen, 1)
			p.OutputPerMTok = d.text()
		case "cache_read_per_mtok":
			d.once(&seen, 2)
			p.CacheReadPerMTok = d.text()
		case "cache_write_per_mtok":
			d.once(&seen, 3)
			p.CacheWritePerMTok = d.text()
		case "cache_write_1h_per_mtok":
			d.once(&seen, 4)
			p.CacheWrite1hPerMTok = d.text()
		case "long_context":
			d.once(&seen, 5)
			p.LongContext = d.bool()
		case "service_tier":
			d.once(&seen, 6)
			p.ServiceTier = d.text()
		case "price_class":
			d.once(&seen, 7)
			p.PriceClass = d.text()
		default:
			d.bail()
		}
		if !d.more('}') {
			return p
		}
	}
}

func (d *ingestDecoder) policies() []wire.UsagePolicy {
	out := []wire.UsagePolicy{}
	if !d.openArray() {
		return out
	}
	for {
		if len(out) == wire.MaxProvenanceItems {
			d.bail()
			return nil
		}
		var r wire.UsagePolicy
		var seen uint64
		if d.openObject() {
			for {
				switch string(d.key()) {
				case "policy_id":
					d.once(&seen, 0)
					r.PolicyID = d.uuidOf(d.str())
				case "policy_name":
					d.once(&seen, 1)
					r.PolicyName = d.text()
				case "rule_index":
					d.once(&seen, 2)
					n := d.int()
					if int64(int(n)) != n {
						d.bail()
					}
					r.RuleIndex = int(n)
				case "action":
					d.once(&seen, 3)
					r.Action = d.text()
				case "effect":
					d.once(&seen, 4)
					r.Effect = d.text()
				default:
					d.bail()
				}
				if !d.more('}') {
					break
				}
			}
		}
		out = append(out, r)
		if !d.more(']') {
			return out
		}
	}
}

func (d *ingestDecoder) budgets() []wire.UsageBudget {
	out := []wire.UsageBudget{}
	if !d.openArray() {
		return out
	}
	for {
		if len(out) == wire.MaxProvenanceItems {
			d.bail()
			return nil
		}
		var b wire.UsageBudget
		var seen uint64
		if d.openObject() {
			for {
				switch string(d.key()) {
				case "policy_id":
					d.once(&seen, 0)
					b.PolicyID = d.uuidOf(d.str())
				case "policy_name":
					d.once(&seen, 1)
					b.PolicyName = d.text()
				case "counter":
					d.once(&seen, 2)
					b.Counter = d.text()
				case "period":
					d.once(&seen, 3)
					b.Period = d.text()
				case "aggregation":
					d.once(&seen, 4)
					b.Aggregation = d.text()
				case "amount_usd":
					d.once(&seen, 5)
					b.AmountUSD = d.text()
				default:
					d.bail()
				}
				if !d.more('}') {
					break
				}
			}
		}
		out = append(out, b)
		if !d.more(']') {
			return out
		}
	}
}

func (d *ingestDecoder) counts() *wire.UsageCounts {
	c := new(wire.UsageCounts)
	if !d.openObject() {
		return c
	}
	var seen uint64
	for {
		switch string(d.key()) {
		case "input_tokens":
			d.once(&seen, 0)
			c.InputTokens = d.int()
		case "output_tokens":
			d.once(&seen, 1)
			c.OutputTokens = d.int()
		case "cache_read_tokens":
			d.once(&seen, 2)
			c.CacheReadTokens = d.int()
		case "cache_write_tokens":
			d.once(&seen, 3)
			c.CacheWriteTokens = d.int()
		default:
			d.bail()
		}
		if !d.more('}') {
			return c
		}
	}
}
