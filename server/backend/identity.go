package backend

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/store"
)

// IdentitySealer seals an identity provider's client secret, bound to the
// provider's id (the keyring of the control plane, as for credentials).
type IdentitySealer func(secret []byte, providerID uuid.UUID) (string, error)

// IdentityProviderInput is a provider's settings, all of them (create) or
// what is set (update: nil members stay). Discovery is the document the
// API fetched and checked when the issuer was given.
type IdentityProviderInput struct {
	Name                string
	Issuer              *string
	ClientID            *string
	ClientSecret        *string
	ClearSecret         bool
	Scopes              []string
	ClaimEmail          *string
	ClaimName           *string
	ClaimGroups         *string
	AllowedEmailDomains []string
	DomainsSet          bool
	JIT                 *bool
	GroupMappings       []store.GroupMapping
	MappingsSet         bool
	Discovery           *string
	Seal                IdentitySealer
}

// CreateIdentityProvider stores an OpenID provider with its client secret
// sealed, and audits it (never the secret).
func CreateIdentityProvider(ctx context.Context, st *store.Store, actor Actor, in IdentityProviderInput) (*store.IdentityProvider, error) {
	now := store.Now()
	p := &store.IdentityProvider{ID: uuid.New(), Name: in.Name, Kind: "oidc", Scopes: store.Strings{}, AllowedEmailDomains: store.Strings{},
		ClaimEmail: "email", ClaimName: "name", ClaimGroups: "groups", JIT: true, GroupMappings: "[]", CreatedAt: now, UpdatedAt: now}
	if err := applyIdentityProvider(p, in); err != nil {
		return nil, err
	}
	err := st.InTx(ctx, func(tx *store.Store) error {
		if err := tx.CreateIdentityProvider(ctx, p); errors.Is(err, store.ErrConflict) {
			return errorf(Conflict, "an identity provider named %q exists", p.Name)
		} else if err != nil {
			return err
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "identity_provider.created", TargetType: "identity_provider", TargetID: p.ID.String(),
			Details: identityDetails(p)})
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// UpdateIdentityProvider changes what in sets of the provider name.
func UpdateIdentityProvider(ctx context.Context, st *store.Store, actor Actor, name string, in IdentityProviderInput) (*store.IdentityProvider, error) {
	var out *store.IdentityProvider
	err := st.InTx(ctx, func(tx *store.Store) error {
		p, err := IdentityProviderNamed(ctx, tx, name)
		if err != nil {
			return err
		}
		before := identityDetails(p)
		if err := applyIdentityProvider(p, in); err != nil {
			return err
		}
		p.UpdatedAt = store.Now()
		if err := tx.UpdateIdentityProvider(ctx, p); err != nil {
			return err
		}
		out = p
		return Audit(ctx, tx, actor, AuditEntry{Action: "identity_provider.updated", TargetType: "identity_provider", TargetID: p.ID.String(),
			Details: map[string]any{"before": before, "after": identityDetails(p), "secret_changed": in.ClientSecret != nil || in.ClearSecret}})
	})
	return out, err
}

// DeleteIdentityProvider deletes a provider no organization requires; the
// accounts that signed in through it stay, and so do their memberships.
func DeleteIdentityProvider(ctx context.Context, st *store.Store, actor Actor, name string) (*store.IdentityProvider, error) {
	var out *store.IdentityProvider
	err := st.InTx(ctx, func(tx *store.Store) error {
		p, err := IdentityProviderNamed(ctx, tx, name)
		if err != nil {
			return err
		}
		orgs, err := tx.OrganizationsRequiringSSO(ctx)
		if err != nil {
			return err
		}
		for _, o := range orgs {
			for _, n := range o.RequireSSO {
				if n == p.Name {
					return errorf(Conflict, "organization %s requires sign-in through %q: change its require_sso first", o.Slug, p.Name)
				}
			}
		}
		if err := tx.DeleteIdentityProvider(ctx, p.ID); err != nil {
			return err
		}
		out = p
		return Audit(ctx, tx, actor, AuditEntry{Action: "identity_provider.deleted", TargetType: "identity_provider", TargetID: p.ID.String(),
			Details: map[string]any{"name": p.Name, "issuer": p.Issuer}})
	})
	return out, err
}

// IdentityProviderNamed is the provider name, or NotFound.
func IdentityProviderNamed(ctx context.Context, st *store.Store, name string) (*store.IdentityProvider, error) {
	p, err := st.GetIdentityProviderByName(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errorf(NotFound, "identity provider %q not found", name)
	}
	return p, err
}

func applyIdentityProvider(p *store.IdentityProvider, in IdentityProviderInput) error {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&p.Issuer, in.Issuer)
	set(&p.ClientID, in.ClientID)
	set(&p.ClaimEmail, in.ClaimEmail)
	set(&p.ClaimName, in.ClaimName)
	set(&p.ClaimGroups, in.ClaimGroups)
	set(&p.Discovery, in.Discovery)
	if in.Scopes != nil {
		p.Scopes = in.Scopes
	}
	if in.DomainsSet {
		p.AllowedEmailDomains = in.AllowedEmailDomains
	}
	if in.JIT != nil {
		p.JIT = *in.JIT
	}
	if in.MappingsSet {
		b, err := json.Marshal(in.GroupMappings)
		if err != nil {
			return err
		}
		p.GroupMappings = string(b)
	}
	switch {
	case in.ClearSecret:
		p.ClientSecretSealed, p.SecretHint = nil, nil
	case in.ClientSecret != nil:
		sealed, err := in.Seal([]byte(*in.ClientSecret), p.ID)
		if err != nil {
			return err
		}
		hint := SecretHint(*in.ClientSecret)
		p.ClientSecretSealed, p.SecretHint = &sealed, &hint
	}
	return nil
}

// GroupMappings reads a provider's mappings.
func GroupMappings(p *store.IdentityProvider) []store.GroupMapping {
	var out []store.GroupMapping
	_ = json.Unmarshal([]byte(p.GroupMappings), &out)
	return out
}

func identityDetails(p *store.IdentityProvider) map[string]any {
	return map[string]any{"name": p.Name, "issuer": p.Issuer, "client_id": p.ClientID, "scopes": []string(p.Scopes),
		"claims":                map[string]any{"email": p.ClaimEmail, "name": p.ClaimName, "groups": p.ClaimGroups},
		"allowed_email_domains": []string(p.AllowedEmailDomains), "jit": p.JIT, "group_mappings": GroupMappings(p)}
}

// Grant is one membership group mappings give: of an organization
// (WorkspaceID nil) or a workspace.
type Grant struct {
	OrgID       uuid.UUID
	WorkspaceID *uuid.UUID
	Role        string
}

func (g Grant) key() string {
	if g.WorkspaceID == nil {
		return g.OrgID.String()
	}
	return g.OrgID.String() + "/" + g.WorkspaceID.String()
}

// DesiredGrants is what the mappings give someone in groups: for each
// organization and workspace, the role of the first mapping (in the
// provider's order) whose group they are in. Group names compare exactly.
// A pure function.
func DesiredGrants(mappings []store.GroupMapping, groups []string) []Grant {
	in := map[string]bool{}
	for _, g := range groups {
		in[g] = true
	}
	seen := map[string]bool{}
	var out []Grant
	add := func(g Grant) {
		if !seen[g.key()] {
			seen[g.key()] = true
			out = append(out, g)
		}
	}
	for _, m := range mappings {
		if !in[m.Group] {
			continue
		}
		add(Grant{OrgID: m.OrgID, Role: m.Role})
		for _, w := range m.Workspaces {
			ws := w.WorkspaceID
			add(Grant{OrgID: m.OrgID, WorkspaceID: &ws, Role: w.Role})
		}
	}
	return out
}

// SSOSignIn is a person the relying party let in: the provider, who the
// ID token says they are, and where the session comes from.
type SSOSignIn struct {
	Provider *store.IdentityProvider
	Subject  string
	Email    string
	Name     string
	Groups   []string
	From     SessionStart
}

// SSOResult is a completed sign-in: the account (Created on its first),
// the session and its token (once), what the mappings changed.
type SSOResult struct {
	User            *store.User
	Created         bool
	Session         *store.Session
	Token           string
	Added, Removed  []string
	Changed         []string
	InstanceRoleNow string
}

// CompleteSSOSignIn signs a person in through a provider, in one
// transaction: the account linked to the subject, or the one with the
// email (linked now), or a new one when the provider has jit; the group
// mappings applied (adding, changing and removing only memberships the
// mappings made); a browser session; the audit entry. A disabled account,
// or none without jit, is refused (Forbidden).
func CompleteSSOSignIn(ctx context.Context, st *store.Store, requestID string, in SSOSignIn) (*SSOResult, error) {
	res := &SSOResult{}
	p := in.Provider
	err := st.InTx(ctx, func(tx *store.Store) error {
		now := store.Now()
		u, created, err := ssoAccount(ctx, tx, in, now)
		if err != nil {
			return err
		}
		res.User, res.Created = u, created
		if err := tx.UpsertUserIdentity(ctx, &store.UserIdentity{ProviderID: p.ID, Subject: in.Subject, UserID: u.ID, Email: in.Email,
			Groups: store.Strings(in.Groups), CreatedAt: now, LastSignedIn: now}); err != nil {
			return err
		}
		actor := User(u.ID, false, nil, requestID)
		if created {
			if err := Audit(ctx, tx, actor, AuditEntry{Action: "user.created_by_sso", TargetType: "user", TargetID: u.ID.String(),
				Details: map[string]any{"email": u.Email, "identity_provider": p.Name}}); err != nil {
				return err
			}
		}
		if err := applyMappings(ctx, tx, actor, p, u.ID, in.Groups, res, now); err != nil {
			return err
		}
		if res.Session, res.Token, err = StartSession(ctx, tx, u.ID, in.From); err != nil {
			return err
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "user.signed_in_sso", TargetType: "user", TargetID: u.ID.String(),
			Details: map[string]any{"identity_provider": p.Name, "subject": in.Subject, "email": in.Email, "groups": in.Groups,
				"memberships_added": res.Added, "memberships_changed": res.Changed, "memberships_removed": res.Removed}})
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func ssoAccount(ctx context.Context, tx *store.Store, in SSOSignIn, now time.Time) (*store.User, bool, error) {
	var u *store.User
	link, err := tx.GetUserIdentity(ctx, in.Provider.ID, in.Subject)
	switch {
	case err == nil:
		u, err = tx.GetUser(ctx, link.UserID)
	case errors.Is(err, store.ErrNotFound):
		u, err = tx.GetUserByEmail(ctx, in.Email)
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		if !in.Provider.JIT {
			return nil, false, errorf(Forbidden, "%s has no account on this gw and %q does not create accounts (jit is off): ask an administrator to invite you",
				in.Email, in.Provider.Name)
		}
		name := in.Name
		if name == "" {
			name = in.Email
		}
		u = &store.User{ID: uuid.New(), Email: in.Email, Name: name, InstanceRole: auth.InstanceMember, CreatedAt: now, UpdatedAt: now}
		if err := tx.CreateUser(ctx, u); err != nil {
			return nil, false, err
		}
		return u, true, nil
	case err != nil:
		return nil, false, err
	}
	if u.ServiceAccount || u.DeletedAt != nil {
		return nil, false, errorf(Forbidden, "the account of %s cannot sign in", in.Email)
	}
	if u.DisabledAt != nil {
		return nil, false, errorf(Forbidden, "the account of %s is disabled", u.Email)
	}
	return u, false, nil
}

// applyMappings brings the memberships the provider's mappings made for
// the user in line with the groups: new ones are made (unless one exists,
// made by hand: it is left as it is), changed roles follow the mapping,
// and those no longer mapped are removed. An organization's last active
// owner is never removed or demoted this way.
func applyMappings(ctx context.Context, tx *store.Store, actor Actor, p *store.IdentityProvider, userID uuid.UUID, groups []string, res *SSOResult, now time.Time) error {
	existing, err := tx.ListSSOGrants(ctx, p.ID, userID)
	if err != nil {
		return err
	}
	recorded := make([]recordedGrant, len(existing))
	for i, g := range existing {
		recorded[i] = recordedGrant{ID: g.ID, Grant: Grant{OrgID: g.OrgID, WorkspaceID: g.WorkspaceID, Role: g.Role}}
	}
	changes, err := reconcileGrants(ctx, tx, userID, DesiredGrants(GroupMappings(p), groups), recorded, grantLedger{
		create: func(g Grant) error {
			return tx.CreateSSOGrant(ctx, &store.SSOGrant{ID: uuid.New(), ProviderID: p.ID, UserID: userID, OrgID: g.OrgID,
				WorkspaceID: g.WorkspaceID, Role: g.Role, CreatedAt: now})
		},
		updateRole: func(id uuid.UUID, role string) error { return tx.UpdateSSOGrantRole(ctx, id, role) },
		remove:     func(id uuid.UUID) error { return tx.DeleteSSOGrant(ctx, id) },
		audit:      func(action string, g Grant) error { return auditGrant(ctx, tx, actor, action, g, userID, p.Name) },
	}, now)
	res.Added = append(res.Added, changes.Added...)
	res.Changed = append(res.Changed, changes.Changed...)
	res.Removed = append(res.Removed, changes.Removed...)
	return err
}

func auditGrant(ctx context.Context, tx *store.Store, actor Actor, action string, g Grant, userID uuid.UUID, provider string) error {
	if g.WorkspaceID != nil && !strings.HasPrefix(action, "workspace_") {
		action = "workspace_" + action
	}
	return Audit(ctx, tx, actor, AuditEntry{Action: action, TargetType: "user", TargetID: userID.String(), OrgID: &g.OrgID,
		WorkspaceID: g.WorkspaceID, Details: map[string]any{"role": g.Role, "by": "group_mapping", "identity_provider": provider}})
}

// makeGranted makes the membership g names unless one exists; made says
// whether it did. A workspace membership needs an active membership of
// its organization.
func makeGranted(ctx context.Context, tx *store.Store, g Grant, userID uuid.UUID, now time.Time) (bool, error) {
	// Look first: on PostgreSQL a refused insert (the membership exists,
	// made by hand) aborts the whole transaction.
	if exists, err := grantedExists(ctx, tx, g, userID); err != nil || exists {
		return false, err
	}
	if g.WorkspaceID == nil {
		m := store.Membership{OrgID: g.OrgID, UserID: userID, Role: g.Role, Status: auth.MembershipActive, CreatedAt: now, UpdatedAt: now}
		err := tx.CreateMembership(ctx, &m)
		if errors.Is(err, store.ErrConflict) {
			return false, nil
		}
		return err == nil, err
	}
	m, err := tx.GetMembership(ctx, g.OrgID, userID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && m.Status != auth.MembershipActive) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	wm := store.WorkspaceMember{WorkspaceID: *g.WorkspaceID, UserID: userID, Role: g.Role, CreatedAt: now, UpdatedAt: now}
	err = tx.AddWorkspaceMember(ctx, &wm)
	if errors.Is(err, store.ErrConflict) {
		return false, nil
	}
	return err == nil, err
}

func grantedExists(ctx context.Context, tx *store.Store, g Grant, userID uuid.UUID) (bool, error) {
	var err error
	if g.WorkspaceID == nil {
		_, err = tx.GetMembership(ctx, g.OrgID, userID)
	} else {
		_, err = tx.GetWorkspaceMember(ctx, *g.WorkspaceID, userID)
	}
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

func changeGranted(ctx context.Context, tx *store.Store, g Grant, userID uuid.UUID, oldRole string, now time.Time) error {
	if g.WorkspaceID != nil {
		err := tx.UpdateWorkspaceMember(ctx, *g.WorkspaceID, userID, g.Role, now)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return err
	}
	m, err := tx.GetMembership(ctx, g.OrgID, userID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if oldRole == auth.OrgOwner && g.Role != auth.OrgOwner && lastOwner(ctx, tx, m) {
		return nil
	}
	m.Role, m.UpdatedAt = g.Role, now
	return tx.UpdateMembership(ctx, m)
}

func removeGranted(ctx context.Context, tx *store.Store, g Grant, userID uuid.UUID) error {
	if g.WorkspaceID != nil {
		err := tx.DeleteWorkspaceMember(ctx, *g.WorkspaceID, userID)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return err
	}
	m, err := tx.GetMembership(ctx, g.OrgID, userID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if lastOwner(ctx, tx, m) {
		return nil
	}
	return tx.DeleteMembership(ctx, g.OrgID, userID)
}

func lastOwner(ctx context.Context, tx *store.Store, m *store.Membership) bool {
	if m.Role != auth.OrgOwner || m.Status != auth.MembershipActive {
		return false
	}
	n, err := tx.CountOrgOwners(ctx, m.OrgID)
	return err != nil || n <= 1
}

// SignInRefused records a refused sign-in: through a provider (who, as
// far as known, and why) or a password refused by an organization's
// require_sso. It is its own transaction: nothing else commits.
func SignInRefused(ctx context.Context, st *store.Store, requestID string, userID *uuid.UUID, details map[string]any) error {
	actor := Actor{Type: "system", RequestID: requestID}
	target := ""
	if userID != nil {
		actor = User(*userID, false, nil, requestID)
		target = userID.String()
	}
	return st.InTx(ctx, func(tx *store.Store) error {
		return Audit(ctx, tx, actor, AuditEntry{Action: "auth.sign_in_refused", TargetType: "user", TargetID: target, Details: details})
	})
}

// RequiredSSO is the providers some organization of the user's (an active
// membership) requires, and that organization's slug; none, password
// sign-in is allowed.
func RequiredSSO(ctx context.Context, st *store.Store, userID uuid.UUID) (providers []string, orgSlug string, err error) {
	ms, err := st.ListUserMemberships(ctx, userID)
	if err != nil {
		return nil, "", err
	}
	for _, m := range ms {
		if m.Status != auth.MembershipActive {
			continue
		}
		o, err := st.GetOrganization(ctx, m.OrgID)
		if err != nil {
			return nil, "", err
		}
		if len(o.RequireSSO) > 0 {
			return o.RequireSSO, o.Slug, nil
		}
	}
	return nil, "", nil
}

// BreakGlassSignIn records an instance owner's password sign-in past an
// organization's require_sso.
func BreakGlassSignIn(ctx context.Context, st *store.Store, requestID string, userID uuid.UUID, org string, providers []string) error {
	return st.InTx(ctx, func(tx *store.Store) error {
		return Audit(ctx, tx, User(userID, false, nil, requestID), AuditEntry{Action: "auth.break_glass_sign_in", TargetType: "user",
			TargetID: userID.String(), Details: map[string]any{"organization": org, "require_sso": providers}})
	})
}
