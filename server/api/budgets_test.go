package api_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/playground"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/spend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// leaseTenant is one organization's side of the lease matrix: a data
// plane enrolled for it alone, with its own management key, and a
// workspace with a budget policy and a rate-limited inference key.
type leaseTenant struct {
	org        string
	orgID      uuid.UUID
	dataPlane  string
	token      string
	policy     uuid.UUID
	key        uuid.UUID
	dayStart   time.Time
	monthStart time.Time
}

func (l leaseTenant) shared() string {
	return spend.Counter{PolicyID: l.policy, Period: spend.Day, Aggregation: "shared"}.String()
}

func (l leaseTenant) perKey(key uuid.UUID) string {
	return spend.Counter{PolicyID: l.policy, Period: spend.Month, Aggregation: "per_key", KeyID: key}.String()
}

func (l leaseTenant) rate(key uuid.UUID) string { return "rl/" + key.String() + "/requests" }

// newLeaseTenant enrolls data plane dp for org (its slug) and gives the
// org's workspace ws a policy with a day's shared and a month's per_key
// budget and a key limited to 100 requests a minute.
func newLeaseTenant(t *testing.T, e *enrollEnv, org, ws, dp string) leaseTenant {
	t.Helper()
	l := leaseTenant{org: org, dataPlane: dp}
	l.token = e.key("/api/v1/instance", e.ownerKey, []string{"bundles.read", "data-planes.heartbeat", "policy-state.sync"}, nil).Token
	// Each data plane has a key pair of its own.
	k, err := secrets.GenerateDataPlaneKey()
	if err != nil {
		t.Fatal(err)
	}
	e.must("POST", "/api/v1/data-plane/enrollments", l.token, map[string]any{"id": dp, "public_key": k.Public().String()})
	e.must("POST", "/api/v1/instance/data-planes/enrollments/"+dp+"/approve", e.ownerKey, map[string]any{"organizations": []string{org}})
	base := "/api/v1/organizations/" + org + "/workspaces/" + ws
	budget := func(period, aggregation string) map[string]any {
		return map[string]any{"match": map[string]any{"kind": "all_requests"},
			"action": map[string]any{"kind": "budget", "amount_usd": "100", "period": period, "aggregation": aggregation}}
	}
	l.policy = decodeData[wire.Policy](t, e.must("POST", base+"/policies", e.ownerKey,
		policyBody("cap", budget("day", "shared"), budget("month", "per_key")))).ID
	key := decodeData[wire.InferenceKey](t, e.must("POST", base+"/inference-keys", e.ownerKey,
		map[string]any{"name": "callers", "rate_limits": map[string]any{"requests_per_minute": 100}}))
	l.key, l.orgID = key.ID, key.OrgID
	now := time.Now()
	l.dayStart, _ = spend.Bounds(spend.Day, now)
	l.monthStart, _ = spend.Bounds(spend.Month, now)
	return l
}

// lease asks as data plane dp with token.
func (e *enrollEnv) lease(token, dp, holder string, asks ...map[string]any) (int, []byte) {
	return e.do("POST", "/api/v1/data-plane/budget-leases", token, map[string]any{"data_plane_id": dp, "holder": holder, "asks": asks})
}

func ask(counter string, start time.Time, want int64) map[string]any {
	return map[string]any{"counter": counter, "period_start": start.Format(time.RFC3339), "want_nano_usd": want,
		"used_nano_usd": 0, "returned_nano_usd": 0}
}

// leaseState is every counter and lease row, for "nothing changed".
func leaseState(t *testing.T, st *store.Store) ([]store.BudgetCounter, []store.BudgetLease) {
	t.Helper()
	ctx := context.Background()
	var cs []store.BudgetCounter
	var ls []store.BudgetLease
	if err := st.DB().NewSelect().Model(&cs).OrderExpr("counter, period_start").Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.DB().NewSelect().Model(&ls).OrderExpr("counter, period_start, holder").Scan(ctx); err != nil {
		t.Fatal(err)
	}
	return cs, ls
}

