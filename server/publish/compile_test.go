package publish_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/catalogdb"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/publish"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/fixture"
	"github.com/gw-gateway/gw/server/store/storetest"
)

const (
	wsPolicy     = `{"target":{"kind":"workspace"},"rules":[{"match":{"kind":"all_requests"},"action":{"kind":"providers","names":["openai"]}}]}`
	denyAllRules = `{"target":{"kind":"workspace"},"rules":[{"match":{"kind":"all_requests"},"action":{"kind":"deny","message":"closed"}}]}`
)

// compileEnv is a migrated database with a seeded catalog and a compiler.
type compileEnv struct {
	st       *store.Store
	compiler *publish.Compiler
	pub      ed25519.PublicKey
	org      *fixture.Org
}

func newCompileEnv(t *testing.T, db *bun.DB) *compileEnv {
	t.Helper()
	st, kr := store.New(db), fixture.Keyring(t)
	fixture.SeedCatalog(t, st)
	key, err := publish.SigningKey(context.Background(), st, kr)
	if err != nil {
		t.Fatal(err)
	}
	return &compileEnv{
		st: st, compiler: &publish.Compiler{Store: st, Signer: key},
		pub: key.Public().(ed25519.PublicKey), org: fixture.NewOrg(t, st, kr, "acme"),
	}
}

func (e *compileEnv) compile(t *testing.T) (*bundle.Signed, *bundle.Body) {
	t.Helper()
	s, err := e.compiler.Compile(context.Background(), e.org.ID)
	if err != nil {
		t.Fatal(err)
	}
	body, err := bundle.Verify(*s, e.pub)
	if err != nil {
		t.Fatalf("a compiled bundle does not verify: %v", err)
	}
	return s, body
}

func TestCompileCarriesWhatTheDataPlaneNeeds(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		e := newCompileEnv(t, db)
		o := e.org
		ws, other := o.Workspace("main"), o.Workspace("side")
		alice, bob := o.Member(auth.MembershipActive), o.Member(auth.MembershipActive)
		suspended, removed := o.Member(auth.MembershipActive), o.Member(auth.MembershipActive)
		expiry := time.Date(2030, 1, 2, 3, 4, 5, 0, time.FixedZone("CET", 3600))

		_, active := o.Key(ws, alice, nil)
		_, expiring := o.Key(other, bob, &expiry)
		_, revoked := o.Key(ws, alice, nil)
		o.RevokeKey(revoked)
		_, ofSuspended := o.Key(ws, suspended, nil)
		o.SetMemberStatus(suspended, auth.MembershipSuspended)
		_, ofRemoved := o.Key(ws, removed, nil)
		if err := e.st.DeleteMembership(ctx, o.ID, removed); err != nil {
			t.Fatal(err)
		}

		enabled := o.Policy(ws, "openai only", true, wsPolicy)
		o.Policy(ws, "disabled", false, denyAllRules)

		platform := fixture.PlatformCredential(t, e.st, o.KR, "anthropic")
		orgCred := o.OrgCredential("openai")
		wsCred := o.WorkspaceCredential(other, "google")
		// Another organization's credentials never reach this bundle.
		stranger := fixture.NewOrg(t, e.st, o.KR, "stranger")
		stranger.OrgCredential("openai")
		stranger.WorkspaceCredential(stranger.Workspace("theirs"), "openai")

		s, body := e.compile(t)
		if s.OrgID != o.ID || s.Version != 1 || body.Version != 1 || body.Format != bundle.Format {
			t.Fatalf("envelope %s v%d, body v%d format %d", s.OrgID, s.Version, body.Version, body.Format)
		}

		if got := ids(body.Workspaces, func(w bundle.Workspace) uuid.UUID { return w.ID }); !sameSet(got, ws, other) {
			t.Errorf("workspaces %v", got)
		}
		if got := ids(body.Keys, func(k bundle.Key) uuid.UUID { return k.ID }); !sameSet(got, active, expiring) {
			t.Errorf("keys %v: want only the active and the expiring key (not revoked %s, suspended %s, removed %s)", got, revoked, ofSuspended, ofRemoved)
		}
		for _, k := range body.Keys {
			if k.ID == expiring && (k.ExpiresAt == nil || !k.ExpiresAt.Equal(expiry) || k.ExpiresAt.Location() != time.UTC) {
				t.Errorf("expires_at %v, want %v in UTC", k.ExpiresAt, expiry)
			}
			if k.ID == active && (k.OwnerID != alice || k.WorkspaceID != ws || k.ExpiresAt != nil || len(k.TokenHash) != 64) {
				t.Errorf("key %+v", k)
			}
		}
		if len(body.Policies) != 1 || body.Policies[0].ID != enabled || body.Policies[0].Name != "openai only" {
			t.Fatalf("policies %+v: want only the enabled one", body.Policies)
		}
		if got, _ := body.Policies[0].Definition.MarshalJSON(); string(got) != wsPolicy {
			t.Errorf("definition %s, want %s", got, wsPolicy)
		}

		wantScope := map[uuid.UUID]policy.CredentialScope{platform: policy.ScopePlatform, orgCred: policy.ScopeOrg, wsCred: policy.ScopeWorkspace}
		if len(body.Credentials) != len(wantScope) {
			t.Fatalf("credentials %+v", body.Credentials)
		}
		for _, c := range body.Credentials {
			row, err := e.st.GetProviderCredential(ctx, c.ID)
			if err != nil {
				t.Fatal(err)
			}
			if c.Scope != wantScope[c.ID] || c.SecretSealed != row.SecretSealed || c.Provider != row.Provider {
				t.Errorf("credential %+v, stored %+v", c, row)
			}
			if (c.Scope == policy.ScopeWorkspace) != (c.WorkspaceID != nil) {
				t.Errorf("credential %s of scope %s has workspace %v", c.ID, c.Scope, c.WorkspaceID)
			}
		}

		rows, err := catalogdb.LoadRows(ctx, e.st)
		if err != nil {
			t.Fatal(err)
		}
		active2, err := rows.Active()
		if err != nil {
			t.Fatal(err)
		}
		if len(body.Catalog.Models) != len(active2.Models) || len(body.Catalog.Providers) != len(active2.Providers) {
			t.Errorf("catalog has %d models, %d providers; want %d, %d", len(body.Catalog.Models), len(body.Catalog.Providers), len(active2.Models), len(active2.Providers))
		}

		stored, err := e.st.GetBundle(ctx, o.ID)
		if err != nil {
			t.Fatal(err)
		}
		if stored.Hash != s.Hash || stored.Version != 1 {
			t.Fatalf("stored bundle v%d %s, returned %s", stored.Version, stored.Hash, s.Hash)
		}
		for _, list := range [][]uuid.UUID{
			ids(body.Workspaces, func(w bundle.Workspace) uuid.UUID { return w.ID }),
			ids(body.Keys, func(k bundle.Key) uuid.UUID { return k.ID }),
			ids(body.Credentials, func(c bundle.Credential) uuid.UUID { return c.ID }),
		} {
			if !slices.IsSortedFunc(list, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) }) {
				t.Errorf("list not sorted by id: %v", list)
			}
		}
	})
}

