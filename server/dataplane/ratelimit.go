package dataplane

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/server/ratelimit"
	"github.com/gw-gateway/gw/server/spend"
)

// keyLimits are a bundle key's effective limits as the limiter takes them.
func keyLimits(l *bundle.RateLimits) ratelimit.Limits {
	if l == nil {
		return ratelimit.Limits{}
	}
	return ratelimit.Limits{RequestsPerMinute: l.RequestsPerMinute, TokensPerMinute: l.TokensPerMinute}
}

// admitRate counts one inference request against its key's rate limits
// and puts OpenAI's x-ratelimit headers on the answer, whatever the answer
// turns out to be: they are set now, before anything is written, and every
// later answer (success or error) carries them. Over a limit it returns
// the 429 to answer, with the limit that refused it (requests or tokens).
// A key without limits costs nothing and gets no headers.
func (p *Plane) admitRate(w http.ResponseWriter, key *inferenceKey) (refusal *response, refused string) {
	if key.limits.None() {
		return nil, ""
	}
	d := p.limiter.Admit(key.id, key.limits)
	if r := p.rateLeases; r != nil {
		win, usedReq, usedTok := p.limiter.Used(key.id)
		if d.Requests.Limit > 0 {
			d.Requests.Remaining = r.remaining(rateSlot{key.id, ratelimit.Requests, win}, d.Requests.Limit, usedReq)
		}
		if d.Tokens.Limit > 0 {
			d.Tokens.Remaining = r.remaining(rateSlot{key.id, ratelimit.Tokens, win}, d.Tokens.Limit, usedTok)
		}
	}
	setRateHeaders(w.Header(), d.Requests, d.Tokens)
	if d.Allowed {
		return nil, ""
	}
	refusal = rateLimited(d)
	if r := p.rateLeases; r != nil {
		win, _, _ := p.limiter.Used(key.id)
		if err := r.failure(rateSlot{key.id, d.Exceeded, win}); err != nil {
			// Not the limit reached: this plane could get no share of it.
			refusal = rateUnavailable(d, errors.Is(err, spend.ErrLeaseRefused))
		}
	}
	if d.Exceeded == ratelimit.Tokens {
		return refusal, "tokens"
	}
	return refusal, "requests"
}

// spendTokens counts a finished request's tokens against its key's token
// limit: every token it carried, cached input included, and its output.
func (a *admission) spendTokens(u providers.Usage) {
	a.p.limiter.Spend(a.key.id, a.key.limits, u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens+u.OutputTokens)
}

// setRateHeaders sets OpenAI's x-ratelimit headers of the limits a key
// has (a limit of 0 is none). Their values share one string and one
// backing array: two allocations an answer, not one a value (issue 33).
func setRateHeaders(h http.Header, req, tok ratelimit.Status) {
	var digits [128]byte
	var ends [6]int
	b := digits[:0]
	for i, s := range [2]ratelimit.Status{req, tok} {
		if s.Limit > 0 {
			b = strconv.AppendInt(b, s.Limit, 10)
			ends[3*i] = len(b)
			b = strconv.AppendInt(b, s.Remaining, 10)
			ends[3*i+1] = len(b)
			b = appendResetDuration(b, s.Reset)
			ends[3*i+2] = len(b)
		}
	}
	if len(b) == 0 {
		return
	}
	all := string(b)
	var v [6]string
	start := 0
	for i, end := range ends {
		if end != 0 {
			v[i], start = all[start:end], end
		}
	}
	vals := v[:]
	if req.Limit > 0 {
		h["X-Ratelimit-Limit-Requests"], h["X-Ratelimit-Remaining-Requests"], h["X-Ratelimit-Reset-Requests"] = vals[0:1:1], vals[1:2:2], vals[2:3:3]
	}
	if tok.Limit > 0 {
		h["X-Ratelimit-Limit-Tokens"], h["X-Ratelimit-Remaining-Tokens"], h["X-Ratelimit-Reset-Tokens"] = vals[3:4:4], vals[4:5:5], vals[5:6:6]
	}
}

