package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/wire"
)

// scimEnv is a gw with identity provider "corp" (its group mappings: eng
// → member of organization default and of workspace default; admins →
// admin of default) and the /scim/v2 service on its own test server.
type scimEnv struct {
	*ssoEnv
	scim *httptest.Server
}

func newSCIMEnv(t *testing.T, e *env) *scimEnv {
	t.Helper()
	srv := httptest.NewServer(e.api.SCIM())
	t.Cleanup(srv.Close)
	return &scimEnv{ssoEnv: newSSOEnv(t, e), scim: srv}
}

// scimToken creates a SCIM token of the organization org (slug).
func (s *scimEnv) scimToken(org, label string) wire.SCIMToken {
	s.t.Helper()
	tok := decodeData[wire.SCIMToken](s.t, s.must("POST", "/api/v1/organizations/"+org+"/scim-tokens", s.ownerKey, map[string]any{"label": label}))
	if !strings.HasPrefix(tok.Token, "scim_") || tok.Label != label || !strings.HasSuffix(tok.SCIMURL, "/scim/v2") {
		s.t.Fatalf("token answer: %+v", tok)
	}
	return tok
}

// call sends a SCIM request with token; body is JSON-encoded unless a
// string. Every answer with a body must be application/scim+json, and no
// answer may be a 500.
func (s *scimEnv) call(token, method, path string, body any) (int, map[string]any) {
	s.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, _ := json.Marshal(b)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, s.scim.URL+"/scim/v2"+path, rd)
	if token != "" {
		// The scheme's case does not matter (RFC 7235).
		scheme := "Bearer "
		if strings.HasSuffix(path, "/ResourceTypes") {
			scheme = "bearer "
		}
		req.Header.Set("Authorization", scheme+token)
	}
	req.Header.Set("Content-Type", "application/scim+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 500 {
		s.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if resp.StatusCode == http.StatusNoContent {
		return resp.StatusCode, nil
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/scim+json" {
		s.t.Fatalf("%s %s: content type %q", method, path, ct)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		s.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if resp.StatusCode >= 400 {
		if sc, _ := out["schemas"].([]any); len(sc) != 1 || sc[0] != "urn:ietf:params:scim:api:messages:2.0:Error" || out["detail"] == "" {
			s.t.Fatalf("%s %s: error not in SCIM's shape: %s", method, path, raw)
		}
	}
	return resp.StatusCode, out
}

func (s *scimEnv) want(status int, token, method, path string, body any) map[string]any {
	s.t.Helper()
	got, out := s.call(token, method, path, body)
	if got != status {
		s.t.Fatalf("%s %s: %d %v, want %d", method, path, got, out, status)
	}
	return out
}

// refused checks a 4xx answer's status and scimType.
func (s *scimEnv) refused(status int, scimType, token, method, path string, body any) {
	s.t.Helper()
	out := s.want(status, token, method, path, body)
	if out["status"] != http.StatusText(status) && out["status"] != itoa(status) {
		s.t.Fatalf("%s %s: status member %v", method, path, out["status"])
	}
	if got, _ := out["scimType"].(string); got != scimType {
		s.t.Fatalf("%s %s: scimType %q, want %q (%v)", method, path, got, scimType, out)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func filterQuery(f string) string { return "filter=" + url.QueryEscape(f) }

// roles are a user's role in organization default and workspace default
// ("" for none).
func (s *scimEnv) roles(userID string) (org, ws string) {
	s.t.Helper()
	ctx := context.Background()
	uid := uuid.MustParse(userID)
	if m, err := s.st.GetMembership(ctx, s.boot.Organization.ID, uid); err == nil {
		org = m.Role
	} else if !errors.Is(err, store.ErrNotFound) {
		s.t.Fatal(err)
	}
	if m, err := s.st.GetWorkspaceMember(ctx, s.boot.Workspace.ID, uid); err == nil {
		ws = m.Role
	} else if !errors.Is(err, store.ErrNotFound) {
		s.t.Fatal(err)
	}
	return org, ws
}

// credentials gives a provisioned person a browser session (as a sign-in
// would) and, through it, an inference key and a management key.
type credentials struct {
	cookie, mkey string
	ikey         wire.InferenceKey
}

func (s *scimEnv) credentials(userID string) credentials {
	s.t.Helper()
	_, token, err := backend.StartSession(context.Background(), s.st, uuid.MustParse(userID), backend.SessionStart{TTL: time.Hour})
	if err != nil {
		s.t.Fatal(err)
	}
	c := credentials{cookie: "cookie:" + token}
	s.must("GET", "/api/v1/auth/me", c.cookie, nil)
	c.ikey = decodeData[wire.InferenceKey](s.t, s.must("POST", wsBase+"/inference-keys", c.cookie, map[string]any{"name": "laptop"}))
	c.mkey = s.key("/api/v1/organizations/default", c.cookie, []string{"members.read"}, nil).Token
	s.must("GET", "/api/v1/auth/me", c.mkey, nil)
	return c
}

// stopped checks that a disabled person's session ended and that their
// management and inference keys are revoked.
func (s *scimEnv) stopped(c credentials) {
	s.t.Helper()
	if st, _ := s.do("GET", "/api/v1/auth/me", c.cookie, nil); st != http.StatusUnauthorized {
		s.t.Fatalf("session after deactivation: %d", st)
	}
	if st, _ := s.do("GET", "/api/v1/auth/me", c.mkey, nil); st != http.StatusUnauthorized {
		s.t.Fatalf("management key after deactivation: %d", st)
	}
	k := decodeData[wire.InferenceKey](s.t, s.must("GET", wsBase+"/inference-keys/"+c.ikey.ID.String(), s.ownerKey, nil))
	if k.RevokedAt == nil {
		s.t.Fatalf("inference key after deactivation: %+v", k)
	}
}

func id(out map[string]any) string { v, _ := out["id"].(string); return v }

// TestSCIMOktaSequence drives what Okta sends: a lookup by userName, a
// create, a profile push (PUT), group push and membership changes in the
// Okta PATCH form, deactivation as {"op":"replace","value":{"active":false}}.
func TestSCIMOktaSequence(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		s := newSCIMEnv(t, e)
		okta := s.scimToken("default", "okta")
		tok := okta.Token

		list := s.want(200, tok, "GET", "/Users?"+filterQuery(`userName eq "ada@example.com"`)+"&startIndex=1&count=100", nil)
		if list["totalResults"] != 0.0 || len(list["Resources"].([]any)) != 0 {
			t.Fatalf("lookup before create: %v", list)
		}
		u := s.want(201, tok, "POST", "/Users", map[string]any{
			"schemas": []string{"urn:ietf:params:scim:schemas:core:2.0:User"}, "userName": "ada@example.com",
			"name": map[string]any{"givenName": "Ada", "familyName": "Lovelace"}, "displayName": "Ada Lovelace",
			"emails": []map[string]any{{"primary": true, "value": "ada@example.com", "type": "work"}}, "active": true,
			"externalId": "00u1ada", "locale": "en-US", "password": "ignored-1234",
		})
		uid := id(u)
		if u["userName"] != "ada@example.com" || u["active"] != true || u["externalId"] != "00u1ada" || u["displayName"] != "Ada Lovelace" {
			t.Fatalf("created: %v", u)
		}
		if got := s.want(200, tok, "GET", "/Users/"+uid, nil); got["userName"] != "ada@example.com" {
			t.Fatalf("get: %v", got)
		}
		list = s.want(200, tok, "GET", "/Users?"+filterQuery(`userName eq "ADA@example.com"`), nil)
		if list["totalResults"] != 1.0 || id(list["Resources"].([]any)[0].(map[string]any)) != uid {
			t.Fatalf("lookup after create: %v", list)
		}
		if org, ws := s.roles(uid); org != "" || ws != "" {
			t.Fatalf("memberships before any group: %q %q", org, ws)
		}
		// Okta's profile push replaces the whole user.
		put := s.want(200, tok, "PUT", "/Users/"+uid, map[string]any{"userName": "ada@example.com", "displayName": "Ada King",
			"name": map[string]any{"givenName": "Ada", "familyName": "King"}, "active": true, "externalId": "00u1ada"})
		if put["displayName"] != "Ada King" || put["name"].(map[string]any)["familyName"] != "King" {
			t.Fatalf("replaced: %v", put)
		}

		g := s.want(201, tok, "POST", "/Groups", map[string]any{"schemas": []string{"urn:ietf:params:scim:schemas:core:2.0:Group"},
			"displayName": "eng", "members": []any{}})
		gid := id(g)
		s.want(200, tok, "PATCH", "/Groups/"+gid, map[string]any{"schemas": []string{"urn:ietf:params:scim:api:messages:2.0:PatchOp"},
			"Operations": []map[string]any{{"op": "add", "path": "members", "value": []map[string]any{{"value": uid, "display": "ada@example.com"}}}}})
		if org, ws := s.roles(uid); org != "member" || ws != "member" {
			t.Fatalf("memberships after group add: %q %q", org, ws)
		}
		got := s.want(200, tok, "GET", "/Groups/"+gid, nil)
		if m := got["members"].([]any); len(m) != 1 || m[0].(map[string]any)["value"] != uid {
			t.Fatalf("group: %v", got)
		}
		if ug := s.want(200, tok, "GET", "/Users/"+uid, nil)["groups"].([]any); len(ug) != 1 || ug[0].(map[string]any)["display"] != "eng" {
			t.Fatalf("user's groups: %v", ug)
		}

		c := s.credentials(uid)
		deact := s.want(200, tok, "PATCH", "/Users/"+uid, map[string]any{"schemas": []string{"urn:ietf:params:scim:api:messages:2.0:PatchOp"},
			"Operations": []map[string]any{{"op": "replace", "value": map[string]any{"active": false}}}})
		if deact["active"] != false {
			t.Fatalf("deactivated: %v", deact)
		}
		s.stopped(c)
		// The audit log names the SCIM token as the actor.
		events := decodeData[[]wire.AuditEvent](t, s.must("GET", "/api/v1/instance/activity?limit=200", s.ownerKey, nil))
		audited := map[string]bool{}
		for _, ev := range events {
			if ev.Actor.Type == "scim_token" && ev.Actor.KeyID != nil && *ev.Actor.KeyID == okta.ID && ev.Target.ID == uid {
				audited[ev.Action] = true
			}
		}
		for _, a := range []string{"user.created_by_scim", "member.added", "workspace_member.added", "user.disabled", "user.updated_by_scim"} {
			if !audited[a] {
				t.Errorf("no %s by the SCIM token in the audit log: %v", a, audited)
			}
		}
		u2, err := s.st.GetUser(context.Background(), uuid.MustParse(uid))
		if err != nil || u2.DisabledAt == nil {
			t.Fatalf("account after deactivation: %+v %v", u2, err)
		}

		s.want(200, tok, "PATCH", "/Groups/"+gid, map[string]any{
			"Operations": []map[string]any{{"op": "remove", "path": `members[value eq "` + uid + `"]`}}})
		if org, ws := s.roles(uid); org != "" || ws != "" {
			t.Fatalf("memberships after group remove: %q %q", org, ws)
		}
		react := s.want(200, tok, "PATCH", "/Users/"+uid, map[string]any{
			"Operations": []map[string]any{{"op": "replace", "value": map[string]any{"active": true}}}})
		if react["active"] != true {
			t.Fatalf("reactivated: %v", react)
		}
		// Deleting a group takes the memberships it gave.
		s.want(200, tok, "PATCH", "/Groups/"+gid, map[string]any{
			"Operations": []map[string]any{{"op": "add", "path": "members", "value": []map[string]any{{"value": uid}}}}})
		if org, _ := s.roles(uid); org != "member" {
			t.Fatalf("membership after adding again: %q", org)
		}
		s.want(204, tok, "DELETE", "/Groups/"+gid, nil)
		s.refused(404, "", tok, "GET", "/Groups/"+gid, nil)
		if org, ws := s.roles(uid); org != "" || ws != "" {
			t.Fatalf("memberships after group delete: %q %q", org, ws)
		}
		s.want(204, tok, "DELETE", "/Users/"+uid, nil)
		s.refused(404, "", tok, "GET", "/Users/"+uid, nil)
		if u3, _ := s.st.GetUser(context.Background(), uuid.MustParse(uid)); u3.DisabledAt == nil {
			t.Fatal("a deleted user the organization alone holds is disabled")
		}
	})
}

// TestSCIMEntraSequence drives what Microsoft Entra ID sends: capitalized
// operations, a path per attribute, string booleans, the enterprise
// extension, group membership checked with a filter, members removed by
// value list; a membership made by hand survives the mappings.
func TestSCIMEntraSequence(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		s := newSCIMEnv(t, e)
		tok := s.scimToken("default", "entra").Token
		const ext = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"

		s.want(200, tok, "GET", "/Users?"+filterQuery(`userName eq "bob@example.com"`), nil)
		u := s.want(201, tok, "POST", "/Users", map[string]any{
			"schemas": []string{"urn:ietf:params:scim:schemas:core:2.0:User", ext}, "externalId": "bob", "userName": "bob@example.com",
			"active": true, "displayName": "Bob", "meta": map[string]any{"resourceType": "User"},
			"emails": []map[string]any{{"primary": true, "type": "work", "value": "bob@example.com"}},
			"name":   map[string]any{"formatted": "Bob B", "familyName": "B", "givenName": "Bob"}, ext: map[string]any{"department": "R&D"},
		})
		uid := id(u)
		p := s.want(200, tok, "PATCH", "/Users/"+uid, map[string]any{"schemas": []string{"urn:ietf:params:scim:api:messages:2.0:PatchOp"},
			"Operations": []map[string]any{{"op": "Replace", "path": "displayName", "value": "Bob Builder"},
				{"op": "Add", "path": ext + ":department", "value": "Ops"}, {"op": "Replace", "path": `emails[type eq "work"].value`, "value": "bob@example.com"},
				{"op": "Replace", "path": "name.familyName", "value": "Builder"}}})
		if p["displayName"] != "Bob Builder" || p["name"].(map[string]any)["familyName"] != "Builder" {
			t.Fatalf("patched: %v", p)
		}
		g := s.want(201, tok, "POST", "/Groups", map[string]any{"schemas": []string{"urn:ietf:params:scim:schemas:core:2.0:Group"},
			"displayName": "admins", "externalId": "e-admins", "members": []any{}})
		gid := id(g)
		found := s.want(200, tok, "GET", "/Groups?"+filterQuery(`displayName eq "admins"`)+"&excludedAttributes=members", nil)
		if found["totalResults"] != 1.0 {
			t.Fatalf("group lookup: %v", found)
		}
		if _, has := found["Resources"].([]any)[0].(map[string]any)["members"]; has {
			t.Fatalf("excludedAttributes=members: %v", found)
		}
		s.want(200, tok, "PATCH", "/Groups/"+gid, map[string]any{
			"Operations": []map[string]any{{"op": "Add", "path": "members", "value": []map[string]any{{"value": uid}}}}})
		if org, _ := s.roles(uid); org != "admin" {
			t.Fatalf("membership after group add: %q", org)
		}
		check := s.want(200, tok, "GET", "/Groups?"+filterQuery(`id eq "`+gid+`" and members[value eq "`+uid+`"]`)+"&excludedAttributes=members", nil)
		if check["totalResults"] != 1.0 {
			t.Fatalf("membership check: %v", check)
		}

		// carol is made a viewer by hand before her group gives admin:
		// the hand-made membership is left as it is, and stays.
		carol := id(s.want(201, tok, "POST", "/Users", map[string]any{"userName": "carol@example.com", "active": true}))
		s.must("POST", "/api/v1/organizations/default/members", s.ownerKey, map[string]any{"user_id": carol, "role": "viewer"})
		s.want(200, tok, "PATCH", "/Groups/"+gid, map[string]any{
			"Operations": []map[string]any{{"op": "Add", "path": "members", "value": []map[string]any{{"value": carol}}}}})
		if org, _ := s.roles(carol); org != "viewer" {
			t.Fatalf("hand-made membership after group add: %q", org)
		}

		c := s.credentials(uid)
		d := s.want(200, tok, "PATCH", "/Users/"+uid, map[string]any{
			"Operations": []map[string]any{{"op": "Replace", "path": "active", "value": "False"}}})
		if d["active"] != false {
			t.Fatalf("deactivated: %v", d)
		}
		s.stopped(c)

		s.want(200, tok, "PATCH", "/Groups/"+gid, map[string]any{
			"Operations": []map[string]any{{"op": "Remove", "path": "members", "value": []map[string]any{{"value": uid}, {"value": carol}}}}})
		if org, _ := s.roles(uid); org != "" {
			t.Fatalf("mapped membership after group remove: %q", org)
		}
		if org, _ := s.roles(carol); org != "viewer" {
			t.Fatalf("hand-made membership after group remove: %q", org)
		}
		// A rename moves the members to what the new name maps to.
		s.want(200, tok, "PATCH", "/Groups/"+gid, map[string]any{
			"Operations": []map[string]any{{"op": "Add", "path": "members", "value": []map[string]any{{"value": uid}}}}})
		s.want(200, tok, "PATCH", "/Groups/"+gid, map[string]any{
			"Operations": []map[string]any{{"op": "Replace", "path": "displayName", "value": "eng"}}})
		if org, ws := s.roles(uid); org != "member" || ws != "member" {
			t.Fatalf("memberships after rename: %q %q", org, ws)
		}
		s.want(204, tok, "DELETE", "/Groups/"+gid, nil)
		if org, _ := s.roles(uid); org != "" {
			t.Fatalf("membership after group delete: %q", org)
		}
	})
}

