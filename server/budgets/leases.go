// Package budgets is the control plane's side of hard budgets: it grants
// data planes leases, slices of each budget counter's remainder, so that
// the spend of every data plane together never passes the amount (DESIGN
// §6), and it reports budget state. Lease state lives in the database, so
// every control-plane replica sharing it sees the same.
//
// A counter is resolved from the control plane's own store: its
// organization, amount and seed scope come from the policy (or, for a rate
// limit, the key and workspace) its name gives, never from the data plane;
// a data plane is served only the counters of the organizations it is
// enrolled for.
package budgets

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/spend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/usage"
	"github.com/gw-gateway/gw/wire"
)

// Leases grants budget leases from the database.
type Leases struct {
	Store *store.Store
}

// Refused is a lease request refused whole: nothing changed but the audit
// log, which records the attempt. Forbidden says the data plane may not
// lease at all (it is not enrolled, or not with this key); otherwise a
// counter does not exist for it (no such counter, or one of an
// organization it is not enrolled for: the two are answered alike).
type Refused struct {
	Forbidden bool
	Detail    string
	// reason is what the audit log records.
	reason string
}

func (e *Refused) Error() string { return e.Detail }

// Unwrap lets a data plane in process tell a refusal from a failure.
func (e *Refused) Unwrap() error { return spend.ErrLeaseRefused }

// Lease answers the asks of the data plane that runs in process (gw
// serve, role all), which serves every organization: the counters are
// resolved as for a remote data plane, without the enrollment.
func (l *Leases) Lease(ctx context.Context, holder string, asks []wire.BudgetLeaseAsk) ([]wire.BudgetLeaseGrant, error) {
	grants, miss, err := l.lease(ctx, holder, nil, asks)
	if err != nil {
		return nil, err
	}
	if miss != nil {
		return nil, &Refused{Detail: fmt.Sprintf("budget counter %q: %s", miss.counter, miss.detail)}
	}
	return grants, nil
}

// DataPlaneCaller is a remote data plane asking for leases: the id it
// names and the management key it authenticated with.
type DataPlaneCaller struct {
	ID    string
	KeyID uuid.UUID
	Actor backend.Actor
}

// LeaseForDataPlane answers a remote data plane: it must be enrolled,
// approved, with the key it calls with, and every counter must resolve
// within the organizations it is enrolled for. Anything else refuses the
// whole request (*Refused), changes nothing, and is audited.
func (l *Leases) LeaseForDataPlane(ctx context.Context, caller DataPlaneCaller, req wire.BudgetLeases) ([]wire.BudgetLeaseGrant, error) {
	e, err := l.Store.GetEnrollment(ctx, caller.ID)
	var refusal *Refused
	switch {
	case errors.Is(err, store.ErrNotFound):
		refusal = &Refused{Forbidden: true, reason: "unknown_data_plane", Detail: fmt.Sprintf("data plane %q has not asked to be enrolled", caller.ID)}
	case err != nil:
		return nil, fmt.Errorf("read enrollment of %s: %w", caller.ID, err)
	case e.KeyID == nil || *e.KeyID != caller.KeyID:
		refusal = &Refused{Forbidden: true, reason: "other_key", Detail: fmt.Sprintf("data plane %q is enrolled with another management key", caller.ID)}
	case e.Status != store.EnrollmentApproved:
		refusal = &Refused{Forbidden: true, reason: "not_approved", Detail: fmt.Sprintf("data plane %q is not enrolled (its enrollment is %s)", caller.ID, e.Status)}
	case !HolderOf(caller.ID, req.Holder):
		refusal = &Refused{Forbidden: true, reason: "foreign_holder", Detail: fmt.Sprintf("holder %q is not data plane %q's: its holders are its id, or its id followed by '#' and a suffix",
			req.Holder, caller.ID)}
	}
	if refusal != nil {
		return nil, l.refuse(ctx, caller, nil, refusal, req.Asks)
	}
	grants, miss, err := l.lease(ctx, req.Holder, func(org uuid.UUID) bool { return slices.Contains(e.OrgIDs, org) }, req.Asks)
	if err != nil {
		return nil, err
	}
	if miss != nil {
		refusal = &Refused{Detail: fmt.Sprintf("data plane %q has no budget counter %q", caller.ID, miss.counter)}
		return nil, l.refuse(ctx, caller, miss, refusal, req.Asks)
	}
	return grants, nil
}

// HolderOf says whether holder is one of the data plane's: its id, or its
// id and a suffix after '#', so one data plane's processes never touch
// another data plane's leases.
func HolderOf(dataPlaneID, holder string) bool {
	return holder == dataPlaneID || strings.HasPrefix(holder, dataPlaneID+"#")
}

