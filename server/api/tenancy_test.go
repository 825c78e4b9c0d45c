package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// ---------------------------------------------------------------------------
// Helpers shared by tenancy_test.go and sessions_test.go.

// tnFreshEnv is an env on an empty instance: the setup token is prepared but
// nobody has bootstrapped, so ownerKey and boot are empty.
func tnFreshEnv(t *testing.T, db *bun.DB, opts api.Options) *env {
	t.Helper()
	ctx := context.Background()
	st := store.New(db)
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

// ---------------------------------------------------------------------------
// Audit expectations.

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

// ---------------------------------------------------------------------------
// Bootstrap.

func TestBootstrapFlow(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := tnFreshEnv(t, db, api.Options{})
		a := tnNewAuditor(e)
		status := func() bool {
			m := tnWantKeys(t, "bootstrap status", tnData(t, e.must("GET", "/api/v1/bootstrap", "", nil)), "bootstrapped")
			b, ok := m["bootstrapped"].(bool)
			if !ok {
				t.Fatalf("bootstrapped is not a boolean: %v", m)
			}
			return b
		}
		if status() {
			t.Fatal("fresh instance says bootstrapped")
		}
		good := map[string]any{"token": setupToken, "email": "Root@Example.com", "password": "root password 123",
			"organization_name": "Acme Corp", "workspace_name": "Prod"}
		with := func(k string, v any) map[string]any {
			m := map[string]any{}
			for k2, v2 := range good {
				m[k2] = v2
			}
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
			return m
		}
		bad := []struct {
			name   string
			body   any
			status int
			loc    []any
			typ    string
		}{
			{"wrong token", with("token", "setup_wrong"), 403, nil, ""},
			{"missing token", with("token", nil), 422, []any{"body", "token"}, "missing"},
			{"short password", with("password", "short"), 422, []any{"body", "password"}, "string_too_short"},
			{"bad email", with("email", "root"), 422, []any{"body", "email"}, "string_pattern_mismatch"},
			{"extra member", with("admin", true), 422, []any{"body", "admin"}, "extra_forbidden"},
			{"org name too long", with("organization_name", strings.Repeat("o", 101)), 422, []any{"body", "organization_name"}, "string_too_long"},
			{"empty body", "", 422, []any{"body"}, "missing"},
		}
		for _, c := range bad {
			r := a.mut(tnInstEv("instance.bootstrapped", "user"), "POST", "/api/v1/bootstrap", "", c.body)
			if c.status == 422 {
				tnWantValidation(t, c.name, r, c.loc, c.typ)
			} else {
				tnWantDetail(t, c.name, r, c.status)
			}
			if tnSessionCookie(r.cookies) != nil {
				t.Fatalf("%s: a failed bootstrap set a session cookie", c.name)
			}
		}
		if status() {
			t.Fatal("failed bootstraps bootstrapped the instance")
		}

		r := e.tnCall("POST", "/api/v1/bootstrap", "", good)
		tnWantStatus(t, "bootstrap", r, 200)
		res := decodeData[wire.BootstrapResult](t, r.body)
		m := tnWantKeys(t, "bootstrap result", tnData(t, r.body), "user", "organization", "workspace", "management_key")
		tnWantKeys(t, "bootstrap workspace", m["workspace"], "id", "org_id", "name", "slug", "rate_limits", "created_at", "updated_at")
		if res.User.Email != "root@example.com" || res.User.InstanceRole != auth.InstanceOwner || res.User.ServiceAccount {
			t.Fatalf("bootstrap user: %+v", res.User)
		}
		if res.Organization.Slug != "acme-corp" || res.Organization.Name != "Acme Corp" || res.Workspace.Slug != "prod" ||
			res.Workspace.OrgID != res.Organization.ID || !slices.Equal(res.User.Orgs, []uuid.UUID{res.Organization.ID}) {
			t.Fatalf("bootstrap tenancy: %+v %+v %+v", res.Organization, res.Workspace, res.User.Orgs)
		}
		k := res.ManagementKey
		if !strings.HasPrefix(k.Token, auth.ManagementKeyPrefix) || k.Scope.Level != wire.ScopeInstance || k.Status != wire.KeyActive ||
			len(k.Permissions) != len(auth.All) || k.UserID != res.User.ID {
			t.Fatalf("bootstrap key: %+v", k)
		}
		c := tnSessionCookie(r.cookies)
		if c == nil || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode {
			t.Fatalf("bootstrap session cookie: %+v", c)
		}
		uid := res.User.ID
		a.wants = append(a.wants, tnRecorded{want: tnAuditWant{Action: "instance.bootstrapped", TargetType: "user", TargetID: uid.String(),
			Level: wire.ScopeOrganization, Org: res.Organization.ID}, reqID: r.reqID, actor: tnActorWant{Type: "user", ID: &uid}, what: "bootstrap"})
		a.wants = append(a.wants, tnRecorded{want: tnAuditWant{Action: "management_key.issued", TargetType: "management_key", TargetID: k.ID.String(),
			Level: wire.ScopeInstance}, reqID: r.reqID, actor: tnActorWant{Type: "user", ID: &uid}, what: "bootstrap key"})
		a.key(k.Token, k)
		a.secret(setupToken, "root password 123", c.Value)

		me := decodeData[wire.Me](t, e.must("GET", "/api/v1/auth/me", k.Token, nil))
		if me.Credential != "management_key" || me.User.ID != uid {
			t.Fatalf("me with the bootstrap key: %+v", me)
		}
		me = decodeData[wire.Me](t, e.must("GET", "/api/v1/auth/me", "cookie:"+c.Value, nil))
		if me.Credential != "session" || me.User.ID != uid || len(me.Memberships) != 1 || me.Memberships[0].Role != auth.OrgOwner {
			t.Fatalf("me with the bootstrap session: %+v", me)
		}
		if !status() {
			t.Fatal("bootstrapped instance says not bootstrapped")
		}
		for _, body := range []any{good, with("email", "second@example.com"), with("token", "setup_wrong")} {
			r := a.mut(tnInstEv("instance.bootstrapped", "user"), "POST", "/api/v1/bootstrap", "", body)
			tnWantDetail(t, "second bootstrap", r, http.StatusConflict)
		}
		if tok, err := e.api.PrepareSetup(context.Background(), ""); err != nil || tok != "" {
			t.Fatalf("PrepareSetup after bootstrap: %q %v", tok, err)
		}
		users := decodeData[[]wire.User](t, e.must("GET", "/api/v1/instance/users", k.Token, nil))
		if len(users) != 1 {
			t.Fatalf("users after bootstrap: %+v", users)
		}
		a.orgs = []uuid.UUID{res.Organization.ID}
		a.verify(k.Token)
	})
}

func TestBootstrapConcurrent(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := tnFreshEnv(t, db, api.Options{})
		const n = 6
		statuses := make([]int, n)
		bodies := make([][]byte, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				raw, _ := json.Marshal(map[string]any{"token": setupToken, "email": fmt.Sprintf("racer%d@example.com", i),
					"password": "racing password"})
				<-start
				resp, err := http.Post(e.srv.URL+"/api/v1/bootstrap", "application/json", strings.NewReader(string(raw)))
				if err != nil {
					errs[i] = err
					return
				}
				defer resp.Body.Close()
				statuses[i] = resp.StatusCode
				bodies[i], _ = io.ReadAll(resp.Body)
			}()
		}
		close(start)
		wg.Wait()
		winners := 0
		var token string
		for i := range n {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			switch statuses[i] {
			case 200:
				winners++
				token = decodeData[wire.BootstrapResult](t, bodies[i]).ManagementKey.Token
			case 409:
			default:
				t.Errorf("racer %d: %d %s", i, statuses[i], bodies[i])
			}
		}
		if winners != 1 {
			t.Fatalf("%d bootstraps succeeded, want exactly 1 (statuses %v)", winners, statuses)
		}
		users := decodeData[[]wire.User](t, e.must("GET", "/api/v1/instance/users", token, nil))
		orgs := decodeData[[]wire.Organization](t, e.must("GET", "/api/v1/instance/organizations", token, nil))
		if len(users) != 1 || len(orgs) != 1 {
			t.Fatalf("after the race: %d users, %d organizations", len(users), len(orgs))
		}
	})
}

// ---------------------------------------------------------------------------
// Organizations.

