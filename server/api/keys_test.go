package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/wire"
)

// Scenario tests for management keys: spec 2.4 (record), 4.3 (create), 4.5
// (instance list), §5 (authentication, scope coverage) and §7 (errors), with
// the revocation and no-escalation rules of DESIGN §4.

const (
	kpInst = "/api/v1/instance"
	kpOrg  = "/api/v1/organizations/default"
	kpWS   = "/api/v1/organizations/default/workspaces/default"
)

// kpKeyMembers are the members of a management key record (spec 2.4), token
// aside: every one must be present, and nothing else.
var kpKeyMembers = []string{
	"created_at", "expires_at", "id", "label", "org_id", "parent_id", "permissions", "prefix",
	"revoked_at", "scope", "status", "updated_at", "user_id", "workspace_id",
}

// --- shared helpers (also used by pagination_test.go) ---

// object decodes a JSON object body, failing the test otherwise.
func kpObject(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil || m == nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, raw)
	}
	return m
}

// kpMembers returns an object's member names, sorted.
func kpMembers(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func kpSameSet(a, b []string) bool {
	a, b = append([]string(nil), a...), append([]string(nil), b...)
	sort.Strings(a)
	sort.Strings(b)
	return strings.Join(a, "\x00") == strings.Join(b, "\x00")
}

// kpData checks a success body is exactly {"data": …} and returns
// the data member.
func kpData(t *testing.T, raw []byte) any {
	t.Helper()
	m := kpObject(t, raw)
	if got := kpMembers(m); !kpSameSet(got, []string{"data"}) {
		t.Fatalf("success body members = %v, want exactly [data]: %s", got, raw)
	}
	if inner, ok := m["data"].(map[string]any); ok {
		if _, nested := inner["data"]; nested {
			t.Fatalf("envelope is nested (data.data): %s", raw)
		}
	}
	return m["data"]
}

// issue is one validation problem as the wire carries it.
type kpIssue struct {
	Loc  string // dotted: body.permissions.1
	Type string
}

// kpIssues checks a 422 body is {"detail":[{loc,msg,type,…},…]} and
// returns its items.
func kpIssues(t *testing.T, raw []byte) []kpIssue {
	t.Helper()
	m := kpObject(t, raw)
	if got := kpMembers(m); !kpSameSet(got, []string{"detail"}) {
		t.Fatalf("422 body members = %v, want exactly [detail]: %s", got, raw)
	}
	items, ok := m["detail"].([]any)
	if !ok || len(items) == 0 {
		t.Fatalf("422 detail is not a non-empty list: %s", raw)
	}
	var out []kpIssue
	for _, it := range items {
		im, ok := it.(map[string]any)
		if !ok {
			t.Fatalf("422 item is not an object: %s", raw)
		}
		for _, k := range kpMembers(im) {
			switch k {
			case "loc", "msg", "type", "input", "ctx":
			default:
				t.Errorf("422 item has unexpected member %q: %s", k, raw)
			}
		}
		loc, ok := im["loc"].([]any)
		msg, ok2 := im["msg"].(string)
		typ, ok3 := im["type"].(string)
		if !ok || !ok2 || !ok3 || len(loc) == 0 || msg == "" || typ == "" {
			t.Fatalf("422 item lacks loc/msg/type: %s", raw)
		}
		parts := make([]string, len(loc))
		for i, p := range loc {
			switch v := p.(type) {
			case string:
				parts[i] = v
			case json.Number:
				if _, err := v.Int64(); err != nil {
					t.Fatalf("loc part %v is not an integer: %s", v, raw)
				}
				parts[i] = v.String()
			default:
				t.Fatalf("loc part %v (%T) is neither string nor integer: %s", p, p, raw)
			}
		}
		out = append(out, kpIssue{Loc: strings.Join(parts, "."), Type: typ})
	}
	return out
}

// kpDetail checks an error body is exactly {"detail": "<string>"}.
func kpDetail(t *testing.T, raw []byte) string {
	t.Helper()
	m := kpObject(t, raw)
	if got := kpMembers(m); !kpSameSet(got, []string{"detail"}) {
		t.Fatalf("error body members = %v, want exactly [detail]: %s", got, raw)
	}
	s, ok := m["detail"].(string)
	if !ok || s == "" {
		t.Fatalf("error detail is not a sentence: %s", raw)
	}
	return s
}

// kpDoHeader sends a request with exactly the given headers (no harness
// credential handling), for malformed Authorization headers.
func (e *env) kpDoHeader(method, path string, hdr map[string]string) (int, []byte, http.Header) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, resp.Header
}

// with returns a copy of e reporting to t, for use inside subtests: the
// harness helpers fail e.t, which must be the running test.
func (e *env) kpWith(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}

// kpList GETs a non-paginated collection and returns its items.
func (e *env) kpList(path, cred string) []map[string]any {
	e.t.Helper()
	raw := e.must("GET", path, cred, nil)
	arr, ok := kpData(e.t, raw).([]any)
	if !ok {
		e.t.Fatalf("GET %s: data is not a list: %s", path, raw)
	}
	out := make([]map[string]any, len(arr))
	for i, it := range arr {
		m, ok := it.(map[string]any)
		if !ok {
			e.t.Fatalf("GET %s: item %d is not an object: %s", path, i, raw)
		}
		out[i] = m
	}
	return out
}

func kpStr(v any) string {
	s, _ := v.(string)
	return s
}

