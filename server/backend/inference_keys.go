package backend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
)

// RateLimitsPatch changes some of a key's rate limits: each member named
// in Set (requests_per_minute, tokens_per_minute) takes its value from To,
// where nil clears the limit; the others keep theirs.
type RateLimitsPatch struct {
	Set []string
	To  store.RateLimits
}

// Onto is l with the patch's members replaced.
func (p RateLimitsPatch) Onto(l store.RateLimits) store.RateLimits {
	for _, name := range p.Set {
		if name == "requests_per_minute" {
			l.RPM = p.To.RPM
		} else {
			l.TPM = p.To.TPM
		}
	}
	return l
}

// withinWorkspace refuses a key's limits that the patch set above the
// workspace's. A member left unset is not checked: when a workspace's
// limit is lowered below a key's, the key keeps its record and the lower of
// the two applies (publish computes each key's effective limits), so a
// rename must not fail on it.
func (p RateLimitsPatch) withinWorkspace(key, ws store.RateLimits) error {
	var errs validate.Errors
	for _, name := range p.Set {
		k, w := key.RPM, ws.RPM
		if name == "tokens_per_minute" {
			k, w = key.TPM, ws.TPM
		}
		if k != nil && w != nil && *k > *w {
			errs.Add(validate.Loc{"body", "rate_limits", name}, "less_than_equal",
				fmt.Sprintf("Input should be less than or equal to %d, the workspace's %s", *w, name), *k,
				map[string]any{"le": *w})
		}
	}
	return errs.Err()
}

// InferenceKeyCreate is an inference key of a workspace for an owner, whose
// policies it carries.
type InferenceKeyCreate struct {
	Workspace *store.Workspace
	Owner     uuid.UUID
	Name      string
	ExpiresAt *time.Time
	Limits    RateLimitsPatch
	// Tags are the key's cost-centre tags (checked by server/tags' rules).
	Tags map[string]string
}

// IssueInferenceKey issues an sk-gw- key. Its limits stay within the
// workspace's; its owner is an active member of the organization (the
// bundle serves only their keys); and a key for someone else needs the
// right to manage members, since it carries their policies, not the
// actor's. The token is returned once and never stored.
func IssueInferenceKey(ctx context.Context, st *store.Store, actor Actor, in InferenceKeyCreate) (*store.InferenceKey, string, error) {
	ws := in.Workspace
	limits := in.Limits.Onto(store.RateLimits{})
	if err := in.Limits.withinWorkspace(limits, ws.RateLimits); err != nil {
		return nil, "", err
	}
	if err := actor.mayIssueFor(in.Owner); err != nil {
		return nil, "", err
	}
	token, prefix, hash := auth.NewToken(auth.InferenceKeyPrefix)
	now := store.Now()
	// Who issued the key is kept, so disabling their account revokes it
	// (docs/security.md); an operator command issues none.
	k := &store.InferenceKey{ID: uuid.New(), OrgID: ws.OrgID, WorkspaceID: ws.ID, UserID: in.Owner, Name: in.Name, Prefix: prefix,
		TokenHash: hash, ExpiresAt: in.ExpiresAt, RateLimits: limits, CreatedBy: actor.UserID, Tags: tagsOrNil(in.Tags), CreatedAt: now, UpdatedAt: now}
	err := st.InTx(ctx, func(tx *store.Store) error {
		// The owner's account (and the issuer's, whose disable revokes the
		// keys it issued) is read under a lock a disable's write waits
		// for: a disable in the same instant either sees this key and
		// revokes it, or comes first and this refuses (issue 27, row 8).
		people := []uuid.UUID{in.Owner}
		if actor.UserID != nil && *actor.UserID != in.Owner {
			people = append(people, *actor.UserID)
		}
		if err := tx.ShareUsers(ctx, people...); err != nil {
			return err
		}
		// The owner must be an active member: the bundle serves only keys of
		// active members, and policies target keys by their owner.
		m, err := tx.GetMembership(ctx, ws.OrgID, in.Owner)
		if errors.Is(err, store.ErrNotFound) || (err == nil && m.Status != auth.MembershipActive) {
			return validate.Single(validate.Loc{"body", "user_id"}, "value_error",
				"Value error, the key's owner must be an active member of the organization", in.Owner.String(), nil)
		}
		if err != nil {
			return err
		}
		// A disabled account's keys are revoked and no bundle carries its
		// keys: a new one would be dead on arrival.
		if u, err := tx.GetUser(ctx, in.Owner); err != nil {
			return err
		} else if u.DisabledAt != nil {
			return validate.Single(validate.Loc{"body", "user_id"}, "value_error",
				"Value error, the key's owner has a disabled account", in.Owner.String(), nil)
		}
		if err := tx.CreateInferenceKey(ctx, k); err != nil {
			return err
		}
		if len(k.Tags) > 0 {
			if err := syncTagBudgets(ctx, tx, actor, ws); err != nil {
				return err
			}
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "inference_key.issued", TargetType: "inference_key", TargetID: k.ID.String(),
			OrgID: &ws.OrgID, WorkspaceID: &ws.ID,
			Details: map[string]any{"name": k.Name, "prefix": prefix, "user_id": in.Owner.String(), "rate_limits": RateLimitsDetail(limits),
				"tags": tagsDetail(k.Tags)}})
	})
	if err != nil {
		return nil, "", err
	}
	return k, token, nil
}

