package cli

import (
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/store/storetest"
)

// gw status names a workspace whose archive bucket could not be reached
// when its setting was saved (issue 32), on both databases, as a warning.
func TestStatusArchiveUnreachable(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newResEnvOn(t, db)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		endpoint := "http://" + l.Addr().String()
		l.Close()
		body := `{"archive":{"enabled":true,"destination":{"kind":"s3","endpoint":"` + endpoint + `","bucket":"acme-down",
			"path_style":true,"credential":{"access_key_id":"AK","secret_access_key":"sk-archive"}}}}`
		req, _ := http.NewRequest("PATCH", e.url+"/api/v1/organizations/"+e.boot.Organization.Slug+"/workspaces/"+e.boot.Workspace.Slug, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+e.boot.ManagementKey.Token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("archive setting: %d", resp.StatusCode)
		}
		r := e.gw("", "status")
		mustContain(t, "gw status", r.out, "archive "+e.boot.Workspace.Slug+"\twarn\tbucket acme-down could not be reached when the setting was saved")
		if strings.Contains(r.out, "sk-archive") {
			t.Errorf("gw status shows the secret:\n%s", r.out)
		}
	})
}