// kpCheckKey checks one management key record against spec 2.4.
func kpCheckKey(t *testing.T, m map[string]any, withToken bool) {
	t.Helper()
	want := append([]string(nil), kpKeyMembers...)
	if withToken {
		want = append(want, "token")
	}
	if got := kpMembers(m); !kpSameSet(got, want) {
		t.Errorf("key record members = %v, want %v", got, want)
	}
	for _, f := range []string{"id", "user_id"} {
		if _, err := uuid.Parse(kpStr(m[f])); err != nil {
			t.Errorf("%s = %v, not a UUID", f, m[f])
		}
	}
	for _, f := range []string{"org_id", "workspace_id", "parent_id"} {
		if m[f] != nil {
			if _, err := uuid.Parse(kpStr(m[f])); err != nil {
				t.Errorf("%s = %v, neither null nor a UUID", f, m[f])
			}
		}
	}
	for _, f := range []string{"created_at", "updated_at", "expires_at", "revoked_at"} {
		if m[f] == nil && (f == "expires_at" || f == "revoked_at") {
			continue
		}
		if _, err := time.Parse(time.RFC3339Nano, kpStr(m[f])); err != nil {
			t.Errorf("%s = %v, not an ISO 8601 date-time", f, m[f])
		}
	}
	if perms, ok := m["permissions"].([]any); !ok || len(perms) == 0 {
		t.Errorf("permissions = %v, want a non-empty list", m["permissions"])
	} else {
		for _, p := range perms {
			if !auth.Known(kpStr(p)) {
				t.Errorf("permissions holds %v, not a permission name", p)
			}
		}
	}
	if _, ok := m["label"].(string); !ok {
		t.Errorf("label = %v, want a string", m["label"])
	}
	sc, ok := m["scope"].(map[string]any)
	if !ok {
		t.Fatalf("scope = %v, want an object", m["scope"])
	}
	if got := kpMembers(sc); !kpSameSet(got, []string{"level", "org_id", "workspace_id"}) {
		t.Errorf("scope members = %v, want [level org_id workspace_id]", got)
	}
	if sc["org_id"] != m["org_id"] || sc["workspace_id"] != m["workspace_id"] {
		t.Errorf("scope %v disagrees with org_id %v / workspace_id %v", sc, m["org_id"], m["workspace_id"])
	}
	switch kpStr(sc["level"]) {
	case "instance":
		if m["org_id"] != nil || m["workspace_id"] != nil {
			t.Errorf("instance key carries org_id %v / workspace_id %v", m["org_id"], m["workspace_id"])
		}
	case "organization":
		if m["org_id"] == nil || m["workspace_id"] != nil {
			t.Errorf("organization key: org_id %v / workspace_id %v", m["org_id"], m["workspace_id"])
		}
	case "workspace":
		if m["org_id"] == nil || m["workspace_id"] == nil {
			t.Errorf("workspace key: org_id %v / workspace_id %v", m["org_id"], m["workspace_id"])
		}
	default:
		t.Errorf("scope.level = %v", sc["level"])
	}
	prefix := kpStr(m["prefix"])
	if !strings.HasPrefix(prefix, auth.ManagementKeyPrefix) || len(prefix) <= len(auth.ManagementKeyPrefix) {
		t.Errorf("prefix = %q, want sk-cp- and a few characters", prefix)
	}
	if withToken {
		token := kpStr(m["token"])
		if !strings.HasPrefix(token, auth.ManagementKeyPrefix) || !strings.HasPrefix(token, prefix) || len(token) < len(prefix)+32 {
			t.Errorf("token %q: want sk-cp-…, starting with prefix %q, with ≥32 random characters", token, prefix)
		}
	}
}

func kpTime(t *testing.T, v any) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, kpStr(v))
	if err != nil {
		t.Fatalf("%v is not a date-time", v)
	}
	return at
}

func kpFindID(items []map[string]any, id string) map[string]any {
	for _, it := range items {
		if it["id"] == id {
			return it
		}
	}
	return nil
}

// kpSetExpiry writes a key's expires_at directly, to test expiry without
// waiting.
func (e *env) kpSetExpiry(id uuid.UUID, at time.Time) {
	e.t.Helper()
	_, err := e.st.DB().NewUpdate().Table("management_keys").Set("expires_at = ?", at.UTC()).Where("id = ?", id).Exec(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
}

// --- tests ---

// TestManagementKeyCreate issues keys at every scope level and checks the
// record shape, the one-time token and that the token works.
func TestManagementKeyCreate(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		orgID, wsID := e.boot.Organization.ID.String(), e.boot.Workspace.ID.String()
		ownerKeyID := e.boot.ManagementKey.ID.String()
		ownerID := e.boot.User.ID.String()
		future := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)

		cases := []struct {
			name, prefix    string
			level           string
			wantOrg, wantWS string
			expires         *time.Time
			probe           string // a GET the key may call (its perms include management-keys.read)
			probeOutOfScope string // a GET outside its scope: 403
		}{
			{name: "instance", prefix: kpInst, level: "instance", probe: kpInst + "/management-keys"},
			{name: "organization by slug", prefix: kpOrg, level: "organization", wantOrg: orgID,
				probe: kpOrg + "/management-keys", probeOutOfScope: kpInst + "/management-keys"},
			{name: "organization by uuid", prefix: "/api/v1/organizations/" + orgID, level: "organization", wantOrg: orgID,
				expires: &future, probe: kpOrg + "/management-keys", probeOutOfScope: kpInst + "/management-keys"},
			{name: "workspace by slug", prefix: kpWS, level: "workspace", wantOrg: orgID, wantWS: wsID,
				probe: kpWS + "/management-keys", probeOutOfScope: kpOrg + "/management-keys"},
			{name: "workspace by uuid", prefix: "/api/v1/organizations/" + orgID + "/workspaces/" + wsID, level: "workspace",
				wantOrg: orgID, wantWS: wsID, expires: &future,
				probe: kpWS + "/management-keys", probeOutOfScope: kpOrg + "/management-keys"},
		}
		perms := []string{"management-keys.read", "audit.read", "workspaces.read"}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				e := e.kpWith(t)
				body := map[string]any{"permissions": perms, "label": "ci-" + c.level}
				if c.expires != nil {
					body["expires_at"] = c.expires.Format(time.RFC3339)
				}
				status, raw := e.do("POST", c.prefix+"/management-keys", e.ownerKey, body)
				if status != http.StatusOK {
					t.Fatalf("create: %d %s", status, raw)
				}
				rec, ok := kpData(t, raw).(map[string]any)
				if !ok {
					t.Fatalf("data is not an object: %s", raw)
				}
				kpCheckKey(t, rec, true)
				sc := rec["scope"].(map[string]any)
				if sc["level"] != c.level {
					t.Errorf("scope.level = %v, want %s", sc["level"], c.level)
				}
				if got := kpStr(rec["org_id"]); got != c.wantOrg {
					t.Errorf("org_id = %q, want %q", got, c.wantOrg)
				}
				if got := kpStr(rec["workspace_id"]); got != c.wantWS {
					t.Errorf("workspace_id = %q, want %q", got, c.wantWS)
				}
				if rec["user_id"] != ownerID {
					t.Errorf("user_id = %v, want the issuing principal %s", rec["user_id"], ownerID)
				}
				if rec["parent_id"] != ownerKeyID {
					t.Errorf("parent_id = %v, want the issuing key %s", rec["parent_id"], ownerKeyID)
				}
				if rec["status"] != "active" || rec["revoked_at"] != nil {
					t.Errorf("status %v revoked_at %v, want active and null", rec["status"], rec["revoked_at"])
				}
				if rec["label"] != "ci-"+c.level {
					t.Errorf("label = %v", rec["label"])
				}
				var gotPerms []string
				for _, p := range rec["permissions"].([]any) {
					gotPerms = append(gotPerms, kpStr(p))
				}
				if !kpSameSet(gotPerms, perms) {
					t.Errorf("permissions = %v, want %v", gotPerms, perms)
				}
				if c.expires == nil {
					if rec["expires_at"] != nil {
						t.Errorf("expires_at = %v, want null", rec["expires_at"])
					}
				} else if at, err := time.Parse(time.RFC3339Nano, kpStr(rec["expires_at"])); err != nil || !at.Equal(*c.expires) {
					t.Errorf("expires_at = %v, want %s", rec["expires_at"], c.expires.Format(time.RFC3339))
				}
				id, token := kpStr(rec["id"]), kpStr(rec["token"])

				// Later reads carry metadata only, never the token, and
				// agree with the creating response.
				got, ok := kpData(t, e.must("GET", c.prefix+"/management-keys/"+id, e.ownerKey, nil)).(map[string]any)
				if !ok {
					t.Fatal("GET key: data is not an object")
				}
				kpCheckKey(t, got, false)
				for _, f := range kpKeyMembers {
					if f == "scope" || f == "permissions" {
						continue
					}
					if fmt.Sprint(got[f]) != fmt.Sprint(rec[f]) {
						// Timestamps may be rendered differently; compare instants.
						a, errA := time.Parse(time.RFC3339Nano, kpStr(got[f]))
						b, errB := time.Parse(time.RFC3339Nano, kpStr(rec[f]))
						if errA != nil || errB != nil || !a.Equal(b) {
							t.Errorf("GET %s = %v, create said %v", f, got[f], rec[f])
						}
					}
				}
				for _, where := range []string{c.prefix, kpInst} {
					items := e.kpList(where+"/management-keys", e.ownerKey)
					it := kpFindID(items, id)
					if it == nil {
						t.Errorf("GET %s/management-keys does not list the new key", where)
						continue
					}
					for _, item := range items {
						kpCheckKey(t, item, false)
					}
				}
				if strings.Contains(string(e.must("GET", kpInst+"/management-keys", e.ownerKey, nil)), token) {
					t.Error("the token appears in a later list")
				}

				// The token is a working credential, within its scope and
				// ceiling only.
				if st, b := e.do("GET", c.probe, token, nil); st != http.StatusOK {
					t.Errorf("new key on %s: %d %s", c.probe, st, b)
				}
				if c.probeOutOfScope != "" {
					if st, b := e.do("GET", c.probeOutOfScope, token, nil); st != http.StatusForbidden {
						t.Errorf("new key outside its scope %s: %d %s", c.probeOutOfScope, st, b)
					}
				}
				if st, b := e.do("POST", c.prefix+"/management-keys", token, map[string]any{"permissions": perms, "label": "x"}); st != http.StatusForbidden {
					t.Errorf("new key lacking management-keys.issue could issue: %d %s", st, b)
				}
			})
		}
	})
}

