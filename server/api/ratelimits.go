package api

import (
	"fmt"

	"github.com/gw-gateway/gw/server/backend"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

var rateLimitRule = validate.IntRule{Min: validate.Bound(1)}

// rateLimitsInput is a rate_limits member as a body gave it: a null
// clears both limits; in an object, a null member clears that limit and an
// absent one leaves it as it is (PATCH keeps it, create has none).
type rateLimitsInput struct {
	// given lists the members the body set, a null included.
	given []string
	value store.RateLimits
}

// onto returns l with the members the body set replaced.
func (in rateLimitsInput) onto(l store.RateLimits) store.RateLimits {
	for _, name := range in.given {
		if name == "requests_per_minute" {
			l.RPM = in.value.RPM
		} else {
			l.TPM = in.value.TPM
		}
	}
	return l
}

// readRateLimits reads an optional rate_limits member.
func readRateLimits(o *validate.Object) rateLimitsInput {
	var in rateLimitsInput
	v, ok := o.Raw("rate_limits")
	if !ok {
		return in
	}
	if v == nil {
		in.given = []string{"requests_per_minute", "tokens_per_minute"}
		return in
	}
	obj := validate.ReadObject(v, o.Loc().With("rate_limits"), o.Errors())
	if obj == nil {
		return in
	}
	for _, m := range []struct {
		name string
		dst  **int64
	}{{"requests_per_minute", &in.value.RPM}, {"tokens_per_minute", &in.value.TPM}} {
		raw, ok := obj.Raw(m.name)
		if !ok {
			continue
		}
		in.given = append(in.given, m.name)
		if raw == nil {
			continue
		}
		if n, ok := validate.Int(raw, obj.Loc().With(m.name), rateLimitRule, o.Errors()); ok {
			*m.dst = &n
		}
	}
	obj.Close()
	return in
}

// checkWithinWorkspace refuses a key's limits that the body set above the
// workspace's. A member left unset is not checked: when a workspace's
// limit is lowered below a key's, the key keeps its record and the lower of
// the two applies (EffectiveRateLimits), so a rename must not fail on it.
func checkWithinWorkspace(in rateLimitsInput, key, ws store.RateLimits) error {
	var errs validate.Errors
	for _, name := range in.given {
		k, w := key.RPM, ws.RPM
		if name == "tokens_per_minute" {
			k, w = key.TPM, ws.TPM
		}
		if k != nil && w != nil && *k > *w {
			errs.Add(validate.Loc{"body", "rate_limits", name}, "less_than_equal",
				fmt.Sprintf("Input should be less than or equal to %d, the workspace's %s", *w, name), *k,
				map[string]any{"le": *w})
		}
	}
	return errs.Err()
}

// toRateLimits is a record's rate_limits: null when nothing is limited.
func toRateLimits(l store.RateLimits) *wire.RateLimits {
	if l.RPM == nil && l.TPM == nil {
		return nil
	}
	return &wire.RateLimits{RequestsPerMinute: l.RPM, TokensPerMinute: l.TPM}
}

// rateLimitsDetail is limits as an audit event records them.
func rateLimitsDetail(l store.RateLimits) map[string]any { return backend.RateLimitsDetail(l) }
