package backend

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/store"
)

// gw as an OAuth 2.1 authorization server (issue 31, part 3;
// docs/identity.md): registered clients, a person's consent (a grant and
// its code), the code's redemption and the refresh tokens' rotation, and
// revocation. The protocol's checks that need no store (PKCE's hash, the
// resource's form, the client's document) are the caller's (server/oauth).

// OAuth token prefixes: a registered client's id and secret, a code, a
// refresh token (the access token, signed, is server/oauth's).
const (
	OAuthClientIDPrefix     = "gwc_"
	OAuthClientSecretPrefix = "gwcs_"
	OAuthCodePrefix         = "gwo_ac_"
	OAuthRefreshPrefix      = "gwo_rt_"
)

// Lifetimes of codes and refresh tokens.
const (
	OAuthCodeTTL    = time.Minute
	OAuthRefreshTTL = store.OAuthRefreshTTL
)

// OAuthRefusal is an OAuth error (RFC 6749 §5.2): Code is invalid_grant,
// invalid_client, invalid_request…, Description says why.
type OAuthRefusal struct {
	Code, Description string
}

func (e *OAuthRefusal) Error() string { return e.Code + ": " + e.Description }

func oauthRefused(code, description string) *OAuthRefusal {
	return &OAuthRefusal{Code: code, Description: description}
}

// OAuthClientInput registers a client: its name, its redirect URIs (each
// checked by the caller), and whether it is confidential (gets a secret).
type OAuthClientInput struct {
	Name         string
	RedirectURIs []string
	Confidential bool
}

// RegisterOAuthClient registers a client with a generated client_id (and
// secret, returned once, for a confidential one), audited.
func RegisterOAuthClient(ctx context.Context, st *store.Store, actor Actor, in OAuthClientInput) (*store.OAuthClient, string, error) {
	id, _, _ := auth.NewToken(OAuthClientIDPrefix)
	c := &store.OAuthClient{ID: uuid.New(), ClientID: id[:len(OAuthClientIDPrefix)+16], Name: in.Name, RedirectURIs: store.Strings(in.RedirectURIs),
		CreatedBy: actor.UserID, CreatedAt: store.Now()}
	var secret string
	if in.Confidential {
		var hash string
		secret, _, hash = auth.NewToken(OAuthClientSecretPrefix)
		c.SecretHash = &hash
	}
	err := st.InTx(ctx, func(tx *store.Store) error {
		if err := tx.CreateOAuthClient(ctx, c); err != nil {
			return err
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "oauth_client.registered", TargetType: "oauth_client", TargetID: c.ClientID,
			Details: map[string]any{"name": c.Name, "redirect_uris": in.RedirectURIs, "confidential": in.Confidential}})
	})
	if err != nil {
		return nil, "", err
	}
	return c, secret, nil
}

// DeleteOAuthClient deletes a registered client and revokes every grant
// it holds, audited.
func DeleteOAuthClient(ctx context.Context, st *store.Store, actor Actor, clientID string) (*store.OAuthClient, error) {
	var out *store.OAuthClient
	err := st.InTx(ctx, func(tx *store.Store) error {
		c, err := tx.GetOAuthClient(ctx, clientID)
		if errors.Is(err, store.ErrNotFound) {
			return errorf(NotFound, "OAuth client %q not found", clientID)
		} else if err != nil {
			return err
		}
		if err := tx.DeleteOAuthClient(ctx, clientID); err != nil {
			return err
		}
		n, err := tx.RevokeOAuthClientGrants(ctx, clientID, "client deleted", store.Now())
		if err != nil {
			return err
		}
		out = c
		return Audit(ctx, tx, actor, AuditEntry{Action: "oauth_client.deleted", TargetType: "oauth_client", TargetID: c.ClientID,
			Details: map[string]any{"name": c.Name, "grants_revoked": n}})
	})
	return out, err
}

