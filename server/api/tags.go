package api

import (
	"fmt"

	"github.com/gw-gateway/gw/server/tags"
	"github.com/gw-gateway/gw/server/validate"
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
