package backend

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/store"
)

// EnrollmentRequest is a data plane asking to be enrolled: its id, its
// public key (parsed by the caller) with the key's fingerprint, and the
// management key it authenticated with.
type EnrollmentRequest struct {
	DataPlaneID string
	PublicKey   string
	Fingerprint string
	KeyID       uuid.UUID
}

// RequestEnrollment records a data plane's request. Asking again with the
// same key pair and management key changes nothing. A key is never
// swapped under a live enrollment: whoever holds another management key,
// or another key pair, is not this data plane until an admin says so. A
// revoked data plane may ask again (its state folder was lost, its key
// replaced), and is pending, given nothing, until approved again. A key
// pair is one data plane's: another's pending or approved enrollment
// with the same public key refuses the request (issue 27, row 8), since
// approving it would send that data plane's holder the bundles asked for.
func RequestEnrollment(ctx context.Context, st *store.Store, actor Actor, in EnrollmentRequest) (*store.DataPlaneEnrollment, error) {
	var out *store.DataPlaneEnrollment
	err := st.InTx(ctx, func(tx *store.Store) error {
		if err := keyOfNoOther(ctx, tx, in.PublicKey, in.DataPlaneID); err != nil {
			return err
		}
		now := store.Now()
		e, err := tx.RequestEnrollment(ctx, &store.DataPlaneEnrollment{DataPlaneID: in.DataPlaneID, PublicKey: in.PublicKey,
			Fingerprint: in.Fingerprint, KeyID: &in.KeyID, Status: store.EnrollmentPending, RequestedAt: now, UpdatedAt: now})
		if err != nil {
			return err
		}
		switch {
		case e.PublicKey == in.PublicKey && e.KeyID != nil && *e.KeyID == in.KeyID:
			out = e
			return nil
		case e.Status != store.EnrollmentRevoked:
			return errorf(Conflict, "data plane %q is enrolled with another key pair or management key; revoke its enrollment first (gw data-planes revoke %s)",
				in.DataPlaneID, in.DataPlaneID)
		}
		if err := tx.RenewEnrollment(ctx, in.DataPlaneID, in.PublicKey, in.Fingerprint, in.KeyID, now); err != nil {
			return err
		}
		if out, err = tx.GetEnrollment(ctx, in.DataPlaneID); err != nil {
			return err
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "data_plane.enrollment_requested", TargetType: "data_plane", TargetID: in.DataPlaneID,
			Details: map[string]any{"fingerprint": in.Fingerprint}})
	})
	return out, err
}

// keyOfNoOther refuses a public key that another data plane's pending or
// approved enrollment has.
func keyOfNoOther(ctx context.Context, tx *store.Store, publicKey, dataPlaneID string) error {
	other, err := tx.LiveEnrollmentWithKey(ctx, publicKey, dataPlaneID)
	if err != nil || other == "" {
		return err
	}
	return errorf(Conflict, "data plane %q is enrolled with this public key; every data plane has a key pair of its own "+
		"(start this one with a fresh data dir or --key-file, or revoke %q first: gw data-planes revoke %s)", other, other, other)
}

// EnrollmentApproval is an admin's approval: the organizations (ids or
// slugs) whose bundles the data plane receives, the fingerprint the admin
// checked (optional), and whether it receives the instance's platform
// credentials (nil keeps what it had).
type EnrollmentApproval struct {
	DataPlaneID   string
	Organizations []string
	Fingerprint   *string
	Platform      *bool
}

// ApproveEnrollment approves (or re-approves, with other organizations) a
// data plane. It returns the organizations whose bundles must take a new
// version because what this data plane receives of them changed: a data
// plane admits only newer versions, so without one it would keep (or keep
// lacking) the platform credentials it has.
func ApproveEnrollment(ctx context.Context, st *store.Store, actor Actor, in EnrollmentApproval) (*store.DataPlaneEnrollment, []uuid.UUID, error) {
	var out *store.DataPlaneEnrollment
	var republish []uuid.UUID
	err := st.InTx(ctx, func(tx *store.Store) error {
		e, err := enrollment(ctx, tx, in.DataPlaneID)
		if err != nil {
			return err
		}
		if in.Fingerprint != nil && !strings.EqualFold(strings.TrimSpace(*in.Fingerprint), e.Fingerprint) {
			return errorf(Conflict, "data plane %q has key fingerprint %s, not %s: approve only the key you checked", in.DataPlaneID, e.Fingerprint, *in.Fingerprint)
		}
		// Two requests with one key may have raced past RequestEnrollment's
		// check.
		if err := keyOfNoOther(ctx, tx, e.PublicKey, in.DataPlaneID); err != nil {
			return err
		}
		orgIDs, slugs, err := organizationsNamed(ctx, tx, in.Organizations)
		if err != nil {
			return err
		}
		withPlatform := e.PlatformCredentials
		if in.Platform != nil {
			withPlatform = *in.Platform
		}
		if err := tx.ApproveEnrollment(ctx, in.DataPlaneID, orgIDs, withPlatform, store.Now()); err != nil {
			return err
		}
		if out, err = tx.GetEnrollment(ctx, in.DataPlaneID); err != nil {
			return err
		}
		if e.Status == store.EnrollmentApproved && withPlatform != e.PlatformCredentials {
			republish = orgIDs
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "data_plane.enrollment_approved", TargetType: "data_plane", TargetID: in.DataPlaneID,
			Details: map[string]any{"fingerprint": e.Fingerprint, "organizations": slugs, "previous_status": e.Status,
				"platform_credentials": withPlatform, "previous_platform_credentials": e.PlatformCredentials}})
	})
	if err != nil {
		return nil, nil, err
	}
	return out, republish, nil
}

// organizationsNamed resolves organization ids or slugs, each once, in
// the order given.
func organizationsNamed(ctx context.Context, tx *store.Store, refs []string) (ids []uuid.UUID, slugs []string, err error) {
	for _, ref := range refs {
		org, err := tx.GetOrganizationByRef(ctx, ref)
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil, errorf(Unreadable, "organization %q not found", ref)
		}
		if err != nil {
			return nil, nil, err
		}
		if !slices.Contains(ids, org.ID) {
			ids, slugs = append(ids, org.ID), append(slugs, org.Slug)
		}
	}
	return ids, slugs, nil
}

// RevokeEnrollment stops a data plane: it receives nothing more. Revoking
// a revoked data plane changes nothing and audits nothing.
func RevokeEnrollment(ctx context.Context, st *store.Store, actor Actor, dataPlaneID string) (*store.DataPlaneEnrollment, error) {
	var out *store.DataPlaneEnrollment
	err := st.InTx(ctx, func(tx *store.Store) error {
		done, err := tx.RevokeEnrollment(ctx, dataPlaneID, store.Now())
		if err != nil {
			return err
		}
		if out, err = enrollment(ctx, tx, dataPlaneID); err != nil || !done {
			return err
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "data_plane.enrollment_revoked", TargetType: "data_plane", TargetID: dataPlaneID,
			Details: map[string]any{"fingerprint": out.Fingerprint}})
	})
	return out, err
}

func enrollment(ctx context.Context, tx *store.Store, dataPlaneID string) (*store.DataPlaneEnrollment, error) {
	e, err := tx.GetEnrollment(ctx, dataPlaneID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errorf(NotFound, "data plane %q not found", dataPlaneID)
	}
	return e, err
}
