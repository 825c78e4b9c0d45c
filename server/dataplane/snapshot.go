package dataplane

import (
	"fmt"
	"maps"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/bundle"
)

// snapshot is everything admitted, as one immutable value. Writers copy it,
// change the copy and swap the pointer; readers never lock.
type snapshot struct {
	orgs map[uuid.UUID]*admitted
	// keys indexes every organization's inference keys by token hash, so a
	// request finds its key, and with it its organization, in one lookup.
	keys      map[string]*admittedKey
	forgotten map[uuid.UUID]bool
}

// admitted is one organization's bundle in force: which one, and the
// runtime index built from it.
type admitted struct {
	orgID   uuid.UUID
	version int64
	hash    string
	keys    map[string]*admittedKey
	// grants are the keys the organization's OAuth grants admit with, by
	// grant id (oauth.go).
	grants map[uuid.UUID]*admittedKey
	// compiledAt dates the bundle, for the bundle age gauge.
	compiledAt time.Time
	// playground decides what a management principal may try in each
	// workspace (playground.go).
	playground *playgroundOrg
	// egress is the instance's egress setting the bundle carried, if any.
	egress *bundle.Egress
	// batchKeys are the keys no longer active whose provider batches are
	// out, by id (bundle.Key.BatchesOnly): never admitted for a request.
	batchKeys map[uuid.UUID]*admittedKey
}

// admittedKey is an inference key as a discovery request needs it.
type admittedKey struct {
	orgID uuid.UUID
	// expires is false for a key that never expires, so those requests do
	// not read the clock.
	expires   bool
	expiresAt time.Time
	// models is what this key may discover, shared by every key to which
	// the same policies apply.
	models *modelView
	// inference is what a chat completion needs to know of the key beyond
	// discovery: its ids, workspace, policies and organization (route.go).
	inference *inferenceKey
}

func emptySnapshot() *snapshot {
	return &snapshot{orgs: map[uuid.UUID]*admitted{}, keys: map[string]*admittedKey{}, forgotten: map[uuid.UUID]bool{}}
}

// admissible says whether a bundle of this version may replace what is in
// force; the bundle in force itself is admissible (admitting it is a no-op).
func (s *snapshot) admissible(orgID uuid.UUID, version int64, hash string) error {
	if s.forgotten[orgID] {
		return ErrForgotten
	}
	cur := s.orgs[orgID]
	if cur != nil && version <= cur.version && !(version == cur.version && hash == cur.hash) {
		return fmt.Errorf("%w: version %d, admitted %d", ErrStale, version, cur.version)
	}
	return nil
}

func (s *snapshot) inForce(orgID uuid.UUID, version int64, hash string) bool {
	cur := s.orgs[orgID]
	return cur != nil && cur.version == version && cur.hash == hash
}

// with returns a copy of s with the prepared bundles in force, and the
// errors of those it refused: stale by now, or claiming a token hash that
// another organization's key holds (a control plane never issues one
// token twice, so such a bundle is wrong and must not take the key over).
func (s *snapshot) with(prepared []*admitted) (*snapshot, []error) {
	next := &snapshot{orgs: maps.Clone(s.orgs), keys: maps.Clone(s.keys), forgotten: s.forgotten}
	var errs []error
	for _, a := range prepared {
		if err := next.admissible(a.orgID, a.version, a.hash); err != nil {
			errs = append(errs, fmt.Errorf("organization %s, version %d: %w", a.orgID, a.version, err))
			continue
		}
		if next.inForce(a.orgID, a.version, a.hash) {
			continue
		}
		if h, taken := next.foreignKey(a); taken {
			errs = append(errs, fmt.Errorf("organization %s, version %d: token hash %s… belongs to another organization's key", a.orgID, a.version, h[:8]))
			continue
		}
		if old := next.orgs[a.orgID]; old != nil {
			for h := range old.keys {
				delete(next.keys, h)
			}
		}
		maps.Copy(next.keys, a.keys)
		next.orgs[a.orgID] = a
	}
	return next, errs
}

func (s *snapshot) foreignKey(a *admitted) (string, bool) {
	for h := range a.keys {
		if k, ok := s.keys[h]; ok && k.orgID != a.orgID {
			return h, true
		}
	}
	return "", false
}

// without returns a copy of s with the organization gone and remembered as
// deleted.
func (s *snapshot) without(orgID uuid.UUID) *snapshot {
	next := &snapshot{orgs: maps.Clone(s.orgs), keys: s.keys, forgotten: maps.Clone(s.forgotten)}
	next.forgotten[orgID] = true
	if old := next.orgs[orgID]; old != nil {
		next.keys = maps.Clone(s.keys)
		for h := range old.keys {
			delete(next.keys, h)
		}
		delete(next.orgs, orgID)
	}
	return next
}
