package usage

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/wire"
)

// GuardrailReport counts what each guardrail did at each stage over the
// window (issue 32), from the events the filter selects: the guardrail
// records of identical events are decoded once, with their number, and
// added up per guardrail and stage. Guardrails are named by their current
// name; one deleted since keeps the name its events recorded.
func GuardrailReport(ctx context.Context, st *store.Store, q Query, now time.Time) (wire.GuardrailReport, error) {
	f := q.Filter
	f.From, f.To = q.Window.Start.UTC(), q.Window.End.UTC()
	groups, err := st.UsageGuardrailGroups(ctx, f)
	if err != nil {
		return wire.GuardrailReport{}, err
	}
	current, err := st.GuardrailsForOrg(ctx, f.OrgID)
	if err != nil {
		return wire.GuardrailReport{}, err
	}
	names := make(map[string]string, len(current))
	for _, g := range current {
		names[g.ID.String()] = g.Name
	}
	return wire.GuardrailReport{Period: period(q.Window), UpdatedAt: now.UTC().Truncate(time.Microsecond),
		Rows: CountGuardrails(groups, names)}, nil
}

// CountGuardrails adds up grouped guardrail records per guardrail and
// stage, most blocked first (then redacted, then requests); names are
// the guardrails' current names by id (an id without one is marked
// deleted and keeps its recorded name).
func CountGuardrails(groups []store.UsageGuardrailGroup, names map[string]string) []wire.GuardrailReportRow {
	type rowKey struct{ id, stage string }
	index := map[rowKey]int{}
	rows := []wire.GuardrailReportRow{}
	for _, g := range groups {
		for _, r := range g.Guardrails {
			k := rowKey{r.ID, r.Stage}
			i, ok := index[k]
			if !ok {
				i = len(rows)
				index[k] = i
				name, known := names[r.ID]
				if !known {
					name = r.Name
				}
				rows = append(rows, wire.GuardrailReportRow{GuardrailID: r.ID, Name: name, Deleted: !known, Stage: r.Stage,
					Detectors: map[string]int64{}})
			}
			row := &rows[i]
			row.Requests += g.Events
			switch r.Outcome {
			case "passed":
				row.Passed += g.Events
			case "blocked":
				row.Blocked += g.Events
			case "redacted":
				row.Redacted += g.Events
			case "flagged":
				row.Flagged += g.Events
			case "errored":
				row.Errored += g.Events
			case "skipped":
				row.Skipped += g.Events
			}
			for _, d := range r.Detectors {
				row.Detectors[d] += g.Events
			}
		}
	}
	slices.SortFunc(rows, func(a, b wire.GuardrailReportRow) int {
		return cmp.Or(cmp.Compare(b.Blocked, a.Blocked), cmp.Compare(b.Redacted, a.Redacted), cmp.Compare(b.Requests, a.Requests),
			strings.Compare(a.Name, b.Name), strings.Compare(a.Stage, b.Stage), strings.Compare(a.GuardrailID, b.GuardrailID))
	})
	return rows
}
