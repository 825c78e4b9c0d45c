package cmdutil

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
)

// The API addresses keys and service accounts by UUID only, while people
// know them by the name they gave them. These resolvers accept either: a
// UUID goes through untouched (so scripts pay no extra request), anything
// else is matched against the listing, on the client, since the server has
// no lookup by name.

// RefCandidate is one listed resource a reference may designate.
type RefCandidate struct {
	ID uuid.UUID
	// Names are what a person may type for it: its name or label, and the
	// token prefix a listing shows.
	Names []string
	// Active is false for revoked or expired keys.
	Active bool
	// Desc says which one it is in an ambiguity error.
	Desc string
}

// ResolveRef returns ref when it is a UUID, else the id of the one
// candidate it names. Several matches of which exactly one is active
// resolve to that one: names are often reused after a key is rotated, and
// the retired namesake is rarely the one meant (its id still reaches it).
// kind ("inference key") and where ("in workspace default") word the errors.
func ResolveRef(ctx context.Context, ref, kind, where string, list func(context.Context) ([]RefCandidate, error)) (string, error) {
	if id, err := uuid.Parse(ref); err == nil {
		return id.String(), nil
	}
	cands, err := list(ctx)
	if err != nil {
		return "", fmt.Errorf("look up %s %q: %w", kind, ref, err)
	}
	var matches []RefCandidate
	for _, c := range cands {
		for _, n := range c.Names {
			if n != "" && n == ref {
				matches = append(matches, c)
				break
			}
		}
	}
	if len(matches) > 1 {
		var active []RefCandidate
		for _, m := range matches {
			if m.Active {
				active = append(active, m)
			}
		}
		if len(active) == 1 {
			matches = active
		}
	}
	switch len(matches) {
	case 0:
		return "", fmt.Errorf("no %s named %q %s", kind, ref, where)
	case 1:
		return matches[0].ID.String(), nil
	}
	lines := make([]string, len(matches))
	for i, m := range matches {
		lines[i] = "  " + m.ID.String() + "  " + m.Desc
	}
	return "", UsageError{Err: fmt.Errorf("%q names %d %ss %s; pass one of their ids:\n%s", ref, len(matches), kind, where, strings.Join(lines, "\n"))}
}
