package store

import (
	"context"

	"github.com/google/uuid"
)

// CreateInvitation inserts an invitation.
func (s *Store) CreateInvitation(ctx context.Context, inv *Invitation) error {
	_, err := s.db.NewInsert().Model(inv).Exec(ctx)
	return mapErr(err)
}

// GetInvitation finds an organization's invitation by id.
func (s *Store) GetInvitation(ctx context.Context, orgID, id uuid.UUID) (*Invitation, error) {
	inv := new(Invitation)
	err := s.db.NewSelect().Model(inv).Where("org_id = ?", orgID).Where("id = ?", id).Scan(ctx)
	return inv, mapErr(err)
}

// GetInvitationByHash finds an invitation by its token hash.
func (s *Store) GetInvitationByHash(ctx context.Context, hash string) (*Invitation, error) {
	inv := new(Invitation)
	return inv, mapErr(s.db.NewSelect().Model(inv).Where("token_hash = ?", hash).Scan(ctx))
}

// ListInvitations returns an organization's invitations, oldest first.
func (s *Store) ListInvitations(ctx context.Context, orgID uuid.UUID) ([]Invitation, error) {
	out := []Invitation{}
	err := s.db.NewSelect().Model(&out).Where("org_id = ?", orgID).OrderExpr("created_at ASC, id ASC").Scan(ctx)
	return out, mapErr(err)
}

// UpdateInvitation writes the mutable fields of an invitation.
func (s *Store) UpdateInvitation(ctx context.Context, inv *Invitation) error {
	_, err := s.db.NewUpdate().Model(inv).
		Column("token_hash", "expires_at", "accepted_at", "accepted_by", "revoked_at", "updated_at").WherePK().Exec(ctx)
	return mapErr(err)
}
