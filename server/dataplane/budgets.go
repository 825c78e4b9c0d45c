package dataplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/spend"
	"github.com/gw-gateway/gw/wire"
)

// BudgetSource grants budget leases: the control plane, in process (role
// all) or over HTTP (a remote data plane).
type BudgetSource interface {
	Lease(ctx context.Context, holder string, asks []wire.BudgetLeaseAsk) ([]wire.BudgetLeaseGrant, error)
}

// leaseTimeout bounds a request's wait for a lease; past it the request
// is refused as if the budget were spent (the leases held are all that may
// be spent while the control plane does not answer).
const leaseTimeout = 3 * time.Second

// The input side of a request's cost bound, in tokens. A token stands for
// at least one byte of the text it encodes, so the request body's length
// bounds the tokens of everything written in it (messages, tools, schemas:
// the JSON around them only adds bytes). What the provider adds around the
// text (message framing, a tool-use system prompt) gets requestOverhead;
// an image or file that is referenced rather than inlined is not bounded
// by its bytes and gets attachmentTokens each.
const (
	requestOverhead  = 2_000
	attachmentTokens = 50_000
	// outputFallback bounds the output of a model whose catalog entry gives
	// neither a maximum output nor a context window.
	outputFallback = 1_000_000
)

var attachmentMarkers = [][]byte{[]byte(`"image_url"`), []byte(`"input_audio"`), []byte(`"file"`)}

// inputBound is the most input tokens body can be billed for.
func inputBound(body []byte) int64 {
	n := int64(len(body)) + requestOverhead
	for _, m := range attachmentMarkers {
		n += int64(bytes.Count(body, m)) * attachmentTokens
	}
	return n
}

// outputCap is the most output tokens the route can produce: the request's
// own limit, a request_limits rule's, or the model's maximum.
func outputCap(rt *route, requested int64) int64 {
	switch {
	case rt.maxTokens > 0:
		return rt.maxTokens
	case requested > 0:
		return requested
	case rt.model.model.MaxOutputTokens > 0:
		return rt.model.model.MaxOutputTokens
	case rt.model.model.ContextWindow > 0:
		return rt.model.model.ContextWindow
	}
	return outputFallback
}

// boundPrices are a model's prices in nano-dollars per million tokens,
// rounded up: the dearest of its input, cache-read and cache-write prices,
// and its output price.
type boundPrices struct{ input, output uint64 }

func boundPricesOf(p catalog.ParsedPricing) boundPrices {
	n := p.CeilNanoPerMTok() // input, output, cache read, cache write
	return boundPrices{input: max(n[0], n[2], n[3]), output: n[1]}
}

