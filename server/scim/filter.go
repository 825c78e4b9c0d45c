package scim

import (
	"strings"

	filter "github.com/scim2/filter-parser/v2"
)

// Filter is a list filter gw supports: equality terms joined by and.
// Users: userName, externalId, id, emails / emails.value; groups:
// displayName, externalId, id, members[value eq "…"] (members.value).
// Anything else is refused as invalidFilter.
type Filter struct{ Terms []Term }

// Term is attr eq "value"; Attr is the canonical lower-case name
// (username, externalid, id, emails.value, displayname, members.value).
type Term struct {
	Attr  string
	Value string
}

// Resource kinds a filter applies to.
const (
	KindUser  = "User"
	KindGroup = "Group"
)

var filterAttrs = map[string]map[string]bool{
	KindUser:  {"username": true, "externalid": true, "id": true, "emails.value": true},
	KindGroup: {"displayname": true, "externalid": true, "id": true, "members.value": true},
}

// maxFilter bounds a filter's length.
const maxFilter = 2048

// ParseFilter reads a filter for a kind of resource; "" is no filter.
func ParseFilter(s, kind string) (f Filter, err error) {
	if strings.TrimSpace(s) == "" {
		return Filter{}, nil
	}
	if len(s) > maxFilter {
		return Filter{}, badRequest(InvalidFilter, "the filter is longer than %d characters", maxFilter)
	}
	defer func() {
		if recover() != nil {
			f, err = Filter{}, badRequest(InvalidFilter, "the filter cannot be read")
		}
	}()
	e, perr := filter.ParseFilter([]byte(s))
	if perr != nil {
		return Filter{}, badRequest(InvalidFilter, "the filter cannot be read: gw supports attribute eq \"value\" joined by and")
	}
	if err := f.add(e, kind); err != nil {
		return Filter{}, err
	}
	return f, nil
}

func unsupported(kind string) *Error {
	names := map[string]string{KindUser: "userName, externalId, id, emails", KindGroup: "displayName, externalId, id, members[value eq …]"}
	return badRequest(InvalidFilter, "gw supports only eq on %s, joined by and", names[kind])
}

func (f *Filter) add(e filter.Expression, kind string) error {
	switch x := e.(type) {
	case *filter.LogicalExpression:
		if x.Operator != filter.AND {
			return unsupported(kind)
		}
		if err := f.add(x.Left, kind); err != nil {
			return err
		}
		return f.add(x.Right, kind)
	case *filter.AttributeExpression:
		return f.term(x.AttributePath, x, kind, "")
	case *filter.ValuePath:
		inner, ok := x.ValueFilter.(*filter.AttributeExpression)
		if !ok || x.AttributePath.SubAttribute != nil || inner.AttributePath.SubAttribute != nil || inner.AttributePath.URIPrefix != nil ||
			!strings.EqualFold(inner.AttributePath.AttributeName, "value") {
			return unsupported(kind)
		}
		return f.term(x.AttributePath, inner, kind, ".value")
	default:
		return unsupported(kind)
	}
}

func (f *Filter) term(p filter.AttributePath, x *filter.AttributeExpression, kind, suffix string) error {
	own := SchemaUser
	if kind == KindGroup {
		own = SchemaGroup
	}
	if x.Operator != filter.EQ || schemaOf(p, own) != "" {
		return unsupported(kind)
	}
	attr := strings.ToLower(p.AttributeName)
	if p.SubAttribute != nil {
		attr += "." + strings.ToLower(*p.SubAttribute)
	}
	attr += suffix
	if attr == "emails" {
		attr = "emails.value"
	}
	if !filterAttrs[kind][attr] {
		return unsupported(kind)
	}
	v, ok := x.CompareValue.(string)
	if !ok {
		return badRequest(InvalidFilter, "compare %s with a string", p.AttributeName)
	}
	f.Terms = append(f.Terms, Term{Attr: attr, Value: v})
	return nil
}

// Value is the first term's value for attr, if the filter has one
// (lets a store narrow its query before MatchUser or MatchGroup).
func (f Filter) Value(attr string) (string, bool) {
	for _, t := range f.Terms {
		if t.Attr == attr {
			return t.Value, true
		}
	}
	return "", false
}

// MatchUser says whether u meets every term. userName and emails compare
// without regard to case (caseExact false, RFC 7643 §4.1.1); externalId
// and id exactly.
func (f Filter) MatchUser(u User) bool {
	for _, t := range f.Terms {
		var ok bool
		switch t.Attr {
		case "username", "emails.value":
			ok = strings.EqualFold(u.UserName, t.Value)
		case "externalid":
			ok = u.ExternalID == t.Value
		case "id":
			ok = u.ID == t.Value
		}
		if !ok {
			return false
		}
	}
	return true
}

// MatchGroup says whether g meets every term; displayName compares
// without regard to case.
func (f Filter) MatchGroup(g Group) bool {
	for _, t := range f.Terms {
		var ok bool
		switch t.Attr {
		case "displayname":
			ok = strings.EqualFold(g.DisplayName, t.Value)
		case "externalid":
			ok = g.ExternalID == t.Value
		case "id":
			ok = g.ID == t.Value
		case "members.value":
			for _, m := range g.Members {
				if m.Value == t.Value {
					ok = true
					break
				}
			}
		}
		if !ok {
			return false
		}
	}
	return true
}
