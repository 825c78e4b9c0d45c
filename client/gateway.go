package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-resty/resty/v2"

	"github.com/gw-gateway/gw/wire"
)

// ListCredentials lists the provider credentials configured at exactly one
// scope (the instance is the platform scope), as metadata.
func (c *Client) ListCredentials(ctx context.Context, s Scope) ([]wire.ProviderCredential, error) {
	return getData[[]wire.ProviderCredential](ctx, c, "GET", s.prefix()+"/provider-credentials", nil, nil)
}

// GetCredential reads one provider credential's metadata.
func (c *Client) GetCredential(ctx context.Context, s Scope, id string) (wire.ProviderCredential, error) {
	return getData[wire.ProviderCredential](ctx, c, "GET", s.prefix()+"/provider-credentials/"+esc(id), nil, nil)
}

// CreateCredential configures a provider credential. The secret travels in
// the request body only; the server seals it and never returns it.
func (c *Client) CreateCredential(ctx context.Context, s Scope, in wire.ProviderCredentialCreate) (wire.ProviderCredential, error) {
	return getData[wire.ProviderCredential](ctx, c, "POST", s.prefix()+"/provider-credentials", nil, in)
}

// credentialPatch is wire.ProviderCredentialUpdate with a base_url that can
// also be sent as JSON null, which is how the API is told to clear it; the
// wire type's omitempty pointer cannot say null.
type credentialPatch struct {
	Label    *string                  `json:"label,omitempty"`
	Secret   *string                  `json:"secret,omitempty"`
	BaseURL  json.RawMessage          `json:"base_url,omitempty"`
	Settings *wire.CredentialSettings `json:"settings,omitempty"`
}

// UpdateCredential changes a credential's label, secret, base URL or settings;
// clearBaseURL removes the base URL (and wins over in.BaseURL).
func (c *Client) UpdateCredential(ctx context.Context, s Scope, id string, in wire.ProviderCredentialUpdate, clearBaseURL bool) (wire.ProviderCredential, error) {
	body := credentialPatch{Label: in.Label, Secret: in.Secret, Settings: in.Settings}
	switch {
	case clearBaseURL:
		body.BaseURL = json.RawMessage("null")
	case in.BaseURL != nil:
		raw, err := json.Marshal(*in.BaseURL)
		if err != nil {
			return wire.ProviderCredential{}, err
		}
		body.BaseURL = raw
	}
	return getData[wire.ProviderCredential](ctx, c, "PATCH", s.prefix()+"/provider-credentials/"+esc(id), nil, body)
}

// DeleteCredential deletes a provider credential.
func (c *Client) DeleteCredential(ctx context.Context, s Scope, id string) (wire.Deleted, error) {
	return getData[wire.Deleted](ctx, c, "DELETE", s.prefix()+"/provider-credentials/"+esc(id), nil, nil)
}

// GetCatalog reads the model catalog. At instance scope it is the whole
// catalog, retired entries included; at an organization or workspace it
// is the catalog in force, each model saying whether a credential is
// configured where that scope can use it.
func (c *Client) GetCatalog(ctx context.Context, s Scope) (wire.Catalog, error) {
	return getData[wire.Catalog](ctx, c, "GET", s.prefix()+"/catalog", nil, nil)
}

// ImportCatalog sends a catalog document, YAML or JSON, as it is: the
// server parses both, and YAML prices keep their literal text only if they
// never pass through a JSON number on the way.
func (c *Client) ImportCatalog(ctx context.Context, doc []byte) (wire.CatalogImportResult, error) {
	contentType := "application/yaml"
	if t := bytes.TrimLeft(bytes.TrimPrefix(doc, []byte("\uFEFF")), " \t\r\n"); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		contentType = "application/json"
	}
	const path = "/api/v1/instance/catalog/import"
	resp, err := c.r.R().SetContext(ctx).SetHeader("Content-Type", contentType).SetBody(doc).Post(path)
	if err != nil {
		return wire.CatalogImportResult{}, c.transportError("POST", path, err)
	}
	if resp.IsError() {
		return wire.CatalogImportResult{}, decodeError(resp)
	}
	var env wire.Envelope[wire.CatalogImportResult]
	if err := json.Unmarshal(resp.Body(), &env); err != nil {
		return env.Data, fmt.Errorf("POST %s: decoding response: %w", path, err)
	}
	return env.Data, nil
}