func TestOrganizations(t *testing.T) {
	t.Parallel()
	eachEnv(t, func(t *testing.T, e *env) {
		a := tnNewAuditor(e)
		k := e.ownerKey
		orgShape := []string{"id", "name", "slug", "created_at", "updated_at"}
		cases := []struct {
			name     string
			path     string
			body     any
			status   int
			slug     string // on success
			loc      []any  // on 422
			typ      string
			notAudit bool
		}{
			{"derived slug", "/api/v1/instance/organizations", map[string]any{"name": "Acme Labs!"}, 200, "acme-labs", nil, "", false},
			{"derived slug taken", "/api/v1/organizations", map[string]any{"name": "Acme  Labs"}, 200, "acme-labs-2", nil, "", false},
			{"nothing to derive from", "/api/v1/organizations", map[string]any{"name": "!!!"}, 200, "org", nil, "", false},
			{"one character", "/api/v1/organizations", map[string]any{"name": "A"}, 200, "a", nil, "", false},
			{"100 characters", "/api/v1/organizations", map[string]any{"name": strings.Repeat("x", 100)}, 200, strings.Repeat("x", 50), nil, "", false},
			{"100 non-ASCII characters", "/api/v1/organizations", map[string]any{"name": strings.Repeat("é", 100)}, 200, "org-2", nil, "", false},
			{"explicit slug", "/api/v1/organizations", map[string]any{"name": "Beta", "slug": "beta-co"}, 200, "beta-co", nil, "", false},
			{"duplicate slug", "/api/v1/organizations", map[string]any{"name": "Beta 2", "slug": "beta-co"}, 409, "", nil, "", false},
			{"duplicate slug (instance path)", "/api/v1/instance/organizations", map[string]any{"name": "Beta 3", "slug": "acme-labs"}, 409, "", nil, "", false},
			{"empty name", "/api/v1/organizations", map[string]any{"name": ""}, 422, "", []any{"body", "name"}, "string_too_short", false},
			{"101 characters", "/api/v1/organizations", map[string]any{"name": strings.Repeat("x", 101)}, 422, "", []any{"body", "name"}, "string_too_long", false},
			{"101 non-ASCII characters", "/api/v1/organizations", map[string]any{"name": strings.Repeat("é", 101)}, 422, "", []any{"body", "name"}, "string_too_long", false},
			{"missing name", "/api/v1/organizations", map[string]any{"slug": "x"}, 422, "", []any{"body", "name"}, "missing", false},
			{"name not a string", "/api/v1/organizations", map[string]any{"name": 7}, 422, "", []any{"body", "name"}, "string_type", false},
			{"uuid-shaped slug", "/api/v1/organizations", map[string]any{"name": "U", "slug": uuid.NewString()}, 422, "", []any{"body", "slug"}, "value_error", false},
			{"slug with capitals", "/api/v1/organizations", map[string]any{"name": "U", "slug": "Bad-Slug"}, 422, "", []any{"body", "slug"}, "string_pattern_mismatch", false},
			{"slug with a leading dash", "/api/v1/organizations", map[string]any{"name": "U", "slug": "-bad"}, 422, "", []any{"body", "slug"}, "string_pattern_mismatch", false},
			{"slug too long", "/api/v1/organizations", map[string]any{"name": "U", "slug": strings.Repeat("s", 64)}, 422, "", []any{"body", "slug"}, "string_too_long", false},
			{"extra member", "/api/v1/organizations", map[string]any{"name": "U", "plan": "pro"}, 422, "", []any{"body", "plan"}, "extra_forbidden", false},
		}
		created := map[string]wire.Organization{}
		for _, c := range cases {
			r := a.mut(tnAuditWant{Action: "organization.created", TargetType: "organization", Level: wire.ScopeOrganization}, "POST", c.path, k, c.body)
			switch c.status {
			case 200:
				tnWantStatus(t, c.name, r, 200)
				m := tnWantKeys(t, c.name, tnData(t, r.body), orgShape...)
				if m["slug"] != c.slug || m["name"] != c.body.(map[string]any)["name"] {
					t.Fatalf("%s: got %v, want slug %s", c.name, m, c.slug)
				}
				o := decodeData[wire.Organization](t, r.body)
				created[o.Slug] = o
				a.wants[len(a.wants)-1].want.Org = o.ID
			case 422:
				tnWantValidation(t, c.name, r, c.loc, c.typ)
			default:
				tnWantDetail(t, c.name, r, c.status)
			}
		}

		// Get by UUID and by slug, on both paths.
		beta := created["beta-co"]
		for _, p := range []string{"/api/v1/organizations/beta-co", "/api/v1/organizations/" + beta.ID.String(),
			"/api/v1/organizations/beta-co/settings", "/api/v1/instance/organizations/beta-co",
			"/api/v1/instance/organizations/" + beta.ID.String()} {
			got := decodeData[wire.Organization](t, e.must("GET", p, k, nil))
			if got.ID != beta.ID || got.Slug != "beta-co" || got.Name != "Beta" || !got.CreatedAt.Equal(beta.CreatedAt) {
				t.Fatalf("GET %s: %+v, want %+v", p, got, beta)
			}
		}
		for _, p := range []string{"/api/v1/organizations/nope", "/api/v1/organizations/" + uuid.NewString(), "/api/v1/instance/organizations/nope"} {
			tnWantDetail(t, "GET "+p, e.tnCall("GET", p, k, nil), 404)
		}

		// Update through the settings path and the instance path.
		betaEv := tnOrgEv("organization.updated", "organization", beta.ID)
		r := a.mut(betaEv, "PATCH", "/api/v1/organizations/beta-co/settings", k, map[string]any{"name": "Beta Renamed", "slug": "beta-new"})
		tnWantStatus(t, "rename", r, 200)
		got := decodeData[wire.Organization](t, r.body)
		if got.ID != beta.ID || got.Name != "Beta Renamed" || got.Slug != "beta-new" || !got.UpdatedAt.After(beta.UpdatedAt) ||
			!got.CreatedAt.Equal(beta.CreatedAt) {
			t.Fatalf("rename: %+v", got)
		}
		tnWantDetail(t, "old slug", e.tnCall("GET", "/api/v1/organizations/beta-co", k, nil), 404)
		if got := decodeData[wire.Organization](t, e.must("GET", "/api/v1/organizations/beta-new/settings", k, nil)); got.Name != "Beta Renamed" {
			t.Fatalf("read back rename: %+v", got)
		}
		r = a.mut(betaEv, "PATCH", "/api/v1/instance/organizations/"+beta.ID.String(), k, map[string]any{"name": "Beta Again"})
		if tnWantStatus(t, "instance rename", r, 200); decodeData[wire.Organization](t, r.body).Slug != "beta-new" {
			t.Fatalf("a name-only update changed the slug: %s", r.body)
		}
		for _, c := range []struct {
			name   string
			body   any
			status int
			loc    []any
			typ    string
		}{
			{"slug taken", map[string]any{"slug": "acme-labs"}, 409, nil, ""},
			{"uuid-shaped slug", map[string]any{"slug": uuid.NewString()}, 422, []any{"body", "slug"}, "value_error"},
			{"empty name", map[string]any{"name": ""}, 422, []any{"body", "name"}, "string_too_short"},
			{"101 characters", map[string]any{"name": strings.Repeat("n", 101)}, 422, []any{"body", "name"}, "string_too_long"},
			{"unknown member", map[string]any{"id": uuid.NewString()}, 422, []any{"body", "id"}, "extra_forbidden"},
		} {
			r := a.mut(betaEv, "PATCH", "/api/v1/organizations/beta-new/settings", k, c.body)
			if c.status == 422 {
				tnWantValidation(t, "update "+c.name, r, c.loc, c.typ)
			} else {
				tnWantDetail(t, "update "+c.name, r, c.status)
			}
		}

		// A key of the organization follows its renames.
		betaKey := e.key("/api/v1/organizations/beta-new", k, []string{"organizations.read", "organizations.update"}, nil)
		a.key(betaKey.Token, betaKey)
		r = a.mut(betaEv, "PATCH", "/api/v1/organizations/beta-new", betaKey.Token, map[string]any{"slug": "beta-final"})
		tnWantStatus(t, "rename with the organization's key", r, 200)
		e.must("GET", "/api/v1/organizations/beta-final", betaKey.Token, nil)
		tnWantDetail(t, "old slug with the organization's key", e.tnCall("GET", "/api/v1/organizations/beta-new", betaKey.Token, nil), 403)

		// Delete, by slug on the organization path and by id on the instance path.
		r = a.mut(tnOrgEv("organization.deleted", "organization", beta.ID), "DELETE", "/api/v1/organizations/beta-final", k, nil)
		tnWantDeleted(t, "delete", r, beta.ID)
		tnWantDetail(t, "get deleted", e.tnCall("GET", "/api/v1/organizations/"+beta.ID.String(), k, nil), 404)
		tnWantDetail(t, "delete again", a.mut(tnNoEvent, "DELETE", "/api/v1/organizations/"+beta.ID.String(), k, nil), 404)
		tnWantDetail(t, "key of a deleted organization", e.tnCall("GET", "/api/v1/auth/me", betaKey.Token, nil), 401)
		one := created["a"]
		r = a.mut(tnOrgEv("organization.deleted", "organization", one.ID), "DELETE", "/api/v1/instance/organizations/"+one.ID.String(), k, nil)
		tnWantDeleted(t, "instance delete", r, one.ID)

		// Listing: staff see every organization, page by page.
		var all []string
		url := "/api/v1/organizations?limit=2"
		for i := 0; ; i++ {
			raw := e.must("GET", url, k, nil)
			tnWantKeys(t, "organization page", tnObj(t, raw), "data", "page")
			p := decodeData[[]wire.Organization](t, raw)
			if len(p) > 2 {
				t.Fatalf("page of %d with limit 2", len(p))
			}
			for _, o := range p {
				all = append(all, o.Slug)
			}
			next := jsonPath(t, raw, "page.next_cursor")
			if next == nil {
				break
			}
			url = "/api/v1/organizations?limit=2&cursor=" + next.(string)
		}
		wantSlugs := []string{"default", "acme-labs", "acme-labs-2", "org", strings.Repeat("x", 50), "org-2"}
		if !slices.Equal(all, wantSlugs) {
			t.Fatalf("staff list %v, want %v", all, wantSlugs)
		}

		// A signed-up member cannot create organizations and lists only theirs.
		bobSes, bob := e.signup("bob@example.com")
		a.user("cookie:"+bob, bobSes.User.ID)
		r = a.mut(tnAuditWant{}, "POST", "/api/v1/organizations", "cookie:"+bob, map[string]any{"name": "Bob's"})
		if d := tnWantDetail(t, "member creates an organization", r, 403); !strings.Contains(d, "organizations.create") {
			t.Fatalf("403 does not name the permission: %s", d)
		}
		tnWantDetail(t, "member creates on the instance path", a.mut(tnAuditWant{}, "POST", "/api/v1/instance/organizations", "cookie:"+bob,
			map[string]any{"name": "Bob's"}), 403)
		raw := e.must("GET", "/api/v1/organizations", "cookie:"+bob, nil)
		if n := len(decodeData[[]wire.Organization](t, raw)); n != 0 || jsonPath(t, raw, "page.next_cursor") != nil {
			t.Fatalf("a new member lists %d organizations: %s", n, raw)
		}
		r = a.mut(tnOrgEv("member.added", "user", e.boot.Organization.ID), "POST", "/api/v1/organizations/default/members", k,
			map[string]any{"user_id": bobSes.User.ID, "role": "member"})
		tnWantStatus(t, "add bob", r, 200)
		r = a.mut(tnOrgEv("member.added", "user", created["acme-labs"].ID), "POST", "/api/v1/organizations/acme-labs/members", k,
			map[string]any{"email": "bob@example.com", "role": "viewer"})
		tnWantStatus(t, "add bob to acme", r, 200)
		mine := decodeData[[]wire.Organization](t, e.must("GET", "/api/v1/organizations", "cookie:"+bob, nil))
		var mineSlugs []string
		for _, o := range mine {
			mineSlugs = append(mineSlugs, o.Slug)
		}
		if !slices.Equal(mineSlugs, []string{"default", "acme-labs"}) {
			t.Fatalf("bob lists %v", mineSlugs)
		}
		e.must("GET", "/api/v1/organizations/acme-labs", "cookie:"+bob, nil)
		tnWantDetail(t, "bob reads a foreign organization", e.tnCall("GET", "/api/v1/organizations/acme-labs-2", "cookie:"+bob, nil), 404)
		tnWantDetail(t, "bob lists all organizations", e.tnCall("GET", "/api/v1/instance/organizations", "cookie:"+bob, nil), 403)
		tnWantDetail(t, "viewer renames", a.mut(tnAuditWant{}, "PATCH", "/api/v1/organizations/acme-labs", "cookie:"+bob,
			map[string]any{"name": "Mine"}), 403)
		tnWantDetail(t, "member deletes", a.mut(tnAuditWant{}, "DELETE", "/api/v1/organizations/default", "cookie:"+bob, nil), 403)

		a.orgs = []uuid.UUID{e.boot.Organization.ID, created["acme-labs"].ID}
		a.verify(k)
	})
}

// ---------------------------------------------------------------------------
// Workspaces.

