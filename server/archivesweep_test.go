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

	"github.com/gw-gateway/gw/server"
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
