package store

import (
	"context"
	"encoding/json"
	"time"
)

// EgressSetting is the instance's egress setting: CIDR ranges refused and
// ranges allowed (canonical prefixes, checked by the API).
type EgressSetting struct {
	Deny  []string `json:"deny"`
	Allow []string `json:"allow"`
}

// EgressSetting reads the stored setting; none is two empty lists.
func (st *InstanceState) EgressSetting() EgressSetting {
	out := EgressSetting{Deny: []string{}, Allow: []string{}}
	if st.Egress != nil {
		_ = json.Unmarshal([]byte(*st.Egress), &out) // written by SetInstanceEgress
	}
	if out.Deny == nil {
		out.Deny = []string{}
	}
	if out.Allow == nil {
		out.Allow = []string{}
	}
	return out
}

// SetInstanceEgress stores the egress setting and counts the change; the
// revision is incremented in the database, so two replicas writing at
// once never hand out the same one.
func (s *Store) SetInstanceEgress(ctx context.Context, setting EgressSetting, at time.Time) error {
	b, err := json.Marshal(setting)
	if err != nil {
		return err
	}
	_, err = s.db.NewUpdate().Model((*InstanceState)(nil)).
		Set("egress = ?", string(b)).Set("egress_revision = egress_revision + 1").Set("settings_updated_at = ?", at).
		Where("id = 1").Exec(ctx)
	return mapErr(err)
}
