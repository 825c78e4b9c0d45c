package usage

import (
	"context"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/store"
)

// FocusQuery is a FOCUS export's question: the organization, the window
// (whole UTC days: FOCUS date/times are UTC) and the version.
type FocusQuery struct {
	OrgID       uuid.UUID
	OrgName     string
	WorkspaceID *uuid.UUID
	Window      Window
	Version     string
}

// Focus reads the window's events and renders them as the version's
// charge rows (FocusCharges, FocusTable).
func Focus(ctx context.Context, st *store.Store, q FocusQuery) ([]string, [][]*string, error) {
	wss, err := st.ListWorkspaces(ctx, store.WorkspaceFilter{OrgID: q.OrgID})
	if err != nil {
		return nil, nil, err
	}
	names := make(map[uuid.UUID]string, len(wss))
	for _, w := range wss {
		names[w.ID] = w.Name
	}
	f := newFocusFolder(FocusExport{OrgID: q.OrgID, OrgName: q.OrgName, Workspaces: names})
	if err := st.UsageEventsForExport(ctx, q.OrgID, q.WorkspaceID, q.Window.Start, q.Window.End, f.add); err != nil {
		return nil, nil, err
	}
	return FocusTable(q.Version, f.charges())
}
