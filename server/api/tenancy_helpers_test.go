package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/server/egress/egresstest"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// The helpers of the API scenario tests: fresh instances, calls, checks of
// statuses, validation items and audit events.

// tnFreshEnv is an env on an empty instance: the setup token is prepared but
// nobody has bootstrapped, so ownerKey and boot are empty.
func tnFreshEnv(t *testing.T, db *bun.DB, opts api.Options) *env {
	t.Helper()
	ctx := context.Background()
	st := store.New(db)
	if opts.Egress.Resolver == nil {
		// Names given as URLs are resolved when saved: not for real here.
		opts.Egress.Resolver = egresstest.NewResolver()
	}
	s, err := api.New(ctx, st, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PrepareSetup(ctx, setupToken); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return &env{t: t, srv: srv, api: s, st: st}
}

// tnEachEnvOpts is eachEnv with options.
func tnEachEnvOpts(t *testing.T, opts api.Options, fn func(t *testing.T, e *env)) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		fn(t, newEnv(t, db, opts))
	})
}

// tnResult is one response with the headers a test looks at.
type tnResult struct {
	status  int
	body    []byte
	reqID   string
	header  http.Header
	cookies []*http.Cookie
}

func (r tnResult) String() string { return fmt.Sprintf("%d %s", r.status, r.body) }

// tnCall is do, keeping the headers and cookies.
func (e *env) tnCall(method, path, cred string, body any) tnResult {
	e.t.Helper()
	resp := e.doResp(method, path, cred, body)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return tnResult{status: resp.StatusCode, body: raw, reqID: resp.Header.Get("X-Request-Id"), header: resp.Header, cookies: resp.Cookies()}
}

func tnSessionCookie(cs []*http.Cookie) *http.Cookie {
	for _, c := range cs {
		if c.Name == api.SessionCookie {
			return c
		}
	}
	return nil
}

// tnObj decodes a JSON object (the whole body or data of it).
func tnObj(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return m
}

// tnData returns the body's data member, failing unless the body is exactly
// {"data": ...} (no page).
func tnData(t *testing.T, raw []byte) any {
	t.Helper()
	m := tnObj(t, raw)
	if len(m) != 1 {
		t.Fatalf("want exactly {data}, got members %v in %s", tnKeysOf(m), raw)
	}
	d, ok := m["data"]
	if !ok {
		t.Fatalf("no data member in %s", raw)
	}
	return d
}

func tnKeysOf(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// tnWantKeys fails unless v is an object with exactly the given members.
func tnWantKeys(t *testing.T, what string, v any, keys ...string) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s: want an object, got %T %v", what, v, v)
	}
	want := slices.Clone(keys)
	sort.Strings(want)
	if got := tnKeysOf(m); !slices.Equal(got, want) {
		t.Fatalf("%s: members %v, want %v", what, got, want)
	}
	return m
}

func tnStr(v any) string { s, _ := v.(string); return s }

func tnField(t *testing.T, list any, member string) []string {
	t.Helper()
	arr, ok := list.([]any)
	if !ok {
		t.Fatalf("want a list, got %T %v", list, list)
	}
	out := make([]string, 0, len(arr))
	for _, it := range arr {
		out = append(out, tnStr(it.(map[string]any)[member]))
	}
	return out
}

// tnSameSet compares string lists ignoring order.
func tnSameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	sort.Strings(a)
	sort.Strings(b)
	return slices.Equal(a, b)
}

// tnWantStatus fails unless r has the status.
func tnWantStatus(t *testing.T, what string, r tnResult, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: got %d %s, want %d", what, r.status, r.body, status)
	}
}

// tnWantDetail checks a non-validation error: the status and an un-enveloped
// {"detail": "<sentence>"} body.
func tnWantDetail(t *testing.T, what string, r tnResult, status int) string {
	t.Helper()
	tnWantStatus(t, what, r, status)
	m := tnWantKeys(t, what+" body", tnObj(t, r.body), "detail")
	d, ok := m["detail"].(string)
	if !ok || d == "" {
		t.Fatalf("%s: detail is not a sentence: %s", what, r.body)
	}
	return d
}

