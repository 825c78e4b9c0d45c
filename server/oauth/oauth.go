// Package oauth is the protocol of gw's OAuth 2.1 authorization server
// (issue 31, part 3; docs/identity.md): the access token's format (signed
// by the bundle key, so a data plane verifies it with the key it already
// holds), PKCE, the resource indicator's rules (RFC 8707), the metadata
// documents (RFC 8414, RFC 9728), and Client ID Metadata Documents,
// fetched through server/egress. It links no store: the grants, codes and
// refresh tokens are server/backend's, the endpoints server/api's.
package oauth

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
)

// AccessTokenPrefix starts every access token (codes and refresh tokens
// are server/backend's, stored hashed).
const AccessTokenPrefix = "gwo_at_"

// AccessTokenTTL is an access token's lifetime (docs/identity.md).
const AccessTokenTTL = 10 * time.Minute

// The resource paths a token may be bound to: the MCP endpoint, or every
// inference endpoint.
const (
	ResourceMCP       = "/inf/v1/mcp"
	ResourceInference = "/inf/v1"
)

// Scope is the one scope gw grants: act as the person in the workspace.
const Scope = "inference"

// Error is an OAuth error answer (RFC 6749 §5.2): its code, a description
// safe to show, and the HTTP status.
type Error struct {
	Code        string
	Description string
	Status      int
}

func (e *Error) Error() string { return e.Code + ": " + e.Description }

// Errorf is an Error.
func Errorf(status int, code, description string) *Error {
	return &Error{Code: code, Description: description, Status: status}
}

// Claims are what an access token says. Grant names the grant the bundle
// must carry for the token to be accepted; Org, Workspace and Subject
// repeat the grant's, and the data plane checks they agree.
type Claims struct {
	Grant     uuid.UUID `json:"gid"`
	Org       uuid.UUID `json:"org"`
	Workspace uuid.UUID `json:"ws"`
	Subject   uuid.UUID `json:"sub"`
	Audience  string    `json:"aud"`
	ClientID  string    `json:"cid"`
	IssuedAt  int64     `json:"iat"`
	Expires   int64     `json:"exp"`
	ID        string    `json:"jti"`
}

// signingContext separates an access token's signature from a bundle's,
// made with the same key: a bundle is signed JSON that starts with "{",
// a token this context and then its payload.
const signingContext = "gw oauth access token v1\n"

