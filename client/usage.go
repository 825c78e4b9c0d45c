package client

import (
	"context"
	"net/url"

	"github.com/gw-gateway/gw/wire"
)

// UsageQuery narrows a usage report (spec 4.6). Empty fields are not sent;
// the server's defaults apply (period 30d, timezone UTC).
type UsageQuery struct {
	WorkspaceID          string
	Period               string // today, 7d, 30d, month_to_date, custom
	Timezone             string // IANA name, e.g. Europe/Paris
	StartDate, EndDate   string // YYYY-MM-DD, for custom
	StartAt, EndAt       string // RFC 3339, for custom
	OwnerID              string
	ManagementKeyID      string
	ModelID              string // the model that answered
	RequestedModelID     string // the model asked for, whichever answered
	ProviderID           string
	ProviderCredentialID string
	// Tags are tag filters, KEY:VALUE each; every one must match.
	Tags []string
}

func (q UsageQuery) values() url.Values {
	v := url.Values{}
	set := func(k, val string) {
		if val != "" {
			v.Set(k, val)
		}
	}
	set("workspace_id", q.WorkspaceID)
	set("period", q.Period)
	set("timezone", q.Timezone)
	set("start_date", q.StartDate)
	set("end_date", q.EndDate)
	set("start_at", q.StartAt)
	set("end_at", q.EndAt)
	set("owner_id", q.OwnerID)
	set("management_key_id", q.ManagementKeyID)
	set("model_id", q.ModelID)
	set("requested_model_id", q.RequestedModelID)
	set("provider_id", q.ProviderID)
	set("provider_credential_id", q.ProviderCredentialID)
	for _, t := range q.Tags {
		v.Add("tag", t)
	}
	return v
}

// UsageReport reads an organization's usage report.
func (c *Client) UsageReport(ctx context.Context, org string, q UsageQuery) (wire.UsageReport, error) {
	return c.ScopedUsageReport(ctx, OrgScope(org), q)
}

// ScopedUsageReport reads the usage report of an organization, or of one
// workspace at the workspace's own URL (the one a workspace-scoped key may
// read).
func (c *Client) ScopedUsageReport(ctx context.Context, s Scope, q UsageQuery) (wire.UsageReport, error) {
	return getData[wire.UsageReport](ctx, c, "GET", s.prefix()+"/reports/usage", q.values(), nil)
}

// UsageBreakdown splits the report's period by one dimension: model,
// requested_model, provider, owner, inference_key or workspace.
func (c *Client) UsageBreakdown(ctx context.Context, org, by string, q UsageQuery) (wire.UsageBreakdown, error) {
	return c.ScopedUsageBreakdown(ctx, OrgScope(org), by, q)
}

// ScopedUsageBreakdown is UsageBreakdown of an organization or a workspace.
func (c *Client) ScopedUsageBreakdown(ctx context.Context, s Scope, by string, q UsageQuery) (wire.UsageBreakdown, error) {
	v := q.values()
	v.Set("by", by)
	return getData[wire.UsageBreakdown](ctx, c, "GET", s.prefix()+"/reports/usage/breakdown", v, nil)
}

// UsageEventsOfRequest lists the usage events of the request answered with
// requestID (its X-Request-Id), in an organization or a workspace: one,
// unless a caller reused an id.
func (c *Client) UsageEventsOfRequest(ctx context.Context, s Scope, requestID string) ([]wire.UsageEvent, error) {
	q := pageQuery(200, "")
	q.Set("request_id", requestID)
	var p wire.Page[wire.UsageEvent]
	err := c.do(ctx, "GET", s.prefix()+"/usage-events", q, nil, &p)
	return p.Data, err
}

// UsagePayload reads a request's archived payload by its usage event id
// (issue 32; audit.read).
func (c *Client) UsagePayload(ctx context.Context, s Scope, eventID string) (wire.UsagePayload, error) {
	var out wire.UsagePayload
	err := c.do(ctx, "GET", s.prefix()+"/usage-events/"+url.PathEscape(eventID)+"/payload", nil, nil, &out)
	return out, err
}

// GuardrailReport reads what each guardrail did per stage over the
// query's period (issue 32), of an organization or of one workspace.
func (c *Client) GuardrailReport(ctx context.Context, s Scope, q UsageQuery) (wire.GuardrailReport, error) {
	return getData[wire.GuardrailReport](ctx, c, "GET", s.prefix()+"/reports/guardrails", q.values(), nil)
}
