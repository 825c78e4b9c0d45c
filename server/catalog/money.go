package catalog

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"
)

// NanoPerUSD is the number of nano-dollars in a dollar, the unit costs are
// stored in: integers sum exactly on every database, and 1e-9 USD resolves
// a single token of the cheapest model.
const NanoPerUSD = 1_000_000_000

// Tokens counts one request's tokens in the catalog's price classes. The
// four main counts are disjoint (see Pricing): Input excludes the tokens
// read from or written to a prompt cache. CacheWrite1h is the part of
// CacheWrite written with a one-hour TTL, priced at its own rate.
type Tokens struct {
	Input, Output, CacheRead, CacheWrite int64
	CacheWrite1h                         int64
}

// PromptTokens is the whole input the long-context threshold is compared
// with: fresh, read from and written to the cache.
func (t Tokens) PromptTokens() int64 { return t.Input + t.CacheRead + t.CacheWrite }

// CostNanoUSD prices one request: each token count times its per-million
// price, summed exactly and rounded once, half to even, to a whole
// nano-dollar (DESIGN §3). Rounding the sum rather than each term keeps the
// cost of a request independent of how its tokens were split.
//
// It fails on a negative count (or a one-hour write count above the cache
// writes it is part of), a price that is not a decimal string, or a cost
// beyond int64 (about 9.2 billion USD).
func (p Pricing) CostNanoUSD(t Tokens) (int64, error) {
	pp, err := p.Parse()
	if err != nil {
		return 0, err
	}
	return pp.CostNanoUSD(t)
}

// The price classes of a tier, in the order tierPrices keeps them.
const (
	classInput = iota
	classOutput
	classCacheRead
	classCacheWrite
	classCacheWrite1h
	numClasses
)

// ParsedPricing is a Pricing read into exact decimals once, for a path that
// prices many requests (the data plane parses at admission, not per call).
type ParsedPricing struct {
	standard tierPrices
	// long is the long-context tier, used above longAbove prompt tokens;
	// nil without one.
	long      *tierPrices
	longAbove int64
	// serviceTier is the service tier these prices are ("" for the base
	// pricing, the standard tier); tiers are the service tiers' own, by
	// name, on the base only.
	serviceTier string
	tiers       []ParsedPricing
	// batch are the catalog's own batch prices (pricing.batch), nil when
	// it has none; priceClass is "batch" on the pricing ForBatch returns.
	batch      *tierPrices
	priceClass string
}

// tierPrices are one tier's prices by class.
type tierPrices struct {
	// text is each price as the catalog writes it (for the record of what
	// a request was charged at); the one-hour write price falls back to the
	// five-minute one.
	text   [numClasses]string
	prices [numClasses]decimal.Decimal
	names  [numClasses]string
	// nanoPerMTok are the prices in nano-dollars per million tokens, exact
	// integers, when integral says every price is one (at most nine
	// fractional digits, below ~$18 billion): CostNanoUSD then prices a
	// request in 128-bit integers, with the decimals only as the fallback.
	nanoPerMTok [numClasses]uint64
	integral    bool
}

// Parse reads the prices of every tier.
func (p Pricing) Parse() (ParsedPricing, error) {
	std, err := parseTier("", p.fields(), p.CacheWrite1hPerMTok)
	if err != nil {
		return ParsedPricing{}, err
	}
	pp := ParsedPricing{standard: std}
	if lc := p.LongContext; lc != nil {
		long, err := parseTier("long_context.", lc.fields(), lc.CacheWrite1hPerMTok)
		if err != nil {
			return ParsedPricing{}, err
		}
		if lc.AboveInputTokens <= 0 {
			return ParsedPricing{}, fmt.Errorf("catalog: pricing.long_context.above_input_tokens must be greater than 0, got %d", lc.AboveInputTokens)
		}
		pp.long, pp.longAbove = &long, lc.AboveInputTokens
	}
	for _, name := range sortedTierNames(p.ServiceTiers) {
		if !slices.Contains(serviceTierNames, name) {
			return ParsedPricing{}, fmt.Errorf("catalog: pricing.service_tiers: %q is not a service tier", name)
		}
		tp, err := p.ServiceTiers[name].pricing().Parse()
		if err != nil {
			return ParsedPricing{}, fmt.Errorf("catalog: pricing.service_tiers.%s: %w", name, err)
		}
		tp.serviceTier = name
		pp.tiers = append(pp.tiers, tp)
	}
	if b := p.Batch; b != nil {
		fields := [4]priceField{{"batch.input_per_mtok", b.InputPerMTok}, {"batch.output_per_mtok", b.OutputPerMTok},
			{"batch.cache_read_per_mtok", b.CacheReadPerMTok}, {"cache_write_per_mtok", p.CacheWritePerMTok}}
		batch, err := parseTier("", fields, p.CacheWrite1hPerMTok)
		if err != nil {
			return ParsedPricing{}, err
		}
		pp.batch = &batch
	}
	return pp, nil
}

