package backend_test

import (
	"context"
	"sync"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/server/validate"
)

// Issue 27, row 8: a key minted in the same instant as its owner's
// account was disabled could escape the disable's revocation (on
// PostgreSQL the disable's revoke did not see the key's uncommitted row),
// and so the refresh the disable makes, which covers the organizations of
// the keys it revoked: a remote plane served it until the next periodic
// refresh. The key's creation now reads its owner's account under a lock
// the disable's write takes: either the disable sees the key and revokes
// it, or the creation sees the account disabled and refuses.
func TestKeyMintedAsItsOwnerIsDisabled(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		_, owner := instanceUser(t, w.st, auth.InstanceOwner, false)
		for range 40 {
			u := w.org.Member(auth.MembershipActive)
			start := make(chan struct{})
			var wg sync.WaitGroup
			var issueErr, disableErr error
			wg.Add(2)
			go func() {
				defer wg.Done()
				<-start
				_, _, issueErr = backend.IssueInferenceKey(ctx, w.st, w.system, backend.InferenceKeyCreate{Workspace: w.ws, Owner: u, Name: "raced"})
			}()
			go func() {
				defer wg.Done()
				<-start
				_, disableErr = backend.DisableUser(ctx, w.st, owner, u)
			}()
			close(start)
			wg.Wait()
			if disableErr != nil {
				t.Fatal(disableErr)
			}
			if _, refused := validate.AsError(issueErr); issueErr != nil && !refused {
				t.Fatal(issueErr)
			}
			keys, err := w.st.ListInferenceKeys(ctx, w.ws.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				if k.UserID == u && k.RevokedAt == nil {
					t.Fatalf("a key minted as its owner was disabled escaped the revocation (creation error: %v)", issueErr)
				}
			}
		}
	})
}
