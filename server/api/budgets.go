package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/budgets"
	"github.com/gw-gateway/gw/server/spend"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

func (s *Server) budgetRoutes() []*Route {
	return []*Route{
		{Method: "POST", Path: "/api/v1/data-plane/budget-leases", Tag: "Data Plane API", Statuses: []int{404},
			Summary: "Grant a data plane budget leases, record the spend it reports and take back what it returns",
			Perms:   []auth.Permission{auth.PolicyStateSync}, Body: wire.BudgetLeases{}, Result: wire.BudgetLeaseResult{}, Handle: s.leaseBudgets},
		{Method: "GET", Path: orgWS + "/{workspace_ref}/budgets", Tag: "Workspace Policies",
			Summary: "State of the workspace's budgets in their current periods: spent, reserved by data planes, remaining (complete set)",
			Perms:   []auth.Permission{auth.PoliciesRead}, Result: []wire.BudgetState{}, Handle: s.listBudgets},
	}
}

var (
	counterRule = validate.StringRule{Min: 1, Max: 200, NoControl: true}
	nanoRule    = validate.IntRule{Min: validate.Bound(0)}
)

// leaseSkew is how far a data plane's clock may run ahead of the control
// plane's: a period_start later than that is refused. leaseLate is how
// long after its end a period may still be reported on.
const (
	leaseSkew = 5 * time.Minute
	leaseLate = 10 * time.Minute
)

func (s *Server) leaseBudgets(r *Request) (any, error) {
	var in wire.BudgetLeases
	now := time.Now()
	if err := r.body(func(o *validate.Object) {
		if v, ok := o.Raw("data_plane_id"); !ok {
			o.Errors().Add(o.Loc().With("data_plane_id"), "missing", "Field required: data planes lease as the enrolled data plane they are "+
				"(gw serve --role data-plane of this version or later)", nil, nil)
		} else {
			in.DataPlaneID, _ = validate.String(v, o.Loc().With("data_plane_id"), heartbeatIDRule, o.Errors())
		}
		in.Holder = requiredString(o, "holder", counterRule)
		v, ok := o.Require("asks")
		if !ok {
			return
		}
		validate.List(v, o.Loc().With("asks"), validate.ListRule{Min: 1, Max: 1000}, o.Errors(), func(item any, loc validate.Loc) {
			if a, ok := readLeaseAsk(item, loc, now, o.Errors()); ok {
				in.Asks = append(in.Asks, a)
			}
		})
	}); err != nil {
		return nil, err
	}
	keyID, err := pollerKeyID(r)
	if err != nil {
		return nil, err
	}
	grants, err := (&budgets.Leases{Store: s.store}).LeaseForDataPlane(r.ctx,
		budgets.DataPlaneCaller{ID: in.DataPlaneID, KeyID: keyID, Actor: r.actor()}, in)
	var refused *budgets.Refused
	if errors.As(err, &refused) {
		if refused.Forbidden {
			return nil, errorf(http.StatusForbidden, "%s", refused.Detail)
		}
		return nil, errorf(http.StatusNotFound, "%s", refused.Detail)
	}
	if err != nil {
		return nil, err
	}
	return wire.BudgetLeaseResult{Grants: grants}, nil
}

// readLeaseAsk reads one ask strictly: the counter's name must name a
// counter and period_start begin one of its periods, not far from now.
func readLeaseAsk(v any, loc validate.Loc, now time.Time, errs *validate.Errors) (wire.BudgetLeaseAsk, bool) {
	o := validate.ReadObject(v, loc, errs)
	if o == nil {
		return wire.BudgetLeaseAsk{}, false
	}
	before := errs.Len()
	var a wire.BudgetLeaseAsk
	nano := func(name string) int64 {
		if v, ok := o.Raw(name); ok {
			n, _ := validate.Int(v, loc.With(name), nanoRule, errs)
			return n
		}
		return 0
	}
	a.Counter = requiredString(o, "counter", counterRule)
	period, perr := budgets.CounterPeriod(a.Counter)
	if a.Counter != "" && perr != nil {
		errs.Add(loc.With("counter"), "value_error", perr.Error(), a.Counter, nil)
	}
	if v, ok := o.Require("period_start"); ok {
		var ok bool
		if a.PeriodStart, ok = validate.DateTime(v, loc.With("period_start"), errs); ok && perr == nil {
			start, end := spend.Bounds(period, a.PeriodStart)
			switch {
			case !start.Equal(a.PeriodStart.UTC()):
				errs.Add(loc.With("period_start"), "value_error", "period_start does not start a "+string(period), v, nil)
			case start.After(now.Add(leaseSkew)) || end.Before(now.Add(-leaseLate)):
				errs.Add(loc.With("period_start"), "value_error", "period_start is not the current "+string(period), v, nil)
			}
		}
	}
	a.WantNanoUSD, a.UsedNanoUSD, a.ReturnedNanoUSD = nano("want_nano_usd"), nano("used_nano_usd"), nano("returned_nano_usd")
	a.NeedNanoUSD = nano("need_nano_usd")
	o.Close()
	return a, errs.Len() == before
}

func (s *Server) listBudgets(r *Request) (any, error) {
	return (&budgets.Leases{Store: s.store}).States(r.ctx, r.WS.ID, time.Now())
}
