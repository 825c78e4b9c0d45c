package dataplane_test

import (
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/store/fixture"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// Issue 27, row 6: a policy's selected_keys and selected_users may hold any
// string, so a workspace's policy may name another organization's key or
// user, or a key of a sibling workspace. None of them ever matches: a
// workspace's policies are evaluated only for its own keys, whose ids and
// owners these are not. A policy denying everything to such targets leaves
// every key served, in its own workspace and in theirs; the same policy
// naming the workspace's own key refuses it.
func TestPolicyTargetsOfAnotherTenantNeverMatch(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		other := fixture.NewOrg(t, e.st, e.kr, "globex")
		otherWS := other.Workspace("main")
		otherOwner := other.Member(auth.MembershipActive)
		otherToken, otherKey := other.Key(otherWS, otherOwner, nil)
		e.credential(t, &other.ID, nil, "openai", e.openai.Key, e.openai.BaseURL())
		sibling := e.org.Workspace("second")
		siblingToken, siblingKey := e.org.Key(sibling, e.owner, nil)
		denyAll := `"rules":[{"match":{"kind":"all_requests"},"action":{"kind":"deny","message":"named"}}]}`
		e.org.Policy(e.ws, "foreign keys", true, `{"target":{"kind":"selected_keys","key_ids":["`+otherKey.String()+`","`+
			siblingKey.String()+`","no-such-key"]},`+denyAll)
		e.org.Policy(e.ws, "foreign users", true, `{"target":{"kind":"selected_users","user_ids":["`+otherOwner.String()+`"]},`+denyAll)
		e.sync(t)
		for name, token := range map[string]string{"the workspace's key": e.token, "the other organization's key": otherToken,
			"the sibling workspace's key": siblingToken} {
			if resp := postAs(t, e.srv.URL, token, chatBody(200, false)); resp.StatusCode != 200 {
				t.Errorf("%s: %d, want 200: another tenant's ids matched", name, resp.StatusCode)
			}
		}
		// The control: naming the workspace's own key denies it (a deny of
		// every request hides every model from the key: 404).
		e.org.Policy(e.ws, "own key", true, `{"target":{"kind":"selected_keys","key_ids":["`+e.keyID.String()+`"]},`+denyAll)
		e.sync(t)
		if resp := postAs(t, e.srv.URL, e.token, chatBody(200, false)); resp.StatusCode != 404 {
			t.Errorf("the workspace's own key named: %d, want 404", resp.StatusCode)
		}
	})
}
