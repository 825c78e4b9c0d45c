package sso

import (
	"crypto/subtle"
	"net/url"
	"strings"
)

// ClaimNames are the ID-token claims a provider's email, name and groups
// are read from.
type ClaimNames struct{ Email, Name, Groups string }

// Identity is who signed in, as the ID token says.
type Identity struct {
	Subject, Email, Name string
	Groups               []string
}

// Expect is what the ID token must show beyond what the verifier checks.
type Expect struct {
	Nonce string
	// Domains are the email domains allowed; none, any.
	Domains []string
	Claims  ClaimNames
}

// ReadClaims checks the claims of a verified ID token (the nonce of this
// sign-in, a subject, an email whose email_verified is not false, in an
// allowed domain) and reads the identity. A pure function of its input.
func ReadClaims(claims map[string]any, want Expect) (Identity, error) {
	nonce, _ := claims["nonce"].(string)
	if want.Nonce == "" || subtle.ConstantTimeCompare([]byte(nonce), []byte(want.Nonce)) != 1 {
		return Identity{}, refuse("nonce_mismatch", "the ID token's nonce is not this sign-in's")
	}
	var id Identity
	id.Subject, _ = claims["sub"].(string)
	if id.Subject == "" {
		return Identity{}, refuse("no_subject", "the ID token has no subject")
	}
	email, _ := claims[want.Claims.Email].(string)
	id.Email = strings.ToLower(strings.TrimSpace(email))
	if id.Email == "" || strings.Count(id.Email, "@") != 1 || len(id.Email) > 254 {
		return Identity{}, refuse("no_email", "the ID token has no usable email in claim %q", want.Claims.Email)
	}
	switch v := claims["email_verified"].(type) {
	case bool:
		if !v {
			return Identity{}, refuse("email_unverified", "the identity provider says %s is not verified", id.Email)
		}
	case string:
		// Some providers send the flag as a string.
		if strings.EqualFold(v, "false") {
			return Identity{}, refuse("email_unverified", "the identity provider says %s is not verified", id.Email)
		}
	}
	if !DomainAllowed(id.Email, want.Domains) {
		return Identity{}, refuse("email_domain", "%s is not in a domain this identity provider may sign in", id.Email)
	}
	if name, _ := claims[want.Claims.Name].(string); strings.TrimSpace(name) != "" {
		id.Name = strings.TrimSpace(name)
		if len(id.Name) > 100 {
			id.Name = id.Name[:100]
		}
	}
	id.Groups = readGroups(claims[want.Claims.Groups])
	return id, nil
}

// DomainAllowed reports whether email's domain is one of domains (case
// aside); an empty list allows any.
func DomainAllowed(email string, domains []string) bool {
	if len(domains) == 0 {
		return true
	}
	at := strings.LastIndexByte(email, '@')
	if at < 0 {
		return false
	}
	d := email[at+1:]
	for _, want := range domains {
		if strings.EqualFold(d, want) {
			return true
		}
	}
	return false
}

// readGroups reads a groups claim: a list of strings, or one string.
func readGroups(v any) []string {
	var out []string
	switch g := v.(type) {
	case string:
		if g != "" {
			out = append(out, g)
		}
	case []any:
		for _, x := range g {
			if s, ok := x.(string); ok && s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// ReturnTo is where a sign-in may return: a path on this site, or an
// absolute URL of this site's origin (publicURL), as a path. Anything
// else (another origin, "//host", a backslash, a control character) is
// refused: ok false.
func ReturnTo(raw, publicURL string) (string, bool) {
	if raw == "" {
		return "/", true
	}
	if len(raw) > 2048 || strings.ContainsFunc(raw, func(r rune) bool { return r == '\\' || r < 0x20 || r == 0x7f }) {
		return "", false
	}
	u, err := url.Parse(raw)
	if err != nil || u.User != nil || u.Fragment != "" {
		return "", false
	}
	if u.Scheme != "" || u.Host != "" {
		pub, err := url.Parse(publicURL)
		if publicURL == "" || err != nil || !strings.EqualFold(u.Scheme, pub.Scheme) || !strings.EqualFold(u.Host, pub.Host) {
			return "", false
		}
		raw = u.RequestURI()
		u, err = url.Parse(raw)
		if err != nil {
			return "", false
		}
	}
	if !strings.HasPrefix(raw, "/") || strings.HasPrefix(raw, "//") || u.Host != "" || u.Scheme != "" {
		return "", false
	}
	return raw, true
}
