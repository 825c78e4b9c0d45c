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
// not keep them. Events no guardrail applied to are left out.
func (s *Store) UsageGuardrailGroups(ctx context.Context, f UsageFilter) ([]UsageGuardrailGroup, error) {
	var out []UsageGuardrailGroup
	q := f.apply(s.db.NewSelect().TableExpr("usage_events").ColumnExpr("guardrails").ColumnExpr("COUNT(*) AS events")).
		Where("guardrails IS NOT NULL").GroupExpr("guardrails")
	err := q.Scan(ctx, &out)
	return out, mapErr(err)
}