// SignAccessToken encodes and signs c: the prefix, the payload and the
// Ed25519 signature, base64url each.
func SignAccessToken(key ed25519.PrivateKey, c Claims) (string, error) {
	if c.ID == "" {
		c.ID = randomString(12)
	}
	payload, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	sig := ed25519.Sign(key, append([]byte(signingContext), payload...))
	return AccessTokenPrefix + base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

// ErrBadToken is VerifyAccessToken's refusal of a token that is not one
// of gw's, or whose signature does not verify.
var ErrBadToken = errors.New("invalid access token")

// ErrExpiredToken is VerifyAccessToken's refusal of an expired token.
var ErrExpiredToken = errors.New("the access token has expired")

// VerifyAccessToken checks token's signature by pub and its expiry at
// now, and returns its claims. Nothing of the payload is parsed before
// the signature verifies.
func VerifyAccessToken(pub ed25519.PublicKey, token string, now time.Time) (Claims, error) {
	var c Claims
	rest, ok := strings.CutPrefix(token, AccessTokenPrefix)
	if !ok || len(pub) != ed25519.PublicKeySize || len(token) > 4096 {
		return c, ErrBadToken
	}
	p64, s64, ok := strings.Cut(rest, ".")
	if !ok {
		return c, ErrBadToken
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(p64)
	sig, err2 := base64.RawURLEncoding.DecodeString(s64)
	if err1 != nil || err2 != nil || !ed25519.Verify(pub, append([]byte(signingContext), payload...), sig) {
		return c, ErrBadToken
	}
	if json.Unmarshal(payload, &c) != nil || c.Grant == uuid.Nil {
		return c, ErrBadToken
	}
	if now.Unix() >= c.Expires {
		return c, ErrExpiredToken
	}
	return c, nil
}

func randomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// VerifierOK says whether v is a PKCE code verifier's syntax (RFC 7636
// §4.1: 43 to 128 unreserved characters).
func VerifierOK(v string) bool {
	if len(v) < 43 || len(v) > 128 {
		return false
	}
	for _, r := range v {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_' || r == '~') {
			return false
		}
	}
	return true
}

// ChallengeOK says whether c is an S256 code challenge's syntax: the
// base64url SHA-256 of a verifier, 43 characters.
func ChallengeOK(c string) bool {
	if len(c) != 43 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(c)
	return err == nil
}

// PKCEMatches says whether verifier is the one challenge was made from
// (S256, the only method gw accepts).
func PKCEMatches(verifier, challenge string) bool {
	if !VerifierOK(verifier) {
		return false
	}
	sum := sha256.Sum256([]byte(verifier))
	got := base64.RawURLEncoding.EncodeToString(sum[:])
	return subtle.ConstantTimeCompare([]byte(got), []byte(challenge)) == 1
}

// NormalizeResource checks a resource indicator (RFC 8707 §2): an
// absolute http(s) URL without fragment, query or credentials whose path
// is one of gw's resources (the MCP endpoint or the inference base). It
// returns the URL without a trailing slash.
func NormalizeResource(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" ||
		u.Fragment != "" || strings.HasSuffix(raw, "#") {
		return "", false
	}
	path := strings.TrimSuffix(u.Path, "/")
	if path != ResourceMCP && path != ResourceInference {
		return "", false
	}
	return u.Scheme + "://" + strings.ToLower(u.Host) + path, true
}

// AudienceAccepts says whether a token bound to aud may be used for a
// request to path at origin (scheme://host as the caller reached it): the
// same origin, and the MCP endpoint's audience only at the MCP endpoint,
// the inference base's anywhere under /inf/v1.
func AudienceAccepts(aud, origin, path string) bool {
	u, err := url.Parse(aud)
	if err != nil || !strings.EqualFold(u.Scheme+"://"+u.Host, origin) {
		return false
	}
	switch u.Path {
	case ResourceMCP:
		return path == ResourceMCP || strings.HasPrefix(path, ResourceMCP+"/")
	case ResourceInference:
		return path == ResourceInference || strings.HasPrefix(path, ResourceInference+"/")
	}
	return false
}

// RedirectURIOK says whether raw may be a redirect URI: absolute, no
// fragment; https, or http on a loopback host (native apps, RFC 8252), or
// a private-use scheme with a dot (com.example.app:/cb).
func RedirectURIOK(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Fragment != "" || strings.Contains(raw, "#") || len(raw) > 2048 {
		return false
	}
	switch u.Scheme {
	case "https":
		return u.Host != ""
	case "http":
		return loopback(u.Hostname())
	case "javascript", "data", "file", "vbscript":
		return false
	}
	return strings.Contains(u.Scheme, ".")
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// IsURLClientID says whether a client_id is a Client ID Metadata
// Document's URL rather than a registered client's id.
func IsURLClientID(clientID string) bool { return strings.HasPrefix(clientID, "https://") }

// AuthorizationServerMetadata is the document at
// /.well-known/oauth-authorization-server (RFC 8414) of the issuer.
func AuthorizationServerMetadata(issuer string) map[string]any {
	return map[string]any{
		"issuer":                                         issuer,
		"authorization_endpoint":                         issuer + "/oauth/authorize",
		"token_endpoint":                                 issuer + "/oauth/token",
		"revocation_endpoint":                            issuer + "/oauth/revoke",
		"response_types_supported":                       []string{"code"},
		"response_modes_supported":                       []string{"query"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          []string{"none", "client_secret_basic"},
		"revocation_endpoint_auth_methods_supported":     []string{"none", "client_secret_basic"},
		"scopes_supported":                               []string{Scope},
		"client_id_metadata_document_supported":          true,
		"authorization_response_iss_parameter_supported": true,
	}
}

// ProtectedResourceMetadata is a resource's document (RFC 9728), naming
// issuer as its authorization server.
func ProtectedResourceMetadata(resource, issuer, name string) map[string]any {
	return map[string]any{
		"resource":                 resource,
		"authorization_servers":    []string{issuer},
		"bearer_methods_supported": []string{"header"},
		"scopes_supported":         []string{Scope},
		"resource_name":            name,
	}
}
