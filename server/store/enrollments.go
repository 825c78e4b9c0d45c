package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Enrollment states of a data plane.
const (
	EnrollmentPending  = "pending"
	EnrollmentApproved = "approved"
	EnrollmentRevoked  = "revoked"
)

// DataPlaneEnrollment is a remote data plane's enrollment: its public key,
// the management key it polls with, and (once approved) the organizations
// whose bundles it receives.
type DataPlaneEnrollment struct {
	bun.BaseModel `bun:"table:data_plane_enrollments"`

	DataPlaneID string     `bun:"data_plane_id,pk"`
	PublicKey   string     `bun:"public_key"`
	Fingerprint string     `bun:"fingerprint"`
	KeyID       *uuid.UUID `bun:"key_id,type:uuid"`
	Status      string     `bun:"status"`
	RequestedAt time.Time  `bun:"requested_at"`
	ApprovedAt  *time.Time `bun:"approved_at"`
	RevokedAt   *time.Time `bun:"revoked_at"`
	UpdatedAt   time.Time  `bun:"updated_at"`
	// PlatformCredentials: the data plane receives the organizations'
	// platform-scope (instance-wide) credentials too. False for a new
	// enrollment; true for those older than the choice.
	PlatformCredentials bool `bun:"platform_credentials"`

	// OrgIDs are read from data_plane_enrollment_orgs, in id order.
	OrgIDs []uuid.UUID `bun:"-"`
}

type enrollmentOrg struct {
	bun.BaseModel `bun:"table:data_plane_enrollment_orgs"`

	DataPlaneID string    `bun:"data_plane_id,pk"`
	OrgID       uuid.UUID `bun:"org_id,pk,type:uuid"`
}

// RequestEnrollment records e as pending unless the data plane already
// has an enrollment, and returns the one stored: the caller compares keys,
// since a data plane's key is never replaced under an enrollment.
func (s *Store) RequestEnrollment(ctx context.Context, e *DataPlaneEnrollment) (*DataPlaneEnrollment, error) {
	if _, err := s.db.NewInsert().Model(e).On("CONFLICT (data_plane_id) DO NOTHING").Exec(ctx); err != nil {
		return nil, mapErr(err)
	}
	return s.GetEnrollment(ctx, e.DataPlaneID)
}

// LiveEnrollmentWithKey returns a data plane other than id whose pending
// or approved enrollment has publicKey ("" when there is none).
func (s *Store) LiveEnrollmentWithKey(ctx context.Context, publicKey, id string) (string, error) {
	var ids []string
	err := s.db.NewSelect().Model((*DataPlaneEnrollment)(nil)).Column("data_plane_id").
		Where("public_key = ?", publicKey).Where("data_plane_id <> ?", id).Where("status <> ?", EnrollmentRevoked).
		OrderExpr("data_plane_id ASC").Limit(1).Scan(ctx, &ids)
	if err != nil || len(ids) == 0 {
		return "", mapErr(err)
	}
	return ids[0], nil
}

// GetEnrollment reads one enrollment with its organizations.
func (s *Store) GetEnrollment(ctx context.Context, id string) (*DataPlaneEnrollment, error) {
	e := new(DataPlaneEnrollment)
	if err := s.db.NewSelect().Model(e).Where("data_plane_id = ?", id).Scan(ctx); err != nil {
		return nil, mapErr(err)
	}
	orgs := []enrollmentOrg{}
	if err := s.db.NewSelect().Model(&orgs).Where("data_plane_id = ?", id).OrderExpr("org_id ASC").Scan(ctx); err != nil {
		return nil, mapErr(err)
	}
	e.OrgIDs = make([]uuid.UUID, len(orgs))
	for i, o := range orgs {
		e.OrgIDs[i] = o.OrgID
	}
	return e, nil
}

// ListEnrollments returns every enrollment with its organizations.
func (s *Store) ListEnrollments(ctx context.Context) ([]DataPlaneEnrollment, error) {
	out := []DataPlaneEnrollment{}
	if err := s.db.NewSelect().Model(&out).OrderExpr("data_plane_id ASC").Scan(ctx); err != nil {
		return nil, mapErr(err)
	}
	orgs := []enrollmentOrg{}
	if err := s.db.NewSelect().Model(&orgs).OrderExpr("data_plane_id ASC, org_id ASC").Scan(ctx); err != nil {
		return nil, mapErr(err)
	}
	byID := map[string][]uuid.UUID{}
	for _, o := range orgs {
		byID[o.DataPlaneID] = append(byID[o.DataPlaneID], o.OrgID)
	}
	for i := range out {
		out[i].OrgIDs = byID[out[i].DataPlaneID]
		if out[i].OrgIDs == nil {
			out[i].OrgIDs = []uuid.UUID{}
		}
	}
	return out, nil
}

