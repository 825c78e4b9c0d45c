package dataplane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/spend"
	"github.com/gw-gateway/gw/server/tokens"
	"github.com/gw-gateway/gw/wire"
)

// BudgetSource grants budget leases: the control plane, in process (role
// all) or over HTTP (a remote data plane).
type BudgetSource interface {
	Lease(ctx context.Context, holder string, asks []wire.BudgetLeaseAsk) ([]wire.BudgetLeaseGrant, error)
}

// leaseTimeout bounds one lease request; past it the control plane counts
// as unreachable (the leases held are all that may be spent while it does
// not answer).
const leaseTimeout = 3 * time.Second

// DefaultBudgetWait bounds how long a request that does not fit its
// budgets now, but may once reservations in flight settle (here, or on
// other data planes, whose next sync gives back what they did not spend),
// waits for room before it is refused. Streams take seconds; a caller
// waiting that long for an answer is better served than one refused while
// the budget still has room.
const DefaultBudgetWait = 30 * time.Second

// batchLineBudgetWait bounds a batch line's wait for room (reserveFrom).
const batchLineBudgetWait = 5 * time.Second

// askEvery paces a waiting request's asks to the control plane for a
// counter it had nothing more of: other data planes give back every 2 s.
const askEvery = 500 * time.Millisecond

// The input side of a request's cost bound, in tokens. Every token a
// provider bills for text stands for at least one byte of it (byte-level
// BPE; SentencePiece pieces cover at least a character), and the body
// holds all the text (messages, tools, schemas) plus JSON syntax, which
// only adds bytes: the body's length bounds the text's tokens. The JSON
// around each message ({"role":"","content":""}, 25 bytes and more) is
// more than the few tokens a provider frames a message with, so no
// per-message allowance is needed; what providers add once per request
// is (toolFraming), as are what the bytes do not bound: an attachment's
// tokens, and tools whose definitions or results the provider supplies.
const (
	// attachmentTokens is the allowance of an image, audio clip or file:
	// one referenced by URL is not bounded by its bytes, nor is a small
	// file of many pixels or pages. Far above the providers' per-image
	// counts (Anthropic ≤ ~1,600, OpenAI high detail ≤ ~1,100 at 4o's rate).
	attachmentTokens = 50_000
	// toolFramingAnthropic is Anthropic's tool-use system prompt, which
	// it adds to a request with tools: 530 tokens at most (Claude 3 Opus;
	// 346 on the current models).
	toolFramingAnthropic = 600
	// toolFraming is what OpenAI-style providers add around function
	// definitions and structured-output schemas (a namespace header of
	// some 20 tokens; each function's own syntax is shorter than its
	// JSON).
	toolFraming = 100
	// definedToolTokens is a tool whose definition the provider writes
	// (Anthropic's bash 245, text editor 700, computer use 735 and a
	// ~500-token system prompt).
	definedToolTokens = 2_000
	// outputFallback bounds the output of a model whose catalog entry gives
	// neither a maximum output nor a context window.
	outputFallback = 1_000_000
)

// inputShape is what the cost bound needs to know of a request body,
// read once when it arrives.
type inputShape struct {
	bytes int64
	// extra is the tokens the bytes do not bound: attachments, tools the
	// provider defines, tools whose results are billed as input.
	extra int64
	// tools: the request defines tools or an output schema, which
	// providers frame with text of their own.
	tools bool
	// cacheWrite: a cache_control marker lets the request write a prompt
	// cache (Anthropic), billed above the input price; cacheWrite1h: one
	// asks for the one-hour cache, dearer still.
	cacheWrite, cacheWrite1h bool
}

// Content-part and tool types whose tokens the body's bytes do not bound.
var (
	attachmentTypes = map[string]bool{"image_url": true, "input_image": true, "image": true, "input_audio": true,
		"file": true, "input_file": true, "document": true}
	// Tools whose results the provider bills as input: searches, fetched
	// pages, executed code, MCP servers.
	serverToolPrefixes = []string{"web_search", "web_fetch", "code_execution", "code_interpreter", "file_search",
		"image_generation", "mcp", "tool_search", "local_shell", "shell"}
	definedToolPrefixes = []string{"bash_", "text_editor_", "computer_", "computer", "memory_"}
)