// costBound is an upper bound of what the request can cost on rt: every
// input token at the dearest input-side price, every possible output token
// at the output price (prices rounded up), each product rounded up, and
// one nano-dollar for the rounding of the event's cost. Integer arithmetic
// in 128 bits: no decimals on the hot path, no overflow.
func costBound(rt *route, inTokens, outTokens int64) (int64, error) {
	p := rt.model.bound
	in, err := ceilPerMillion(uint64(max(inTokens, 0)), p.input)
	if err != nil {
		return 0, err
	}
	out, err := ceilPerMillion(uint64(max(outTokens, 0)), p.output)
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

// claims are the budget counters a routed request counts against.
func (x *exchange) claims(d policy.Decision) ([]spend.Claim, error) {
	out := make([]spend.Claim, 0, len(d.Budgets))
	for _, b := range d.Budgets {
		limit, err := x.p.budgets.limitNano(b.AmountUSD.Text)
		if err != nil {
			return nil, fmt.Errorf("budget of policy %s: %w", b.PolicyName, err)
		}
		c := spend.Counter{PolicyID: b.PolicyID, Period: spend.Period(b.Period), Aggregation: string(b.Aggregation)}
		if b.Aggregation == policy.AggregationPerKey {
			c.KeyID = x.key.id
		}
		out = append(out, spend.Claim{Counter: c, LimitNano: limit, PolicyName: b.PolicyName})
	}
	return out, nil
}

// reserve holds the cost bound of sending the request on rt against every
// budget it counts against, asking the control plane for leases when the
// ones held fall short. A refusal names the budget and when it resets.
func (x *exchange) reserve(rt *route) *response {
	if len(rt.decision.Budgets) == 0 {
		return nil
	}
	claims, err := x.claims(rt.decision)
	if err == nil {
		var bound int64
		if bound, err = costBound(rt, x.inputTokens, outputCap(rt, x.req.MaxTokens)); err == nil {
			x.budget, err = x.p.budgets.reserve(x.r.Context(), x, claims, bound)
		}
	}
	if refusal, ok := err.(*spend.Refusal); ok {
		return budgetExceeded(refusal)
	}
	if err != nil {
		x.p.inference.log.Error("budget admission", "request_id", x.id, "error", err)
		return errBudgetUnavailable
	}
	return nil
}

// budgetState is a plane's ledger and how it gets leases.
type budgetState struct {
	ledger *spend.Ledger
	source BudgetSource
	holder string
	now    func() time.Time
	// limits caches budget amounts parsed into nano-dollars: policies
	// carry them as decimal text, and parsing decimals on every request
	// costs more than the rest of admission.
	limits sync.Map // string → int64

	fetchMu  sync.Mutex
	fetching map[spend.Counter]chan struct{}
}

func (b *budgetState) limitNano(amount string) (int64, error) {
	if v, ok := b.limits.Load(amount); ok {
		return v.(int64), nil
	}
	n, err := catalog.ParseNanoUSD(amount)
	if err != nil {
		return 0, err
	}
	b.limits.Store(amount, n)
	return n, nil
}

func (b *budgetState) reserve(ctx context.Context, x *exchange, claims []spend.Claim, bound int64) (*spend.Reservation, error) {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseTimeout)
	defer cancel()
	for {
		now := b.now()
		r, asks := b.ledger.Reserve(now, claims, bound)
		if r != nil {
			return r, nil
		}
		if b.source == nil {
			return nil, b.ledger.Refuse(now, claims, bound, true)
		}
		// One ask at a time per counter: a burst of requests that do not
		// fit waits for the ask in flight and looks again, rather than
		// each asking for a slice (which would hand one plane the whole
		// budget in a burst).
		wait, done := b.claimFetch(asks)
		if wait != nil {
			select {
			case <-wait:
				continue
			case <-lctx.Done():
				return nil, b.ledger.Refuse(now, claims, bound, true)
			}
		}
		err := b.fetch(lctx, x, asks, bound)
		done()
		if err != nil {
			x.p.inference.log.Warn("budget lease refused or unreachable; serving within the leases held", "request_id", x.id, "error", err)
			return nil, b.ledger.Refuse(now, claims, bound, true)
		}
		if r, _ := b.ledger.Reserve(now, claims, bound); r != nil {
			return r, nil
		}
		return nil, b.ledger.Refuse(now, claims, bound, false)
	}
}

