// Package spend keeps budgets hard (DESIGN §6): before a request goes
// upstream it reserves an upper bound of the request's cost against every
// budget counter that applies, and is refused when one of them cannot take
// it; when the request ends, the reservation settles to the exact cost.
//
// A data plane may only spend what the control plane has granted it: each
// counter's allowance is a lease, a slice of the budget's remainder, and
// the Ledger admits only within the leases it holds. While the control
// plane is unreachable the ledger keeps admitting within those leases, so
// the total across every data plane can never pass the amount.
//
// At the end of a budget, a request whose bound the amount no longer
// takes may be admitted against a tight estimate instead (the tail
// admission, see Reserve), holding beside it a small reserve for what it
// may cost beyond; a request is never charged more than it held (Settle),
// so a ledger's spend never passes what it was granted.
//
// Work accepted now and sent later (a batch's lines) is held as a whole
// (a hold, Source): each request drawn from the hold takes its share in
// the same step as it is reserved, so the room never stands free in
// between for another request to take.
//
// The package is pure: the clock is passed in, leases arrive through the
// caller. Amounts are integer nano-dollars, as the database stores them.
package spend

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/wire"
)

// Period is a budget period: UTC calendar days or months.
type Period string

// Budget periods (spec 2.3).
const (
	Day   Period = "day"
	Month Period = "month"
	// Minute is a rate limit's window, which the same leases carry.
	Minute Period = "minute"
)

// Bounds is the period containing now, [start, end), in UTC: a budget
// rolls over exactly at midnight UTC, or at midnight UTC on the first of
// the month.
func Bounds(p Period, now time.Time) (start, end time.Time) {
	y, m, d := now.UTC().Date()
	if p == Minute {
		start = now.UTC().Truncate(time.Minute)
		return start, start.Add(time.Minute)
	}
	if p == Month {
		start = time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
		return start, start.AddDate(0, 1, 0)
	}
	start = time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	return start, start.AddDate(0, 0, 1)
}

// Counter names one budget's spend: a policy's budget of one period and
// aggregation, shared by everything the policy targets, or one inference
// key's (per_key). A policy edited mid-period keeps its counter, and so
// the period's spend, whatever else changes in it.
type Counter struct {
	PolicyID    uuid.UUID
	Period      Period
	Aggregation string    // shared or per_key
	KeyID       uuid.UUID // per_key only
}

// String is the counter's name: <policy id>/<period>/shared, or
// <policy id>/<period>/per_key/<key id>.
func (c Counter) String() string {
	var b [36 + 1 + 16 + 9 + 36]byte
	return string(c.AppendName(b[:0]))
}

// AppendName appends c.String() without an allocation or fmt: every
// usage event's provenance names its budgets' counters, and every budget
// journal line its counter (issue 33).
func (c Counter) AppendName(b []byte) []byte {
	b = append(wire.AppendUUID(b, c.PolicyID), '/')
	b = append(b, c.Period...)
	if c.Aggregation == "per_key" {
		return wire.AppendUUID(append(b, "/per_key/"...), c.KeyID)
	}
	return append(b, "/shared"...)
}

// ErrCounterName is the error of a name that names no budget counter.
var ErrCounterName = errors.New("not a budget counter: want <policy id>/<day|month>/shared or <policy id>/<day|month>/per_key/<key id>")

// ParseCounter reads a budget counter's name back (Counter.String).
func ParseCounter(name string) (Counter, error) {
	parts := strings.Split(name, "/")
	if len(parts) != 3 && len(parts) != 4 {
		return Counter{}, ErrCounterName
	}
	id, err := uuid.Parse(parts[0])
	if err != nil || parts[0] != id.String() {
		return Counter{}, ErrCounterName
	}
	c := Counter{PolicyID: id, Period: Period(parts[1]), Aggregation: parts[2]}
	if c.Period != Day && c.Period != Month {
		return Counter{}, ErrCounterName
	}
	switch {
	case c.Aggregation == "shared" && len(parts) == 3:
	case c.Aggregation == "per_key" && len(parts) == 4:
		if c.KeyID, err = uuid.Parse(parts[3]); err != nil || parts[3] != c.KeyID.String() {
			return Counter{}, ErrCounterName
		}
	default:
		return Counter{}, ErrCounterName
	}
	return c, nil
}

// Claim is one budget a request counts against.
type Claim struct {
	Counter Counter
	// LimitNano is the budget's amount in nano-dollars.
	LimitNano int64
	// PolicyName names the budget in refusals.
	PolicyName string
}

// Refusal says which budget refused a request, why, and when it resets.
type Refusal struct {
	Claim   Claim
	ResetAt time.Time
	Reason  RefusalReason
}

// RefusalReason says whether a refusal is final.
type RefusalReason int

