package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// Issue 27, row 7: one key sent 10,500 requests in 3.5 s, each with a new
// X-Gw-Tags set. Rolling up thousands of new tag sets held SQLite's write
// lock for 5 to 19 s (the set members were read by organization, not by
// set), and the writers waiting in SQLite's busy handler failed after its
// 10 s: heartbeats (500), a budget lease (the in-process plane then refused
// the budgeted workspace), a policy change and its bundle refresh, a usage
// flush. The same burst, with the per-key bound on new tag sets lifted so
// that every request brings its set to the store, now leaves every other
// write alone, on SQLite (writers take turns at the store's write gate,
// each turn short) and on PostgreSQL: every request answered, every policy
// change made and published, every heartbeat, lease and flush written.
func TestTagBurstLeavesOtherWritesAlone(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			cp := startServer(t, server.Config{Role: server.RoleAll, DB: storetest.Open(t, d), Keyring: keyring(t), KeyTagSetsPerMinute: -1})
			up := providerstest.NewOpenAI(t, "sk-upstream-burst")
			if _, err := cp.Owner.CreateCredential(ctx, client.OrgScope("default"), wire.ProviderCredentialCreate{
				Provider: "openai", Label: "fake", Secret: up.Key, BaseURL: up.BaseURL()}); err != nil {
				t.Fatal(err)
			}
			budget := `{"target":{"kind":"workspace"},"rules":[{"match":{"kind":"all_requests"},"action":{"kind":"budget","amount_usd":"100","period":"month","aggregation":"shared"}}]}`
			if _, err := cp.Owner.CreatePolicy(ctx, "default", "default", wire.PolicyCreate{Name: "budget", Definition: wire.PolicyDefinition(budget)}); err != nil {
				t.Fatal(err)
			}
			ik, err := cp.Owner.CreateInferenceKey(ctx, "default", "default", wire.InferenceKeyCreate{Name: "burst"})
			if err != nil {
				t.Fatal(err)
			}
			// A remote data plane heartbeats every second meanwhile.
			dp := remotePlane(t, cp.URL, dataPlaneToken(t, cp), "dp-burst", t.TempDir(), nil)
			enroll(t, cp, "dp-burst", nil)
			waitUntil(t, "the key to serve", func() bool { s, _ := chatStatus(t, cp.URL, ik.Token, gptMini); return s == 200 })

			const n, workers = 10500, 64
			var next atomic.Int64
			statuses := map[int]int{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			start := time.Now()
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := next.Add(1)
						if i > n {
							return
						}
						req, _ := http.NewRequest("POST", cp.URL+"/inf/v1/chat/completions",
							strings.NewReader(`{"model":"`+gptMini+`","messages":[{"role":"user","content":"hi"}]}`))
						req.Header.Set("Authorization", "Bearer "+ik.Token)
						req.Header.Set("X-Gw-Tags", fmt.Sprintf("run=r%d,team=t%d", i, i%7))
						resp, err := http.DefaultClient.Do(req)
						if err != nil {
							t.Error(err)
							return
						}
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						mu.Lock()
						statuses[resp.StatusCode]++
						mu.Unlock()
					}
				}()
			}
			// Meanwhile a policy change, and so a bundle refresh, every
			// 200 ms.
			stop := make(chan struct{})
			var refreshes sync.WaitGroup
			refreshes.Add(1)
			go func() {
				defer refreshes.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					case <-time.After(200 * time.Millisecond):
					}
					if _, err := cp.Owner.CreatePolicy(ctx, "default", "default", wire.PolicyCreate{Name: fmt.Sprintf("p%d", i),
						Definition: wire.PolicyDefinition(`{"target":{"kind":"workspace"},"rules":[{"match":{"kind":"all_requests"},"action":{"kind":"deny","message":"x"}}]}`), Enabled: ptr(false)}); err != nil {
						t.Errorf("policy change during the burst: %v", err)
					}
				}
			}()
			wg.Wait()
			close(stop)
			refreshes.Wait()
			t.Logf("%d requests in %s: %v", n, time.Since(start).Round(time.Millisecond), statuses)
			// The last heartbeats, leases and flushes.
			time.Sleep(2 * time.Second)
			for _, l := range strings.Split(cp.logs.String()+dp.logs.String(), "\n") {
				if strings.Contains(l, "level=ERROR") || strings.Contains(l, "failed") || strings.Contains(l, "budget sync") || strings.Contains(l, "locked") || strings.Contains(l, "BUSY") {
					t.Errorf("log: %s", l)
				}
			}
		})
	}
}
