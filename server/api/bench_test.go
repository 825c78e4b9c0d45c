package api_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// BenchmarkListWorkspaces measures GET /organizations/{org}/workspaces with
// 1,000 workspaces through the full stack (HTTP, key authentication, scope
// resolution, query, encoding) on each dialect, reporting p50 and p99
// latency. The baseline is GET /api/v1/bootstrap in the same run: one
// unauthenticated single-row read, so the ratio shows the cost of auth and
// the 1,000-row listing above the bare request path.
func BenchmarkListWorkspaces(b *testing.B) {
	for _, d := range storetest.Dialects(b) {
		b.Run(string(d), func(b *testing.B) {
			ctx := context.Background()
			st := store.New(storetest.Open(b, d))
			s, err := api.New(ctx, st, api.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				b.Fatal(err)
			}
			booted, err := backend.Bootstrap(ctx, st, backend.System("benchmark"), backend.BootstrapInput{Email: "bench@example.com", Password: "benchmark password"}, nil)
			if err != nil {
				b.Fatal(err)
			}
			boot := api.BootstrapResult(booted)
			srv := httptest.NewServer(s)
			defer srv.Close()
			orgID := boot.Organization.ID
			err = st.InTx(ctx, func(tx *store.Store) error {
				for i := 0; i < 999; i++ {
					now := store.Now()
					w := &store.Workspace{ID: uuid.New(), OrgID: orgID, Name: fmt.Sprintf("ws %d", i), Slug: fmt.Sprintf("ws-%d", i), CreatedAt: now, UpdatedAt: now}
					if err := tx.CreateWorkspace(ctx, w); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			get := func(b *testing.B, path, key string) time.Duration {
				req, _ := http.NewRequest("GET", srv.URL+path, nil)
				if key != "" {
					req.Header.Set("Authorization", "Bearer "+key)
				}
				start := time.Now()
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("%s: %d", path, resp.StatusCode)
				}
				return time.Since(start)
			}
			run := func(name, path, key string) {
				b.Run(name, func(b *testing.B) {
					lat := make([]time.Duration, 0, b.N)
					for i := 0; i < b.N; i++ {
						lat = append(lat, get(b, path, key))
					}
					sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
					b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
					b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
				})
			}
			run("baseline_bootstrap_status", "/api/v1/bootstrap", "")
			run("list_1000_workspaces", "/api/v1/organizations/default/workspaces", boot.ManagementKey.Token)
		})
	}
}
