package dataplane

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// CORS lets web pages of the listed origins call /inf/v1 from a browser.
// It is off unless origins are configured (gw serve --cors-origins): a
// browser then refuses cross-origin calls, as it did before.
//
// A preflight (OPTIONS with Access-Control-Request-Method) from a listed
// origin is answered here, without a key: browsers send no credentials
// with it, so requiring one would refuse every cross-origin call. The
// request that follows still needs its inference key like any other; CORS
// only lets the page read the answer. Cookies are never involved (the data
// plane authenticates by key), so credentials are not allowed, and "*"
// may be listed to allow any origin.
type CORS struct {
	origins []string
	any     bool
	next    http.Handler
}

// corsAllowedMethods are the methods /inf/v1 answers.
const corsAllowedMethods = "GET, POST, OPTIONS"

// corsExposed are the answer's headers a page may read: the request id,
// which model answered, the rate limit state, when to retry.
const corsExposed = "X-Request-Id, X-Gw-Model, X-Gw-Attempts, Retry-After, X-Should-Retry, " +
	"X-Ratelimit-Limit-Requests, X-Ratelimit-Remaining-Requests, X-Ratelimit-Reset-Requests, " +
	"X-Ratelimit-Limit-Tokens, X-Ratelimit-Remaining-Tokens, X-Ratelimit-Reset-Tokens"

// ParseCORSOrigins checks a list of origins: each "*" or
// scheme://host[:port] with scheme http or https and nothing after the
// host, as a browser sends it in Origin.
func ParseCORSOrigins(list []string) ([]string, error) {
	var out []string
	var split []string
	for _, item := range list {
		// GW_CORS_ORIGINS=a,b arrives whole (viper splits an environment
		// value on spaces only).
		split = append(split, strings.Split(item, ",")...)
	}
	for _, o := range split {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		if o == "*" {
			out = append(out, o)
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return nil, errors.New("CORS origin " + o + " is not scheme://host[:port] (http or https) nor *")
		}
		out = append(out, strings.ToLower(u.Scheme+"://"+u.Host))
	}
	return out, nil
}

// NewCORS wraps next; with no origins it returns next itself.
func NewCORS(origins []string, next http.Handler) http.Handler {
	if len(origins) == 0 {
		return next
	}
	return &CORS{origins: origins, any: slices.Contains(origins, "*"), next: next}
}

func (c *CORS) allowed(origin string) bool {
	return origin != "" && (c.any || slices.Contains(c.origins, strings.ToLower(origin)))
}

func (c *CORS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	origin := r.Header.Get("Origin")
	h := w.Header()
	// The answer depends on Origin, whether or not this one is allowed.
	h.Add("Vary", "Origin")
	if !c.allowed(origin) {
		c.next.ServeHTTP(w, r)
		return
	}
	h.Set("Access-Control-Allow-Origin", origin)
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		h.Add("Vary", "Access-Control-Request-Method")
		h.Add("Vary", "Access-Control-Request-Headers")
		h.Set("Access-Control-Allow-Methods", corsAllowedMethods)
		// The SDKs send headers of their own (x-stainless-*,
		// anthropic-version, anthropic-dangerous-direct-browser-access);
		// any header is harmless here, since the key alone authorizes.
		if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
			h.Set("Access-Control-Allow-Headers", req)
		}
		h.Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	h.Set("Access-Control-Expose-Headers", corsExposed)
	c.next.ServeHTTP(w, r)
}
