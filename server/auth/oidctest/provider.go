// Package oidctest runs a real OpenID provider on 127.0.0.1 for gw's
// tests: github.com/zitadel/oidc's op package (the OpenID Foundation
// certified provider implementation) over the in-memory storage of its
// example server (storage.go, oidc.go, client.go, token.go and user.go are
// adapted from zitadel/oidc v3.52.0 example/server/storage, Apache-2.0:
// users carry a groups claim, and clients assert userinfo claims in the
// ID token as Okta's and Entra's do). It is a provider, not a signer of
// whatever it is asked: sign-in goes through its login form, codes are
// single-use, PKCE is checked, tokens are signed with its own key.
//
// For the relying party's negative tests, Tamper rewrites the next ID
// token the token endpoint answers (re-signed with the provider's key, or
// with another key), as a misbehaving or hostile provider would.
package oidctest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
	"golang.org/x/text/language"

	"github.com/zitadel/oidc/v3/pkg/op"
)

// Provider is a running OpenID provider.
type Provider struct {
	Issuer       string
	ClientID     string
	ClientSecret string
	storage      *Storage
	users        *users
	srv          *httptest.Server

	mu     sync.Mutex
	tamper func(claims map[string]any) (resign bool, otherKey bool)
}

type users struct {
	mu    sync.Mutex
	byID  map[string]*User
	names map[string]string
}

func (u *users) GetUserByID(id string) *User {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.byID[id]
}

func (u *users) GetUserByUsername(name string) *User {
	u.mu.Lock()
	defer u.mu.Unlock()
	if id, ok := u.names[name]; ok {
		return u.byID[id]
	}
	return nil
}

func (u *users) ExampleClientID() string { return "service" }

// Start runs a provider with one web client (client_secret_basic) whose
// redirect URIs are redirectURIs. It stops with the test.
func Start(t testing.TB, clientID, clientSecret string, redirectURIs ...string) *Provider {
	t.Helper()
	p := &Provider{ClientID: clientID, ClientSecret: clientSecret, users: &users{byID: map[string]*User{}, names: map[string]string{}}}
	client := WebClient(clientID, clientSecret, redirectURIs...)
	client.idTokenUserinfoClaimsAssertion = true
	client.devMode = true
	client.loginURL = func(id string) string { return "/login?authRequestID=" + id }
	p.storage = NewStorageWithClients(p.users, map[string]*Client{clientID: client})
	mux := http.NewServeMux()
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	p.Issuer = p.srv.URL
	provider, err := op.NewProvider(&op.Config{CryptoKey: sha256.Sum256([]byte("gw oidctest")), CodeMethodS256: true,
		AuthMethodPost: true, GrantTypeRefreshToken: true, SupportedUILocales: []language.Tag{language.English}},
		p.storage, op.StaticIssuer(p.Issuer), op.WithAllowInsecure())
	if err != nil {
		t.Fatal(err)
	}
	callback := op.AuthCallbackURL(provider)
	interceptor := op.NewIssuerInterceptor(provider.IssuerFromRequest)
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) {
		_ = loginPage.Execute(w, map[string]string{"ID": r.URL.Query().Get("authRequestID")})
	})
	mux.Handle("POST /login", interceptor.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		id := r.FormValue("id")
		if err := p.storage.CheckUsernamePassword(r.FormValue("username"), r.FormValue("password"), id); err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			_ = loginPage.Execute(w, map[string]string{"ID": id, "Error": err.Error()})
			return
		}
		http.Redirect(w, r, callback(r.Context(), id), http.StatusFound)
	}))
	mux.Handle("/oauth/token", p.tokenTamperer(provider))
	mux.Handle("/", provider)
	return p
}

var loginPage = template.Must(template.New("login").Parse(`<!doctype html><title>Test provider sign-in</title>
<form method="post" action="/login" id="login"><input type="hidden" name="id" value="{{.ID}}">
<label>Username <input id="username" name="username"></label> <label>Password <input id="password" name="password" type="password"></label>
<button type="submit" id="submit">Sign in</button><p id="error">{{.Error}}</p></form>`))

