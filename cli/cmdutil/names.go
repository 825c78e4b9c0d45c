package cmdutil

import (
	"context"
	"strconv"
	"strings"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/tui"
	"github.com/gw-gateway/gw/wire"
)

// NameBook turns ids into the names people know (organizations,
// workspaces, members, inference keys) for table output; json and yaml
// keep the ids. Every lookup is best effort: a key may lack the read
// permission a listing needs, and then the id is shown as it is. Each
// listing is read at most once per invocation.
type NameBook struct {
	c     *client.Client
	names map[string]string
	// done remembers which listings were read (or failed).
	done map[string]bool
}

func NewNameBook(c *client.Client) *NameBook {
	return &NameBook{c: c, names: map[string]string{}, done: map[string]bool{}}
}

func (b *NameBook) once(key string, load func()) {
	if !b.done[key] {
		b.done[key] = true
		load()
	}
}

// name is id's name, or id itself when none was found.
func (b *NameBook) name(id string) string {
	if n := b.names[id]; n != "" {
		return n
	}
	return id
}

// OrgName names an organization. The caller's own organizations are
// listed first (any credential may), then the organization itself is read.
func (b *NameBook) OrgName(ctx context.Context, id string) string {
	if id == "" {
		return ""
	}
	b.once("orgs", func() {
		var cursor string
		for range 10 { // a person belongs to a few organizations; do not page forever
			p, err := b.c.ListOrganizations(ctx, 200, cursor)
			if err != nil {
				return
			}
			for _, o := range p.Data {
				b.names[o.ID.String()] = o.Name
				b.names[o.Slug] = o.Name
			}
			if p.Page.NextCursor == nil || *p.Page.NextCursor == "" {
				return
			}
			cursor = *p.Page.NextCursor
		}
	})
	b.once("org:"+id, func() {
		if b.names[id] != "" {
			return
		}
		if o, err := b.c.GetOrganization(ctx, id); err == nil {
			b.names[o.ID.String()], b.names[id] = o.Name, o.Name
		}
	})
	return b.name(id)
}

// WorkspaceName names a workspace of org, from the organization's
// workspace list or, failing that, the enrollment choices (which any
// credential may read and which carry the workspaces of the caller's
// organizations).
func (b *NameBook) WorkspaceName(ctx context.Context, org, id string) string {
	if id == "" {
		return ""
	}
	b.once("ws:"+org, func() {
		ws, err := b.c.ListWorkspaces(ctx, org)
		// Workspaces named alike are told apart by their slugs.
		for id, label := range tui.WorkspaceLabels(ws) {
			b.names[id] = label
		}
		if err == nil {
			return
		}
		b.once("choices", func() {
			cs, err := b.c.EnrollmentChoices(ctx)
			if err != nil {
				return
			}
			for _, c := range cs {
				b.names[c.Organization.ID.String()] = c.Organization.Name
				for _, w := range c.Workspaces {
					b.names[w.ID.String()] = w.Name
				}
			}
		})
	})
	return b.name(id)
}

// MemberName names a member of org by email (a service account by name).
func (b *NameBook) MemberName(ctx context.Context, org, id string) string {
	b.once("members:"+org, func() {
		ms, _ := b.c.ListMembers(ctx, org)
		for _, m := range ms {
			n := m.Email
			if m.ServiceAccount && m.Name != "" {
				n = m.Name + " [service account]"
			}
			b.names[m.UserID.String()] = n
		}
	})
	return b.name(id)
}

// InferenceKeyName names an inference key of org as "name (prefix…)",
// from the keys of every workspace of the organization (or of the one
// workspace a report is filtered to).
func (b *NameBook) InferenceKeyName(ctx context.Context, org, workspace, id string) string {
	b.once("ikeys:"+org+"/"+workspace, func() {
		wss := []string{workspace}
		if workspace == "" {
			ws, _ := b.c.ListWorkspaces(ctx, org)
			wss = wss[:0]
			for _, w := range ws {
				b.names[w.ID.String()] = w.Name
				wss = append(wss, w.ID.String())
			}
		}
		for _, w := range wss {
			ks, _ := b.c.ListInferenceKeys(ctx, org, w)
			for _, k := range ks {
				b.names[k.ID.String()] = k.Name + " (" + k.Prefix + "…)"
			}
		}
	})
	return b.name(id)
}

// ScopeLine names a key's scope for a person: "organization Acme" or
// "workspace Research in organization Acme".
func (b *NameBook) ScopeLine(ctx context.Context, s wire.KeyScope) string {
	switch {
	case s.WorkspaceID != nil && s.OrgID != nil:
		org := s.OrgID.String()
		return "workspace " + b.WorkspaceName(ctx, org, s.WorkspaceID.String()) + " in organization " + b.OrgName(ctx, org)
	case s.OrgID != nil:
		return "organization " + b.OrgName(ctx, s.OrgID.String())
	case s.Level != "":
		return s.Level
	}
	return "-"
}

// DescribeAliasTargets is an alias's targets on one line, MODEL=WEIGHT
// each, as gw aliases and gw policies explain show them.
func DescribeAliasTargets(ts []wire.ModelAliasTarget) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = t.Model + "=" + strconv.Itoa(t.Weight)
		if t.Retired {
			parts[i] += " (retired)"
		}
	}
	return strings.Join(parts, ", ")
}