func TestWorkspaces(t *testing.T) {
	t.Parallel()
	eachEnv(t, func(t *testing.T, e *env) {
		a := tnNewAuditor(e)
		k := e.ownerKey
		org := e.boot.Organization.ID
		e.must("POST", "/api/v1/instance/organizations", k, map[string]any{"name": "Other", "slug": "other"})
		other := decodeData[wire.Organization](t, e.must("GET", "/api/v1/organizations/other", k, nil))
		wsShape := []string{"id", "org_id", "name", "slug", "rate_limits", "created_at", "updated_at"}
		base := "/api/v1/organizations/default/workspaces"

		type wcase struct {
			name   string
			path   string
			body   any
			status int
			slug   string
			loc    []any
			typ    string
		}
		created := map[string]wire.Workspace{}
		for _, c := range []wcase{
			{"derived slug", base, map[string]any{"name": "Prod EU"}, 200, "prod-eu", nil, ""},
			{"derived slug taken", base, map[string]any{"name": "Prod EU"}, 200, "prod-eu-2", nil, ""},
			{"explicit slug", base, map[string]any{"name": "Staging", "slug": "stage"}, 200, "stage", nil, ""},
			{"100 characters", base, map[string]any{"name": strings.Repeat("w", 100)}, 200, strings.Repeat("w", 50), nil, ""},
			{"one character", base, map[string]any{"name": "Q"}, 200, "q", nil, ""},
			{"same slug in another organization", "/api/v1/organizations/other/workspaces", map[string]any{"name": "S", "slug": "stage"}, 200, "stage", nil, ""},
			{"duplicate slug", base, map[string]any{"name": "Stage 2", "slug": "stage"}, 409, "", nil, ""},
			{"duplicate of the default", base, map[string]any{"name": "D", "slug": "default"}, 409, "", nil, ""},
			{"uuid-shaped slug", base, map[string]any{"name": "U", "slug": uuid.NewString()}, 422, "", []any{"body", "slug"}, "value_error"},
			{"empty name", base, map[string]any{"name": ""}, 422, "", []any{"body", "name"}, "string_too_short"},
			{"101 characters", base, map[string]any{"name": strings.Repeat("w", 101)}, 422, "", []any{"body", "name"}, "string_too_long"},
			{"extra member", base, map[string]any{"name": "X", "org_id": org}, 422, "", []any{"body", "org_id"}, "extra_forbidden"},
			{"not an object", base, []any{"x"}, 422, "", []any{"body"}, "model_type"},
			{"unknown organization", "/api/v1/organizations/nope/workspaces", map[string]any{"name": "X"}, 404, "", nil, ""},
		} {
			r := a.mut(tnAuditWant{Action: "workspace.created", TargetType: "workspace", Level: wire.ScopeWorkspace}, "POST", c.path, k, c.body)
			switch c.status {
			case 200:
				tnWantStatus(t, c.name, r, 200)
				m := tnWantKeys(t, c.name, tnData(t, r.body), wsShape...)
				w := decodeData[wire.Workspace](t, r.body)
				wantOrg := org
				if strings.Contains(c.path, "/other/") {
					wantOrg = other.ID
				}
				if w.Slug != c.slug || m["name"] != c.body.(map[string]any)["name"] || w.OrgID != wantOrg {
					t.Fatalf("%s: %+v", c.name, w)
				}
				if wantOrg == org {
					created[w.Slug] = w
				}
				a.wants[len(a.wants)-1].want.Org, a.wants[len(a.wants)-1].want.WS = wantOrg, w.ID
			case 422:
				tnWantValidation(t, c.name, r, c.loc, c.typ)
			default:
				tnWantDetail(t, c.name, r, c.status)
			}
		}

		raw := e.must("GET", base, k, nil)
		list := tnData(t, raw) // exactly {data}, no page
		tnWantKeys(t, "listed workspace", list.([]any)[0], wsShape...)
		if got := tnField(t, list, "slug"); !tnSameSet(got, []string{"default", "prod-eu", "prod-eu-2", "stage", strings.Repeat("w", 50), "q"}) {
			t.Fatalf("list %v", got)
		}
		if got := tnField(t, tnData(t, e.must("GET", "/api/v1/organizations/other/workspaces", k, nil)), "slug"); !slices.Equal(got, []string{"stage"}) {
			t.Fatalf("other organization lists %v", got)
		}

		stage := created["stage"]
		for _, p := range []string{base + "/stage", base + "/" + stage.ID.String(), base + "/stage/settings",
			"/api/v1/organizations/" + org.String() + "/workspaces/stage"} {
			got := decodeData[wire.Workspace](t, e.must("GET", p, k, nil))
			if got.ID != stage.ID || got.Slug != stage.Slug || got.Name != stage.Name || got.OrgID != stage.OrgID ||
				!got.CreatedAt.Equal(stage.CreatedAt) || !got.UpdatedAt.Equal(stage.UpdatedAt) {
				t.Fatalf("GET %s: %+v, want %+v", p, got, stage)
			}
		}
		// A workspace of another organization is not reachable through this one.
		otherStage := decodeData[wire.Workspace](t, e.must("GET", "/api/v1/organizations/other/workspaces/stage", k, nil))
		tnWantDetail(t, "cross-organization id", e.tnCall("GET", base+"/"+otherStage.ID.String(), k, nil), 404)
		tnWantDetail(t, "unknown workspace", e.tnCall("GET", base+"/nope", k, nil), 404)

		stageEv := tnWsEv("workspace.updated", "workspace", org, stage.ID)
		r := a.mut(stageEv, "PATCH", base+"/stage", k, map[string]any{"name": "Staging Two"})
		tnWantStatus(t, "rename", r, 200)
		if got := decodeData[wire.Workspace](t, r.body); got.Name != "Staging Two" || got.Slug != "stage" || !got.UpdatedAt.After(stage.UpdatedAt) {
			t.Fatalf("rename: %+v", got)
		}
		r = a.mut(stageEv, "PATCH", base+"/"+stage.ID.String()+"/settings", k, map[string]any{"slug": "staging"})
		if tnWantStatus(t, "reslug", r, 200); decodeData[wire.Workspace](t, r.body).Slug != "staging" {
			t.Fatalf("reslug: %s", r.body)
		}
		tnWantDetail(t, "old slug", e.tnCall("GET", base+"/stage", k, nil), 404)
		for _, c := range []wcase{
			{"slug taken", base + "/staging", map[string]any{"slug": "prod-eu"}, 409, "", nil, ""},
			{"uuid-shaped slug", base + "/staging", map[string]any{"slug": uuid.NewString()}, 422, "", []any{"body", "slug"}, "value_error"},
			{"empty name", base + "/staging/settings", map[string]any{"name": ""}, 422, "", []any{"body", "name"}, "string_too_short"},
			{"bad slug", base + "/staging/settings", map[string]any{"slug": "a_b"}, 422, "", []any{"body", "slug"}, "string_pattern_mismatch"},
		} {
			r := a.mut(stageEv, "PATCH", c.path, k, c.body)
			if c.status == 422 {
				tnWantValidation(t, "update "+c.name, r, c.loc, c.typ)
			} else {
				tnWantDetail(t, "update "+c.name, r, c.status)
			}
		}
		// The slug freed in "other" does not clash with this organization's.
		r = a.mut(tnWsEv("workspace.updated", "workspace", other.ID, otherStage.ID), "PATCH", "/api/v1/organizations/other/workspaces/stage",
			k, map[string]any{"slug": "prod-eu"})
		tnWantStatus(t, "slug used in another organization", r, 200)

		r = a.mut(tnWsEv("workspace.deleted", "workspace", org, stage.ID), "DELETE", base+"/staging", k, nil)
		tnWantDeleted(t, "delete", r, stage.ID)
		tnWantDetail(t, "get deleted", e.tnCall("GET", base+"/"+stage.ID.String(), k, nil), 404)
		tnWantDetail(t, "delete again", a.mut(tnNoEvent, "DELETE", base+"/staging", k, nil), 404)
		if got := tnField(t, tnData(t, e.must("GET", base, k, nil)), "slug"); slices.Contains(got, "staging") || len(got) != 5 {
			t.Fatalf("list after delete: %v", got)
		}
		// The slug is free again.
		r = a.mut(tnAuditWant{Action: "workspace.created", TargetType: "workspace", Level: wire.ScopeWorkspace, Org: org}, "POST", base, k,
			map[string]any{"name": "Reborn", "slug": "staging"})
		if tnWantStatus(t, "reuse a deleted slug", r, 200); decodeData[wire.Workspace](t, r.body).ID == stage.ID {
			t.Fatal("a new workspace got the deleted one's id")
		}
		a.orgs = []uuid.UUID{org, other.ID}
		a.verify(k)
	})
}

// Deleting a workspace removes its memberships and keys; its audit trail
// stays.
func TestWorkspaceDeleteCascades(t *testing.T) {
	t.Parallel()
	eachEnv(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		a := tnNewAuditor(e)
		k := e.ownerKey
		org := e.boot.Organization.ID
		base := "/api/v1/organizations/default/workspaces"
		r := a.mut(tnAuditWant{Action: "workspace.created", TargetType: "workspace", Level: wire.ScopeWorkspace, Org: org}, "POST", base, k,
			map[string]any{"name": "Doomed"})
		tnWantStatus(t, "create", r, 200)
		ws := decodeData[wire.Workspace](t, r.body)
		a.wants[len(a.wants)-1].want.WS = ws.ID
		ev := func(action, target string) tnAuditWant { return tnWsEv(action, target, org, ws.ID) }

		dave, daveCookie := e.signup("dave@example.com")
		a.user("cookie:"+daveCookie, dave.User.ID)
		tnWantStatus(t, "add dave", a.mut(tnOrgEv("member.added", "user", org), "POST", "/api/v1/organizations/default/members", k,
			map[string]any{"user_id": dave.User.ID, "role": "member"}), 200)
		tnWantStatus(t, "dave joins", a.mut(ev("workspace_member.added", "user"), "POST", base+"/doomed/members", k,
			map[string]any{"user_id": dave.User.ID, "role": "member"}), 200)

		var keys []string
		for _, cred := range []string{k, "cookie:" + daveCookie} {
			r := a.mut(ev("management_key.issued", "management_key"), "POST", base+"/doomed/management-keys", cred,
				map[string]any{"permissions": []string{"workspaces.read"}, "label": "ws"})
			tnWantStatus(t, "workspace key", r, 200)
			mk := decodeData[wire.ManagementKey](t, r.body)
			if mk.Scope.Level != wire.ScopeWorkspace || mk.WorkspaceID == nil || *mk.WorkspaceID != ws.ID {
				t.Fatalf("workspace key scope: %+v", mk)
			}
			a.key(mk.Token, mk)
			keys = append(keys, mk.Token)
			e.must("GET", base+"/doomed", mk.Token, nil)
		}
		// An organization key of dave's stays valid: only the workspace goes.
		daveOrgKey := e.key("/api/v1/organizations/default", "cookie:"+daveCookie, []string{"organizations.read"}, nil)

		r = a.mut(ev("workspace.deleted", "workspace"), "DELETE", base+"/"+ws.ID.String(), k, nil)
		tnWantDeleted(t, "delete", r, ws.ID)

		for i, tok := range keys {
			tnWantDetail(t, fmt.Sprintf("workspace key %d after delete", i), e.tnCall("GET", "/api/v1/auth/me", tok, nil), 401)
			tnWantDetail(t, fmt.Sprintf("workspace key %d on its workspace", i), e.tnCall("GET", base+"/doomed", tok, nil), 401)
		}
		e.must("GET", "/api/v1/organizations/default", daveOrgKey.Token, nil)
		if _, err := e.st.GetWorkspaceMember(ctx, ws.ID, dave.User.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("workspace membership after delete: %v", err)
		}
		if left, err := e.st.ListManagementKeys(ctx, store.KeyFilter{WorkspaceID: &ws.ID}); err != nil || len(left) != 0 {
			t.Fatalf("workspace keys after delete: %d %v", len(left), err)
		}
		// The instance key list no longer shows them either.
		for _, mk := range decodeData[[]wire.ManagementKey](t, e.must("GET", "/api/v1/instance/management-keys", k, nil)) {
			if mk.WorkspaceID != nil && *mk.WorkspaceID == ws.ID {
				t.Fatalf("key %s of the deleted workspace still listed", mk.ID)
			}
		}
		// A new workspace with the same slug starts with no members.
		r = a.mut(tnAuditWant{Action: "workspace.created", TargetType: "workspace", Level: wire.ScopeWorkspace, Org: org}, "POST", base, k,
			map[string]any{"name": "Doomed"})
		if tnWantStatus(t, "recreate", r, 200); decodeData[wire.Workspace](t, r.body).Slug != "doomed" {
			t.Fatalf("recreated slug: %s", r.body)
		}
		if got := tnField(t, tnData(t, e.must("GET", base+"/doomed/members", k, nil)), "user_id"); len(got) != 0 {
			t.Fatalf("recreated workspace has members %v", got)
		}
		if got := tnField(t, tnData(t, e.must("GET", base, "cookie:"+daveCookie, nil)), "slug"); len(got) != 0 {
			t.Fatalf("dave still sees workspaces %v", got)
		}
		tnWantDetail(t, "dave on the recreated workspace", e.tnCall("GET", base+"/doomed", "cookie:"+daveCookie, nil), 404)

		// The deleted workspace's history remains in the organization's feed.
		events, _ := a.activity("/api/v1/organizations/default/activity", k)
		var kept []string
		for _, ev := range events {
			if ev.Scope.WorkspaceID != nil && *ev.Scope.WorkspaceID == ws.ID {
				kept = append(kept, ev.Action)
			}
		}
		if !tnSameSet(kept, []string{"workspace.created", "workspace_member.added", "management_key.issued", "management_key.issued", "workspace.deleted"}) {
			t.Fatalf("events of the deleted workspace: %v", kept)
		}
		a.orgs = []uuid.UUID{org}
		a.verify(k)
	})
}

