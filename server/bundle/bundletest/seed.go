package bundletest

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/catalogdb"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store"
)

// Seed writes the synthetic organization into an empty, migrated database:
// its catalog, organization, members, workspaces, keys, policies and
// credentials, so that compiling it yields s.Body's content. Rows go in by
// the thousand, as one multi-row insert each.
func (s *Synthetic) Seed(ctx context.Context, st *store.Store, kr *secrets.Keyring) error {
	now := store.Now()
	b := s.Body
	if err := catalogdb.Import(ctx, st, &b.Catalog, now); err != nil {
		return err
	}
	return st.DB().RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		org := []store.Organization{{ID: b.OrgID, Name: "Synthetic", Slug: "synthetic-" + b.OrgID.String()[:8], CreatedAt: now, UpdatedAt: now}}
		var users []store.User
		var members []store.Membership
		for i, id := range s.Users {
			users = append(users, store.User{ID: id, Email: fmt.Sprintf("user-%d-%s@example.test", i, id), Name: "user", InstanceRole: auth.InstanceMember, CreatedAt: now, UpdatedAt: now})
			members = append(members, store.Membership{OrgID: b.OrgID, UserID: id, Role: auth.OrgMember, Status: auth.MembershipActive, CreatedAt: now, UpdatedAt: now})
		}
		var workspaces []store.Workspace
		for _, w := range b.Workspaces {
			workspaces = append(workspaces, store.Workspace{ID: w.ID, OrgID: b.OrgID, Name: w.Name, Slug: w.Slug, CreatedAt: now, UpdatedAt: now})
		}
		var keys []store.InferenceKey
		for _, k := range b.Keys {
			keys = append(keys, store.InferenceKey{ID: k.ID, OrgID: b.OrgID, WorkspaceID: k.WorkspaceID, UserID: k.OwnerID, Name: "key",
				Prefix: "sk-gw-synth", TokenHash: k.TokenHash, ExpiresAt: k.ExpiresAt, CreatedAt: now, UpdatedAt: now})
		}
		var policies []store.Policy
		for _, p := range b.Policies {
			def, err := p.Definition.MarshalJSON()
			if err != nil {
				return err
			}
			policies = append(policies, store.Policy{ID: p.ID, OrgID: b.OrgID, WorkspaceID: p.WorkspaceID, Name: p.Name, Enabled: true, Definition: string(def), CreatedAt: now, UpdatedAt: now})
		}
		var creds []store.ProviderCredential
		for _, c := range b.Credentials {
			sealed, err := kr.Seal([]byte("sk-upstream"), "provider_credential:"+c.ID.String())
			if err != nil {
				return err
			}
			row := store.ProviderCredential{ID: c.ID, WorkspaceID: c.WorkspaceID, Provider: c.Provider, Label: c.Provider, SecretSealed: sealed, SecretHint: "…", CreatedAt: now, UpdatedAt: now}
			if c.Scope != policy.ScopePlatform {
				org := b.OrgID
				row.OrgID = &org
			}
			creds = append(creds, row)
		}
		// In foreign-key order; the first failure aborts the transaction.
		for _, insert := range []func() error{
			func() error { return insertAll(ctx, tx, org) },
			func() error { return insertAll(ctx, tx, users) },
			func() error { return insertAll(ctx, tx, members) },
			func() error { return insertAll(ctx, tx, workspaces) },
			func() error { return insertAll(ctx, tx, keys) },
			func() error { return insertAll(ctx, tx, policies) },
			func() error { return insertAll(ctx, tx, creds) },
		} {
			if err := insert(); err != nil {
				return err
			}
		}
		return nil
	})
}

// insertAll inserts rows a thousand at a time, keeping each statement far
// below either database's size limits.
func insertAll[T any](ctx context.Context, db bun.IDB, rows []T) error {
	for start := 0; start < len(rows); start += 1000 {
		chunk := rows[start:min(start+1000, len(rows))]
		if _, err := db.NewInsert().Model(&chunk).Exec(ctx); err != nil {
			return fmt.Errorf("insert %T: %w", rows, err)
		}
	}
	return nil
}
