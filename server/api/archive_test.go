package api_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestArchiveSettingValidation (issue 32): a workspace's archive setting
// is read strictly, each problem a 422 naming the field; the secret is
// never echoed, in a 422 or an answer; a new destination needs its
// secret; null clears the setting.
func TestArchiveSettingValidation(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		k := e.ownerKey
		const secret = "archive-secret-never-echoed"
		good := func() map[string]any {
			return map[string]any{"enabled": false, "retention_days": 30, "include": []any{"request"},
				"destination": map[string]any{"kind": "s3", "endpoint": "https://s3.example.com", "region": "eu-west-1", "bucket": "acme-archive",
					"prefix": "gw/", "path_style": true, "credential": map[string]any{"access_key_id": "AKIA1", "secret_access_key": secret}}}
		}
		dest := func(a map[string]any) map[string]any { return a["destination"].(map[string]any) }
		for _, c := range []struct {
			name string
			edit func(a map[string]any)
			want string
		}{
			{"kind", func(a map[string]any) { dest(a)["kind"] = "gcs" }, "body.archive.destination.kind:literal_error"},
			{"endpoint scheme", func(a map[string]any) { dest(a)["endpoint"] = "ftp://s3.example.com" }, "body.archive.destination.endpoint:url_parsing"},
			{"endpoint metadata", func(a map[string]any) { dest(a)["endpoint"] = "http://169.254.169.254" }, "body.archive.destination.endpoint:value_error"},
			{"bucket", func(a map[string]any) { dest(a)["bucket"] = "Bad_Bucket" }, "body.archive.destination.bucket:value_error"},
			{"retention", func(a map[string]any) { a["retention_days"] = 4000 }, "body.archive.retention_days:less_than_equal"},
			{"include", func(a map[string]any) { a["include"] = []any{"headers"} }, "body.archive.include.0:literal_error"},
			{"include twice", func(a map[string]any) { a["include"] = []any{"request", "request"} }, "body.archive.include.1:value_error"},
			{"enabled", func(a map[string]any) { delete(a, "enabled") }, "body.archive.enabled:missing"},
			{"extra", func(a map[string]any) { a["format"] = "zip" }, "body.archive.format:extra_forbidden"},
			{"access key", func(a map[string]any) { delete(dest(a)["credential"].(map[string]any), "access_key_id") }, "body.archive.destination.credential.access_key_id:missing"},
			{"new destination without secret", func(a map[string]any) { delete(dest(a)["credential"].(map[string]any), "secret_access_key") }, "body.archive.destination.credential.secret_access_key:missing"},
		} {
			a := good()
			c.edit(a)
			code, raw := e.do("PATCH", wsBase, k, map[string]any{"archive": a})
			if code != 422 || !slices.Contains(issueSet(t, raw), c.want) {
				t.Errorf("%s: %d %s, want 422 with %s", c.name, code, raw, c.want)
			}
			if strings.Contains(string(raw), secret) {
				t.Errorf("%s: the secret is echoed: %s", c.name, raw)
			}
		}
		raw := e.must("PATCH", wsBase, k, map[string]any{"archive": good()})
		if strings.Contains(string(raw), secret) || !strings.Contains(string(raw), `"access_key_id":"AKIA1"`) || !strings.Contains(string(raw), `"prefix":"gw"`) {
			t.Errorf("saved: %s", raw)
		}
		if a := e.lastAudit("workspace.updated"); a == nil {
			t.Error("the setting is not audited")
		} else if b, _ := json.Marshal(a); strings.Contains(string(b), secret) || !strings.Contains(string(b), "acme-archive") {
			t.Errorf("audit of the setting: %s", b)
		}
		// The same destination without its secret keeps the sealed one.
		a := good()
		delete(dest(a)["credential"].(map[string]any), "secret_access_key")
		e.must("PATCH", wsBase, k, map[string]any{"archive": a})
		raw = e.must("PATCH", wsBase, k, map[string]any{"archive": nil})
		if !strings.Contains(string(raw), `"archive":null`) {
			t.Errorf("cleared: %s", raw)
		}
	})
}
