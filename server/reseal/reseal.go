// Package reseal re-encrypts every sealed secret in the database with a
// keyring's current key: the data half of a secret-key rotation.
package reseal

import (
	"context"
	"fmt"

	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store"
)

// BundleKeyAAD binds the sealed bundle signing key to its purpose.
const BundleKeyAAD = "bundle_signing_key"

// CredentialAAD binds a provider credential's sealed secret to its row.
func CredentialAAD(id fmt.Stringer) string { return secrets.CredentialAAD(id) }

// IdentityProviderAAD binds an identity provider's sealed client secret to
// the provider.
func IdentityProviderAAD(id fmt.Stringer) string { return "identity_provider:" + id.String() }

// All re-seals, in one transaction, every value not sealed with the
// keyring's current key, opening it with whichever key of the ring sealed
// it. It returns how many values it re-sealed. Running it again is a no-op.
func All(ctx context.Context, st *store.Store, kr *secrets.Keyring) (int, error) {
	n := 0
	err := st.InTx(ctx, func(tx *store.Store) error {
		creds, err := tx.ListAllProviderCredentials(ctx)
		if err != nil {
			return err
		}
		for i := range creds {
			c := &creds[i]
			if kr.SealedWithCurrent(c.SecretSealed) {
				continue
			}
			aad := CredentialAAD(c.ID)
			plain, err := kr.Open(c.SecretSealed, aad)
			if err != nil {
				return fmt.Errorf("provider credential %s: %w", c.ID, err)
			}
			if c.SecretSealed, err = kr.Seal(plain, aad); err != nil {
				return err
			}
			if err := tx.UpdateProviderCredential(ctx, c); err != nil {
				return err
			}
			n++
		}
		idps, err := tx.ListIdentityProviders(ctx)
		if err != nil {
			return err
		}
		for i := range idps {
			p := &idps[i]
			if p.ClientSecretSealed == nil || kr.SealedWithCurrent(*p.ClientSecretSealed) {
				continue
			}
			aad := IdentityProviderAAD(p.ID)
			plain, err := kr.Open(*p.ClientSecretSealed, aad)
			if err != nil {
				return fmt.Errorf("identity provider %s: %w", p.Name, err)
			}
			sealed, err := kr.Seal(plain, aad)
			if err != nil {
				return err
			}
			p.ClientSecretSealed = &sealed
			if err := tx.UpdateIdentityProvider(ctx, p); err != nil {
				return err
			}
			n++
		}
		state, err := tx.GetInstanceState(ctx)
		if err != nil {
			return err
		}
		if sealed := state.BundlePrivateKeySealed; sealed != nil && !kr.SealedWithCurrent(*sealed) {
			plain, err := kr.Open(*sealed, BundleKeyAAD)
			if err != nil {
				return fmt.Errorf("bundle signing key: %w", err)
			}
			resealed, err := kr.Seal(plain, BundleKeyAAD)
			if err != nil {
				return err
			}
			if err := tx.ReplaceBundlePrivateKey(ctx, resealed); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}
