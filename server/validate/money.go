package validate

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// What gw stores must be what later code can use: money is counted in
// integer nano-dollars (int64), and budgets, rate limits and cost bounds are
// int64 arithmetic. A value outside these bounds is refused where it is
// saved (422 naming the field), never stored to break serving later
// (docs/decisions.md, "Values gw stores").

// MaxMoneyDecimals is the most fractional digits a USD amount or price may
// have: gw counts money in nano-dollars (1e-9 USD).
const MaxMoneyDecimals = 9

// MaxRateLimit bounds a requests or tokens per minute limit: far above any
// real traffic (a million million a minute), and far enough below int64
// that the lease arithmetic summing a limit's grants and overshoots across
// data planes cannot overflow.
const MaxRateLimit = 1_000_000_000_000

// MaxTokenSetting bounds a per-request token count a setting states (a
// model's context window or output maximum, a long-context threshold, a
// policy's max_output_tokens): a thousand times the largest context
// window of today, and small enough that such a count times any price up
// to MaxPricePerMTokUSD fits in int64 nano-dollars.
const MaxTokenSetting = 1_000_000_000

// MoneyRule bounds a USD decimal string: at most MaxMoneyDecimals
// fractional digits and at most Max whole dollars.
type MoneyRule struct {
	// Max is the largest amount, in whole USD.
	Max int64
	// What names the amount in the message about Max ("budget amount").
	What string
}

// The money a setting states.
var (
	// BudgetUSD is a budget's amount: a billion dollars a day or month is
	// beyond any gateway's spend, and keeps every sum of a budget's
	// grants, seed and spend far inside int64 nano-dollars.
	BudgetUSD = MoneyRule{Max: 1_000_000_000, What: "the largest budget amount gw takes, in USD"}
	// PricePerMTokUSD is a price (or a price ceiling) per million tokens:
	// a dollar a token, a thousand times the dearest model of today.
	PricePerMTokUSD = MoneyRule{Max: 1_000_000, What: "the largest price per million tokens gw takes, in USD"}
	// ToolCallUSD is an MCP tool's price per call: a thousand dollars a
	// call is far beyond any tool's, and a day of calls at it stays far
	// inside int64 nano-dollars.
	ToolCallUSD = MoneyRule{Max: 1_000, What: "the largest price per tool call gw takes, in USD"}
)

var moneyPattern = regexp.MustCompile(`^\d+(?:\.\d+)?$`)

// maxMoneyLen bounds an amount's text (leading zeros are not free either):
// the catalog's bound on a price, which amounts share.
const maxMoneyLen = 32

// Problem says what is wrong with s as an amount of the rule, in
// pydantic's words: its type (decimal_max_places, less_than_equal,
// string_pattern_mismatch), a message and the context; "" when nothing is.
func (r MoneyRule) Problem(s string) (typ, msg string, ctx map[string]any) {
	if len(s) > maxMoneyLen {
		return "string_too_long", fmt.Sprintf("String should have at most %d characters", maxMoneyLen), map[string]any{"max_length": maxMoneyLen}
	}
	if !moneyPattern.MatchString(s) {
		return "string_pattern_mismatch", fmt.Sprintf("String should match pattern '%s'", moneyPattern), map[string]any{"pattern": moneyPattern.String()}
	}
	whole, frac, _ := strings.Cut(s, ".")
	if len(frac) > MaxMoneyDecimals {
		return "decimal_max_places", fmt.Sprintf("Decimal input should have no more than %d decimal places: gw counts money in nano-dollars (0.000000001 USD)",
			MaxMoneyDecimals), map[string]any{"decimal_places": MaxMoneyDecimals}
	}
	whole = strings.TrimLeft(whole, "0")
	limit := strconv.FormatInt(r.Max, 10)
	over := len(whole) > len(limit) || (len(whole) == len(limit) && whole > limit) ||
		(whole == limit && strings.Trim(frac, "0") != "")
	if over {
		return "less_than_equal", fmt.Sprintf("Input should be less than or equal to %s (%s)", limit, r.What), map[string]any{"le": limit}
	}
	return "", "", nil
}

// Check reports s's problem at loc, if it has one.
func (r MoneyRule) Check(s string, loc Loc, errs *Errors) bool {
	typ, msg, ctx := r.Problem(s)
	if typ == "" {
		return true
	}
	errs.Add(loc, typ, msg, s, ctx)
	return false
}