// Spec 4.8: the list shows the workspaces the caller can read.
func TestWorkspaceListVisibility(t *testing.T) {
	t.Parallel()
	eachEnv(t, func(t *testing.T, e *env) {
		k := e.ownerKey
		base := "/api/v1/organizations/default/workspaces"
		for _, name := range []string{"Alpha", "Bravo", "Charlie"} {
			e.must("POST", base, k, map[string]any{"name": name})
		}
		people := map[string]string{}
		for _, p := range []struct{ name, orgRole, ws, wsRole string }{
			{"mem", "member", "alpha", "member"},
			{"view", "viewer", "bravo", "viewer"},
			{"adm", "admin", "", ""},
			{"own", "owner", "", ""},
			{"lonely", "member", "", ""},
			{"outsider", "", "", ""},
		} {
			s, c := e.signup(p.name + "@example.com")
			people[p.name] = "cookie:" + c
			if p.orgRole != "" {
				e.must("POST", "/api/v1/organizations/default/members", k, map[string]any{"user_id": s.User.ID, "role": p.orgRole})
			}
			if p.ws != "" {
				e.must("POST", base+"/"+p.ws+"/members", k, map[string]any{"user_id": s.User.ID, "role": p.wsRole})
			}
		}
		everything := []string{"default", "alpha", "bravo", "charlie"}
		memOrgKey := e.key("/api/v1/organizations/default", people["mem"], []string{"workspaces.read", "organizations.read"}, nil).Token
		alphaKey := e.key(base+"/alpha", k, []string{"workspaces.read"}, nil).Token
		cases := []struct {
			who  string
			cred string
			want []string
		}{
			{"instance owner key", k, everything},
			{"organization owner", people["own"], everything},
			{"organization admin", people["adm"], everything},
			{"organization member", people["mem"], []string{"alpha"}},
			{"organization viewer", people["view"], []string{"bravo"}},
			{"member of no workspace", people["lonely"], []string{}},
			{"member's organization key", memOrgKey, []string{"alpha"}},
			{"workspace key", alphaKey, []string{"alpha"}},
		}
		for _, c := range cases {
			raw := e.must("GET", base, c.cred, nil)
			if got := tnField(t, tnData(t, raw), "slug"); !tnSameSet(got, c.want) {
				t.Errorf("%s lists %v, want %v", c.who, got, c.want)
			}
		}
		tnWantDetail(t, "outsider lists", e.tnCall("GET", base, people["outsider"], nil), 404)
		// What is not listed cannot be read either; what is listed can.
		tnWantDetail(t, "member reads a foreign workspace", e.tnCall("GET", base+"/bravo", people["mem"], nil), 404)
		e.must("GET", base+"/alpha", people["mem"], nil)
		e.must("GET", base+"/charlie", people["adm"], nil)
		tnWantDetail(t, "workspace key reads a sibling", e.tnCall("GET", base+"/bravo", alphaKey, nil), 403)
	})
}

// ---------------------------------------------------------------------------
// Organization members.

func TestMembers(t *testing.T) {
	t.Parallel()
	eachEnv(t, func(t *testing.T, e *env) {
		a := tnNewAuditor(e)
		k := e.ownerKey
		org := e.boot.Organization.ID
		ownerID := e.boot.User.ID
		base := "/api/v1/organizations/default/members"
		memberShape := []string{"user_id", "org_id", "email", "name", "service_account", "role", "status", "created_at", "updated_at"}
		users := map[string]wire.SessionResult{}
		cookies := map[string]string{}
		for _, n := range []string{"alice", "bob", "carol", "dan"} {
			s, c := e.signup(n + "@example.com")
			users[n], cookies[n] = s, "cookie:"+c
			a.user(cookies[n], s.User.ID)
		}
		uid := func(n string) string { return users[n].User.ID.String() }
		ev := func(action string) tnAuditWant { return tnOrgEv(action, "user", org) }

		add := []struct {
			name   string
			cred   string
			body   map[string]any
			status int
			loc    []any
			typ    string
		}{
			{"by email, any case", k, map[string]any{"email": "ALICE@Example.com", "role": "admin"}, 200, nil, ""},
			{"by user_id", k, map[string]any{"user_id": uid("bob"), "role": "member"}, 200, nil, ""},
			{"duplicate by email", k, map[string]any{"email": "alice@example.com", "role": "viewer"}, 409, nil, ""},
			{"duplicate by user_id", k, map[string]any{"user_id": uid("bob"), "role": "viewer"}, 409, nil, ""},
			{"unknown email", k, map[string]any{"email": "nobody@example.com", "role": "member"}, 404, nil, ""},
			{"unknown user_id", k, map[string]any{"user_id": uuid.NewString(), "role": "member"}, 404, nil, ""},
			{"neither", k, map[string]any{"role": "member"}, 422, []any{"body"}, "missing"},
			{"bad role", k, map[string]any{"email": "carol@example.com", "role": "king"}, 422, []any{"body", "role"}, "literal_error"},
			{"missing role", k, map[string]any{"email": "carol@example.com"}, 422, []any{"body", "role"}, "missing"},
			{"bad user_id", k, map[string]any{"user_id": "nope", "role": "member"}, 422, []any{"body", "user_id"}, "uuid_parsing"},
			{"bad email", k, map[string]any{"email": "nope", "role": "member"}, 422, []any{"body", "email"}, "string_pattern_mismatch"},
			{"extra member", k, map[string]any{"email": "carol@example.com", "role": "member", "status": "active"}, 422, []any{"body", "status"}, "extra_forbidden"},
			{"admin grants owner", cookies["alice"], map[string]any{"email": "carol@example.com", "role": "owner"}, 403, nil, ""},
			{"admin adds a viewer", cookies["alice"], map[string]any{"email": "carol@example.com", "role": "viewer"}, 200, nil, ""},
			{"member adds", cookies["bob"], map[string]any{"email": "dan@example.com", "role": "viewer"}, 403, nil, ""},
			{"stranger adds", cookies["dan"], map[string]any{"email": "dan@example.com", "role": "viewer"}, 404, nil, ""},
		}
		for _, c := range add {
			r := a.mut(ev("member.added"), "POST", base, c.cred, c.body)
			switch c.status {
			case 200:
				tnWantStatus(t, c.name, r, 200)
				m := tnWantKeys(t, c.name, tnData(t, r.body), memberShape...)
				if m["role"] != c.body["role"] || m["status"] != "active" || m["org_id"] != org.String() || m["service_account"] != false {
					t.Fatalf("%s: %v", c.name, m)
				}
			case 422:
				tnWantValidation(t, c.name, r, c.loc, c.typ)
			default:
				tnWantDetail(t, c.name, r, c.status)
			}
		}
		if got := tnField(t, tnData(t, e.must("GET", base, k, nil)), "email"); !slices.Equal(got,
			[]string{"owner@example.com", "alice@example.com", "bob@example.com", "carol@example.com"}) {
			t.Fatalf("members %v", got)
		}
		// Members can read the list; strangers cannot see the organization.
		e.must("GET", base, cookies["bob"], nil)
		tnWantDetail(t, "stranger lists members", e.tnCall("GET", base, cookies["dan"], nil), 404)

		// Bob, a member, holds an organization key until he is removed.
		bobKey := e.key("/api/v1/organizations/default", cookies["bob"], []string{"organizations.read", "members.read"}, nil)
		e.must("GET", "/api/v1/organizations/default", bobKey.Token, nil)

		patch := []struct {
			name   string
			cred   string
			user   string
			body   map[string]any
			status int
			role   string
			st     string
		}{
			{"admin demotes bob", cookies["alice"], uid("bob"), map[string]any{"role": "viewer"}, 200, "viewer", "active"},
			{"admin promotes bob to owner", cookies["alice"], uid("bob"), map[string]any{"role": "owner"}, 403, "", ""},
			{"admin demotes the owner", cookies["alice"], ownerID.String(), map[string]any{"role": "member"}, 403, "", ""},
			{"admin suspends the owner", cookies["alice"], ownerID.String(), map[string]any{"status": "suspended"}, 403, "", ""},
			{"last owner demoted", k, ownerID.String(), map[string]any{"role": "admin"}, 409, "", ""},
			{"last owner suspended", k, ownerID.String(), map[string]any{"status": "suspended"}, 409, "", ""},
			{"last owner keeps the role", k, ownerID.String(), map[string]any{"role": "owner"}, 200, "owner", "active"},
			{"unknown member", k, uuid.NewString(), map[string]any{"role": "member"}, 404, "", ""},
			{"stranger is not a member", k, uid("dan"), map[string]any{"role": "member"}, 404, "", ""},
			{"bad status", k, uid("bob"), map[string]any{"status": "invited"}, 422, "", ""},
			{"bad role", k, uid("bob"), map[string]any{"role": "boss"}, 422, "", ""},
			{"bad path id", k, "bob", map[string]any{"role": "member"}, 422, "", ""},
			{"viewer changes roles", cookies["bob"], uid("carol"), map[string]any{"role": "admin"}, 403, "", ""},
			{"suspend carol", k, uid("carol"), map[string]any{"status": "suspended"}, 200, "viewer", "suspended"},
		}
		for _, c := range patch {
			r := a.mut(ev("member.updated"), "PATCH", base+"/"+c.user, c.cred, c.body)
			switch c.status {
			case 200:
				tnWantStatus(t, c.name, r, 200)
				m := tnWantKeys(t, c.name, tnData(t, r.body), memberShape...)
				if m["role"] != c.role || m["status"] != c.st || m["user_id"] != c.user {
					t.Fatalf("%s: %v", c.name, m)
				}
			case 422:
				tnWantStatus(t, c.name, r, 422)
			default:
				tnWantDetail(t, c.name, r, c.status)
			}
		}

		// Suspended: the organization disappears for carol, and comes back.
		tnWantDetail(t, "suspended member reads", e.tnCall("GET", "/api/v1/organizations/default", cookies["carol"], nil), 404)
		tnWantDetail(t, "suspended member lists workspaces", e.tnCall("GET", "/api/v1/organizations/default/workspaces", cookies["carol"], nil), 404)
		if got := decodeData[[]wire.Organization](t, e.must("GET", "/api/v1/organizations", cookies["carol"], nil)); len(got) != 0 {
			t.Errorf("a suspended member still lists %d organization(s)", len(got))
		}
		me := decodeData[wire.Me](t, e.must("GET", "/api/v1/auth/me", cookies["carol"], nil))
		if len(me.Memberships) != 1 || me.Memberships[0].Status != "suspended" {
			t.Fatalf("carol's memberships: %+v", me.Memberships)
		}
		tnWantStatus(t, "reactivate", a.mut(ev("member.updated"), "PATCH", base+"/"+uid("carol"), k, map[string]any{"status": "active"}), 200)
		e.must("GET", "/api/v1/organizations/default", cookies["carol"], nil)

		// Removing bob revokes his keys in the organization.
		r := a.mut(ev("member.removed"), "DELETE", base+"/"+uid("bob"), cookies["alice"], nil)
		tnWantStatus(t, "remove bob", r, 200)
		tnWantKeys(t, "removed member", tnData(t, r.body), memberShape...)
		tnWantDetail(t, "bob's key after removal", e.tnCall("GET", "/api/v1/organizations/default", bobKey.Token, nil), 401)
		tnWantDetail(t, "bob's session after removal", e.tnCall("GET", "/api/v1/organizations/default", cookies["bob"], nil), 404)
		for _, mk := range decodeData[[]wire.ManagementKey](t, e.must("GET", "/api/v1/instance/management-keys?user_id="+uid("bob"), k, nil)) {
			if mk.Status != wire.KeyRevoked || mk.RevokedAt == nil {
				t.Fatalf("bob's key after removal: %+v", mk)
			}
		}
		tnWantDetail(t, "remove bob again", a.mut(tnNoEvent, "DELETE", base+"/"+uid("bob"), k, nil), 404)
		tnWantDetail(t, "admin removes the owner", a.mut(tnNoEvent, "DELETE", base+"/"+ownerID.String(), cookies["alice"], nil), 403)
		tnWantDetail(t, "last owner removed", a.mut(tnNoEvent, "DELETE", base+"/"+ownerID.String(), k, nil), 409)
		if got := tnField(t, tnData(t, e.must("GET", base, k, nil)), "email"); slices.Contains(got, "bob@example.com") {
			t.Fatalf("bob still listed: %v", got)
		}

		// With a second owner, the first may step down; then the second is the last.
		tnWantStatus(t, "promote alice", a.mut(ev("member.updated"), "PATCH", base+"/"+uid("alice"), k, map[string]any{"role": "owner"}), 200)
		tnWantStatus(t, "owner steps down", a.mut(ev("member.updated"), "PATCH", base+"/"+ownerID.String(), cookies["alice"],
			map[string]any{"role": "admin"}), 200)
		tnWantDetail(t, "alice is the last owner", a.mut(tnNoEvent, "PATCH", base+"/"+uid("alice"), cookies["alice"],
			map[string]any{"role": "admin"}), 409)
		tnWantDetail(t, "alice removes herself", a.mut(tnNoEvent, "DELETE", base+"/"+uid("alice"), cookies["alice"], nil), 409)

		a.orgs = []uuid.UUID{org}
		a.verify(k)
	})
}

