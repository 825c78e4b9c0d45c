package scim

import (
	"encoding/json"
	"strings"

	filter "github.com/scim2/filter-parser/v2"
)

// Op is one PATCH operation (RFC 7644 §3.5.2): op lower-cased (add,
// remove or replace), the path as sent, the value as sent.
type Op struct {
	Op    string
	Path  string
	Value json.RawMessage
}

// maxOps bounds one PATCH request's operations.
const maxOps = 1000

// DecodePatch reads a PatchOp body. Operation names are case-insensitive
// (Microsoft Entra sends "Replace", "Add", "Remove").
func DecodePatch(raw []byte) ([]Op, error) {
	m, err := attrs(raw, "the body")
	if err != nil {
		return nil, err
	}
	var list []json.RawMessage
	if err := json.Unmarshal(m["operations"], &list); err != nil || len(list) == 0 {
		return nil, badRequest(InvalidSyntax, "a PATCH body needs Operations: a non-empty list")
	}
	if len(list) > maxOps {
		return nil, badRequest(TooMany, "at most %d operations in one PATCH", maxOps)
	}
	ops := make([]Op, 0, len(list))
	for _, item := range list {
		o, err := attrs(item, "an operation")
		if err != nil {
			return nil, err
		}
		var op Op
		if op.Op, err = stringValue(o["op"], "op"); err != nil {
			return nil, err
		}
		op.Op = strings.ToLower(op.Op)
		if op.Op != "add" && op.Op != "remove" && op.Op != "replace" {
			return nil, badRequest(InvalidSyntax, "op must be add, remove or replace")
		}
		if op.Path, err = stringValue(o["path"], "path"); err != nil {
			return nil, err
		}
		op.Value = o["value"]
		if op.Path == "" && op.Op == "remove" {
			return nil, badRequest(NoTarget, "a remove operation needs a path")
		}
		if op.Path == "" && isNull(op.Value) {
			return nil, badRequest(InvalidValue, "an operation without a path needs a value")
		}
		ops = append(ops, op)
	}
	return ops, nil
}

// parsePath parses an operation's path with the SCIM filter grammar.
// The parser is a library's: a panic in it is a bad path, not a crash.
func parsePath(s string) (p filter.Path, err error) {
	defer func() {
		if recover() != nil {
			err = badRequest(InvalidPath, "the path %q cannot be read", s)
		}
	}()
	p, perr := filter.ParsePath([]byte(s))
	if perr != nil {
		return p, badRequest(InvalidPath, "the path %q cannot be read", s)
	}
	return p, nil
}

// schemaOf says whose attribute a path's URI prefix names: "" for none or
// the resource's own schema, "other" for another (an extension).
func schemaOf(p filter.AttributePath, own string) string {
	if p.URIPrefix == nil || strings.EqualFold(strings.TrimSuffix(*p.URIPrefix, ":"), own) {
		return ""
	}
	return "other"
}

// PatchUser applies ops to u, in order. Both forms work: Okta's (no
// path, a value object: {"op":"replace","value":{"active":false}}) and
// Microsoft Entra's (a path per attribute, string booleans:
// {"op":"Replace","path":"active","value":"False"}). Paths gw does not
// keep are accepted and ignored; userName and active cannot be removed.
func PatchUser(u User, ops []Op) (User, error) {
	for _, op := range ops {
		if op.Path == "" {
			m, err := attrs(op.Value, "the value of an operation without a path")
			if err != nil {
				return u, err
			}
			for name, v := range m {
				var err error
				if i := strings.IndexByte(name, '.'); i > 0 && name[:i] == "name" {
					err = setUserAttr(&u, "name", name[i+1:], v)
				} else {
					err = setUserAttr(&u, name, "", v)
				}
				if err != nil {
					return u, err
				}
			}
			continue
		}
		p, err := parsePath(op.Path)
		if err != nil {
			return u, err
		}
		if schemaOf(p.AttributePath, SchemaUser) != "" {
			continue
		}
		name := strings.ToLower(p.AttributePath.AttributeName)
		sub := strings.ToLower(p.AttributePath.SubAttributeName())
		if p.ValueExpression != nil || p.SubAttribute != nil {
			// emails[type eq "work"].value and the like: multi-valued
			// attributes gw does not keep (the email is userName).
			if name == "username" || name == "active" || name == "name" || name == "displayname" || name == "externalid" {
				return u, badRequest(InvalidPath, "%s is not multi-valued", p.AttributePath.AttributeName)
			}
			continue
		}
		v := op.Value
		if op.Op == "remove" {
			if name == "username" || name == "active" {
				return u, badRequest(Mutability, "%s cannot be removed", p.AttributePath.AttributeName)
			}
			v = json.RawMessage("null")
		}
		if err := setUserAttr(&u, name, sub, v); err != nil {
			return u, err
		}
	}
	var err error
	u.UserName, err = CheckUserName(u.UserName)
	return u, err
}
