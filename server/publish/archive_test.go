package publish_test

import (
	"context"
	"errors"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/publish"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// TestArchiveInBundle (issue 32): an enabled workspace archive is in the
// bundle with its secret sealed; what an enrolled data plane receives has
// it re-sealed to the data plane (the master key no longer opens it, the
// data plane's does). A disabled archive is not in the bundle.
func TestArchiveInBundle(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		e := newCompileEnv(t, db)
		wsID := e.org.Workspace("archived")
		ws, err := e.st.GetWorkspace(ctx, wsID)
		if err != nil {
			t.Fatal(err)
		}
		a := &store.Archive{Enabled: true, Endpoint: "https://s3.example.com", Bucket: "b-1", AccessKeyID: "AK", Include: []string{"request"}}
		aad := secrets.ArchiveAAD(wsID, a.Endpoint, a.Bucket, a.AccessKeyID)
		if a.SecretSealed, err = e.org.KR.Seal([]byte("archive-secret"), aad); err != nil {
			t.Fatal(err)
		}
		ws.Archive = a
		if err := e.st.UpdateWorkspace(ctx, ws); err != nil {
			t.Fatal(err)
		}
		_, stored := e.compile(t)
		var got *bundle.Archive
		for _, w := range stored.Workspaces {
			if w.ID == wsID {
				got = w.Archive
			}
		}
		if got == nil || got.Bucket != "b-1" || len(got.Include) != 1 {
			t.Fatalf("archive in the bundle: %+v", got)
		}
		row, err := e.st.GetBundle(ctx, e.org.ID)
		if err != nil {
			t.Fatal(err)
		}
		dp, err := secrets.GenerateDataPlaneKey()
		if err != nil {
			t.Fatal(err)
		}
		signer, err := publish.SigningKey(ctx, e.st, e.org.KR)
		if err != nil {
			t.Fatal(err)
		}
		out, err := publish.ForDataPlane(row, e.org.KR, signer, dp.Public(), false)
		if err != nil {
			t.Fatal(err)
		}
		body, err := bundle.Verify(out, e.pub)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range body.Workspaces {
			if w.ID != wsID {
				continue
			}
			if _, err := e.org.KR.Open(w.Archive.SecretSealed, aad); !errors.Is(err, secrets.ErrCannotOpen) {
				t.Errorf("the archive secret opens with the master key: %v", err)
			}
			if pt, err := dp.Open(w.Archive.SecretSealed, aad); err != nil || string(pt) != "archive-secret" {
				t.Errorf("the archive secret does not open with the data plane's key: %q %v", pt, err)
			}
		}
		ws.Archive.Enabled = false
		if err := e.st.UpdateWorkspace(ctx, ws); err != nil {
			t.Fatal(err)
		}
		_, stored = e.compile(t)
		for _, w := range stored.Workspaces {
			if w.Archive != nil {
				t.Errorf("a disabled archive is in the bundle: %+v", w.Archive)
			}
		}
	})
}
