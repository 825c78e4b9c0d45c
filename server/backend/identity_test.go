package backend

import (
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/store"
)

func TestDesiredGrants(t *testing.T) {
	orgA, orgB, ws1 := uuid.New(), uuid.New(), uuid.New()
	mappings := []store.GroupMapping{
		{Group: "eng", OrgID: orgA, Role: "member", Workspaces: []store.WorkspaceMapping{{WorkspaceID: ws1, Role: "member"}}},
		{Group: "leads", OrgID: orgA, Role: "admin", Workspaces: []store.WorkspaceMapping{{WorkspaceID: ws1, Role: "admin"}}},
		{Group: "finance", OrgID: orgB, Role: "viewer"},
	}
	show := func(gs []Grant) string {
		s := ""
		for _, g := range gs {
			w := "-"
			if g.WorkspaceID != nil {
				w = map[uuid.UUID]string{ws1: "ws1"}[*g.WorkspaceID]
			}
			s += fmt.Sprintf("%s/%s:%s ", map[uuid.UUID]string{orgA: "A", orgB: "B"}[g.OrgID], w, g.Role)
		}
		return s
	}
	cases := []struct {
		groups []string
		want   string
	}{
		{nil, ""},
		{[]string{"unmapped"}, ""},
		{[]string{"eng"}, "A/-:member A/ws1:member "},
		// The first mapping in the provider's order wins for a place.
		{[]string{"leads", "eng"}, "A/-:member A/ws1:member "},
		{[]string{"leads"}, "A/-:admin A/ws1:admin "},
		{[]string{"finance", "eng"}, "A/-:member A/ws1:member B/-:viewer "},
		// Group names compare exactly.
		{[]string{"Eng"}, ""},
	}
	for _, c := range cases {
		if got := show(DesiredGrants(mappings, c.groups)); got != c.want {
			t.Errorf("groups %v: got %q, want %q", c.groups, got, c.want)
		}
	}
}
