package api

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"
	_ "time/tzdata" // report time zones must resolve on hosts without a zoneinfo database

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/usage"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

// tagFilterPattern is a tag filter's shape, KEY:VALUE; the value's own
// rules (1 to 128 printable characters) are checked on reading.
const tagFilterPattern = `^[a-z0-9][a-z0-9_.-]{0,63}:.+$`

// byParam is a breakdown's dimension: one of wire.UsageDimensions, or
// tag:KEY for the values of one tag.
var byParam = QueryParam{Name: "by", Description: "model (the one that answered), requested_model, provider, owner, inference_key, " +
	"workspace, or tag:KEY for the values of one tag (a row with a null key counts the requests without it).",
	Pattern: `^(model|requested_model|provider|owner|inference_key|workspace|tag:[a-z0-9][a-z0-9_.-]{0,63})$`}

func (s *Server) usageRoutes() []*Route {
	read := []auth.Permission{auth.UsageRead}
	pageQ := []QueryParam{
		{Name: "limit", Description: "Page size, 1 to 200 (default 50).", Integer: true},
		{Name: "cursor", Description: "The opaque page.next_cursor of the previous page."},
	}
	reportQ := []QueryParam{
		{Name: "workspace_id", Description: "Only this workspace (UUID).", Format: "uuid"},
		{Name: "period", Description: "today, 7d, 30d (default), month_to_date or custom.", Enum: wire.UsagePeriods},
		{Name: "timezone", Description: "IANA time zone of the days, e.g. Europe/Paris (default UTC)."},
		{Name: "start_date", Description: "First day of a custom period, YYYY-MM-DD (with end_date).", Format: "date"},
		{Name: "end_date", Description: "Last day (inclusive) of a custom period, YYYY-MM-DD.", Format: "date"},
		{Name: "start_at", Description: "Start of a custom period, RFC 3339 (with end_at).", Format: "date-time"},
		{Name: "end_at", Description: "End (exclusive) of a custom period, RFC 3339.", Format: "date-time"},
		{Name: "owner_id", Description: "Only keys owned by this principal (UUID).", Format: "uuid"},
		{Name: "management_key_id", Description: "Only requests made with this management key (UUID).", Format: "uuid"},
		{Name: "model_id", Description: "Only this model (the one that answered), e.g. openai/gpt-4o."},
		{Name: "requested_model_id", Description: "Only requests that asked for this model, whichever answered."},
		{Name: "provider_id", Description: "Only this provider, e.g. openai."},
		{Name: "provider_credential_id", Description: "Only requests served with this provider credential (UUID).", Format: "uuid"},
		{Name: "tag", Description: "Only requests carrying this tag, KEY:VALUE (e.g. team:search); repeat it and every one must match.",
			Pattern: tagFilterPattern, Repeated: true},
	}
	// The events list takes the report's names for the filters it shares.
	eventsQ := append(pageQ[:len(pageQ):len(pageQ)],
		QueryParam{Name: "inference_key_id", Description: "Only requests made with this inference key (UUID).", Format: "uuid"},
		QueryParam{Name: "model_id", Description: "Only this model (the one that answered), e.g. openai/gpt-4o."},
		QueryParam{Name: "provider_id", Description: "Only this provider, e.g. openai."},
		QueryParam{Name: "status", Description: "Only events of this status: ok, error or denied.", Enum: wire.UsageStatuses},
		QueryParam{Name: "start_at", Description: "Only events that occurred at or after this instant, RFC 3339.", Format: "date-time"},
		QueryParam{Name: "end_at", Description: "Only events that occurred before this instant, RFC 3339.", Format: "date-time"},
		QueryParam{Name: "request_id", Description: "Only the events of the request answered with this X-Request-Id (gw usage explain)."},
		QueryParam{Name: "tag", Description: "Only events carrying this tag, KEY:VALUE; repeat it and every one must match.",
			Pattern: tagFilterPattern, Repeated: true},
	)
	return []*Route{
		{Method: "GET", Path: "/api/v1/organizations/{org_id}/reports/usage", Tag: "Reports",
			Summary: "Usage report: totals, the previous period for comparison, and daily counters",
			Perms:   read, Result: wire.UsageReport{}, Query: reportQ, Handle: s.usageReport},
		{Method: "GET", Path: "/api/v1/organizations/{org_id}/reports/usage/breakdown", Tag: "Reports",
			Summary: "The report's period split by model, requested model, provider, owner, inference key or workspace",
			Perms:   read, Result: wire.UsageBreakdown{},
			Query:  append([]QueryParam{byParam}, reportQ...),
			Handle: s.usageBreakdown},
		// The same report for one workspace, at its own scope: what a
		// workspace-scoped key (gw login --workspace) may read.
		{Method: "GET", Path: orgWS + "/{workspace_ref}/reports/usage", Tag: "Reports",
			Summary: "The workspace's usage report: totals, the previous period for comparison, and daily counters",
			Perms:   read, Result: wire.UsageReport{}, Query: reportQ[1:], Handle: s.usageReport},
		{Method: "GET", Path: orgWS + "/{workspace_ref}/reports/usage/breakdown", Tag: "Reports",
			Summary: "The workspace's report period split by model, requested model, provider, owner or inference key",
			Perms:   read, Result: wire.UsageBreakdown{},
			Query:  append([]QueryParam{byParam}, reportQ[1:]...),
			Handle: s.usageBreakdown},
		// What the guardrails did (issue 32): blocks, redactions, flags,
		// errors and skips per guardrail and stage, from the events.
		{Method: "GET", Path: "/api/v1/organizations/{org_id}/reports/guardrails", Tag: "Reports",
			Summary: "Guardrail report: per guardrail and stage, the requests it passed, blocked, redacted, flagged, errored on or skipped",
			Perms:   read, Result: wire.GuardrailReport{}, Query: reportQ, Handle: s.guardrailReport},
		{Method: "GET", Path: orgWS + "/{workspace_ref}/reports/guardrails", Tag: "Reports",
			Summary: "The workspace's guardrail report: per guardrail and stage, what it did to the workspace's requests",
			Perms:   read, Result: wire.GuardrailReport{}, Query: reportQ[1:], Handle: s.guardrailReport},
		{Method: "GET", Path: "/api/v1/organizations/{org_id}/usage-events", Tag: "Usage Events",
			Summary: "List the organization's usage events, newest first",
			Perms:   read, Result: wire.UsageEvent{}, Paginated: true, Query: eventsQ, Handle: s.listUsageEvents},
		{Method: "GET", Path: orgWS + "/{workspace_ref}/usage-events", Tag: "Workspace Usage Events",
			Summary: "List the workspace's usage events, newest first",
			Perms:   read, Result: wire.UsageEvent{}, Paginated: true, Query: eventsQ, Handle: s.listUsageEvents},
		// A request's archived payload (issue 32): what was sent and
		// answered is audit material, read with audit.read.
		{Method: "GET", Path: "/api/v1/organizations/{org_id}/usage-events/{usage_event_id}/payload", Tag: "Usage Events",
			Summary: "Read a request's archived body and answer from its workspace's archive",
			Perms:   []auth.Permission{auth.AuditRead}, Result: wire.UsagePayload{}, Handle: s.getUsagePayload},
		{Method: "GET", Path: orgWS + "/{workspace_ref}/usage-events/{usage_event_id}/payload", Tag: "Workspace Usage Events",
			Summary: "Read a request of the workspace's archived body and answer",
			Perms:   []auth.Permission{auth.AuditRead}, Result: wire.UsagePayload{}, Handle: s.getUsagePayload},
	}
}