// appendResetDuration appends a reset time as OpenAI writes it ("1s",
// "6m0s", "20ms"): rounded to the millisecond, in Go's duration syntax,
// byte for byte what Duration.String writes (FuzzAppendResetDuration),
// without the string it allocates.
func appendResetDuration(b []byte, d time.Duration) []byte {
	d = d.Round(time.Millisecond)
	switch {
	case d == 0:
		return append(b, "0s"...)
	case d%time.Millisecond != 0:
		// Round saturates within a millisecond of the least and greatest
		// durations: no reset is ever near them.
		return append(b, d.String()...)
	}
	u := uint64(d)
	if d < 0 {
		b = append(b, '-')
		u = -u // two's complement: right for the least duration too
	}
	ms := u / uint64(time.Millisecond)
	if ms < 1000 {
		return append(strconv.AppendUint(b, ms, 10), "ms"...)
	}
	secs, frac := ms/1000, ms%1000
	if h := secs / 3600; h > 0 {
		b = append(strconv.AppendUint(b, h, 10), 'h')
		b = append(strconv.AppendUint(b, secs/60%60, 10), 'm')
	} else if m := secs / 60; m > 0 {
		b = append(strconv.AppendUint(b, m, 10), 'm')
	}
	b = strconv.AppendUint(b, secs%60, 10)
	if frac > 0 {
		digits := [3]byte{byte('0' + frac/100), byte('0' + frac/10%10), byte('0' + frac%10)}
		n := 3
		for digits[n-1] == '0' {
			n--
		}
		b = append(append(b, '.'), digits[:n]...)
	}
	return append(b, 's')
}

// rateLimited is the 429 of a refused request, in OpenAI's shape, so the
// SDKs' retry logic applies unchanged: Retry-After in whole seconds,
// rounded up, until the key's window frees.
func rateLimited(d ratelimit.Decision) *response {
	st, unit, name := d.Requests, "requests", "requests per minute (RPM)"
	if d.Exceeded == ratelimit.Tokens {
		st, unit, name = d.Tokens, "tokens", "tokens per minute (TPM)"
	}
	retry := max(int64((d.RetryAfter+time.Second-1)/time.Second), 1)
	return errorResponse(http.StatusTooManyRequests, apiError{
		Message: "Rate limit reached for this inference key on " + name + ": limit " + strconv.FormatInt(st.Limit, 10) +
			". Please try again in " + strconv.FormatInt(retry, 10) + "s.",
		Type: unit, Code: ref("rate_limit_exceeded"),
	}, headerField{"Retry-After", []string{strconv.FormatInt(retry, 10)}})
}

// rateUnavailable refuses a request of a limited key while this plane holds
// no share of the key's limit left in the minute because the control plane
// could not be asked for one (unreachable) or does not know the limit
// (refused: the key or its workspace changed a moment ago). It says so,
// rather than that the limit was reached: a limit of a million requests a
// minute "reached" by the first request misleads (issue 27 row 8). 503,
// since the cause is the gateway's, with Retry-After until the minute
// ends, when the plane asks again.
func rateUnavailable(d ratelimit.Decision, refused bool) *response {
	st, name := d.Requests, "requests per minute (RPM)"
	if d.Exceeded == ratelimit.Tokens {
		st, name = d.Tokens, "tokens per minute (TPM)"
	}
	why := "this gateway cannot reach the control plane to take its share of the key's limit"
	if refused {
		why = "the control plane does not know the key's limit (the key or its workspace may have changed a moment ago)"
	}
	retry := max(int64((d.RetryAfter+time.Second-1)/time.Second), 1)
	return errorResponse(http.StatusServiceUnavailable, apiError{
		Message: "Rate limit unavailable: " + why + " of " + strconv.FormatInt(st.Limit, 10) + " " + name +
			", and holds none of it for this minute. Please try again in " + strconv.FormatInt(retry, 10) + "s.",
		Type: typeServer, Code: ref("rate_limit_unavailable"),
	}, headerField{"Retry-After", []string{strconv.FormatInt(retry, 10)}})
}
