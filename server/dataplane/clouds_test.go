package dataplane_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store/storetest"
)

var cloudModels = []string{bedrockClaude, bedrockNova, vertexGemini, vertexClaude, geminiFlash, azureMini}

// Each cloud kind's failures reach the caller as every other kind's do:
// throttling is a 429 rate limit, a 5xx (or Anthropic's 529 overload) an
// unavailable upstream, a refused credential a 502 naming the credential
// and never its secret.
func TestCloudErrorMapping(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		c := e.withClouds(t)
		cases := []struct {
			status     int
			wantStatus int
			wantCode   string
		}{
			{http.StatusTooManyRequests, http.StatusTooManyRequests, "upstream_rate_limited"},
			{http.StatusServiceUnavailable, http.StatusBadGateway, "upstream_unavailable"},
			{http.StatusInternalServerError, http.StatusBadGateway, "upstream_unavailable"},
			{http.StatusForbidden, http.StatusBadGateway, "upstream_auth_failed"},
		}
		for _, model := range cloudModels {
			for _, tc := range cases {
				e.fakeOf(model).Enqueue(providerstest.Reply{Status: tc.status, Message: "refused by the fake", RetryAfter: "7"})
				got := e.postError(t, `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`, tc.wantStatus)
				if code(got) != tc.wantCode {
					t.Fatalf("%s, upstream %d: %+v", model, tc.status, got)
				}
				if tc.wantCode == "upstream_auth_failed" && !strings.Contains(got.Error.Message, c.creds[provider(model)].String()) {
					t.Fatalf("%s: the auth failure does not name the credential: %s", model, got.Error.Message)
				}
			}
		}
		// Claude on Vertex AI answers an overload as Anthropic does, which
		// a Chat Completions caller gets as a 503.
		e.fakeOf(vertexClaude).Enqueue(providerstest.Reply{Status: 529, Message: "Overloaded"})
		if got := e.postError(t, `{"model":"`+vertexClaude+`","messages":[{"role":"user","content":"hi"}]}`, http.StatusServiceUnavailable); code(got) != "upstream_overloaded" {
			t.Fatalf("529: %+v", got)
		}
	})
}

func provider(model string) string {
	p, _, _ := strings.Cut(model, "/")
	return p
}

// Credentials the providers refuse for real: a Bedrock secret key whose
// signature the fake's recomputation does not match, a service account
// whose assertion the token endpoint refuses, a wrong Gemini API key (a
// 400 API_KEY_INVALID), a wrong Azure api-key. Each is a 502 naming the
// credential; no secret reaches the answer or the log.
func TestCloudCredentialsRefused(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		other, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		c := e.withCloudSecrets(t, func(provider, good string) string {
			switch provider {
			case "bedrock":
				return strings.Replace(good, `"secret_access_key":"fake/`, `"secret_access_key":"wrong/`, 1)
			case "vertex":
				return withPrivateKey(t, good, other)
			}
			return good + "-wrong"
		})
		for _, model := range []string{bedrockClaude, vertexGemini, vertexClaude, geminiFlash, azureMini} {
			got := e.postError(t, `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`, http.StatusBadGateway)
			if code(got) != "upstream_auth_failed" || !strings.Contains(got.Error.Message, c.creds[provider(model)].String()) {
				t.Fatalf("%s: %+v", model, got)
			}
		}
		if c.vertex.TokensIssued() != 0 {
			t.Fatal("the token endpoint issued a token for a key that is not the service account's")
		}
		if n := len(e.usage.snapshot()); n != 5 {
			t.Fatalf("%d usage events, want one per refused request", n)
		}
	})
}

// withPrivateKey is a service account key file with another private key.
func withPrivateKey(t *testing.T, sa string, key *rsa.PrivateKey) string {
	var m map[string]string
	if err := json.Unmarshal([]byte(sa), &m); err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	m["private_key"] = string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	b, _ := json.Marshal(m)
	return string(b)
}

// Vertex AI's tokens are taken once and kept until shortly before they
// expire: an hour's token serves every request; one that lasts less than
// gw's five-minute margin is taken anew for each. A credential's
// token_url replaces the key file's token_uri.
func TestVertexTokensAreKeptUntilShortlyBeforeExpiry(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		c := e.withCloudSecrets(t, func(provider, good string) string {
			if provider == "vertex" {
				// A token_uri nobody answers: the settings' token_url wins.
				return strings.Replace(good, c0TokenURI(good), "http://127.0.0.1:9/token", 1)
			}
			return good
		})
		if _, err := e.db.NewUpdate().Table("provider_credentials").Set("settings = ?",
			`{"location":"us-east5","token_url":"`+c.vertex.TokenURL()+`"}`).Where("provider = 'vertex'").Exec(t.Context()); err != nil {
			t.Fatal(err)
		}
		e.sync(t)
		ask := func() {
			t.Helper()
			resp := e.post(t, `{"model":"`+vertexGemini+`","messages":[{"role":"user","content":"hi"}]}`)
			raw, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%d %s", resp.StatusCode, raw)
			}
		}
		// A token that lasts less than the margin is replaced at once.
		c.vertex.SetLifetime(2 * time.Minute)
		ask()
		ask()
		if n := c.vertex.TokensIssued(); n != 2 {
			t.Fatalf("%d tokens issued for 2 requests with tokens inside the margin, want 2", n)
		}
		// An hour's token serves every request after it.
		c.vertex.SetLifetime(time.Hour)
		for range 3 {
			ask()
		}
		if n := c.vertex.TokensIssued(); n != 3 {
			t.Fatalf("%d tokens issued, want one more for the next 3 requests within the hour", n)
		}
	})
}

