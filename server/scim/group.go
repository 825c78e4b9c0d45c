package scim

import (
	"encoding/json"
	"strings"
	"time"

	filter "github.com/scim2/filter-parser/v2"
)

// Group is a SCIM group: its name (what the identity providers' group
// mappings match), the identity provider's id for it, and its members
// (user ids).
type Group struct {
	ID          string
	ExternalID  string
	DisplayName string
	Members     []Ref
	Created     time.Time
	Modified    time.Time
}

// MemberIDs is the group's member ids, in order, without repeats.
func (g Group) MemberIDs() []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range g.Members {
		if !seen[m.Value] {
			seen[m.Value] = true
			out = append(out, m.Value)
		}
	}
	return out
}

// GroupResource is a group as SCIM shows it.
type GroupResource struct {
	Schemas     []string `json:"schemas"`
	ID          string   `json:"id"`
	ExternalID  string   `json:"externalId,omitempty"`
	DisplayName string   `json:"displayName"`
	Members     []Ref    `json:"members,omitempty"`
	Meta        Meta     `json:"meta"`
}

// Resource is the group as SCIM shows it; withMembers false leaves the
// members out (excludedAttributes=members).
func (g Group) Resource(base string, withMembers bool) GroupResource {
	r := GroupResource{Schemas: []string{SchemaGroup}, ID: g.ID, ExternalID: g.ExternalID, DisplayName: g.DisplayName,
		Meta: meta("Group", base+"/Groups/"+g.ID, g.Created, g.Modified)}
	if withMembers {
		r.Members = make([]Ref, len(g.Members))
		for i, m := range g.Members {
			r.Members[i] = Ref{Value: m.Value, Display: m.Display, Ref: base + "/Users/" + m.Value}
		}
	}
	return r
}

// DecodeGroup reads a group from a create (POST) or replace (PUT) body:
// displayName is required.
func DecodeGroup(raw []byte) (Group, error) {
	m, err := attrs(raw, "the body")
	if err != nil {
		return Group{}, err
	}
	var g Group
	for name, v := range m {
		if err := setGroupAttr(&g, name, v, "replace"); err != nil {
			return Group{}, err
		}
	}
	return g, checkGroup(g)
}

func checkGroup(g Group) error {
	if strings.TrimSpace(g.DisplayName) == "" {
		return badRequest(InvalidValue, "displayName is required")
	}
	if len(g.DisplayName) > 256 {
		return badRequest(InvalidValue, "displayName is longer than 256 characters")
	}
	return nil
}

// members reads a list of member references ([{"value": id}, …]).
func members(raw json.RawMessage) ([]Ref, error) {
	if isNull(raw) {
		return nil, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		// A single member object is accepted too.
		list = []json.RawMessage{raw}
	}
	out := make([]Ref, 0, len(list))
	for _, item := range list {
		o, err := attrs(item, "a member")
		if err != nil {
			return nil, err
		}
		v, err := stringValue(o["value"], "a member's value")
		if err != nil {
			return nil, err
		}
		if v == "" {
			return nil, badRequest(InvalidValue, "a member needs a value (the user's id)")
		}
		out = append(out, Ref{Value: v})
	}
	return out, nil
}

func setGroupAttr(g *Group, name string, v json.RawMessage, op string) error {
	var err error
	switch name {
	case "displayname":
		g.DisplayName, err = stringValue(v, "displayName")
	case "externalid":
		g.ExternalID, err = stringValue(v, "externalId")
	case "members":
		var refs []Ref
		if refs, err = members(v); err != nil {
			return err
		}
		if op == "add" {
			g.Members = append(g.Members, refs...)
		} else {
			g.Members = refs
		}
	}
	// id, schemas, meta and extensions are not the client's to set.
	return err
}

// PatchGroup applies ops to g, in order: members added (path members,
// a list of {value}), removed (Okta's and Entra's path
// members[value eq "id"], or path members with a list of {value}, or
// path members alone: all), replaced; displayName and externalId
// replaced, with a path or in a value object.
func PatchGroup(g Group, ops []Op) (Group, error) {
	for _, op := range ops {
		if op.Path == "" {
			m, err := attrs(op.Value, "the value of an operation without a path")
			if err != nil {
				return g, err
			}
			for name, v := range m {
				if err := setGroupAttr(&g, name, v, op.Op); err != nil {
					return g, err
				}
			}
			continue
		}
		p, err := parsePath(op.Path)
		if err != nil {
			return g, err
		}
		if schemaOf(p.AttributePath, SchemaGroup) != "" {
			continue
		}
		name := strings.ToLower(p.AttributePath.AttributeName)
		if p.ValueExpression != nil {
			if name != "members" || op.Op != "remove" {
				return g, badRequest(InvalidPath, "only members[value eq \"…\"] can be filtered, to remove")
			}
			id, ok := memberValueFilter(p.ValueExpression)
			if !ok || p.SubAttribute != nil {
				return g, badRequest(InvalidPath, "only members[value eq \"…\"] can be filtered, to remove")
			}
			g.Members = without(g.Members, map[string]bool{id: true})
			continue
		}
		if p.AttributePath.SubAttribute != nil {
			return g, badRequest(InvalidPath, "the path %q names no attribute of a group", op.Path)
		}
		if op.Op == "remove" {
			switch name {
			case "members":
				if isNull(op.Value) {
					g.Members = nil
					continue
				}
				refs, err := members(op.Value)
				if err != nil {
					return g, err
				}
				drop := map[string]bool{}
				for _, r := range refs {
					drop[r.Value] = true
				}
				g.Members = without(g.Members, drop)
			case "displayname":
				return g, badRequest(Mutability, "displayName cannot be removed")
			case "externalid":
				g.ExternalID = ""
			}
			continue
		}
		if err := setGroupAttr(&g, name, op.Value, op.Op); err != nil {
			return g, err
		}
	}
	return g, checkGroup(g)
}

func without(refs []Ref, drop map[string]bool) []Ref {
	out := refs[:0:0]
	for _, r := range refs {
		if !drop[r.Value] {
			out = append(out, r)
		}
	}
	return out
}

// memberValueFilter reads value eq "id" (the one filter a members path
// may carry).
func memberValueFilter(e filter.Expression) (string, bool) {
	a, ok := e.(*filter.AttributeExpression)
	if !ok || a.Operator != filter.EQ || a.AttributePath.URIPrefix != nil || a.AttributePath.SubAttribute != nil ||
		!strings.EqualFold(a.AttributePath.AttributeName, "value") {
		return "", false
	}
	s, ok := a.CompareValue.(string)
	return s, ok
}