// refuse audits a refused lease request and returns the refusal. The
// entry goes to the organization the refused counter belongs to, when it
// exists, so that organization's admins see who reached for its budget.
func (l *Leases) refuse(ctx context.Context, caller DataPlaneCaller, miss *unresolved, refusal *Refused, asks []wire.BudgetLeaseAsk) error {
	details := map[string]any{"data_plane_id": caller.ID, "asks": len(asks), "detail": refusal.Detail}
	entry := backend.AuditEntry{Action: "data_plane.budget_lease_refused", TargetType: "data_plane", TargetID: caller.ID, Details: details}
	details["reason"] = refusal.reason
	if miss != nil {
		details["counter"], details["reason"] = miss.counter, miss.reason
		entry.OrgID = miss.orgID
	}
	err := l.Store.InTx(ctx, func(tx *store.Store) error { return backend.Audit(ctx, tx, caller.Actor, entry) })
	if err != nil {
		return fmt.Errorf("audit a refused lease request: %w", err)
	}
	return refusal
}

// lease resolves every ask first, and grants only when all resolve: a
// request with one counter it may not have changes nothing. A report (an
// ask that wants nothing more) on a lease the holder already has needs
// only its organization enrolled: a policy disabled or a key revoked
// since still takes the spend it saw.
func (l *Leases) lease(ctx context.Context, holder string, enrolled func(uuid.UUID) bool, asks []wire.BudgetLeaseAsk) ([]wire.BudgetLeaseGrant, *unresolved, error) {
	r := newResolver(l.Store, store.Now(), enrolled)
	defs := make([]*counterDef, len(asks))
	for i, a := range asks {
		period, err := CounterPeriod(a.Counter)
		if err == nil {
			if start, _ := spend.Bounds(period, a.PeriodStart); !start.Equal(a.PeriodStart.UTC()) {
				err = fmt.Errorf("period_start %s does not start a %s", a.PeriodStart.Format(time.RFC3339), period)
			}
		}
		if err != nil {
			return nil, &unresolved{counter: a.Counter, reason: reasonNoCounter, detail: err.Error()}, nil
		}
		if a.WantNanoUSD == 0 {
			if ok, err := l.reportable(ctx, r, holder, a); err != nil || ok {
				if err != nil {
					return nil, nil, err
				}
				continue
			}
		}
		def, miss, err := r.resolve(ctx, a.Counter)
		if err != nil || miss != nil {
			return nil, miss, err
		}
		defs[i] = def
	}
	out := make([]wire.BudgetLeaseGrant, 0, len(asks))
	for i, a := range asks {
		g, err := l.grant(ctx, holder, defs[i], a)
		if err != nil {
			return nil, nil, fmt.Errorf("budget lease for %s: %w", a.Counter, err)
		}
		out = append(out, g)
	}
	return out, nil, nil
}