// ApproveEnrollment enrolls the data plane for exactly orgIDs (replacing
// any earlier set), with or without platform credentials, also after a
// revocation. Call it in a transaction.
func (s *Store) ApproveEnrollment(ctx context.Context, id string, orgIDs []uuid.UUID, platformCredentials bool, at time.Time) error {
	res, err := s.db.NewUpdate().Model((*DataPlaneEnrollment)(nil)).
		Set("status = ?", EnrollmentApproved).Set("approved_at = ?", at).Set("revoked_at = NULL").Set("updated_at = ?", at).
		Set("platform_credentials = ?", platformCredentials).
		Where("data_plane_id = ?", id).Exec(ctx)
	if err := affectedOne(res, err); err != nil {
		return err
	}
	if _, err := s.db.NewDelete().Model((*enrollmentOrg)(nil)).Where("data_plane_id = ?", id).Exec(ctx); err != nil {
		return mapErr(err)
	}
	if len(orgIDs) == 0 {
		return nil
	}
	rows := make([]enrollmentOrg, len(orgIDs))
	for i, o := range orgIDs {
		rows[i] = enrollmentOrg{DataPlaneID: id, OrgID: o}
	}
	_, err = s.db.NewInsert().Model(&rows).Exec(ctx)
	return mapErr(err)
}

// RevokeEnrollment stops the data plane's bundles, keeping the record of
// what it was enrolled for; it reports whether this call revoked it.
func (s *Store) RevokeEnrollment(ctx context.Context, id string, at time.Time) (bool, error) {
	res, err := s.db.NewUpdate().Model((*DataPlaneEnrollment)(nil)).
		Set("status = ?", EnrollmentRevoked).Set("revoked_at = ?", at).Set("updated_at = ?", at).
		Where("data_plane_id = ?", id).Where("status <> ?", EnrollmentRevoked).Exec(ctx)
	return rowsChanged(res, err)
}

// BundlesOf returns the latest bundles of the given organizations (those
// that have one).
func (s *Store) BundlesOf(ctx context.Context, orgIDs []uuid.UUID) ([]Bundle, error) {
	out := []Bundle{}
	if len(orgIDs) == 0 {
		return out, nil
	}
	return out, mapErr(s.db.NewSelect().Model(&out).Where("org_id IN (?)", bun.List(orgIDs)).OrderExpr("org_id ASC").Scan(ctx))
}

// RenewEnrollment makes a revoked enrollment a pending request again,
// with the key pair and management key of the data plane asking now. It
// is a new enrollment in all but name: without platform credentials until
// an admin approves them again.
func (s *Store) RenewEnrollment(ctx context.Context, id, publicKey, fingerprint string, keyID uuid.UUID, at time.Time) error {
	res, err := s.db.NewUpdate().Model((*DataPlaneEnrollment)(nil)).
		Set("public_key = ?", publicKey).Set("fingerprint = ?", fingerprint).Set("key_id = ?", keyID).
		Set("status = ?", EnrollmentPending).Set("requested_at = ?", at).Set("approved_at = NULL").Set("updated_at = ?", at).
		Set("platform_credentials = ?", false).
		Where("data_plane_id = ?", id).Where("status = ?", EnrollmentRevoked).Exec(ctx)
	return affectedOne(res, err)
}

// EnrollmentReach is what the data planes enrolled with a management key
// were ever given: the organizations of its approved and revoked
// enrollments (a revoked data plane's spooled usage is still usage it
// served). enrolled is false when the key belongs to no enrollment that
// was ever approved, pending ones included.
func (s *Store) EnrollmentReach(ctx context.Context, keyID uuid.UUID) (orgs []uuid.UUID, enrolled bool, err error) {
	var es []DataPlaneEnrollment
	if err := s.db.NewSelect().Model(&es).Column("data_plane_id", "status", "approved_at").
		Where("key_id = ?", keyID).Scan(ctx); err != nil {
		return nil, false, mapErr(err)
	}
	var ids []string
	for _, e := range es {
		enrolled = true
		if e.Status == EnrollmentApproved || e.Status == EnrollmentRevoked {
			ids = append(ids, e.DataPlaneID)
		}
	}
	if len(ids) == 0 {
		return nil, enrolled, nil
	}
	var rows []enrollmentOrg
	if err := s.db.NewSelect().Model(&rows).Where("data_plane_id IN (?)", bun.List(ids)).Scan(ctx); err != nil {
		return nil, true, mapErr(err)
	}
	for _, r := range rows {
		orgs = append(orgs, r.OrgID)
	}
	return orgs, true, nil
}