// ---------------------------------------------------------------------------
// Workspace members.

func TestWorkspaceMembers(t *testing.T) {
	t.Parallel()
	eachEnv(t, func(t *testing.T, e *env) {
		a := tnNewAuditor(e)
		k := e.ownerKey
		org := e.boot.Organization.ID
		ws := decodeData[wire.Workspace](t, e.must("POST", "/api/v1/organizations/default/workspaces", k, map[string]any{"name": "Team"}))
		base := "/api/v1/organizations/default/workspaces/team/members"
		shape := []string{"workspace_id", "user_id", "email", "name", "role", "created_at", "updated_at"}
		users := map[string]uuid.UUID{}
		cookies := map[string]string{}
		for _, p := range []struct{ name, role string }{{"wm1", "member"}, {"wm2", "member"}, {"susp", "member"}, {"outsider", ""}} {
			s, c := e.signup(p.name + "@example.com")
			users[p.name], cookies[p.name] = s.User.ID, "cookie:"+c
			a.user(cookies[p.name], s.User.ID)
			if p.role != "" {
				e.must("POST", "/api/v1/organizations/default/members", k, map[string]any{"user_id": s.User.ID, "role": p.role})
			}
		}
		e.must("PATCH", "/api/v1/organizations/default/members/"+users["susp"].String(), k, map[string]any{"status": "suspended"})
		candidates := func() []string {
			raw := e.must("GET", base+"/candidates", k, nil)
			list := tnData(t, raw)
			if arr := list.([]any); len(arr) > 0 {
				tnWantKeys(t, "candidate", arr[0], "user_id", "email", "name")
			}
			return tnField(t, list, "email")
		}
		if got := candidates(); !tnSameSet(got, []string{"owner@example.com", "wm1@example.com", "wm2@example.com"}) {
			t.Fatalf("candidates %v", got)
		}
		ev := func(action string) tnAuditWant { return tnWsEv(action, "user", org, ws.ID) }
		for _, c := range []struct {
			name   string
			cred   string
			body   map[string]any
			status int
			loc    []any
			typ    string
		}{
			{"add wm1 as member", k, map[string]any{"user_id": users["wm1"], "role": "member"}, 200, nil, ""},
			{"add wm2 as viewer", k, map[string]any{"user_id": users["wm2"], "role": "viewer"}, 200, nil, ""},
			{"add again", k, map[string]any{"user_id": users["wm1"], "role": "admin"}, 409, nil, ""},
			{"not an organization member", k, map[string]any{"user_id": users["outsider"], "role": "member"}, 404, nil, ""},
			{"suspended organization member", k, map[string]any{"user_id": users["susp"], "role": "member"}, 404, nil, ""},
			{"unknown user", k, map[string]any{"user_id": uuid.New(), "role": "member"}, 404, nil, ""},
			{"owner is no workspace role", k, map[string]any{"user_id": users["wm1"], "role": "owner"}, 422, []any{"body", "role"}, "literal_error"},
			{"missing user_id", k, map[string]any{"role": "member"}, 422, []any{"body", "user_id"}, "missing"},
			{"email is not accepted", k, map[string]any{"email": "wm1@example.com", "role": "member"}, 422, []any{"body", "email"}, "extra_forbidden"},
			{"workspace member adds", cookies["wm1"], map[string]any{"user_id": e.boot.User.ID, "role": "member"}, 403, nil, ""},
		} {
			r := a.mut(ev("workspace_member.added"), "POST", base, c.cred, c.body)
			switch c.status {
			case 200:
				tnWantStatus(t, c.name, r, 200)
				m := tnWantKeys(t, c.name, tnData(t, r.body), shape...)
				if m["role"] != c.body["role"] || m["workspace_id"] != ws.ID.String() {
					t.Fatalf("%s: %v", c.name, m)
				}
			case 422:
				tnWantValidation(t, c.name, r, c.loc, c.typ)
			default:
				tnWantDetail(t, c.name, r, c.status)
			}
		}
		if got := candidates(); !slices.Equal(got, []string{"owner@example.com"}) {
			t.Fatalf("candidates after adding: %v", got)
		}
		if got := tnField(t, tnData(t, e.must("GET", base, k, nil)), "email"); !slices.Equal(got, []string{"wm1@example.com", "wm2@example.com"}) {
			t.Fatalf("members %v", got)
		}

		// A workspace member reads the workspace but cannot change it.
		wsPath := "/api/v1/organizations/default/workspaces/team"
		wm1Key := e.key(wsPath, cookies["wm1"], []string{"workspaces.read"}, nil)
		e.must("GET", wsPath, cookies["wm1"], nil)
		e.must("GET", base, cookies["wm1"], nil)
		tnWantDetail(t, "member updates the workspace", a.mut(tnNoEvent, "PATCH", wsPath, cookies["wm1"], map[string]any{"name": "Mine"}), 403)
		tnWantDetail(t, "member deletes the workspace", a.mut(tnNoEvent, "DELETE", wsPath, cookies["wm1"], nil), 403)
		tnWantDetail(t, "viewer issues a key", a.mut(tnNoEvent, "POST", wsPath+"/management-keys", cookies["wm2"],
			map[string]any{"permissions": []string{"workspaces.read"}, "label": "x"}), 403)

		for _, c := range []struct {
			name   string
			user   uuid.UUID
			body   map[string]any
			status int
		}{
			{"promote wm2", users["wm2"], map[string]any{"role": "admin"}, 200},
			{"not in the workspace", users["outsider"], map[string]any{"role": "admin"}, 404},
			{"bad role", users["wm2"], map[string]any{"role": "owner"}, 422},
			{"missing role", users["wm2"], map[string]any{}, 422},
		} {
			r := a.mut(ev("workspace_member.updated"), "PATCH", base+"/"+c.user.String(), k, c.body)
			tnWantStatus(t, c.name, r, c.status)
			if c.status == 200 {
				if m := tnWantKeys(t, c.name, tnData(t, r.body), shape...); m["role"] != c.body["role"] || m["email"] != "wm2@example.com" {
					t.Fatalf("%s: %v", c.name, m)
				}
			}
		}
		// As workspace admin, wm2 may now update the workspace and manage its members.
		r := a.mut(tnWsEv("workspace.updated", "workspace", org, ws.ID), "PATCH", wsPath, cookies["wm2"], map[string]any{"name": "Team B"})
		tnWantStatus(t, "workspace admin renames", r, 200)
		tnWantStatus(t, "workspace admin demotes wm1", a.mut(ev("workspace_member.updated"), "PATCH", base+"/"+users["wm1"].String(),
			cookies["wm2"], map[string]any{"role": "viewer"}), 200)

		r = a.mut(ev("workspace_member.removed"), "DELETE", base+"/"+users["wm2"].String(), k, nil)
		if tnWantStatus(t, "remove wm2", r, 200); jsonPath(t, r.body, "data.user_id") != users["wm2"].String() {
			t.Fatalf("remove result: %s", r.body)
		}
		tnWantDetail(t, "removed member reads", e.tnCall("GET", wsPath, cookies["wm2"], nil), 404)
		tnWantDetail(t, "remove again", a.mut(tnNoEvent, "DELETE", base+"/"+users["wm2"].String(), k, nil), 404)
		tnWantValidation(t, "bad path id", a.mut(tnNoEvent, "DELETE", base+"/wm2", k, nil), []any{"path", "user_id"}, "uuid_parsing")
		if got := candidates(); !tnSameSet(got, []string{"owner@example.com", "wm2@example.com"}) {
			t.Fatalf("candidates after removal: %v", got)
		}

		// Leaving the organization leaves its workspaces too, and revokes
		// workspace keys there.
		e.must("GET", wsPath, wm1Key.Token, nil)
		e.must("DELETE", "/api/v1/organizations/default/members/"+users["wm1"].String(), k, nil)
		if got := tnField(t, tnData(t, e.must("GET", base, k, nil)), "email"); len(got) != 0 {
			t.Fatalf("workspace members after leaving the organization: %v", got)
		}
		tnWantDetail(t, "workspace key after leaving the organization", e.tnCall("GET", wsPath, wm1Key.Token, nil), 401)
		e.must("POST", "/api/v1/organizations/default/members", k, map[string]any{"user_id": users["wm1"], "role": "member"})
		tnWantDetail(t, "rejoined member has no workspace", e.tnCall("GET", wsPath, cookies["wm1"], nil), 404)
		if got := candidates(); !tnSameSet(got, []string{"owner@example.com", "wm1@example.com", "wm2@example.com"}) {
			t.Fatalf("candidates after rejoining: %v", got)
		}
		a.orgs = []uuid.UUID{org}
		a.verify(k)
	})
}

// ---------------------------------------------------------------------------
// Invitations.

