package usage

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/wire"
)

// Query is a report's question: the period window and what to count.
// Filter's From and To are set from the window.
type Query struct {
	Window Window
	Filter store.UsageFilter
}

// Report answers spec 4.6: totals and daily counters over the window, and
// the previous window's totals for comparison.
func Report(ctx context.Context, st *store.Store, q Query, now time.Time) (wire.UsageReport, error) {
	f := q.Filter
	f.From, f.To = q.Window.Start.UTC(), q.Window.End.UTC()
	buckets, err := sumByBucket(ctx, st, f, Midnights(q.Window))
	if err != nil {
		return wire.UsageReport{}, err
	}
	prev := q.Filter
	prev.From, prev.To = q.Window.PrevStart.UTC(), q.Window.PrevEnd.UTC()
	comparison, err := sum(ctx, st, prev)
	if err != nil {
		return wire.UsageReport{}, err
	}
	out := wire.UsageReport{Comparison: Counters(comparison), Period: period(q.Window), UpdatedAt: now.UTC().Truncate(time.Microsecond),
		Daily: []wire.UsageDay{}}
	var totals store.UsageSums
	for _, d := range Days(q.Window, buckets) {
		totals.Add(d.Sums)
		out.Daily = append(out.Daily, wire.UsageDay{Date: d.Date, UsageCounters: Counters(d.Sums)})
	}
	out.Totals = Counters(totals)
	if len(f.Tags) > 0 {
		if out.Note, err = tagNote(ctx, st, f.OrgID); err != nil {
			return wire.UsageReport{}, err
		}
	}
	return out, nil
}

// TagPrefix starts a breakdown by one tag's values (tag:team).
const TagPrefix = "tag:"

// tagNote is what a report by or filtered by tag says once the
// organization has reached the bound of tag sets the rollups keep.
func tagNote(ctx context.Context, st *store.Store, org uuid.UUID) (string, error) {
	full, err := st.UsageTagSetsFull(ctx, org)
	if err != nil || !full {
		return "", err
	}
	return fmt.Sprintf("This organization has reached %d distinct tag combinations, the most reports keep: requests with a "+
		"combination first seen after that keep their tags on their events, but no tag filter matches them, and a breakdown "+
		"by tag counts them in the row marked over_tag_limit (docs/metering.md).", store.MaxUsageTagSets), nil
}

// Breakdown splits the window's counters by one of wire.UsageDimensions.
func Breakdown(ctx context.Context, st *store.Store, q Query, by string) (wire.UsageBreakdown, error) {
	f := q.Filter
	f.From, f.To = q.Window.Start.UTC(), q.Window.End.UTC()
	var groups []groupSums
	var err error
	tagKey, byTag := strings.CutPrefix(by, TagPrefix)
	if byTag {
		groups, err = sumByTag(ctx, st, f, tagKey)
	} else {
		groups, err = sumBy(ctx, st, f, by)
	}
	if err != nil {
		return wire.UsageBreakdown{}, err
	}
	out := wire.UsageBreakdown{By: by, Period: period(q.Window), Rows: make([]wire.UsageBreakdownRow, 0, len(groups))}
	for _, g := range groups {
		out.Rows = append(out.Rows, wire.UsageBreakdownRow{Key: g.Key, NoValue: g.noValue, OverTagLimit: g.over, UsageCounters: Counters(g.UsageSums)})
	}
	if byTag || len(f.Tags) > 0 {
		if out.Note, err = tagNote(ctx, st, f.OrgID); err != nil {
			return wire.UsageBreakdown{}, err
		}
	}
	return out, nil
}

// Counters are stored sums as spec 2.6's counters.
func Counters(s store.UsageSums) wire.UsageCounters {
	return wire.UsageCounters{Requests: s.Requests, InputTokens: s.InputTokens, OutputTokens: s.OutputTokens,
		CacheReadTokens: s.CacheReadTokens, CacheWriteTokens: s.CacheWriteTokens, CostUSD: catalog.FormatNanoUSD(s.CostNanoUSD),
		CacheSavingUSD: catalog.FormatNanoUSD(s.CacheSavingNanoUSD)}
}

func period(w Window) wire.UsagePeriod {
	return wire.UsagePeriod{StartAt: w.Start, EndAt: w.End, PreviousStartAt: w.PrevStart, PreviousEndAt: w.PrevEnd, Timezone: w.Location.String()}
}

// Event is a stored event as the API lists it.
func Event(e *store.UsageEvent) wire.UsageEvent {
	out := wire.UsageEvent{
		ID: e.ID, OrgID: e.OrgID, WorkspaceID: e.WorkspaceID, InferenceKeyID: e.InferenceKeyID, ManagementKeyID: e.ManagementKeyID,
		OwnerID: e.OwnerID, Model: e.Model, Provider: e.Provider, ProviderCredentialID: e.ProviderCredentialID,
		InputTokens: e.InputTokens, OutputTokens: e.OutputTokens, CacheReadTokens: e.CacheReadTokens, CacheWriteTokens: e.CacheWriteTokens,
		CostUSD: catalog.FormatNanoUSD(e.CostNanoUSD), Status: e.Status, LatencyMS: e.LatencyMS, OccurredAt: e.OccurredAt, ReceivedAt: e.ReceivedAt,
		RequestID: e.RequestID, Endpoint: e.Endpoint, Reason: e.Reason, RequestedModel: e.RequestedModel,
		Attempts:    []wire.UsageAttempt(e.Attempts),
		UsageSource: cmp.Or(e.UsageSource, wire.UsageSourceUpstream), ReasoningTokens: e.ReasoningTokens, CacheWrite1hTokens: e.CacheWrite1hTokens,
		Provenance: (*wire.UsageProvenance)(e.Provenance), Tags: map[string]string(e.Tags),
		ServiceTier: e.ServiceTier, BatchID: e.BatchID,
	}
	if e.UsageSource == wire.UsageSourceCache {
		saving := catalog.FormatNanoUSD(e.CacheSavingNanoUSD)
		out.CacheSavingUSD = &saving
	}
	out.Guardrails = []wire.GuardrailRecord(e.Guardrails)
	if out.Guardrails == nil {
		out.Guardrails = []wire.GuardrailRecord{}
	}
	if out.Tags == nil {
		out.Tags = map[string]string{}
	}
	if out.Attempts == nil {
		out.Attempts = []wire.UsageAttempt{}
	}
	if out.RequestedModel == "" {
		out.RequestedModel = e.Model
	}
	return out
}
