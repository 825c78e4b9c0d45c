package scim

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

func scimType(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.ScimType
	}
	return ""
}

func TestParseFilter(t *testing.T) {
	for _, c := range []struct {
		in, kind string
		want     []Term
		bad      string
	}{
		{in: "", kind: KindUser},
		{in: `userName eq "Ann@Example.com"`, kind: KindUser, want: []Term{{"username", "Ann@Example.com"}}},
		{in: `USERNAME EQ "a@b.c"`, kind: KindUser, want: []Term{{"username", "a@b.c"}}},
		{in: `urn:ietf:params:scim:schemas:core:2.0:User:userName eq "a@b.c"`, kind: KindUser, want: []Term{{"username", "a@b.c"}}},
		{in: `externalId eq "00u1" and userName eq "a@b.c"`, kind: KindUser, want: []Term{{"externalid", "00u1"}, {"username", "a@b.c"}}},
		{in: `emails[value eq "a@b.c"]`, kind: KindUser, want: []Term{{"emails.value", "a@b.c"}}},
		{in: `emails.value eq "a@b.c"`, kind: KindUser, want: []Term{{"emails.value", "a@b.c"}}},
		{in: `displayName eq "Engineers"`, kind: KindGroup, want: []Term{{"displayname", "Engineers"}}},
		{in: `id eq "g1" and members[value eq "u1"]`, kind: KindGroup, want: []Term{{"id", "g1"}, {"members.value", "u1"}}},
		{in: `userName sw "a"`, kind: KindUser, bad: InvalidFilter},
		{in: `userName eq "a" or userName eq "b"`, kind: KindUser, bad: InvalidFilter},
		{in: `not (userName eq "a")`, kind: KindUser, bad: InvalidFilter},
		{in: `title eq "x"`, kind: KindUser, bad: InvalidFilter},
		{in: `displayName eq "x"`, kind: KindUser, bad: InvalidFilter},
		{in: `userName eq "x"`, kind: KindGroup, bad: InvalidFilter},
		{in: `userName pr`, kind: KindUser, bad: InvalidFilter},
		{in: `userName eq 3`, kind: KindUser, bad: InvalidFilter},
		{in: `userName eq`, kind: KindUser, bad: InvalidFilter},
		{in: `((`, kind: KindUser, bad: InvalidFilter},
		{in: `urn:example:ext:2.0:User:userName eq "a"`, kind: KindUser, bad: InvalidFilter},
		{in: `members[display eq "x"]`, kind: KindGroup, bad: InvalidFilter},
	} {
		f, err := ParseFilter(c.in, c.kind)
		if c.bad != "" {
			if scimType(err) != c.bad {
				t.Errorf("%q: error %v, want %s", c.in, err, c.bad)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(f.Terms, c.want) {
			t.Errorf("%q: %+v %v, want %+v", c.in, f.Terms, err, c.want)
		}
	}
}

func TestFilterMatch(t *testing.T) {
	u := User{ID: "u1", UserName: "ann@example.com", ExternalID: "00u1"}
	for in, want := range map[string]bool{
		`userName eq "ANN@example.com"`:                          true,
		`userName eq "bob@example.com"`:                          false,
		`externalId eq "00U1"`:                                   false,
		`externalId eq "00u1" and userName eq "ann@example.com"`: true,
		`id eq "u1"`:                         true,
		`emails[value eq "ann@example.com"]`: true,
	} {
		f, err := ParseFilter(in, KindUser)
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if got := f.MatchUser(u); got != want {
			t.Errorf("%q matches %v, want %v", in, got, want)
		}
	}
	g := Group{ID: "g1", DisplayName: "Engineers", Members: []Ref{{Value: "u1"}}}
	for in, want := range map[string]bool{
		`displayName eq "engineers"`:            true,
		`id eq "g1" and members[value eq "u1"]`: true,
		`id eq "g1" and members[value eq "u2"]`: false,
		`externalId eq "x"`:                     false,
	} {
		f, err := ParseFilter(in, KindGroup)
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if got := f.MatchGroup(g); got != want {
			t.Errorf("%q matches %v, want %v", in, got, want)
		}
	}
}

func TestDecodeUser(t *testing.T) {
	for _, c := range []struct {
		body string
		want User
		bad  string
	}{
		{body: `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"Ann@Example.com","name":{"givenName":"Ann","familyName":"Lee"},` +
			`"emails":[{"primary":true,"value":"ann@example.com","type":"work"}],"displayName":"Ann Lee","locale":"en-US","externalId":"00u1","active":true}`,
			want: User{UserName: "ann@example.com", GivenName: "Ann", FamilyName: "Lee", DisplayName: "Ann Lee", ExternalID: "00u1", Active: true}},
		{body: `{"UserName":"bob@example.com","Active":"False","urn:ietf:params:scim:schemas:extension:enterprise:2.0:User":{"department":"x"}}`,
			want: User{UserName: "bob@example.com"}},
		{body: `{"userName":"c@example.com","name":{"formatted":"C D"}}`, want: User{UserName: "c@example.com", DisplayName: "C D", Active: true}},
		{body: `{"userName":"not an email"}`, bad: InvalidValue},
		{body: `{"displayName":"x"}`, bad: InvalidValue},
		{body: `{"userName":"a@b.c","active":"maybe"}`, bad: InvalidValue},
		{body: `{"userName":"a@b.c","active":null}`, bad: InvalidValue},
		{body: `{"userName":42}`, bad: InvalidValue},
		{body: `[1]`, bad: InvalidSyntax},
		{body: `{`, bad: InvalidSyntax},
		{body: `{"userName":"a@b.c","name":"x"}`, bad: InvalidSyntax},
	} {
		u, err := DecodeUser([]byte(c.body))
		if c.bad != "" {
			if scimType(err) != c.bad {
				t.Errorf("%s: error %v, want %s", c.body, err, c.bad)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(u, c.want) {
			t.Errorf("%s: %+v %v, want %+v", c.body, u, err, c.want)
		}
	}
}

func TestPatchUser(t *testing.T) {
	base := User{ID: "u1", UserName: "ann@example.com", DisplayName: "Ann", Active: true, ExternalID: "00u1"}
	for _, c := range []struct {
		name, body string
		want       func(u *User)
		bad        string
	}{
		{name: "okta deactivate", body: `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"replace","value":{"active":false}}]}`,
			want: func(u *User) { u.Active = false }},
		{name: "okta password ignored", body: `{"Operations":[{"op":"replace","value":{"password":"x","active":true}}]}`, want: func(u *User) {}},
		{name: "entra deactivate", body: `{"Operations":[{"op":"Replace","path":"active","value":"False"}]}`,
			want: func(u *User) { u.Active = false }},
		{name: "entra reactivate", body: `{"Operations":[{"op":"Replace","path":"active","value":"True"}]}`, want: func(u *User) {}},
		{name: "entra attributes", body: `{"Operations":[{"op":"Add","path":"displayName","value":"Ann Lee"},` +
			`{"op":"Replace","path":"name.givenName","value":"Ann"},{"op":"Replace","path":"emails[type eq \"work\"].value","value":"x@y.z"},` +
			`{"op":"Add","path":"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department","value":"R&D"},` +
			`{"op":"Replace","path":"externalId","value":"abc"},{"op":"Replace","path":"userName","value":"Ann.Lee@example.com"}]}`,
			want: func(u *User) {
				u.DisplayName, u.GivenName, u.ExternalID, u.UserName = "Ann Lee", "Ann", "abc", "ann.lee@example.com"
			}},
		{name: "no-path dotted", body: `{"Operations":[{"op":"replace","value":{"name.familyName":"Lee","displayName":"A L"}}]}`,
			want: func(u *User) { u.FamilyName, u.DisplayName = "Lee", "A L" }},
		{name: "remove externalId", body: `{"Operations":[{"op":"remove","path":"externalId"}]}`, want: func(u *User) { u.ExternalID = "" }},
		{name: "remove userName", body: `{"Operations":[{"op":"remove","path":"userName"}]}`, bad: Mutability},
		{name: "remove active", body: `{"Operations":[{"op":"Remove","path":"active"}]}`, bad: Mutability},
		{name: "bad op", body: `{"Operations":[{"op":"move","path":"active","value":false}]}`, bad: InvalidSyntax},
		{name: "no ops", body: `{"Operations":[]}`, bad: InvalidSyntax},
		{name: "bad path", body: `{"Operations":[{"op":"replace","path":"[[","value":1}]}`, bad: InvalidPath},
		{name: "bad bool", body: `{"Operations":[{"op":"replace","path":"active","value":"nope"}]}`, bad: InvalidValue},
		{name: "bad email", body: `{"Operations":[{"op":"replace","path":"userName","value":"nobody"}]}`, bad: InvalidValue},
		{name: "filtered userName", body: `{"Operations":[{"op":"replace","path":"userName[value eq \"x\"]","value":"a@b.c"}]}`, bad: InvalidPath},
		{name: "remove without path", body: `{"Operations":[{"op":"remove"}]}`, bad: NoTarget},
	} {
		ops, err := DecodePatch([]byte(c.body))
		var u User
		if err == nil {
			u, err = PatchUser(base, ops)
		}
		if c.bad != "" {
			if scimType(err) != c.bad {
				t.Errorf("%s: error %v, want %s", c.name, err, c.bad)
			}
			continue
		}
		want := base
		c.want(&want)
		if err != nil || !reflect.DeepEqual(u, want) {
			t.Errorf("%s: %+v %v, want %+v", c.name, u, err, want)
		}
	}
}

func ids(g Group) []string { return g.MemberIDs() }

func TestPatchGroup(t *testing.T) {
	base := Group{ID: "g1", DisplayName: "Engineers", Members: []Ref{{Value: "u1"}, {Value: "u2"}}}
	for _, c := range []struct {
		name, body string
		members    []string
		display    string
		bad        string
	}{
		{name: "okta add", body: `{"Operations":[{"op":"add","path":"members","value":[{"value":"u3","display":"c@x.y"}]}]}`,
			members: []string{"u1", "u2", "u3"}},
		{name: "okta remove", body: `{"Operations":[{"op":"remove","path":"members[value eq \"u1\"]"}]}`, members: []string{"u2"}},
		{name: "entra add", body: `{"Operations":[{"op":"Add","path":"members","value":[{"value":"u3"},{"value":"u1"}]}]}`,
			members: []string{"u1", "u2", "u3"}},
		{name: "entra remove", body: `{"Operations":[{"op":"Remove","path":"members","value":[{"value":"u2"}]}]}`, members: []string{"u1"}},
		{name: "remove all", body: `{"Operations":[{"op":"remove","path":"members"}]}`, members: nil},
		{name: "replace members", body: `{"Operations":[{"op":"replace","path":"members","value":[{"value":"u9"}]}]}`, members: []string{"u9"}},
		{name: "okta rename", body: `{"Operations":[{"op":"replace","value":{"id":"g1","displayName":"Eng"}}]}`,
			members: []string{"u1", "u2"}, display: "Eng"},
		{name: "entra rename", body: `{"Operations":[{"op":"Replace","path":"displayName","value":"Eng"}]}`,
			members: []string{"u1", "u2"}, display: "Eng"},
		{name: "no-path add members", body: `{"Operations":[{"op":"add","value":{"members":[{"value":"u4"}]}}]}`,
			members: []string{"u1", "u2", "u4"}},
		{name: "filter to add", body: `{"Operations":[{"op":"add","path":"members[value eq \"u1\"]","value":[]}]}`, bad: InvalidPath},
		{name: "other filter", body: `{"Operations":[{"op":"remove","path":"members[display eq \"u1\"]"}]}`, bad: InvalidPath},
		{name: "remove name", body: `{"Operations":[{"op":"remove","path":"displayName"}]}`, bad: Mutability},
		{name: "member without value", body: `{"Operations":[{"op":"add","path":"members","value":[{"display":"x"}]}]}`, bad: InvalidValue},
		{name: "empty name", body: `{"Operations":[{"op":"replace","path":"displayName","value":""}]}`, bad: InvalidValue},
	} {
		ops, err := DecodePatch([]byte(c.body))
		var g Group
		if err == nil {
			g, err = PatchGroup(base, ops)
		}
		if c.bad != "" {
			if scimType(err) != c.bad {
				t.Errorf("%s: error %v, want %s", c.name, err, c.bad)
			}
			continue
		}
		display := c.display
		if display == "" {
			display = base.DisplayName
		}
		if err != nil || !reflect.DeepEqual(ids(g), c.members) || g.DisplayName != display {
			t.Errorf("%s: %v %q %v, want %v %q", c.name, ids(g), g.DisplayName, err, c.members, display)
		}
	}
	if len(base.Members) != 2 {
		t.Fatalf("patching changed the original group: %+v", base.Members)
	}
}

func TestPage(t *testing.T) {
	for _, c := range []struct{ total, start, count, lo, hi int }{
		{10, 1, 100, 0, 10}, {10, 0, 3, 0, 3}, {10, 9, 5, 8, 10}, {10, 11, 5, 10, 10}, {10, 2, -1, 1, 1}, {5000, 1, 5000, 0, MaxResults},
	} {
		lo, hi := Page(c.total, c.start, c.count, MaxResults)
		if lo != c.lo || hi != c.hi {
			t.Errorf("Page(%d, %d, %d) = %d, %d; want %d, %d", c.total, c.start, c.count, lo, hi, c.lo, c.hi)
		}
	}
}

func TestErrorBody(t *testing.T) {
	raw, _ := json.Marshal(badRequest(InvalidFilter, "no").Body())
	want := `{"schemas":["urn:ietf:params:scim:api:messages:2.0:Error"],"status":"400","scimType":"invalidFilter","detail":"no"}`
	if string(raw) != want {
		t.Fatalf("%s, want %s", raw, want)
	}
}

// FuzzSCIM feeds anything to the filter and PATCH readers: each answers
// or refuses with a SCIM error, never panics.
func FuzzSCIM(f *testing.F) {
	f.Add(`userName eq "a@b.c"`, `{"Operations":[{"op":"replace","value":{"active":false}}]}`)
	f.Add(`id eq "g" and members[value eq "u"]`, `{"Operations":[{"op":"Remove","path":"members[value eq \"u\"]"}]}`)
	f.Add(`emails[type eq "work" and value co "x"]`, `{"Operations":[{"op":"Replace","path":"active","value":"False"}]}`)
	f.Fuzz(func(t *testing.T, flt, patch string) {
		for _, kind := range []string{KindUser, KindGroup} {
			if _, err := ParseFilter(flt, kind); err != nil && scimType(err) != InvalidFilter {
				t.Fatalf("filter %q: %v", flt, err)
			}
		}
		ops, err := DecodePatch([]byte(patch))
		if err != nil {
			if scimType(err) == "" {
				t.Fatalf("patch %q: %v", patch, err)
			}
			return
		}
		if _, err := PatchUser(User{UserName: "a@b.c", Active: true}, ops); err != nil && scimType(err) == "" {
			t.Fatalf("patch user %q: %v", patch, err)
		}
		if _, err := PatchGroup(Group{DisplayName: "g"}, ops); err != nil && scimType(err) == "" {
			t.Fatalf("patch group %q: %v", patch, err)
		}
	})
}