const (
	// Spent: the room is gone for the period. Even if every reservation
	// in flight settled at nothing, the amount less what was spent would
	// not take the request: asking again before the period resets is
	// pointless.
	Spent RefusalReason = iota
	// Unreachable: the budget might have had room, but no lease could be
	// had (the control plane is unreachable and the leases held are spent).
	Unreachable
	// Busy: room may come back (reservations in flight, leases other data
	// planes hold), but did not within the time a request may wait.
	Busy
	// Unknown: the control plane does not know the counter, as when a
	// policy was just disabled and this plane's bundle is not yet the new
	// one.
	Unknown
)

// ErrLeaseRefused marks a lease source's refusal of a request for leases:
// the control plane does not know a counter (a policy disabled or a key
// revoked since the data plane's bundle), or does not serve the data plane
// at all. Such a request is refused, not as final, and not as unreachable.
var ErrLeaseRefused = errors.New("the control plane refused the budget lease")

// Final says the refusal holds until the period resets.
func (r *Refusal) Final() bool { return r.Reason == Spent }

func (r *Refusal) Error() string {
	return fmt.Sprintf("budget %q is exhausted until %s", r.Claim.PolicyName, r.ResetAt.Format(time.RFC3339))
}

// Ask is a lease request for one counter: Want more nano-dollars granted,
// having spent Used in the period (settled), having given back Returned in all.
type Ask struct {
	Counter     Counter
	Claim       Claim
	PeriodStart time.Time
	Want        int64
	// Need is the least grant that would admit the request (a tail
	// admission's, when one is possible; else Want).
	Need int64
	Used int64
	// Returned is all this holder has given back in the period, in all:
	// cumulative, so an ask the control plane receives twice (a reply
	// lost, the ask sent again) gives nothing back twice.
	Returned int64
	// Moved is what the Sync that made this ask took out of the ledger's
	// allowance (see Unsent).
	Moved int64
}

// Grant is the control plane's answer for one counter: what this holder
// has been granted in the period in all, and what it is known to have
// used. The ledger's allowance is Granted.
type Grant struct {
	Counter     Counter
	PeriodStart time.Time
	Granted     int64
	Used        int64
	// Returned is what the control plane has taken back in all.
	Returned int64
	// Limit is the amount as the control plane has it; Others what the
	// seed and every other holder have committed (each lease counting the
	// larger of its grant and its spend), OthersUsed what of that is
	// spent. They tell a plane whether asking again can help and whether
	// waiting can (see Outlook).
	Limit, Others, OthersUsed int64
}

type counter struct {
	start, end time.Time
	claim      Claim
	granted    int64 // leased to this holder in the period, in all
	used       int64 // settled spend in the period
	reserved   int64 // outstanding reservations
	// holding is the part of reserved that holds keep (Hold): room kept
	// for requests still to come, which no request has been sent under.
	holding int64
	// reported is the used amount last told to the control plane.
	reported int64
	// returned is all the allowance given back in the period (no longer
	// the ledger's to spend), acked what of it the control plane has
	// confirmed taking back.
	returned, acked int64
	// missed is the largest bound that did not fit since the last sync:
	// allowance below it is stranded here (requests that size cannot use
	// it), so the next sync gives it all back for other planes to use.
	missed int64
	// active: a request came, or was in flight, since the last sync. An
	// idle counter keeps nothing: its slice is worth more to a plane
	// whose requests wait for room.
	active bool
	// The control plane's last answer in the period (see Grant); known
	// says there was one.
	known                     bool
	limit, others, othersUsed int64
	// peakCost/peakBound is the largest share of its bound a request
	// settled here cost in the period (peakBound 0: none yet), which a
	// tail admission's estimate scales bounds by.
	peakCost, peakBound int64
	// overrun is what tail admissions cost beyond their estimates in the
	// period, taken from the reserve; reserveHeld what tail admissions in
	// flight hold of it.
	overrun, reserveHeld int64
	// noTails: the ledger admits no tails (its setting, copied here).
	noTails bool
}

func (c *counter) free() int64 { return c.granted - c.used - c.reserved }

// ReserveShare is the part of a budget's amount kept as the reserve that
// the over-runs of tail admissions are settled against (1%), per period
// and per ledger (each data plane keeps its own, within its grants).
const ReserveShare = 100

// minEstimateShare bounds a tail estimate from below: never less than a
// quarter of the bound, whatever the requests before cost.
const minEstimateShare = 4

// reserveAvail is what of the reserve no tail admission has taken or
// holds.
func (c *counter) reserveAvail() int64 {
	return max(0, c.claim.LimitNano/ReserveShare-c.overrun-c.reserveHeld)
}