// tnWantValidation checks a 422 in pydantic's shape and that one of its items
// has the location and type.
func tnWantValidation(t *testing.T, what string, r tnResult, loc []any, typ string) {
	t.Helper()
	tnWantStatus(t, what, r, http.StatusUnprocessableEntity)
	m := tnWantKeys(t, what+" body", tnObj(t, r.body), "detail")
	items, ok := m["detail"].([]any)
	if !ok || len(items) == 0 {
		t.Fatalf("%s: detail is not a non-empty list: %s", what, r.body)
	}
	found := false
	for _, it := range items {
		im, ok := it.(map[string]any)
		if !ok {
			t.Fatalf("%s: item is not an object: %s", what, r.body)
		}
		for k := range im {
			if !slices.Contains([]string{"loc", "msg", "type", "input", "ctx"}, k) {
				t.Fatalf("%s: unexpected item member %q: %s", what, k, r.body)
			}
		}
		l, okL := im["loc"].([]any)
		msg, okM := im["msg"].(string)
		ty, okT := im["type"].(string)
		if !okL || !okM || !okT || msg == "" || ty == "" || len(l) == 0 {
			t.Fatalf("%s: item lacks loc/msg/type: %s", what, r.body)
		}
		if ty == typ && tnLocEqual(l, loc) {
			found = true
		}
	}
	if !found {
		t.Fatalf("%s: no item with loc %v type %s in %s", what, loc, typ, r.body)
	}
}

func tnLocEqual(got, want []any) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if fmt.Sprint(got[i]) != fmt.Sprint(want[i]) {
			return false
		}
	}
	return true
}

func tnUUID(t *testing.T, v any) uuid.UUID {
	t.Helper()
	id, err := uuid.Parse(tnStr(v))
	if err != nil {
		t.Fatalf("not a uuid: %v", v)
	}
	return id
}

// tnWantDeleted checks a deletion result: exactly {id, deleted_at}.
func tnWantDeleted(t *testing.T, what string, r tnResult, id uuid.UUID) {
	t.Helper()
	tnWantStatus(t, what, r, 200)
	m := tnWantKeys(t, what, tnData(t, r.body), "id", "deleted_at")
	if tnStr(m["id"]) != id.String() {
		t.Fatalf("%s: id %v, want %s", what, m["id"], id)
	}
	at, err := time.Parse(time.RFC3339Nano, tnStr(m["deleted_at"]))
	if err != nil || time.Since(at) > time.Minute || time.Until(at) > time.Minute {
		t.Fatalf("%s: deleted_at %v is not a current date-time", what, m["deleted_at"])
	}
}

// tnAuditWant is the event a successful mutation must leave behind.
type tnAuditWant struct {
	Action     string
	TargetType string
	// TargetID defaults to the response's data.id, data.user_id,
	// data.service_account.id or data.user.id, in that order.
	TargetID string
	Level    string
	Org, WS  uuid.UUID // compared when not zero
	// None says the call must leave no event (an idempotent repeat).
	None bool
	// Actor overrides the actor registered for the credential.
	Actor *tnActorWant
}

func tnInstEv(action, target string) tnAuditWant {
	return tnAuditWant{Action: action, TargetType: target, Level: wire.ScopeInstance}
}

func tnOrgEv(action, target string, org uuid.UUID) tnAuditWant {
	return tnAuditWant{Action: action, TargetType: target, Level: wire.ScopeOrganization, Org: org}
}

func tnWsEv(action, target string, org, ws uuid.UUID) tnAuditWant {
	return tnAuditWant{Action: action, TargetType: target, Level: wire.ScopeWorkspace, Org: org, WS: ws}
}

var tnNoEvent = tnAuditWant{None: true}

type tnActorWant struct {
	Type  string
	ID    *uuid.UUID
	KeyID *uuid.UUID
}

type tnRecorded struct {
	want  tnAuditWant
	reqID string
	actor tnActorWant
	what  string
}

// tnAuditor sends mutations and remembers what the audit log must show.
type tnAuditor struct {
	e       *env
	actors  map[string]tnActorWant
	wants   []tnRecorded
	failed  []tnRecorded // mutations that failed: they must leave nothing
	secrets []string
	orgs    []uuid.UUID // organizations whose own activity feed is checked
}

func tnNewAuditor(e *env) *tnAuditor {
	a := &tnAuditor{e: e, actors: map[string]tnActorWant{"": {Type: "system"}}}
	if e.ownerKey != "" {
		a.key(e.ownerKey, e.boot.ManagementKey)
		a.secret(e.ownerKey, "correct horse battery")
	}
	return a
}