// ForBatch is the pricing of a batch line at a provider of kind: the
// catalog's own batch prices when it has them (pricing.batch), else the
// kind's published discount off every price of the base pricing and its
// long-context tier (BatchDiscountPercent), else the base pricing. A batch
// line has no service tier. Its PriceClass is "batch" in every case, so
// the line's event says which prices applied.
func (pp ParsedPricing) ForBatch(kind Kind) ParsedPricing {
	out := ParsedPricing{standard: pp.standard, long: pp.long, longAbove: pp.longAbove, priceClass: PriceClassBatch}
	if pp.batch != nil {
		out.standard, out.long, out.longAbove = *pp.batch, nil, 0
		return out
	}
	pct := BatchDiscountPercent(kind)
	if pct == 0 {
		return out
	}
	out.standard = pp.standard.discounted(pct)
	if pp.long != nil {
		long := pp.long.discounted(pct)
		out.long = &long
	}
	return out
}

// PriceClass is "batch" for a batch line's pricing (ForBatch), else "".
func (pp ParsedPricing) PriceClass() string { return pp.priceClass }

// discounted is tp at pct percent off, exactly: the decimal text of each
// price times (100-pct)/100 (half of "0.075" is "0.0375"), parsed again so
// the integer fast path holds wherever the result allows it.
func (tp tierPrices) discounted(pct int64) tierPrices {
	factor := decimal.NewFromInt(100 - pct).Shift(-2)
	out := tp
	out.integral = true
	for i := range tp.prices {
		price := tp.prices[i].Mul(factor)
		out.prices[i], out.text[i] = price, price.String()
		n, ok := exactNanoPerMTok(out.text[i])
		out.nanoPerMTok[i] = n
		out.integral = out.integral && ok
	}
	return out
}

// ForServiceTier is the pricing of the named service tier: its own
// prices when the catalog has them, else the base pricing (the standard
// tier, and any tier the catalog does not price, such as "default",
// "auto" or "scale").
func (pp ParsedPricing) ForServiceTier(name string) ParsedPricing {
	for _, t := range pp.tiers {
		if t.serviceTier == name {
			return t
		}
	}
	return pp
}

// Asked is the pricing a request that asks for tier can be billed at:
// the base pricing and, when the catalog prices tier, that tier's (the
// answer may name either). Its Ceil and LongContextCeil bound both.
func (pp ParsedPricing) Asked(tier string) ParsedPricing {
	out := pp
	out.tiers = nil
	for _, t := range pp.tiers {
		if t.serviceTier == tier {
			out.tiers = []ParsedPricing{t}
		}
	}
	return out
}

// ServiceTier is the service tier these prices are: "" for the base.
func (pp ParsedPricing) ServiceTier() string { return pp.serviceTier }

func parseTier(prefix string, fields [4]priceField, write1h string) (tierPrices, error) {
	var tp tierPrices
	all := [numClasses]priceField{fields[0], fields[1], fields[2], fields[3], {"cache_write_1h_per_mtok", write1h}}
	if write1h == "" {
		all[classCacheWrite1h].value = fields[3].value
	}
	for i, f := range all {
		price, err := parsePrice(f.value)
		if err != nil {
			return tierPrices{}, fmt.Errorf("catalog: pricing.%s%s: %w", prefix, f.name, err)
		}
		tp.text[i], tp.prices[i], tp.names[i] = f.value, price, prefix+f.name
	}
	tp.integral = true
	for i, f := range all {
		n, ok := exactNanoPerMTok(f.value)
		tp.nanoPerMTok[i] = n
		tp.integral = tp.integral && ok
	}
	return tp, nil
}