// roomLeft is what the budget's amount leaves beyond every holder's spend
// (settled), as far as this ledger knows: were everything in flight to
// settle at nothing, no more would be free. Before the control plane's
// first answer, what this ledger was granted and has not spent.
func (c *counter) roomLeft() int64 {
	if !c.known {
		return c.granted - c.used
	}
	return max(c.limit, c.claim.LimitNano) - c.othersUsed - c.used
}

// estimate is the tail estimate of a request of bound: bound scaled by
// the largest share of its bound a request settled here cost in the
// period (rounded up), never below a quarter of it; the bound itself
// before any request settled, or with tail admissions off.
func (c *counter) estimate(bound int64) int64 {
	if c.noTails || c.peakBound <= 0 || bound <= 0 {
		return bound
	}
	e := mulDivCeil(bound, c.peakCost, c.peakBound)
	return min(bound, max(e, (bound+minEstimateShare-1)/minEstimateShare))
}

// tail is what a request of bound would hold as a tail admission: its
// estimate, and the reserve it takes for its over-run (all the over-run
// an honest upstream can cost, bound − estimate, or what is available).
// ok is false when it is no tail: its bound fits what the budget has
// left (it waits for room, or asks for it, like any request), tail
// admissions are off or have no estimate below the bound yet, or the
// reserve has nothing left to cover an over-run.
func (c *counter) tail(bound int64) (estimate, reserve int64, ok bool) {
	if bound <= c.roomLeft() {
		return 0, 0, false
	}
	e := c.estimate(bound)
	if e >= bound {
		return 0, 0, false
	}
	r := min(bound-e, c.reserveAvail())
	if r <= 0 {
		return 0, 0, false
	}
	return e, r, true
}

// need is the least free allowance that admits a request of bound: its
// bound, or a tail admission's estimate and reserve when it is one.
func (c *counter) need(bound int64) int64 {
	if e, r, ok := c.tail(bound); ok {
		return e + r
	}
	return bound
}

// needSettled is the least need could become once what is in flight here
// settled: the reserve tail admissions hold comes back (what they
// over-ran stays taken), and, before any request here settled, the first
// to settle gives tail admissions their estimate (a quarter of the bound
// at the least). A tail admission takes all the reserve there is, up to
// its over-run, so while one is in flight the next needs its full bound;
// judged by need alone, that request was refused for good though waiting
// could admit it.
func (c *counter) needSettled(bound int64) int64 {
	settled := *c
	settled.reserveHeld = 0
	if settled.peakBound <= 0 && c.reserved > c.holding {
		settled.peakCost, settled.peakBound = 0, 1
	}
	return settled.need(bound)
}

// hold is what a request of bound holds of c: the bound, or as a tail
// admission its estimate and reserve; nothing when that does not fit.
func (c *counter) hold(bound int64) held {
	if bound <= c.free() {
		return held{c: c, start: c.start, amount: bound}
	}
	if e, r, ok := c.tail(bound); ok && e+r <= c.free() {
		return held{c: c, start: c.start, amount: e, reserve: r}
	}
	return held{}
}

// mulDivCeil is ceil(a × b / d) for non-negative a, b and positive d, in
// 128 bits; math.MaxInt64 when it does not fit.
func mulDivCeil(a, b, d int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(d) {
		return math.MaxInt64
	}
	q, r := bits.Div64(hi, lo, uint64(d))
	if r > 0 {
		q++
	}
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}

// Ledger is one data plane's view of its budget counters. It is safe for
// concurrent use.
type Ledger struct {
	mu       sync.Mutex
	counters map[Counter]*counter
	journal  Journal
	// changed is closed when room may have appeared (a settlement, a
	// grant), for requests waiting for it; nil while no one waits.
	changed chan struct{}
	// noTails turns tail admissions off (benchmarks measure without).
	noTails bool
	// states is record's buffer for the journal, reused under mu (a
	// request's reservation and settlement each allocated one).
	states []CounterState
}

// AdmitTails turns tail admissions on (the default) or off.
func (l *Ledger) AdmitTails(on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.noTails = !on
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger { return &Ledger{counters: map[Counter]*counter{}} }

// Journal keeps a ledger's counters where a new process can read them
// back: a data plane that crashes (kill -9) must not forget what it spent
// since it last reported, nor the reservations it had open. Record is
// called under the ledger's lock after every change, in order, with the
// state of the counters the change touched, before the ledger acts on it
// (a reservation's request goes upstream, a give-back is sent); it must
// not call the ledger, nor keep the slice (the ledger reuses it).
type Journal interface {
	Record([]CounterState)
}

// CounterState is everything a ledger knows of one counter's period.
type CounterState struct {
	Counter                                            Counter
	Start                                              time.Time
	Granted, Used, Reserved, Returned, Acked, Reported int64
}

// SetJournal makes every later change reach j.
func (l *Ledger) SetJournal(j Journal) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.journal = j
}