// c0TokenURI is a service account key file's token_uri.
func c0TokenURI(sa string) string {
	var m map[string]string
	_ = json.Unmarshal([]byte(sa), &m)
	return m["token_uri"]
}

// Azure's content filter stopping an answer is a 400 content_filter for
// the caller, never billed as output; in a stream it ends the stream with
// that error. An Entra ID application's token authenticates like the
// api-key.
func TestAzureContentFilterAndEntraID(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		c := e.withClouds(t)
		c.azure.Enqueue(providerstest.Reply{Text: "partial answer", FinishReason: "content_filter", Usage: providerstest.Usage{Input: 50, Output: 30}})
		got := e.postError(t, `{"model":"`+azureMini+`","messages":[{"role":"user","content":"hi"}]}`, http.StatusBadRequest)
		if code(got) != "content_filter" {
			t.Fatalf("%+v", got)
		}
		ev := e.usage.last(t, 1)
		if ev.Status != "error" || ev.OutputTokens != 0 || ev.CostUSD != "0" {
			t.Fatalf("a filtered answer was billed: %+v", ev)
		}

		c.azure.Enqueue(providerstest.Reply{Text: "partial answer", ChunkSize: 8, FinishReason: "content_filter"})
		resp := e.post(t, `{"model":"`+azureMini+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		raw, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(raw), `"content_filter"`) || strings.Contains(string(raw), "[DONE]") {
			t.Fatalf("stream: %s", raw)
		}
		if ev := e.usage.last(t, 2); ev.Status != "error" {
			t.Fatalf("stream event %+v", ev)
		}

		// The same resource through an Entra ID application.
		if _, err := e.db.NewDelete().Table("provider_credentials").Where("provider = 'azure-openai'").Exec(t.Context()); err != nil {
			t.Fatal(err)
		}
		e.credentialWith(t, &e.org.ID, "azure-openai", c.azure.EntraSecret(), c.azure.BaseURL(), `{"token_url":"`+c.azure.TokenURL()+`"}`)
		e.sync(t)
		resp = e.post(t, `{"model":"`+azureMini+`","messages":[{"role":"user","content":"hi"}]}`)
		raw, _ = io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(c.azure.Last(t).Header.Get("Authorization"), "Bearer ") {
			t.Fatalf("Entra ID: %d %s", resp.StatusCode, raw)
		}
	})
}

// Embeddings through Bedrock's Titan (one call per input, the counts it
// reports summed) and the Gemini API's batchEmbedContents (no counts: gw
// counts the input) come back in OpenAI's list, floats or base64.
func TestCloudEmbeddings(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		c := e.withClouds(t)
		c.bedrock.Enqueue(providerstest.Reply{Usage: providerstest.Usage{Input: 7}}, providerstest.Reply{Usage: providerstest.Usage{Input: 9}})
		for i, m := range []struct{ model, format, source string }{
			{"bedrock/amazon.titan-embed-text-v2:0", "float", "upstream"},
			{"gemini/gemini-embedding-001", "base64", "estimated"},
		} {
			req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/inf/v1/embeddings", strings.NewReader(
				`{"model":"`+m.model+`","input":["first line","second line"],"dimensions":4,"encoding_format":"`+m.format+`"}`))
			req.Header.Set("Authorization", "Bearer "+e.token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var list struct {
				Data []struct {
					Index     int             `json:"index"`
					Embedding json.RawMessage `json:"embedding"`
				} `json:"data"`
				Model string `json:"model"`
			}
			if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &list) != nil || len(list.Data) != 2 || list.Model != m.model ||
				list.Data[1].Index != 1 || (m.format == "base64") != (list.Data[0].Embedding[0] == '"') {
				t.Fatalf("%s: %d %s", m.model, resp.StatusCode, raw)
			}
			ev := e.usage.last(t, i+1)
			if ev.Status != "ok" || ev.UsageSource != m.source || ev.OutputTokens != 0 || ev.InputTokens == 0 ||
				m.source == "upstream" && ev.InputTokens != 16 {
				t.Fatalf("%s: event %+v", m.model, ev)
			}
		}
		if reqs := c.bedrock.Requests(); len(reqs) != 2 || reqs[0].Body["dimensions"] != float64(4) {
			t.Fatalf("Titan got %+v", reqs)
		}
	})
}

// Temporary AWS credentials sign with their session token, which the
// fake's recomputation needs to match.
func TestBedrockSessionToken(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		c := e.withCloudSecrets(t, func(provider, good string) string {
			if provider == "bedrock" {
				return strings.TrimSuffix(good, "}") + `,"session_token":"FwoGZXIvYXdzEBYaDFAKE"}`
			}
			return good
		})
		c.bedrock.SessionToken = "FwoGZXIvYXdzEBYaDFAKE"
		resp := e.post(t, `{"model":"`+bedrockNova+`","messages":[{"role":"user","content":"hi"}]}`)
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || c.bedrock.Last(t).Header.Get("X-Amz-Security-Token") != "FwoGZXIvYXdzEBYaDFAKE" {
			t.Fatalf("%d %s", resp.StatusCode, raw)
		}
	})
}
