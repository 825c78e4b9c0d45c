package usage

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
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

// When a shipped event may have occurred, relative to the control
// plane's clock when it arrives: at most MaxEventAge before (a data plane
// cut off for longer has lost more than its spool; a year of history can
// still be loaded) and at most MaxEventLead after (the clock skew budget
// leases allow too). Outside it, a time is a bug or a forgery: year 0000
// or 2030 would land in reports no one reads, or in a period to come.
const (
	MaxEventAge  = 400 * 24 * time.Hour
	MaxEventLead = 5 * time.Minute
)

// outOfReach names the member an event may not carry. The refusal is
// a validation problem (422), which a data plane's spool sets aside with
// an error in its log instead of retrying forever, so one foreign event
// never holds back the usage behind it.
func outOfReach(errs *validate.Errors, loc validate.Loc, input any, why string) {
	errs.Add(append(validate.Loc{"body"}, loc...), "value_error", "Value error, "+why, input, nil)
}

// checkReach refuses events outside the caller's reach, and events that
// name anything of another tenant: a workspace of another organization
// than the event says, or an inference key, management key, owner,
// provider credential or policy (in the provenance) that belongs
// elsewhere — they would show in that organization's reports, or name
// another tenant's keys and people in this one's. An id that names
// nothing is kept: an event may outlive what it names (credentials and
// policies are deleted outright), and such an id reaches no one. Each kind
// of id is looked up once per batch, never once per event.
func checkReach(ctx context.Context, st *store.Store, reach Reach, events []wire.UsageEventIn, now time.Time) error {
	var workspaces, keys, mkeys, creds, policies ids
	for _, e := range events {
		workspaces.add(&e.WorkspaceID)
		keys.add(e.InferenceKeyID)
		mkeys.add(e.ManagementKeyID)
		creds.add(e.ProviderCredentialID)
		if p := e.Provenance; p != nil {
			for _, r := range p.Policies {
				policies.add(&r.PolicyID)
			}
			for _, b := range p.Budgets {
				policies.add(&b.PolicyID)
			}
		}
	}
	owners, err := st.WorkspaceOrgs(ctx, workspaces.list)
	if err != nil {
		return fmt.Errorf("read the events' workspaces: %w", err)
	}
	ref, err := st.Referents(ctx, store.ReferentQuery{InferenceKeys: keys.list, ManagementKeys: mkeys.list,
		Credentials: creds.list, Policies: policies.list})
	if err != nil {
		return fmt.Errorf("read what the events name: %w", err)
	}
	// An owner is checked against the key the event names; only an event
	// without a known key needs the owner's memberships.
	var people ids
	for _, e := range events {
		if _, _, ok := eventKey(ref, e); !ok {
			people.add(e.OwnerID)
		}
	}
	if len(people.list) > 0 {
		users, err := st.Referents(ctx, store.ReferentQuery{Users: people.list})
		if err != nil {
			return fmt.Errorf("read the events' owners: %w", err)
		}
		ref.UserOrgs, ref.InstanceRoles = users.UserOrgs, users.InstanceRoles
	}
	var errs validate.Errors
	for i, e := range events {
		at := validate.Loc{"events", i}
		if !reach.Everywhere && !slices.Contains(reach.Orgs, e.OrgID) {
			outOfReach(&errs, at.With("org_id"), e.OrgID.String(), "this key may not record usage for that organization (a data plane records only for the organizations it is enrolled for)")
		}
		if org, ok := owners[e.WorkspaceID]; ok && org != e.OrgID {
			outOfReach(&errs, at.With("workspace_id"), e.WorkspaceID.String(), "the workspace is not in the event's organization")
		}
		checkReferents(&errs, at, ref, e)
		switch {
		case e.OccurredAt.Before(now.Add(-MaxEventAge)):
			outOfReach(&errs, at.With("occurred_at"), e.OccurredAt.Format(time.RFC3339Nano),
				fmt.Sprintf("an event may be recorded at most %d days after it occurred", int(MaxEventAge.Hours()/24)))
		case e.OccurredAt.After(now.Add(MaxEventLead)):
			outOfReach(&errs, at.With("occurred_at"), e.OccurredAt.Format(time.RFC3339Nano),
				fmt.Sprintf("the event occurs in the future: at most %s past the control plane's clock is allowed (check the data plane's clock)", MaxEventLead))
		}
	}
	return errs.Err()
}