// TestSCIMTenancyAndRefusals: a token reaches its own organization only
// (another's users and groups answer 404, like unknown ones); tokens are
// listed without secrets and deleted; bad tokens, filters and bodies are
// SCIM errors, never 500s.
func TestSCIMTenancyAndRefusals(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		s := newSCIMEnv(t, e)
		tokA := s.scimToken("default", "okta")
		s.must("POST", "/api/v1/organizations", s.ownerKey, map[string]any{"name": "Other", "slug": "other"})
		tokB := s.scimToken("other", "okta-b")

		zed := id(s.want(201, tokB.Token, "POST", "/Users", map[string]any{"userName": "zed@example.com"}))
		gB := id(s.want(201, tokB.Token, "POST", "/Groups", map[string]any{"displayName": "eng", "members": []map[string]any{{"value": zed}}}))
		for _, c := range []struct{ method, path string }{
			{"GET", "/Users/" + zed}, {"PUT", "/Users/" + zed}, {"PATCH", "/Users/" + zed}, {"DELETE", "/Users/" + zed},
			{"GET", "/Groups/" + gB}, {"PATCH", "/Groups/" + gB}, {"DELETE", "/Groups/" + gB}, {"GET", "/Users/" + uuid.NewString()},
			{"GET", "/Users/not-a-uuid"},
		} {
			var body any
			switch c.method {
			case "PUT":
				body = map[string]any{"userName": "zed@example.com", "active": false}
			case "PATCH":
				body = map[string]any{"Operations": []map[string]any{{"op": "replace", "value": map[string]any{"active": false}}}}
			}
			s.refused(404, "", tokA.Token, c.method, c.path, body)
		}
		if l := s.want(200, tokA.Token, "GET", "/Users?"+filterQuery(`userName eq "zed@example.com"`), nil); l["totalResults"] != 0.0 {
			t.Fatalf("another organization's user listed: %v", l)
		}
		if l := s.want(200, tokA.Token, "GET", "/Groups", nil); l["totalResults"] != 0.0 {
			t.Fatalf("another organization's group listed: %v", l)
		}
		s.refused(400, "invalidValue", tokA.Token, "POST", "/Groups", map[string]any{"displayName": "x", "members": []map[string]any{{"value": zed}}})
		if u, _ := s.st.GetUser(context.Background(), uuid.MustParse(zed)); u.DisabledAt != nil {
			t.Fatal("another organization's token disabled an account")
		}
		// Another organization's token id under this one's path is not found.
		if st, _ := s.do("DELETE", "/api/v1/organizations/other/scim-tokens/"+tokA.ID.String(), s.ownerKey, nil); st != http.StatusNotFound {
			t.Fatalf("deleting org A's token through org B: %d", st)
		}
		listed := s.must("GET", "/api/v1/organizations/default/scim-tokens", s.ownerKey, nil)
		if strings.Contains(string(listed), tokA.Token) || len(decodeData[[]wire.SCIMToken](t, listed)) != 1 {
			t.Fatalf("token list: %s", listed)
		}
		// A person in two organizations is not one organization's token's
		// to disable.
		both := id(s.want(201, tokA.Token, "POST", "/Users", map[string]any{"userName": "both@example.com"}))
		s.must("POST", "/api/v1/organizations/other/members", s.ownerKey, map[string]any{"user_id": both, "role": "member"})
		s.refused(403, "", tokA.Token, "PATCH", "/Users/"+both, map[string]any{"Operations": []map[string]any{{"op": "Replace", "path": "active", "value": "False"}}})
		s.refused(409, "uniqueness", tokA.Token, "POST", "/Users", map[string]any{"userName": "both@example.com"})
		// Nor is an owner of the organization.
		owner := s.boot.User.ID.String()
		s.refused(403, "", tokA.Token, "DELETE", "/Users/"+owner, nil)
		s.refused(403, "", tokA.Token, "PATCH", "/Users/"+owner, map[string]any{"Operations": []map[string]any{{"op": "replace", "value": map[string]any{"active": false}}}})
		if org, _ := s.roles(owner); org != "owner" {
			t.Fatalf("owner after refused deprovisioning: %q", org)
		}

		// Discovery.
		if c := s.want(200, tokA.Token, "GET", "/ServiceProviderConfig", nil); c["patch"].(map[string]any)["supported"] != true {
			t.Fatalf("config: %v", c)
		}
		if r := s.want(200, tokA.Token, "GET", "/ResourceTypes", nil); r["totalResults"] != 2.0 {
			t.Fatalf("resource types: %v", r)
		}
		s.want(200, tokA.Token, "GET", "/ResourceTypes/Group", nil)
		if sc := s.want(200, tokA.Token, "GET", "/Schemas/urn:ietf:params:scim:schemas:core:2.0:User", nil); sc["name"] != "User" {
			t.Fatalf("schema: %v", sc)
		}

		// Refusals.
		s.refused(401, "", "", "GET", "/Users", nil)
		s.refused(401, "", "scim_not-a-real-token", "GET", "/Users", nil)
		s.refused(401, "", s.ownerKey, "GET", "/Users", nil)
		for _, f := range []string{`userName sw "a"`, `title eq "x"`, `((`, `userName eq "a" or userName eq "b"`, `displayName eq "x"`, `userName eq 1`} {
			s.refused(400, "invalidFilter", tokA.Token, "GET", "/Users?"+filterQuery(f), nil)
		}
		s.refused(400, "invalidFilter", tokA.Token, "GET", "/Groups?"+filterQuery(`members[display eq "x"]`), nil)
		s.refused(400, "invalidValue", tokA.Token, "GET", "/Users?count=many", nil)
		s.refused(400, "invalidSyntax", tokA.Token, "POST", "/Users", "{")
		s.refused(400, "invalidSyntax", tokA.Token, "POST", "/Users", "[]")
		s.refused(400, "invalidValue", tokA.Token, "POST", "/Users", map[string]any{"userName": "not an email"})
		s.refused(400, "invalidValue", tokA.Token, "POST", "/Users", map[string]any{"userName": "x@example.com", "active": "perhaps"})
		s.refused(400, "invalidValue", tokA.Token, "POST", "/Groups", map[string]any{"members": []any{}})
		s.refused(400, "invalidSyntax", tokA.Token, "PATCH", "/Users/"+both, map[string]any{"Operations": []map[string]any{{"op": "move", "path": "active"}}})
		s.refused(400, "invalidSyntax", tokA.Token, "PATCH", "/Users/"+both, map[string]any{"Operations": "replace"})
		s.refused(400, "invalidPath", tokA.Token, "PATCH", "/Users/"+both, map[string]any{"Operations": []map[string]any{{"op": "replace", "path": "[[", "value": 1}}})
		s.refused(400, "mutability", tokA.Token, "PATCH", "/Users/"+both, map[string]any{"Operations": []map[string]any{{"op": "remove", "path": "userName"}}})
		s.refused(404, "", tokA.Token, "GET", "/Bogus", nil)
		s.refused(405, "", tokA.Token, "DELETE", "/ServiceProviderConfig", nil)
		s.refused(413, "", tokA.Token, "POST", "/Users", `{"userName":"`+strings.Repeat("a", 2<<20)+`"}`)

		// A deleted token is refused from then on.
		s.must("DELETE", "/api/v1/organizations/other/scim-tokens/"+tokB.ID.String(), s.ownerKey, nil)
		s.refused(401, "", tokB.Token, "GET", "/Users", nil)
	})
}