func TestInvitations(t *testing.T) {
	t.Parallel()
	eachEnv(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		a := tnNewAuditor(e)
		k := e.ownerKey
		org := e.boot.Organization.ID
		base := "/api/v1/organizations/default/invitations"
		invShape := []string{"id", "org_id", "email", "role", "status", "invited_by", "accepted_by", "expires_at", "accepted_at",
			"revoked_at", "created_at", "updated_at"}
		ev := func(action string) tnAuditWant { return tnOrgEv(action, "invitation", org) }

		alice, aliceCookie := e.signup("alice@example.com")
		a.user("cookie:"+aliceCookie, alice.User.ID)
		e.must("POST", "/api/v1/organizations/default/members", k, map[string]any{"user_id": alice.User.ID, "role": "admin"})

		issue := func(cred, email, role string) (wire.Invitation, tnResult) {
			t.Helper()
			r := a.mut(ev("invitation.issued"), "POST", base, cred, map[string]any{"email": email, "role": role})
			if r.status != 200 {
				return wire.Invitation{}, r
			}
			tnWantKeys(t, "issued invitation", tnData(t, r.body), append(slices.Clone(invShape), "token")...)
			inv := decodeData[wire.Invitation](t, r.body)
			if !strings.HasPrefix(inv.Token, auth.InvitationPrefix) || inv.Status != "pending" || inv.OrgID != org || inv.Role != role {
				t.Fatalf("issued: %+v", inv)
			}
			if d := time.Until(inv.ExpiresAt); d < 6*24*time.Hour || d > 8*24*time.Hour {
				t.Fatalf("invitation expires in %v", d)
			}
			a.secret(inv.Token)
			return inv, r
		}
		inv1, _ := issue(k, "New.Person@Example.com", "member")
		if inv1.Email != "new.person@example.com" || inv1.InvitedBy == nil || *inv1.InvitedBy != e.boot.User.ID {
			t.Fatalf("inv1: %+v", inv1)
		}
		inv2, _ := issue("cookie:"+aliceCookie, "other@example.com", "viewer")
		inv3, _ := issue(k, "third@example.com", "admin")
		inv4, _ := issue(k, "x@example.com", "member")
		for _, c := range []struct {
			name   string
			cred   string
			body   map[string]any
			status int
			loc    []any
			typ    string
		}{
			{"bad email", k, map[string]any{"email": "nope", "role": "member"}, 422, []any{"body", "email"}, "string_pattern_mismatch"},
			{"bad role", k, map[string]any{"email": "a@b.c", "role": "king"}, 422, []any{"body", "role"}, "literal_error"},
			{"extra member", k, map[string]any{"email": "a@b.c", "role": "member", "token": "inv_x"}, 422, []any{"body", "token"}, "extra_forbidden"},
			{"admin invites an owner", "cookie:" + aliceCookie, map[string]any{"email": "boss@example.com", "role": "owner"}, 403, nil, ""},
		} {
			r := a.mut(ev("invitation.issued"), "POST", base, c.cred, c.body)
			if c.status == 422 {
				tnWantValidation(t, c.name, r, c.loc, c.typ)
			} else {
				tnWantDetail(t, c.name, r, c.status)
			}
		}

		// The list is the complete set, without tokens and without page.
		list := func() []wire.Invitation {
			t.Helper()
			raw := e.must("GET", base, k, nil)
			for _, it := range tnData(t, raw).([]any) {
				tnWantKeys(t, "listed invitation", it, invShape...)
			}
			for _, s := range a.secrets {
				if strings.HasPrefix(s, auth.InvitationPrefix) && strings.Contains(string(raw), s) {
					t.Fatal("the invitation list shows a token")
				}
			}
			return decodeData[[]wire.Invitation](t, raw)
		}
		statusOf := func(id uuid.UUID) string {
			for _, inv := range list() {
				if inv.ID == id {
					return inv.Status
				}
			}
			t.Fatalf("invitation %s not listed", id)
			return ""
		}
		if got := list(); len(got) != 4 || got[0].ID != inv1.ID {
			t.Fatalf("list: %+v", got)
		}

		// Reissue: a new token; the old one stops working.
		r := a.mut(ev("invitation.reissued"), "POST", base+"/"+inv1.ID.String()+"/reissue", k, nil)
		tnWantStatus(t, "reissue", r, 200)
		re := decodeData[wire.Invitation](t, r.body)
		a.secret(re.Token)
		if re.ID != inv1.ID || re.Token == "" || re.Token == inv1.Token || re.Status != "pending" {
			t.Fatalf("reissued: %+v", re)
		}
		password := "new person password"
		a.secret(password)
		accept := func(what, cred string, body map[string]any, w tnAuditWant) tnResult {
			t.Helper()
			return a.mut(w, "POST", "/api/v1/invitations/accept", cred, body)
		}
		tnWantDetail(t, "old token", accept("old", "", map[string]any{"token": inv1.Token, "password": password}, tnNoEvent), 404)
		tnWantDetail(t, "unknown token", accept("unknown", "", map[string]any{"token": "inv_nothing", "password": password}, tnNoEvent), 404)
		if got := list(); len(got) != 4 {
			t.Fatalf("reissue changed the list: %d", len(got))
		}

		// Accepting without a session creates the account; it needs a password.
		tnWantValidation(t, "accept without password", accept("nopw", "", map[string]any{"token": re.Token}, tnNoEvent),
			[]any{"body", "password"}, "missing")
		tnWantValidation(t, "accept with a short password", accept("short", "", map[string]any{"token": re.Token, "password": "short"}, tnNoEvent),
			[]any{"body", "password"}, "string_too_short")
		if st := statusOf(inv1.ID); st != "pending" {
			t.Fatalf("failed accepts changed the status to %s", st)
		}
		if _, err := e.st.GetUserByEmail(ctx, "new.person@example.com"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a failed accept created the account: %v", err)
		}
		r = accept("create", "", map[string]any{"token": re.Token, "password": password, "name": "New Person"},
			ev("invitation.accepted"))
		tnWantStatus(t, "accept", r, 200)
		tnWantKeys(t, "accepted", tnData(t, r.body), "user", "membership")
		acc := decodeData[wire.InvitationAccepted](t, r.body)
		newID := acc.User.ID
		a.wants[len(a.wants)-1].want.TargetID = inv1.ID.String()
		a.wants[len(a.wants)-1].actor = tnActorWant{Type: "user", ID: &newID}
		if acc.User.Email != "new.person@example.com" || acc.User.Name != "New Person" || acc.User.InstanceRole != auth.InstanceMember ||
			acc.Membership.OrgID != org || acc.Membership.Role != "member" || acc.Membership.Status != "active" ||
			acc.Membership.UserID != newID || !slices.Equal(acc.User.Orgs, []uuid.UUID{org}) {
			t.Fatalf("accepted: %+v", acc)
		}
		c := tnSessionCookie(r.cookies)
		if c == nil || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode {
			t.Fatalf("accept set no proper session cookie: %+v", c)
		}
		a.secret(c.Value)
		e.must("GET", "/api/v1/organizations/default", "cookie:"+c.Value, nil)
		if me := decodeData[wire.Me](t, e.must("GET", "/api/v1/auth/me", "cookie:"+c.Value, nil)); me.User.ID != newID {
			t.Fatalf("me: %+v", me)
		}
		// The account signs in with the password.
		tnWantStatus(t, "login", e.tnCall("POST", "/api/v1/auth/login", "", map[string]any{"email": "new.person@example.com", "password": password}), 200)
		for _, inv := range list() {
			if inv.ID == inv1.ID && (inv.Status != "accepted" || inv.AcceptedBy == nil || *inv.AcceptedBy != newID || inv.AcceptedAt == nil) {
				t.Fatalf("accepted invitation lists as %+v", inv)
			}
		}
		tnWantDetail(t, "accept again", accept("again", "", map[string]any{"token": re.Token, "password": password}, tnNoEvent), 409)
		tnWantDetail(t, "accept again signed in", accept("again", "cookie:"+c.Value, map[string]any{"token": re.Token}, tnNoEvent), 409)
		tnWantDetail(t, "reissue accepted", a.mut(tnNoEvent, "POST", base+"/"+inv1.ID.String()+"/reissue", k, nil), 409)
		tnWantDetail(t, "revoke accepted", a.mut(tnNoEvent, "POST", base+"/"+inv1.ID.String()+"/revoke", k, nil), 409)

		// Revoke, both ways; revoked invitations cannot be accepted.
		for _, c := range []struct {
			name   string
			method string
			inv    wire.Invitation
		}{{"POST revoke", "POST", inv2}, {"DELETE", "DELETE", inv3}} {
			path := base + "/" + c.inv.ID.String()
			if c.method == "POST" {
				path += "/revoke"
			}
			r := a.mut(ev("invitation.revoked"), c.method, path, k, nil)
			tnWantStatus(t, c.name, r, 200)
			got := decodeData[wire.Invitation](t, r.body)
			if got.Status != "revoked" || got.RevokedAt == nil || got.Token != "" {
				t.Fatalf("%s: %+v", c.name, got)
			}
			tnWantDetail(t, c.name+" then accept", accept("revoked", "", map[string]any{"token": c.inv.Token, "password": password}, tnNoEvent), 409)
			// Revoking again changes nothing and records nothing.
			r = a.mut(tnNoEvent, c.method, path, k, nil)
			if tnWantStatus(t, c.name+" again", r, 200); decodeData[wire.Invitation](t, r.body).Status != "revoked" {
				t.Fatalf("%s again: %s", c.name, r.body)
			}
			if st := statusOf(c.inv.ID); st != "revoked" {
				t.Fatalf("%s lists as %s", c.name, st)
			}
		}
		tnWantDetail(t, "revoke unknown", a.mut(tnNoEvent, "DELETE", base+"/"+uuid.NewString(), k, nil), 404)

		// Signed in as someone else: refused, and nothing changes.
		tnWantDetail(t, "accept as another email", accept("other", "cookie:"+aliceCookie, map[string]any{"token": inv4.Token}, tnNoEvent), 403)
		if st := statusOf(inv4.ID); st != "pending" {
			t.Fatalf("inv4 is %s", st)
		}
		// Signed out while the account exists: sign in first.
		xs, xCookie := e.signup("x@example.com")
		a.user("cookie:"+xCookie, xs.User.ID)
		tnWantDetail(t, "accept for an existing account without a session", accept("exists", "",
			map[string]any{"token": inv4.Token, "password": password}, tnNoEvent), 409)
		r = accept("signed in", "cookie:"+xCookie, map[string]any{"token": inv4.Token}, ev("invitation.accepted"))
		tnWantStatus(t, "accept signed in", r, 200)
		a.wants[len(a.wants)-1].want.TargetID = inv4.ID.String()
		if tnSessionCookie(r.cookies) != nil {
			t.Fatal("accepting while signed in started another session")
		}
		e.must("GET", "/api/v1/organizations/default", "cookie:"+xCookie, nil)

		// An expired invitation cannot be accepted until it is reissued.
		inv5, _ := issue(k, "late@example.com", "viewer")
		if _, err := e.st.DB().NewUpdate().Model((*store.Invitation)(nil)).Set("expires_at = ?", store.Now().Add(-time.Hour)).
			Where("id = ?", inv5.ID).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if st := statusOf(inv5.ID); st != "expired" {
			t.Fatalf("expired invitation lists as %s", st)
		}
		tnWantDetail(t, "accept expired", accept("expired", "", map[string]any{"token": inv5.Token, "password": password}, tnNoEvent), 409)
		r = a.mut(ev("invitation.reissued"), "POST", base+"/"+inv5.ID.String()+"/reissue", k, nil)
		tnWantStatus(t, "reissue expired", r, 200)
		re5 := decodeData[wire.Invitation](t, r.body)
		a.secret(re5.Token)
		if re5.Status != "pending" {
			t.Fatalf("reissued expired: %+v", re5)
		}

		// Only owners hand out owner invitations, reissues included: a
		// reissued owner token in an admin's hands would let the admin create
		// the invited account and become an owner through it.
		bossInv, _ := issue(k, "boss@example.com", "owner")
		tnWantDetail(t, "admin reissues an owner invitation", a.mut(tnNoEvent, "POST", base+"/"+bossInv.ID.String()+"/reissue",
			"cookie:"+aliceCookie, nil), 403)
		r = a.mut(ev("invitation.reissued"), "POST", base+"/"+inv4.ID.String()+"/reissue", k, nil)
		tnWantDetail(t, "reissue accepted (signed-in path)", r, 409)
		r = a.mut(ev("invitation.reissued"), "POST", base+"/"+bossInv.ID.String()+"/reissue", k, nil)
		tnWantStatus(t, "owner reissues an owner invitation", r, 200)
		a.secret(jsonPath(t, r.body, "data.token").(string))

		// Members read the list; viewers cannot issue.
		e.must("GET", base, "cookie:"+c.Value, nil)
		tnWantDetail(t, "member issues", a.mut(tnNoEvent, "POST", base, "cookie:"+c.Value, map[string]any{"email": "q@example.com", "role": "viewer"}), 403)

		a.orgs = []uuid.UUID{org}
		a.verify(k)
	})
}

// Invitations still create accounts when self-service sign-up is off.
func TestInvitationWithSignupDisabled(t *testing.T) {
	t.Parallel()
	tnEachEnvOpts(t, api.Options{SignupDisabled: true}, func(t *testing.T, e *env) {
		r := e.tnCall("POST", "/api/v1/auth/signup", "", map[string]any{"email": "solo@example.com", "password": "a long enough password"})
		tnWantDetail(t, "signup", r, 403)
		if tnSessionCookie(r.cookies) != nil {
			t.Fatal("refused signup set a cookie")
		}
		tnWantDetail(t, "login after refused signup", e.tnCall("POST", "/api/v1/auth/login", "",
			map[string]any{"email": "solo@example.com", "password": "a long enough password"}), 401)
		inv := decodeData[wire.Invitation](t, e.must("POST", "/api/v1/organizations/default/invitations", e.ownerKey,
			map[string]any{"email": "solo@example.com", "role": "member"}))
		r = e.tnCall("POST", "/api/v1/invitations/accept", "", map[string]any{"token": inv.Token, "password": "a long enough password"})
		tnWantStatus(t, "accept", r, 200)
		if c := tnSessionCookie(r.cookies); c == nil {
			t.Fatal("no session after accepting")
		}
	})
}

// ---------------------------------------------------------------------------
// Service accounts.

