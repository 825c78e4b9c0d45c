package backend

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/store"
)

// grantLedger is where a source of mapped memberships (an identity
// provider's sign-ins, an organization's SCIM groups) records the
// memberships it made, so that it adds, changes and removes only those,
// never one an admin made by hand. Each source keeps its own table and
// its own audit details; reconcileGrants is their one algorithm.
type grantLedger struct {
	create     func(g Grant) error
	updateRole func(id uuid.UUID, role string) error
	remove     func(id uuid.UUID) error
	// audit records a membership change made by the mappings: action is
	// member.added, member.updated or member.removed, and is made the
	// workspace_ form for a workspace grant.
	audit func(action string, g Grant) error
}

// recordedGrant is a grant as a ledger recorded it.
type recordedGrant struct {
	ID uuid.UUID
	Grant
}

// grantChanges are the keys ("org[/workspace][:role]") reconcileGrants
// added, changed and removed, for a caller that reports them.
type grantChanges struct{ Added, Changed, Removed []string }

// reconcileGrants brings the memberships a ledger recorded for the user in
// line with desired: new ones are made (unless one exists, made by hand:
// it is left as it is and not recorded), changed roles follow the mapping,
// and those no longer desired are removed. Organizations are granted
// before their workspaces and removed after them. An organization's last
// active owner is never removed or demoted this way (makeGranted,
// changeGranted, removeGranted).
func reconcileGrants(ctx context.Context, tx *store.Store, userID uuid.UUID, desired []Grant, existing []recordedGrant, l grantLedger, now time.Time) (grantChanges, error) {
	var out grantChanges
	have := make(map[string]recordedGrant, len(existing))
	for _, g := range existing {
		have[Grant{OrgID: g.OrgID, WorkspaceID: g.WorkspaceID}.key()] = g
	}
	want := map[string]bool{}
	for pass := 0; pass < 2; pass++ {
		for _, g := range desired {
			if (g.WorkspaceID == nil) != (pass == 0) {
				continue
			}
			want[g.key()] = true
			prev, mapped := have[g.key()]
			switch {
			case mapped && prev.Role == g.Role:
			case mapped:
				if err := changeGranted(ctx, tx, g, userID, prev.Role, now); err != nil {
					return out, err
				}
				if err := l.updateRole(prev.ID, g.Role); err != nil {
					return out, err
				}
				out.Changed = append(out.Changed, g.key()+":"+g.Role)
				if err := l.audit("member.updated", g); err != nil {
					return out, err
				}
			default:
				made, err := makeGranted(ctx, tx, g, userID, now)
				if err != nil {
					return out, err
				}
				if !made {
					continue
				}
				if err := l.create(g); err != nil {
					return out, err
				}
				out.Added = append(out.Added, g.key()+":"+g.Role)
				if err := l.audit("member.added", g); err != nil {
					return out, err
				}
			}
		}
	}
	for pass := 0; pass < 2; pass++ {
		for _, prev := range existing {
			g := prev.Grant
			if want[g.key()] || (g.WorkspaceID == nil) != (pass == 1) {
				continue
			}
			if err := removeGranted(ctx, tx, g, userID); err != nil {
				return out, err
			}
			if err := l.remove(prev.ID); err != nil {
				return out, err
			}
			out.Removed = append(out.Removed, g.key())
			if err := l.audit("member.removed", g); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}