// TestManagementKeyValidation covers the body rules of spec 4.3: every
// problem is reported at once, at its location, with pydantic's type words.
func TestManagementKeyValidation(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		ok := []string{"organizations.read"}
		past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
		future := time.Now().Add(time.Hour).UTC()
		cases := []struct {
			name   string
			body   any
			want   []kpIssue // nil: 200
			status int
		}{
			{"label 0 chars", map[string]any{"permissions": ok, "label": ""}, []kpIssue{{"body.label", "string_too_short"}}, 0},
			{"label 1 char", map[string]any{"permissions": ok, "label": "a"}, nil, 0},
			{"label 80 chars", map[string]any{"permissions": ok, "label": strings.Repeat("a", 80)}, nil, 0},
			{"label 80 multibyte chars", map[string]any{"permissions": ok, "label": strings.Repeat("é", 80)}, nil, 0},
			{"label 81 chars", map[string]any{"permissions": ok, "label": strings.Repeat("a", 81)}, []kpIssue{{"body.label", "string_too_long"}}, 0},
			{"label not a string", map[string]any{"permissions": ok, "label": 7}, []kpIssue{{"body.label", "string_type"}}, 0},
			{"permissions empty", map[string]any{"permissions": []string{}, "label": "x"}, []kpIssue{{"body.permissions", "too_short"}}, 0},
			{"permissions not a list", map[string]any{"permissions": "organizations.read", "label": "x"}, []kpIssue{{"body.permissions", "list_type"}}, 0},
			{"unknown permission", map[string]any{"permissions": []string{"organizations.read", "root.everything"}, "label": "x"},
				[]kpIssue{{"body.permissions.1", "literal_error"}}, 0},
			{"two unknown permissions", map[string]any{"permissions": []any{"nope", "organizations.read", 3}, "label": "x"},
				[]kpIssue{{"body.permissions.0", "literal_error"}, {"body.permissions.2", "literal_error"}}, 0},
			{"missing label", map[string]any{"permissions": ok}, []kpIssue{{"body.label", "missing"}}, 0},
			{"missing permissions", map[string]any{"label": "x"}, []kpIssue{{"body.permissions", "missing"}}, 0},
			{"empty object", map[string]any{}, []kpIssue{{"body.label", "missing"}, {"body.permissions", "missing"}}, 0},
			{"unknown member", map[string]any{"permissions": ok, "label": "x", "scope": "instance"}, []kpIssue{{"body.scope", "extra_forbidden"}}, 0},
			{"token may not be chosen", map[string]any{"permissions": ok, "label": "x", "token": "sk-cp-mine"}, []kpIssue{{"body.token", "extra_forbidden"}}, 0},
			{"body is a list", []string{"x"}, []kpIssue{{"body", "model_type"}}, 0},
			{"empty body", "", []kpIssue{{"body", "missing"}}, 0},
			{"all problems at once", map[string]any{"permissions": []string{"bogus"}, "label": strings.Repeat("x", 81), "expires_at": "soon", "extra": 1},
				[]kpIssue{{"body.permissions.0", "literal_error"}, {"body.label", "string_too_long"}, {"body.expires_at", "datetime_parsing"}, {"body.extra", "extra_forbidden"}}, 0},
			{"expires_at without timezone", map[string]any{"permissions": ok, "label": "x", "expires_at": "2999-01-01T00:00:00"},
				[]kpIssue{{"body.expires_at", "timezone_aware"}}, 0},
			{"expires_at in the past", map[string]any{"permissions": ok, "label": "x", "expires_at": past}, []kpIssue{{"body.expires_at", "value_error"}}, 0},
			{"expires_at not a date", map[string]any{"permissions": ok, "label": "x", "expires_at": "tomorrow"}, []kpIssue{{"body.expires_at", "datetime_parsing"}}, 0},
			{"expires_at a number", map[string]any{"permissions": ok, "label": "x", "expires_at": 1893456000}, []kpIssue{{"body.expires_at", "datetime_type"}}, 0},
			{"expires_at null (optional)", map[string]any{"permissions": ok, "label": "x", "expires_at": nil}, nil, 0},
			{"expires_at with an offset", map[string]any{"permissions": ok, "label": "x", "expires_at": future.In(time.FixedZone("", 2*3600)).Format(time.RFC3339)}, nil, 0},
		}
		before := len(e.kpList(kpOrg+"/management-keys", e.ownerKey))
		created := 0
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				e := e.kpWith(t)
				status, raw := e.do("POST", kpOrg+"/management-keys", e.ownerKey, c.body)
				if c.want == nil {
					if status != http.StatusOK {
						t.Fatalf("%d %s, want 200", status, raw)
					}
					created++
					rec := kpData(t, raw).(map[string]any)
					kpCheckKey(t, rec, true)
					if lbl, ok := c.body.(map[string]any)["label"].(string); ok && rec["label"] != lbl {
						t.Errorf("label = %v, want %q", rec["label"], lbl)
					}
					return
				}
				if status != http.StatusUnprocessableEntity {
					t.Fatalf("%d %s, want 422", status, raw)
				}
				got := kpIssues(t, raw)
				if fmt.Sprint(kpSortIssues(got)) != fmt.Sprint(kpSortIssues(c.want)) {
					t.Errorf("issues = %v, want %v\n%s", got, c.want, raw)
				}
			})
		}
		// Malformed JSON is json_invalid, located in the body.
		t.Run("malformed JSON", func(t *testing.T) {
			e := e.kpWith(t)
			for _, body := range []string{`{"label": "x", "permissions": [`, `{"label": "x"} trailing`, `{label: x}`} {
				status, raw := e.do("POST", kpOrg+"/management-keys", e.ownerKey, body)
				if status != http.StatusUnprocessableEntity {
					t.Fatalf("%q: %d %s", body, status, raw)
				}
				got := kpIssues(t, raw)
				if len(got) != 1 || got[0].Type != "json_invalid" || !strings.HasPrefix(got[0].Loc, "body") {
					t.Errorf("%q: issues = %v, want one json_invalid at body", body, got)
				}
			}
		})
		// A refused request creates nothing.
		if after := len(e.kpList(kpOrg+"/management-keys", e.ownerKey)); after != before+created {
			t.Errorf("key count %d → %d, but only %d requests succeeded", before, after, created)
		}
	})
}

