package dataplane_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/reseal"
	"github.com/gw-gateway/gw/server/store"
)

// A model of each cloud upstream kind (and, for Bedrock and Vertex AI, of
// each protocol family they serve).
const (
	bedrockClaude = "bedrock/global.anthropic.claude-haiku-4-5-20251001-v1:0"
	bedrockNova   = "bedrock/us.amazon.nova-lite-v1:0"
	vertexGemini  = "vertex/gemini-2.5-flash"
	vertexClaude  = "vertex/claude-haiku-4-5@20251001"
	geminiFlash   = "gemini/gemini-2.5-flash"
	azureMini     = "azure-openai/gpt-4o-mini"
	azureEmbed    = "azure-openai/text-embedding-3-small"
)

// cloudFakes are the fakes of the cloud providers' kinds.
type cloudFakes struct {
	bedrock *providerstest.Bedrock
	vertex  *providerstest.Vertex
	gemini  *providerstest.Gemini
	azure   *providerstest.Azure
	// creds are the credentials' ids, by provider.
	creds map[string]uuid.UUID
}

// withClouds starts fakes of Bedrock, Vertex AI, the Gemini API and Azure
// OpenAI, with org-scope credentials (and their settings) for each, and
// syncs the bundle.
func (e *infEnv) withClouds(t *testing.T) *cloudFakes {
	t.Helper()
	return e.withCloudSecrets(t, func(_, secret string) string { return secret })
}

// withCloudSecrets is withClouds with each credential's secret as secret
// makes it of the one its fake accepts.
func (e *infEnv) withCloudSecrets(t *testing.T, secret func(provider, good string) string) *cloudFakes {
	t.Helper()
	c := &cloudFakes{
		bedrock: providerstest.NewBedrock(t, "eu-west-1"),
		vertex:  providerstest.NewVertex(t, "gw-test-project", "us-east5"),
		gemini:  providerstest.NewGemini(t, "AIzaFake"+uuid.NewString()),
		// The embedding model's deployment has a name of its own.
		azure: providerstest.NewAzure(t, "azure-key-"+uuid.NewString(), "2024-10-21", "gpt-4o-mini", "embeddings-small"),
		creds: map[string]uuid.UUID{},
	}
	org := &e.org.ID
	c.creds["bedrock"] = e.credentialWith(t, org, "bedrock", secret("bedrock", c.bedrock.Secret()), c.bedrock.BaseURL(), `{"region":"eu-west-1"}`)
	e.secrets = append(e.secrets, c.bedrock.SecretAccessKey)
	c.creds["vertex"] = e.credentialWith(t, org, "vertex", secret("vertex", c.vertex.ServiceAccount()), c.vertex.BaseURL(), `{"location":"us-east5"}`)
	c.creds["gemini"] = e.credentialWith(t, org, "gemini", secret("gemini", c.gemini.Key), c.gemini.BaseURL(), "")
	c.creds["azure-openai"] = e.credentialWith(t, org, "azure-openai", secret("azure-openai", c.azure.Key), c.azure.BaseURL(),
		`{"deployments":{"text-embedding-3-small":"embeddings-small"}}`)
	e.clouds = c
	e.sync(t)
	return c
}

// credentialWith stores an organization's credential with settings (a
// JSON object, or "" for none), sealed as the management API seals it.
func (e *infEnv) credentialWith(t *testing.T, org *uuid.UUID, provider, secret, baseURL, settings string) uuid.UUID {
	t.Helper()
	id := uuid.New()
	sealed, err := e.kr.Seal([]byte(secret), reseal.CredentialAAD(id))
	if err != nil {
		t.Fatal(err)
	}
	now := store.Now()
	c := &store.ProviderCredential{ID: id, OrgID: org, Provider: provider, Label: provider + " (test)",
		BaseURL: &baseURL, SecretSealed: sealed, SecretHint: "…" + secret[len(secret)-4:], CreatedAt: now, UpdatedAt: now}
	if settings != "" {
		c.Settings = &settings
	}
	if err := e.st.CreateProviderCredential(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	e.secrets = append(e.secrets, secret)
	return id
}

// upstream is what every fake offers a test.
type upstream interface {
	Enqueue(...providerstest.Reply)
	RefuseStreamOptions(string)
	Last(testing.TB) providerstest.Request
	Requests() []providerstest.Request
}

// fakeOf is the fake that serves model.
func (e *infEnv) fakeOf(model string) upstream {
	provider, _, _ := strings.Cut(model, "/")
	switch provider {
	case "anthropic":
		return e.anthropic
	case "bedrock":
		return e.clouds.bedrock
	case "vertex":
		return e.clouds.vertex
	case "gemini":
		return e.clouds.gemini
	case "azure-openai":
		return e.clouds.azure
	}
	return e.openai
}
