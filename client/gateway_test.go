package client

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/wire"
)

// recordingServer answers every request with status and body, keeping the
// last request's method, escaped path and body.
type recordingServer struct {
	method, path, body string
}

func (rs *recordingServer) start(t *testing.T, status int, body string) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		rs.method, rs.path, rs.body = r.Method, r.URL.EscapedPath(), string(raw)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	c, err := New(Options{Server: srv.URL, Token: "sk-gw-test"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestUpdateCredentialBaseURL(t *testing.T) {
	ctx := context.Background()
	var rs recordingServer
	c := rs.start(t, 200, `{"data":{}}`)
	label := "new"
	if _, err := c.UpdateCredential(ctx, OrgScope("acme"), "c1", wire.ProviderCredentialUpdate{Label: &label}, false); err != nil {
		t.Fatal(err)
	}
	if rs.method != "PATCH" || rs.path != "/api/v1/organizations/acme/provider-credentials/c1" || rs.body != `{"label":"new"}` {
		t.Fatalf("%s %s %s", rs.method, rs.path, rs.body)
	}
	// Clearing sends an explicit null, which the omitempty wire type cannot.
	if _, err := c.UpdateCredential(ctx, InstanceScope(), "c1", wire.ProviderCredentialUpdate{}, true); err != nil {
		t.Fatal(err)
	}
	if rs.path != "/api/v1/instance/provider-credentials/c1" || rs.body != `{"base_url":null}` {
		t.Fatalf("%s %s", rs.path, rs.body)
	}
	u := "https://x.example/v1"
	if _, err := c.UpdateCredential(ctx, WorkspaceScope("acme", "ws"), "c1", wire.ProviderCredentialUpdate{BaseURL: &u}, false); err != nil {
		t.Fatal(err)
	}
	if rs.path != "/api/v1/organizations/acme/workspaces/ws/provider-credentials/c1" || rs.body != `{"base_url":"https://x.example/v1"}` {
		t.Fatalf("%s %s", rs.path, rs.body)
	}
}

func TestGetModelKeepsSlashesAndBytes(t *testing.T) {
	var rs recordingServer
	body := `{"id":"acme/team model","object":"model","created":1,"owned_by":"acme","x_future":{"a":[1,2]}}`
	c := rs.start(t, 200, body)
	m, err := c.GetModel(context.Background(), "acme/team model")
	if err != nil {
		t.Fatal(err)
	}
	if rs.path != "/inf/v1/models/acme/team%20model" {
		t.Fatalf("path %s", rs.path)
	}
	if m.ID != "acme/team model" || m.OwnedBy != "acme" {
		t.Fatalf("%+v", m)
	}
	// Re-encoding prints what the server sent, unknown members included.
	out, err := json.Marshal(m)
	if err != nil || string(out) != body {
		t.Fatalf("re-encoded %s (%v)", out, err)
	}
}

func TestInferenceErrors(t *testing.T) {
	var rs recordingServer
	c := rs.start(t, 404, `{"error":{"message":"The model 'x/y' does not exist","type":"invalid_request_error","param":null,"code":"model_not_found"}}`)
	_, err := c.GetModel(context.Background(), "x/y")
	if !IsStatus(err, 404) || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("err %v", err)
	}
	// A management answer's error shape is read as before.
	c = rs.start(t, 403, `{"detail":"missing permission"}`)
	_, err = c.ListCredentials(context.Background(), OrgScope("acme"))
	if !IsStatus(err, 403) || !strings.Contains(err.Error(), "missing permission") {
		t.Fatalf("err %v", err)
	}
}

func TestImportCatalogSendsTheDocumentAsIs(t *testing.T) {
	var rs recordingServer
	c := rs.start(t, 200, `{"data":{"providers":1,"models":2}}`)
	doc := "providers: []\nmodels: []\n# price: 2.50\n"
	res, err := c.ImportCatalog(context.Background(), []byte(doc))
	if err != nil || res.Providers != 1 || res.Models != 2 {
		t.Fatalf("%+v %v", res, err)
	}
	if rs.method != "POST" || rs.path != "/api/v1/instance/catalog/import" || rs.body != doc {
		t.Fatalf("%s %s %q", rs.method, rs.path, rs.body)
	}
}