// Restore takes back the counters a journal kept, into an empty ledger.
// Reservations that were open count as spent at their bound: their
// requests may have been answered, and billed, before the process died.
// The periods they belong to are kept as they were; Reserve rolls a
// counter over when its period has ended.
func (l *Ledger) Restore(states []CounterState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range states {
		if c := l.counters[s.Counter]; c != nil && c.start.After(s.Start) {
			continue // a later period of the counter is what counts
		}
		_, end := Bounds(s.Counter.Period, s.Start)
		c := &counter{start: s.Start.UTC(), end: end, granted: s.Granted, used: s.Used + s.Reserved,
			returned: s.Returned, acked: s.Acked, reported: s.Reported}
		c.claim.Counter = s.Counter
		l.counters[s.Counter] = c
	}
}

// state is the counter as the journal keeps it. What holds keep is not
// reserved there: nothing was sent under a hold (a request drawn from one
// holds its own reservation, journaled with it), so a restarted process
// owes nothing for it; its room is free again, for the process to hold
// anew (docs/budgets.md, Batches).
func (c *counter) state(id Counter) CounterState {
	return CounterState{Counter: id, Start: c.start, Granted: c.granted, Used: c.used, Reserved: c.reserved - c.holding,
		Returned: c.returned, Acked: c.acked, Reported: c.reported}
}

// record reports changed counters to the journal, and wakes the requests
// waiting for room when grow says room may have appeared.
func (l *Ledger) record(grow bool, cs ...*counter) {
	if l.journal != nil && len(cs) > 0 {
		out := l.states[:0]
		for _, c := range cs {
			out = append(out, c.state(c.claim.Counter))
		}
		l.journal.Record(out)
		l.states = out
	}
	if grow && l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
}

// Changed returns a channel closed when room may next appear: a
// reservation settles or the control plane grants more. Take it before
// the Reserve whose failure makes the caller wait, so no change between
// the two is missed.
func (l *Ledger) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.changed == nil {
		l.changed = make(chan struct{})
	}
	return l.changed
}

// Reservation holds an upper bound against some counters until Settle,
// or, for a hold (Source.Hold), until Release.
type Reservation struct {
	l     *Ledger
	bound int64
	held  []held
	done  bool
	// hold: room kept for requests to come (a batch's lines), which draw
	// it down (Source.From); never charged.
	hold bool
}

// held is what a reservation holds of one counter: the bound, or a tail
// admission's estimate and the reserve it took.
type held struct {
	c     *counter
	id    Counter
	start time.Time
	// amount is what the reservation holds of the counter (the bound, or
	// a tail admission's estimate); reserve the part of the counter's
	// reserve it took beside.
	amount, reserve int64
}

// Bound is what the reservation holds against each of its counters.
func (r *Reservation) Bound() int64 { return r.bound }

// Held calls fn with each counter the reservation holds against, the
// start of the period it holds it in and what it holds there (the bound,
// or a tail admission's estimate and reserve): what a record of the
// request must name for a restarted process to settle it (the data
// plane's request journal). The list is fixed when Reserve returns.
func (r *Reservation) Held(fn func(c Counter, start time.Time, held int64)) {
	for _, h := range r.held {
		fn(h.id, h.start, h.amount+h.reserve)
	}
}

// Reserve holds bound against every claim, all or nothing. When a counter
// lacks allowance, Reserve returns nil and the asks that would cover the
// shortfall; the caller obtains leases, applies them with Apply, and calls
// Reserve again. A second shortfall is a refusal (see Refuse).
//
// A counter whose budget no longer has room for the bound — were every
// reservation in flight to settle at nothing, what the amount leaves
// beyond every holder's spend would not take it — admits the request
// against a tight estimate instead (a tail admission), holding beside it
// as much of the counter's reserve as its over-run could take (the
// bound less the estimate) or as is left. The estimate is the bound
// scaled by the largest share of its bound a request settled here cost
// in the period, never less than a quarter of it; the reserve is 1% of
// the amount a period (ReserveShare), which what tail admissions cost
// beyond their estimates takes from for good. A tail admission is
// charged at most its estimate and reserve (Settle).
func (l *Ledger) Reserve(now time.Time, claims []Claim, bound int64) (*Reservation, []Ask) {
	return l.ReserveFrom(Source{}, now, claims, bound)
}

