package dataplane

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/spend"
	"github.com/gw-gateway/gw/wire"
)

// journalRecord is what a request's journal slot says of it: everything
// its usage event needs that a crash would otherwise lose, and the
// reservation it holds. Written before each attempt goes upstream.
type journalRecord struct {
	id       uuid.UUID
	occurred time.Time
	// started is when the request arrived, attemptStarted when the
	// current attempt began (for the event's latencies).
	started, attemptStarted time.Time
	org, workspace          uuid.UUID
	// key, managementKey, owner and credential: uuid.Nil when none.
	key, managementKey, owner, credential uuid.UUID
	model, provider, requested            string
	endpoint, requestID                   string
	bundleVersion                         int64
	pricing                               catalog.Pricing
	// inputTokens is the input the request's admission bound counted,
	// billed when the upstream had not reported its own; outputCap the
	// most output the request could produce.
	inputTokens, outputCap int64
	// bound is what the reservation holds against each counter of holds.
	bound int64
	holds []journalHold
	tags  map[string]string
	// attempts are the attempts before the current one.
	attempts []wire.UsageAttempt
	// budgets are the budgets the request counts against, for the event's
	// provenance.
	budgets []journalBudget
	// batchID is the batch the request is a line of ("" for a
	// synchronous request), and batchKind its model's provider kind: a
	// crashed line names its batch. It is a line gw's runner sent, so it
	// is priced as the synchronous request it was (batchKind is kept in
	// the format, unused). Written last and only for a batch line, so
	// that every other record is what earlier versions wrote and read.
	batchID, batchKind string
}

// journalHold is a budget counter a reservation holds against, in the
// period starting at start, and what it holds there.
type journalHold struct {
	counter spend.Counter
	start   time.Time
	held    int64
}

// journalBudget is a budget of the event's provenance.
type journalBudget struct {
	policyID                          uuid.UUID
	name, period, aggregation, amount string
}

// What a record too large for its slot leaves out, in turn: the budgets'
// names, the earlier attempts, the tags, and last the reservation (then
// left at its bound by a recovery).
const (
	dropNothing = iota
	dropBudgetNames
	dropAttempts
	dropTags
	dropAll
)