// fetch asks for the shortfall and a slice more, so the next requests are
// admitted from memory: a tenth of the budget, or this request's bound if
// larger, never more than the control plane has left.
func (b *budgetState) fetch(ctx context.Context, x *exchange, asks []spend.Ask, bound int64) error {
	out := make([]wire.BudgetLeaseAsk, len(asks))
	for i, a := range asks {
		out[i] = x.leaseAsk(a, a.Want+max(a.Claim.LimitNano/10, bound))
	}
	grants, err := b.source.Lease(ctx, b.holder, out)
	if err != nil {
		return err
	}
	b.ledger.Apply(fromWireGrants(asks, grants))
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

// leaseAsk describes a counter to the control plane, with the scope its
// seed is counted over.
func (x *exchange) leaseAsk(a spend.Ask, want int64) wire.BudgetLeaseAsk {
	out := wire.BudgetLeaseAsk{Counter: a.Counter.String(), OrgID: x.key.org.orgID, WorkspaceID: x.key.workspace,
		PolicyID: a.Counter.PolicyID, PolicyName: a.Claim.PolicyName, Period: string(a.Counter.Period), PeriodStart: a.PeriodStart,
		LimitNanoUSD: a.Claim.LimitNano, WantNanoUSD: want, UsedNanoUSD: a.Used, ReturnedNanoUSD: a.Returned}
	if a.Counter.Aggregation == string(policy.AggregationPerKey) {
		id := a.Counter.KeyID
		out.InferenceKeyID = &id
	}
	for _, p := range x.key.policies {
		if p.ID != a.Counter.PolicyID {
			continue
		}
		switch t := p.Definition.Target; t.Kind {
		case policy.TargetSelectedUsers:
			out.OwnerIDs = append([]uuid.UUID{}, t.UserIDs...)
		case policy.TargetSelectedKeys:
			out.KeyIDs = []uuid.UUID{}
			for _, s := range t.KeyIDs {
				if id, err := uuid.Parse(s); err == nil {
					out.KeyIDs = append(out.KeyIDs, id)
				}
			}
		}
		// Seed with the models of the plane's budget rules of this counter;
		// a rule matching all requests needs no model filter.
		var models []string
		all := false
		for _, r := range p.Definition.Rules {
			if r.Action.Kind != policy.ActionBudget || string(r.Action.Period) != string(a.Counter.Period) ||
				string(r.Action.Aggregation) != a.Counter.Aggregation {
				continue
			}
			if r.Match.Kind != policy.MatchRequest || len(r.Match.Models) == 0 {
				all = true
			}
			models = append(models, r.Match.Models...)
		}
		if !all {
			out.Models = models
		}
	}
	return out
}

func fromWireGrants(asks []spend.Ask, grants []wire.BudgetLeaseGrant) []spend.Grant {
	byName := make(map[string]spend.Counter, len(asks))
	for _, a := range asks {
		byName[a.Counter.String()] = a.Counter
	}
	out := make([]spend.Grant, 0, len(grants))
	for _, g := range grants {
		if c, ok := byName[g.Counter]; ok {
			out = append(out, spend.Grant{Counter: c, PeriodStart: g.PeriodStart.UTC(), Granted: g.GrantedNanoUSD, Used: g.UsedNanoUSD, Returned: g.ReturnedNanoUSD})
		}
	}
	return out
}

// SyncBudgets reports spend to the control plane and gives back allowance
// beyond a slice per counter, so other data planes can have it. Run it
// every few seconds; a failed report is retried on the next.
func (p *Plane) SyncBudgets(ctx context.Context) error {
	b := &p.budgets
	if b.source == nil {
		return nil
	}
	asks := b.ledger.Sync(b.now(), func(c spend.Claim) int64 { return c.LimitNano / 10 })
	if len(asks) == 0 {
		return nil
	}
	out := make([]wire.BudgetLeaseAsk, len(asks))
	for i, a := range asks {
		out[i] = wire.BudgetLeaseAsk{Counter: a.Counter.String(), OrgID: uuid.Nil, PolicyID: a.Counter.PolicyID,
			PolicyName: a.Claim.PolicyName, Period: string(a.Counter.Period), PeriodStart: a.PeriodStart,
			LimitNanoUSD: a.Claim.LimitNano, UsedNanoUSD: a.Used, ReturnedNanoUSD: a.Returned}
	}
	if _, err := b.source.Lease(ctx, b.holder, out); err != nil {
		if notSent(err) {
			// Nobody else can have what this plane gives back until the
			// control plane is reachable: keep serving within it.
			b.ledger.Unsent(asks)
		}
		return fmt.Errorf("budget sync: %w", err)
	}
	b.ledger.Synced(asks)
	return nil
}

// notSent says err certainly came before any byte of the request left:
// the control plane could not be dialled.
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// budgetExceeded is the refusal of a request that no budget lease can
// cover: 429 in OpenAI's shape, naming the budget's policy and when its
// period resets.
func budgetExceeded(r *spend.Refusal) *response {
	msg := fmt.Sprintf("Budget exceeded: the budget of policy %q (%s USD per %s) has no room for this request; it resets at %s.",
		r.Claim.PolicyName, usd(r.Claim.LimitNano), r.Claim.Counter.Period, r.ResetAt.UTC().Format(time.RFC3339))
	if r.Unreachable {
		msg = fmt.Sprintf("Budget exceeded: the budget of policy %q cannot admit this request while the control plane is unreachable and this gateway's share is spent; it resets at %s.",
			r.Claim.PolicyName, r.ResetAt.UTC().Format(time.RFC3339))
	}
	return errorResponse(http.StatusTooManyRequests, apiError{Message: msg, Type: "insufficient_quota", Code: ref("budget_exceeded")})
}

var errBudgetUnavailable = errorResponse(http.StatusServiceUnavailable, apiError{
	Message: "The request's budget could not be checked; try again.", Type: typeServer, Code: ref("budget_unavailable"),
})

func usd(nano int64) string { return decimal.New(nano, -9).String() }
