package store

import (
	"context"
)

// UsageGuardrailGroup is a distinct guardrails record of usage events and
// how many events carry it.
type UsageGuardrailGroup struct {
	Guardrails UsageGuardrails `bun:"guardrails"`
	Events     int64           `bun:"events"`
}

// UsageGuardrailGroups reads the guardrail records of the events f selects,
// grouped by identical record (most requests of a workspace carry the same
// outcomes, so the groups are few), from the events themselves: rollups do
// not keep them. Events no guardrail applied to are left out. The groups
// are counted here rather than by GROUP BY: the database then only streams
// the column, without sorting the period's records first (on SQLite that
// sort was most of the time).
func (s *Store) UsageGuardrailGroups(ctx context.Context, f UsageFilter) ([]UsageGuardrailGroup, error) {
	rows, err := f.apply(s.db.NewSelect().TableExpr("usage_events").ColumnExpr("guardrails")).Where("guardrails IS NOT NULL").Rows(ctx)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	counts := map[string]int64{}
	var order []string
	for rows.Next() {
		var text string
		if err := rows.Scan(&text); err != nil {
			return nil, err
		}
		if _, ok := counts[text]; !ok {
			order = append(order, text)
		}
		counts[text]++
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err)
	}
	out := make([]UsageGuardrailGroup, len(order))
	for i, text := range order {
		out[i].Events = counts[text]
		if err := out[i].Guardrails.Scan(text); err != nil {
			return nil, err
		}
	}
	return out, nil
}