func kpSortIssues(is []kpIssue) []kpIssue {
	out := append([]kpIssue(nil), is...)
	sort.Slice(out, func(i, j int) bool { return out[i].Loc+out[i].Type < out[j].Loc+out[j].Type })
	return out
}

// TestManagementKeyNoEscalation: a key never issues more than it holds —
// permissions, scope, or lifetime — and issued keys name their parent.
func TestManagementKeyNoEscalation(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		e.must("POST", kpOrg+"/workspaces", e.ownerKey, map[string]any{"name": "Sibling", "slug": "sibling"})
		limitedOrg := e.key(kpOrg, e.ownerKey, []string{"management-keys.issue", "workspaces.read"}, nil)
		noIssue := e.key(kpOrg, e.ownerKey, []string{"management-keys.read", "workspaces.read"}, nil)
		wsKey := e.key(kpWS, e.ownerKey, auth.Names(), nil)
		orgKey := e.key(kpOrg, e.ownerKey, auth.Names(), nil)
		limitedInst := e.key(kpInst, e.ownerKey, []string{"management-keys.issue", "organizations.read"}, nil)
		deadline := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
		mortal := e.key(kpOrg, e.ownerKey, auth.Names(), map[string]any{"expires_at": deadline.Format(time.RFC3339)})

		// A signed-in organization member: the role bounds a session too.
		member, cookie := e.signup("member@example.com")
		e.must("POST", kpOrg+"/members", e.ownerKey, map[string]any{"user_id": member.User.ID, "role": "member"})

		at := func(d time.Duration) string { return deadline.Add(d).Format(time.RFC3339) }
		cases := []struct {
			name, prefix, cred string
			perms              []string
			expires            string
			status             int
			parent             string // want parent_id (200 only); "" = null
		}{
			{"permission the key lacks", kpOrg, limitedOrg.Token, []string{"audit.read"}, "", 403, ""},
			{"held plus lacking permission", kpOrg, limitedOrg.Token, []string{"workspaces.read", "members.manage"}, "", 403, ""},
			{"permission the key holds", kpOrg, limitedOrg.Token, []string{"workspaces.read"}, "", 200, limitedOrg.ID.String()},
			{"the issuing permission itself", kpOrg, limitedOrg.Token, []string{"management-keys.issue"}, "", 200, limitedOrg.ID.String()},
			{"narrower scope, held permission", kpWS, limitedOrg.Token, []string{"workspaces.read"}, "", 200, limitedOrg.ID.String()},
			{"key without management-keys.issue", kpOrg, noIssue.Token, []string{"workspaces.read"}, "", 403, ""},
			{"workspace key at organization scope", kpOrg, wsKey.Token, []string{"workspaces.read"}, "", 403, ""},
			{"workspace key at a sibling workspace", kpOrg + "/workspaces/sibling", wsKey.Token, []string{"workspaces.read"}, "", 403, ""},
			{"workspace key at instance scope", kpInst, wsKey.Token, []string{"workspaces.read"}, "", 403, ""},
			{"workspace key at its workspace", kpWS, wsKey.Token, []string{"workspaces.read"}, "", 200, wsKey.ID.String()},
			{"organization key at instance scope", kpInst, orgKey.Token, []string{"organizations.read"}, "", 403, ""},
			{"organization key at its organization", kpOrg, orgKey.Token, []string{"organizations.read"}, "", 200, orgKey.ID.String()},
			{"organization key into its workspace", kpWS, orgKey.Token, []string{"workspaces.read"}, "", 200, orgKey.ID.String()},
			{"instance key into an organization, held", kpOrg, limitedInst.Token, []string{"organizations.read"}, "", 200, limitedInst.ID.String()},
			{"instance key into an organization, lacking", kpOrg, limitedInst.Token, []string{"audit.read"}, "", 403, ""},
			{"expiring key, key without expiry", kpOrg, mortal.Token, []string{"organizations.read"}, "", 403, ""},
			{"expiring key, later expiry", kpOrg, mortal.Token, []string{"organizations.read"}, at(time.Minute), 403, ""},
			{"expiring key, much later expiry", kpOrg, mortal.Token, []string{"organizations.read"}, at(24 * time.Hour), 403, ""},
			{"expiring key, earlier expiry", kpOrg, mortal.Token, []string{"organizations.read"}, at(-time.Minute), 200, mortal.ID.String()},
			{"expiring key, same expiry", kpOrg, mortal.Token, []string{"organizations.read"}, at(0), 200, mortal.ID.String()},
			{"member session, role lacks permission", kpOrg, "cookie:" + cookie, []string{"audit.read"}, "", 403, ""},
			{"member session, role holds permission", kpOrg, "cookie:" + cookie, []string{"organizations.read"}, "", 200, ""},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				e := e.kpWith(t)
				body := map[string]any{"permissions": c.perms, "label": "child"}
				if c.expires != "" {
					body["expires_at"] = c.expires
				}
				status, raw := e.do("POST", c.prefix+"/management-keys", c.cred, body)
				if status != c.status {
					t.Fatalf("%d %s, want %d", status, raw, c.status)
				}
				if status != http.StatusOK {
					kpDetail(t, raw)
					return
				}
				rec := kpData(t, raw).(map[string]any)
				kpCheckKey(t, rec, true)
				if got := kpStr(rec["parent_id"]); got != c.parent {
					t.Errorf("parent_id = %q, want %q", got, c.parent)
				}
				if c.expires != "" {
					want, _ := time.Parse(time.RFC3339, c.expires)
					if got, err := time.Parse(time.RFC3339Nano, kpStr(rec["expires_at"])); err != nil || !got.Equal(want) {
						t.Errorf("expires_at = %v, want %s", rec["expires_at"], c.expires)
					}
				}
				if strings.HasPrefix(c.cred, "cookie:") && rec["user_id"] != member.User.ID.String() {
					t.Errorf("user_id = %v, want the signed-in member %s", rec["user_id"], member.User.ID)
				}
			})
		}
	})
}