// readReportQuery parses spec 4.6's query parameters, reporting every
// problem at once.
func (r *Request) readReportQuery(now time.Time) (usage.Query, error) {
	q := reportQuery{Values: r.R.URL.Query()}
	period, tz := q.period(), q.timezone()
	custom := usage.Custom{StartDate: q.Get("start_date"), EndDate: q.Get("end_date"), StartAt: q.at("start_at"), EndAt: q.at("end_at")}
	out := usage.Query{Filter: store.UsageFilter{
		OrgID: r.Org.ID, WorkspaceID: q.id("workspace_id"), OwnerID: q.id("owner_id"), ManagementKeyID: q.id("management_key_id"),
		ProviderCredentialID: q.id("provider_credential_id"), Model: q.Get("model_id"), Provider: q.Get("provider_id"),
		RequestedModel: q.Get("requested_model_id"),
	}}
	out.Filter.Tags = readTagFilters(q.Values["tag"], &q.errs)
	if r.WS != nil {
		// A workspace's report is that workspace's, whatever the query
		// says; another workspace's id is refused, never ignored.
		if w := out.Filter.WorkspaceID; w != nil && *w != r.WS.ID {
			q.errs.Add(reportLoc("workspace_id"), "value_error", "Value error, a workspace's report covers only that workspace; use the organization's report for another", w.String(), nil)
		}
		out.Filter.WorkspaceID = &r.WS.ID
	}
	if q.errs.Len() > 0 {
		return out, q.errs.Err()
	}
	w, err := usage.WindowFor(period, tz, now, custom)
	if err != nil {
		name := "period"
		if errors.Is(err, usage.ErrCustomRange) {
			name = "start_date"
			if custom.StartAt != nil || custom.EndAt != nil {
				name = "start_at"
			}
		}
		return out, validate.Single(reportLoc(name), "value_error", "Value error, "+err.Error(), nil, nil)
	}
	out.Window = w
	return out, nil
}

