package api

import (
	"errors"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/tags"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

func (s *Server) tagBudgetRoutes() []*Route {
	const tag, base = "Workspace Policies", orgWS + "/{workspace_ref}/tag-budgets"
	return []*Route{
		{Method: "POST", Path: base, Tag: tag, Summary: "Create a budget for the keys carrying a tag (a selected_keys policy gw keeps on them)",
			Perms: []auth.Permission{auth.PoliciesManage}, Body: wire.TagBudgetCreate{}, Result: wire.TagBudget{},
			RefreshesBundles: true, Handle: s.createTagBudget},
		{Method: "GET", Path: base, Tag: tag, Summary: "List the workspace's tag budgets with their policies",
			Perms: []auth.Permission{auth.PoliciesRead}, Result: []wire.TagBudget{}, Handle: s.listTagBudgets},
	}
}

func toTagBudget(l *store.TagBudget, p *store.Policy) (wire.TagBudget, error) {
	wp, err := toPolicy(p)
	if err != nil {
		return wire.TagBudget{}, err
	}
	return wire.TagBudget{PolicyID: l.PolicyID, WorkspaceID: l.WorkspaceID, TagKey: l.TagKey, TagValue: l.TagValue,
		CreatedAt: l.CreatedAt, Policy: wp}, nil
}

func (s *Server) createTagBudget(r *Request) (any, error) {
	in := backend.TagBudgetCreate{Workspace: r.WS}
	if err := r.body(func(o *validate.Object) {
		in.TagKey = requiredString(o, "tag_key", validate.StringRule{Min: 1, Max: tags.MaxKeyLen, Pattern: tags.KeyPattern})
		in.TagValue = requiredString(o, "tag_value", validate.StringRule{Min: 1, Max: tags.MaxValueLen})
		if in.TagValue != "" {
			if m := tags.CheckValue(in.TagValue); m != "" {
				o.Errors().Add(o.Loc().With("tag_value"), "value_error", "Value error, "+m, in.TagValue, nil)
			}
		}
		in.AmountUSD = requiredString(o, "amount_usd", validate.StringRule{Min: 1, Max: 40})
		if v, ok := o.Require("period"); ok {
			in.Period, _ = validate.Literal(v, o.Loc().With("period"), []string{"day", "month"}, o.Errors())
		}
		if n := optionalString(o, "name", nameRule); n != nil {
			in.Name = *n
		}
	}); err != nil {
		return nil, err
	}
	if in.Name == "" {
		in.Name = "budget-" + in.TagKey + "-" + in.TagValue
		if len([]rune(in.Name)) > 100 {
			in.Name = string([]rune(in.Name)[:100])
		}
	}
	p, link, err := backend.CreateTagBudget(r.ctx, s.store, r.actor(), in)
	if err != nil {
		return nil, err
	}
	return toTagBudget(link, p)
}

func (s *Server) listTagBudgets(r *Request) (any, error) {
	links, err := s.store.ListTagBudgets(r.ctx, r.WS.ID)
	if err != nil {
		return nil, err
	}
	out := make([]wire.TagBudget, 0, len(links))
	for i := range links {
		p, err := s.store.GetPolicy(r.ctx, r.WS.ID, links[i].PolicyID)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		tb, err := toTagBudget(&links[i], p)
		if err != nil {
			return nil, err
		}
		out = append(out, tb)
	}
	return out, nil
}