// OAuthClientAuth checks a registered client's credentials at the token
// endpoint: a public client sends none; a confidential one its secret
// (client_secret_basic). An unknown client, or a wrong or missing
// secret, is invalid_client.
func OAuthClientAuth(ctx context.Context, st *store.Store, clientID, secret string, sent bool) (*store.OAuthClient, error) {
	c, err := st.GetOAuthClient(ctx, clientID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, oauthRefused("invalid_client", "unknown client_id")
	} else if err != nil {
		return nil, err
	}
	switch {
	case c.SecretHash == nil && sent:
		return nil, oauthRefused("invalid_client", "this client is public: it authenticates with no secret")
	case c.SecretHash != nil && (!sent || auth.HashToken(secret) != *c.SecretHash):
		return nil, oauthRefused("invalid_client", "client authentication failed")
	}
	return c, nil
}

// OAuthWorkspace is a workspace a person may grant a client access to.
type OAuthWorkspace struct {
	Org       store.Organization
	Workspace store.Workspace
}

// OAuthWorkspaces are the workspaces where the person may issue their own
// inference key (inference_keys.manage there): those a grant may name.
func OAuthWorkspaces(ctx context.Context, st *store.Store, user *store.User) ([]OAuthWorkspace, error) {
	ms, err := st.ListUserMemberships(ctx, user.ID)
	if err != nil {
		return nil, err
	}
	var out []OAuthWorkspace
	for _, m := range ms {
		if m.Status != auth.MembershipActive {
			continue
		}
		org, err := st.GetOrganization(ctx, m.OrgID)
		if err != nil {
			return nil, err
		}
		wss, err := st.ListWorkspaces(ctx, store.WorkspaceFilter{OrgID: m.OrgID})
		if err != nil {
			return nil, err
		}
		for _, ws := range wss {
			ok, err := mayGrantIn(ctx, st, user, m.Role, ws.ID)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, OAuthWorkspace{Org: *org, Workspace: ws})
			}
		}
	}
	return out, nil
}

// mayGrantIn says whether the person, of org role orgRole, holds
// inference_keys.manage in the workspace.
func mayGrantIn(ctx context.Context, st *store.Store, user *store.User, orgRole string, wsID uuid.UUID) (bool, error) {
	facts := auth.RoleFacts{InstanceRole: user.InstanceRole, OrgRole: orgRole}
	if wm, err := st.GetWorkspaceMember(ctx, wsID, user.ID); err == nil {
		facts.WorkspaceRole = wm.Role
	} else if !errors.Is(err, store.ErrNotFound) {
		return false, err
	}
	return auth.RoleRights(facts, auth.LevelWorkspace).Has(auth.InferenceKeysManage), nil
}

// OAuthConsent is a person's approval on the consent page.
type OAuthConsent struct {
	User        *store.User
	WorkspaceID uuid.UUID
	ClientID    string
	ClientName  string
	RedirectURI string
	Challenge   string
	Resource    string
	RequestID   string
}

// ConsentOAuth records the person's consent: a grant in the workspace they
// picked (where they must hold inference_keys.manage, as for a key of
// their own) and its authorization code, returned once. Audited.
func ConsentOAuth(ctx context.Context, st *store.Store, in OAuthConsent) (*store.OAuthGrant, string, error) {
	now := store.Now()
	code, _, hash := auth.NewToken(OAuthCodePrefix)
	var grant *store.OAuthGrant
	actor := User(in.User.ID, false, nil, in.RequestID)
	err := st.InTx(ctx, func(tx *store.Store) error {
		ws, err := tx.GetWorkspace(ctx, in.WorkspaceID)
		if errors.Is(err, store.ErrNotFound) {
			return errorf(NotFound, "workspace not found")
		} else if err != nil {
			return err
		}
		u, err := tx.GetUser(ctx, in.User.ID)
		if err != nil {
			return err
		}
		if u.DisabledAt != nil {
			return errorf(Forbidden, "this account is disabled")
		}
		m, err := tx.GetMembership(ctx, ws.OrgID, u.ID)
		if errors.Is(err, store.ErrNotFound) || (err == nil && m.Status != auth.MembershipActive) {
			return errorf(NotFound, "workspace not found")
		} else if err != nil {
			return err
		}
		if ok, err := mayGrantIn(ctx, tx, u, m.Role, ws.ID); err != nil {
			return err
		} else if !ok {
			return errorf(Forbidden, "you may not issue inference keys in workspace %s, so you cannot grant a client access to it", ws.Slug)
		}
		grant = &store.OAuthGrant{ID: uuid.New(), OrgID: ws.OrgID, WorkspaceID: ws.ID, UserID: u.ID, ClientID: in.ClientID,
			ClientName: in.ClientName, Resource: in.Resource, Scope: "inference", CreatedAt: now}
		if err := tx.CreateOAuthGrant(ctx, grant); err != nil {
			return err
		}
		if err := tx.CreateOAuthCode(ctx, &store.OAuthCode{CodeHash: hash, GrantID: grant.ID, ClientID: in.ClientID,
			RedirectURI: in.RedirectURI, CodeChallenge: in.Challenge, ExpiresAt: now.Add(OAuthCodeTTL)}); err != nil {
			return err
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "oauth.grant_created", TargetType: "oauth_grant", TargetID: grant.ID.String(),
			OrgID: &ws.OrgID, WorkspaceID: &ws.ID,
			Details: map[string]any{"client_id": in.ClientID, "client_name": in.ClientName, "resource": in.Resource, "redirect_uri": in.RedirectURI}})
	})
	if err != nil {
		return nil, "", err
	}
	return grant, code, nil
}

