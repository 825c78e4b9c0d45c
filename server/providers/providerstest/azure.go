package providerstest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Azure is a fake Azure OpenAI resource: Chat Completions and embeddings
// at /openai/deployments/{deployment}/…?api-version=…, Responses at
// /openai/v1/responses, authenticated by the api-key header or by a bearer
// token its Entra ID token endpoint (POST /entra/token, client
// credentials) issued. Answers are OpenAI's (the OpenAI fake's); a reply
// with FinishReason content_filter is Azure's content filter stopping the
// answer.
type Azure struct {
	*fake
	// Deployments are the deployments the resource has.
	Deployments map[string]bool
	// APIVersion is the api-version chat and embeddings must carry.
	APIVersion string
	// ClientID and ClientSecret are the Entra ID application's.
	ClientID, ClientSecret string

	mu     sync.Mutex
	tokens map[string]bool
}

// NewAzure starts a fake resource with an api-key and deployments.
func NewAzure(t testing.TB, key, apiVersion string, deployments ...string) *Azure {
	a := &Azure{Deployments: map[string]bool{}, APIVersion: apiVersion, ClientID: "app-" + randomHex()[:8],
		ClientSecret: "entra-" + randomHex(), tokens: map[string]bool{}}
	for _, d := range deployments {
		a.Deployments[d] = true
	}
	a.fake = newFake(t, key, func(f *fake) http.Handler { return http.HandlerFunc(a.serve) })
	return a
}

// BaseURL is the resource's endpoint, as https://{resource}.openai.azure.com.
func (a *Azure) BaseURL() string { return a.URL }

// TokenURL is the fake's Entra ID token endpoint.
func (a *Azure) TokenURL() string { return a.URL + "/entra/token" }

// EntraSecret is the credential secret of the Entra ID application.
func (a *Azure) EntraSecret() string {
	return `{"tenant_id":"fake-tenant","client_id":"` + a.ClientID + `","client_secret":"` + a.ClientSecret + `"}`
}

func (a *Azure) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/entra/token" {
		a.token(w, r)
		return
	}
	if !a.authorized(r) {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]any{"code": "401",
			"message": "Access denied due to invalid subscription key or wrong API endpoint."}})
		return
	}
	if a.serveBatches(w, r) {
		return
	}
	canonical, ok := a.route(r)
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{"code": "DeploymentNotFound",
			"message": "The API deployment for this resource does not exist."}})
		return
	}
	ctx := context.WithValue(r.Context(), receivedPath{}, r.URL.Path)
	r = r.WithContext(ctx)
	r.URL.Path = canonical
	r.Header.Set("Authorization", "Bearer "+a.Key)
	openAIHandler{a.fake}.ServeHTTP(w, r)
}

// route maps an Azure path to the OpenAI fake's.
func (a *Azure) route(r *http.Request) (string, bool) {
	if r.URL.Path == "/openai/v1/responses" {
		return "/v1/responses", true
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/openai/deployments/")
	deployment, op, _ := strings.Cut(rest, "/")
	if !ok || !a.Deployments[deployment] || r.URL.Query().Get("api-version") != a.APIVersion {
		return "", false
	}
	switch op {
	case "chat/completions", "embeddings":
		return "/v1/" + op, true
	}
	return "", false
}

func (a *Azure) authorized(r *http.Request) bool {
	if key := r.Header.Get("Api-Key"); key != "" {
		return key == a.Key
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
}

// token is the client-credentials grant of Microsoft Entra ID.
func (a *Azure) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "client_credentials" ||
		r.PostForm.Get("client_id") != a.ClientID || r.PostForm.Get("client_secret") != a.ClientSecret ||
		r.PostForm.Get("scope") != "https://cognitiveservices.azure.com/.default" {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client",
			"error_description": "AADSTS7000215: Invalid client secret provided."})
		return
	}
	tok := "eyJ0eXAi.fake-" + randomHex()
	a.mu.Lock()
	a.tokens[tok] = true
	a.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"token_type": "Bearer", "expires_in": int(time.Hour.Seconds()), "access_token": tok})
}

// serveBatches answers Azure's Files and Batches (/openai/files,
// /openai/batches, with the api-version) as OpenAI's (batchapi.go); a
// batch's lines name the operation without /v1 (/chat/completions) and
// a deployment as their model.
func (a *Azure) serveBatches(w http.ResponseWriter, r *http.Request) bool {
	rest, ok := strings.CutPrefix(r.URL.Path, "/openai/")
	if !ok || !(strings.HasPrefix(rest, "files") || strings.HasPrefix(rest, "batches")) {
		return false
	}
	if r.URL.Query().Get("api-version") != a.APIVersion {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{"code": "404", "message": "Resource not found"}})
		return true
	}
	r.URL.Path = "/v1/" + rest
	run := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body struct {
			Model string `json:"model"`
		}
		if json.Unmarshal(raw, &body) != nil || !a.Deployments[body.Model] {
			writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{"code": "DeploymentNotFound",
				"message": "The API deployment for this resource does not exist."}})
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(raw))
		r = r.WithContext(context.WithValue(r.Context(), receivedPath{}, "/openai/deployments/"+body.Model+r.URL.Path))
		r.URL.Path = "/v1" + r.URL.Path
		openAIHandler{a.fake}.ServeHTTP(w, r)
	})
	return a.fake.serveBatchAPI(w, r, false, true, run)
}