// Source says where a reservation's room comes from and what it is.
//
// From and Share: a hold's share for this request (a batch's hold, the
// share of the line being sent). In the same step, under the ledger's
// lock, the hold gives up Share of what it holds on each of the
// request's counters (at most what it holds there) and the request takes
// its bound, from that and the free allowance: no other request can take
// the room in between. The request's claims are among the hold's (a
// counter the hold does not hold, or holds in an ended period, gives
// nothing). The share leaves the hold even when the request needs less
// (its bound is tighter than the share, counted when the hold was made):
// the rest is free again. When the request cannot be held, nothing
// changes, the hold keeps its share.
//
// Hold: the reservation is a hold — room kept for requests still to come
// rather than one request's: they draw it down, and what is left is given
// back by Release, never charged. The journal does not count a hold as
// reserved (nothing was sent under it), so a restarted process does not
// count it as spent: it holds again what it still needs.
type Source struct {
	From  *Reservation
	Share int64
	Hold  bool
}

// ReserveFrom is Reserve with room drawn from src first, or kept as a
// hold (Source).
func (l *Ledger) ReserveFrom(src Source, now time.Time, claims []Claim, bound int64) (*Reservation, []Ask) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var asks []Ask
	cs := l.countersLocked(now, claims)
	hs := make([]held, len(claims))
	lent := l.lendLocked(src, cs)
	for i, c := range cs {
		c.active = true
		h := c.hold(bound)
		if h.c == nil {
			free := c.free()
			need := c.need(bound)
			asks = append(asks, Ask{Counter: claims[i].Counter, Claim: c.claim, PeriodStart: c.start, Want: bound - free, Need: need - free, Used: c.used})
			c.missed = max(c.missed, need)
			continue
		}
		hs[i] = h
	}
	if len(asks) > 0 {
		lent.undo()
		return nil, asks
	}
	r := &Reservation{l: l, bound: bound, held: hs, hold: src.Hold}
	for i := range hs {
		hs[i].id = claims[i].Counter
		h := hs[i]
		h.c.reserved += h.amount + h.reserve
		h.c.reserveHeld += h.reserve
		if r.hold {
			h.c.holding += h.amount + h.reserve
		}
	}
	// A share larger than the request's bound leaves the rest free: room
	// may have appeared for requests waiting.
	l.record(len(lent) > 0, cs...)
	return r, nil
}

// loan is what a hold gave up on one counter for a request (lendLocked).
type loan struct {
	h               *held
	holding         bool
	amount, reserve int64
}

type loans []loan

// lendLocked takes src's share out of its hold on each of cs (at most
// what the hold holds there), as room for the request being reserved:
// the reservation keeps it, or undo puts it back.
func (l *Ledger) lendLocked(src Source, cs []*counter) loans {
	from := src.From
	if from == nil || from.done || from.l != l || src.Share <= 0 {
		return nil
	}
	var out loans
	for i := range from.held {
		h := &from.held[i]
		lent := false
		for _, c := range cs {
			lent = lent || h.c == c
		}
		if !lent {
			continue
		}
		a := min(src.Share, h.amount)
		rs := min(src.Share-a, h.reserve)
		h.amount -= a
		h.reserve -= rs
		h.c.reserved -= a + rs
		h.c.reserveHeld -= rs
		if from.hold {
			h.c.holding -= a + rs
		}
		out = append(out, loan{h: h, holding: from.hold, amount: a, reserve: rs})
	}
	return out
}

// undo gives a hold back what lendLocked took.
func (ls loans) undo() {
	for _, x := range ls {
		x.h.amount += x.amount
		x.h.reserve += x.reserve
		x.h.c.reserved += x.amount + x.reserve
		x.h.c.reserveHeld += x.reserve
		if x.holding {
			x.h.c.holding += x.amount + x.reserve
		}
	}
}

// Release gives back all a hold still holds, charging nothing: the
// requests it kept room for have drawn their shares or will not be sent.
// On a request's reservation it is Settle(0). Releasing twice does
// nothing.
func (r *Reservation) Release() {
	if r == nil {
		return
	}
	if !r.hold {
		r.Settle(0)
		return
	}
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	r.releaseLocked()
}

func (r *Reservation) releaseLocked() {
	if r.done {
		return
	}
	r.done = true
	cs := make([]*counter, len(r.held))
	for i, h := range r.held {
		h.c.reserved -= h.amount + h.reserve
		h.c.reserveHeld -= h.reserve
		h.c.holding -= h.amount + h.reserve
		cs[i] = h.c
	}
	r.l.record(true, cs...)
}

