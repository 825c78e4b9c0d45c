package tui

import (
	"context"
	"errors"
	"strings"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// Source is where the dashboard reads usage: the API client in gw, a fake
// in tests. Only commands call it, never Update or View.
type Source interface {
	Report(ctx context.Context, q client.UsageQuery) (wire.UsageReport, error)
	Breakdown(ctx context.Context, by string, q client.UsageQuery) (wire.UsageBreakdown, error)
}

// Labeler is what a Source may also offer: names for the ids a breakdown
// shows (workspaces, owners, inference keys). The dashboard works without
// it; ids are simply shown as they are.
type Labeler interface {
	Labels(ctx context.Context) (map[string]string, error)
}

// ClientSource reads one organization's usage through the API client, or,
// with Workspace, one workspace's at the workspace's own URL (all that a
// workspace-scoped key may read).
type ClientSource struct {
	Client    *client.Client
	Org       string
	Workspace string
}

func (s ClientSource) scope() client.Scope {
	if s.Workspace != "" {
		return client.WorkspaceScope(s.Org, s.Workspace)
	}
	return client.OrgScope(s.Org)
}

var (
	_ Source  = ClientSource{}
	_ Labeler = ClientSource{}
)

// Report reads the usage report (spec 4.6).
func (s ClientSource) Report(ctx context.Context, q client.UsageQuery) (wire.UsageReport, error) {
	return s.Client.ScopedUsageReport(ctx, s.scope(), q)
}

// Breakdown splits the report's period by one dimension.
func (s ClientSource) Breakdown(ctx context.Context, by string, q client.UsageQuery) (wire.UsageBreakdown, error) {
	return s.Client.ScopedUsageBreakdown(ctx, s.scope(), by, q)
}

// Labels names workspaces, members (by email) and inference keys. Each
// list needs its own read permission, and a key that holds usage.read
// alone may be refused some of them; whatever could be read is returned,
// together with the errors, so the dashboard names what it can.
func (s ClientSource) Labels(ctx context.Context) (map[string]string, error) {
	labels := map[string]string{}
	var errs []error
	members, err := s.Client.ListMembers(ctx, s.Org)
	errs = append(errs, err)
	for _, m := range members {
		labels[m.UserID.String()] = m.Email
	}
	workspaces, err := s.Client.ListWorkspaces(ctx, s.Org)
	errs = append(errs, err)
	for id, name := range WorkspaceLabels(workspaces) {
		labels[id] = name
	}
	for _, ws := range workspaces {
		// One request per workspace: fine at the scale of an
		// organization's workspaces, and done once, in the background.
		keys, err := s.Client.ListInferenceKeys(ctx, s.Org, ws.ID.String())
		errs = append(errs, err)
		for _, k := range keys {
			labels[k.ID.String()] = k.Name + " (" + k.Prefix + "…)"
		}
	}
	return labels, errors.Join(errs...)
}

// WorkspaceLabels names workspaces by id for a person: by name, and a
// name that two of them share (names need not be unique, slugs are) with
// the slug after it, "Search (search-2)", so that no two read alike
// (issue 26, row 12).
func WorkspaceLabels(ws []wire.Workspace) map[string]string {
	count := map[string]int{}
	for _, w := range ws {
		count[strings.ToLower(strings.TrimSpace(w.Name))]++
	}
	out := make(map[string]string, len(ws))
	for _, w := range ws {
		label := strings.TrimSpace(w.Name)
		if count[strings.ToLower(label)] > 1 || label == "" {
			label = strings.TrimSpace(label + " (" + w.Slug + ")")
		}
		out[w.ID.String()] = label
	}
	return out
}
