package publish

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store"
)

// signingKeyAAD binds the sealed private key to its column, so no other
// sealed value (a provider secret, say) can be substituted for it.
const signingKeyAAD = "bundle_signing_key"

// SigningKey returns the instance's bundle signing key, creating it on first
// use. Every control-plane replica must sign with the same key, so the pair
// lives in instance_state, the private half sealed with the instance secret
// key. Replicas starting together may each generate a pair; the store keeps
// the first one written and the others read it back and use it.
func SigningKey(ctx context.Context, st *store.Store, kr *secrets.Keyring) (ed25519.PrivateKey, error) {
	state, err := st.GetInstanceState(ctx)
	if err != nil {
		return nil, fmt.Errorf("read instance state: %w", err)
	}
	if state.BundlePublicKey == nil {
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("generate bundle signing key: %w", err)
		}
		sealed, err := kr.Seal(priv.Seed(), signingKeyAAD)
		if err != nil {
			return nil, fmt.Errorf("seal bundle signing key: %w", err)
		}
		if err := st.SetBundleSigningKey(ctx, base64.StdEncoding.EncodeToString(pub), sealed); err != nil {
			return nil, fmt.Errorf("store bundle signing key: %w", err)
		}
		if state, err = st.GetInstanceState(ctx); err != nil {
			return nil, fmt.Errorf("read instance state: %w", err)
		}
	}
	return openSigningKey(state, kr)
}

func openSigningKey(state *store.InstanceState, kr *secrets.Keyring) (ed25519.PrivateKey, error) {
	if state.BundlePublicKey == nil || state.BundlePrivateKeySealed == nil {
		return nil, errors.New("bundle signing key is only half stored")
	}
	pub, err := base64.StdEncoding.DecodeString(*state.BundlePublicKey)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return nil, errors.New("stored bundle public key is malformed")
	}
	seed, err := kr.Open(*state.BundlePrivateKeySealed, signingKeyAAD)
	if err != nil {
		return nil, fmt.Errorf("open bundle signing key: %w", err)
	}
	if len(seed) != ed25519.SeedSize {
		return nil, errors.New("stored bundle private key is malformed")
	}
	priv := ed25519.NewKeyFromSeed(seed)
	// Data planes trust the stored public half; a private half that does not
	// match it would sign bundles every data plane refuses.
	if !bytes.Equal(priv.Public().(ed25519.PublicKey), pub) {
		return nil, errors.New("stored bundle signing key pair does not match")
	}
	return priv, nil
}
