package backend

import (
	"context"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/store"
)

// InstanceSettingsUpdate changes the instance-wide settings; a nil member
// stays as it is.
type InstanceSettingsUpdate struct {
	// Egress replaces the egress setting whole (ranges already checked:
	// egress.ParseRange's canonical form).
	Egress *store.EgressSetting
	// OAuthCIMDAllowPrivate sets oauth_cimd_allow_private (issue 31).
	OAuthCIMDAllowPrivate *bool
}

// UpdateInstanceSettings changes the instance-wide settings and audits the
// change, old and new. Only an instance owner may: the egress setting
// decides where every data plane of every organization may connect, and
// an allow can lift the refusal of a cloud metadata service. Instance
// admins, organization and workspace admins can never widen it.
func UpdateInstanceSettings(ctx context.Context, st *store.Store, actor Actor, in InstanceSettingsUpdate) (*store.InstanceState, error) {
	if actor.Type != "system" && actor.InstanceRole != auth.InstanceOwner {
		return nil, errorf(Forbidden, "only an instance owner can change the instance's settings")
	}
	var out *store.InstanceState
	err := st.InTx(ctx, func(tx *store.Store) error {
		before, err := tx.GetInstanceState(ctx)
		if err != nil {
			return err
		}
		details := map[string]any{"changed": []string{}}
		if in.Egress != nil {
			if err := tx.SetInstanceEgress(ctx, *in.Egress, store.Now()); err != nil {
				return err
			}
			details["old_egress"], details["new_egress"] = before.EgressSetting(), *in.Egress
			details["changed"] = []string{"egress"}
		}
		if in.OAuthCIMDAllowPrivate != nil {
			if err := tx.SetOAuthCIMDAllowPrivate(ctx, *in.OAuthCIMDAllowPrivate, store.Now()); err != nil {
				return err
			}
			details["old_oauth_cimd_allow_private"] = before.OAuthCIMDAllowPrivate != nil && *before.OAuthCIMDAllowPrivate
			details["new_oauth_cimd_allow_private"] = *in.OAuthCIMDAllowPrivate
			details["changed"] = append(details["changed"].([]string), "oauth_cimd_allow_private")
		}
		if out, err = tx.GetInstanceState(ctx); err != nil {
			return err
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "instance.settings_updated", TargetType: "instance", TargetID: "instance",
			Details: details})
	})
	return out, err
}