// tier is the tier a request of t is priced at.
func (pp *ParsedPricing) tier(t Tokens) *tierPrices {
	if pp.long != nil && t.PromptTokens() > pp.longAbove {
		return pp.long
	}
	return &pp.standard
}

// Applied are the prices a request was charged at, as the catalog writes
// them, for the record of its usage event.
type Applied struct {
	// LongContext: the request's input passed the long-context threshold,
	// so the long-context tier's prices applied.
	LongContext                                                      bool
	InputPerMTok, OutputPerMTok, CacheReadPerMTok, CacheWritePerMTok string
	CacheWrite1hPerMTok                                              string
	// ServiceTier is the service tier whose prices applied; "" for the
	// base (standard) pricing.
	ServiceTier string
}

// AppliedTo returns the prices a request of t is charged at.
func (pp ParsedPricing) AppliedTo(t Tokens) Applied {
	tp := pp.tier(t)
	return Applied{LongContext: tp != &pp.standard, ServiceTier: pp.serviceTier,
		InputPerMTok: tp.text[classInput], OutputPerMTok: tp.text[classOutput], CacheReadPerMTok: tp.text[classCacheRead],
		CacheWritePerMTok: tp.text[classCacheWrite], CacheWrite1hPerMTok: tp.text[classCacheWrite1h]}
}

// counts splits t into the tier's classes: the one-hour writes leave the
// five-minute ones.
func (t Tokens) counts() ([numClasses]int64, error) {
	if t.CacheWrite1h < 0 || t.CacheWrite1h > max(t.CacheWrite, 0) {
		return [numClasses]int64{}, fmt.Errorf("catalog: one-hour cache writes %d are not part of the %d cache writes", t.CacheWrite1h, t.CacheWrite)
	}
	return [numClasses]int64{t.Input, t.Output, t.CacheRead, t.CacheWrite - t.CacheWrite1h, t.CacheWrite1h}, nil
}