// OAuthCodeRedemption is a token request of grant_type
// authorization_code. PKCE says whether the verifier matches a challenge
// (S256, checked by the caller's server/oauth).
type OAuthCodeRedemption struct {
	Code, ClientID, RedirectURI, Resource, RequestID string
	PKCE                                             func(challenge string) bool
}

// RedeemOAuthCode redeems a code once: the grant it was issued under and a
// new refresh token. A code presented again revokes its grant, and with it
// every token issued from it (OAuth 2.1 §4.1.3). Refusals are
// *OAuthRefusal.
func RedeemOAuthCode(ctx context.Context, st *store.Store, in OAuthCodeRedemption) (*store.OAuthGrant, string, error) {
	hash := auth.HashToken(in.Code)
	c, err := st.GetOAuthCode(ctx, hash)
	if errors.Is(err, store.ErrNotFound) {
		return nil, "", oauthRefused("invalid_grant", "unknown authorization code")
	} else if err != nil {
		return nil, "", err
	}
	if c.UsedAt != nil {
		return nil, "", revokeForReplay(ctx, st, c.GrantID, in.RequestID, "oauth.code_replayed", "authorization code replayed")
	}
	now := store.Now()
	switch {
	case c.ClientID != in.ClientID:
		return nil, "", oauthRefused("invalid_grant", "the code was issued to another client")
	case !now.Before(c.ExpiresAt):
		return nil, "", oauthRefused("invalid_grant", "the authorization code has expired")
	case c.RedirectURI != in.RedirectURI:
		return nil, "", oauthRefused("invalid_grant", "redirect_uri does not match the authorization request's")
	case !in.PKCE(c.CodeChallenge):
		// The code is spent: a wrong verifier gets no second try.
		if _, err := st.UseOAuthCode(ctx, hash, now); err != nil {
			return nil, "", err
		}
		return nil, "", oauthRefused("invalid_grant", "code_verifier does not match the code_challenge (PKCE S256)")
	}
	var grant *store.OAuthGrant
	var refresh string
	replayed := false
	err = st.InTx(ctx, func(tx *store.Store) error {
		won, err := tx.UseOAuthCode(ctx, hash, now)
		if err != nil {
			return err
		}
		if !won {
			replayed = true
			return nil
		}
		if grant, err = liveGrant(ctx, tx, c.GrantID, in.Resource); err != nil {
			return err
		}
		if refresh, err = newRefreshToken(ctx, tx, grant.ID, now); err != nil {
			return err
		}
		return Audit(ctx, tx, User(grant.UserID, false, nil, in.RequestID), AuditEntry{Action: "oauth.code_redeemed", TargetType: "oauth_grant",
			TargetID: grant.ID.String(), OrgID: &grant.OrgID, WorkspaceID: &grant.WorkspaceID, Details: map[string]any{"client_id": grant.ClientID}})
	})
	if replayed {
		return nil, "", revokeForReplay(ctx, st, c.GrantID, in.RequestID, "oauth.code_replayed", "authorization code replayed")
	}
	if err != nil {
		return nil, "", err
	}
	return grant, refresh, nil
}

// OAuthRefresh is a token request of grant_type refresh_token.
type OAuthRefresh struct {
	RefreshToken, ClientID, Resource, RequestID string
}

