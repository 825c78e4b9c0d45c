package publish_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"sync"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/publish"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/fixture"
	"github.com/gw-gateway/gw/server/store/storetest"
)

func TestSigningKeyIsCreatedOnceAndShared(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		st, kr := store.New(db), fixture.Keyring(t)

		// Replicas starting together race to create the pair; all must
		// end up signing with the one that was stored.
		keys := make([]ed25519.PrivateKey, 4)
		var wg sync.WaitGroup
		for i := range keys {
			wg.Go(func() {
				k, err := publish.SigningKey(ctx, st, kr)
				if err != nil {
					t.Error(err)
				}
				keys[i] = k
			})
		}
		wg.Wait()
		for _, k := range keys[1:] {
			if !k.Equal(keys[0]) {
				t.Fatal("replicas ended up with different signing keys")
			}
		}
		again, err := publish.SigningKey(ctx, st, kr)
		if err != nil || !again.Equal(keys[0]) {
			t.Fatalf("second read: %v, same key %v", err, again.Equal(keys[0]))
		}

		state, err := st.GetInstanceState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if *state.BundlePrivateKeySealed == string(keys[0].Seed()) || !kr.SealedWithCurrent(*state.BundlePrivateKeySealed) {
			t.Fatal("the private key is not stored sealed with the instance key")
		}

		// Another instance key cannot open it, and says so.
		if _, err := publish.SigningKey(ctx, st, fixture.Keyring(t)); !errors.Is(err, secrets.ErrCannotOpen) {
			t.Fatalf("foreign keyring: got %v, want ErrCannotOpen", err)
		}
	})
}