func reportLoc(name string) validate.Loc { return validate.Loc{"query", name} }

// reportQuery reads a report's query parameters, collecting every problem.
type reportQuery struct {
	url.Values
	errs validate.Errors
}

func (q *reportQuery) id(name string) *uuid.UUID {
	if !q.Has(name) {
		return nil
	}
	v, ok := validate.UUIDString(q.Get(name), reportLoc(name), &q.errs)
	if !ok {
		return nil
	}
	return &v
}

func (q *reportQuery) at(name string) *time.Time {
	if !q.Has(name) {
		return nil
	}
	t, ok := validate.DateTime(q.Get(name), reportLoc(name), &q.errs)
	if !ok {
		return nil
	}
	return &t
}

// period is the report's period. Dates or instants without a period mean
// a custom one; with another period they would be silently ignored, so
// they are refused.
func (q *reportQuery) period() string {
	customGiven := q.Has("start_date") || q.Has("end_date") || q.Has("start_at") || q.Has("end_at")
	period := usage.DefaultPeriod
	if customGiven {
		period = "custom"
	}
	if q.Has("period") {
		period, _ = validate.Literal(q.Get("period"), reportLoc("period"), usage.Periods, &q.errs)
		if customGiven && period != "custom" {
			q.errs.Add(reportLoc("period"), "value_error", "Value error, start_date, end_date, start_at and end_at need period=custom", period, nil)
		}
	}
	return period
}

// timezone is the zone whose days the report counts: UTC by default, an
// IANA name otherwise.
func (q *reportQuery) timezone() *time.Location {
	name := q.Get("timezone")
	if name == "" {
		return time.UTC
	}
	l, err := time.LoadLocation(name)
	if err != nil || name == "Local" {
		q.errs.Add(reportLoc("timezone"), "value_error", "Value error, unknown time zone; use an IANA name such as Europe/Paris", name, nil)
		return time.UTC
	}
	return l
}

func (s *Server) usageReport(r *Request) (any, error) {
	now := time.Now()
	q, err := r.readReportQuery(now)
	if err != nil {
		return nil, err
	}
	return usage.Report(r.ctx, s.store, q, now)
}

func (s *Server) guardrailReport(r *Request) (any, error) {
	now := time.Now()
	q, err := r.readReportQuery(now)
	if err != nil {
		return nil, err
	}
	return usage.GuardrailReport(r.ctx, s.store, q, now)
}

