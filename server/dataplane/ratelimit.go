package dataplane

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/server/ratelimit"
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
// later answer (success or error) carries them. Over a limit it answers
// 429 and returns false, with the limit that refused it (requests or
// tokens). A key without limits costs nothing and gets no headers.
func (p *Plane) admitRate(w http.ResponseWriter, key *inferenceKey, dl dialect) (admitted bool, refused string) {
	if key.limits.None() {
		return true, ""
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
	h := w.Header()
	if d.Requests.Limit > 0 {
		setRateHeaders(h, "X-Ratelimit-Limit-Requests", "X-Ratelimit-Remaining-Requests", "X-Ratelimit-Reset-Requests", d.Requests)
	}
	if d.Tokens.Limit > 0 {
		setRateHeaders(h, "X-Ratelimit-Limit-Tokens", "X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Tokens", d.Tokens)
	}
	if d.Allowed {
		return true, ""
	}
	dl.refuse(w, rateLimited(d))
	if d.Exceeded == ratelimit.Tokens {
		return false, "tokens"
	}
	return false, "requests"
}

// spendTokens counts a finished request's tokens against its key's token
// limit: every token it carried, cached input included, and its output.
func (x *exchange) spendTokens(u providers.Usage) {
	x.p.limiter.Spend(x.key.id, x.key.limits, u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens+u.OutputTokens)
}

func setRateHeaders(h http.Header, limit, remaining, reset string, s ratelimit.Status) {
	h[limit] = []string{strconv.FormatInt(s.Limit, 10)}
	h[remaining] = []string{strconv.FormatInt(s.Remaining, 10)}
	h[reset] = []string{resetDuration(s.Reset)}
}

// resetDuration writes a reset time as OpenAI does ("1s", "6m0s",
// "20ms"): Go's duration syntax, to the millisecond.
func resetDuration(d time.Duration) string {
	return d.Round(time.Millisecond).String()
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
