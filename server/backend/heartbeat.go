package backend

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
)

// Heartbeat is what a data plane reports of itself, and the management
// key it reported with.
type Heartbeat struct {
	DataPlaneID string
	KeyID       uuid.UUID
	Version     string
	// BundleVersions are the admitted bundle versions, by organization.
	BundleVersions map[uuid.UUID]int64
	SpoolDepth     int64
}

// maxAuditedOrgs bounds the organizations one refused heartbeat is
// audited in.
const maxAuditedOrgs = 20

// RecordHeartbeat records a data plane's heartbeat as the enrolled data
// plane it is, like its polls and leases: the id must be enrolled with the
// key the heartbeat comes with, and it may report bundles only of the
// organizations it is enrolled for (none while pending or revoked), at
// versions the control plane published. Otherwise nothing is recorded and
// the refusal is audited (data_plane.heartbeat_refused), in the log of
// each organization reached for; without that, one data plane's key
// could show another as healthy, or as holding an organization's bundle
// it never received (docs/security.md row 27.4).
func RecordHeartbeat(ctx context.Context, st *store.Store, actor Actor, in Heartbeat) (*store.DataPlane, *store.DataPlaneEnrollment, error) {
	e, err := st.GetEnrollment(ctx, in.DataPlaneID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil, refuseHeartbeat(ctx, st, actor, in, "unknown_data_plane", nil,
			errorf(NotFound, "data plane %q has not asked to be enrolled (POST /api/v1/data-plane/enrollments)", in.DataPlaneID))
	case err != nil:
		return nil, nil, err
	case e.KeyID == nil || *e.KeyID != in.KeyID:
		return nil, nil, refuseHeartbeat(ctx, st, actor, in, "other_key", nil,
			errorf(Forbidden, "data plane %q is enrolled with another management key", in.DataPlaneID))
	}
	var enrolled []uuid.UUID
	if e.Status == store.EnrollmentApproved {
		enrolled = e.OrgIDs
	}
	orgs := make([]uuid.UUID, 0, len(in.BundleVersions))
	for org := range in.BundleVersions {
		orgs = append(orgs, org)
	}
	sort.Slice(orgs, func(i, j int) bool { return orgs[i].String() < orgs[j].String() })
	latest, err := st.BundleVersions(ctx, orgs)
	if err != nil {
		return nil, nil, fmt.Errorf("read the latest bundle versions: %w", err)
	}
	var errs validate.Errors
	var foreign []uuid.UUID
	reason := "unknown_bundle_version"
	for _, org := range orgs {
		loc := validate.Loc{"body", "bundle_versions", org.String()}
		v := in.BundleVersions[org]
		switch newest, ok := latest[org]; {
		case !slices.Contains(enrolled, org):
			foreign, reason = append(foreign, org), "foreign_organization"
			errs.Add(loc, "value_error", fmt.Sprintf("Value error, data plane %q is not enrolled for this organization (%s): it reports bundles only of the organizations it is enrolled for",
				in.DataPlaneID, enrollmentWord(e.Status)), v, nil)
		case !ok:
			errs.Add(loc, "value_error", "Value error, this organization has no bundle yet", v, nil)
		case v > newest:
			errs.Add(loc, "value_error", fmt.Sprintf("Value error, this organization has no bundle version %d (its latest is %d)", v, newest), v, nil)
		}
	}
	if err := errs.Err(); err != nil {
		return nil, nil, refuseHeartbeat(ctx, st, actor, in, reason, foreign, err)
	}
	now := store.Now()
	versions := store.JSONMap{}
	for org, v := range in.BundleVersions {
		versions[org.String()] = v
	}
	d := &store.DataPlane{ID: in.DataPlaneID, Version: in.Version, BundleVersions: versions, SpoolDepth: in.SpoolDepth,
		FirstSeenAt: now, LastSeenAt: now}
	if err := st.RecordHeartbeat(ctx, d); err != nil {
		return nil, nil, err
	}
	// Read back: first_seen_at is the first heartbeat's, not this one's.
	stored, err := st.GetDataPlane(ctx, in.DataPlaneID)
	if err != nil {
		return nil, nil, err
	}
	return stored, e, nil
}

func enrollmentWord(status string) string {
	if status == store.EnrollmentApproved {
		return "not among its organizations"
	}
	return "its enrollment is " + status
}

// refuseHeartbeat audits a refused heartbeat and returns the refusal: in
// the log of each existing organization it reported a bundle of without
// being enrolled for it (so that organization's admins see who reached
// for it), else in the instance's.
func refuseHeartbeat(ctx context.Context, st *store.Store, actor Actor, in Heartbeat, reason string, foreign []uuid.UUID, refusal error) error {
	details := map[string]any{"data_plane_id": in.DataPlaneID, "reason": reason, "detail": refusal.Error()}
	entry := AuditEntry{Action: "data_plane.heartbeat_refused", TargetType: "data_plane", TargetID: in.DataPlaneID, Details: details}
	err := st.InTx(ctx, func(tx *store.Store) error {
		orgs, err := tx.ExistingOrganizations(ctx, foreign[:min(len(foreign), maxAuditedOrgs)])
		if err != nil {
			return err
		}
		if len(orgs) == 0 {
			return Audit(ctx, tx, actor, entry)
		}
		for _, org := range orgs {
			entry.OrgID = &org
			if err := Audit(ctx, tx, actor, entry); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("audit a refused heartbeat: %w", err)
	}
	return refusal
}