// GiveBack takes n out of what a hold holds on each of its counters (at
// most what it holds there), as when the request a share was kept for
// will not be sent (a line cancelled, or refused before it was), and
// reports what it still holds at most on any counter. Nothing on a
// reservation that is no hold.
func (r *Reservation) GiveBack(n int64) int64 {
	if r == nil || !r.hold {
		return 0
	}
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	if r.done {
		return 0
	}
	var left int64
	cs := make([]*counter, 0, len(r.held))
	for i := range r.held {
		h := &r.held[i]
		a := min(max(n, 0), h.amount)
		rs := min(max(n, 0)-a, h.reserve)
		if a+rs > 0 {
			h.amount -= a
			h.reserve -= rs
			h.c.reserved -= a + rs
			h.c.reserveHeld -= rs
			h.c.holding -= a + rs
			cs = append(cs, h.c)
		}
		left = max(left, h.amount+h.reserve)
	}
	r.l.record(true, cs...)
	return left
}

// Holding is the most a hold (or a reservation) still holds on any of
// its counters; 0 once released or settled.
func (r *Reservation) Holding() int64 {
	if r == nil {
		return 0
	}
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	if r.done {
		return 0
	}
	var out int64
	for _, h := range r.held {
		out = max(out, h.amount+h.reserve)
	}
	return out
}

// counterLocked finds or makes the claim's counter, rolled over to now's
// period: a new period starts with nothing granted, used or reserved
// (reservations of the old period settle into it, see Settle).
func (l *Ledger) counterLocked(now time.Time, cl Claim) *counter {
	c := l.counters[cl.Counter]
	start, end := Bounds(cl.Counter.Period, now)
	if c == nil || !c.start.Equal(start) {
		// A counter of an ended period whose reservations are still open
		// lives on in them (Settle); the ledger counts the new period.
		c = &counter{start: start, end: end}
		l.counters[cl.Counter] = c
	}
	// An edited amount applies at once; the spend stays.
	c.claim = cl
	c.noTails = l.noTails
	return c
}

func (l *Ledger) countersLocked(now time.Time, claims []Claim) []*counter {
	cs := make([]*counter, len(claims))
	for i, cl := range claims {
		cs[i] = l.counterLocked(now, cl)
	}
	return cs
}

// inPeriod is the counter if the ledger still counts the period that
// starts at start; answers about a period left behind change nothing.
func (l *Ledger) inPeriod(id Counter, start time.Time) *counter {
	if c := l.counters[id]; c != nil && c.start.Equal(start) {
		return c
	}
	return nil
}

// Refuse names the first claim that cannot take bound, for the refusal:
// of those, one whose room is gone when the reason is Spent.
func (l *Ledger) Refuse(now time.Time, claims []Claim, bound int64, reason RefusalReason) *Refusal {
	return l.RefuseFrom(Source{}, now, claims, bound, reason)
}

// RefuseFrom is Refuse for a request reserved with src (ReserveFrom): as
// if src's share were its room already.
func (l *Ledger) RefuseFrom(src Source, now time.Time, claims []Claim, bound int64, reason RefusalReason) *Refusal {
	l.mu.Lock()
	defer l.mu.Unlock()
	defer l.lendLocked(src, l.countersLocked(now, claims)).undo()
	var first *Refusal
	for _, cl := range claims {
		c := l.counterLocked(now, cl)
		if c.hold(bound).c != nil || bound <= 0 {
			continue
		}
		r := &Refusal{Claim: cl, ResetAt: c.end, Reason: reason}
		if reason != Spent || c.outlook(bound, true) == OutlookFinal {
			return r
		}
		if first == nil {
			first = r
		}
	}
	if first != nil {
		return first
	}
	return &Refusal{Claim: claims[0], ResetAt: l.counterLocked(now, claims[0]).end, Reason: reason}
}

// Outlook is what a request that Reserve could not take should do next.
type Outlook int

const (
	// OutlookAsk: the control plane may grant more; ask it.
	OutlookAsk Outlook = iota
	// OutlookWait: the control plane has nothing more now, but room may
	// come back: reservations in flight here settle below their bounds,
	// other holders give back what they have not spent.
	OutlookWait
	// OutlookFinal: even if everything in flight anywhere settled at
	// nothing, the amount less what was spent would not take the request.
	OutlookFinal
)

// Outlook judges a request of bound that Reserve could not take, from
// the control plane's last answers (reachable false: it cannot be asked
// now, so only this ledger's own reservations can make room). Final on
// any claim is final; else asking beats waiting.
func (l *Ledger) Outlook(now time.Time, claims []Claim, bound int64, reachable bool) Outlook {
	return l.OutlookFrom(Source{}, now, claims, bound, reachable)
}

// OutlookFrom is Outlook for a request reserved with src (ReserveFrom):
// as if src's share were its room already.
func (l *Ledger) OutlookFrom(src Source, now time.Time, claims []Claim, bound int64, reachable bool) Outlook {
	l.mu.Lock()
	defer l.mu.Unlock()
	defer l.lendLocked(src, l.countersLocked(now, claims)).undo()
	out := OutlookWait
	for _, cl := range claims {
		c := l.counterLocked(now, cl)
		if c.hold(bound).c != nil || bound <= 0 {
			continue
		}
		switch o := c.outlook(bound, reachable); o {
		case OutlookFinal:
			return o
		case OutlookAsk:
			out = o
		}
	}
	return out
}

