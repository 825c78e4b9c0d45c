package api_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/archive"
	"github.com/gw-gateway/gw/server/archive/archivetest"
	"github.com/gw-gateway/gw/server/egress"
)

// TestUsagePayloadReadBack reads an archived payload back at both places
// its route stands (organization and workspace), from a real S3-compatible
// server: the object a data plane's writer would have put, under the key
// the event's ids and time make. Another workspace's place answers 404.
func TestUsagePayloadReadBack(t *testing.T) {
	s3 := archivetest.Start(t)
	eachEnv(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		bucket := "payloads-" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
		dest := archive.Destination{Endpoint: s3.Endpoint(), Region: "us-east-1", Bucket: bucket, Prefix: "audit",
			AccessKeyID: archivetest.Access, SecretAccessKey: archivetest.Secret, PathStyle: true}
		c := archive.NewClient(dest, egress.NewDialer(func() egress.Policy { return egress.Policy{} }))
		if err := c.CreateBucket(ctx); err != nil {
			t.Fatal(err)
		}
		e.must("PATCH", wsBase, e.ownerKey, map[string]any{"archive": map[string]any{"enabled": true, "retention_days": 30,
			"include": []any{"request", "response"}, "destination": map[string]any{"kind": "s3", "endpoint": s3.Endpoint(),
				"region": "us-east-1", "bucket": bucket, "prefix": "audit", "path_style": true,
				"credential": map[string]any{"access_key_id": archivetest.Access, "secret_access_key": archivetest.Secret}}}})

		at := time.Now().UTC().Truncate(time.Millisecond)
		ev := e.usageEvent(at, "openai/gpt-4o", 10, 20, "0.000225")
		id := ev["id"].(uuid.UUID)
		e.must("POST", "/api/v1/data-plane/usage-events", e.ownerKey, map[string]any{"events": []any{ev}})
		gz, err := archive.Encode(&archive.Payload{UsageEventID: id, RequestID: "req-payload-1", OrgID: e.boot.Organization.ID,
			WorkspaceID: e.boot.Workspace.ID, Endpoint: "chat.completions", OccurredAt: at,
			Request:  json.RawMessage(`{"model":"openai/gpt-4o","messages":[{"role":"user","content":"hi"}]}`),
			Response: json.RawMessage(`{"id":"chatcmpl-1","choices":[]}`)})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Put(ctx, archive.Key("audit", e.boot.Organization.ID, e.boot.Workspace.ID, at, id), gz); err != nil {
			t.Fatal(err)
		}
		for _, place := range []string{"/api/v1/organizations/default", wsBase} {
			raw := e.must("GET", place+"/usage-events/"+id.String()+"/payload", e.ownerKey, nil)
			if !strings.Contains(string(raw), `"content":"hi"`) || !strings.Contains(string(raw), `chatcmpl-1`) ||
				strings.Contains(string(raw), archivetest.Secret) {
				t.Fatalf("payload at %s: %s", place, raw)
			}
		}
		e.must("POST", "/api/v1/organizations/default/workspaces", e.ownerKey, map[string]any{"name": "Other", "slug": "other-ws"})
		if st, raw := e.do("GET", "/api/v1/organizations/default/workspaces/other-ws/usage-events/"+id.String()+"/payload", e.ownerKey, nil); st != 404 {
			t.Fatalf("another workspace's place: %d %s", st, raw)
		}
	})
}
