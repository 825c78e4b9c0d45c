package policy

import (
	"fmt"

	"github.com/gw-gateway/gw/server/validate"
)

// CheckStorable reports, at loc, every value of a parsed definition that
// the grammar admits but that gw cannot enforce exactly: money finer than
// a nano-dollar or beyond its maximum (validate.BudgetUSD for a budget,
// validate.PricePerMTokUSD for a price ceiling), a max_output_tokens
// beyond validate.MaxTokenSetting. Every path that saves a definition
// calls it (the API, tag budgets, the backend's operations); reading a
// stored definition does not, so a definition an older version stored
// still reads, and what enforces it reads it leniently (docs/decisions.md,
// "Values gw stores").
func CheckStorable(d Definition, loc validate.Loc, errs *validate.Errors) {
	for i, r := range d.Rules {
		at := loc.With("rules", i, "action")
		a := r.Action
		switch a.Kind {
		case ActionBudget:
			validate.BudgetUSD.Check(a.AmountUSD.Text, at.With("amount_usd"), errs)
		case ActionPriceLimit:
			validate.PricePerMTokUSD.Check(a.MaxInputPricePerMTok.Text, at.With("max_input_price_per_mtok"), errs)
			validate.PricePerMTokUSD.Check(a.MaxOutputPricePerMTok.Text, at.With("max_output_price_per_mtok"), errs)
		case ActionRequestLimits:
			if a.MaxOutputTokens > validate.MaxTokenSetting {
				errs.Add(at.With("max_output_tokens"), "less_than_equal",
					fmt.Sprintf("Input should be less than or equal to %d (the largest token count gw takes)", validate.MaxTokenSetting),
					a.MaxOutputTokens, map[string]any{"le": validate.MaxTokenSetting})
			}
		}
	}
}

// StorableErr is CheckStorable as an error: nil, or a *validate.Error
// with every problem.
func StorableErr(d Definition, loc validate.Loc) error {
	var errs validate.Errors
	CheckStorable(d, loc, &errs)
	return errs.Err()
}
