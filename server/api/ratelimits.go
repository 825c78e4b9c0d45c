package api

import (
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

// rateLimitRule: at least 1, at most validate.MaxRateLimit (a limit the
// lease arithmetic can always sum: a larger one was once stored and then
// refused requests).
var rateLimitRule = validate.IntRule{Min: validate.Bound(1), Max: validate.Bound(validate.MaxRateLimit)}

// rateLimitsInput is a rate_limits member as a body gave it: a null
// clears both limits; in an object, a null member clears that limit and an
// absent one leaves it as it is (PATCH keeps it, create has none).
type rateLimitsInput backend.RateLimitsPatch

// onto returns l with the members the body set replaced (a workspace
// update's Limits).
func (in rateLimitsInput) onto(l store.RateLimits) store.RateLimits {
	return backend.RateLimitsPatch(in).Onto(l)
}

// readRateLimits reads an optional rate_limits member.
func readRateLimits(o *validate.Object) rateLimitsInput {
	var in rateLimitsInput
	v, ok := o.Raw("rate_limits")
	if !ok {
		return in
	}
	if v == nil {
		in.Set = []string{"requests_per_minute", "tokens_per_minute"}
		return in
	}
	obj := validate.ReadObject(v, o.Loc().With("rate_limits"), o.Errors())
	if obj == nil {
		return in
	}
	for _, m := range []struct {
		name string
		dst  **int64
	}{{"requests_per_minute", &in.To.RPM}, {"tokens_per_minute", &in.To.TPM}} {
		raw, ok := obj.Raw(m.name)
		if !ok {
			continue
		}
		in.Set = append(in.Set, m.name)
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

// toRateLimits is a record's rate_limits: null when nothing is limited.
func toRateLimits(l store.RateLimits) *wire.RateLimits {
	if l.RPM == nil && l.TPM == nil {
		return nil
	}
	return &wire.RateLimits{RequestsPerMinute: l.RPM, TokensPerMinute: l.TPM}
}