func (c *counter) outlook(bound int64, reachable bool) Outlook {
	// The least allowance that would admit it now: the bound, or a tail
	// admission's; least, the smaller of that and what would admit it once
	// what is in flight here settled (the reserve tail admissions hold
	// comes back; with more of it, a tail takes more, so either may be
	// the smaller).
	need := c.need(bound)
	least := min(need, c.needSettled(bound))
	// What this holder's own reservations in flight would leave, were
	// they all to settle at nothing.
	local := c.reserved > 0 && least <= c.granted-c.used
	if !reachable {
		if local {
			return OutlookWait
		}
		return OutlookFinal
	}
	if !c.known {
		return OutlookAsk
	}
	if c.limit-c.others-c.granted >= need-c.free() {
		// The control plane had enough free for the shortfall (it grants
		// nothing less, see GrantLease).
		return OutlookAsk
	}
	// What the amount leaves beyond every holder's spend: allowance that
	// is held, not spent, comes back when it settles or is given back. An
	// amount raised since the control plane last answered (the bundle has
	// the new one) may leave more; the paced asks of a waiting request
	// will learn it.
	if local || least <= max(c.limit, c.claim.LimitNano)-c.othersUsed-c.used {
		return OutlookWait
	}
	return OutlookFinal
}

// Apply records grants from the control plane. A grant for a period the
// ledger has left behind is ignored. Used only ever grows: the control
// plane may know of spend this process has not seen (before a restart).
func (l *Ledger) Apply(gs []Grant) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var touched []*counter
	for _, g := range gs {
		c := l.inPeriod(g.Counter, g.PeriodStart)
		if c == nil {
			continue
		}
		// The control plane's grant still counts what it had not taken
		// back when it answered: g.Returned, from the same answer. Not
		// acked, which a later answer may have raised: an ask for more and
		// the periodic sync run at once, so the answer to the ask can
		// arrive after the sync's although the control plane took the
		// sync's give-back after it granted the ask. Subtracting only what
		// is pending since the newer answer would count the give-back as
		// held again, allowance the control plane has since granted to
		// others: an overshoot of up to that give-back.
		c.acked = max(c.acked, g.Returned)
		c.granted = max(c.granted, g.Granted-(c.returned-min(g.Returned, c.returned)))
		c.used = max(c.used, g.Used)
		c.reported = max(c.reported, g.Used)
		c.known, c.limit, c.others, c.othersUsed = true, g.Limit, g.Others, g.OthersUsed
		touched = append(touched, c)
	}
	l.record(true, touched...)
}

// Settle turns the reservation into the cost, and reports whether every
// counter was charged all of it. A counter is charged at most what the
// reservation held of it: the bound, which an honest upstream's cost
// never passes (one that reports more is charged the bound, and the
// caller flags it), or a tail admission's estimate and reserve, whose
// part past the estimate is the reserve's for the period. So a ledger's
// spend never passes its grants, whatever an upstream reports. Settling
// twice does nothing (and reports true).
func (r *Reservation) Settle(cost int64) bool {
	if r == nil {
		return true
	}
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	if r.hold {
		// A hold is never charged: its requests are, each on its own.
		r.releaseLocked()
		return cost == 0
	}
	if r.done {
		return true
	}
	r.done = true
	whole := true
	cs := make([]*counter, len(r.held))
	for i, h := range r.held {
		c := h.c
		c.reserved -= h.amount + h.reserve
		c.reserveHeld -= h.reserve
		charge := min(cost, h.amount+h.reserve)
		c.overrun += max(0, charge-h.amount)
		whole = whole && charge == cost
		c.used += charge
		if r.bound > 0 && (c.peakBound == 0 || mulGreater(cost, r.bound, c.peakCost, c.peakBound)) {
			c.peakCost, c.peakBound = min(cost, r.bound), r.bound
		}
		cs[i] = c
	}
	r.l.record(true, cs...)
	return whole
}

// mulGreater says whether a/b > c/d, for non-negative a, c and positive
// b, d, exactly.
func mulGreater(a, b, c, d int64) bool {
	hi1, lo1 := bits.Mul64(uint64(a), uint64(d))
	hi2, lo2 := bits.Mul64(uint64(c), uint64(b))
	return hi1 > hi2 || hi1 == hi2 && lo1 > lo2
}

