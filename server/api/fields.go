package api

import (
	"regexp"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/validate"
)

// Shared field rules, so every resource names and slugs the same way.
var (
	nameRule  = validate.StringRule{Min: 1, Max: 100, NoControl: true}
	slugRule  = validate.StringRule{Min: 1, Max: 63, Pattern: regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$`)}
	labelRule = validate.StringRule{Min: 1, Max: 80, NoControl: true}
	// Surrounding spaces are allowed here and trimmed by normalizeEmail.
	emailRule = backend.EmailRule
	// personNameRule is a person's display name (sign-up, invitation,
	// bootstrap): optional, one line.
	personNameRule = validate.StringRule{Max: 100, NoControl: true}
	passwordRule   = backend.PasswordRule
)

// readSlug reads an optional slug. A slug shaped like a UUID is refused:
// paths accept either, and must never be ambiguous.
func readSlug(o *validate.Object) *string {
	slug := optionalString(o, "slug", slugRule)
	if slug != nil {
		if _, err := uuid.Parse(*slug); err == nil {
			o.Errors().Add(o.Loc().With("slug"), "value_error", "Value error, a slug must not have the form of a UUID", *slug, nil)
			return nil
		}
	}
	return slug
}

// optionalString reads an optional string member.
func optionalString(o *validate.Object, name string, rule validate.StringRule) *string {
	v, ok := o.Raw(name)
	if !ok {
		return nil
	}
	s, good := validate.String(v, o.Loc().With(name), rule, o.Errors())
	if !good {
		return nil
	}
	return &s
}

// requiredString reads a required string member.
func requiredString(o *validate.Object, name string, rule validate.StringRule) string {
	v, ok := o.Require(name)
	if !ok {
		return ""
	}
	s, _ := validate.String(v, o.Loc().With(name), rule, o.Errors())
	return s
}

// requiredLiteral reads a required member that must be one of allowed.
func requiredLiteral(o *validate.Object, name string, allowed []string) string {
	v, ok := o.Require(name)
	if !ok {
		return ""
	}
	s, _ := validate.Literal(v, o.Loc().With(name), allowed, o.Errors())
	return s
}

// optionalLiteral reads an optional member that must be one of allowed.
func optionalLiteral(o *validate.Object, name string, allowed []string) *string {
	v, ok := o.Raw(name)
	if !ok {
		return nil
	}
	s, good := validate.Literal(v, o.Loc().With(name), allowed, o.Errors())
	if !good {
		return nil
	}
	return &s
}

// optionalBool reads an optional boolean member; null counts as absent.
func optionalBool(o *validate.Object, name string) *bool {
	v, ok := o.Raw(name)
	if !ok || v == nil {
		return nil
	}
	b, good := validate.Bool(v, o.Loc().With(name), o.Errors())
	if !good {
		return nil
	}
	return &b
}

func normalizeEmail(s string) string { return backend.NormalizeEmail(s) }

// readEnabled reads an optional "enabled" member: nil when absent (or not a
// boolean, the problem recorded), the value otherwise. A create keeps its
// default when it is nil; an update leaves the resource's as it is.
func readEnabled(o *validate.Object) *bool {
	v, ok := o.Raw("enabled")
	if !ok {
		return nil
	}
	b, ok := validate.Bool(v, o.Loc().With("enabled"), o.Errors())
	if !ok {
		return nil
	}
	return &b
}

// convertEach answers a list in its wire shape, converting each stored row
// with conv; the first conversion that fails is the answer.
func convertEach[S, W any](rows []S, conv func(*S) (W, error)) ([]W, error) {
	out := make([]W, len(rows))
	for i := range rows {
		var err error
		if out[i], err = conv(&rows[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}