// encodeRecord appends r, as slot seq holds it, to b: little-endian
// integers, strings and counts as uvarint lengths.
func encodeRecord(b []byte, seq uint64, r *journalRecord, drop int) []byte {
	le := binary.LittleEndian
	b = le.AppendUint64(b, seq)
	b = append(b, r.id[:]...)
	b = le.AppendUint64(b, uint64(r.occurred.UnixMicro()))
	b = le.AppendUint64(b, uint64(r.started.UnixMilli()))
	b = le.AppendUint64(b, uint64(r.attemptStarted.UnixMilli()))
	for _, id := range [...]uuid.UUID{r.org, r.workspace, r.key, r.managementKey, r.owner, r.credential} {
		b = append(b, id[:]...)
	}
	for _, s := range [...]string{r.model, r.provider, r.requested, r.endpoint, r.requestID} {
		b = appendString(b, s)
	}
	b = le.AppendUint64(b, uint64(r.bundleVersion))
	p := r.pricing
	for _, s := range [...]string{p.InputPerMTok, p.OutputPerMTok, p.CacheReadPerMTok, p.CacheWritePerMTok, p.CacheWrite1hPerMTok} {
		b = appendString(b, s)
	}
	if lc := p.LongContext; lc != nil {
		b = append(b, 1)
		b = le.AppendUint64(b, uint64(lc.AboveInputTokens))
		for _, s := range [...]string{lc.InputPerMTok, lc.OutputPerMTok, lc.CacheReadPerMTok, lc.CacheWritePerMTok, lc.CacheWrite1hPerMTok} {
			b = appendString(b, s)
		}
	} else {
		b = append(b, 0)
	}
	b = le.AppendUint64(b, uint64(r.inputTokens))
	b = le.AppendUint64(b, uint64(r.outputCap))
	if drop >= dropAll {
		b = le.AppendUint64(b, 0)
		b = binary.AppendUvarint(b, 0)
	} else {
		b = le.AppendUint64(b, uint64(r.bound))
		b = binary.AppendUvarint(b, uint64(len(r.holds)))
		for _, h := range r.holds {
			b = appendCounter(b, h.counter)
			b = le.AppendUint64(b, uint64(h.start.Unix()))
			b = le.AppendUint64(b, uint64(h.held))
		}
	}
	if drop >= dropTags {
		b = binary.AppendUvarint(b, 0)
	} else {
		b = binary.AppendUvarint(b, uint64(len(r.tags)))
		for k, v := range r.tags {
			b = appendString(appendString(b, k), v)
		}
	}
	if drop >= dropAttempts {
		b = binary.AppendUvarint(b, 0)
	} else {
		b = binary.AppendUvarint(b, uint64(len(r.attempts)))
		for _, a := range r.attempts {
			b = appendString(appendString(b, a.Model), a.Provider)
			b = le.AppendUint64(b, uint64(a.LatencyMS))
			failure := ""
			if a.Failure != nil {
				failure = *a.Failure
			}
			b = appendString(b, failure)
		}
	}
	if drop >= dropBudgetNames {
		b = binary.AppendUvarint(b, 0)
	} else {
		b = binary.AppendUvarint(b, uint64(len(r.budgets)))
		for _, bu := range r.budgets {
			b = append(b, bu.policyID[:]...)
			for _, s := range [...]string{bu.name, bu.period, bu.aggregation, bu.amount} {
				b = appendString(b, s)
			}
		}
	}
	if r.batchID != "" {
		b = appendString(appendString(b, r.batchID), r.batchKind)
	}
	return b
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendCounter(b []byte, c spend.Counter) []byte {
	b = append(b, c.PolicyID[:]...)
	b = appendString(appendString(b, string(c.Period)), c.Aggregation)
	return append(b, c.KeyID[:]...)
}

// recordReader reads a record; the first short read sticks.
type recordReader struct {
	b   []byte
	err error
}

func (r *recordReader) take(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b) {
		r.err = errShortRecord
		return make([]byte, max(n, 0))
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *recordReader) u64() uint64 { return binary.LittleEndian.Uint64(r.take(8)) }
func (r *recordReader) i64() int64  { return int64(r.u64()) }

func (r *recordReader) uuid() uuid.UUID {
	var id uuid.UUID
	copy(id[:], r.take(16))
	return id
}

func (r *recordReader) count() int {
	if r.err != nil {
		return 0
	}
	n, k := binary.Uvarint(r.b)
	if k <= 0 || n > uint64(len(r.b)) {
		r.err = errShortRecord
		return 0
	}
	r.b = r.b[k:]
	return int(n)
}

func (r *recordReader) str() string { return string(r.take(r.count())) }

func (r *recordReader) counter() spend.Counter {
	c := spend.Counter{PolicyID: r.uuid(), Period: spend.Period(r.str()), Aggregation: r.str()}
	c.KeyID = r.uuid()
	return c
}

var errRecordTrailing = errors.New("request journal record: bytes after its last field")

// decodeRecord reads a record encodeRecord wrote; seq is its slot's.
func decodeRecord(rec []byte) (uint64, journalRecord, error) {
	rd := &recordReader{b: rec}
	seq := rd.u64()
	var r journalRecord
	r.id = rd.uuid()
	r.occurred = time.UnixMicro(rd.i64()).UTC()
	r.started = time.UnixMilli(rd.i64())
	r.attemptStarted = time.UnixMilli(rd.i64())
	r.org, r.workspace, r.key, r.managementKey, r.owner, r.credential = rd.uuid(), rd.uuid(), rd.uuid(), rd.uuid(), rd.uuid(), rd.uuid()
	r.model, r.provider, r.requested, r.endpoint, r.requestID = rd.str(), rd.str(), rd.str(), rd.str(), rd.str()
	r.bundleVersion = rd.i64()
	r.pricing = catalog.Pricing{InputPerMTok: rd.str(), OutputPerMTok: rd.str(), CacheReadPerMTok: rd.str(), CacheWritePerMTok: rd.str(),
		CacheWrite1hPerMTok: rd.str()}
	if rd.take(1)[0] == 1 {
		lc := &catalog.LongContextPricing{AboveInputTokens: rd.i64()}
		lc.InputPerMTok, lc.OutputPerMTok, lc.CacheReadPerMTok, lc.CacheWritePerMTok, lc.CacheWrite1hPerMTok = rd.str(), rd.str(), rd.str(), rd.str(), rd.str()
		r.pricing.LongContext = lc
	}
	r.inputTokens, r.outputCap = rd.i64(), rd.i64()
	r.bound = rd.i64()
	for n := rd.count(); n > 0 && rd.err == nil; n-- {
		c := rd.counter()
		start := time.Unix(rd.i64(), 0).UTC()
		r.holds = append(r.holds, journalHold{counter: c, start: start, held: rd.i64()})
	}
	if n := rd.count(); n > 0 {
		r.tags = make(map[string]string, n)
		for ; n > 0 && rd.err == nil; n-- {
			k := rd.str()
			r.tags[k] = rd.str()
		}
	}
	for n := rd.count(); n > 0 && rd.err == nil; n-- {
		a := wire.UsageAttempt{Model: rd.str(), Provider: rd.str(), LatencyMS: rd.i64()}
		if f := rd.str(); f != "" {
			a.Failure = &f
		}
		r.attempts = append(r.attempts, a)
	}
	for n := rd.count(); n > 0 && rd.err == nil; n-- {
		bu := journalBudget{policyID: rd.uuid()}
		bu.name, bu.period, bu.aggregation, bu.amount = rd.str(), rd.str(), rd.str(), rd.str()
		r.budgets = append(r.budgets, bu)
	}
	if len(rd.b) > 0 && rd.err == nil {
		if r.batchID, r.batchKind = rd.str(), rd.str(); r.batchID == "" {
			return 0, journalRecord{}, errRecordTrailing
		}
	}
	if rd.err != nil {
		return 0, journalRecord{}, rd.err
	}
	if len(rd.b) > 0 {
		return 0, journalRecord{}, errRecordTrailing
	}
	return seq, r, nil
}