// checkReferents refuses the ids of one event that belong to another
// organization or workspace than the event's.
func checkReferents(errs *validate.Errors, at validate.Loc, ref *store.Referents, e wire.UsageEventIn) {
	in := func(p store.Place, workspaceScoped bool) bool {
		switch {
		case p.OrgID == nil:
			return !workspaceScoped // a platform credential, an instance key
		case *p.OrgID != e.OrgID:
			return false
		}
		return p.WorkspaceID == nil || *p.WorkspaceID == e.WorkspaceID
	}
	if id := e.InferenceKeyID; id != nil {
		if p, ok := ref.InferenceKeys[*id]; ok && !in(p, true) {
			outOfReach(errs, at.With("inference_key_id"), id.String(), "the inference key is not in the event's organization and workspace")
		}
	}
	if id := e.ManagementKeyID; id != nil {
		if p, ok := ref.ManagementKeys[*id]; ok && !in(p, false) {
			outOfReach(errs, at.With("management_key_id"), id.String(), "the management key's scope does not cover the event's workspace")
		}
	}
	if id := e.ProviderCredentialID; id != nil {
		if p, ok := ref.Credentials[*id]; ok && !in(p, false) {
			outOfReach(errs, at.With("provider_credential_id"), id.String(), "the provider credential is not one the event's workspace may use")
		}
	}
	if id := e.OwnerID; id != nil {
		if user, which, ok := eventKey(ref, e); ok {
			if user != *id {
				outOfReach(errs, at.With("owner_id"), id.String(), "the owner is not the "+which+"'s owner")
			}
		} else if role, known := ref.InstanceRoles[*id]; known && !slices.Contains(ref.UserOrgs[*id], e.OrgID) &&
			role != auth.InstanceOwner && role != auth.InstanceAdmin {
			outOfReach(errs, at.With("owner_id"), id.String(), "the owner is not a member of the event's organization")
		}
	}
	if p := e.Provenance; p != nil {
		for j, r := range p.Policies {
			if pl, ok := ref.Policies[r.PolicyID]; ok && !in(pl, true) {
				outOfReach(errs, at.With("provenance", "policies", j, "policy_id"), r.PolicyID.String(), "the policy is not in the event's workspace")
			}
		}
		for j, b := range p.Budgets {
			if pl, ok := ref.Policies[b.PolicyID]; ok && !in(pl, true) {
				outOfReach(errs, at.With("provenance", "budgets", j, "policy_id"), b.PolicyID.String(), "the policy is not in the event's workspace")
			}
		}
	}
}

// eventKey is the owner of the key an event names (its inference key,
// else its management key), when that key exists.
func eventKey(ref *store.Referents, e wire.UsageEventIn) (owner uuid.UUID, which string, ok bool) {
	if id := e.InferenceKeyID; id != nil {
		if p, ok := ref.InferenceKeys[*id]; ok {
			return p.UserID, "inference key", true
		}
	}
	if id := e.ManagementKeyID; id != nil {
		if p, ok := ref.ManagementKeys[*id]; ok {
			return p.UserID, "management key", true
		}
	}
	return uuid.Nil, "", false
}

// ids collects distinct ids, in the order first seen.
type ids struct {
	list []uuid.UUID
	seen map[uuid.UUID]bool
}

func (s *ids) add(id *uuid.UUID) {
	if id == nil || s.seen[*id] {
		return
	}
	if s.seen == nil {
		s.seen = map[uuid.UUID]bool{}
	}
	s.seen[*id] = true
	s.list = append(s.list, *id)
}