// inputShapeOf reads what the bound needs from the body, valid JSON (the
// parse stage checked it): one pass over its strings, the names of
// interest compared as whole strings, no decoding, unless the body hides
// one of them behind \u escapes of ASCII letters (which no encoder
// writes), when it is decoded and walked instead. A string's bytes are
// skipped with IndexByte: a prompt is kilobytes of one string, and a
// search of the body for each name (eight of them) was 5 % of a request
// with a 4 KB prompt (issue 33, ninth round).
func inputShapeOf(body []byte) inputShape {
	s := inputShape{bytes: int64(len(body))}
	var mcp, cache, hour bool
	for i := 0; ; {
		q := bytes.IndexByte(body[i:], '"')
		if q < 0 {
			break
		}
		start := i + q
		end, escaped := stringEnd(body, start)
		if escaped && escapedLetters(body[start:end]) {
			var v any
			if json.Unmarshal(body, &v) == nil {
				s = inputShape{bytes: int64(len(body))}
				walkShape(v, &s)
				return s
			}
		}
		if end-1 <= start {
			break // a quote last, unterminated: no name in it
		}
		i = end
		switch string(body[start+1 : end-1]) {
		case "type":
			if v, ok := memberString(body, end); ok {
				s.extra += typeTokens(v)
			}
		case "tools", "functions", "response_format":
			s.tools = true
		case "mcp_servers":
			s.tools, mcp = true, true
		case "cache_control":
			cache = true
		case "ttl":
			if v, ok := memberString(body, end); ok && v == "1h" {
				hour = true
			}
		}
	}
	if mcp {
		s.extra += attachmentTokens
	}
	if cache {
		s.cacheWrite, s.cacheWrite1h = true, hour
	}
	return s
}

// stringEnd is where the string that opens at body[start] ends (after its
// closing quote, or len(body)), and whether it holds an escape.
func stringEnd(body []byte, start int) (int, bool) {
	escaped := false
	for i := start + 1; ; {
		q := bytes.IndexByte(body[i:], '"')
		if q < 0 {
			return len(body), escaped
		}
		q += i
		if p := bytes.IndexByte(body[i:q], '\\'); p >= 0 {
			escaped = true
			if i += p + 2; i > len(body) {
				return len(body), escaped
			}
			continue
		}
		return q + 1, escaped
	}
}

// memberString is the string value of the member whose name ends at i,
// if i is a name (a colon follows) and its value a string.
func memberString(body []byte, i int) (string, bool) {
	i = skipSpace(body, i)
	if i >= len(body) || body[i] != ':' {
		return "", false
	}
	i = skipSpace(body, i+1)
	if i >= len(body) || body[i] != '"' {
		return "", false
	}
	end, escaped := stringEnd(body, i)
	if end-1 <= i {
		return "", false
	}
	if !escaped {
		return string(body[i+1 : end-1]), true
	}
	// An escaped value: read it whole, as a provider would.
	var v string
	if json.Unmarshal(body[i:end], &v) != nil {
		return "", false
	}
	return v, true
}

// typeTokens is the allowance of a member "type": v.
func typeTokens(v string) int64 {
	if attachmentTypes[v] {
		return attachmentTokens
	}
	for _, p := range serverToolPrefixes {
		if strings.HasPrefix(v, p) {
			return attachmentTokens
		}
	}
	for _, p := range definedToolPrefixes {
		if strings.HasPrefix(v, p) {
			return definedToolTokens
		}
	}
	return 0
}

// hasMember says whether name (quoted) occurs in body as JSON, not inside
// a string, where its quotes would be escaped.
func hasMember(body []byte, name string) bool {
	found := false
	eachOccurrence(body, name, func(int) bool { found = true; return false })
	return found
}