func TestServiceAccounts(t *testing.T) {
	t.Parallel()
	eachEnv(t, func(t *testing.T, e *env) {
		a := tnNewAuditor(e)
		k := e.ownerKey
		org := e.boot.Organization.ID
		base := "/api/v1/organizations/default/service-accounts"
		userShape := []string{"id", "email", "name", "instance_role", "service_account", "managing_org_id", "created_at", "updated_at", "orgs"}
		keyShape := []string{"id", "user_id", "org_id", "workspace_id", "parent_id", "prefix", "permissions", "label", "expires_at",
			"revoked_at", "created_at", "updated_at", "scope", "status"}
		saPerms := []string{"workspaces.read", "workspaces.create", "members.read"}

		r := a.mut(tnOrgEv("service_account.created", "user", org), "POST", base, k,
			map[string]any{"name": "CI bot", "management_key": map[string]any{"permissions": saPerms, "label": "ci"}})
		tnWantStatus(t, "create", r, 200)
		bundle := tnWantKeys(t, "bundle", tnData(t, r.body), "service_account", "membership", "management_key")
		sam := tnWantKeys(t, "service_account", bundle["service_account"], userShape...)
		tnWantKeys(t, "membership", bundle["membership"], "user_id", "org_id", "role", "status")
		tnWantKeys(t, "management_key", bundle["management_key"], append(slices.Clone(keyShape), "token")...)
		tnWantKeys(t, "management_key.scope", jsonPath(t, r.body, "data.management_key.scope"), "level", "org_id", "workspace_id")
		if sam["service_account"] != true {
			t.Fatalf("service_account flag: %v", sam)
		}
		b := decodeData[wire.ServiceAccountBundle](t, r.body)
		sa, m, mk := b.ServiceAccount, b.Membership, b.ManagementKey
		if sa.Name != "CI bot" || sa.InstanceRole != auth.InstanceMember || sa.ManagingOrgID == nil || *sa.ManagingOrgID != org ||
			!slices.Equal(sa.Orgs, []uuid.UUID{org}) || sa.Email == "" {
			t.Fatalf("service account: %+v", sa)
		}
		if m.UserID != sa.ID || m.OrgID != org || m.Status != "active" || m.Role == "" {
			t.Fatalf("membership: %+v", m)
		}
		wantPerms := slices.Clone(saPerms)
		sort.Strings(wantPerms)
		gotPerms := slices.Clone(mk.Permissions)
		sort.Strings(gotPerms)
		if mk.UserID != sa.ID || !strings.HasPrefix(mk.Token, auth.ManagementKeyPrefix) || !strings.HasPrefix(mk.Token, mk.Prefix) ||
			mk.Scope.Level != wire.ScopeOrganization || mk.Scope.OrgID == nil || *mk.Scope.OrgID != org || mk.Scope.WorkspaceID != nil ||
			mk.OrgID == nil || *mk.OrgID != org || mk.WorkspaceID != nil || mk.ParentID == nil || *mk.ParentID != e.boot.ManagementKey.ID ||
			mk.Label != "ci" || mk.Status != wire.KeyActive || mk.RevokedAt != nil || mk.ExpiresAt != nil || !slices.Equal(gotPerms, wantPerms) {
			t.Fatalf("management key: %+v", mk)
		}
		a.also(r, tnOrgEv("management_key.issued", "management_key", org), k)
		a.wants[len(a.wants)-1].want.TargetID = mk.ID.String()
		a.saKey(mk.Token, mk)

		// The key works, as the service account, within its ceiling.
		me := decodeData[wire.Me](t, e.must("GET", "/api/v1/auth/me", mk.Token, nil))
		if me.Credential != "management_key" || me.User.ID != sa.ID || !me.User.ServiceAccount || me.Key == nil || me.Key.ID != mk.ID {
			t.Fatalf("me as the service account: %+v", me)
		}
		e.must("GET", "/api/v1/organizations/default/workspaces", mk.Token, nil)
		r = a.mut(tnAuditWant{Action: "workspace.created", TargetType: "workspace", Level: wire.ScopeWorkspace, Org: org}, "POST",
			"/api/v1/organizations/default/workspaces", mk.Token, map[string]any{"name": "Built by CI"})
		tnWantStatus(t, "service account creates a workspace", r, 200)
		a.wants[len(a.wants)-1].want.WS = tnUUID(t, jsonPath(t, r.body, "data.id"))
		tnWantDetail(t, "beyond the key's ceiling", a.mut(tnNoEvent, "DELETE", "/api/v1/organizations/default/workspaces/built-by-ci", mk.Token, nil), 403)
		tnWantDetail(t, "outside the key's scope", e.tnCall("GET", "/api/v1/instance/users", mk.Token, nil), 403)
		// Nobody signs in as a service account.
		bad := e.tnCall("POST", "/api/v1/auth/login", "", map[string]any{"email": sa.Email, "password": "whatever password"})
		unknown := e.tnCall("POST", "/api/v1/auth/login", "", map[string]any{"email": "nobody@example.com", "password": "whatever password"})
		if tnWantDetail(t, "login as a service account", bad, 401); string(bad.body) != string(unknown.body) {
			t.Fatalf("service-account login %s differs from unknown email %s", bad.body, unknown.body)
		}

		// Both permissions are required, and nothing beyond the caller's may be handed on.
		orgPrefix := "/api/v1/organizations/default"
		onlyMembers := e.key(orgPrefix, k, []string{"members.manage", "members.read"}, nil)
		onlyIssue := e.key(orgPrefix, k, []string{"management-keys.issue", "members.read"}, nil)
		both := e.key(orgPrefix, k, []string{"members.manage", "management-keys.issue", "members.read", "workspaces.read"}, nil)
		soon := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		expiring := e.key(orgPrefix, k, []string{"members.manage", "management-keys.issue", "members.read"}, map[string]any{"expires_at": soon})
		for _, x := range []wire.ManagementKey{onlyMembers, onlyIssue, both, expiring} {
			a.key(x.Token, x)
		}
		_, memberCookie := e.signup("member@example.com")
		memberID := decodeData[wire.Me](t, e.must("GET", "/api/v1/auth/me", "cookie:"+memberCookie, nil)).User.ID
		a.user("cookie:"+memberCookie, memberID)
		e.must("POST", orgPrefix+"/members", k, map[string]any{"user_id": memberID, "role": "member"})
		saBody := func(perms ...string) map[string]any {
			if perms == nil {
				perms = []string{}
			}
			return map[string]any{"name": "Bot", "management_key": map[string]any{"permissions": perms, "label": "bot"}}
		}
		countSAs := func() int { return len(tnData(t, e.must("GET", base, k, nil)).([]any)) }
		before := countSAs()
		for _, c := range []struct {
			name   string
			cred   string
			body   any
			status int
			loc    []any
			typ    string
		}{
			{"key with members.manage only", onlyMembers.Token, saBody("members.read"), 403, nil, ""},
			{"key with management-keys.issue only", onlyIssue.Token, saBody("members.read"), 403, nil, ""},
			{"organization member", "cookie:" + memberCookie, saBody("members.read"), 403, nil, ""},
			{"permissions beyond the caller's", both.Token, saBody("workspaces.read", "workspaces.create"), 403, nil, ""},
			{"instance permission", both.Token, saBody("organizations.create"), 403, nil, ""},
			{"outliving the issuing key", expiring.Token, saBody("members.read"), 403, nil, ""},
			{"missing management_key", k, map[string]any{"name": "Bot"}, 422, []any{"body", "management_key"}, "missing"},
			{"no permissions", k, saBody(), 422, []any{"body", "management_key", "permissions"}, "too_short"},
			{"unknown permission", k, saBody("root"), 422, []any{"body", "management_key", "permissions", 0}, "literal_error"},
			{"label too long", k, map[string]any{"name": "Bot", "management_key": map[string]any{"permissions": []string{"members.read"},
				"label": strings.Repeat("l", 81)}}, 422, []any{"body", "management_key", "label"}, "string_too_long"},
			{"extra in the key", k, map[string]any{"name": "Bot", "management_key": map[string]any{"permissions": []string{"members.read"},
				"label": "l", "scope": "instance"}}, 422, []any{"body", "management_key", "scope"}, "extra_forbidden"},
			{"missing name", k, map[string]any{"management_key": map[string]any{"permissions": []string{"members.read"}, "label": "l"}},
				422, []any{"body", "name"}, "missing"},
		} {
			r := a.mut(tnOrgEv("service_account.created", "user", org), "POST", base, c.cred, c.body)
			if c.status == 422 {
				tnWantValidation(t, c.name, r, c.loc, c.typ)
			} else {
				tnWantDetail(t, c.name, r, c.status)
			}
		}
		if n := countSAs(); n != before {
			t.Fatalf("refused creations left %d service accounts (had %d)", n, before)
		}
		r = a.mut(tnOrgEv("service_account.created", "user", org), "POST", base, both.Token, saBody("members.read", "workspaces.read"))
		tnWantStatus(t, "key with both permissions", r, 200)
		sa2 := decodeData[wire.ServiceAccountBundle](t, r.body)
		a.also(r, tnOrgEv("management_key.issued", "management_key", org), both.Token)
		a.wants[len(a.wants)-1].want.TargetID = sa2.ManagementKey.ID.String()
		a.secret(sa2.ManagementKey.Token)
		if sa2.ManagementKey.ParentID == nil || *sa2.ManagementKey.ParentID != both.ID {
			t.Fatalf("parent of a key issued by a key: %+v", sa2.ManagementKey)
		}
		r = a.mut(tnOrgEv("service_account.created", "user", org), "POST", base, expiring.Token,
			map[string]any{"name": "Short-lived", "management_key": map[string]any{"permissions": []string{"members.read"}, "label": "s", "expires_at": soon}})
		tnWantStatus(t, "expiring key within the issuer's life", r, 200)
		a.also(r, tnOrgEv("management_key.issued", "management_key", org), expiring.Token)
		a.wants[len(a.wants)-1].want.TargetID = jsonPath(t, r.body, "data.management_key.id").(string)
		a.secret(jsonPath(t, r.body, "data.management_key.token").(string))

		// List and get.
		raw := e.must("GET", base, k, nil)
		list := tnData(t, raw)
		for _, it := range list.([]any) {
			tnWantKeys(t, "listed service account", it, userShape...)
		}
		if got := tnField(t, list, "id"); !slices.Contains(got, sa.ID.String()) || !slices.Contains(got, sa2.ServiceAccount.ID.String()) ||
			slices.Contains(got, memberID.String()) || len(got) != 3 {
			t.Fatalf("service accounts %v", got)
		}
		got := decodeData[wire.User](t, e.must("GET", base+"/"+sa.ID.String(), k, nil))
		if got.ID != sa.ID || !got.ServiceAccount || got.Name != "CI bot" {
			t.Fatalf("get: %+v", got)
		}
		e.must("GET", base+"/"+sa.ID.String(), "cookie:"+memberCookie, nil)
		tnWantDetail(t, "get a person", e.tnCall("GET", base+"/"+memberID.String(), k, nil), 404)
		tnWantDetail(t, "get unknown", e.tnCall("GET", base+"/"+uuid.NewString(), k, nil), 404)
		tnWantValidation(t, "get bad id", e.tnCall("GET", base+"/bot", k, nil), []any{"path", "user_id"}, "uuid_parsing")
		members := tnField(t, tnData(t, e.must("GET", orgPrefix+"/members", k, nil)), "user_id")
		if !slices.Contains(members, sa.ID.String()) {
			t.Fatalf("service account is not listed as a member: %v", members)
		}
		tnWantDetail(t, "service account gets an instance role", a.mut(tnNoEvent, "PATCH", "/api/v1/instance/users/"+sa.ID.String(), k,
			map[string]any{"instance_role": "admin"}), 409)

		// Delete: the key dies, and reads back revoked.
		tnWantDetail(t, "member deletes", a.mut(tnNoEvent, "DELETE", base+"/"+sa.ID.String(), "cookie:"+memberCookie, nil), 403)
		r = a.mut(tnOrgEv("service_account.deleted", "user", org), "DELETE", base+"/"+sa.ID.String(), k, nil)
		tnWantDeleted(t, "delete", r, sa.ID)
		tnWantDetail(t, "deleted service account's key", e.tnCall("GET", "/api/v1/organizations/default/workspaces", mk.Token, nil), 401)
		keys := decodeData[[]wire.ManagementKey](t, e.must("GET", "/api/v1/instance/management-keys?user_id="+sa.ID.String(), k, nil))
		if len(keys) != 1 || keys[0].ID != mk.ID || keys[0].Status != wire.KeyRevoked || keys[0].RevokedAt == nil || keys[0].Token != "" {
			t.Fatalf("keys of the deleted service account: %+v", keys)
		}
		tnWantDetail(t, "get deleted", e.tnCall("GET", base+"/"+sa.ID.String(), k, nil), 404)
		tnWantDetail(t, "delete again", a.mut(tnNoEvent, "DELETE", base+"/"+sa.ID.String(), k, nil), 404)
		if got := tnField(t, tnData(t, e.must("GET", base, k, nil)), "id"); slices.Contains(got, sa.ID.String()) || len(got) != 2 {
			t.Fatalf("service accounts after delete: %v", got)
		}
		if got := tnField(t, tnData(t, e.must("GET", orgPrefix+"/members", k, nil)), "user_id"); slices.Contains(got, sa.ID.String()) {
			t.Fatalf("deleted service account still a member")
		}
		for _, u := range decodeData[[]wire.User](t, e.must("GET", "/api/v1/instance/users", k, nil)) {
			if u.ID == sa.ID {
				t.Errorf("deleted service account still listed among instance users: %+v", u)
			}
		}
		tnWantDetail(t, "instance get of a deleted service account", e.tnCall("GET", "/api/v1/instance/users/"+sa.ID.String(), k, nil), 404)
		tnWantDetail(t, "re-add a deleted service account", a.mut(tnNoEvent, "POST", orgPrefix+"/members", k,
			map[string]any{"user_id": sa.ID, "role": "member"}), 404)
		// The other service account's key is untouched.
		e.must("GET", orgPrefix+"/workspaces", sa2.ManagementKey.Token, nil)

		a.orgs = []uuid.UUID{org}
		a.verify(k)
	})
}

