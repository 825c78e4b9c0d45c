package usage

import (
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

// Reach is where a caller may record usage: every organization, or the
// listed ones. A data plane's key reaches the organizations it was
// enrolled for; without that, one tenant's data plane could bill another
// (docs/security.md).
type Reach struct {
	// Everywhere: an instance-scope credential no data plane enrolled with.
	Everywhere bool
	Orgs       []uuid.UUID
}

// Within narrows a reach to the given organizations.
func (r Reach) Within(orgs []uuid.UUID) Reach {
	out := Reach{Orgs: []uuid.UUID{}}
	for _, o := range orgs {
		if r.Everywhere || slices.Contains(r.Orgs, o) {
			out.Orgs = append(out.Orgs, o)
		}
	}
	return out
}

// outOfReach names the member an event may not carry. The refusal is
// a validation problem (422), which a data plane's spool sets aside with
// an error in its log instead of retrying forever, so one foreign event
// never holds back the usage behind it.
func outOfReach(errs *validate.Errors, i int, member string, id uuid.UUID, why string) {
	errs.Add(validate.Loc{"body", "events", i, member}, "value_error", "Value error, "+why, id.String(), nil)
}

// checkReach refuses events outside the caller's reach, and events whose
// workspace belongs to another organization than the event says (they
// would show in that organization's workspace reports).
func checkReach(ctx context.Context, st *store.Store, reach Reach, events []wire.UsageEventIn) error {
	ids := make([]uuid.UUID, 0, len(events))
	for _, e := range events {
		if !slices.Contains(ids, e.WorkspaceID) {
			ids = append(ids, e.WorkspaceID)
		}
	}
	owners, err := st.WorkspaceOrgs(ctx, ids)
	if err != nil {
		return fmt.Errorf("read the events' workspaces: %w", err)
	}
	var errs validate.Errors
	for i, e := range events {
		if !reach.Everywhere && !slices.Contains(reach.Orgs, e.OrgID) {
			outOfReach(&errs, i, "org_id", e.OrgID, "this key may not record usage for that organization (a data plane records only for the organizations it is enrolled for)")
		}
		if org, ok := owners[e.WorkspaceID]; ok && org != e.OrgID {
			outOfReach(&errs, i, "workspace_id", e.WorkspaceID, "the workspace is not in the event's organization")
		}
	}
	return errs.Err()
}
