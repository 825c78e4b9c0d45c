package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/gw-gateway/gw/wire"
)

// PollBundles fetches the bundles of the organizations the data plane
// dataPlaneID is enrolled for, unless etag still matches, in which case it
// reports notModified and returns nothing else.
func (c *Client) PollBundles(ctx context.Context, dataPlaneID, etag string) (b wire.DataPlaneBundles, newETag string, notModified bool, err error) {
	req := c.r.R().SetContext(ctx).SetQueryParam("data_plane_id", dataPlaneID)
	if etag != "" {
		req.SetHeader("If-None-Match", etag)
	}
	resp, err := req.Get("/api/v1/data-plane/bundles")
	if err != nil {
		return b, "", false, c.transportError("GET", "bundles", err)
	}
	if resp.StatusCode() == http.StatusNotModified {
		return b, etag, true, nil
	}
	if resp.IsError() {
		return b, "", false, decodeError(resp)
	}
	var env wire.Envelope[wire.DataPlaneBundles]
	if err := json.Unmarshal(resp.Body(), &env); err != nil {
		return b, "", false, fmt.Errorf("poll bundles: decoding response: %w", err)
	}
	return env.Data, resp.Header().Get("ETag"), false, nil
}

// Heartbeat reports a data plane's state.
func (c *Client) Heartbeat(ctx context.Context, hb wire.Heartbeat) (wire.DataPlaneInstance, error) {
	return getData[wire.DataPlaneInstance](ctx, c, "POST", "/api/v1/data-plane/heartbeats", nil, hb)
}

// IngestUsage ships a batch of usage events (idempotent on event id).
func (c *Client) IngestUsage(ctx context.Context, events []wire.UsageEventIn) (wire.UsageIngestResult, error) {
	return getData[wire.UsageIngestResult](ctx, c, "POST", "/api/v1/data-plane/usage-events", nil, wire.UsageIngest{Events: events})
}

// IngestUsageLines ships a batch of usage events already encoded, each the
// JSON of a wire.UsageEventIn (a data plane's spool lines): the body is
// put together from their bytes rather than decoded and encoded again.
// The control plane reads and checks every event as it does IngestUsage's.
func (c *Client) IngestUsageLines(ctx context.Context, events []json.RawMessage) (wire.UsageIngestResult, error) {
	const head, tail = `{"events":[`, `]}`
	n := len(head) + len(tail) + len(events)
	for _, e := range events {
		n += len(e)
	}
	body := append(make([]byte, 0, n), head...)
	for i, e := range events {
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, e...)
	}
	// A reader, not the bytes: resty copies a []byte body twice, into a
	// buffer of its own and again into the request (a batch of the
	// harness's events is 1.4 MB). A POST is never retried (New), so the
	// reader is read once.
	return getData[wire.UsageIngestResult](ctx, c, "POST", "/api/v1/data-plane/usage-events", nil, bytes.NewReader(append(body, tail...)))
}

// ListDataPlanes lists data-plane instances and their state.
func (c *Client) ListDataPlanes(ctx context.Context) ([]wire.DataPlaneInstance, error) {
	return getData[[]wire.DataPlaneInstance](ctx, c, "GET", "/api/v1/instance/data-planes", nil, nil)
}

// LeaseBudgets asks for budget leases, reports spend and gives back unused
// allowance (DESIGN §6).
func (c *Client) LeaseBudgets(ctx context.Context, req wire.BudgetLeases) (wire.BudgetLeaseResult, error) {
	return getData[wire.BudgetLeaseResult](ctx, c, "POST", "/api/v1/data-plane/budget-leases", nil, req)
}

// ListBudgets reads the state of a workspace's budgets.
func (c *Client) ListBudgets(ctx context.Context, org, ws string) ([]wire.BudgetState, error) {
	return getData[[]wire.BudgetState](ctx, c, "GET", "/api/v1/organizations/"+org+"/workspaces/"+ws+"/budgets", nil, nil)
}
