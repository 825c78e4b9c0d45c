package usage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// ExplainOptions configure gw usage explain.
type ExplainOptions struct {
	IO        *cmdutil.IOStreams
	Client    func() (*client.Client, cmdutil.Settings, error)
	RequestID string
	Output    cmdutil.Output
}

// NewCmdExplain builds `gw usage explain`, the provenance of one
// request's cost.
func NewCmdExplain(f *cmdutil.Factory, runF func(context.Context, *ExplainOptions) error) *cobra.Command {
	opts := &ExplainOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "explain REQUEST_ID [-o table|json|yaml]",
		Short: "Explain one request's cost: key, policies, attempts, tokens × prices, budgets",
		Long: `Explain how one request's cost came about, from its usage event: the key that
made it, the policy rules that applied, the upstream attempts, the tokens
times the prices it was charged at (which add up to its cost), who counted
the tokens (the upstream, or gw when the upstream did not), and the budgets
it was charged to.

REQUEST_ID is the X-Request-Id the request was answered with (the caller's
own, or the event id gw assigned). -o json or yaml prints the usage event.`,
		Example: `  gw usage explain req-7f3a9c
  curl -si … /inf/v1/chat/completions | grep -i x-request-id   # the id to explain
  gw usage explain 0d55f306-54d1-4eb5-bb1b-59a32dbf5d4f -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.RequestID = args[0]
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return usageExplainRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	return cmd
}

func usageExplainRun(ctx context.Context, opts *ExplainOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	org, err := s.RequireOrg()
	if err != nil {
		return err
	}
	events, err := c.UsageEventsOfRequest(ctx, client.OrgScope(org), opts.RequestID)
	if client.IsStatus(err, http.StatusForbidden) && s.Workspace != "" {
		// A key of one workspace reads that workspace's events only.
		events, err = c.UsageEventsOfRequest(ctx, client.WorkspaceScope(org, s.Workspace), opts.RequestID)
	}
	if err != nil {
		return err
	}
	if len(events) == 0 {
		return noUsageEvent(ctx, c, org, opts.RequestID)
	}
	if opts.Output.Format != cmdutil.OutputTable {
		return opts.Output.Print(opts.IO, events, nil)
	}
	names := cmdutil.NewNameBook(c)
	for i, ev := range events {
		if i > 0 {
			fmt.Fprintln(opts.IO.Out)
		}
		keyName := ""
		if ev.InferenceKeyID != nil {
			keyName = names.InferenceKeyName(ctx, org, ev.WorkspaceID.String(), ev.InferenceKeyID.String())
		}
		owner := ""
		if ev.OwnerID != nil {
			owner = names.MemberName(ctx, org, ev.OwnerID.String())
		}
		if err := explainEvent(opts.IO.Out, ev, keyName, owner); err != nil {
			return err
		}
	}
	return nil
}

// noUsageEvent says why a request may have no event: only requests
// admitted as far as a model the key may use are metered, so one refused
// before (its key, a required tag, a rate limit, or a model its policies do
// not list, answered 404) has none, and gw policies explain is where such a
// refusal is explained (issue 26, row 8). The organization is named by its
// slug, as people know it, even when the context holds its id.
func noUsageEvent(ctx context.Context, c *client.Client, org, requestID string) error {
	if _, err := uuid.Parse(org); err == nil {
		if o, err := c.GetOrganization(ctx, org); err == nil {
			org = o.Slug
		}
	}
	return fmt.Errorf("no usage event has request id %q in organization %s\n"+
		"hint: a request refused before admission (an unknown, revoked or expired key, a missing required tag, a rate limit,\n"+
		"or a model the key's policies do not list, answered 404) records none: gw policies explain --key KEY --model MODEL\n"+
		"explains what the policies do to it. An event may also be on its way from a data plane still", requestID, org)
}

// explainEvent writes one usage event's provenance for people. The cost
// lines are recomputed from the tokens and the prices the event records,
// in exact decimals, and must add up to its cost_usd.
func explainEvent(w io.Writer, ev wire.UsageEvent, keyName, owner string) error {
	if err := explainHeader(w, ev, keyName, owner); err != nil {
		return err
	}
	p := ev.Provenance
	if p == nil {
		p = &wire.UsageProvenance{}
	}
	if err := explainSection(w, "policies that applied", len(p.Policies), func(tw io.Writer, i int) {
		r := p.Policies[i]
		fmt.Fprintf(tw, "  %s\trule %d\t%s\t%s\n", r.PolicyName, r.RuleIndex, r.Action, r.Effect)
	}); err != nil {
		return err
	}
	if err := explainSection(w, "attempts", len(ev.Attempts), func(tw io.Writer, i int) {
		a := ev.Attempts[i]
		outcome := "answered"
		if a.Failure != nil {
			outcome = *a.Failure
		}
		fmt.Fprintf(tw, "  %d.\t%s\t%s\t%d ms\n", i+1, a.Model, outcome, a.LatencyMS)
	}); err != nil {
		return err
	}
	if err := explainCost(w, ev); err != nil {
		return err
	}
	return explainSection(w, "budgets charged", len(p.Budgets), func(tw io.Writer, i int) {
		b := p.Budgets[i]
		fmt.Fprintf(tw, "  %s\t%s USD a %s\t%s\t%s\n", b.PolicyName, b.AmountUSD, b.Period, b.Aggregation, b.Counter)
	})
}

// explainHeader is the request's own lines: id, status, key, model,
// bundle.
func explainHeader(w io.Writer, ev wire.UsageEvent, keyName, owner string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	line := func(label, format string, args ...any) {
		fmt.Fprintf(tw, "%s\t%s\n", label, fmt.Sprintf(format, args...))
	}
	line("request", "%s (event %s), %s, %s", deref(ev.RequestID), ev.ID, deref(ev.Endpoint), ev.OccurredAt.UTC().Format(time.RFC3339))
	status := ev.Status
	if ev.Reason != nil {
		status += " (" + *ev.Reason + ")"
	}
	line("status", "%s, %d ms", status, ev.LatencyMS)
	switch {
	case ev.InferenceKeyID != nil:
		line("key", "%s, owned by %s", keyName, cmdutil.OrDash(owner))
	case ev.ManagementKeyID != nil:
		line("key", "management key %s (playground), user %s", ev.ManagementKeyID, cmdutil.OrDash(owner))
	}
	if len(ev.Attempts) == 0 {
		// Refused before any upstream call (a policy, a budget): no model
		// answered it.
		line("model", "asked %s, refused for %s (%s) before any upstream call", ev.RequestedModel, ev.Model, ev.Provider)
	} else {
		line("model", "asked %s, answered by %s (%s)", ev.RequestedModel, ev.Model, ev.Provider)
	}
	if ev.Provenance != nil {
		line("bundle", "version %d", ev.Provenance.BundleVersion)
	}
	return tw.Flush()
}

// explainSection writes a titled table of n rows, nothing when n is 0.
func explainSection(w io.Writer, title string, n int, row func(tw io.Writer, i int)) error {
	if n == 0 {
		return nil
	}
	fmt.Fprintln(w, "\n"+title)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for i := range n {
		row(tw, i)
	}
	return tw.Flush()
}

// explainCost writes tokens × prices = cost. Without recorded prices (an
// older data plane's event, or a request refused before any upstream
// call) it states the cost alone.
// costLine is one token class of an event's cost: its tokens × its price.
type costLine struct{ label, count, price, amount string }

// costLines prices each token class the event has at its recorded price,
// and sums them exactly.
func costLines(ev wire.UsageEvent, pr *wire.UsagePrices) ([]costLine, decimal.Decimal, error) {
	var lines []costLine
	total := decimal.Zero
	w1h := min(ev.CacheWrite1hTokens, ev.CacheWriteTokens)
	for _, r := range []struct {
		label string
		n     int64
		price string
	}{
		{"input", ev.InputTokens, pr.InputPerMTok},
		{"output", ev.OutputTokens, pr.OutputPerMTok},
		{"cache read", ev.CacheReadTokens, pr.CacheReadPerMTok},
		{"cache write", ev.CacheWriteTokens - w1h, pr.CacheWritePerMTok},
		{"cache write 1h", w1h, pr.CacheWrite1hPerMTok},
	} {
		if r.n == 0 {
			continue
		}
		d, err := decimal.NewFromString(r.price)
		if err != nil {
			return nil, total, fmt.Errorf("price %q of the event: %w", r.price, err)
		}
		amount := d.Mul(decimal.NewFromInt(r.n)).Shift(-6)
		total = total.Add(amount)
		lines = append(lines, costLine{r.label, strconv.FormatInt(r.n, 10), r.price, amount.String()})
	}
	return lines, total, nil
}

func explainCost(w io.Writer, ev wire.UsageEvent) error {
	source := ev.UsageSource
	if source == wire.UsageSourceEstimated {
		source += ": the upstream did not report them, gw counted what it sent and relayed"
	}
	if source == wire.UsageSourceCache {
		explainCacheHit(w, ev)
		return nil
	}
	fmt.Fprintf(w, "\ntokens × prices (USD per million tokens), counted by %s\n", source)
	p := ev.Provenance
	if len(ev.Attempts) == 0 && ev.Status == "denied" {
		fmt.Fprintf(w, "  cost %s USD: refused before any upstream call, nothing was billed\n", ev.CostUSD)
		return nil
	}
	if p == nil || p.Prices == nil {
		fmt.Fprintf(w, "  cost %s USD (no prices recorded)\n", ev.CostUSD)
		return nil
	}
	pr := p.Prices
	tier := ""
	switch {
	case pr.ServiceTier != "" && pr.LongContext:
		tier = " (" + pr.ServiceTier + " service tier, long-context tier)"
	case pr.ServiceTier != "":
		tier = " (" + pr.ServiceTier + " service tier)"
	case pr.LongContext:
		tier = " (long-context tier)"
	}
	if pr.PriceClass == wire.PriceClassBatch {
		// A batch's line: its prices are the batch prices, whichever
		// tier they came from.
		batch := "batch prices"
		if ev.BatchID != nil {
			batch += " of " + *ev.BatchID
		}
		tier = " (" + batch + ")"
		if pr.LongContext {
			tier = " (" + batch + ", long-context tier)"
		}
	} else if ev.BatchID != nil {
		// A line gw's runner sent: a synchronous request upstream, billed
		// and priced as one.
		tier += " (a line of " + *ev.BatchID + " sent by gw: synchronous prices)"
	}
	lines, total, err := costLines(ev, pr)
	if err != nil {
		return err
	}
	cost := total.RoundBank(9)
	var wl, wc, wp int
	for _, l := range lines {
		wl, wc, wp = max(wl, len(l.label)), max(wc, len(l.count)), max(wp, len(l.price))
	}
	for _, l := range lines {
		fmt.Fprintf(w, "  %-*s  %*s × %-*s = %s\n", wl, l.label, wc, l.count, wp, l.price, l.amount)
	}
	fmt.Fprintf(w, "  %-*s  %*s   %-*s = %s USD%s\n", wl, "total", wc, "", wp, "", cost.String(), tier)
	if ev.ReasoningTokens > 0 {
		fmt.Fprintf(w, "  (%d of the output tokens were reasoning)\n", ev.ReasoningTokens)
	}
	recorded, err := decimal.NewFromString(ev.CostUSD)
	if err != nil {
		return fmt.Errorf("cost_usd %q of the event: %w", ev.CostUSD, err)
	}
	if !recorded.Equal(cost) {
		return errors.New("the event's cost_usd " + ev.CostUSD + " is not its tokens × prices (" + cost.String() + "): report this")
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return "—"
	}
	return strings.TrimSpace(*s)
}

// explainCacheHit explains an answer of the response cache: no upstream
// call, nothing billed, and what the call would have cost.
func explainCacheHit(w io.Writer, ev wire.UsageEvent) {
	saving := "0"
	if ev.CacheSavingUSD != nil {
		saving = *ev.CacheSavingUSD
	}
	fmt.Fprintf(w, "\nanswered from the response cache: no upstream call\n")
	fmt.Fprintf(w, "  cost %s USD; the upstream call would have cost %s USD (saved)\n", ev.CostUSD, saving)
}
