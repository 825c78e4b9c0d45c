package api

import (
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/budgets"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

func (s *Server) budgetRoutes() []*Route {
	return []*Route{
		{Method: "POST", Path: "/api/v1/data-plane/budget-leases", Tag: "Data Plane API",
			Summary: "Grant a data plane budget leases, record the spend it reports and take back what it returns",
			Perms:   []auth.Permission{auth.PolicyStateSync}, Body: wire.BudgetLeases{}, Result: wire.BudgetLeaseResult{}, Handle: s.leaseBudgets},
		{Method: "GET", Path: orgWS + "/{workspace_ref}/budgets", Tag: "Workspace Policies",
			Summary: "State of the workspace's budgets in their current periods: spent, reserved by data planes, remaining (complete set)",
			Perms:   []auth.Permission{auth.PoliciesRead}, Result: []wire.BudgetState{}, Handle: s.listBudgets},
	}
}

var (
	counterRule  = validate.StringRule{Min: 1, Max: 200, NoControl: true}
	nanoRule     = validate.IntRule{Min: validate.Bound(0)}
	modelRefRule = validate.StringRule{Min: 1, Max: catalog.MaxModelIDLen}
)

func (s *Server) leaseBudgets(r *Request) (any, error) {
	var in wire.BudgetLeases
	if err := r.body(func(o *validate.Object) {
		in.Holder = requiredString(o, "holder", counterRule)
		v, ok := o.Require("asks")
		if !ok {
			return
		}
		validate.List(v, o.Loc().With("asks"), validate.ListRule{Min: 1, Max: 1000}, o.Errors(), func(item any, loc validate.Loc) {
			if a, ok := readLeaseAsk(item, loc, o.Errors()); ok {
				in.Asks = append(in.Asks, a)
			}
		})
	}); err != nil {
		return nil, err
	}
	grants, err := (&budgets.Leases{Store: s.store}).Lease(r.ctx, in.Holder, in.Asks)
	if err != nil {
		return nil, err
	}
	return wire.BudgetLeaseResult{Grants: grants}, nil
}

// readLeaseAsk reads one ask strictly.
func readLeaseAsk(v any, loc validate.Loc, errs *validate.Errors) (wire.BudgetLeaseAsk, bool) {
	o := validate.ReadObject(v, loc, errs)
	if o == nil {
		return wire.BudgetLeaseAsk{}, false
	}
	before := errs.Len()
	var a wire.BudgetLeaseAsk
	id := func(name string) uuid.UUID {
		if v, ok := o.Require(name); ok {
			u, _ := validate.UUID(v, loc.With(name), errs)
			return u
		}
		return uuid.Nil
	}
	ids := func(name string) []uuid.UUID {
		v, ok := o.Raw(name)
		if !ok || v == nil {
			return nil
		}
		out := []uuid.UUID{}
		validate.List(v, loc.With(name), validate.ListRule{Max: 1000}, errs, func(item any, l validate.Loc) {
			if u, ok := validate.UUID(item, l, errs); ok {
				out = append(out, u)
			}
		})
		return out
	}
	nano := func(name string) int64 {
		if v, ok := o.Raw(name); ok {
			n, _ := validate.Int(v, loc.With(name), nanoRule, errs)
			return n
		}
		return 0
	}
	if v, ok := o.Raw("kind"); ok && v != nil {
		a.Kind, _ = validate.Literal(v, loc.With("kind"), []string{wire.LeaseBudget, wire.LeaseRateLimit}, errs)
	}
	a.Counter = requiredString(o, "counter", counterRule)
	a.OrgID, a.WorkspaceID, a.PolicyID = id("org_id"), id("workspace_id"), id("policy_id")
	a.PolicyName = requiredString(o, "policy_name", validate.StringRule{Max: 200})
	if v, ok := o.Require("period"); ok {
		periods := []string{"day", "month"}
		if a.Kind == wire.LeaseRateLimit {
			periods = []string{"minute"}
		}
		a.Period, _ = validate.Literal(v, loc.With("period"), periods, errs)
	}
	if v, ok := o.Raw("inference_key_id"); ok && v != nil {
		if u, ok := validate.UUID(v, loc.With("inference_key_id"), errs); ok {
			a.InferenceKeyID = &u
		}
	}
	if v, ok := o.Require("period_start"); ok {
		a.PeriodStart, _ = validate.DateTime(v, loc.With("period_start"), errs)
	}
	if v, ok := o.Require("limit_nano_usd"); ok {
		a.LimitNanoUSD, _ = validate.Int(v, loc.With("limit_nano_usd"), nanoRule, errs)
	}
	a.OwnerIDs, a.KeyIDs = ids("owner_ids"), ids("key_ids")
	if v, ok := o.Raw("models"); ok && v != nil {
		validate.List(v, loc.With("models"), validate.ListRule{Max: 1000}, errs, func(item any, l validate.Loc) {
			if m, ok := validate.String(item, l, modelRefRule, errs); ok {
				a.Models = append(a.Models, m)
			}
		})
	}
	a.WantNanoUSD, a.UsedNanoUSD, a.ReturnedNanoUSD = nano("want_nano_usd"), nano("used_nano_usd"), nano("returned_nano_usd")
	o.Close()
	return a, errs.Len() == before
}

func (s *Server) listBudgets(r *Request) (any, error) {
	return (&budgets.Leases{Store: s.store}).States(r.ctx, r.WS.ID, time.Now())
}