// TestManagementKeyScopeCoverage: a scoped key reaches its scope and what
// lies inside it, nothing beside or above it, whether the path names
// things by slug or by UUID.
func TestManagementKeyScopeCoverage(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		sib := decodeData[wire.Workspace](t, e.must("POST", kpOrg+"/workspaces", e.ownerKey, map[string]any{"name": "Sibling", "slug": "sibling"}))
		other := decodeData[wire.Organization](t, e.must("POST", kpInst+"/organizations", e.ownerKey, map[string]any{"name": "Other", "slug": "other"}))
		otherWS := decodeData[wire.Workspace](t, e.must("POST", "/api/v1/organizations/other/workspaces", e.ownerKey, map[string]any{"name": "Default", "slug": "default"}))
		orgID, wsID := e.boot.Organization.ID.String(), e.boot.Workspace.ID.String()
		wsKey := e.key(kpWS, e.ownerKey, auth.Names(), nil).Token
		orgKey := e.key(kpOrg, e.ownerKey, auth.Names(), nil).Token

		cases := []struct {
			name, cred, path string
			status           int
		}{
			{"ws key, own workspace by slug", wsKey, kpWS, 200},
			{"ws key, own workspace by uuid", wsKey, "/api/v1/organizations/" + orgID + "/workspaces/" + wsID, 200},
			{"ws key, own workspace, org by uuid", wsKey, "/api/v1/organizations/" + orgID + "/workspaces/default", 200},
			{"ws key, own workspace's members", wsKey, kpWS + "/members", 200},
			{"ws key, sibling by slug", wsKey, kpOrg + "/workspaces/sibling", 403},
			{"ws key, sibling by uuid", wsKey, kpOrg + "/workspaces/" + sib.ID.String(), 403},
			{"ws key, sibling's keys", wsKey, kpOrg + "/workspaces/sibling/management-keys", 403},
			{"ws key, same-slug workspace of another org", wsKey, "/api/v1/organizations/other/workspaces/default", 403},
			{"ws key, same-slug workspace of another org by uuid", wsKey, "/api/v1/organizations/" + other.ID.String() + "/workspaces/" + otherWS.ID.String(), 403},
			{"ws key, its organization", wsKey, kpOrg, 403},
			{"ws key, organization keys", wsKey, kpOrg + "/management-keys", 403},
			{"ws key, instance", wsKey, kpInst + "/management-keys", 403},
			{"org key, own org by slug", orgKey, kpOrg, 200},
			{"org key, own org by uuid", orgKey, "/api/v1/organizations/" + orgID, 200},
			{"org key, a workspace of its org", orgKey, kpOrg + "/workspaces/sibling", 200},
			{"org key, another org by slug", orgKey, "/api/v1/organizations/other", 403},
			{"org key, another org by uuid", orgKey, "/api/v1/organizations/" + other.ID.String(), 403},
			{"org key, another org's workspace", orgKey, "/api/v1/organizations/other/workspaces/default", 403},
			{"org key, instance organizations", orgKey, kpInst + "/organizations", 403},
			{"org key, instance keys", orgKey, kpInst + "/management-keys", 403},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				e := e.kpWith(t)
				status, raw := e.do("GET", c.path, c.cred, nil)
				if status != c.status {
					t.Fatalf("GET %s: %d %s, want %d", c.path, status, raw, c.status)
				}
				if status == 200 {
					kpData(t, raw)
				} else {
					kpDetail(t, raw)
				}
			})
		}

		// Spec 4.8: listing the organization's workspaces shows what the
		// caller can read — for a workspace key, its workspace alone.
		for _, c := range []struct {
			name, cred string
			want       []string
		}{
			{"workspace key", wsKey, []string{wsID}},
			{"organization key", orgKey, []string{wsID, sib.ID.String()}},
			{"instance key", e.ownerKey, []string{wsID, sib.ID.String()}},
		} {
			for _, ref := range []string{"default", orgID} {
				var got []string
				for _, w := range e.kpList("/api/v1/organizations/"+ref+"/workspaces", c.cred) {
					got = append(got, kpStr(w["id"]))
					if w["org_id"] != orgID {
						t.Errorf("%s lists a workspace of org %v", c.name, w["org_id"])
					}
				}
				if !kpSameSet(got, c.want) {
					t.Errorf("%s listing /organizations/%s/workspaces: %v, want %v", c.name, ref, got, c.want)
				}
			}
		}
	})
}

