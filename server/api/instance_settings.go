package api

import (
	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/egress"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

// The instance's settings: for now its egress policy (issue 27), read by
// whoever may read the instance's provider credentials, changed by an
// instance owner alone (backend.UpdateInstanceSettings), which refreshes
// every bundle, since every data plane enforces it.
func (s *Server) instanceSettingsRoutes() []*Route {
	// The spec's groups are closed: the egress policy governs where the
	// instance's provider credentials (and every other URL) may point.
	const tag, path = "Instance Provider Credentials", "/api/v1/instance/settings"
	return []*Route{
		{Method: "GET", Path: path, Tag: tag, Summary: "Get the instance-wide settings: the egress policy for the URLs gw calls",
			Perms: []auth.Permission{auth.ProviderCredentialsRead}, Result: wire.InstanceSettings{}, Handle: s.getInstanceSettings},
		{Method: "PATCH", Path: path, Tag: tag, Summary: "Change the instance-wide settings (instance owners only)",
			Perms: []auth.Permission{auth.ProviderCredentialsManage}, Body: wire.InstanceSettingsUpdate{}, Result: wire.InstanceSettings{},
			RefreshesBundles: true, Handle: s.updateInstanceSettings},
	}
}

func (s *Server) toInstanceSettings(st *store.InstanceState) wire.InstanceSettings {
	e := st.EgressSetting()
	return wire.InstanceSettings{Egress: wire.EgressSetting{Deny: e.Deny, Allow: e.Allow},
		BuiltinDeny: egress.Strings(egress.BuiltinDeny()), EgressDenyPrivate: s.opts.Egress.DenyPrivate,
		Revision: st.EgressRevision, UpdatedAt: st.SettingsUpdatedAt,
		OAuthCIMDAllowPrivate: st.OAuthCIMDAllowPrivate != nil && *st.OAuthCIMDAllowPrivate}
}

func (s *Server) getInstanceSettings(r *Request) (any, error) {
	st, err := s.store.GetInstanceState(r.ctx)
	if err != nil {
		return nil, err
	}
	return s.toInstanceSettings(st), nil
}

func (s *Server) updateInstanceSettings(r *Request) (any, error) {
	var in backend.InstanceSettingsUpdate
	if err := r.body(func(o *validate.Object) {
		in.OAuthCIMDAllowPrivate = optionalBool(o, "oauth_cimd_allow_private")
		v, ok := o.Raw("egress")
		if !ok {
			return
		}
		eo := validate.ReadObject(v, o.Loc().With("egress"), o.Errors())
		if eo == nil {
			return
		}
		in.Egress = &store.EgressSetting{Deny: readRanges(eo, "deny"), Allow: readRanges(eo, "allow")}
		eo.Close()
	}); err != nil {
		return nil, err
	}
	st, err := backend.UpdateInstanceSettings(r.ctx, s.store, r.actor(), in)
	if err != nil {
		return nil, err
	}
	return s.toInstanceSettings(st), nil
}

var rangeRule = validate.StringRule{Min: 1, Max: 64, NoControl: true}

// readRanges reads a list of CIDR ranges (egress.ParseRange), canonical
// and without repeats; absent is empty.
func readRanges(o *validate.Object, name string) []string {
	out := []string{}
	v, ok := o.Raw(name)
	if !ok {
		return out
	}
	seen := map[string]bool{}
	validate.List(v, o.Loc().With(name), validate.ListRule{Max: egress.MaxRanges}, o.Errors(), func(v any, loc validate.Loc) {
		s, ok := validate.String(v, loc, rangeRule, o.Errors())
		if !ok {
			return
		}
		p, problem := egress.ParseRange(s)
		if problem != "" {
			o.Errors().Add(loc, "value_error", "Value error, "+problem, s, nil)
			return
		}
		if !seen[p.String()] {
			seen[p.String()] = true
			out = append(out, p.String())
		}
	})
	return out
}
