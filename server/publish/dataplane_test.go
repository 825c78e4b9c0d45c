package publish_test

import (
	"context"
	"errors"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/publish"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// TestForDataPlane: what an enrolled data plane receives is the stored
// bundle with each secret sealed to it, signed, same version; the master
// key no longer opens those secrets, and the data plane's key does.
func TestForDataPlane(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		e := newCompileEnv(t, db)
		cred := e.org.OrgCredential("openai")
		s, stored := e.compile(t)
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
		out, err := publish.ForDataPlane(row, e.org.KR, signer, dp.Public())
		if err != nil {
			t.Fatal(err)
		}
		body, err := bundle.Verify(out, e.pub)
		if err != nil {
			t.Fatalf("the re-sealed bundle does not verify: %v", err)
		}
		if out.Version != s.Version || out.OrgID != s.OrgID || len(body.Credentials) != len(stored.Credentials) || len(body.Keys) != len(stored.Keys) {
			t.Fatalf("re-sealed v%d with %d credentials, stored v%d with %d", out.Version, len(body.Credentials), s.Version, len(stored.Credentials))
		}
		found := false
		for _, c := range body.Credentials {
			aad := secrets.CredentialAAD(c.ID)
			if _, err := e.org.KR.Open(c.SecretSealed, aad); !errors.Is(err, secrets.ErrCannotOpen) {
				t.Errorf("credential %s opens with the master key: %v", c.ID, err)
			}
			pt, err := dp.Open(c.SecretSealed, aad)
			if err != nil || len(pt) == 0 {
				t.Errorf("credential %s does not open with the data plane's key: %v", c.ID, err)
			}
			found = found || c.ID == cred
		}
		if !found {
			t.Fatal("the organization's credential is missing")
		}
	})
}