// mayIssueFor refuses a key for someone other than the actor unless the
// actor manages members (or principals) where it acts.
func (a Actor) mayIssueFor(owner uuid.UUID) error {
	if a.Type == "system" || (a.UserID != nil && *a.UserID == owner) ||
		a.Rights.Has(auth.MembersManage) || a.Rights.Has(auth.PrincipalsManage) {
		return nil
	}
	return errorf(Forbidden, "issuing an inference key for another member needs members.manage or principals.manage")
}

// InferenceKeyIn is the workspace's inference key id.
func InferenceKeyIn(ctx context.Context, st *store.Store, workspaceID, id uuid.UUID) (*store.InferenceKey, error) {
	k, err := st.GetInferenceKey(ctx, workspaceID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errorf(NotFound, "inference key %s not found", id)
	}
	return k, err
}

// InferenceKeyUpdate renames a key, changes some of its rate limits or
// replaces its tags (a non-nil Tags, empty to clear them).
type InferenceKeyUpdate struct {
	Name   *string
	Limits RateLimitsPatch
	Tags   *map[string]string
}

// tagsOrNil stores an empty set as none.
func tagsOrNil(t map[string]string) store.Tags {
	if len(t) == 0 {
		return nil
	}
	return store.Tags(t)
}

// tagsDetail is a tag set as the audit log records it.
func tagsDetail(t store.Tags) map[string]any {
	out := make(map[string]any, len(t))
	for k, v := range t {
		out[k] = v
	}
	return out
}

// UpdateInferenceKey applies in to the workspace's key id, keeping the
// limits it sets within the workspace's, and audits before and after.
func UpdateInferenceKey(ctx context.Context, st *store.Store, actor Actor, ws *store.Workspace, id uuid.UUID, in InferenceKeyUpdate) (*store.InferenceKey, error) {
	var k *store.InferenceKey
	err := st.InTx(ctx, func(tx *store.Store) error {
		var err error
		if k, err = InferenceKeyIn(ctx, tx, ws.ID, id); err != nil {
			return err
		}
		limits := in.Limits.Onto(k.RateLimits)
		if err := in.Limits.withinWorkspace(limits, ws.RateLimits); err != nil {
			return err
		}
		before := map[string]any{"name": k.Name, "rate_limits": RateLimitsDetail(k.RateLimits), "tags": tagsDetail(k.Tags)}
		if in.Name != nil {
			k.Name = *in.Name
		}
		if in.Tags != nil {
			k.Tags = tagsOrNil(*in.Tags)
		}
		k.RateLimits, k.UpdatedAt = limits, store.Now()
		if err := tx.UpdateInferenceKey(ctx, k); err != nil {
			return err
		}
		if in.Tags != nil {
			// Budgets for a tag follow the keys carrying it.
			if err := syncTagBudgets(ctx, tx, actor, ws); err != nil {
				return err
			}
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "inference_key.updated", TargetType: "inference_key", TargetID: k.ID.String(),
			OrgID: &ws.OrgID, WorkspaceID: &ws.ID,
			Details: map[string]any{"before": before, "after": map[string]any{"name": k.Name, "rate_limits": RateLimitsDetail(k.RateLimits), "tags": tagsDetail(k.Tags)}}})
	})
	if err != nil {
		return nil, err
	}
	return k, nil
}

// RevokeInferenceKey revokes the workspace's key id; revoking twice
// audits once.
func RevokeInferenceKey(ctx context.Context, st *store.Store, actor Actor, ws *store.Workspace, id uuid.UUID) (*store.InferenceKey, error) {
	var k *store.InferenceKey
	err := st.InTx(ctx, func(tx *store.Store) error {
		var err error
		if k, err = InferenceKeyIn(ctx, tx, ws.ID, id); err != nil {
			return err
		}
		revoked, err := tx.RevokeInferenceKey(ctx, k.ID, store.Now())
		if err != nil {
			return err
		}
		if revoked {
			if err := Audit(ctx, tx, actor, AuditEntry{Action: "inference_key.revoked", TargetType: "inference_key", TargetID: k.ID.String(),
				OrgID: &ws.OrgID, WorkspaceID: &ws.ID, Details: map[string]any{"name": k.Name, "prefix": k.Prefix}}); err != nil {
				return err
			}
			if len(k.Tags) > 0 {
				if err := syncTagBudgets(ctx, tx, actor, ws); err != nil {
					return err
				}
			}
		}
		// Read back: a concurrent revoke may have set the time first.
		k, err = InferenceKeyIn(ctx, tx, ws.ID, k.ID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return k, nil
}
