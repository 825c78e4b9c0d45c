package api

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/publish"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

// Data-plane enrollment (DESIGN §7). A remote data plane asks to be
// enrolled with its own public key, using its management key; an instance
// admin approves it for chosen organizations. Its bundle poll then carries
// only those organizations, their provider secrets re-sealed to its key, so
// a data-plane host never holds the master key, nor another tenant's
// secrets.
//
// Approving and revoking decide where provider secrets are sent, so they
// need provider-credentials.manage at instance scope (with data-planes.read
// to see the data plane at all): the spec's closed set has no data-planes
// manage permission, and the one that already governs where a secret may go
// is the right bar. Instance owners and admins hold it.
func (s *Server) enrollmentRoutes() []*Route {
	const tag = "Data Plane Instances"
	manage := []auth.Permission{auth.DataPlanesRead, auth.ProviderCredentialsManage}
	return []*Route{
		{Method: "POST", Path: "/api/v1/data-plane/enrollments", Tag: "Data Plane API",
			Summary: "A data plane asks to be enrolled with its public key (pending until an instance admin approves it; repeating the request is harmless)",
			Perms:   []auth.Permission{auth.DataPlanesHeartbeat}, Body: wire.DataPlaneEnrollmentRequest{}, Result: wire.DataPlaneEnrollment{}, Handle: s.requestEnrollment},
		{Method: "GET", Path: "/api/v1/instance/data-planes/enrollments", Tag: tag,
			Summary: "Data-plane enrollments: pending requests, approved and revoked data planes (complete set)",
			Perms:   []auth.Permission{auth.DataPlanesRead}, Result: []wire.DataPlaneEnrollment{}, Handle: s.listEnrollments},
		{Method: "GET", Path: "/api/v1/instance/data-planes/enrollments/{data_plane_id}", Tag: tag,
			Summary: "One data plane's enrollment",
			Perms:   []auth.Permission{auth.DataPlanesRead}, Result: wire.DataPlaneEnrollment{}, Handle: s.getEnrollment},
		{Method: "POST", Path: "/api/v1/instance/data-planes/enrollments/{data_plane_id}/approve", Tag: tag,
			Summary: "Enroll a data plane for exactly these organizations (replacing any earlier set; also after a revocation)",
			Perms:   manage, Body: wire.DataPlaneEnrollmentApprove{}, Result: wire.DataPlaneEnrollment{}, Handle: s.approveEnrollment},
		{Method: "POST", Path: "/api/v1/instance/data-planes/enrollments/{data_plane_id}/revoke", Tag: tag,
			Summary: "Revoke a data plane's enrollment: its next poll carries no bundle, and it stops serving",
			Perms:   manage, Result: wire.DataPlaneEnrollment{}, Handle: s.revokeEnrollment},
	}
}

// pollerKeyID is the management key a data plane polls with: enrollments
// are bound to it, so a session or another key cannot poll as the data
// plane.
func pollerKeyID(r *Request) (uuid.UUID, error) {
	if r.P == nil || r.P.Key == nil {
		return uuid.Nil, errorf(http.StatusForbidden, "data planes authenticate with a management key, not a session")
	}
	return r.P.Key.ID, nil
}

func (s *Server) requestEnrollment(r *Request) (any, error) {
	var id, pubText string
	if err := r.body(func(o *validate.Object) {
		id = requiredString(o, "id", heartbeatIDRule)
		pubText = requiredString(o, "public_key", validate.StringRule{Min: 1, Max: 4096})
	}); err != nil {
		return nil, err
	}
	pub, err := secrets.ParseDataPlanePublicKey(pubText)
	if err != nil {
		var errs validate.Errors
		errs.Add(validate.Loc{"body", "public_key"}, "value_error", err.Error(), nil, nil)
		return nil, errs.Err()
	}
	keyID, err := pollerKeyID(r)
	if err != nil {
		return nil, err
	}
	out, err := backend.RequestEnrollment(r.ctx, s.store, r.actor(), backend.EnrollmentRequest{DataPlaneID: id,
		PublicKey: pub.String(), Fingerprint: pub.Fingerprint(), KeyID: keyID})
	if err != nil {
		return nil, err
	}
	return s.toEnrollment(r, out)
}