// reportable says whether a report needs no resolution: the holder has a
// lease of the counter's period, in an organization it may lease in.
func (l *Leases) reportable(ctx context.Context, r *resolver, holder string, a wire.BudgetLeaseAsk) (bool, error) {
	c, err := l.Store.GetBudgetCounter(ctx, a.Counter, a.PeriodStart)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if r.enrolled != nil && !r.enrolled(c.OrgID) {
		return false, nil
	}
	_, err = l.Store.GetBudgetLease(ctx, a.Counter, a.PeriodStart, holder)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// grant answers one ask in a transaction of its own that holds the
// counter's row: of two holders asking at once, the second sees what the
// first was granted. def is nil for a report on an existing lease.
func (l *Leases) grant(ctx context.Context, holder string, def *counterDef, a wire.BudgetLeaseAsk) (wire.BudgetLeaseGrant, error) {
	var g wire.BudgetLeaseGrant
	run := func() error {
		return l.Store.InTx(ctx, func(tx *store.Store) error {
			var err error
			g, err = grantOne(ctx, tx, holder, def, a)
			return err
		})
	}
	err := run()
	if errors.Is(err, store.ErrConflict) {
		// Another replica created the counter between our read and
		// insert: its row is there now.
		err = run()
	}
	return g, err
}

// silentHolder is how long a holder may go without a report before its
// unspent allowance counts as spent in OthersUsedNanoUSD: data planes
// report every 2 s while their spend changes, and give back everything
// they hold within two reports of going idle.
const silentHolder = 10 * time.Second

func grantOne(ctx context.Context, tx *store.Store, holder string, def *counterDef, a wire.BudgetLeaseAsk) (wire.BudgetLeaseGrant, error) {
	start := a.PeriodStart.UTC()
	now := store.Now()
	c, err := tx.LockBudgetCounter(ctx, a.Counter, start)
	switch {
	case errors.Is(err, store.ErrNotFound) && def != nil:
		if c, err = newCounter(ctx, tx, def, start, now); err != nil {
			return wire.BudgetLeaseGrant{}, err
		}
	case err != nil:
		return wire.BudgetLeaseGrant{}, err
	case def != nil && (c.LimitNanoUSD != def.limit || c.PolicyName != def.policyName):
		// The policy was edited: the new amount applies, the spend stays.
		c.LimitNanoUSD, c.PolicyName, c.UpdatedAt = def.limit, def.policyName, now
		if err := tx.UpdateBudgetCounter(ctx, c); err != nil {
			return wire.BudgetLeaseGrant{}, err
		}
	}
	leases, err := tx.ListBudgetLeases(ctx, a.Counter, start)
	if err != nil {
		return wire.BudgetLeaseGrant{}, err
	}
	mine := &store.BudgetLease{Counter: a.Counter, PeriodStart: start, Holder: holder}
	var others []spend.Lease
	othersTotal, othersUsed := c.SeededNanoUSD, c.SeededNanoUSD
	for i := range leases {
		if leases[i].Holder == holder {
			mine = &leases[i]
			continue
		}
		others = append(others, spend.Lease{Granted: leases[i].GrantedNanoUSD, Used: leases[i].UsedNanoUSD, Returned: leases[i].ReturnedNanoUSD})
		held := max(leases[i].GrantedNanoUSD, leases[i].UsedNanoUSD)
		othersTotal += held
		if now.Sub(leases[i].UpdatedAt) > silentHolder {
			// A live holder reports or gives back within a few seconds; one
			// silent longer is likely gone, and what it holds will not come
			// back this period: waiting for it is in vain.
			othersUsed += held
		} else {
			othersUsed += leases[i].UsedNanoUSD
		}
	}
	next := spend.GrantLease(c.LimitNanoUSD, c.SeededNanoUSD, others,
		spend.Lease{Granted: mine.GrantedNanoUSD, Used: mine.UsedNanoUSD, Returned: mine.ReturnedNanoUSD},
		a.WantNanoUSD, a.NeedNanoUSD, a.UsedNanoUSD, a.ReturnedNanoUSD)
	mine.GrantedNanoUSD, mine.UsedNanoUSD, mine.ReturnedNanoUSD = next.Granted, next.Used, next.Returned
	mine.UpdatedAt = now
	if err := tx.SaveBudgetLease(ctx, mine); err != nil {
		return wire.BudgetLeaseGrant{}, err
	}
	return wire.BudgetLeaseGrant{Counter: a.Counter, PeriodStart: start, GrantedNanoUSD: mine.GrantedNanoUSD, UsedNanoUSD: mine.UsedNanoUSD,
		ReturnedNanoUSD: mine.ReturnedNanoUSD, LimitNanoUSD: c.LimitNanoUSD, OthersNanoUSD: othersTotal, OthersUsedNanoUSD: othersUsed}, nil
}

// newCounter makes a counter, seeded with the cost of the usage events
// already recorded in its period that it covers: a budget set mid-period
// counts the period's spend so far. The rule's stream and capability
// conditions are not recorded on events, so the seed may count more than
// the rule matched, never less.
func newCounter(ctx context.Context, tx *store.Store, def *counterDef, start, now time.Time) (*store.BudgetCounter, error) {
	_, end := spend.Bounds(def.period, start)
	var seed int64
	if !def.rate {
		var err error
		if seed, err = seedOf(ctx, tx, def, start, end); err != nil {
			return nil, err
		}
	}
	c := &store.BudgetCounter{Counter: def.name, PeriodStart: start, OrgID: def.orgID, PolicyID: def.policyID, PolicyName: def.policyName,
		InferenceKeyID: def.keyID, PeriodEnd: end, LimitNanoUSD: def.limit, SeededNanoUSD: seed, CreatedAt: now, UpdatedAt: now}
	if err := tx.CreateBudgetCounter(ctx, c); err != nil {
		return nil, err
	}
	return c, nil
}

// seedOf is the cost of the usage events of [start, end) a budget counter
// covers.
func seedOf(ctx context.Context, st *store.Store, def *counterDef, start, end time.Time) (int64, error) {
	ws := def.wsID
	f := store.UsageFilter{OrgID: def.orgID, From: start, To: end, WorkspaceID: &ws, InferenceKeyID: def.keyID}
	if def.playgroundUser != nil {
		f.InferenceKeyID = nil // the narrowing keeps the user's keyless events
	}
	seed, err := usage.SumCost(ctx, st, f, def.scope.narrowing())
	if err != nil {
		return 0, fmt.Errorf("seed %s from usage events: %w", def.name, err)
	}
	return seed, nil
}
