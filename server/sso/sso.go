// Package sso is gw's OpenID Connect relying party (issue 31): it fetches
// a provider's discovery document and keys, sends people to sign in with
// the authorization code flow and PKCE S256, redeems the code and checks
// the ID token (signature by the provider's keys, iss, aud, exp; the
// nonce, email_verified and the email domain in ReadClaims). The protocol
// is github.com/coreos/go-oidc and golang.org/x/oauth2; every connection
// they make is dialled through server/egress.
package sso

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	"golang.org/x/oauth2"

	"github.com/gw-gateway/gw/server/egress"
)

// maxDocument bounds a discovery document, a key set and a token answer.
const maxDocument = 1 << 20

// NewHTTPClient is the client discovery, keys and token requests use: it
// dials under the egress policy, follows no redirects (a provider's
// endpoints are where its discovery says) and gives up after timeout.
func NewHTTPClient(policy func() egress.Policy, timeout time.Duration) *http.Client {
	d := egress.NewDialer(policy)
	tr := &http.Transport{
		DialContext:           d.DialContext,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
	}
	return &http.Client{Transport: tr, Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// IssuerProblem says what is wrong with an issuer URL, or "" when it may
// be one: https, or http on a loopback address (local and test providers);
// no query, fragment or credentials.
func IssuerProblem(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "Input should be an absolute https URL without credentials, query or fragment"
	}
	switch u.Scheme {
	case "https":
		return ""
	case "http":
		if loopback(u.Hostname()) {
			return ""
		}
		return "Value error, the issuer must be https (http only on a loopback address, for a local provider)"
	}
	return "Input should be an absolute https URL without credentials, query or fragment"
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Discovery is what gw keeps of a provider's discovery document.
type Discovery struct {
	Issuer                string   `json:"issuer"`
	AuthorizationEndpoint string   `json:"authorization_endpoint"`
	TokenEndpoint         string   `json:"token_endpoint"`
	JWKSURI               string   `json:"jwks_uri"`
	UserinfoEndpoint      string   `json:"userinfo_endpoint,omitempty"`
	SigningAlgs           []string `json:"id_token_signing_alg_values_supported,omitempty"`
	CodeChallengeMethods  []string `json:"code_challenge_methods_supported,omitempty"`
}

// Discover fetches issuer's discovery document and its key set, and says
// in a sentence fit for a 422 what is wrong when either cannot be had or
// is unfit: the issuer in the document must be issuer exactly, the
// endpoints https (http on loopback), the key set must hold a signing key.
func Discover(ctx context.Context, client *http.Client, issuer string) (Discovery, error) {
	p, err := oidc.NewProvider(withClient(ctx, client), issuer)
	if err != nil {
		return Discovery{}, fmt.Errorf("the discovery document at %s/.well-known/openid-configuration could not be used: %s",
			strings.TrimSuffix(issuer, "/"), shorten(err))
	}
	var d Discovery
	if err := p.Claims(&d); err != nil {
		return Discovery{}, fmt.Errorf("the discovery document could not be read: %s", shorten(err))
	}
	for name, u := range map[string]string{"authorization_endpoint": d.AuthorizationEndpoint, "token_endpoint": d.TokenEndpoint, "jwks_uri": d.JWKSURI} {
		if u == "" {
			return Discovery{}, fmt.Errorf("the discovery document has no %s", name)
		}
		if IssuerProblem(u) != "" {
			return Discovery{}, fmt.Errorf("the discovery document's %s %q is not an https URL", name, u)
		}
	}
	if len(d.CodeChallengeMethods) > 0 && !contains(d.CodeChallengeMethods, "S256") {
		return Discovery{}, errors.New("the provider does not support PKCE with S256 (code_challenge_methods_supported)")
	}
	if err := checkKeys(ctx, client, d.JWKSURI); err != nil {
		return Discovery{}, err
	}
	return d, nil
}

// checkKeys fetches the key set once, so a provider whose keys cannot be
// had is refused when saved rather than at the first sign-in.
func checkKeys(ctx context.Context, client *http.Client, jwksURI string) error {
	ctx, cancel := context.WithTimeout(ctx, client.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, jwksURI, nil)
	if err != nil {
		return fmt.Errorf("the key set URL %q cannot be requested: %s", jwksURI, shorten(err))
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("the key set at %s could not be fetched: %s", jwksURI, shorten(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the key set at %s answered %d", jwksURI, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil || len(body) > maxDocument {
		return fmt.Errorf("the key set at %s could not be read (at most %d bytes)", jwksURI, maxDocument)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(body, &set); err != nil {
		return fmt.Errorf("the key set at %s is not a JWK set: %s", jwksURI, shorten(err))
	}
	for _, k := range set.Keys {
		if k.Use == "" || k.Use == "sig" {
			return nil
		}
	}
	return fmt.Errorf("the key set at %s holds no signing key", jwksURI)
}

// Config is one provider, as a sign-in needs it.
type Config struct {
	// Key identifies the provider's saved state (id and update time): a
	// change makes a new relying party, with keys fetched anew.
	Key          string
	ClientID     string
	ClientSecret string
	Scopes       []string
	RedirectURL  string
	Discovery    Discovery
}

// RP is a relying party for one provider. Its key set is cached and
// fetched again when a token is signed by a key it does not hold (the
// provider rotated its keys).
type RP struct {
	client   *http.Client
	oauth    oauth2.Config
	verifier *oidc.IDTokenVerifier
}

// Parties keeps one RP per provider state.
type Parties struct {
	client *http.Client
	mu     sync.Mutex
	byKey  map[string]*RP
}

// NewParties makes relying parties that connect with client.
func NewParties(client *http.Client) *Parties {
	return &Parties{client: client, byKey: map[string]*RP{}}
}

// Get returns the relying party of c, made on first use.
func (ps *Parties) Get(c Config) *RP {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	key := c.Key + "\x00" + c.RedirectURL
	if rp, ok := ps.byKey[key]; ok {
		return rp
	}
	// The key set's requests run in a context of their own: they may
	// outlive the sign-in that caused them.
	keys := oidc.NewRemoteKeySet(withClient(context.Background(), ps.client), c.Discovery.JWKSURI)
	algs := c.Discovery.SigningAlgs
	if len(algs) == 0 {
		algs = []string{oidc.RS256}
	}
	rp := &RP{client: ps.client,
		oauth: oauth2.Config{ClientID: c.ClientID, ClientSecret: c.ClientSecret, RedirectURL: c.RedirectURL, Scopes: c.Scopes,
			Endpoint: oauth2.Endpoint{AuthURL: c.Discovery.AuthorizationEndpoint, TokenURL: c.Discovery.TokenEndpoint}},
		verifier: oidc.NewVerifier(c.Discovery.Issuer, keys, &oidc.Config{ClientID: c.ClientID, SupportedSigningAlgs: algs}),
	}
	ps.byKey[key] = rp
	return rp
}

// AuthURL is where the browser goes to sign in.
func (rp *RP) AuthURL(state, nonce, verifier string) string {
	return rp.oauth.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier))
}

// Refusal is a sign-in the relying party refused: Reason is a short word
// for the audit log, the error's text a sentence for the person.
type Refusal struct {
	Reason string
	Detail string
}

func (r *Refusal) Error() string { return r.Detail }

func refuse(reason, format string, args ...any) *Refusal {
	return &Refusal{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// Redeem exchanges the code (with the PKCE verifier) for tokens and checks
// the ID token's signature, iss, aud and exp; it returns its claims. The
// nonce and the rest are ReadClaims's.
func (rp *RP) Redeem(ctx context.Context, code, verifier string) (map[string]any, error) {
	ctx = withClient(ctx, rp.client)
	tok, err := rp.oauth.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		return nil, refuse("code_exchange_failed", "the identity provider did not redeem the sign-in code: %s", shorten(err))
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return nil, refuse("no_id_token", "the identity provider's token answer has no id_token")
	}
	idt, err := rp.verifier.Verify(ctx, raw)
	if err != nil {
		return nil, refuse("id_token_invalid", "the ID token was refused: %s", shorten(err))
	}
	claims := map[string]any{}
	if err := idt.Claims(&claims); err != nil {
		return nil, refuse("id_token_invalid", "the ID token's claims could not be read")
	}
	return claims, nil
}

func withClient(ctx context.Context, c *http.Client) context.Context {
	return context.WithValue(oidc.ClientContext(ctx, c), oauth2.HTTPClient, c)
}

// shorten keeps an upstream error to one bounded line.
func shorten(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
