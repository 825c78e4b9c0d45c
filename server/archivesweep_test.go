package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server"
	"github.com/gw-gateway/gw/server/archive"
	"github.com/gw-gateway/gw/server/archive/archivetest"
	"github.com/gw-gateway/gw/server/egress"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// closedEndpoint is an http URL on 127.0.0.1 where nothing listens.
func closedEndpoint(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// The retention sweep runs on one control-plane replica at a time (issue
// 32: a deletion is audited once): replicas sweeping together, only the
// lease's holder sweeps, and it keeps the turn for the interval. Each
// sweep records whether the bucket answered, which the workspace record
// shows (and gw status reads); saving the setting records the same.
func TestArchiveSweepOneReplicaAndCheck(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			db := storetest.Open(t, d)
			kr := keyring(t)
			cp := startServer(t, server.Config{Role: server.RoleAll, DB: db, Keyring: kr})
			const wsPath = "/api/v1/organizations/default/workspaces/default"
			resp, raw := playgroundCall(t, cp.URL, "PATCH", wsPath, cp.token, fmt.Sprintf(`{"archive":{"enabled":true,"retention_days":7,
				"destination":{"kind":"s3","endpoint":%q,"bucket":"down","path_style":true,
				"credential":{"access_key_id":"AK","secret_access_key":"sk-archive-secret"}}}}`, closedEndpoint(t)))
			var ws struct{ Data wire.Workspace }
			if resp.StatusCode != 200 || json.Unmarshal([]byte(raw), &ws) != nil {
				t.Fatalf("archive setting: %d %s", resp.StatusCode, raw)
			}
			if c := ws.Data.ArchiveCheck; c == nil || c.OK || c.By != "save" || !strings.Contains(c.Error, "could not be reached") {
				t.Fatalf("the save's check: %+v", c)
			}
			policy := func() egress.Policy { return egress.Policy{} }
			var wg sync.WaitGroup
			swept := make(chan string, 4)
			for _, holder := range []string{"replica-a", "replica-b", "replica-c", "replica-d"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ok, _, err := server.SweepArchivesLeased(ctx, store.New(db), holder, time.Hour, kr, policy, time.Now())
					if ok {
						swept <- holder
						if err == nil {
							t.Errorf("%s swept a bucket nobody listens at without an error", holder)
						}
					}
				}()
			}
			wg.Wait()
			close(swept)
			var who []string
			for h := range swept {
				who = append(who, h)
			}
			if len(who) != 1 {
				t.Fatalf("replicas that swept together: %v", who)
			}
			// The holder's next turn sweeps; another replica's does not.
			for _, h := range []string{"replica-a", "replica-b", "replica-c", "replica-d"} {
				ok, _, _ := server.SweepArchivesLeased(ctx, store.New(db), h, time.Hour, kr, policy, time.Now())
				if ok != (h == who[0]) {
					t.Errorf("%s's turn: swept %v (holder %s)", h, ok, who[0])
				}
			}
			resp, raw = playgroundCall(t, cp.URL, "GET", wsPath, cp.token, "")
			if resp.StatusCode != 200 || json.Unmarshal([]byte(raw), &ws) != nil {
				t.Fatalf("workspace: %d %s", resp.StatusCode, raw)
			}
			if c := ws.Data.ArchiveCheck; c == nil || c.OK || c.By != "sweep" || c.Error == "" || strings.Contains(raw, "sk-archive-secret") {
				t.Fatalf("the sweep's check: %+v", c)
			}
			// Disabled, the archive is no longer checked and shows no check.
			resp, raw = playgroundCall(t, cp.URL, "PATCH", wsPath, cp.token, `{"archive":null}`)
			if resp.StatusCode != 200 || strings.Contains(raw, "archive_check") {
				t.Fatalf("archive removed: %d %s", resp.StatusCode, raw)
			}
		})
	}
}

// Against a real S3-compatible server: replicas sweeping together delete
// each expired object once and audit each deletion once (issue 32), and
// the bucket's check is recorded ok.
func TestArchiveSweepReplicasAuditOnce(t *testing.T) {
	s3 := archivetest.Start(t)
	for _, d := range storetest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			bucket := "sweep-" + strings.ToLower(string(d))
			dest := archive.Destination{Endpoint: s3.Endpoint(), Region: "us-east-1", Bucket: bucket, Prefix: "audit",
				AccessKeyID: archivetest.Access, SecretAccessKey: archivetest.Secret, PathStyle: true}
			c := archive.NewClient(dest, egress.NewDialer(func() egress.Policy { return egress.Policy{} }))
			if err := c.CreateBucket(ctx); err != nil {
				t.Fatal(err)
			}
			db := storetest.Open(t, d)
			kr := keyring(t)
			cp := startServer(t, server.Config{Role: server.RoleAll, DB: db, Keyring: kr})
			const wsPath = "/api/v1/organizations/default/workspaces/default"
			resp, raw := playgroundCall(t, cp.URL, "PATCH", wsPath, cp.token, fmt.Sprintf(`{"archive":{"enabled":true,"retention_days":7,
				"destination":{"kind":"s3","endpoint":%q,"region":"us-east-1","bucket":%q,"prefix":"audit","path_style":true,
				"credential":{"access_key_id":%q,"secret_access_key":%q}}}}`, s3.Endpoint(), bucket, archivetest.Access, archivetest.Secret))
			var ws struct{ Data wire.Workspace }
			if resp.StatusCode != 200 || json.Unmarshal([]byte(raw), &ws) != nil || ws.Data.ArchiveCheck == nil || !ws.Data.ArchiveCheck.OK {
				t.Fatalf("archive setting: %d %s", resp.StatusCode, raw)
			}
			const n = 12
			old := time.Now().AddDate(0, 0, -30)
			for range n {
				if err := c.Put(ctx, archive.Key("audit", ws.Data.OrgID, ws.Data.ID, old, uuid.New()), []byte("x")); err != nil {
					t.Fatal(err)
				}
			}
			var wg sync.WaitGroup
			var mu sync.Mutex
			deleted, swept := 0, 0
			for i := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ok, k, err := server.SweepArchivesLeased(ctx, store.New(db), fmt.Sprintf("replica-%d", i), time.Hour, kr,
						func() egress.Policy { return egress.Policy{} }, time.Now())
					if err != nil {
						t.Error(err)
					}
					mu.Lock()
					defer mu.Unlock()
					deleted += k
					if ok {
						swept++
					}
				}()
			}
			wg.Wait()
			if swept != 1 || deleted != n {
				t.Fatalf("%d replicas swept, %d objects deleted; want 1 and %d", swept, deleted, n)
			}
			resp, raw = playgroundCall(t, cp.URL, "GET", "/api/v1/organizations/default/activity?limit=100", cp.token, "")
			if got := strings.Count(raw, `"archive.payload_deleted"`); resp.StatusCode != 200 || got != n {
				t.Errorf("audit of the deletions: %d, %d entries for %d objects", resp.StatusCode, got, n)
			}
			resp, raw = playgroundCall(t, cp.URL, "GET", wsPath, cp.token, "")
			if resp.StatusCode != 200 || json.Unmarshal([]byte(raw), &ws) != nil || ws.Data.ArchiveCheck == nil || !ws.Data.ArchiveCheck.OK ||
				ws.Data.ArchiveCheck.By != "sweep" {
				t.Errorf("the sweep's check: %s", raw)
			}
		})
	}
}
