package api

import (
	"fmt"
	"strings"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/tags"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

// readTagsAt reads a tags object (server/tags' rules): every bad member
// is reported at its own location, body.tags.<key>.
func readTagsAt(v any, loc validate.Loc, errs *validate.Errors) map[string]string {
	obj := validate.ReadObject(v, loc, errs)
	if obj == nil {
		return nil
	}
	keys := obj.Keys()
	if len(keys) > tags.MaxPairs {
		errs.Add(loc, "too_long", fmt.Sprintf("Object should have at most %d tags, not %d", tags.MaxPairs, len(keys)), len(keys),
			map[string]any{"max_length": tags.MaxPairs})
	}
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		raw, _ := obj.Raw(k)
		kl := loc.With(k)
		if m := tags.CheckKey(k); m != "" {
			errs.Add(kl, "value_error", "Value error, "+m, k, nil)
			continue
		}
		s, ok := validate.String(raw, kl, validate.StringRule{}, errs)
		if !ok {
			continue
		}
		if m := tags.CheckValue(s); m != "" {
			errs.Add(kl, "value_error", "Value error, "+m, s, nil)
			continue
		}
		out[k] = s
	}
	return out
}

// readOptionalTags reads an optional tags member: absent keeps (nil
// pointer), null or {} clears.
func readOptionalTags(o *validate.Object, name string) *map[string]string {
	v, ok := o.Raw(name)
	if !ok {
		return nil
	}
	out := map[string]string{}
	if v != nil {
		out = readTagsAt(v, o.Loc().With(name), o.Errors())
	}
	return &out
}

// readRequiredTags reads a workspace's required_tags: a list of distinct
// tag keys (up to 20); absent keeps them, null or [] clears them.
func readRequiredTags(o *validate.Object) *[]string {
	v, ok := o.Raw("required_tags")
	if !ok {
		return nil
	}
	out := []string{}
	if v == nil {
		return &out
	}
	loc := o.Loc().With("required_tags")
	seen := map[string]bool{}
	validate.List(v, loc, validate.ListRule{Max: tags.MaxPairs}, o.Errors(), func(item any, il validate.Loc) {
		k, ok := validate.String(item, il, validate.StringRule{}, o.Errors())
		if !ok {
			return
		}
		if m := tags.CheckKey(k); m != "" {
			o.Errors().Add(il, "value_error", "Value error, "+m, k, nil)
			return
		}
		if seen[k] {
			o.Errors().Add(il, "value_error", "Value error, "+k+" is listed twice", k, nil)
			return
		}
		seen[k] = true
		out = append(out, k)
	})
	return &out
}

// requiredTagsOut is a workspace's required tags as the API shows them:
// a list, [] when none.
func requiredTagsOut(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// readTagValues reads a workspace's tag_values: an object of up to 20
// tag keys, each listing 1 to 100 distinct values a request header may
// give it; absent keeps them, null or {} clears them. Problems are
// reported at the key (body.tag_values.KEY) or at the value
// (body.tag_values.KEY.i).
func readTagValues(o *validate.Object) *map[string][]string {
	v, ok := o.Raw("tag_values")
	if !ok {
		return nil
	}
	out := map[string][]string{}
	if v == nil {
		return &out
	}
	loc := o.Loc().With("tag_values")
	errs := o.Errors()
	obj := validate.ReadObject(v, loc, errs)
	if obj == nil {
		return &out
	}
	keys := obj.Keys()
	if len(keys) > tags.MaxPairs {
		errs.Add(loc, "too_long", fmt.Sprintf("Object should have at most %d tag keys, not %d", tags.MaxPairs, len(keys)), len(keys),
			map[string]any{"max_length": tags.MaxPairs})
	}
	for _, k := range keys {
		raw, _ := obj.Raw(k)
		kl := loc.With(k)
		if m := tags.CheckKey(k); m != "" {
			errs.Add(kl, "value_error", "Value error, "+m, k, nil)
			continue
		}
		seen := map[string]bool{}
		var vs []string
		validate.List(raw, kl, validate.ListRule{Min: 1, Max: tags.MaxAllowedValues}, errs, func(item any, il validate.Loc) {
			s, ok := validate.String(item, il, validate.StringRule{}, errs)
			if !ok {
				return
			}
			if m := tags.CheckValue(s); m != "" {
				errs.Add(il, "value_error", "Value error, "+m, s, nil)
				return
			}
			if seen[s] {
				errs.Add(il, "value_error", "Value error, "+s+" is listed twice", s, nil)
				return
			}
			seen[s] = true
			vs = append(vs, s)
		})
		out[k] = vs
	}
	return &out
}

// tagValuesOut is a workspace's tag_values as the API shows them: an
// object, {} when none.
func tagValuesOut(t store.TagValues) map[string][]string {
	if t == nil {
		return map[string][]string{}
	}
	return t
}

// readTagFilters reads a report's tag=KEY:VALUE filters (all must match).
func readTagFilters(vs []string, errs *validate.Errors) []store.TagPair {
	if len(vs) > tags.MaxPairs {
		errs.Add(validate.Loc{"query", "tag"}, "too_long", fmt.Sprintf("At most %d tag filters", tags.MaxPairs), len(vs), nil)
		return nil
	}
	var out []store.TagPair
	for i, v := range vs {
		loc := validate.Loc{"query", "tag", i}
		k, val, ok := strings.Cut(v, ":")
		if !ok {
			errs.Add(loc, "value_error", "Value error, a tag filter is KEY:VALUE, e.g. team:search", v, nil)
			continue
		}
		if m := tags.CheckKey(k); m != "" {
			errs.Add(loc, "value_error", "Value error, "+m, v, nil)
			continue
		}
		if m := tags.CheckValue(val); m != "" {
			errs.Add(loc, "value_error", "Value error, "+m, v, nil)
			continue
		}
		out = append(out, store.TagPair{Key: k, Value: val})
	}
	return out
}

// readBreakdownBy reads a breakdown's dimension: one of
// wire.UsageDimensions, or tag:KEY.
func readBreakdownBy(v string, errs *validate.Errors) string {
	loc := validate.Loc{"query", "by"}
	if k, ok := strings.CutPrefix(v, "tag:"); ok {
		if m := tags.CheckKey(k); m != "" {
			errs.Add(loc, "value_error", "Value error, "+m, v, nil)
		}
		return v
	}
	by, _ := validate.Literal(v, loc, wire.UsageDimensions, errs)
	return by
}