func (s *Server) listEnrollments(r *Request) (any, error) {
	es, err := s.store.ListEnrollments(r.ctx)
	if err != nil {
		return nil, err
	}
	out := make([]wire.DataPlaneEnrollment, len(es))
	for i := range es {
		w, err := s.toEnrollment(r, &es[i])
		if err != nil {
			return nil, err
		}
		out[i] = w
	}
	return out, nil
}

func (s *Server) getEnrollment(r *Request) (any, error) {
	e, err := s.store.GetEnrollment(r.ctx, r.R.PathValue("data_plane_id"))
	if err != nil {
		return nil, err
	}
	return s.toEnrollment(r, e)
}

func (s *Server) approveEnrollment(r *Request) (any, error) {
	in := backend.EnrollmentApproval{DataPlaneID: r.R.PathValue("data_plane_id")}
	if err := r.body(func(o *validate.Object) {
		if v, ok := o.Require("organizations"); ok {
			validate.List(v, o.Loc().With("organizations"), validate.ListRule{Min: 1, Max: 1000}, o.Errors(), func(item any, loc validate.Loc) {
				if ref, ok := validate.String(item, loc, validate.StringRule{Min: 1, Max: 100}, o.Errors()); ok {
					in.Organizations = append(in.Organizations, ref)
				}
			})
		}
		if v, ok := o.Raw("fingerprint"); ok && v != nil {
			if f, ok := validate.String(v, o.Loc().With("fingerprint"), validate.StringRule{Min: 1, Max: 100}, o.Errors()); ok {
				in.Fingerprint = &f
			}
		}
		in.Platform = optionalBool(o, "platform_credentials")
	}); err != nil {
		return nil, err
	}
	out, republish, err := backend.ApproveEnrollment(r.ctx, s.store, r.actor(), in)
	if err != nil {
		return nil, err
	}
	if err := s.republish(r, republish); err != nil {
		return nil, err
	}
	return s.toEnrollment(r, out)
}

// republish stores the organizations' bundles under new versions, so
// that enrolled data planes admit what they now receive of them.
func (s *Server) republish(r *Request, orgIDs []uuid.UUID) error {
	if len(orgIDs) == 0 {
		return nil
	}
	signer, err := publish.SigningKey(r.ctx, s.store, s.opts.Keyring)
	if err != nil {
		return err
	}
	c := &publish.Compiler{Store: s.store, Signer: signer}
	for _, id := range orgIDs {
		if _, err := c.Republish(r.ctx, id); err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("republish the bundle of organization %s: %w", id, err)
		}
	}
	// Data planes in this process and on other replicas pick the new
	// versions up now rather than at their next periodic refresh.
	s.refreshBundles(r)
	return nil
}

func (s *Server) revokeEnrollment(r *Request) (any, error) {
	out, err := backend.RevokeEnrollment(r.ctx, s.store, r.actor(), r.R.PathValue("data_plane_id"))
	if err != nil {
		return nil, err
	}
	return s.toEnrollment(r, out)
}

func (s *Server) toEnrollment(r *Request, e *store.DataPlaneEnrollment) (wire.DataPlaneEnrollment, error) {
	out := wire.DataPlaneEnrollment{DataPlaneID: e.DataPlaneID, Fingerprint: e.Fingerprint, PublicKey: e.PublicKey, Status: e.Status,
		Organizations: make([]wire.EnrollmentOrganization, 0, len(e.OrgIDs)), RequestedAt: e.RequestedAt, ApprovedAt: e.ApprovedAt, RevokedAt: e.RevokedAt,
		PlatformCredentials: e.PlatformCredentials}
	for _, id := range e.OrgIDs {
		org, err := s.store.GetOrganization(r.ctx, id)
		if err != nil {
			return out, err
		}
		out.Organizations = append(out.Organizations, wire.EnrollmentOrganization{ID: org.ID, Slug: org.Slug})
	}
	return out, nil
}