// exactNanoPerMTok reads a price (a valid decimal string) as an exact
// integer of nano-dollars per million tokens; ok is false when it has
// more than nine fractional digits that matter, or does not fit a uint64.
func exactNanoPerMTok(s string) (uint64, bool) {
	whole, frac, _ := strings.Cut(s, ".")
	frac = strings.TrimRight(frac, "0")
	if len(frac) > 9 {
		return 0, false
	}
	w, err := strconv.ParseUint(whole, 10, 64)
	if err != nil {
		return 0, false
	}
	var f uint64
	if frac != "" {
		f, _ = strconv.ParseUint(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
	}
	hi, lo := bits.Mul64(w, NanoPerUSD)
	lo, carry := bits.Add64(lo, f, 0)
	if hi != 0 || carry != 0 {
		return 0, false
	}
	return lo, true
}

// CostNanoUSD is Pricing.CostNanoUSD on parsed prices.
//
// It runs on every request. With integral prices (all real ones) the cost
// is Σ price × tokens in nano-dollars per million tokens, summed exactly
// in 128 bits and divided by 10⁶ with the remainder rounded half to even:
// the decimal computation's result, without its allocations (held equal
// to it by TestCostNanoUSDIntegerMatchesDecimal).
func (pp ParsedPricing) CostNanoUSD(t Tokens) (int64, error) {
	tp := pp.tier(t)
	counts, err := t.counts()
	if err != nil {
		return 0, err
	}
	if !tp.integral {
		return tp.costNanoUSDDecimal(counts)
	}
	var hi, lo uint64
	overflow := false
	for i, price := range tp.nanoPerMTok {
		if counts[i] < 0 {
			return 0, fmt.Errorf("catalog: negative token count %d for %s", counts[i], tp.names[i])
		}
		ph, pl := bits.Mul64(price, uint64(counts[i]))
		var c uint64
		lo, c = bits.Add64(lo, pl, 0)
		hi, c = bits.Add64(hi, ph, c)
		overflow = overflow || c != 0
	}
	const perMillion = 1_000_000
	// A quotient of 2⁶⁴ or more (hi ≥ 10⁶) is beyond int64 anyway.
	if overflow || hi >= perMillion {
		return 0, errCostOverflow
	}
	q, r := bits.Div64(hi, lo, perMillion)
	if 2*r > perMillion || (2*r == perMillion && q&1 == 1) {
		q++
	}
	if q > math.MaxInt64 {
		return 0, errCostOverflow
	}
	return int64(q), nil
}

var errCostOverflow = errors.New("catalog: cost does not fit in int64 nano-dollars")

// costNanoUSDDecimal is CostNanoUSD in exact decimals, for prices finer
// than a nano-dollar per million tokens or beyond uint64.
func (tp *tierPrices) costNanoUSDDecimal(counts [numClasses]int64) (int64, error) {
	total := decimal.Zero
	for i, price := range tp.prices {
		if counts[i] < 0 {
			return 0, fmt.Errorf("catalog: negative token count %d for %s", counts[i], tp.names[i])
		}
		total = total.Add(price.Mul(decimal.NewFromInt(counts[i])))
	}
	// USD per 1e6 tokens × tokens = 1e-6 USD units; 1e-6 USD is 1e3 nano.
	nano := total.Shift(3).RoundBank(0)
	n := nano.BigInt()
	if !n.IsInt64() {
		return 0, errCostOverflow
	}
	return n.Int64(), nil
}

func parsePrice(s string) (decimal.Decimal, error) {
	if msg, _ := priceProblem(s); msg != "" {
		return decimal.Decimal{}, errors.New(msg)
	}
	return decimal.NewFromString(s)
}

// FormatNanoUSD renders nano-dollars as a USD decimal string for the wire
// (cost_usd): the shortest exact form, with no trailing fractional zeros and
// no exponent. 123450 → "0.00012345", 1_500_000_000 → "1.5",
// 2_000_000_000 → "2", 0 → "0", -5 → "-0.000000005".
func FormatNanoUSD(n int64) string {
	// Through uint64 so that math.MinInt64 negates without overflow.
	u := uint64(n)
	sign := ""
	if n < 0 {
		u, sign = -u, "-"
	}
	whole, frac := u/NanoPerUSD, u%NanoPerUSD
	// Built in one buffer on the stack: a usage event formats its cost on
	// every request (one allocation, the string).
	var buf [40]byte
	b := append(buf[:0], sign...)
	b = strconv.AppendUint(b, whole, 10)
	if frac != 0 {
		b = append(b, '.')
		for d := uint64(NanoPerUSD / 10); d > 0 && frac > 0; d /= 10 {
			b = append(b, byte('0'+frac/d))
			frac %= d
		}
	}
	return string(b)
}

// ParseNanoUSD is the inverse of FormatNanoUSD, for USD amounts operators
// write (budgets, ceilings): an optional "-", digits, and at most nine
// fractional digits that matter. Trailing zeros beyond the ninth place are
// accepted; anything finer than a nano-dollar is refused rather than
// rounded, since a silently rounded limit is a wrong limit.
func ParseNanoUSD(s string) (int64, error) {
	body, neg := strings.CutPrefix(s, "-")
	if len(body) > maxPriceLen || !isDecimal(body) {
		return 0, fmt.Errorf("catalog: %q is not a decimal USD amount", s)
	}
	whole, frac, _ := strings.Cut(body, ".")
	frac = strings.TrimRight(frac, "0")
	if len(frac) > 9 {
		return 0, fmt.Errorf("catalog: %q is finer than a nano-dollar (1e-9 USD)", s)
	}
	w, err := strconv.ParseUint(whole, 10, 64)
	if err != nil || w > math.MaxInt64/NanoPerUSD+1 {
		return 0, fmt.Errorf("catalog: %q does not fit in int64 nano-dollars", s)
	}
	var f uint64
	if frac != "" {
		f, _ = strconv.ParseUint(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
	}
	u := w*NanoPerUSD + f
	limit := uint64(math.MaxInt64)
	if neg {
		limit++ // -math.MinInt64 is one more than math.MaxInt64
	}
	if u > limit {
		return 0, fmt.Errorf("catalog: %q does not fit in int64 nano-dollars", s)
	}
	if neg {
		return int64(-u), nil
	}
	return int64(u), nil
}

// BudgetNanoUSD is what a budget of amount (a decimal string, as a stored
// policy holds it) enforces, in nano-dollars: the amount itself when
// ParseNanoUSD reads it, else the amount rounded down to a whole
// nano-dollar and at most math.MaxInt64 (about 9.2 billion USD), so never
// more than was written and never a nano-dollar less, short of that
// ceiling. exact says whether it is the amount itself; err is for text
// that is not a decimal at all.
//
// Saving such an amount is refused now (validate.BudgetUSD), but older
// versions stored them, and a budget that could not be read refused every
// request it held: a whole workspace stopped serving (docs/decisions.md,
// "Values gw stores"). The control plane and the data plane both read
// budgets through it, so they agree on the amount.
func BudgetNanoUSD(amount string) (n int64, exact bool, err error) {
	if !decimalRE.MatchString(amount) {
		return 0, false, fmt.Errorf("catalog: %q is not a decimal USD amount", amount)
	}
	if n, err := ParseNanoUSD(amount); err == nil {
		return n, true, nil
	}
	whole, frac, _ := strings.Cut(amount, ".")
	whole = strings.TrimLeft(whole, "0")
	frac = (frac + strings.Repeat("0", 9))[:9]
	w, err := strconv.ParseUint(cmp.Or(whole, "0"), 10, 64)
	if err != nil || w > math.MaxInt64/NanoPerUSD {
		return math.MaxInt64, false, nil
	}
	f, _ := strconv.ParseUint(frac, 10, 64)
	if u := w*NanoPerUSD + f; u <= math.MaxInt64 {
		return int64(u), false, nil
	}
	return math.MaxInt64, false, nil
}

// CeilPrices are a tier's prices in nano-dollars per million tokens,
// rounded up: integers that an upper bound of a request's cost can be
// computed with, without decimals. A price too large for that (above ~$18
// billion per million tokens) is the largest value.
type CeilPrices struct{ Input, Output, CacheRead, CacheWrite, CacheWrite1h uint64 }

// Ceil is CeilPrices of the standard tier, class by class the dearest of
// the base pricing's and every service tier's it holds (all of them, or
// those a request asked for: Asked): a request is never billed above it.
func (pp ParsedPricing) Ceil() CeilPrices {
	out := pp.standard.ceil()
	for _, t := range pp.tiers {
		out = out.max(t.standard.ceil())
	}
	return out
}

// LongContextCeil is CeilPrices of the long-context tier and the prompt
// size above which it applies; ok is false without one. With service
// tiers it bounds them all: the lowest of their thresholds, and above it
// the dearest price of any tier, long-context or not.
func (pp ParsedPricing) LongContextCeil() (above int64, prices CeilPrices, ok bool) {
	for _, t := range append([]ParsedPricing{pp}, pp.tiers...) {
		if t.long == nil {
			continue
		}
		if !ok || t.longAbove < above {
			above = t.longAbove
		}
		prices, ok = prices.max(t.long.ceil()), true
	}
	if !ok {
		return 0, CeilPrices{}, false
	}
	return above, prices.max(pp.Ceil()), true
}

// max is the dearer of c and o, class by class.
func (c CeilPrices) max(o CeilPrices) CeilPrices {
	return CeilPrices{Input: max(c.Input, o.Input), Output: max(c.Output, o.Output), CacheRead: max(c.CacheRead, o.CacheRead),
		CacheWrite: max(c.CacheWrite, o.CacheWrite), CacheWrite1h: max(c.CacheWrite1h, o.CacheWrite1h)}
}

func (tp *tierPrices) ceil() CeilPrices {
	var out [numClasses]uint64
	limit := decimal.NewFromUint64(math.MaxUint64)
	for i, p := range tp.prices {
		n := p.Shift(9).Ceil()
		if n.GreaterThan(limit) {
			out[i] = math.MaxUint64
			continue
		}
		out[i] = n.BigInt().Uint64()
	}
	return CeilPrices{Input: out[classInput], Output: out[classOutput], CacheRead: out[classCacheRead],
		CacheWrite: out[classCacheWrite], CacheWrite1h: out[classCacheWrite1h]}
}