// Sync lists, for the periodic report to the control plane, every counter
// of the current periods whose used amount changed, that has
// reservations open, or that holds allowance beyond keep (what no reservation holds), or allowance too
// small for a request that missed since the last sync, or allowance of a
// counter no request came to since the last sync (all of it): that
// excess leaves the ledger at once, before it is sent, so it can never be
// spent here and elsewhere both. Counters of past periods are dropped.
func (l *Ledger) Sync(now time.Time, keep func(Claim) int64) []Ask {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Ask
	var touched []*counter
	for id, c := range l.counters {
		if !now.Before(c.end) && c.reserved == 0 {
			delete(l.counters, id)
			continue
		}
		kept := keep(c.claim)
		if c.missed > c.free() || !c.active && c.reserved == 0 {
			kept = 0
		}
		c.missed, c.active = 0, false
		ret := max(0, c.free()-kept)
		if ret > 0 {
			c.granted -= ret
			c.returned += ret
			touched = append(touched, c)
		}
		// A counter with reservations open is reported even when nothing
		// changed: its holder is alive and what it holds is not spent (the
		// control plane counts a holder silent for long as having spent
		// all it holds), which a hold kept for a batch's whole run, or a
		// long stream, would otherwise look like.
		if c.returned == c.acked && c.used == c.reported && c.reserved == 0 {
			continue
		}
		out = append(out, Ask{Counter: id, Claim: c.claim, PeriodStart: c.start, Used: c.used, Returned: c.returned, Moved: ret})
	}
	l.record(false, touched...)
	return out
}

// Synced marks asks from Sync as taken by the control plane.
func (l *Ledger) Synced(asks []Ask) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var touched []*counter
	for _, a := range asks {
		c := l.inPeriod(a.Counter, a.PeriodStart)
		if c == nil {
			continue
		}
		c.acked = max(c.acked, a.Returned)
		c.reported = max(c.reported, a.Used)
		touched = append(touched, c)
	}
	l.record(false, touched...)
}

// Unsent takes back what the Sync that made asks moved out of the
// allowance, when the asks certainly never reached the control plane (it
// could not be dialled): while the control plane is down, allowance given
// back could go to no other data plane, and would only make this one
// refuse requests its leases cover. What earlier, unacknowledged syncs
// moved stays given back: the control plane may have taken it.
func (l *Ledger) Unsent(asks []Ask) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var touched []*counter
	for _, a := range asks {
		c := l.inPeriod(a.Counter, a.PeriodStart)
		if c == nil {
			continue
		}
		// Only if nothing since has counted on it being given back.
		if c.returned == a.Returned && c.returned-c.acked >= a.Moved {
			c.returned -= a.Moved
			c.granted += a.Moved
			touched = append(touched, c)
		}
	}
	l.record(true, touched...)
}

// Drop forgets a counter's period, as when the control plane refuses to
// hear of it (the data plane is no longer enrolled for its organization):
// nothing more is admitted or reported against it from this ledger.
// Reservations still open on it settle into nothing.
func (l *Ledger) Drop(id Counter, start time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inPeriod(id, start) != nil {
		delete(l.counters, id)
	}
}

// State is one counter as this ledger sees it.
type State struct {
	Counter                 Counter
	Start, End              time.Time
	Granted, Used, Reserved int64
}

// States lists the ledger's counters.
func (l *Ledger) States() []State {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]State, 0, len(l.counters))
	for id, c := range l.counters {
		out = append(out, State{Counter: id, Start: c.start, End: c.end, Granted: c.granted, Used: c.used, Reserved: c.reserved})
	}
	return out
}

// Lease is one holder's share of a counter in one period: what it holds
// granted (all it was granted, less what it gave back), the spend it
// reported, and all it gave back.
type Lease struct{ Granted, Used, Returned int64 }

// GrantLease is the control plane's decision for one holder's ask: used
// only grows; what is newly given back (returned is cumulative, so an ask
// received twice returns once) leaves the grant, never below what was
// used; then as much of want is granted as the amount leaves free after
// the seed and every lease (each counting the larger of its grant and its
// spend), unless that is less than need: a piece too small for the
// request that asked is of no use to it, and stays free, where pieces
// other holders give back join it. Since a holder spends only within its
// grant, seed plus the sum of the leases bounds the counter's total
// spend, and the grants never take it past limit.
func GrantLease(limit, seeded int64, others []Lease, mine Lease, want, need, used, returned int64) Lease {
	mine.Used = max(mine.Used, used)
	if returned > mine.Returned {
		mine.Granted -= returned - mine.Returned
		mine.Returned = returned
	}
	// What was spent was held: a grant is never below the spend.
	mine.Granted = max(mine.Granted, mine.Used)
	committed := seeded + mine.Granted
	for _, o := range others {
		committed += max(o.Granted, o.Used)
	}
	if free := limit - committed; free > 0 && want > 0 && free >= need {
		mine.Granted += min(free, want)
	}
	return mine
}