// TestManagementKeyRevocationAndBadCredentials: revocation is idempotent
// and final; revoked, expired, unknown, inference-shaped and malformed
// credentials all get 401.
func TestManagementKeyRevocationAndBadCredentials(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		victim := e.key(kpOrg, e.ownerKey, auth.Names(), nil)
		e.must("GET", kpOrg, victim.Token, nil)

		revokePath := kpOrg + "/management-keys/" + victim.ID.String() + "/revoke"
		first, ok := kpData(t, e.must("POST", revokePath, e.ownerKey, nil)).(map[string]any)
		if !ok {
			t.Fatal("revoke: data is not an object")
		}
		kpCheckKey(t, first, false)
		if first["status"] != "revoked" || first["revoked_at"] == nil {
			t.Fatalf("after revoke: status %v revoked_at %v", first["status"], first["revoked_at"])
		}
		revokedAt, err := time.Parse(time.RFC3339Nano, kpStr(first["revoked_at"]))
		if err != nil || time.Since(revokedAt) > time.Minute || time.Until(revokedAt) > time.Minute {
			t.Errorf("revoked_at = %v, want about now", first["revoked_at"])
		}
		// Idempotent: the second revoke keeps the first time.
		second := kpData(t, e.must("POST", revokePath, e.ownerKey, nil)).(map[string]any)
		if again, err := time.Parse(time.RFC3339Nano, kpStr(second["revoked_at"])); err != nil || !again.Equal(revokedAt) || second["status"] != "revoked" {
			t.Errorf("second revoke: status %v revoked_at %v, want revoked at %v", second["status"], second["revoked_at"], first["revoked_at"])
		}
		if a, errA := time.Parse(time.RFC3339Nano, kpStr(first["updated_at"])); errA != nil || kpStr(second["updated_at"]) == "" || !a.Equal(kpTime(t, second["updated_at"])) {
			t.Errorf("second revoke changed updated_at: %v → %v", first["updated_at"], second["updated_at"])
		}
		// A key may revoke itself; it is dead on the next request.
		self := e.key(kpOrg, e.ownerKey, []string{"management-keys.revoke", "organizations.read"}, nil)
		if got := kpData(t, e.must("POST", kpOrg+"/management-keys/"+self.ID.String()+"/revoke", self.Token, nil)).(map[string]any); got["status"] != "revoked" {
			t.Errorf("self-revoke: status %v", got["status"])
		}
		if st, raw := e.do("GET", kpOrg, self.Token, nil); st != http.StatusUnauthorized {
			t.Errorf("self-revoked key still works: %d %s", st, raw)
		}
		// It reads back as revoked, at every scope that shows it.
		for _, p := range []string{kpOrg + "/management-keys/" + victim.ID.String(), kpInst + "/management-keys/" + victim.ID.String()} {
			got := kpData(t, e.must("GET", p, e.ownerKey, nil)).(map[string]any)
			if got["status"] != "revoked" {
				t.Errorf("GET %s: status %v", p, got["status"])
			}
		}
		if it := kpFindID(e.kpList(kpOrg+"/management-keys", e.ownerKey), victim.ID.String()); it == nil || it["status"] != "revoked" {
			t.Errorf("list shows the revoked key as %v", it)
		}

		// Expired: moved into the past directly rather than waited for.
		expired := e.key(kpOrg, e.ownerKey, auth.Names(), map[string]any{"expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
		e.must("GET", kpOrg, expired.Token, nil)
		e.kpSetExpiry(expired.ID, time.Now().Add(-time.Second))
		if got := kpData(t, e.must("GET", kpOrg+"/management-keys/"+expired.ID.String(), e.ownerKey, nil)).(map[string]any); got["status"] != "expired" {
			t.Errorf("expired key reads back with status %v", got["status"])
		}

		// A key revoked through a scope that does not hold it stays valid.
		e.must("POST", kpInst+"/organizations", e.ownerKey, map[string]any{"name": "Other", "slug": "other"})
		otherKey := e.key("/api/v1/organizations/other", e.ownerKey, auth.Names(), nil)
		if st, raw := e.do("POST", kpOrg+"/management-keys/"+otherKey.ID.String()+"/revoke", e.ownerKey, nil); st != http.StatusNotFound {
			t.Errorf("revoking another org's key through this org: %d %s", st, raw)
		}
		if st, raw := e.do("POST", kpWS+"/management-keys/"+expired.ID.String()+"/revoke", e.ownerKey, nil); st != http.StatusNotFound {
			t.Errorf("revoking an org key through a workspace: %d %s", st, raw)
		}
		e.must("GET", "/api/v1/organizations/other", otherKey.Token, nil)
		if st, raw := e.do("POST", kpOrg+"/management-keys/"+uuid.NewString()+"/revoke", e.ownerKey, nil); st != http.StatusNotFound {
			t.Errorf("revoking an unknown key: %d %s", st, raw)
		}
		if st, raw := e.do("POST", kpOrg+"/management-keys/not-a-uuid/revoke", e.ownerKey, nil); st != http.StatusUnprocessableEntity {
			t.Errorf("revoking key id not-a-uuid: %d %s", st, raw)
		} else if got := kpIssues(t, raw); len(got) != 1 || got[0] != (kpIssue{"path.key_id", "uuid_parsing"}) {
			t.Errorf("revoking key id not-a-uuid: %v", got)
		}

		inference, _, _ := auth.NewToken(auth.InferenceKeyPrefix)
		unknown, _, _ := auth.NewToken(auth.ManagementKeyPrefix)
		creds := []struct{ name, token string }{
			{"revoked key", victim.Token},
			{"expired key", expired.Token},
			{"inference key", inference},
			{"unknown sk-cp- key", unknown},
			{"bare sk-cp- prefix", "sk-cp-"},
			{"no prefix", "definitely-not-a-key"},
		}
		endpoints := []struct{ method, path string }{
			{"GET", kpOrg},
			{"GET", kpOrg + "/management-keys"},
			{"POST", kpOrg + "/management-keys"},
			{"GET", kpWS},
			{"GET", kpInst + "/management-keys"},
			{"GET", kpInst + "/organizations"},
			{"GET", "/api/v1/organizations"},
			{"GET", "/api/v1/auth/me"},
		}
		for _, c := range creds {
			for _, ep := range endpoints {
				body := any(nil)
				if ep.method == "POST" {
					body = map[string]any{"permissions": []string{"organizations.read"}, "label": "x"}
				}
				status, raw := e.do(ep.method, ep.path, c.token, body)
				if status != http.StatusUnauthorized {
					t.Errorf("%s on %s %s: %d %s, want 401", c.name, ep.method, ep.path, status, raw)
					continue
				}
				kpDetail(t, raw)
			}
		}

		// Malformed Authorization headers.
		good := e.key(kpOrg, e.ownerKey, auth.Names(), nil).Token
		for _, h := range []string{
			"Basic " + good,
			"Token " + good,
			good,
			"Bearer",
			"Bearer ",
			"Bearer\t" + good,
			"Bearer " + good + "x",
			"Bearer " + strings.ToUpper(good),
		} {
			status, raw, hdr := e.kpDoHeader("GET", kpOrg, map[string]string{"Authorization": h})
			if status != http.StatusUnauthorized {
				t.Errorf("Authorization %q: %d %s, want 401", h, status, raw)
				continue
			}
			kpDetail(t, raw)
			if !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("Authorization %q: WWW-Authenticate = %q", h, hdr.Get("WWW-Authenticate"))
			}
		}
		if status, raw, _ := e.kpDoHeader("GET", kpOrg, map[string]string{"Authorization": "bearer " + good}); status != http.StatusOK {
			t.Errorf("lower-case scheme: %d %s", status, raw)
		}
	})
}