// user registers a session cookie ("cookie:…") of a user.
func (a *tnAuditor) user(cred string, id uuid.UUID) {
	a.actors[cred] = tnActorWant{Type: "user", ID: &id}
	a.secret(strings.TrimPrefix(cred, "cookie:"))
}

// key registers a management key.
func (a *tnAuditor) key(token string, k wire.ManagementKey) {
	uid, kid := k.UserID, k.ID
	a.actors[token] = tnActorWant{Type: "user", ID: &uid, KeyID: &kid}
	a.secret(token)
}

func (a *tnAuditor) saKey(token string, k wire.ManagementKey) {
	a.key(token, k)
	w := a.actors[token]
	w.Type = "service_account"
	a.actors[token] = w
}

func (a *tnAuditor) secret(s ...string) {
	for _, x := range s {
		if x != "" {
			a.secrets = append(a.secrets, x)
		}
	}
}

// mut sends a mutation; on 200 the event w must exist, otherwise none.
func (a *tnAuditor) mut(w tnAuditWant, method, path, cred string, body any) tnResult {
	a.e.t.Helper()
	r := a.e.tnCall(method, path, cred, body)
	if r.reqID == "" {
		a.e.t.Fatalf("%s %s: no X-Request-Id header", method, path)
	}
	actor, ok := a.actors[cred]
	if !ok {
		// Fine for calls that must fail; a success is reported by verify.
		actor = tnActorWant{Type: "(credential not registered with the auditor)"}
	}
	if w.Actor != nil {
		actor = *w.Actor
	}
	rec := tnRecorded{want: w, reqID: r.reqID, actor: actor, what: method + " " + path}
	if r.status != 200 {
		a.failed = append(a.failed, rec)
		return r
	}
	if !w.None && w.TargetID == "" {
		rec.want.TargetID = tnTargetOf(r.body)
	}
	a.wants = append(a.wants, rec)
	return r
}

// also adds a second event expected from an earlier call.
func (a *tnAuditor) also(r tnResult, w tnAuditWant, actorCred string) {
	a.wants = append(a.wants, tnRecorded{want: w, reqID: r.reqID, actor: a.actors[actorCred], what: "also " + w.Action})
}

func tnTargetOf(raw []byte) string {
	var env struct {
		Data map[string]any `json:"data"`
	}
	if json.Unmarshal(raw, &env) != nil {
		return ""
	}
	d := env.Data
	for _, k := range []string{"id", "user_id"} {
		if s := tnStr(d[k]); s != "" {
			return s
		}
	}
	for _, k := range []string{"service_account", "user"} {
		if m, ok := d[k].(map[string]any); ok {
			return tnStr(m["id"])
		}
	}
	return ""
}

// activity reads every page of an activity feed, returning the events and
// the raw pages.
func (a *tnAuditor) activity(path, cred string) ([]wire.AuditEvent, [][]byte) {
	t := a.e.t
	t.Helper()
	var events []wire.AuditEvent
	var raws [][]byte
	url := path + "?limit=200"
	for i := 0; ; i++ {
		if i > 100 {
			t.Fatalf("%s: pagination does not end", path)
		}
		raw := a.e.must("GET", url, cred, nil)
		raws = append(raws, raw)
		var p wire.Page[wire.AuditEvent]
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatalf("decode %s: %v", raw, err)
		}
		events = append(events, p.Data...)
		if p.Page.NextCursor == nil {
			break
		}
		url = path + "?limit=200&cursor=" + *p.Page.NextCursor
	}
	return events, raws
}

