package backend_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/catalogdb"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// fakeSeal seals by naming: the rules do not depend on the cipher.
func fakeSeal(secret []byte, id uuid.UUID) (string, error) { return "sealed:" + id.String(), nil }

func TestCredentialRules(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		if err := catalogdb.Seed(ctx, w.st); err != nil {
			t.Fatal(err)
		}
		orgScope := store.CredentialScope{OrgID: &w.org.ID}
		wsScope := store.CredentialScope{OrgID: &w.org.ID, WorkspaceID: &w.ws.ID}
		url := "http://127.0.0.1:8000/v1"
		label := "renamed"
		secret := "sk-a-long-enough-secret-1234"
		var openai, compatible *store.ProviderCredential
		refused := errors.New("the provider's kind refuses this secret")
		checkRules(t, w.st, w.org.ID, []rule{
			{name: "create at the organization", op: func() error {
				var err error
				openai, err = backend.CreateCredential(ctx, w.st, w.admin, backend.CredentialCreate{Scope: orgScope, Provider: "openai",
					Label: "main", Secret: secret, Seal: fakeSeal})
				if err == nil && (openai.SecretHint != "…1234" || openai.SecretSealed != "sealed:"+openai.ID.String()) {
					t.Errorf("hint %q, sealed %q", openai.SecretHint, openai.SecretSealed)
				}
				return err
			}, action: "provider_credential.created", by: &w.admin},
			{name: "create an openai-compatible one with its URL", op: func() error {
				var err error
				compatible, err = backend.CreateCredential(ctx, w.st, w.admin, backend.CredentialCreate{Scope: wsScope, Provider: "openai-compatible",
					Label: "vllm", Secret: "short", BaseURL: &url, Seal: fakeSeal})
				return err
			}, action: "provider_credential.created", by: &w.admin},
			{name: "read it at another scope", op: func() error {
				_, err := backend.ScopedCredential(ctx, w.st, orgScope, compatible.ID)
				return err
			}, kind: backend.NotFound},
			{name: "update it from another scope", op: func() error {
				_, err := backend.UpdateCredential(ctx, w.st, w.admin, orgScope, compatible.ID, backend.CredentialUpdate{Label: &label, Seal: fakeSeal})
				return err
			}, kind: backend.NotFound},
			{name: "clear the URL of a provider the catalog gives none", op: func() error {
				_, err := backend.UpdateCredential(ctx, w.st, w.admin, wsScope, compatible.ID, backend.CredentialUpdate{ClearBaseURL: true,
					Secret: &secret, Seal: fakeSeal})
				return err
			}, kind: invalid},
			{name: "a check that refuses stops the update", op: func() error {
				_, err := backend.UpdateCredential(ctx, w.st, w.admin, orgScope, openai.ID, backend.CredentialUpdate{Label: &label, Seal: fakeSeal,
					Check: func(*store.ProviderCredential) error { return refused }})
				if !errors.Is(err, refused) {
					t.Errorf("err %v", err)
				}
				return nil
			}},
			{name: "clear the URL of one the catalog gives", op: func() error {
				_, err := backend.UpdateCredential(ctx, w.st, w.admin, orgScope, openai.ID, backend.CredentialUpdate{ClearBaseURL: true,
					Secret: &secret, Label: &label, Seal: fakeSeal})
				return err
			}, action: "provider_credential.updated", by: &w.admin},
			{name: "delete it from another organization", op: func() error {
				other := uuid.New()
				return backend.DeleteCredential(ctx, w.st, w.admin, store.CredentialScope{OrgID: &other}, openai.ID)
			}, kind: backend.NotFound},
			{name: "delete it", op: func() error { return backend.DeleteCredential(ctx, w.st, w.admin, orgScope, openai.ID) },
				action: "provider_credential.deleted", by: &w.admin},
		})
		c, err := w.st.GetProviderCredential(ctx, compatible.ID)
		if err != nil || c.Label != "vllm" || c.BaseURL == nil {
			t.Fatalf("refused updates changed the credential: %+v %v", c, err)
		}
	})
}
