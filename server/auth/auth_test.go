package auth

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/google/uuid"
)

var update = flag.Bool("update", false, "rewrite docs/permissions.md's role table from the code")

const docPath = "../../docs/permissions.md"
const beginMark, endMark = "<!-- role-table:begin -->\n", "<!-- role-table:end -->"

// The documentation's role table is generated from the code; this test
// fails when either drifts (run go test ./server/auth -update to regenerate).
func TestPermissionsDocMatchesCode(t *testing.T) {
	raw, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, beginMark), strings.Index(doc, endMark)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the role-table markers", docPath)
	}
	want := doc[:i+len(beginMark)] + RoleTableMarkdown() + doc[j:]
	if *update {
		if err := os.WriteFile(docPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if doc != want {
		t.Fatalf("%s is out of date; run: go test ./server/auth -update", docPath)
	}
}

func TestClosedPermissionSet(t *testing.T) {
	if len(All) != 31 || len(known) != 31 {
		t.Fatalf("want 31 permissions, have %d (%d distinct)", len(All), len(known))
	}
	if Known("organizations.list") || !Known("management-keys.revoke") {
		t.Fatal("Known is wrong")
	}
}

func TestRoleRights(t *testing.T) {
	cases := []struct {
		name  string
		facts RoleFacts
		level Level
		has   []Permission
		lacks []Permission
	}{
		{"instance owner everywhere", RoleFacts{InstanceRole: InstanceOwner}, LevelWorkspace, All, nil},
		{"instance member nothing at instance", RoleFacts{InstanceRole: InstanceMember}, LevelInstance, nil, []Permission{OrganizationsRead}},
		{"org owner reaches workspaces", RoleFacts{InstanceRole: InstanceMember, OrgRole: OrgOwner}, LevelWorkspace,
			[]Permission{WorkspacesDelete, PoliciesManage}, []Permission{OrganizationsCreate, CatalogManage}},
		{"org admin cannot delete the org", RoleFacts{OrgRole: OrgAdmin}, LevelOrganization, []Permission{MembersManage}, []Permission{OrganizationsDelete}},
		{"org member does not reach workspaces", RoleFacts{OrgRole: OrgMember}, LevelWorkspace, nil, []Permission{WorkspacesRead}},
		{"org member with workspace role", RoleFacts{OrgRole: OrgMember, WorkspaceRole: WorkspaceMember}, LevelWorkspace,
			[]Permission{InferenceKeysManage, WorkspacesRead}, []Permission{WorkspacesUpdate, PoliciesManage}},
		{"workspace admin", RoleFacts{OrgRole: OrgViewer, WorkspaceRole: WorkspaceAdmin}, LevelWorkspace,
			[]Permission{PoliciesManage, MembersManage}, []Permission{WorkspacesDelete}},
		{"viewer reads only", RoleFacts{OrgRole: OrgViewer}, LevelOrganization, []Permission{OrganizationsRead}, []Permission{ManagementKeysIssue}},
	}
	for _, c := range cases {
		got := RoleRights(c.facts, c.level)
		for _, p := range c.has {
			if !got.Has(p) {
				t.Errorf("%s: lacks %s", c.name, p)
			}
		}
		for _, p := range c.lacks {
			if got.Has(p) {
				t.Errorf("%s: has %s", c.name, p)
			}
		}
	}
}

func TestScopeCovers(t *testing.T) {
	o1, o2, w1, w2 := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	inst := Scope{Level: LevelInstance}
	org1 := Scope{Level: LevelOrganization, OrgID: o1}
	ws1 := Scope{Level: LevelWorkspace, OrgID: o1, WorkspaceID: w1}
	ws2 := Scope{Level: LevelWorkspace, OrgID: o1, WorkspaceID: w2}
	org2 := Scope{Level: LevelOrganization, OrgID: o2}
	cases := []struct {
		key, target Scope
		want        bool
	}{
		{inst, ws1, true}, {org1, ws1, true}, {org1, org1, true}, {org1, inst, false}, {org1, org2, false},
		{ws1, ws1, true}, {ws1, ws2, false}, {ws1, org1, false},
	}
	for i, c := range cases {
		if got := c.key.Covers(c.target); got != c.want {
			t.Errorf("case %d: Covers = %v, want %v", i, got, c.want)
		}
	}
}

func TestTokens(t *testing.T) {
	tok, display, hash := NewToken(ManagementKeyPrefix)
	if !strings.HasPrefix(tok, "sk-cp-") || len(tok) != len("sk-cp-")+43 || !strings.HasPrefix(tok, display) {
		t.Fatalf("token %q display %q", tok, display)
	}
	if hash != HashToken(tok) || hash == HashToken(tok+"x") {
		t.Fatal("hash is not a function of the token")
	}
	tok2, _, _ := NewToken(ManagementKeyPrefix)
	if tok == tok2 {
		t.Fatal("two tokens are equal")
	}
}

func TestPasswords(t *testing.T) {
	h, err := HashPassword("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := CheckPassword(h, "correct horse"); !ok || err != nil {
		t.Fatalf("right password: %v %v", ok, err)
	}
	if ok, _ := CheckPassword(h, "wrong horse"); ok {
		t.Fatal("wrong password accepted")
	}
	if _, err := CheckPassword("$2a$bcrypt", "x"); err == nil {
		t.Fatal("malformed hash accepted")
	}
}