// RetireCatalogModel retires a model; its id may contain slashes.
func (c *Client) RetireCatalogModel(ctx context.Context, id string) (wire.CatalogModel, error) {
	return getData[wire.CatalogModel](ctx, c, "DELETE", "/api/v1/instance/catalog/models/"+escModelID(id), nil, nil)
}

// RetireCatalogProvider retires a provider and so its models.
func (c *Client) RetireCatalogProvider(ctx context.Context, id string) (wire.CatalogProvider, error) {
	return getData[wire.CatalogProvider](ctx, c, "DELETE", "/api/v1/instance/catalog/providers/"+esc(id), nil, nil)
}

// escModelID escapes each segment of a model id but keeps its slashes,
// which the data plane and the catalog routes read as part of the id.
func escModelID(id string) string {
	parts := strings.Split(id, "/")
	for i, p := range parts {
		parts[i] = esc(p)
	}
	return strings.Join(parts, "/")
}

// Model is a model object of the data plane's discovery endpoints: the
// OpenAI members (id, object, created, owned_by) and gw's own. It keeps
// the server's bytes, so re-encoding it prints exactly what was received,
// members this client does not know included.
type Model struct {
	ID              string       `json:"id"`
	Object          string       `json:"object"`
	Created         int64        `json:"created"`
	OwnedBy         string       `json:"owned_by"`
	Name            string       `json:"name"`
	Provider        string       `json:"provider"`
	ContextWindow   int64        `json:"context_window"`
	MaxOutputTokens int64        `json:"max_output_tokens"`
	Pricing         wire.Pricing `json:"pricing"`
	Capabilities    []string     `json:"capabilities"`
	Modalities      []string     `json:"modalities"`

	raw json.RawMessage
}

// UnmarshalJSON decodes the model and keeps its bytes.
func (m *Model) UnmarshalJSON(data []byte) error {
	type plain Model
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*m = Model(p)
	m.raw = append(json.RawMessage(nil), data...)
	return nil
}

// MarshalJSON re-encodes the model as received.
func (m Model) MarshalJSON() ([]byte, error) {
	if m.raw != nil {
		return m.raw, nil
	}
	type plain Model
	return json.Marshal(plain(m))
}

// ModelList is the discovery list: {"object": "list", "data": [...]}.
type ModelList struct {
	Object string  `json:"object"`
	Data   []Model `json:"data"`
}

// ListModels lists the models the client's inference key may use. The
// client must have been built with an inference key (sk-gw-…) as its
// token: the data plane accepts nothing else.
func (c *Client) ListModels(ctx context.Context) (ModelList, error) {
	var out ModelList
	err := c.inference(ctx, "/inf/v1/models", &out)
	return out, err
}

// GetModel reads one model; an unknown model and one the key may not see
// both answer 404.
func (c *Client) GetModel(ctx context.Context, id string) (Model, error) {
	var out Model
	err := c.inference(ctx, "/inf/v1/models/"+escModelID(id), &out)
	return out, err
}

// inference GETs a data-plane path. Its answers are not enveloped, and its
// errors have OpenAI's shape ({"error": {"message", …}}), not {"detail"}.
func (c *Client) inference(ctx context.Context, path string, out any) error {
	resp, err := c.r.R().SetContext(ctx).Get(path)
	if err != nil {
		return c.transportError("GET", path, err)
	}
	if resp.IsError() {
		return decodeInferenceError(resp)
	}
	if err := json.Unmarshal(resp.Body(), out); err != nil {
		return fmt.Errorf("GET %s: decoding response: %w", path, err)
	}
	return nil
}

func decodeInferenceError(resp *resty.Response) error {
	ae := &APIError{Status: resp.StatusCode()}
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(resp.Body(), &body) == nil && body.Error.Message != "" {
		ae.Detail = body.Error.Message
	} else {
		ae.Detail = strings.TrimSpace(http.StatusText(resp.StatusCode()))
	}
	return ae
}