// verify checks every recorded expectation against the instance feed (and
// the organization feeds of a.orgs), and that no feed carries a secret.
func (a *tnAuditor) verify(cred string) {
	t := a.e.t
	t.Helper()
	events, raws := a.activity("/api/v1/instance/activity", cred)
	byReq := map[string][]wire.AuditEvent{}
	for _, ev := range events {
		if ev.RequestID == "" {
			t.Errorf("event %s (%s) has no request_id", ev.ID, ev.Action)
		}
		byReq[ev.RequestID] = append(byReq[ev.RequestID], ev)
	}
	orgEvents := map[uuid.UUID]map[uuid.UUID]bool{}
	for _, org := range a.orgs {
		evs, r := a.activity("/api/v1/organizations/"+org.String()+"/activity", cred)
		raws = append(raws, r...)
		orgEvents[org] = map[uuid.UUID]bool{}
		for _, ev := range evs {
			if ev.Scope.OrgID == nil || *ev.Scope.OrgID != org {
				t.Errorf("organization %s feed shows event %s of scope %+v", org, ev.Action, ev.Scope)
			}
			orgEvents[org][ev.ID] = true
		}
	}
	for _, rec := range a.wants {
		evs := byReq[rec.reqID]
		if rec.want.None {
			if len(evs) != 0 {
				t.Errorf("%s: want no audit event, got %d (%s)", rec.what, len(evs), evs[0].Action)
			}
			continue
		}
		var ev *wire.AuditEvent
		for i := range evs {
			if evs[i].Action == rec.want.Action {
				if ev != nil {
					t.Errorf("%s: two %s events for request %s", rec.what, rec.want.Action, rec.reqID)
				}
				ev = &evs[i]
			}
		}
		if ev == nil {
			t.Errorf("%s: no %s event with request_id %s (events of that request: %d)", rec.what, rec.want.Action, rec.reqID, len(evs))
			continue
		}
		w := rec.want
		if ev.Target.Type != w.TargetType || ev.Target.ID != w.TargetID || w.TargetID == "" {
			t.Errorf("%s: %s target %+v, want %s %s", rec.what, w.Action, ev.Target, w.TargetType, w.TargetID)
		}
		if !tnSameActor(ev.Actor, rec.actor) {
			t.Errorf("%s: %s actor %s, want %s", rec.what, w.Action, tnFmtActor(ev.Actor.Type, ev.Actor.ID, ev.Actor.KeyID),
				tnFmtActor(rec.actor.Type, rec.actor.ID, rec.actor.KeyID))
		}
		sc := ev.Scope
		okScope := sc.Level == w.Level
		switch w.Level {
		case wire.ScopeInstance:
			okScope = okScope && sc.OrgID == nil && sc.WorkspaceID == nil
		case wire.ScopeOrganization:
			okScope = okScope && sc.OrgID != nil && sc.WorkspaceID == nil
		case wire.ScopeWorkspace:
			okScope = okScope && sc.OrgID != nil && sc.WorkspaceID != nil
		}
		if sc.OrgID != nil && w.Org != uuid.Nil && *sc.OrgID != w.Org {
			okScope = false
		}
		if sc.WorkspaceID != nil && w.WS != uuid.Nil && *sc.WorkspaceID != w.WS {
			okScope = false
		}
		if !okScope {
			t.Errorf("%s: %s scope %+v, want level %s org %s ws %s", rec.what, w.Action, sc, w.Level, w.Org, w.WS)
		}
		if ev.CreatedAt.IsZero() || ev.Details == nil {
			t.Errorf("%s: %s lacks created_at or details", rec.what, w.Action)
		}
		if sc.OrgID != nil {
			if seen, checked := orgEvents[*sc.OrgID]; checked && !seen[ev.ID] {
				t.Errorf("%s: %s is missing from the organization's activity", rec.what, w.Action)
			}
		}
	}
	for _, rec := range a.failed {
		if evs := byReq[rec.reqID]; len(evs) != 0 {
			t.Errorf("%s failed, yet left audit event %s", rec.what, evs[0].Action)
		}
	}
	for _, raw := range raws {
		for _, s := range a.secrets {
			if strings.Contains(string(raw), s) {
				t.Errorf("activity feed contains a secret (%d bytes starting %.4s)", len(s), s)
			}
		}
	}
	if len(a.wants) == 0 && len(a.failed) == 0 {
		t.Error("auditor checked nothing")
	}
}

func tnSameActor(got wire.AuditActor, want tnActorWant) bool {
	eq := func(a, b *uuid.UUID) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	return got.Type == want.Type && eq(got.ID, want.ID) && eq(got.KeyID, want.KeyID)
}

func tnFmtActor(typ string, id, key *uuid.UUID) string {
	s := typ
	if id != nil {
		s += " " + id.String()
	}
	if key != nil {
		s += " key " + key.String()
	}
	return s
}

// Bootstrap.
