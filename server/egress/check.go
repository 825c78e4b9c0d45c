package egress

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// saveLookupTimeout bounds the resolution of a name being saved: a
// resolver that hangs must not hold the request.
const saveLookupTimeout = 5 * time.Second

// CheckURL reports whether p lets gw call rawURL: nil, a *Refusal naming
// the address class, or an error saying the host cannot be read. A name
// is resolved, and refused if any of its addresses is; a name that does
// not resolve here is let through, since it may resolve on a data plane's
// network, where the dialer checks what it resolves to.
func CheckURL(ctx context.Context, p Policy, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return errBadHost("not an absolute URL")
	}
	return CheckHost(ctx, p, u.Hostname())
}

// CheckHost is CheckURL for a host alone (url.URL.Hostname's form).
func CheckHost(ctx context.Context, p Policy, host string) error {
	ctx, cancel := context.WithTimeout(ctx, saveLookupTimeout)
	defer cancel()
	addrs, resolved, err := p.resolve(ctx, host)
	var refusal *Refusal
	var bad errBadHost
	switch {
	case errors.As(err, &refusal), errors.As(err, &bad):
		return err
	case err != nil:
		return nil
	}
	return p.checkAll(host, addrs, resolved)
}

// asciiHost maps a host name to the ASCII form a connection uses, as
// http.Transport does (IDNA lookup rules for a name that is not ASCII):
// full-width digits and letters become their ASCII selves, so
// "１６９.２５４.１６９.２５４" is 169.254.169.254 here as it is there.
func asciiHost(s string) (string, error) {
	if isASCII(s) {
		return strings.ToLower(s), nil
	}
	if !utf8.ValidString(s) {
		return "", errBadHost("not UTF-8")
	}
	a, err := idna.Lookup.ToASCII(s)
	if err != nil {
		return "", errBadHost("not a valid internationalized domain name")
	}
	return strings.ToLower(a), nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