// RefreshOAuth rotates a refresh token: the presented one is spent and a
// new one returned with the grant. A spent one presented again revokes the
// grant (OAuth 2.1 §4.3.1). Refusals are *OAuthRefusal.
func RefreshOAuth(ctx context.Context, st *store.Store, in OAuthRefresh) (*store.OAuthGrant, string, error) {
	hash := auth.HashToken(in.RefreshToken)
	t, err := st.GetOAuthRefreshToken(ctx, hash)
	if errors.Is(err, store.ErrNotFound) {
		return nil, "", oauthRefused("invalid_grant", "unknown refresh token")
	} else if err != nil {
		return nil, "", err
	}
	if t.UsedAt != nil {
		return nil, "", revokeForReplay(ctx, st, t.GrantID, in.RequestID, "oauth.refresh_replayed", "refresh token reused")
	}
	now := store.Now()
	if !now.Before(t.ExpiresAt) {
		return nil, "", oauthRefused("invalid_grant", "the refresh token has expired")
	}
	var grant *store.OAuthGrant
	var refresh string
	replayed := false
	err = st.InTx(ctx, func(tx *store.Store) error {
		g, err := tx.GetOAuthGrant(ctx, t.GrantID)
		if err != nil {
			return err
		}
		if g.ClientID != in.ClientID {
			return oauthRefused("invalid_grant", "the refresh token was issued to another client")
		}
		won, err := tx.UseOAuthRefreshToken(ctx, hash, now)
		if err != nil {
			return err
		}
		if !won {
			replayed = true
			return nil
		}
		if grant, err = liveGrant(ctx, tx, t.GrantID, in.Resource); err != nil {
			return err
		}
		refresh, err = newRefreshToken(ctx, tx, grant.ID, now)
		return err
	})
	if replayed {
		return nil, "", revokeForReplay(ctx, st, t.GrantID, in.RequestID, "oauth.refresh_replayed", "refresh token reused")
	}
	if err != nil {
		return nil, "", err
	}
	return grant, refresh, nil
}

// liveGrant is the grant id, refused when revoked, when resource names
// another resource than the grant's, or when its person may no longer use
// it (disabled, or no longer an active member).
func liveGrant(ctx context.Context, tx *store.Store, id uuid.UUID, resource string) (*store.OAuthGrant, error) {
	g, err := tx.GetOAuthGrant(ctx, id)
	if err != nil {
		return nil, err
	}
	if g.RevokedAt != nil {
		return nil, oauthRefused("invalid_grant", "the grant has been revoked")
	}
	if resource != "" && resource != g.Resource {
		return nil, oauthRefused("invalid_target", "the grant is for the resource "+g.Resource)
	}
	u, err := tx.GetUser(ctx, g.UserID)
	if err != nil {
		return nil, err
	}
	m, err := tx.GetMembership(ctx, g.OrgID, g.UserID)
	if u.DisabledAt != nil || errors.Is(err, store.ErrNotFound) || (err == nil && m.Status != auth.MembershipActive) {
		return nil, oauthRefused("invalid_grant", "the person who granted access can no longer use this workspace")
	} else if err != nil {
		return nil, err
	}
	if err := tx.TouchOAuthGrant(ctx, g.ID, store.Now()); err != nil {
		return nil, err
	}
	return g, nil
}

func newRefreshToken(ctx context.Context, tx *store.Store, grantID uuid.UUID, now time.Time) (string, error) {
	token, _, hash := auth.NewToken(OAuthRefreshPrefix)
	return token, tx.CreateOAuthRefreshToken(ctx, &store.OAuthRefreshToken{TokenHash: hash, GrantID: grantID, CreatedAt: now, ExpiresAt: now.Add(OAuthRefreshTTL)})
}