func (s *Server) usageBreakdown(r *Request) (any, error) {
	var errs validate.Errors
	by := "model"
	if q := r.R.URL.Query(); q.Has("by") {
		by = readBreakdownBy(q.Get("by"), &errs)
	}
	q, err := r.readReportQuery(time.Now())
	if err != nil || errs.Len() > 0 {
		if ve, ok := validate.AsError(err); ok {
			for _, is := range ve.Issues {
				errs.Add(is.Loc, is.Type, is.Msg, is.Input, is.Ctx)
			}
		}
		return nil, errs.Err()
	}
	return usage.Breakdown(r.ctx, s.store, q, by)
}

// readEventsFilter reads the events list's filters, reporting every bad
// value at once: a filter that does not parse is refused, never ignored.
func (r *Request) readEventsFilter() (store.UsageFilter, error) {
	q := r.R.URL.Query()
	var errs validate.Errors
	loc := func(name string) validate.Loc { return validate.Loc{"query", name} }
	f := store.UsageFilter{OrgID: r.Org.ID}
	if r.WS != nil {
		f.WorkspaceID = &r.WS.ID
	}
	if q.Has("inference_key_id") {
		if v, ok := validate.UUIDString(q.Get("inference_key_id"), loc("inference_key_id"), &errs); ok {
			f.InferenceKeyID = &v
		}
	}
	for _, m := range []struct {
		name string
		dst  *string
	}{{"model_id", &f.Model}, {"provider_id", &f.Provider}} {
		if q.Has(m.name) {
			*m.dst, _ = validate.String(q.Get(m.name), loc(m.name), validate.StringRule{Min: 1, Max: catalog.MaxModelIDLen}, &errs)
		}
	}
	if q.Has("status") {
		f.Status, _ = validate.Literal(q.Get("status"), loc("status"), wire.UsageStatuses, &errs)
	}
	if q.Has("request_id") {
		f.RequestID, _ = validate.String(q.Get("request_id"), loc("request_id"), validate.StringRule{Min: 1, Max: usage.MaxRequestIDLen}, &errs)
	}
	f.Tags = readTagFilters(q["tag"], &errs)
	for _, m := range []struct {
		name string
		dst  *time.Time
	}{{"start_at", &f.From}, {"end_at", &f.To}} {
		if q.Has(m.name) {
			*m.dst, _ = validate.DateTime(q.Get(m.name), loc(m.name), &errs)
		}
	}
	if !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To) {
		errs.Add(loc("end_at"), "value_error", "Value error, end_at must be after start_at", q.Get("end_at"), nil)
	}
	f.From, f.To = f.From.UTC(), f.To.UTC()
	return f, errs.Err()
}

// eventsBinding binds a page cursor to its collection and its filter: a
// cursor is a position in one filtered list, and would skip or repeat
// events in another. The filter enters as a digest, which keeps cursors
// short whatever the filter's length.
func eventsBinding(f store.UsageFilter) string {
	binding := "usage:org:" + f.OrgID.String()
	if f.WorkspaceID != nil {
		binding = "usage:ws:" + f.WorkspaceID.String()
	}
	h := sha256.New()
	for _, part := range []string{optID(f.InferenceKeyID), f.Model, f.Provider, f.Status, instant(f.From), instant(f.To), f.RequestID} {
		// Length-prefixed, so no two filters spell the same bytes.
		fmt.Fprintf(h, "%d:%s;", len(part), part)
	}
	return binding + ":" + hex.EncodeToString(h.Sum(nil)[:12])
}

func optID(id *uuid.UUID) string {
	if id == nil {
		return ""
	}
	return id.String()
}

func instant(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return strconv.FormatInt(t.UnixMicro(), 10)
}

func (s *Server) listUsageEvents(r *Request) (any, error) {
	f, err := r.readEventsFilter()
	if err != nil {
		return nil, err
	}
	binding := eventsBinding(f)
	pq, err := r.pageQuery(binding)
	if err != nil {
		return nil, err
	}
	events, next, err := s.store.ListUsageEvents(r.ctx, f, pq)
	if err != nil {
		return nil, err
	}
	out := make([]wire.UsageEvent, len(events))
	for i := range events {
		out[i] = usage.Event(&events[i])
	}
	return page[wire.UsageEvent]{items: out, next: r.nextCursor(binding, next)}, nil
}
