package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/wire"
)

// A caller-supplied X-Request-Id is kept and lands in the audit event.
func TestAuditKeepsCallerRequestID(t *testing.T) {
	t.Parallel()
	eachEnv(t, func(t *testing.T, e *env) {
		const id = "trace-0123456789"
		req, _ := http.NewRequest("POST", e.srv.URL+"/api/v1/organizations/default/workspaces", strings.NewReader(`{"name":"Traced"}`))
		req.Header.Set("Authorization", "Bearer "+e.ownerKey)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Request-Id", id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("X-Request-Id") != id {
			t.Fatalf("status %d, X-Request-Id %q", resp.StatusCode, resp.Header.Get("X-Request-Id"))
		}
		events := decodeData[[]wire.AuditEvent](t, e.must("GET", "/api/v1/organizations/default/activity", e.ownerKey, nil))
		if len(events) == 0 || events[0].Action != "workspace.created" || events[0].RequestID != id {
			t.Fatalf("newest event: %+v", events)
		}
	})
}

// tnRawCall is a request for goroutines other than the test's (no t.Fatal).
func tnRawCall(base, method, path, cred string, body any) (int, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequest(method, base+path, strings.NewReader(string(raw)))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if v, ok := strings.CutPrefix(cred, "cookie:"); ok {
		req.AddCookie(&http.Cookie{Name: api.SessionCookie, Value: v})
		req.Header.Set("X-Requested-With", "XMLHttpRequest")
	} else {
		req.Header.Set("Authorization", "Bearer "+cred)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}
