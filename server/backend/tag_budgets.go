package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
)

// A tag budget (issue 21) is an ordinary policy: a selected_keys target
// and a shared budget rule, so the spec's policy schema needs nothing new.
// Its key list is the workspace's unrevoked keys carrying the tag,
// rewritten whenever a key of the workspace is issued, re-tagged or
// revoked, in that change's transaction. The list starts with a marker
// naming the tag (tag:team=search), which matches no key: it keeps the
// list valid (1 to 1000 ids) while no key carries the tag, and says what
// the list follows to whoever reads the policy.

// MaxTagBudgetKeys bounds the keys a tag budget covers: the spec's 1000
// ids less the marker.
const MaxTagBudgetKeys = policy.MaxTargetIDs - 1

// TagBudgetCreate is a budget for the keys of a workspace carrying one tag.
type TagBudgetCreate struct {
	Workspace *store.Workspace
	Name      string
	TagKey    string
	TagValue  string
	// AmountUSD is an exact decimal; Period day or month.
	AmountUSD string
	Period    string
}

// tagMarker is the first key id of a tag budget's target.
func tagMarker(key, value string) string { return "tag:" + key + "=" + value }

// CreateTagBudget creates the policy and its link, with the keys that
// carry the tag now.
func CreateTagBudget(ctx context.Context, st *store.Store, actor Actor, in TagBudgetCreate) (*store.Policy, *store.TagBudget, error) {
	ws := in.Workspace
	var p *store.Policy
	var link *store.TagBudget
	err := st.InTx(ctx, func(tx *store.Store) error {
		ids, err := tagKeyIDs(ctx, tx, ws.ID, in.TagKey, in.TagValue)
		if err != nil {
			return err
		}
		raw, _ := json.Marshal(map[string]any{
			"target": map[string]any{"kind": "selected_keys", "key_ids": ids},
			"rules": []any{map[string]any{"match": map[string]any{"kind": "all_requests"},
				"action": map[string]any{"kind": "budget", "amount_usd": in.AmountUSD, "period": in.Period, "aggregation": "shared"}}},
		})
		def, err := policy.ParseDefinitionJSON(raw)
		if err == nil {
			err = policy.StorableErr(def, validate.Loc{"body", "definition"})
		}
		if err != nil {
			// The amount and period are the only members the caller chose.
			if ve, ok := validate.AsError(err); ok && len(ve.Issues) > 0 {
				return validate.Single(validate.Loc{"body", tagBudgetField(ve.Issues[0].Loc)}, ve.Issues[0].Type, ve.Issues[0].Msg, ve.Issues[0].Input, nil)
			}
			return err
		}
		if p, err = CreatePolicy(ctx, tx, actor, PolicyCreate{Workspace: ws, Name: in.Name, Enabled: true, Definition: def}); err != nil {
			return err
		}
		link = &store.TagBudget{PolicyID: p.ID, OrgID: ws.OrgID, WorkspaceID: ws.ID, TagKey: in.TagKey, TagValue: in.TagValue, CreatedAt: store.Now()}
		if err := tx.CreateTagBudget(ctx, link); err != nil {
			return err
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "tag_budget.created", TargetType: "policy", TargetID: p.ID.String(),
			OrgID: &ws.OrgID, WorkspaceID: &ws.ID, Details: map[string]any{"name": p.Name, "tag": in.TagKey + "=" + in.TagValue,
				"amount_usd": in.AmountUSD, "period": in.Period, "keys": len(ids) - 1}})
	})
	if err != nil {
		return nil, nil, err
	}
	return p, link, nil
}

// tagBudgetField names the body member a definition problem comes from.
func tagBudgetField(loc []any) string {
	if len(loc) > 0 {
		switch loc[len(loc)-1] {
		case "period":
			return "period"
		case "amount_usd":
			return "amount_usd"
		}
	}
	return "amount_usd"
}

// tagKeyIDs is a tag budget's key list: the marker, then the ids of the
// workspace's unrevoked keys carrying key=value, sorted.
func tagKeyIDs(ctx context.Context, st *store.Store, wsID uuid.UUID, key, value string) ([]string, error) {
	keys, err := st.ListInferenceKeys(ctx, wsID)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, k := range keys {
		if v, ok := k.Tags[key]; ok && v == value && k.RevokedAt == nil {
			ids = append(ids, k.ID.String())
		}
	}
	if len(ids) > MaxTagBudgetKeys {
		return nil, validate.Single(validate.Loc{"body", "tags"}, "value_error",
			fmt.Sprintf("Value error, a tag budget covers at most %d keys, and %d keys carry %s=%s", MaxTagBudgetKeys, len(ids), key, value), nil, nil)
	}
	slices.Sort(ids)
	return append([]string{tagMarker(key, value)}, ids...), nil
}

// syncTagBudgets rewrites the key list of every tag budget of ws whose
// keys changed, inside the caller's transaction: the one that issued,
// re-tagged or revoked a key. A policy whose target someone changed by
// hand is put back on the tag's keys.
func syncTagBudgets(ctx context.Context, tx *store.Store, actor Actor, ws *store.Workspace) error {
	links, err := tx.ListTagBudgets(ctx, ws.ID)
	if err != nil || len(links) == 0 {
		return err
	}
	for _, l := range links {
		p, err := tx.GetPolicy(ctx, ws.ID, l.PolicyID)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		var def policy.Definition
		if err := json.Unmarshal([]byte(p.Definition), &def); err != nil {
			return fmt.Errorf("stored definition of policy %s: %w", p.ID, err)
		}
		ids, err := tagKeyIDs(ctx, tx, ws.ID, l.TagKey, l.TagValue)
		if err != nil {
			return err
		}
		if def.Target.Kind == policy.TargetSelectedKeys && slices.Equal(def.Target.KeyIDs, ids) {
			continue
		}
		before := len(def.Target.KeyIDs)
		def.Target = policy.Target{Kind: policy.TargetSelectedKeys, KeyIDs: ids}
		if p.Definition, err = canonicalDefinition(&def); err != nil {
			return err
		}
		p.UpdatedAt = store.Now()
		if err := tx.UpdatePolicy(ctx, p); err != nil {
			return err
		}
		if err := Audit(ctx, tx, actor, AuditEntry{Action: "policy.updated", TargetType: "policy", TargetID: p.ID.String(),
			OrgID: &ws.OrgID, WorkspaceID: &ws.ID, Details: map[string]any{"name": p.Name, "enabled": p.Enabled, "definition_changed": true,
				"reason": "tag_budget", "tag": l.TagKey + "=" + l.TagValue, "keys_before": max(before-1, 0), "keys_after": len(ids) - 1}}); err != nil {
			return err
		}
	}
	return nil
}