// TestInstanceManagementKeyList: spec 4.5 lists keys of every scope, and
// the user_id filter narrows to one principal; organization scopes never
// show another organization's keys.
func TestInstanceManagementKeyList(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		e.must("POST", kpInst+"/organizations", e.ownerKey, map[string]any{"name": "Other", "slug": "other"})
		inst := e.key(kpInst, e.ownerKey, []string{"organizations.read"}, nil)
		org := e.key(kpOrg, e.ownerKey, []string{"organizations.read"}, nil)
		ws := e.key(kpWS, e.ownerKey, []string{"workspaces.read"}, nil)
		otherOrg := e.key("/api/v1/organizations/other", e.ownerKey, []string{"organizations.read"}, nil)
		bundle := decodeData[wire.ServiceAccountBundle](t, e.must("POST", kpOrg+"/service-accounts", e.ownerKey, map[string]any{
			"name": "deployer", "management_key": map[string]any{"permissions": []string{"workspaces.read"}, "label": "ci"},
		}))
		saID := bundle.ServiceAccount.ID.String()
		saKey := bundle.ManagementKey.ID.String()
		ownerID := e.boot.User.ID.String()

		all := e.kpList(kpInst+"/management-keys", e.ownerKey)
		levels := map[string]bool{}
		for _, k := range all {
			kpCheckKey(t, k, false)
			levels[kpStr(k["scope"].(map[string]any)["level"])] = true
		}
		for _, id := range []string{e.boot.ManagementKey.ID.String(), inst.ID.String(), org.ID.String(), ws.ID.String(), otherOrg.ID.String(), saKey} {
			if kpFindID(all, id) == nil {
				t.Errorf("instance list lacks key %s", id)
			}
		}
		if len(all) != 6 || !levels["instance"] || !levels["organization"] || !levels["workspace"] {
			t.Errorf("instance list: %d keys at levels %v, want 6 across all three levels", len(all), levels)
		}

		filter := []struct {
			name, query string
			status      int
			wantIDs     []string
			wantIssue   kpIssue
		}{
			{"service account", "?user_id=" + saID, 200, []string{saKey}, kpIssue{}},
			{"owner", "?user_id=" + ownerID, 200,
				[]string{e.boot.ManagementKey.ID.String(), inst.ID.String(), org.ID.String(), ws.ID.String(), otherOrg.ID.String()}, kpIssue{}},
			{"nobody", "?user_id=" + uuid.NewString(), 200, []string{}, kpIssue{}},
			{"not a uuid", "?user_id=me", 422, nil, kpIssue{"query.user_id", "uuid_parsing"}},
			{"empty", "?user_id=", 422, nil, kpIssue{"query.user_id", "uuid_parsing"}},
			{"uuid without dashes", "?user_id=" + strings.ReplaceAll(saID, "-", ""), 422, nil, kpIssue{"query.user_id", "uuid_parsing"}},
		}
		for _, c := range filter {
			t.Run("user_id "+c.name, func(t *testing.T) {
				e := e.kpWith(t)
				status, raw := e.do("GET", kpInst+"/management-keys"+c.query, e.ownerKey, nil)
				if status != c.status {
					t.Fatalf("%d %s, want %d", status, raw, c.status)
				}
				if status != 200 {
					if got := kpIssues(t, raw); len(got) != 1 || got[0] != c.wantIssue {
						t.Errorf("issues %v, want %v", got, c.wantIssue)
					}
					return
				}
				arr, ok := kpData(t, raw).([]any)
				if !ok {
					t.Fatalf("data is not a list (an empty result must be [], not null): %s", raw)
				}
				var ids []string
				for _, it := range arr {
					ids = append(ids, kpStr(it.(map[string]any)["id"]))
					if u := it.(map[string]any)["user_id"]; c.name != "nobody" && u != strings.TrimPrefix(c.query, "?user_id=") {
						t.Errorf("filtered list holds a key of %v", u)
					}
				}
				if !kpSameSet(ids, c.wantIDs) {
					t.Errorf("ids %v, want %v", ids, c.wantIDs)
				}
			})
		}

		// Organization and workspace scopes show only their own keys, and
		// a key outside the scope is not found, whether it exists or not.
		var orgIDs []string
		for _, k := range e.kpList(kpOrg+"/management-keys", e.ownerKey) {
			orgIDs = append(orgIDs, kpStr(k["id"]))
		}
		if !kpSameSet(orgIDs, []string{org.ID.String(), ws.ID.String(), saKey}) {
			t.Errorf("organization list = %v, want its org and workspace keys only", orgIDs)
		}
		var wsIDs []string
		for _, k := range e.kpList(kpWS+"/management-keys", e.ownerKey) {
			wsIDs = append(wsIDs, kpStr(k["id"]))
		}
		if !kpSameSet(wsIDs, []string{ws.ID.String()}) {
			t.Errorf("workspace list = %v, want %v", wsIDs, ws.ID)
		}
		gets := []struct {
			path   string
			status int
		}{
			{kpOrg + "/management-keys/" + org.ID.String(), 200},
			{kpOrg + "/management-keys/" + ws.ID.String(), 200},
			{kpOrg + "/management-keys/" + otherOrg.ID.String(), 404},
			{kpOrg + "/management-keys/" + inst.ID.String(), 404},
			{kpOrg + "/management-keys/" + uuid.NewString(), 404},
			{"/api/v1/organizations/other/management-keys/" + org.ID.String(), 404},
			{"/api/v1/organizations/other/management-keys/" + otherOrg.ID.String(), 200},
			{kpWS + "/management-keys/" + ws.ID.String(), 200},
			{kpWS + "/management-keys/" + org.ID.String(), 404},
			{kpInst + "/management-keys/" + otherOrg.ID.String(), 200},
			{kpInst + "/management-keys/" + ws.ID.String(), 200},
		}
		for _, g := range gets {
			status, raw := e.do("GET", g.path, e.ownerKey, nil)
			if status != g.status {
				t.Errorf("GET %s: %d %s, want %d", g.path, status, raw, g.status)
				continue
			}
			if status == 200 {
				kpCheckKey(t, kpData(t, raw).(map[string]any), false)
			} else {
				kpDetail(t, raw)
			}
		}
		// The same 404 body whether the key exists in another org or not at
		// all (apart from the id it names).
		_, a := e.do("GET", kpOrg+"/management-keys/"+otherOrg.ID.String(), e.ownerKey, nil)
		_, b := e.do("GET", kpOrg+"/management-keys/"+uuid.Nil.String(), e.ownerKey, nil)
		if strings.ReplaceAll(string(a), otherOrg.ID.String(), "ID") != strings.ReplaceAll(string(b), uuid.Nil.String(), "ID") {
			t.Errorf("404 bodies differ: %s vs %s", a, b)
		}
	})
}