// AddUser adds (or replaces) a person who can sign in with username and
// password.
func (p *Provider) AddUser(u User) {
	p.users.mu.Lock()
	defer p.users.mu.Unlock()
	if u.ID == "" {
		u.ID = "sub-" + u.Username
	}
	if u.PreferredLanguage == language.Und {
		u.PreferredLanguage = language.English
	}
	p.users.byID[u.ID] = &u
	p.users.names[u.Username] = u.ID
}

// SetGroups changes a person's groups, as a directory change would.
func (p *Provider) SetGroups(username string, groups ...string) {
	p.users.mu.Lock()
	defer p.users.mu.Unlock()
	p.users.byID[p.users.names[username]].Groups = groups
}

// RotateKey replaces the provider's signing key (a new key id), as a
// provider's scheduled rotation does: relying parties holding the old key
// set must fetch it again.
func (p *Provider) RotateKey() {
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	p.storage.lock.Lock()
	defer p.storage.lock.Unlock()
	p.storage.signingKey = signingKey{id: fmt.Sprintf("rotated-%d", key.N.BitLen()) + "-" + key.N.Text(36)[:8],
		algorithm: jose.RS256, key: key}
}

// Tamper makes the token endpoint's next answer carry an ID token whose
// claims fn changed: re-signed with the provider's own key (resign), with
// a key of no one's (otherKey), or not re-signed at all (the signature no
// longer matches).
func (p *Provider) Tamper(fn func(claims map[string]any) (resign, otherKey bool)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tamper = fn
}

// Login completes the provider's sign-in form at loginURL (the address the
// provider sent the browser to) with username and password, using client
// (which must not follow redirects), and returns where the provider sends
// the browser next (gw's callback).
func (p *Provider) Login(client *http.Client, loginURL, username, password string) (string, error) {
	resp, err := client.Get(loginURL)
	if err != nil {
		return "", err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	next := loginURL
	if resp.StatusCode == http.StatusFound || resp.StatusCode == http.StatusSeeOther {
		next = absolute(p.Issuer, resp.Header.Get("Location"))
	}
	id := next[strings.Index(next, "authRequestID=")+len("authRequestID="):]
	resp, err = client.PostForm(p.Issuer+"/login", map[string][]string{"id": {id}, "username": {username}, "password": {password}})
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		return "", fmt.Errorf("provider sign-in answered %d", resp.StatusCode)
	}
	// The provider's callback issues the code and redirects to gw.
	resp, err = client.Get(absolute(p.Issuer, resp.Header.Get("Location")))
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound && resp.StatusCode != http.StatusSeeOther {
		return "", fmt.Errorf("provider callback answered %d", resp.StatusCode)
	}
	return resp.Header.Get("Location"), nil
}

func absolute(base, loc string) string {
	if strings.HasPrefix(loc, "/") {
		return base + loc
	}
	return loc
}

func (p *Provider) tokenTamperer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		fn := p.tamper
		p.tamper = nil
		p.mu.Unlock()
		if fn == nil {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		var body map[string]any
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &body) != nil {
			copyRecorded(w, rec)
			return
		}
		raw, _ := body["id_token"].(string)
		parts := strings.Split(raw, ".")
		if len(parts) != 3 {
			copyRecorded(w, rec)
			return
		}
		jws, err := jose.ParseSigned(raw, []jose.SignatureAlgorithm{jose.RS256})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		var claims map[string]any
		_ = json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &claims)
		resign, otherKey := fn(claims)
		payload, _ := json.Marshal(claims)
		if !resign {
			// The claims change under the provider's signature.
			body["id_token"] = parts[0] + "." + b64(payload) + "." + parts[2]
		} else {
			p.storage.lock.Lock()
			key, kid := p.storage.signingKey.key, p.storage.signingKey.id
			p.storage.lock.Unlock()
			if otherKey {
				key, _ = rsa.GenerateKey(rand.Reader, 2048)
			}
			signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
				(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			signed, err := signer.Sign(payload)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			body["id_token"], _ = signed.CompactSerialize()
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(body)
	})
}

func copyRecorded(w http.ResponseWriter, rec *httptest.ResponseRecorder) {
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

func b64(b []byte) string {
	return strings.TrimRight(strings.NewReplacer("+", "-", "/", "_").Replace(base64Std(b)), "=")
}

func base64Std(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