// eachOccurrence calls fn with the offset after each unescaped occurrence
// of quoted, until fn returns false.
func eachOccurrence(body []byte, quoted string, fn func(after int) bool) {
	for i := 0; i < len(body); {
		j := bytes.Index(body[i:], []byte(quoted))
		if j < 0 {
			return
		}
		at := i + j
		i = at + len(quoted)
		if at > 0 && body[at-1] == '\\' {
			continue
		}
		if !fn(i) {
			return
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// escapedLetters says whether body spells an ASCII letter as \u00XX: a
// way to write "type" that the byte scan would miss.
func escapedLetters(body []byte) bool {
	for i := 0; ; {
		j := bytes.Index(body[i:], []byte(`\u00`))
		if j < 0 || i+j+6 > len(body) {
			return false
		}
		i += j + 4
		hi, lo := body[i], body[i+1]|0x20
		if (hi == '4' || hi == '6') && lo >= '1' && lo <= 'f' && (lo <= '9' || lo >= 'a') || (hi == '5' || hi == '7') && lo >= '0' && lo <= 'a' && (lo <= '9' || lo == 'a') {
			return true
		}
	}
}

// walkShape is inputShapeOf on a decoded body.
func walkShape(v any, s *inputShape) {
	switch t := v.(type) {
	case map[string]any:
		for k, m := range t {
			switch k {
			case "type":
				if str, ok := m.(string); ok {
					s.extra += typeTokens(str)
				}
			case "tools", "functions", "response_format":
				s.tools = true
			case "mcp_servers":
				s.tools = true
				s.extra += attachmentTokens
			case "cache_control":
				s.cacheWrite = true
			case "ttl":
				s.cacheWrite1h = s.cacheWrite1h || m == "1h"
			}
			walkShape(m, s)
		}
	case []any:
		for _, m := range t {
			walkShape(m, s)
		}
	}
}

// tokens is the most input tokens the request can be billed for on an
// upstream of kind, at a token a byte of the body (the previous release's
// bound: every token a provider bills for text stands for at least a byte
// of it).
func (s inputShape) tokens(kind catalog.Kind) int64 { return s.framed(s.bytes, kind) }

// framed adds to text, the tokens of the body's text, what the text does
// not bound: attachments, provider-defined tools, a provider's framing of
// tools.
func (s inputShape) framed(text int64, kind catalog.Kind) int64 {
	n := text + s.extra
	if s.tools {
		if kind == catalog.KindAnthropic {
			n += toolFramingAnthropic
		} else {
			n += toolFraming
		}
	}
	return n
}

// outputCap is the most output tokens the route can produce: the request's
// own limit, a request_limits rule's, or the model's maximum, for each of
// the n choices asked for.
func outputCap(rt *route, requested, n int64) int64 {
	var per int64
	switch {
	case rt.maxTokens > 0:
		per = rt.maxTokens
	case requested > 0:
		per = requested
	case rt.model.model.MaxOutputTokens > 0:
		per = rt.model.model.MaxOutputTokens
	case rt.model.model.ContextWindow > 0:
		per = rt.model.model.ContextWindow
	default:
		per = outputFallback
	}
	hi, lo := bits.Mul64(uint64(per), uint64(max(n, 1)))
	if hi > 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(lo)
}

// boundPrices are a model's prices in nano-dollars per million tokens,
// rounded up, as the cost bound uses them: the standard tier's and, above
// its threshold, the long-context tier's (which prices the whole request).
type boundPrices struct {
	standard  catalog.CeilPrices
	long      *catalog.CeilPrices
	longAbove int64
}

func boundPricesOf(p catalog.ParsedPricing) boundPrices {
	b := boundPrices{standard: p.Ceil()}
	if above, long, ok := p.LongContextCeil(); ok {
		b.long, b.longAbove = &long, above
	}
	return b
}

// forRequest is the price per million tokens of the request's input and
// of its output: the long-context tier's when inTokens (the bound's input,
// never below the real one) passes its threshold; input at the input
// price (a cache read is never dearer than the input it replaces), or at
// a cache write's when the request can write a prompt cache, the one-hour
// write's when it asks for one.
func (b boundPrices) forRequest(s inputShape, inTokens int64) (input, output uint64) {
	t := b.tier(inTokens)
	input = max(t.Input, t.CacheRead)
	if s.cacheWrite {
		input = max(input, t.CacheWrite)
		if s.cacheWrite1h {
			input = max(input, t.CacheWrite1h)
		}
	}
	return input, t.Output
}

// tier is the price tier a request of inTokens input is billed at.
func (b boundPrices) tier(inTokens int64) catalog.CeilPrices {
	if b.long != nil && inTokens > b.longAbove {
		return *b.long
	}
	return b.standard
}

// costBound is an upper bound of what the request can cost: inTokens at
// the input price, outTokens at the output price (prices rounded up),
// each product rounded up, and one nano-dollar for the rounding of the
// event's cost. Integer arithmetic in 128 bits: no decimals on the hot
// path, no overflow.
func costBound(inPrice, outPrice uint64, inTokens, outTokens int64) (int64, error) {
	in, err := ceilPerMillion(uint64(max(inTokens, 0)), inPrice)
	if err != nil {
		return 0, err
	}
	out, err := ceilPerMillion(uint64(max(outTokens, 0)), outPrice)
	if err != nil {
		return 0, err
	}
	if in > math.MaxInt64/2 || out > math.MaxInt64/2 {
		return 0, errBoundTooLarge
	}
	return int64(in + out + 1), nil
}

var errBoundTooLarge = errors.New("the request's cost bound does not fit in int64 nano-dollars")

// ceilPerMillion is ceil(tokens × pricePerMillion / 1,000,000).
func ceilPerMillion(tokens, pricePerMillion uint64) (uint64, error) {
	hi, lo := bits.Mul64(tokens, pricePerMillion)
	if hi >= 1_000_000 {
		return 0, errBoundTooLarge
	}
	q, r := bits.Div64(hi, lo, 1_000_000)
	if r > 0 {
		q++
	}
	return q, nil
}

// boundOf is the request's cost bound on rt: its input from a count of
// the body by the model family's counter (exact for OpenAI's encodings, the
// calibrated estimate elsewhere: tokens.CountRequest), each input token at
// its own price class (inputCost), and the output cap at the output price.
func (x *exchange) boundOf(rt *route) (int64, error) {
	outTokens := outputCap(rt, x.req.MaxTokens, x.req.N)
	bound := rt.model.boundFor(x.askedServiceTier())
	switch x.p.budgets.boundMode {
	case boundLegacy:
		return legacyBound(rt, x.input, outTokens)
	case boundBytes:
		inTokens := x.input.tokens(rt.model.kind)
		inPrice, outPrice := bound.forRequest(x.input, inTokens)
		return costBound(inPrice, outPrice, inTokens, outTokens)
	}
	c := tokens.ForModel(rt.model.model.UpstreamModel())
	inTokens := x.input.framed(x.counted(c).Bound, rt.model.kind)
	inPrice, outPrice := bound.forRequest(x.input, inTokens)
	if !x.input.cacheWrite {
		return costBound(inPrice, outPrice, inTokens, outTokens)
	}
	// Only what comes before a prompt's last cache marker can be written
	// to the cache; the messages after it are billed as input.
	t := bound.tier(inTokens)
	after := min(x.afterLastCacheMarker(c), inTokens)
	written, err := costBound(inPrice, outPrice, inTokens-after, outTokens)
	if err != nil {
		return 0, err
	}
	rest, err := ceilPerMillion(uint64(after), max(t.Input, t.CacheRead))
	if err != nil || rest > math.MaxInt64/2 || written > math.MaxInt64/2 {
		return 0, errBoundTooLarge
	}
	return written + int64(rest), nil
}

// counted is the body counted by c, once per counter a request's routes
// need (the bound and, for the exact counters, the floor).
func (x *exchange) counted(c tokens.Counter) tokens.Request {
	if r, ok := x.counts.of(c); ok {
		return r
	}
	r := tokens.CountRequest(c, x.body)
	x.counts.add(c, r)
	return r
}

// bodyCounts is the body counted by each counter a request's routes
// needed: one most often, two for an alias across families. They are kept
// in the exchange itself (a map was two allocations a request) and looked
// up by comparison; a third and more go to spill.
type bodyCounts struct {
	n     int
	first [2]bodyCount
	spill []bodyCount
}

type bodyCount struct {
	c tokens.Counter
	r tokens.Request
}

func (b *bodyCounts) of(c tokens.Counter) (tokens.Request, bool) {
	for i := range min(b.n, len(b.first)) {
		if b.first[i].c == c {
			return b.first[i].r, true
		}
	}
	for _, e := range b.spill {
		if e.c == c {
			return e.r, true
		}
	}
	return tokens.Request{}, false
}

// add keeps c's count; c is not kept already.
func (b *bodyCounts) add(c tokens.Counter, r tokens.Request) {
	if b.n < len(b.first) {
		b.first[b.n] = bodyCount{c, r}
	} else {
		b.spill = append(b.spill, bodyCount{c, r})
	}
	b.n++
}

// largeCacheBody is the body size past which afterLastCacheMarker does not
// look for the last marker.
const largeCacheBody = 1 << 20

// afterLastCacheMarker bounds the tokens of the messages after the last
// one that carries a cache_control marker (all of them when none does): a
// prompt cache is written up to its last marker (tools, system, messages
// in that order), so these are never a cache write.
func (x *exchange) afterLastCacheMarker(c tokens.Counter) int64 {
	if len(x.body) > largeCacheBody {
		// Decoding a body this large would hold a copy of it (issue 27,
		// row 2): every token is bounded as a cache write instead, the
		// dearer class, so the bound only rises.
		return 0
	}
	var top struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if json.Unmarshal(x.body, &top) != nil {
		return 0
	}
	var n int64
	for i := len(top.Messages) - 1; i >= 0; i-- {
		if hasMember(top.Messages[i], `"cache_control"`) {
			break
		}
		n += tokens.CountRequest(c, top.Messages[i]).Bound
	}
	return n
}

// legacyBound is the bound of earlier releases, which the utilisation
// benchmark measures against: 2,000 tokens over the body, every input
// token at the dearest of the input, cache-read and cache-write prices.
func legacyBound(rt *route, s inputShape, outTokens int64) (int64, error) {
	b := rt.model.bound.standard
	return costBound(max(b.Input, b.CacheRead, b.CacheWrite), b.Output, s.bytes+2_000+s.extra, outTokens)
}

// How a plane bounds a request's input (benchmarks measure the earlier
// ones in the same run).
type boundMode int

const (
	// boundCounted: the body counted by the model family's counter.
	boundCounted boundMode = iota
	// boundBytes: a token per body byte (the previous release).
	boundBytes
	// boundLegacy: 2,000 tokens over the body's bytes at the dearest
	// input-side price (earlier releases).
	boundLegacy
)

// claims are the budget counters a routed request counts against, one per
// counter: two rules of a policy with the same period and aggregation
// share one, held to the smaller amount (as the control plane holds it).
func (a *admission) claims(d *policy.Decision) ([]spend.Claim, error) {
	out := make([]spend.Claim, 0, len(d.Budgets))
	for _, b := range d.Budgets {
		limit, err := a.p.budgets.limitNano(b.AmountUSD.Text)
		if err != nil {
			return nil, fmt.Errorf("budget of policy %s: %w", b.PolicyName, err)
		}
		c := spend.Counter{PolicyID: b.PolicyID, Period: spend.Period(b.Period), Aggregation: string(b.Aggregation)}
		if b.Aggregation == policy.AggregationPerKey {
			c.KeyID = a.key.id
		}
		dup := false
		for i := range out {
			if out[i].Counter == c {
				out[i].LimitNano, dup = min(out[i].LimitNano, limit), true
			}
		}
		if !dup {
			out = append(out, spend.Claim{Counter: c, LimitNano: limit, PolicyName: b.PolicyName})
		}
	}
	return out, nil
}

// reserveRoute holds the cost bound of sending the request on rt against
// every budget it counts against (admission.reserve).
func (x *exchange) reserveRoute(rt *route) *response {
	return x.reserve(&rt.decision, func() (int64, error) { return x.boundOf(rt) })
}

// budgetState is a plane's ledger and how it gets leases.
type budgetState struct {
	ledger *spend.Ledger
	source BudgetSource
	holder string
	now    func() time.Time
	// wait bounds a request's wait for room (0: refuse at once).
	wait time.Duration
	// boundMode is how the bound counts input (earlier releases' ways
	// for benchmarks).
	boundMode boundMode
	// limits caches budget amounts parsed into nano-dollars: policies
	// carry them as decimal text, and parsing decimals on every request
	// costs more than the rest of admission.
	limits sync.Map // string → int64

	fetchMu  sync.Mutex
	fetching map[spend.Counter]chan struct{}
	// asked is when each counter was last asked for in vain (the control
	// plane had nothing more): waiting requests ask again after askEvery.
	asked map[spend.Counter]time.Time
}

// limitNano is the budget amount's nano-dollars, read as the control
// plane reads it (catalog.BudgetNanoUSD): an amount an older version
// stored finer than a nano-dollar, or beyond int64 of them, holds as the
// nearest amount below it rather than refusing every request it governs.
func (b *budgetState) limitNano(amount string) (int64, error) {
	if v, ok := b.limits.Load(amount); ok {
		return v.(int64), nil
	}
	n, _, err := catalog.BudgetNanoUSD(amount)
	if err != nil {
		return 0, err
	}
	b.limits.Store(amount, n)
	return n, nil
}

// reserve admits a request of bound against claims. It asks the control
// plane while it may grant more, then waits (at most b.wait, and never
// past the caller's leaving) while what is in flight may still make room,
// and refuses: for good (spend.Spent) when even everything in flight
// settling at nothing would leave too little, else as unreachable, busy or
// unknown.
func (b *budgetState) reserve(ctx context.Context, x *admission, claims []spend.Claim, bound int64, src spend.Source) (*spend.Reservation, error) {
	// A batch line the runner sends draws its share of the batch's hold
	// (batchhold.go), once: a fallback's or an alias's next reservation
	// is its own.
	if bl := x.batchLine; src == (spend.Source{}) && bl != nil && bl.draw != nil && !bl.draw.drawn {
		bl.draw.drawn = true
		if r, _ := b.ledger.ReserveFrom(bl.draw.src, b.now(), claims, bound); r != nil {
			return r, nil
		}
		// Its share does not make it fit now (its bound is above the
		// share, and the rest is taken): the share goes back to the room
		// and the line waits as any request does. Waiting with the share
		// still held would be waiting on room its own batch keeps — the
		// line, and every caller told the room may come back, until the
		// wait ran out.
		bl.draw.src.From.GiveBack(bl.draw.src.Share)
	}
	return b.reserveFrom(ctx, x, claims, bound, src)
}

// reserveFrom is reserve with the room src says (spend.Source): a share
// of a hold drawn in the same step, or a hold made.
func (b *budgetState) reserveFrom(ctx context.Context, x *admission, claims []spend.Claim, bound int64, src spend.Source) (*spend.Reservation, error) {
	now := b.now()
	r, _ := b.ledger.ReserveFrom(src, now, claims, bound)
	if r != nil {
		return r, nil
	}
	// It does not fit now; from here on the request may wait, at most
	// until deadline. A batch line waits a short while only: the runner
	// sends the lines behind it once it is done, and the room it waits for
	// may be what its batches hold for those very lines — every caller
	// told that room may come back waited with it, until the wait ran out
	// (found by the overshoot e2e: a phase stalled its 30 s, 6 % of the
	// budget held). Refused busy, the line fails as a request would.
	wait := b.wait
	if x.batchLine != nil {
		wait = min(wait, batchLineBudgetWait)
	}
	var deadline <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		deadline = t.C
	}
	reachable := b.source != nil
	for {
		now = b.now()
		// Taken before looking, so that no change after the look is missed.
		changed := b.ledger.Changed()
		r, asks := b.ledger.ReserveFrom(src, now, claims, bound)
		if r != nil {
			return r, nil
		}
		outlook := b.ledger.OutlookFrom(src, now, claims, bound, reachable)
		if outlook == spend.OutlookWait && reachable && b.askDue(asks, now) {
			outlook = spend.OutlookAsk
		}
		switch outlook {
		case spend.OutlookFinal:
			reason := spend.Spent
			if !reachable {
				reason = spend.Unreachable
			}
			return nil, b.ledger.RefuseFrom(src, now, claims, bound, reason)
		case spend.OutlookAsk:
			if refusal, refused := b.askLease(ctx, x, asks, src, claims, bound, now, &reachable); refused {
				return nil, refusal
			}
			continue
		}
		if wait <= 0 {
			return nil, b.ledger.RefuseFrom(src, now, claims, bound, spend.Busy)
		}
		if !b.await(ctx, changed, deadline, reachable) {
			reason := spend.Busy
			if !reachable {
				reason = spend.Unreachable
			}
			return nil, b.ledger.RefuseFrom(src, b.now(), claims, bound, reason)
		}
	}
}

// askLease asks the control plane for more of the counters in asks, or
// waits for the ask already in flight: one ask at a time per counter, so
// a burst of requests that do not fit waits and looks again rather than
// each asking for a slice (which would hand one plane the whole budget in
// a burst). It reports a refusal when the request cannot be served;
// otherwise the caller looks again. A control plane that cannot be
// reached sets *reachable to false: the request is served within the
// leases held.
func (b *budgetState) askLease(ctx context.Context, x *admission, asks []spend.Ask, src spend.Source, claims []spend.Claim, bound int64, now time.Time, reachable *bool) (*spend.Refusal, bool) {
	wait, done := b.claimFetch(asks)
	if wait != nil {
		if !b.awaitFetch(ctx, wait) {
			return b.ledger.RefuseFrom(src, b.now(), claims, bound, spend.Unreachable), true
		}
		return nil, false
	}
	err := b.fetch(ctx, asks, bound)
	done()
	switch {
	case errors.Is(err, spend.ErrLeaseRefused):
		x.p.inference.log.Warn("the control plane refused a budget lease", "request_id", x.id, "error", err)
		return b.ledger.RefuseFrom(src, now, claims, bound, spend.Unknown), true
	case err != nil:
		x.p.inference.log.Warn("budget lease refused or unreachable; serving within the leases held", "request_id", x.id, "error", err)
		*reachable = false
	}
	return nil, false
}

// awaitFetch waits for another request's lease ask to end; false when it
// took longer than an ask may, or the caller left.
func (b *budgetState) awaitFetch(ctx context.Context, fetched <-chan struct{}) bool {
	t := time.NewTimer(leaseTimeout)
	defer t.Stop()
	select {
	case <-fetched:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

// await waits for room to change, for the next ask when the control
// plane can be asked, and reports false when the request may wait no
// longer (its time is up, or its caller left).
func (b *budgetState) await(ctx context.Context, changed <-chan struct{}, deadline <-chan time.Time, reachable bool) bool {
	var retry <-chan time.Time
	if reachable {
		t := time.NewTimer(askEvery)
		defer t.Stop()
		retry = t.C
	}
	select {
	case <-changed:
	case <-retry:
	case <-deadline:
		return false
	case <-ctx.Done():
		return false
	}
	return true
}

// askDue says whether a waiting request should ask the control plane
// again: some counter it lacks was not asked for in vain within askEvery.
func (b *budgetState) askDue(asks []spend.Ask, now time.Time) bool {
	b.fetchMu.Lock()
	defer b.fetchMu.Unlock()
	for _, a := range asks {
		if at, ok := b.asked[a.Counter]; !ok || now.Sub(at) >= askEvery || now.Before(at) {
			return true
		}
	}
	return false
}

// fetch asks for the shortfall and a slice more, so the next requests are
// admitted from memory: a tenth of the budget, or this request's bound if
// larger, never more than the control plane has left.
func (b *budgetState) fetch(ctx context.Context, asks []spend.Ask, bound int64) error {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseTimeout)
	defer cancel()
	out := make([]wire.BudgetLeaseAsk, len(asks))
	for i, a := range asks {
		out[i] = leaseAsk(a, a.Want+max(a.Claim.LimitNano/10, bound))
		out[i].NeedNanoUSD = a.Need
	}
	grants, err := b.source.Lease(lctx, b.holder, out)
	if err != nil {
		return err
	}
	gs := fromWireGrants(asks, grants)
	b.ledger.Apply(gs)
	now := b.now()
	b.fetchMu.Lock()
	for _, g := range gs {
		// Whether it had enough for this request or not, a later one may
		// need more than is left: what Outlook says of the counter now
		// stands, until askEvery has passed.
		b.asked[g.Counter] = now
	}
	b.fetchMu.Unlock()
	return nil
}

// claimFetch returns a channel to wait on when one of the asks' counters
// is being fetched already; otherwise it marks them all as being fetched
// and returns the func that ends the fetch.
func (b *budgetState) claimFetch(asks []spend.Ask) (wait <-chan struct{}, done func()) {
	b.fetchMu.Lock()
	defer b.fetchMu.Unlock()
	for _, a := range asks {
		if ch, ok := b.fetching[a.Counter]; ok {
			return ch, nil
		}
	}
	ch := make(chan struct{})
	for _, a := range asks {
		b.fetching[a.Counter] = ch
	}
	return nil, func() {
		b.fetchMu.Lock()
		defer b.fetchMu.Unlock()
		for _, a := range asks {
			delete(b.fetching, a.Counter)
		}
		close(ch)
	}
}

// leaseAsk is a counter's ask: its name and period say the rest, which the
// control plane reads from its own policies.
func leaseAsk(a spend.Ask, want int64) wire.BudgetLeaseAsk {
	return wire.BudgetLeaseAsk{Counter: a.Counter.String(), PeriodStart: a.PeriodStart, WantNanoUSD: want, UsedNanoUSD: a.Used,
		ReturnedNanoUSD: a.Returned}
}

func fromWireGrants(asks []spend.Ask, grants []wire.BudgetLeaseGrant) []spend.Grant {
	byName := make(map[string]spend.Counter, len(asks))
	for _, a := range asks {
		byName[a.Counter.String()] = a.Counter
	}
	out := make([]spend.Grant, 0, len(grants))
	for _, g := range grants {
		if c, ok := byName[g.Counter]; ok {
			out = append(out, spend.Grant{Counter: c, PeriodStart: g.PeriodStart.UTC(), Granted: g.GrantedNanoUSD, Used: g.UsedNanoUSD,
				Returned: g.ReturnedNanoUSD, Limit: g.LimitNanoUSD, Others: g.OthersNanoUSD, OthersUsed: g.OthersUsedNanoUSD})
		}
	}
	return out
}

// SyncBudgets reports spend to the control plane and gives back allowance
// beyond a slice per counter, so other data planes can have it. Run it
// every few seconds; a failed report is retried on the next.
func (p *Plane) SyncBudgets(ctx context.Context) error {
	return p.syncBudgets(ctx, func(c spend.Claim) int64 { return c.LimitNano / 10 })
}

// ReleaseBudgets gives back everything the plane holds and has not spent,
// and reports its spend: the last thing a plane that shuts down in order
// does, once its requests have ended, so a plane that does not come back
// strands nothing. One that does come back with its journal takes up its
// leases where they were.
func (p *Plane) ReleaseBudgets(ctx context.Context) error {
	return p.syncBudgets(ctx, func(spend.Claim) int64 { return 0 })
}

func (p *Plane) syncBudgets(ctx context.Context, keep func(spend.Claim) int64) error {
	b := &p.budgets
	if b.source == nil {
		return nil
	}
	asks := b.ledger.Sync(b.now(), keep)
	if len(asks) == 0 {
		return nil
	}
	err := b.report(ctx, asks)
	if errors.Is(err, spend.ErrLeaseRefused) && len(asks) > 1 {
		// One counter the control plane will not hear of refuses the
		// whole report: send them one by one, and drop those it refuses,
		// so the others' spend still reaches it.
		err = nil
		for _, a := range asks {
			if e := b.report(ctx, []spend.Ask{a}); errors.Is(e, spend.ErrLeaseRefused) {
				p.inference.log.Warn("the control plane refused a budget counter's report; it is dropped", "counter", a.Counter.String(), "error", e)
				b.ledger.Drop(a.Counter, a.PeriodStart)
			} else if e != nil {
				err = e
			}
		}
	} else if errors.Is(err, spend.ErrLeaseRefused) {
		p.inference.log.Warn("the control plane refused a budget counter's report; it is dropped", "counter", asks[0].Counter.String(), "error", err)
		b.ledger.Drop(asks[0].Counter, asks[0].PeriodStart)
		err = nil
	}
	if err != nil {
		return fmt.Errorf("budget sync: %w", err)
	}
	return nil
}

// report sends asks from Sync and records the answer.
func (b *budgetState) report(ctx context.Context, asks []spend.Ask) error {
	out := make([]wire.BudgetLeaseAsk, len(asks))
	for i, a := range asks {
		out[i] = leaseAsk(a, 0)
	}
	grants, err := b.source.Lease(ctx, b.holder, out)
	if err != nil {
		if notSent(err) {
			// Nobody else can have what this plane gives back until the
			// control plane is reachable: keep serving within it.
			b.ledger.Unsent(asks)
		}
		return err
	}
	b.ledger.Synced(asks)
	b.ledger.Apply(fromWireGrants(asks, grants))
	return nil
}

// notSent says err certainly came before any byte of the request left:
// the control plane could not be dialled.
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// budgetRefused is the refusal of a request its budgets cannot take. Only
// a budget whose room is gone for the period says budget_exceeded: 402
// insufficient_quota in OpenAI's shape, with x-should-retry: false and
// Retry-After the seconds until the period resets; /messages answers it
// as Anthropic's billing_error (anthropicError), 402 as well. 402, not
// 429 (issue 35): the OpenAI and Anthropic SDKs honour x-should-retry,
// but the AI SDK retries every 429 twice whatever the headers say, and
// LangChain retries a 429 whose Retry-After is under a minute; every
// client tried sends a 402 once (docs/budgets.md). A refusal that is not a
// budget running out never says so (issue 26 row 2): room held in flight
// longer than a request waits is 429 budget_busy; a counter the control
// plane does not know (a policy or key changed a moment ago), or a
// control plane this gateway cannot reach while its share is spent, is
// 503 budget_unavailable, naming the budget. Each but the first the SDKs
// may retry after a second or two.
func budgetRefused(r *spend.Refusal, now time.Time) *response {
	reset := r.ResetAt.UTC().Format(time.RFC3339)
	retryShortly := headerField{"Retry-After", []string{"2"}}
	switch r.Reason {
	case spend.Unreachable:
		return errorResponse(http.StatusServiceUnavailable, apiError{Message: fmt.Sprintf(
			"Budget unavailable: this gateway cannot reach the control plane, and its share of the budget of policy %q is spent; "+
				"the budget may have room elsewhere. Retry shortly (the budget resets at %s).", r.Claim.PolicyName, reset),
			Type: typeServer, Code: ref("budget_unavailable")}, retryShortly)
	case spend.Unknown:
		return errorResponse(http.StatusServiceUnavailable, apiError{Message: fmt.Sprintf(
			"Budget unavailable: the control plane does not know the budget of policy %q for this request "+
				"(the policy or the key may have changed a moment ago); retry shortly.", r.Claim.PolicyName),
			Type: typeServer, Code: ref("budget_unavailable")}, retryShortly)
	case spend.Busy:
		return errorResponse(http.StatusTooManyRequests, apiError{Message: fmt.Sprintf(
			"Budget busy: the budget of policy %q (%s USD per %s) has no room for this request while requests in flight hold the rest; "+
				"retry shortly. It resets at %s.", r.Claim.PolicyName, usd(r.Claim.LimitNano), r.Claim.Counter.Period, reset),
			Type: "insufficient_quota", Code: ref("budget_busy")}, retryShortly)
	}
	msg := fmt.Sprintf("Budget exceeded: the budget of policy %q (%s USD per %s) has no room for this request; it resets at %s.",
		r.Claim.PolicyName, usd(r.Claim.LimitNano), r.Claim.Counter.Period, reset)
	retry := strconv.FormatInt(max(1, int64(math.Ceil(r.ResetAt.Sub(now).Seconds()))), 10)
	res := errorResponse(http.StatusPaymentRequired, apiError{Message: msg, Type: "insufficient_quota", Code: ref("budget_exceeded")},
		headerField{"X-Should-Retry", []string{"false"}}, headerField{"Retry-After", []string{retry}})
	res.billing = true
	return res
}

var errBudgetUnavailable = errorResponse(http.StatusServiceUnavailable, apiError{
	Message: "The request's budget could not be checked; try again.", Type: typeServer, Code: ref("budget_unavailable"),
})

func usd(nano int64) string { return decimal.New(nano, -9).String() }