func TestCompileBumpsTheVersionOnlyOnChange(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newCompileEnv(t, db)
		o := e.org
		ws := o.Workspace("main")
		alice, bob := o.Member(auth.MembershipActive), o.Member(auth.MembershipActive)
		_, key := o.Key(ws, alice, nil)
		o.Key(ws, bob, nil)

		first, _ := e.compile(t)
		again, _ := e.compile(t)
		if again.Version != 1 || again.Hash != first.Hash || string(again.Body) != string(first.Body) {
			t.Fatalf("recompiling unchanged content gave v%d %s, want v1 %s", again.Version, again.Hash, first.Hash)
		}

		steps := []struct {
			name   string
			change func()
		}{
			{"policy added", func() { o.Policy(ws, "p", true, wsPolicy) }},
			{"key revoked", func() { o.RevokeKey(key) }},
			{"credential added", func() { o.OrgCredential("openai") }},
			{"member suspended", func() { o.SetMemberStatus(bob, auth.MembershipSuspended) }},
		}
		version := int64(1)
		for _, step := range steps {
			step.change()
			s, body := e.compile(t)
			version++
			if s.Version != version || body.Version != version {
				t.Fatalf("after %s: v%d, want v%d", step.name, s.Version, version)
			}
			if same, _ := e.compile(t); same.Version != version || same.Hash != s.Hash {
				t.Fatalf("after %s, recompiling moved to v%d", step.name, same.Version)
			}
		}

		// A disabled policy is absent: disabling one changes the bundle,
		// and the content then equals a bundle without it.
		p := o.Policy(ws, "closed", true, denyAllRules)
		withPolicy, _ := e.compile(t)
		o.SetPolicyEnabled(ws, p, false)
		without, body := e.compile(t)
		if without.Version != withPolicy.Version+1 || slices.ContainsFunc(body.Policies, func(x bundle.Policy) bool { return x.ID == p }) {
			t.Fatalf("disabling a policy: v%d (from v%d), policies %+v", without.Version, withPolicy.Version, body.Policies)
		}
	})
}

func TestConcurrentCompilesAgree(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newCompileEnv(t, db)
		ws := e.org.Workspace("main")
		e.org.Key(ws, e.org.Member(auth.MembershipActive), nil)
		e.compile(t)
		e.org.Policy(ws, "p", true, wsPolicy)

		results := make([]*bundle.Signed, 4)
		var wg sync.WaitGroup
		for i := range results {
			wg.Go(func() {
				s, err := e.compiler.Compile(context.Background(), e.org.ID)
				if err != nil {
					t.Error(err)
				}
				results[i] = s
			})
		}
		wg.Wait()
		for _, s := range results {
			if s == nil || s.Version != 2 || s.Hash != results[0].Hash {
				t.Fatalf("concurrent compiles of one change disagree: %+v", results)
			}
		}
	})
}

func TestCompileUnknownOrganization(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newCompileEnv(t, db)
		if _, err := e.compiler.Compile(context.Background(), uuid.New()); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("got %v, want ErrNotFound", err)
		}
	})
}

func ids[T any](items []T, id func(T) uuid.UUID) []uuid.UUID {
	out := make([]uuid.UUID, len(items))
	for i, it := range items {
		out[i] = id(it)
	}
	return out
}

func sameSet(got []uuid.UUID, want ...uuid.UUID) bool {
	if len(got) != len(want) {
		return false
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			return false
		}
	}
	return true
}
