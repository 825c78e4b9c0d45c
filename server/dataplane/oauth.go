package dataplane

import (
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/oauth"
	"github.com/gw-gateway/gw/server/playground"
)

// OAuth access tokens (issue 31, part 3; docs/identity.md). The control
// plane signs them with the bundle key, so a data plane verifies them with
// the key it verifies bundles with, and never asks the database: a token
// names its grant, and is accepted only while the bundle in force carries
// that grant (live, of an active, enabled member). Revoking the grant or
// disabling the person removes it from the next bundle, and the token
// stops there; it expires on its own within oauth.AccessTokenTTL.
//
// A token's request is admitted like its person's inference key, on the
// same path (admitRequest, serveMCP): a key made up for the person in the
// grant's workspace, as the playground's is (playground.KeyID), so that
// selected_users policies, the workspace's rate limits (counted per person
// and workspace) and per_key budgets apply, and its usage event's owner_id
// is the person.

var (
	errOAuthToken = errorResponse(http.StatusUnauthorized, apiError{
		Message: "Invalid OAuth access token.",
		Type:    typeInvalidRequest, Code: ref("invalid_token"),
	}, headerField{"Www-Authenticate", []string{`Bearer realm="gw", error="invalid_token"`}})
	errOAuthExpired = errorResponse(http.StatusUnauthorized, apiError{
		Message: "The OAuth access token has expired; refresh it.",
		Type:    typeInvalidRequest, Code: ref("invalid_token"),
	}, headerField{"Www-Authenticate", []string{`Bearer realm="gw", error="invalid_token", error_description="expired"`}})
	errOAuthRevoked = errorResponse(http.StatusUnauthorized, apiError{
		Message: "The OAuth grant of this access token is revoked, or its person may no longer use the workspace.",
		Type:    typeInvalidRequest, Code: ref("invalid_token"),
	}, headerField{"Www-Authenticate", []string{`Bearer realm="gw", error="invalid_token"`}})
	errOAuthAudience = errorResponse(http.StatusUnauthorized, apiError{
		Message: "The OAuth access token was issued for another resource (RFC 8707 audience).",
		Type:    typeInvalidRequest, Code: ref("invalid_token"),
	}, headerField{"Www-Authenticate", []string{`Bearer realm="gw", error="invalid_token", error_description="wrong audience"`}})
)

// authenticateOAuth admits an access token: its signature, expiry and
// audience, then its grant in the bundle in force.
func (p *Plane) authenticateOAuth(r *http.Request, token string) (*admittedKey, *response) {
	c, err := p.oauthTokens.verify(p.pub.Load(), token, p.now())
	switch {
	case errors.Is(err, oauth.ErrExpiredToken):
		return nil, errOAuthExpired
	case err != nil:
		return nil, errOAuthToken
	case !oauth.AudienceAccepts(c.Audience, baseURL(r), r.URL.Path):
		return nil, errOAuthAudience
	}
	a := p.state.Load().orgs[c.Org]
	if a == nil {
		return nil, errOAuthRevoked
	}
	key := a.grants[c.Grant]
	if key == nil || key.inference.workspace != c.Workspace || key.inference.owner != c.Subject {
		return nil, errOAuthRevoked
	}
	return key, nil
}

// tokenCache keeps the claims of access tokens already verified, by the
// token's hash: a client sends the same token for up to
// oauth.AccessTokenTTL, and an Ed25519 verification costs about two
// thousand times a key's hash. Claims never change for a token, so
// caching them skips nothing that matters: expiry is checked on every
// request and the grant is looked up in the bundle in force. Bounded:
// when full it starts over.
type tokenCache struct {
	mu sync.Mutex
	m  map[[32]byte]oauth.Claims
}

const tokenCacheMax = 10000

func (t *tokenCache) verify(pub *ed25519.PublicKey, token string, now time.Time) (oauth.Claims, error) {
	h := sha256.Sum256([]byte(token))
	t.mu.Lock()
	c, ok := t.m[h]
	t.mu.Unlock()
	if !ok {
		if pub == nil {
			return c, oauth.ErrBadToken
		}
		var err error
		if c, err = oauth.VerifyAccessToken(*pub, token, now); err != nil {
			return c, err
		}
		t.mu.Lock()
		if t.m == nil || len(t.m) >= tokenCacheMax {
			t.m = make(map[[32]byte]oauth.Claims)
		}
		t.m[h] = c
		t.mu.Unlock()
	}
	if now.Unix() >= c.Expires {
		return c, oauth.ErrExpiredToken
	}
	return c, nil
}

// reset forgets every token verified (the verification key changed).
func (t *tokenCache) reset() {
	t.mu.Lock()
	t.m = nil
	t.mu.Unlock()
}

// grantKeys builds the keys the bundle's grants admit with: for each, the
// key made up for its person in its workspace, and what they may see
// there (as their playground decides it).
func grantKeys(b *bundle.Body, routes *inferenceOrg, pg *playgroundOrg) map[uuid.UUID]*admittedKey {
	if len(b.OAuthGrants) == 0 {
		return nil
	}
	limits := make(map[uuid.UUID]*bundle.RateLimits, len(b.Workspaces))
	for _, w := range b.Workspaces {
		limits[w.ID] = w.RateLimits
	}
	out := make(map[uuid.UUID]*admittedKey, len(b.OAuthGrants))
	for _, g := range b.OAuthGrants {
		_, view := pg.key(g.WorkspaceID, g.OwnerID)
		if view == nil {
			continue
		}
		k := routes.key(bundle.Key{ID: playground.KeyID(g.WorkspaceID, g.OwnerID), WorkspaceID: g.WorkspaceID, OwnerID: g.OwnerID,
			RateLimits: limits[g.WorkspaceID]})
		// Counted as the person's playground is (ratelease.go), which the
		// control plane resolves to the workspace and the person.
		k.playground, k.oauthGrant = true, g.ID
		out[g.ID] = &admittedKey{orgID: b.OrgID, models: view, inference: k}
	}
	return out
}