// TestLeaseMatrix: a data plane enrolled for organization A asks for
// leases with, in each field of the body, what belongs to organization B
// (its data plane, its holders, its policy, its key, its rate limit, and
// A's policy with B's key) or the members that used to carry amounts. Each
// answer is 403 or 404 (422 for a member the body no longer has), nothing
// in the lease tables changes — B's amount, spend and leases least of all
// —, and each refusal is in the audit log, in B's when B's counter was
// reached for.
func TestLeaseMatrix(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newEnrollEnv(t, db)
		e.must("POST", "/api/v1/organizations/b/workspaces", e.ownerKey, map[string]any{"name": "b-main", "slug": "b-main"})
		e.must("POST", "/api/v1/organizations/b/members", e.ownerKey, map[string]any{"user_id": e.boot.User.ID, "role": "owner"})
		a := newLeaseTenant(t, e, "default", "default", "dp-a")
		b := newLeaseTenant(t, e, "b", "b-main", "dp-b")

		// Each plane's own counters lease: the tables hold both tenants' state.
		for _, l := range []leaseTenant{a, b} {
			minute := time.Now().Truncate(time.Minute)
			st, raw := e.lease(l.token, l.dataPlane, l.dataPlane+"#1", ask(l.shared(), l.dayStart, 1000), ask(l.perKey(l.key), l.monthStart, 500),
				ask(l.rate(l.key), minute, 10))
			if st != 200 {
				t.Fatalf("%s leases its own counters: %d %s", l.dataPlane, st, raw)
			}
			res := decodeData[wire.BudgetLeaseResult](t, raw)
			if len(res.Grants) != 3 || res.Grants[0].GrantedNanoUSD != 1000 || res.Grants[0].LimitNanoUSD != 100e9 || res.Grants[2].LimitNanoUSD != 100 {
				t.Fatalf("%s grants %+v", l.dataPlane, res.Grants)
			}
		}
		counters, leases := leaseState(t, e.st)
		refusalsIn := func(org string) int {
			n := 0
			for _, ev := range decodeData[[]wire.AuditEvent](t, e.must("GET", "/api/v1/organizations/"+org+"/activity?limit=200", e.ownerKey, nil)) {
				if ev.Action == "data_plane.budget_lease_refused" {
					n++
				}
			}
			return n
		}
		instanceRefusals := func() int {
			n := 0
			for _, ev := range e.auditEvents() {
				if ev.Action == "data_plane.budget_lease_refused" {
					n++
				}
			}
			return n
		}
		minute := time.Now().Truncate(time.Minute)
		cases := []struct {
			name     string
			dp       string
			holder   string
			asks     []map[string]any
			status   int
			auditInB bool
		}{
			{"data_plane_id: B's data plane", "dp-b", "dp-b", []map[string]any{ask(a.shared(), a.dayStart, 1)}, 403, false},
			{"data_plane_id: B's, asking for B's counter", "dp-b", "dp-b#1", []map[string]any{ask(b.shared(), b.dayStart, 1)}, 403, false},
			{"data_plane_id: one never enrolled", "dp-nobody", "dp-nobody", []map[string]any{ask(a.shared(), a.dayStart, 1)}, 403, false},
			{"holder: B's data plane's", "dp-a", "dp-b#1", []map[string]any{ask(a.shared(), a.dayStart, 1)}, 403, false},
			{"holder: B's data plane id", "dp-a", "dp-b", []map[string]any{ask(a.shared(), a.dayStart, 1)}, 403, false},
			{"counter: B's policy", "dp-a", "dp-a#1", []map[string]any{ask(b.shared(), b.dayStart, 1e12)}, 404, true},
			{"counter: B's policy and key", "dp-a", "dp-a#1", []map[string]any{ask(b.perKey(b.key), b.monthStart, 1)}, 404, true},
			{"counter: B's policy, A's key", "dp-a", "dp-a#1", []map[string]any{ask(b.perKey(a.key), b.monthStart, 1)}, 404, true},
			{"counter: A's policy, B's key", "dp-a", "dp-a#1", []map[string]any{ask(a.perKey(b.key), a.monthStart, 1)}, 404, false},
			{"counter: B's key's rate limit", "dp-a", "dp-a#1", []map[string]any{ask(b.rate(b.key), minute, 1000)}, 404, true},
			{"counter: B's policy, with A's own in the same request", "dp-a", "dp-a#1",
				[]map[string]any{ask(a.shared(), a.dayStart, 5), ask(b.shared(), b.dayStart, 5)}, 404, true},
			{"counter: a report of spend on B's counter", "dp-a", "dp-a#1",
				[]map[string]any{{"counter": b.shared(), "period_start": b.dayStart.Format(time.RFC3339), "want_nano_usd": 0,
					"used_nano_usd": 99e9, "returned_nano_usd": 1e12}}, 404, true},
			{"counter: a report on B's counter as B's holder name", "dp-a", "dp-a",
				[]map[string]any{{"counter": b.shared(), "period_start": b.dayStart.Format(time.RFC3339), "used_nano_usd": 99e9}}, 404, true},
		}
		// The members that used to carry amounts and scope are gone: sent,
		// they are refused whole, as any unknown member is.
		for member, value := range map[string]any{"org_id": b.orgID, "workspace_id": uuid.New(), "policy_id": b.policy, "policy_name": "x",
			"limit_nano_usd": 1, "owner_ids": []string{uuid.NewString()}, "key_ids": []string{b.key.String()}, "models": []string{"m"},
			"kind": "budget", "period": "day", "inference_key_id": b.key} {
			bad := ask(b.shared(), b.dayStart, 1)
			bad[member] = value
			cases = append(cases, struct {
				name     string
				dp       string
				holder   string
				asks     []map[string]any
				status   int
				auditInB bool
			}{"member " + member, "dp-a", "dp-a#1", []map[string]any{bad}, 422, false})
		}
		for _, tc := range cases {
			beforeB, beforeAll := refusalsIn("b"), instanceRefusals()
			st, raw := e.lease(a.token, tc.dp, tc.holder, tc.asks...)
			if st != tc.status {
				t.Errorf("%s: %d %s, want %d", tc.name, st, raw, tc.status)
				continue
			}
			if c, l := leaseState(t, e.st); !reflect.DeepEqual(c, counters) || !reflect.DeepEqual(l, leases) {
				t.Errorf("%s changed the lease tables:\n%+v\n%+v", tc.name, c, l)
			}
			if tc.status == 422 {
				continue
			}
			if n := instanceRefusals(); n != beforeAll+1 {
				t.Errorf("%s: %d audit events of the refusal, want 1", tc.name, n-beforeAll)
			}
			if got := refusalsIn("b") - beforeB; (got == 1) != tc.auditInB {
				t.Errorf("%s: %d refusals in B's audit log", tc.name, got)
			}
		}
		// A's own counters still lease, with the amounts of A's policy.
		if st, raw := e.lease(a.token, "dp-a", "dp-a#1", ask(a.shared(), a.dayStart, 1000)); st != 200 {
			t.Fatalf("A after the matrix: %d %s", st, raw)
		}
		// A data plane without data_plane_id (an older release) is told why.
		st, raw := e.do("POST", "/api/v1/data-plane/budget-leases", a.token, map[string]any{"holder": "dp-a", "asks": []any{ask(a.shared(), a.dayStart, 1)}})
		if st != 422 || !json.Valid(raw) || !strings.Contains(string(raw), "this version or later") {
			t.Fatalf("without data_plane_id: %d %s", st, raw)
		}
	})
}

