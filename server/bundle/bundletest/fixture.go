// Package bundletest builds organizations for the tests and benchmarks of
// bundles and the data plane: rows written straight through the store, as
// the management API would leave them, and synthetic bundles at scale.
package bundletest

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/catalogdb"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store"
)

// Keyring returns a fresh keyring for sealing test secrets.
func Keyring(t testing.TB) *secrets.Keyring {
	t.Helper()
	k, err := secrets.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return secrets.NewKeyring(k)
}

// SeedCatalog loads the embedded default catalog into an empty database.
func SeedCatalog(t testing.TB, st *store.Store) {
	t.Helper()
	if err := catalogdb.Seed(context.Background(), st); err != nil {
		t.Fatal(err)
	}
}

// Org is an organization whose rows a test creates one by one.
type Org struct {
	t  testing.TB
	St *store.Store
	KR *secrets.Keyring
	ID uuid.UUID
}

// NewOrg creates an organization with the given slug.
func NewOrg(t testing.TB, st *store.Store, kr *secrets.Keyring, slug string) *Org {
	t.Helper()
	now := store.Now()
	o := &store.Organization{ID: uuid.New(), Name: slug, Slug: slug, CreatedAt: now, UpdatedAt: now}
	must(t, st.CreateOrganization(context.Background(), o))
	return &Org{t: t, St: st, KR: kr, ID: o.ID}
}

// Workspace creates a workspace and returns its id.
func (o *Org) Workspace(slug string) uuid.UUID {
	o.t.Helper()
	now := store.Now()
	w := &store.Workspace{ID: uuid.New(), OrgID: o.ID, Name: "Workspace " + slug, Slug: slug, CreatedAt: now, UpdatedAt: now}
	must(o.t, o.St.CreateWorkspace(context.Background(), w))
	return w.ID
}

// Member creates a user with a membership of the given status
// (auth.MembershipActive, auth.MembershipSuspended, ...).
func (o *Org) Member(status string) uuid.UUID {
	o.t.Helper()
	ctx, now := context.Background(), store.Now()
	u := &store.User{ID: uuid.New(), Email: uuid.NewString() + "@example.test", Name: "member", InstanceRole: auth.InstanceMember, CreatedAt: now, UpdatedAt: now}
	must(o.t, o.St.CreateUser(ctx, u))
	m := &store.Membership{OrgID: o.ID, UserID: u.ID, Role: auth.OrgMember, Status: status, CreatedAt: now, UpdatedAt: now}
	must(o.t, o.St.CreateMembership(ctx, m))
	return u.ID
}

// SetMemberStatus changes a member's status (to suspend one, say).
func (o *Org) SetMemberStatus(user uuid.UUID, status string) {
	o.t.Helper()
	ctx := context.Background()
	m, err := o.St.GetMembership(ctx, o.ID, user)
	must(o.t, err)
	m.Status, m.UpdatedAt = status, store.Now()
	must(o.t, o.St.UpdateMembership(ctx, m))
}

// Key creates an inference key in ws owned by owner and returns its token
// and id. expiresAt may be nil.
func (o *Org) Key(ws, owner uuid.UUID, expiresAt *time.Time) (token string, id uuid.UUID) {
	o.t.Helper()
	token, display, hash := auth.NewToken(auth.InferenceKeyPrefix)
	now := store.Now()
	k := &store.InferenceKey{
		ID: uuid.New(), OrgID: o.ID, WorkspaceID: ws, UserID: owner, Name: "key", Prefix: display,
		TokenHash: hash, ExpiresAt: expiresAt, CreatedAt: now, UpdatedAt: now,
	}
	must(o.t, o.St.CreateInferenceKey(context.Background(), k))
	return token, k.ID
}

// RevokeKey revokes an inference key.
func (o *Org) RevokeKey(id uuid.UUID) {
	o.t.Helper()
	_, err := o.St.RevokeInferenceKey(context.Background(), id, store.Now())
	must(o.t, err)
}

// Policy creates a policy from its definition's JSON, which must be valid:
// the API would have refused anything else.
func (o *Org) Policy(ws uuid.UUID, name string, enabled bool, definition string) uuid.UUID {
	o.t.Helper()
	def, err := policy.ParseDefinitionJSON([]byte(definition))
	must(o.t, err)
	canonical, err := def.MarshalJSON()
	must(o.t, err)
	now := store.Now()
	p := &store.Policy{
		ID: uuid.New(), OrgID: o.ID, WorkspaceID: ws, Name: name, Enabled: enabled,
		Definition: string(canonical), CreatedAt: now, UpdatedAt: now,
	}
	must(o.t, o.St.CreatePolicy(context.Background(), p))
	return p.ID
}

// SetPolicyEnabled enables or disables a policy.
func (o *Org) SetPolicyEnabled(ws, id uuid.UUID, enabled bool) {
	o.t.Helper()
	ctx := context.Background()
	p, err := o.St.GetPolicy(ctx, ws, id)
	must(o.t, err)
	p.Enabled, p.UpdatedAt = enabled, store.Now()
	must(o.t, o.St.UpdatePolicy(ctx, p))
}

// OrgCredential creates an organization-scope credential for provider.
func (o *Org) OrgCredential(provider string) uuid.UUID {
	o.t.Helper()
	return createCredential(o.t, o.St, o.KR, &o.ID, nil, provider)
}

// WorkspaceCredential creates a credential of workspace ws for provider.
func (o *Org) WorkspaceCredential(ws uuid.UUID, provider string) uuid.UUID {
	o.t.Helper()
	return createCredential(o.t, o.St, o.KR, &o.ID, &ws, provider)
}

// PlatformCredential creates a platform credential (no organization), which
// every organization may use.
func PlatformCredential(t testing.TB, st *store.Store, kr *secrets.Keyring, provider string) uuid.UUID {
	t.Helper()
	return createCredential(t, st, kr, nil, nil, provider)
}

func createCredential(t testing.TB, st *store.Store, kr *secrets.Keyring, org, ws *uuid.UUID, provider string) uuid.UUID {
	t.Helper()
	id := uuid.New()
	sealed, err := kr.Seal([]byte("sk-upstream-"+provider), "provider_credential:"+id.String())
	must(t, err)
	now := store.Now()
	c := &store.ProviderCredential{
		ID: id, OrgID: org, WorkspaceID: ws, Provider: provider, Label: provider,
		SecretSealed: sealed, SecretHint: "…" + provider, CreatedAt: now, UpdatedAt: now,
	}
	must(t, st.CreateProviderCredential(context.Background(), c))
	return id
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