// ---------------------------------------------------------------------------
// Instance users.

func TestInstanceUsers(t *testing.T) {
	t.Parallel()
	eachEnv(t, func(t *testing.T, e *env) {
		a := tnNewAuditor(e)
		k := e.ownerKey
		ownerID := e.boot.User.ID
		base := "/api/v1/instance/users"
		userShape := []string{"id", "email", "name", "instance_role", "service_account", "managing_org_id", "created_at", "updated_at", "orgs"}
		ids2 := map[string]uuid.UUID{}
		cookies := map[string]string{}
		for _, n := range []string{"alice", "bob"} {
			s, c := e.signup(n + "@example.com")
			ids2[n], cookies[n] = s.User.ID, "cookie:"+c
			a.user(cookies[n], s.User.ID)
		}
		e.must("POST", "/api/v1/organizations/default/members", k, map[string]any{"user_id": ids2["bob"], "role": "viewer"})

		raw := e.must("GET", base, k, nil)
		list := tnData(t, raw)
		for _, it := range list.([]any) {
			tnWantKeys(t, "listed user", it, userShape...)
		}
		if got := tnField(t, list, "email"); !slices.Equal(got, []string{"owner@example.com", "alice@example.com", "bob@example.com"}) {
			t.Fatalf("users %v", got)
		}
		bob := decodeData[wire.User](t, e.must("GET", base+"/"+ids2["bob"].String(), k, nil))
		if bob.Email != "bob@example.com" || bob.InstanceRole != "member" || !slices.Equal(bob.Orgs, []uuid.UUID{e.boot.Organization.ID}) ||
			bob.ServiceAccount || bob.ManagingOrgID != nil {
			t.Fatalf("bob: %+v", bob)
		}
		tnWantDetail(t, "get unknown", e.tnCall("GET", base+"/"+uuid.NewString(), k, nil), 404)
		tnWantValidation(t, "get bad id", e.tnCall("GET", base+"/bob", k, nil), []any{"path", "user_id"}, "uuid_parsing")
		tnWantDetail(t, "member lists users", e.tnCall("GET", base, cookies["bob"], nil), 403)

		ev := tnInstEv("user.role_changed", "user")
		steps := []struct {
			name   string
			cred   string
			user   uuid.UUID
			body   any
			status int
			loc    []any
			typ    string
		}{
			{"invalid role", k, ids2["bob"], map[string]any{"instance_role": "superuser"}, 422, []any{"body", "instance_role"}, "literal_error"},
			{"missing role", k, ids2["bob"], map[string]any{}, 422, []any{"body", "instance_role"}, "missing"},
			{"extra member", k, ids2["bob"], map[string]any{"instance_role": "admin", "email": "x@y.z"}, 422, []any{"body", "email"}, "extra_forbidden"},
			{"unknown user", k, uuid.New(), map[string]any{"instance_role": "admin"}, 404, nil, ""},
			{"member changes roles", cookies["bob"], ids2["bob"], map[string]any{"instance_role": "admin"}, 403, nil, ""},
			{"owner makes alice admin", k, ids2["alice"], map[string]any{"instance_role": "admin"}, 200, nil, ""},
			{"admin grants owner", cookies["alice"], ids2["bob"], map[string]any{"instance_role": "owner"}, 403, nil, ""},
			{"admin promotes herself", cookies["alice"], ids2["alice"], map[string]any{"instance_role": "owner"}, 403, nil, ""},
			{"admin demotes the owner", cookies["alice"], ownerID, map[string]any{"instance_role": "member"}, 403, nil, ""},
			{"admin grants admin", cookies["alice"], ids2["bob"], map[string]any{"instance_role": "admin"}, 200, nil, ""},
			{"last owner demotes himself", k, ownerID, map[string]any{"instance_role": "admin"}, 409, nil, ""},
			{"owner grants owner", k, ids2["alice"], map[string]any{"instance_role": "owner"}, 200, nil, ""},
			{"a second owner lets the first step down", k, ownerID, map[string]any{"instance_role": "admin"}, 200, nil, ""},
			{"alice is the last owner", cookies["alice"], ids2["alice"], map[string]any{"instance_role": "member"}, 409, nil, ""},
			{"former owner (now admin) demotes alice", k, ids2["alice"], map[string]any{"instance_role": "admin"}, 403, nil, ""},
			{"alice demotes bob", cookies["alice"], ids2["bob"], map[string]any{"instance_role": "member"}, 200, nil, ""},
		}
		for _, s := range steps {
			r := a.mut(ev, "PATCH", base+"/"+s.user.String(), s.cred, s.body)
			switch s.status {
			case 200:
				tnWantStatus(t, s.name, r, 200)
				m := tnWantKeys(t, s.name, tnData(t, r.body), userShape...)
				if m["instance_role"] != s.body.(map[string]any)["instance_role"] || m["id"] != s.user.String() {
					t.Fatalf("%s: %v", s.name, m)
				}
				got := decodeData[wire.User](t, e.must("GET", base+"/"+s.user.String(), k, nil))
				if got.InstanceRole != m["instance_role"] {
					t.Fatalf("%s: reads back %s", s.name, got.InstanceRole)
				}
			case 422:
				tnWantValidation(t, s.name, r, s.loc, s.typ)
			default:
				tnWantDetail(t, s.name, r, s.status)
			}
		}
		// Bob's demotion took his instance rights away again.
		tnWantDetail(t, "demoted bob lists users", e.tnCall("GET", base, cookies["bob"], nil), 403)
		// The demoted first owner's key still works with admin rights.
		e.must("GET", base, k, nil)
		a.verify(k)
	})
}

// A caller-supplied X-Request-Id is kept and lands in the audit event.
func TestAuditKeepsCallerRequestID(t *testing.T) {
	t.Parallel()
	eachEnv(t, func(t *testing.T, e *env) {
		const id = "trace-0123456789"
		req, _ := http.NewRequest("POST", e.srv.URL+"/api/v1/organizations/default/workspaces", strings.NewReader(`{"name":"Traced"}`))
		req.Header.Set("Authorization", "Bearer "+e.ownerKey)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Request-Id", id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("X-Request-Id") != id {
			t.Fatalf("status %d, X-Request-Id %q", resp.StatusCode, resp.Header.Get("X-Request-Id"))
		}
		events := decodeData[[]wire.AuditEvent](t, e.must("GET", "/api/v1/organizations/default/activity", e.ownerKey, nil))
		if len(events) == 0 || events[0].Action != "workspace.created" || events[0].RequestID != id {
			t.Fatalf("newest event: %+v", events)
		}
	})
}

// tnRawCall is a request for goroutines other than the test's (no t.Fatal).
func tnRawCall(base, method, path, cred string, body any) (int, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequest(method, base+path, strings.NewReader(string(raw)))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if v, ok := strings.CutPrefix(cred, "cookie:"); ok {
		req.AddCookie(&http.Cookie{Name: api.SessionCookie, Value: v})
		req.Header.Set("X-Requested-With", "XMLHttpRequest")
	} else {
		req.Header.Set("Authorization", "Bearer "+cred)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// Two owners demoting each other at once must not leave the organization
// (or the instance) without an owner: the last-owner check has to hold under
// concurrency, not only in sequence.
func TestLastOwnerUnderConcurrency(t *testing.T) {
	t.Parallel()
	eachEnv(t, func(t *testing.T, e *env) {
		k := e.ownerKey
		alice, aliceCookie := e.signup("alice@example.com")
		aid, oid := alice.User.ID.String(), e.boot.User.ID.String()
		ac := "cookie:" + aliceCookie
		e.must("POST", "/api/v1/organizations/default/members", k, map[string]any{"user_id": aid, "role": "owner"})
		type step struct {
			cred, path string
			body       map[string]any
		}
		race := func(a, b step) [2]int {
			var st [2]int
			var errs [2]error
			var wg sync.WaitGroup
			for i, s := range []step{a, b} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					st[i], errs[i] = tnRawCall(e.srv.URL, "PATCH", s.path, s.cred, s.body)
				}()
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			return st
		}
		members := "/api/v1/organizations/default/members/"
		for round := range 8 {
			e.must("PATCH", members+oid, k, map[string]any{"role": "owner"})
			e.must("PATCH", members+aid, k, map[string]any{"role": "owner"})
			st := race(step{k, members + aid, map[string]any{"role": "admin"}}, step{ac, members + oid, map[string]any{"role": "admin"}})
			owners := 0
			for _, m := range decodeData[[]wire.Member](t, e.must("GET", "/api/v1/organizations/default/members", k, nil)) {
				if m.Role == auth.OrgOwner && m.Status == auth.MembershipActive {
					owners++
				}
			}
			// The loser is refused: 409 (last owner) or, when it was demoted
			// first, 403 (no longer an owner).
			if owners != 1 || st[0]+st[1] != 200+409 && st[0]+st[1] != 200+403 {
				t.Fatalf("organization round %d: statuses %v left %d owners", round, st, owners)
			}
		}
		users := "/api/v1/instance/users/"
		e.must("PATCH", users+aid, k, map[string]any{"instance_role": "owner"})
		for round := range 8 {
			// The winner of the last round promotes the loser back.
			if st, _ := tnRawCall(e.srv.URL, "PATCH", users+aid, k, map[string]any{"instance_role": "owner"}); st != 200 {
				e.must("PATCH", users+oid, ac, map[string]any{"instance_role": "owner"})
			}
			st := race(step{k, users + aid, map[string]any{"instance_role": "admin"}}, step{ac, users + oid, map[string]any{"instance_role": "admin"}})
			owners := 0
			for _, u := range decodeData[[]wire.User](t, e.must("GET", "/api/v1/instance/users", k, nil)) {
				if u.InstanceRole == auth.InstanceOwner {
					owners++
				}
			}
			if owners != 1 {
				t.Fatalf("instance round %d: statuses %v left %d owners", round, st, owners)
			}
		}
	})
}
