package reseal

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

func TestResealAll(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		st := store.New(db)
		oldKey, _ := secrets.GenerateKey()
		old := secrets.NewKeyring(oldKey)
		now := store.Now()
		c := &store.ProviderCredential{ID: uuid.New(), Provider: "openai", Label: "x", CreatedAt: now, UpdatedAt: now}
		c.SecretSealed, _ = old.Seal([]byte("upstream-secret"), CredentialAAD(c.ID))
		if err := st.CreateProviderCredential(ctx, c); err != nil {
			t.Fatal(err)
		}
		if _, err := st.GetInstanceState(ctx); err != nil {
			t.Fatal(err)
		}
		bk, _ := old.Seal([]byte("signing-key"), BundleKeyAAD)
		if err := st.SetBundleSigningKey(ctx, "pub", bk); err != nil {
			t.Fatal(err)
		}

		idp := &store.IdentityProvider{ID: uuid.New(), Name: "okta", Kind: "oidc", Issuer: "https://idp.example", ClientID: "c",
			Scopes: store.Strings{"openid"}, AllowedEmailDomains: store.Strings{}, ClaimEmail: "email", ClaimName: "name",
			ClaimGroups: "groups", GroupMappings: "[]", Discovery: "{}", CreatedAt: now, UpdatedAt: now}
		sealed, _ := old.Seal([]byte("client-secret"), IdentityProviderAAD(idp.ID))
		idp.ClientSecretSealed = &sealed
		if err := st.CreateIdentityProvider(ctx, idp); err != nil {
			t.Fatal(err)
		}

		newKey, _ := secrets.GenerateKey()
		ring := secrets.NewKeyring(newKey, oldKey)
		n, err := All(ctx, st, ring)
		if err != nil || n != 3 {
			t.Fatalf("reseal: %d %v", n, err)
		}
		if n, _ := All(ctx, st, ring); n != 0 {
			t.Fatalf("second reseal touched %d values", n)
		}
		onlyNew := secrets.NewKeyring(newKey)
		got, _ := st.GetProviderCredential(ctx, c.ID)
		if plain, err := onlyNew.Open(got.SecretSealed, CredentialAAD(c.ID)); err != nil || string(plain) != "upstream-secret" {
			t.Fatalf("credential after rotation: %q %v", plain, err)
		}
		gotIDP, _ := st.GetIdentityProvider(ctx, idp.ID)
		if plain, err := onlyNew.Open(*gotIDP.ClientSecretSealed, IdentityProviderAAD(idp.ID)); err != nil || string(plain) != "client-secret" {
			t.Fatalf("identity provider secret after rotation: %q %v", plain, err)
		}
		state, _ := st.GetInstanceState(ctx)
		if plain, err := onlyNew.Open(*state.BundlePrivateKeySealed, BundleKeyAAD); err != nil || string(plain) != "signing-key" {
			t.Fatalf("bundle key after rotation: %v", err)
		}
	})
}
