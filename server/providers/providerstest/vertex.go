package providerstest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Vertex is a fake Vertex AI with its own OAuth token endpoint: POST
// /token takes a service account's signed JWT assertion (RS256, checked
// against the account's public key), and the model endpoints under
// /v1/projects/{project}/locations/{location}/publishers/… take only the
// bearer tokens it issued. Gemini models answer generateContent and
// streamGenerateContent, Claude models rawPredict and streamRawPredict.
type Vertex struct {
	*fake
	Project, Location string
	// ClientEmail is the service account's.
	ClientEmail string
	key         *rsa.PrivateKey

	mu sync.Mutex
	// tokens are the issued bearer tokens and when each expires.
	tokens map[string]time.Time
	// lifetime is how long an issued token lasts (an hour when 0).
	lifetime time.Duration
	// jobs is the batch prediction job API, once ServeBatches gives it a
	// Cloud Storage (vertex_batch.go).
	jobs *vertexJobs
}

// SetLifetime sets how long the tokens issued from now on last.
func (v *Vertex) SetLifetime(d time.Duration) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.lifetime = d
}

var (
	serviceKeyOnce sync.Once
	serviceKey     *rsa.PrivateKey
)

// sharedServiceKey is one RSA key for every fake service account of the
// test binary: generating one costs tens of milliseconds.
func sharedServiceKey() *rsa.PrivateKey {
	serviceKeyOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		serviceKey = k
	})
	return serviceKey
}

// NewVertex starts a fake for a project and location.
func NewVertex(t testing.TB, project, location string) *Vertex {
	v := &Vertex{Project: project, Location: location, ClientEmail: "gw-test@" + project + ".iam.gserviceaccount.com",
		key: sharedServiceKey(), tokens: map[string]time.Time{}}
	v.fake = newFake(t, "", func(f *fake) http.Handler { return http.HandlerFunc(v.serve) })
	return v
}

// BaseURL is the API root to configure, as for
// https://aiplatform.googleapis.com/v1.
func (v *Vertex) BaseURL() string { return v.URL + "/v1" }

// TokenURL is the fake's OAuth token endpoint.
func (v *Vertex) TokenURL() string { return v.URL + "/token" }

// ServiceAccount is the service account's JSON key file, its token_uri
// the fake's.
func (v *Vertex) ServiceAccount() string {
	der, _ := x509.MarshalPKCS8PrivateKey(v.key)
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	b, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": v.Project, "private_key_id": "fake-key-1", "private_key": string(pemKey),
		"client_email": v.ClientEmail, "client_id": "1234567890", "auth_uri": "https://accounts.google.com/o/oauth2/auth",
		"token_uri": v.TokenURL(),
	})
	return string(b)
}

// TokensIssued counts the tokens the token endpoint has issued.
func (v *Vertex) TokensIssued() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.tokens)
}

func (v *Vertex) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/token" {
		v.token(w, r)
		return
	}
	if v.serveJobs(w, r) {
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/projects/"+v.Project+"/locations/"+v.Location+"/publishers/")
	publisher, rest, _ := strings.Cut(rest, "/models/")
	model, method, hasMethod := strings.Cut(rest, ":")
	if !ok || !hasMethod || r.Method != http.MethodPost {
		googleError(w, http.StatusNotFound, "NOT_FOUND", "", "The requested URL "+r.URL.Path+" was not found on this server.")
		return
	}
	if !v.issued(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")) {
		googleError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "ACCESS_TOKEN_TYPE_UNSUPPORTED",
			"Request had invalid authentication credentials. Expected OAuth 2 access token.")
		return
	}
	switch publisher {
	case "google":
		serveGenerateContent(v.fake, w, r, model, method)
	case "anthropic":
		v.rawPredict(w, r, model, method)
	default:
		googleError(w, http.StatusNotFound, "NOT_FOUND", "", "Publisher Model "+publisher+"/"+model+" was not found")
	}
}

func (v *Vertex) issued(token string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	exp, ok := v.tokens[token]
	return ok && time.Now().Before(exp)
}

// token checks a JWT-bearer grant's assertion as Google does (signature,
// issuer, audience, expiry) and issues a bearer token.
func (v *Vertex) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	claims, ok := verifyJWT(r.PostForm.Get("assertion"), &v.key.PublicKey)
	if !ok || claims.Iss != v.ClientEmail || claims.Aud != v.TokenURL() || time.Unix(claims.Exp, 0).Before(time.Now()) ||
		!strings.Contains(claims.Scope, "cloud-platform") {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "Invalid JWT Signature."})
		return
	}
	tok := "ya29.fake-" + randomHex()
	v.mu.Lock()
	lifetime := v.lifetime
	if lifetime == 0 {
		lifetime = time.Hour
	}
	v.tokens[tok] = time.Now().Add(lifetime)
	v.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": int(lifetime.Seconds())})
}

type jwtClaims struct {
	Iss   string `json:"iss"`
	Aud   string `json:"aud"`
	Scope string `json:"scope"`
	Exp   int64  `json:"exp"`
}

// verifyJWT checks an RS256 JWT's signature and returns its claims.
func verifyJWT(token string, pub *rsa.PublicKey) (jwtClaims, bool) {
	var c jwtClaims
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return c, false
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return c, false
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig) != nil {
		return c, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || json.Unmarshal(payload, &c) != nil {
		return c, false
	}
	return c, true
}

func randomHex() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return strings.ToLower(base64.RawURLEncoding.EncodeToString(b))
}

// rawPredict answers a Messages request as Vertex AI takes it: no model in
// the body (it is in the URL), anthropic_version vertex-2023-10-16.
func (v *Vertex) rawPredict(w http.ResponseWriter, r *http.Request, model, method string) {
	req, reply, err := v.receive(r)
	switch {
	case err != nil:
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "There was an issue with the request body: not JSON")
		return
	case req.Body["anthropic_version"] != "vertex-2023-10-16":
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "anthropic_version: Input should be 'vertex-2023-10-16'")
		return
	case req.Body["model"] != nil:
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "model: Extra inputs are not permitted")
		return
	}
	if !wait(r, reply.Delay) {
		return
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		if reply.RetryAfter != "" {
			w.Header().Set("Retry-After", reply.RetryAfter)
		}
		anthropicError(w, reply.Status, anthropicErrorType(reply.Status), reply.Message)
		return
	}
	stream, _ := req.Body["stream"].(bool)
	switch {
	case method == "rawPredict" && !stream:
		writeAnswer(w, reply, anthropicAnswer(model, reply))
	case method == "streamRawPredict" && stream:
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		anthropicStream(r, model, reply, func(event string, v any) { sse(w, event, v) }, func(raw string) { _, _ = w.Write([]byte(raw)) })
	default:
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "stream does not match the method "+method)
	}
}
