package publish

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/store"
)

// Refresher connects the control plane to a data plane in the same process
// (gw serve with both roles): after a change it compiles the organization's
// bundle and admits it, without HTTP.
type Refresher struct {
	Compiler *Compiler
	Plane    Admitter
	Store    *store.Store
}

// Admitter is the data plane as the control plane feeds it bundles
// (*dataplane.Plane): an interface, so that what links publish (the
// management API) does not link the data plane.
type Admitter interface {
	Admit(s bundle.Signed) error
	AdmitAll(bundles []bundle.Signed) error
	Forget(orgID uuid.UUID)
	Versions() map[uuid.UUID]int64
	MarkReady()
}

// Refresh recompiles orgID's bundle and admits it, or forgets the
// organization when it no longer exists. A bundle that is stale by the time
// it is admitted is not an error: a concurrent refresh admitted a newer one.
func (r *Refresher) Refresh(ctx context.Context, orgID uuid.UUID) error {
	s, err := r.Compiler.Compile(ctx, orgID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		r.Plane.Forget(orgID)
		return nil
	case err != nil:
		return err
	}
	if err := r.Plane.Admit(*s); err != nil && !errors.Is(err, bundle.ErrStale) && !errors.Is(err, bundle.ErrForgotten) {
		return err
	}
	return nil
}

// RefreshAll compiles and admits every organization's bundle, forgets
// admitted organizations that were deleted, and marks the plane ready. An
// organization whose bundle fails keeps what it had (nothing, at start),
// and the others are served: one broken organization must not keep every
// other one waiting. Only when the organizations cannot even be listed is
// the plane left as it was.
func (r *Refresher) RefreshAll(ctx context.Context) error {
	ids, err := r.Store.ListOrganizationIDs(ctx)
	if err != nil {
		return fmt.Errorf("list organizations: %w", err)
	}
	var errs []error
	signed := make([]bundle.Signed, 0, len(ids))
	present := make(map[uuid.UUID]bool, len(ids))
	for _, id := range ids {
		present[id] = true
		s, err := r.Compiler.Compile(ctx, id)
		switch {
		case errors.Is(err, store.ErrNotFound):
			r.Plane.Forget(id)
		case err != nil:
			errs = append(errs, fmt.Errorf("organization %s: %w", id, err))
		default:
			signed = append(signed, *s)
		}
	}
	errs = append(errs, withoutStale(r.Plane.AdmitAll(signed))...)
	for id := range r.Plane.Versions() {
		if present[id] {
			continue
		}
		// Listed as admitted but not as existing: created since the list
		// was read, or deleted. Only a confirmed deletion is forgotten.
		if _, err := r.Store.GetOrganization(ctx, id); errors.Is(err, store.ErrNotFound) {
			r.Plane.Forget(id)
		}
	}
	r.Plane.MarkReady()
	return errors.Join(errs...)
}

// withoutStale drops, from AdmitAll's joined errors, the refusals that only
// mean a concurrent refresh got there first.
func withoutStale(err error) []error {
	if err == nil {
		return nil
	}
	all := []error{err}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		all = joined.Unwrap()
	}
	var out []error
	for _, e := range all {
		if !errors.Is(e, bundle.ErrStale) && !errors.Is(e, bundle.ErrForgotten) {
			out = append(out, e)
		}
	}
	return out
}