// pollBundles answers a data plane's poll with the bundles of the
// organizations it is enrolled for, each credential's secret re-sealed to
// its public key. A pending or revoked data plane gets the signing key and
// its status, and no bundle.
func (s *Server) pollBundles(r *Request) (any, error) {
	e, err := s.pollerEnrollment(r)
	if err != nil {
		return nil, err
	}
	state, err := s.store.GetInstanceState(r.ctx)
	if err != nil {
		return nil, err
	}
	out := wire.DataPlaneBundles{Enrollment: e.Status, Bundles: []wire.SignedBundle{}}
	if state.BundlePublicKey != nil {
		out.PublicKey = *state.BundlePublicKey
	}
	var rows []store.Bundle
	if e.Status == store.EnrollmentApproved {
		if rows, err = s.store.BundlesOf(r.ctx, e.OrgIDs); err != nil {
			return nil, err
		}
	}
	etag := bundlesETag(e, out.PublicKey, rows)
	r.W.Header().Set("ETag", etag)
	// A proxy may hand the tag back weak (W/"…"); the bytes are the same.
	if match := strings.TrimPrefix(r.R.Header.Get("If-None-Match"), "W/"); match != "" && match == etag {
		return notModified{}, nil
	}
	if len(rows) == 0 {
		return out, nil
	}
	out.Bundles, err = s.sealBundles(r, e, rows)
	return out, err
}

// pollerEnrollment is the enrollment of the data plane the poll names,
// which must be the caller's: enrolled with the key it polls with.
func (s *Server) pollerEnrollment(r *Request) (*store.DataPlaneEnrollment, error) {
	id, err := dataPlaneIDQuery(r)
	if err != nil {
		return nil, err
	}
	keyID, err := pollerKeyID(r)
	if err != nil {
		return nil, err
	}
	e, err := s.store.GetEnrollment(r.ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errorf(http.StatusNotFound, "data plane %q has not asked to be enrolled (POST /api/v1/data-plane/enrollments)", id)
	}
	if err != nil {
		return nil, err
	}
	if e.KeyID == nil || *e.KeyID != keyID {
		return nil, errorf(http.StatusForbidden, "data plane %q is enrolled with another management key", id)
	}
	return e, nil
}

// bundlesETag covers what decides a poll's answer: the enrollment
// (status, key, organizations) and the stored bundles' versions. The
// bytes sent differ from poll to poll (sealing is randomized); the
// versions do not.
func bundlesETag(e *store.DataPlaneEnrollment, publicKey string, rows []store.Bundle) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s:%s:%s:%t;", e.Status, e.Fingerprint, publicKey, e.PlatformCredentials)
	for _, b := range rows {
		fmt.Fprintf(h, "%s:%d:%s;", b.OrgID, b.Version, b.Hash)
	}
	return `"` + hex.EncodeToString(h.Sum(nil))[:32] + `"`
}

// sealBundles signs each bundle with its secrets sealed to the data
// plane's own key.
func (s *Server) sealBundles(r *Request, e *store.DataPlaneEnrollment, rows []store.Bundle) ([]wire.SignedBundle, error) {
	pub, err := secrets.ParseDataPlanePublicKey(e.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("stored public key of data plane %q: %w", e.DataPlaneID, err)
	}
	signer, err := publish.SigningKey(r.ctx, s.store, s.opts.Keyring)
	if err != nil {
		return nil, err
	}
	out := make([]wire.SignedBundle, 0, len(rows))
	for i := range rows {
		signed, err := publish.ForDataPlane(&rows[i], s.opts.Keyring, signer, pub, e.PlatformCredentials)
		if err != nil {
			return nil, err
		}
		out = append(out, wire.SignedBundle{OrgID: signed.OrgID, Version: signed.Version, Hash: signed.Hash,
			Signature: signed.Signature, Body: signed.Body})
	}
	return out, nil
}

func dataPlaneIDQuery(r *Request) (string, error) {
	var errs validate.Errors
	loc := validate.Loc{"query", "data_plane_id"}
	raw, ok := r.R.URL.Query()["data_plane_id"]
	if !ok {
		errs.Add(loc, "missing", "Field required: data planes poll as an enrolled data plane (gw serve --role data-plane of this version or later)", nil, nil)
		return "", errs.Err()
	}
	id, _ := validate.String(raw[0], loc, heartbeatIDRule, &errs)
	return id, errs.Err()
}