// An organization member manages their own management keys only: others'
// keys are invisible to them (404, absent from lists), and so cannot be
// revoked by them.
func TestMemberSeesOwnManagementKeysOnly(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		member, cookie := e.signup("member@example.com")
		e.must("POST", "/api/v1/organizations/default/members", e.ownerKey, map[string]any{"user_id": member.User.ID, "role": "member"})
		ownerOrgKey := e.key("/api/v1/organizations/default", e.ownerKey, []string{"organizations.read"}, nil)
		mine := e.key("/api/v1/organizations/default", "cookie:"+cookie, []string{"organizations.read"}, nil)
		list := decodeData[[]wire.ManagementKey](t, e.must("GET", "/api/v1/organizations/default/management-keys", "cookie:"+cookie, nil))
		if len(list) != 1 || list[0].ID != mine.ID {
			t.Fatalf("member's list: %+v", list)
		}
		for _, path := range []string{"", "/revoke"} {
			method := map[string]string{"": "GET", "/revoke": "POST"}[path]
			if st, _ := e.do(method, "/api/v1/organizations/default/management-keys/"+ownerOrgKey.ID.String()+path, "cookie:"+cookie, nil); st != 404 {
				t.Fatalf("%s another's key: %d", method, st)
			}
		}
		if all := decodeData[[]wire.ManagementKey](t, e.must("GET", "/api/v1/organizations/default/management-keys", e.ownerKey, nil)); len(all) < 2 {
			t.Fatalf("owner's list: %d keys", len(all))
		}
	})
}

// Item 6: revoking a key revoked nothing it had issued; a leaked key could
// mint a child to persist.
func TestRevokingAKeyRevokesWhatItIssued(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		perms := []string{"management-keys.read", "management-keys.issue", "management-keys.revoke", "organizations.read"}
		parent := e.key("/api/v1/instance", e.ownerKey, perms, nil)
		child := e.key("/api/v1/instance", parent.Token, perms, nil)
		grandchild := e.key("/api/v1/instance", child.Token, perms, nil)
		sibling := e.key("/api/v1/instance", e.ownerKey, perms, nil)
		if grandchild.ParentID == nil || *grandchild.ParentID != child.ID {
			t.Fatalf("parent_id does not show the chain: %+v", grandchild)
		}
		e.must("POST", "/api/v1/instance/management-keys/"+parent.ID.String()+"/revoke", e.ownerKey, nil)
		for _, k := range []wire.ManagementKey{parent, child, grandchild} {
			if status, raw := e.do("GET", "/api/v1/auth/me", k.Token, nil); status != 401 {
				t.Fatalf("key %s after its issuer was revoked: %d %s", k.Prefix, status, raw)
			}
			got := decodeData[wire.ManagementKey](t, e.must("GET", "/api/v1/instance/management-keys/"+k.ID.String(), e.ownerKey, nil))
			if got.Status != "revoked" {
				t.Fatalf("key %s reads back %s", k.Prefix, got.Status)
			}
		}
		e.must("GET", "/api/v1/auth/me", sibling.Token, nil)
		n := 0
		for _, ev := range e.auditEvents() {
			if ev.Action == "management_key.revoked" && ev.Details["reason"] == "issuing key revoked" {
				n++
			}
		}
		if n != 2 {
			t.Fatalf("%d cascade audit entries, want 2 (child, grandchild)", n)
		}

		// A key whose issuer expires stops too, and one whose issuer was
		// revoked wholesale (not through the API) is refused all the same.
		p2 := e.key("/api/v1/instance", e.ownerKey, perms, map[string]any{"expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
		c2 := e.key("/api/v1/instance", p2.Token, perms, map[string]any{"expires_at": time.Now().Add(30 * time.Minute).UTC().Format(time.RFC3339)})
		e.kpSetExpiry(p2.ID, time.Now().Add(-time.Minute))
		if status, raw := e.do("GET", "/api/v1/auth/me", c2.Token, nil); status != 401 || !strings.Contains(string(raw), "expired") {
			t.Fatalf("child of an expired key: %d %s", status, raw)
		}
		p3 := e.key("/api/v1/instance", e.ownerKey, perms, nil)
		c3 := e.key("/api/v1/instance", p3.Token, perms, nil)
		if _, err := e.st.RevokeManagementKey(context.Background(), p3.ID, time.Now()); err != nil {
			t.Fatal(err)
		}
		if status, raw := e.do("GET", "/api/v1/auth/me", c3.Token, nil); status != 401 {
			t.Fatalf("child of a key revoked outside the API: %d %s", status, raw)
		}
	})
}

func TestInstanceKeyListFilterIsHonoured(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		u2, cookie := e.signup("u2@example.com")
		e.must("POST", "/api/v1/organizations/default/members", e.ownerKey, map[string]any{"user_id": u2.User.ID, "role": "member"})
		theirs := e.key("/api/v1/organizations/default", "cookie:"+cookie, []string{"organizations.read"}, nil)
		reader := e.key("/api/v1/instance", e.ownerKey, []string{"management-keys.read"}, nil)
		list := decodeData[[]wire.ManagementKey](t, e.must("GET", "/api/v1/instance/management-keys?user_id="+u2.User.ID.String(), reader.Token, nil))
		if len(list) != 1 || list[0].ID != theirs.ID {
			t.Fatalf("filtered list: %+v", list)
		}
	})
}

func TestConcurrentRevokesAgree(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		k := e.key("/api/v1/organizations/default", e.ownerKey, []string{"organizations.read"}, nil)
		var wg sync.WaitGroup
		times := make(chan string, 10)
		for i := 0; i < 10; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp := e.doResp("POST", "/api/v1/organizations/default/management-keys/"+k.ID.String()+"/revoke", e.ownerKey, nil)
				defer resp.Body.Close()
				var body struct{ Data wire.ManagementKey }
				if jsonDecode(resp.Body, &body) == nil && body.Data.RevokedAt != nil {
					times <- body.Data.RevokedAt.String()
				}
			}()
		}
		wg.Wait()
		close(times)
		seen := map[string]bool{}
		for tm := range times {
			seen[tm] = true
		}
		raw := e.must("GET", "/api/v1/organizations/default/activity?limit=200", e.ownerKey, nil)
		if len(seen) != 1 || strings.Count(string(raw), `"management_key.revoked"`) != 1 {
			t.Fatalf("revoked_at values %v; events %d", seen, strings.Count(string(raw), `"management_key.revoked"`))
		}
	})
}
