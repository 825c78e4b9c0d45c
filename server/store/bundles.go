package store

import (
	"context"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// SetBundleSigningKey stores the signing key pair once; a replica that
// loses the race keeps the winner's pair (the update is conditional).
func (s *Store) SetBundleSigningKey(ctx context.Context, public, privateSealed string) error {
	_, err := s.db.NewUpdate().Model((*InstanceState)(nil)).
		Set("bundle_public_key = ?", public).Set("bundle_private_key_sealed = ?", privateSealed).
		Where("id = 1").Where("bundle_public_key IS NULL").Exec(ctx)
	return mapErr(err)
}

// ReplaceBundlePrivateKey re-seals the private key (secret key rotation).
func (s *Store) ReplaceBundlePrivateKey(ctx context.Context, privateSealed string) error {
	_, err := s.db.NewUpdate().Model((*InstanceState)(nil)).Set("bundle_private_key_sealed = ?", privateSealed).Where("id = 1").Exec(ctx)
	return mapErr(err)
}

// GetBundle reads an organization's latest bundle.
func (s *Store) GetBundle(ctx context.Context, orgID uuid.UUID) (*Bundle, error) {
	b := new(Bundle)
	return b, mapErr(s.db.NewSelect().Model(b).Where("org_id = ?", orgID).Scan(ctx))
}

// SaveBundle stores a newly compiled bundle unless the stored one's version
// is already b's or later, and reports whether it stored it: version only
// moves forward, and a compiler that loses a race learns it and starts over.
func (s *Store) SaveBundle(ctx context.Context, b *Bundle) (bool, error) {
	var n int64
	err := s.write(ctx, func(db bun.IDB) error {
		res, err := db.NewInsert().Model(b).
			On("CONFLICT (org_id) DO UPDATE").
			Set("version = EXCLUDED.version, hash = EXCLUDED.hash, signature = EXCLUDED.signature, body = EXCLUDED.body, compiled_at = EXCLUDED.compiled_at").
			Where("?TableAlias.version < EXCLUDED.version").
			Exec(ctx)
		if err != nil {
			return mapErr(err)
		}
		n, err = res.RowsAffected()
		return err
	})
	return n == 1, err
}

// ListBundles returns every organization's latest bundle.
func (s *Store) ListBundles(ctx context.Context) ([]Bundle, error) {
	out := []Bundle{}
	return out, mapErr(s.db.NewSelect().Model(&out).OrderExpr("org_id ASC").Scan(ctx))
}

// ListOrganizationIDs returns every organization's id.
func (s *Store) ListOrganizationIDs(ctx context.Context) ([]uuid.UUID, error) {
	var out []uuid.UUID
	err := s.db.NewSelect().Model((*Organization)(nil)).Column("id").OrderExpr("id ASC").Scan(ctx, &out)
	return out, mapErr(err)
}
