package providers

import (
	"context"
	"errors"
	"net/http"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
	"golang.org/x/oauth2/google"

	"github.com/gw-gateway/gw/server/egress"
)

// Vertex AI and Azure's Entra ID take OAuth bearer tokens, which gw gets
// for a credential (a service account's signed assertion, an Entra ID
// application's client credentials) from the token endpoint, keeps, and
// gets anew a while before they expire, so no request waits on a token
// that is about to lapse.

// tokenEarly is how long before its expiry a token is replaced.
const tokenEarly = 5 * time.Minute

// tokenTimeout bounds one token request: a token source's fetch is not
// bound to a caller's context (callers share it).
const tokenTimeout = 30 * time.Second

const (
	cloudPlatformScope = "https://www.googleapis.com/auth/cloud-platform"
	cognitiveScope     = "https://cognitiveservices.azure.com/.default"
)

// oauthTokens keeps a token source per credential.
type oauthTokens struct {
	sources parsedSecrets
}

// tokenContext carries the HTTP client token requests go through, the way
// golang.org/x/oauth2 takes one: the adapters' transport, whose dialer
// holds every token endpoint (a setting's token_url, a service account's
// token_uri) to the egress policy, bounded in time.
func tokenContext(client *http.Client) context.Context {
	c := &http.Client{Transport: client.Transport, CheckRedirect: client.CheckRedirect, Timeout: tokenTimeout}
	return context.WithValue(context.Background(), oauth2.HTTPClient, c)
}

// googleSource is a Vertex credential made usable: its tokens and the
// project its service account belongs to.
type googleSource struct {
	tokens  oauth2.TokenSource
	project string
}

// google returns the call's service account's token source.
func (o *oauthTokens) google(client *http.Client, call *Call) (*googleSource, error) {
	v, err := o.sources.get(call, call.Settings.TokenURL, func() (any, error) {
		sa, problem := parseServiceAccount(call.Secret)
		if problem != "" {
			return nil, credentialError(call, problem)
		}
		cfg, err := google.JWTConfigFromJSON([]byte(call.Secret), cloudPlatformScope)
		if err != nil {
			return nil, credentialError(call, "the service account key file does not read")
		}
		if call.Settings.TokenURL != "" {
			cfg.TokenURL = call.Settings.TokenURL
		}
		src := oauth2.ReuseTokenSourceWithExpiry(nil, cfg.TokenSource(tokenContext(client)), tokenEarly)
		return &googleSource{tokens: src, project: sa.ProjectID}, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*googleSource), nil
}

// entra returns the token source of an Azure credential's Entra ID
// application.
func (o *oauthTokens) entra(client *http.Client, call *Call) (oauth2.TokenSource, error) {
	v, err := o.sources.get(call, call.Settings.TokenURL, func() (any, error) {
		s, problem := parseEntraSecret(call.Secret)
		if problem != "" {
			return nil, credentialError(call, problem)
		}
		cfg := clientcredentials.Config{ClientID: s.ClientID, ClientSecret: s.ClientSecret, Scopes: []string{cognitiveScope},
			TokenURL:  "https://login.microsoftonline.com/" + s.TenantID + "/oauth2/v2.0/token",
			AuthStyle: oauth2.AuthStyleInParams}
		if call.Settings.TokenURL != "" {
			cfg.TokenURL = call.Settings.TokenURL
		}
		return oauth2.ReuseTokenSourceWithExpiry(nil, cfg.TokenSource(tokenContext(client)), tokenEarly), nil
	})
	if err != nil {
		return nil, err
	}
	return v.(oauth2.TokenSource), nil
}

// bearer gets a token from src: a token endpoint that refuses the
// credential is the operator's problem (Unauthorized, naming the
// credential and the OAuth error code, never the secret); one that cannot
// be reached is the upstream's being unavailable.
func bearer(ctx context.Context, src oauth2.TokenSource, call *Call) (string, error) {
	type result struct {
		tok *oauth2.Token
		err error
	}
	done := make(chan result, 1)
	go func() {
		tok, err := src.Token()
		done <- result{tok, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		return "", transportError(ctx.Err())
	}
	if r.err == nil {
		return r.tok.AccessToken, nil
	}
	var re *oauth2.RetrieveError
	if errors.As(r.err, &re) && re.Response != nil && re.Response.StatusCode/100 == 4 {
		code := re.ErrorCode
		if code == "" {
			code = http.StatusText(re.Response.StatusCode)
		}
		return "", credentialError(call, "the token endpoint refused it ("+code+")")
	}
	var refused *egress.Refusal
	if errors.As(r.err, &refused) {
		return "", credentialError(call, "its token endpoint is refused: "+refused.Error())
	}
	return "", &Error{Kind: Unavailable, Message: "credential " + call.CredentialID + ": the token endpoint could not be reached"}
}
