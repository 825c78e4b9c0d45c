package publish_test

import (
	"context"
	"crypto/ed25519"
	"testing"

	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/bundle/bundletest"
	"github.com/gw-gateway/gw/server/publish"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/fixture"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// BenchmarkCompile compiles the benchmark organization (500 models, 10,000
// keys, 200 policies) on SQLite: "unchanged" is the common case of a
// refresh after a change that did not touch the bundle (read, compare,
// return the stored one), "changed" a rename between compiles, so that
// every compile signs and stores a new version.
//
//	go test -run '^$' -bench Compile -benchmem ./server/bundle
func BenchmarkCompile(b *testing.B) {
	ctx := context.Background()
	st := store.New(storetest.Open(b, storetest.SQLite))
	kr := fixture.Keyring(b)
	syn, err := bundletest.NewSynthetic(1, bundletest.Benchmark)
	if err != nil {
		b.Fatal(err)
	}
	if err := fixture.SeedSynthetic(ctx, st, kr, syn); err != nil {
		b.Fatal(err)
	}
	key, err := publish.SigningKey(ctx, st, kr)
	if err != nil {
		b.Fatal(err)
	}
	c := &publish.Compiler{Store: st, Signer: key}
	first, err := c.Compile(ctx, syn.Body.OrgID)
	if err != nil {
		b.Fatal(err)
	}
	body, err := bundle.Verify(*first, key.Public().(ed25519.PublicKey))
	if err != nil {
		b.Fatal(err)
	}
	if len(body.Keys) != len(syn.Body.Keys) || len(body.Policies) != len(syn.Body.Policies) || len(body.Catalog.Models) != len(syn.Body.Catalog.Models) {
		b.Fatalf("compiled %d keys, %d policies, %d models", len(body.Keys), len(body.Policies), len(body.Catalog.Models))
	}
	b.Logf("bundle body: %d bytes", len(first.Body))

	b.Run("unchanged", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s, err := c.Compile(ctx, syn.Body.OrgID)
			if err != nil || s.Version != first.Version {
				b.Fatalf("v%d: %v", s.Version, err)
			}
		}
	})
	b.Run("changed", func(b *testing.B) {
		ws, err := st.GetWorkspace(ctx, syn.Body.Workspaces[0].ID)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			b.StopTimer()
			ws.Name = "renamed " + string(rune('a'+i%26)) + string(rune('a'+i/26%26))
			if err := st.UpdateWorkspace(ctx, ws); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if _, err := c.Compile(ctx, syn.Body.OrgID); err != nil {
				b.Fatal(err)
			}
		}
	})
}