// revokeForReplay revokes the grant of a replayed code or refresh token,
// audits it, and returns the refusal the client gets.
func revokeForReplay(ctx context.Context, st *store.Store, grantID uuid.UUID, requestID, action, why string) error {
	err := st.InTx(ctx, func(tx *store.Store) error {
		g, err := tx.GetOAuthGrant(ctx, grantID)
		if err != nil {
			return err
		}
		revoked, err := tx.RevokeOAuthGrant(ctx, grantID, why, store.Now())
		if err != nil {
			return err
		}
		return Audit(ctx, tx, Actor{Type: "system", RequestID: requestID}, AuditEntry{Action: action, TargetType: "oauth_grant",
			TargetID: g.ID.String(), OrgID: &g.OrgID, WorkspaceID: &g.WorkspaceID,
			Details: map[string]any{"client_id": g.ClientID, "user_id": g.UserID.String(), "grant_revoked": revoked}})
	})
	if err != nil {
		return err
	}
	return oauthRefused("invalid_grant", why+": the grant is revoked, with every token issued under it")
}

// RevokeOAuthByRefreshToken revokes the grant of a refresh token the
// client presents (RFC 7009); an unknown token, or another client's, is
// no error (the endpoint answers 200 either way). It reports the grant
// revoked, if any.
func RevokeOAuthByRefreshToken(ctx context.Context, st *store.Store, token, clientID, requestID string) (*store.OAuthGrant, error) {
	t, err := st.GetOAuthRefreshToken(ctx, auth.HashToken(token))
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return RevokeOAuthGrantOfClient(ctx, st, t.GrantID, clientID, requestID)
}

// RevokeOAuthGrantOfClient revokes the grant id at its client's request
// (an access token or refresh token sent to the revocation endpoint).
func RevokeOAuthGrantOfClient(ctx context.Context, st *store.Store, id uuid.UUID, clientID, requestID string) (*store.OAuthGrant, error) {
	var out *store.OAuthGrant
	err := st.InTx(ctx, func(tx *store.Store) error {
		g, err := tx.GetOAuthGrant(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		if g.ClientID != clientID {
			return nil
		}
		revoked, err := tx.RevokeOAuthGrant(ctx, id, "revoked by the client", store.Now())
		if err != nil || !revoked {
			return err
		}
		out = g
		return Audit(ctx, tx, User(g.UserID, false, nil, requestID), AuditEntry{Action: "oauth.grant_revoked", TargetType: "oauth_grant",
			TargetID: g.ID.String(), OrgID: &g.OrgID, WorkspaceID: &g.WorkspaceID,
			Details: map[string]any{"client_id": g.ClientID, "by": "client"}})
	})
	return out, err
}

// RevokeOAuthGrant revokes a workspace's grant (idempotent), audited.
func RevokeOAuthGrant(ctx context.Context, st *store.Store, actor Actor, ws *store.Workspace, id uuid.UUID) (*store.OAuthGrant, error) {
	var out *store.OAuthGrant
	err := st.InTx(ctx, func(tx *store.Store) error {
		g, err := tx.GetOAuthGrant(ctx, id)
		if errors.Is(err, store.ErrNotFound) || (err == nil && g.WorkspaceID != ws.ID) {
			return errorf(NotFound, "OAuth grant %s not found", id)
		} else if err != nil {
			return err
		}
		revoked, err := tx.RevokeOAuthGrant(ctx, id, "revoked by an administrator", store.Now())
		if err != nil {
			return err
		}
		if out, err = tx.GetOAuthGrant(ctx, id); err != nil {
			return err
		}
		if !revoked {
			return nil
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "oauth.grant_revoked", TargetType: "oauth_grant", TargetID: g.ID.String(),
			OrgID: &g.OrgID, WorkspaceID: &g.WorkspaceID, Details: map[string]any{"client_id": g.ClientID, "user_id": g.UserID.String()}})
	})
	return out, err
}

// OAuthRefused records a refused authorization or token request: the
// client, the person if known, and why. Its own transaction.
func OAuthRefused(ctx context.Context, st *store.Store, requestID string, userID *uuid.UUID, details map[string]any) error {
	actor := Actor{Type: "system", RequestID: requestID}
	target := ""
	if userID != nil {
		actor = User(*userID, false, nil, requestID)
		target = userID.String()
	}
	if c, ok := details["client_id"].(string); ok && target == "" {
		target = c
	}
	return st.InTx(ctx, func(tx *store.Store) error {
		return Audit(ctx, tx, actor, AuditEntry{Action: "oauth.refused", TargetType: "oauth_client", TargetID: target, Details: details})
	})
}

// RedirectURIRegistered says whether uri is exactly one of uris.
func RedirectURIRegistered(uris []string, uri string) bool { return slices.Contains(uris, uri) }