// TestPlaygroundLeases (issue 26 row 2): a user's playground counts under
// an id derived from the workspace and the user, and its rate limit is
// leased under a name giving both. The control plane grants them as it
// grants a key's counters, to a data plane enrolled for the organization,
// for a user of it; another tenant's, or an id derived for nobody there,
// is 404 like an unknown counter.
func TestPlaygroundLeases(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newEnrollEnv(t, db)
		e.must("POST", "/api/v1/organizations/b/workspaces", e.ownerKey, map[string]any{"name": "b-main", "slug": "b-main"})
		e.must("POST", "/api/v1/organizations/b/members", e.ownerKey, map[string]any{"user_id": e.boot.User.ID, "role": "owner"})
		a := newLeaseTenant(t, e, "default", "default", "dp-a")
		b := newLeaseTenant(t, e, "b", "b-main", "dp-b")
		wsA := decodeData[wire.Workspace](t, e.must("GET", "/api/v1/organizations/default/workspaces/default", e.ownerKey, nil)).ID
		wsB := decodeData[wire.Workspace](t, e.must("GET", "/api/v1/organizations/b/workspaces/b-main", e.ownerKey, nil)).ID
		for _, base := range []string{"/api/v1/organizations/default/workspaces/default", "/api/v1/organizations/b/workspaces/b-main"} {
			e.must("PATCH", base+"/settings", e.ownerKey, map[string]any{"rate_limits": map[string]any{"requests_per_minute": 60}})
		}
		owner := e.boot.User.ID
		minute := time.Now().Truncate(time.Minute)
		cases := []struct {
			name   string
			ask    map[string]any
			status int
		}{
			{"A's per_key budget, the owner's playground in A", ask(a.perKey(playground.KeyID(wsA, owner)), a.monthStart, 1000), 200},
			{"A's playground rate limit", ask(playground.RateCounter(wsA, owner, "requests"), minute, 1), 200},
			{"B's per_key budget, the owner's playground in B", ask(b.perKey(playground.KeyID(wsB, owner)), b.monthStart, 1), 404},
			{"B's playground rate limit", ask(playground.RateCounter(wsB, owner, "requests"), minute, 1), 404},
			{"A's budget, a playground id of B's workspace", ask(a.perKey(playground.KeyID(wsB, owner)), a.monthStart, 1), 404},
			{"A's budget, a playground id of nobody", ask(a.perKey(playground.KeyID(wsA, uuid.New())), a.monthStart, 1), 404},
			{"A's playground rate limit of nobody", ask(playground.RateCounter(wsA, uuid.New(), "requests"), minute, 1), 404},
		}
		for _, c := range cases {
			st, raw := e.lease(a.token, "dp-a", "dp-a#1", c.ask)
			if st != c.status {
				t.Errorf("%s: %d %s, want %d", c.name, st, raw, c.status)
			}
			if st == 200 {
				if g := decodeData[wire.BudgetLeaseResult](t, raw).Grants; len(g) != 1 || g[0].GrantedNanoUSD == 0 {
					t.Errorf("%s: grants %+v", c.name, g)
				}
			}
		}
		// The playground's rate limit is the workspace's: 60.
		_, raw := e.lease(a.token, "dp-a", "dp-a#1", ask(playground.RateCounter(wsA, owner, "requests"), minute, 1))
		if g := decodeData[wire.BudgetLeaseResult](t, raw).Grants; len(g) != 1 || g[0].LimitNanoUSD != 60 {
			t.Errorf("playground rate grant %+v", g)
		}
	})
}
