package publish_test

import (
	"context"
	"errors"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/publish"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store/fixture"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// TestForDataPlane: what an enrolled data plane receives is the stored
// bundle with each secret sealed to it, signed, same version; the master
// key no longer opens those secrets, and the data plane's key does.
// Platform credentials are in it only when the enrollment allows them.
func TestForDataPlane(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		e := newCompileEnv(t, db)
		cred := e.org.OrgCredential("openai")
		platform := fixture.PlatformCredential(t, e.st, e.org.KR, "anthropic")
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
		out, err := publish.ForDataPlane(row, e.org.KR, signer, dp.Public(), true)
		if err != nil {
			t.Fatal(err)
		}
		narrow, err := publish.ForDataPlane(row, e.org.KR, signer, dp.Public(), false)
		if err != nil {
			t.Fatal(err)
		}
		narrowBody, err := bundle.Verify(narrow, e.pub)
		if err != nil {
			t.Fatalf("the narrowed bundle does not verify: %v", err)
		}
		if len(narrowBody.Credentials) != len(stored.Credentials)-1 || narrow.Version != s.Version {
			t.Fatalf("without platform credentials: %d of %d credentials, v%d", len(narrowBody.Credentials), len(stored.Credentials), narrow.Version)
		}
		for _, c := range narrowBody.Credentials {
			if c.ID == platform || c.Scope == policy.ScopePlatform {
				t.Fatalf("a platform credential reached a data plane not enrolled for them: %+v", c)
			}
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

// Republish stores the same content under a new version, which a data
// plane admits; Compile after it changes nothing.
func TestRepublish(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newCompileEnv(t, db)
		e.org.OrgCredential("openai")
		first, _ := e.compile(t)
		again, err := e.compiler.Republish(context.Background(), e.org.ID)
		if err != nil {
			t.Fatal(err)
		}
		if again.Version != first.Version+1 {
			t.Fatalf("republished as v%d after v%d", again.Version, first.Version)
		}
		if s, _ := e.compile(t); s.Version != again.Version {
			t.Fatalf("a compile after republishing stored v%d", s.Version)
		}
	})
}
