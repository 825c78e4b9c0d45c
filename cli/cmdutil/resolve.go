package cmdutil

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// The API addresses keys and service accounts by UUID only, while people
// know them by the name they gave them. These resolvers accept either: a
// UUID goes through untouched (so scripts pay no extra request), anything
// else is matched against the listing, on the client, since the server has
// no lookup by name.

// refCandidate is one listed resource a reference may designate.
type refCandidate struct {
	ID uuid.UUID
	// Names are what a person may type for it: its name or label, and the
	// token prefix a listing shows.
	Names []string
	// Active is false for revoked or expired keys.
	Active bool
	// Desc says which one it is in an ambiguity error.
	Desc string
}

// resolveRef returns ref when it is a UUID, else the id of the one
// candidate it names. Several matches of which exactly one is active
// resolve to that one: names are often reused after a key is rotated, and
// the retired namesake is rarely the one meant (its id still reaches it).
// kind ("inference key") and where ("in workspace default") word the errors.
func resolveRef(ctx context.Context, ref, kind, where string, list func(context.Context) ([]refCandidate, error)) (string, error) {
	if id, err := uuid.Parse(ref); err == nil {
		return id.String(), nil
	}
	cands, err := list(ctx)
	if err != nil {
		return "", fmt.Errorf("look up %s %q: %w", kind, ref, err)
	}
	var matches []refCandidate
	for _, c := range cands {
		for _, n := range c.Names {
			if n != "" && n == ref {
				matches = append(matches, c)
				break
			}
		}
	}
	if len(matches) > 1 {
		var active []refCandidate
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

// ResolveInferenceKey resolves an inference key by UUID, name or prefix.
func ResolveInferenceKey(ctx context.Context, c *client.Client, org, ws, ref string) (string, error) {
	return resolveRef(ctx, ref, "inference key", "in workspace "+ws, func(ctx context.Context) ([]refCandidate, error) {
		ks, err := c.ListInferenceKeys(ctx, org, ws)
		return inferenceKeyCandidates(ks), err
	})
}

func inferenceKeyCandidates(ks []wire.InferenceKey) []refCandidate {
	out := make([]refCandidate, len(ks))
	for i, k := range ks {
		out[i] = refCandidate{ID: k.ID, Names: []string{k.Name, k.Prefix}, Active: k.Status == "active",
			Desc: fmt.Sprintf("%s (%s…, %s, created %s)", k.Name, k.Prefix, k.Status, TimeCell(&k.CreatedAt))}
	}
	return out
}

// ResolveManagementKey resolves a management key of a scope by UUID, label
// or prefix.
func ResolveManagementKey(ctx context.Context, c *client.Client, scope client.Scope, ref string) (string, error) {
	return resolveRef(ctx, ref, "management key", scopeWhere(scope), func(ctx context.Context) ([]refCandidate, error) {
		ks, err := c.ListManagementKeys(ctx, scope, "")
		out := make([]refCandidate, len(ks))
		for i, k := range ks {
			out[i] = refCandidate{ID: k.ID, Names: []string{k.Label, k.Prefix}, Active: k.Status == "active",
				Desc: fmt.Sprintf("%s (%s…, %s, %s)", k.Label, k.Prefix, k.Status, KeyScopeCell(k))}
		}
		return out, err
	})
}

// ResolveServiceAccount resolves a service account by UUID, name or email.
func ResolveServiceAccount(ctx context.Context, c *client.Client, org, ref string) (string, error) {
	return resolveRef(ctx, ref, "service account", "in organization "+org, func(ctx context.Context) ([]refCandidate, error) {
		us, err := c.ListServiceAccounts(ctx, org)
		out := make([]refCandidate, len(us))
		for i, u := range us {
			out[i] = refCandidate{ID: u.ID, Names: []string{u.Name, u.Email}, Active: true,
				Desc: fmt.Sprintf("%s (%s)", u.Name, u.Email)}
		}
		return out, err
	})
}

func scopeWhere(s client.Scope) string {
	switch {
	case s.Org == "":
		return "on the instance"
	case s.Workspace == "":
		return "in organization " + s.Org
	}
	return "in workspace " + s.Workspace + " of organization " + s.Org
}

// KeyScopeCell is where a management key acts, for a table.
func KeyScopeCell(k wire.ManagementKey) string {
	switch {
	case k.Scope.WorkspaceID != nil:
		return "workspace:" + k.Scope.WorkspaceID.String()
	case k.Scope.OrgID != nil:
		return "organization:" + k.Scope.OrgID.String()
	}
	return OrDash(k.Scope.Level)
}
