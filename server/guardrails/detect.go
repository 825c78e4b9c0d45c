package guardrails

import (
	"net/netip"
	"regexp"
	"sort"
	"strings"
)

// Match is one finding in a text: bytes [Start, End) are of Type (a pii
// type, a secret's rule, "regex", "keyword", or what a webhook named),
// found by a detector of Kind.
type Match struct {
	Start, End int
	Type       string
	Kind       string
}

// finder appends the matches it finds in text.
type finder func(text string, out []Match) []Match

// rule is a regular expression with an optional check of each candidate
// (a Luhn or mod-97 checksum, an address parse) and the bytes that may not
// touch a match on either side (a card number is not the middle of a
// longer number).
type rule struct {
	typ   string
	re    *regexp.Regexp
	check func(string) bool
	// edge reports whether a byte next to the match extends it (so the
	// candidate is part of a longer token and not a match).
	edge func(byte) bool
	// pre is a cheap test a text must pass for the expression to run at
	// all: Go's regexp has no prefix to skip ahead by for expressions
	// that start with a class, and most texts hold no candidate.
	pre func(string) bool
}

func (r rule) find(kind string) finder {
	return func(text string, out []Match) []Match {
		if r.pre != nil && !r.pre(text) {
			return out
		}
		for _, loc := range r.re.FindAllStringIndex(text, -1) {
			s, e := loc[0], loc[1]
			if r.edge != nil && ((s > 0 && r.edge(text[s-1])) || (e < len(text) && r.edge(text[e]))) {
				continue
			}
			if r.check != nil && !r.check(text[s:e]) {
				continue
			}
			out = append(out, Match{Start: s, End: e, Type: r.typ, Kind: kind})
		}
		return out
	}
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }
func isAlnum(b byte) bool {
	return isDigit(b) || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z')
}
func isWordByte(b byte) bool { return isAlnum(b) || b == '_' }
func isTokenByte(b byte) bool {
	return isWordByte(b) || b == '-'
}
func isEmailByte(b byte) bool {
	return isAlnum(b) || b == '.' || b == '_' || b == '%' || b == '+' || b == '-'
}
func isAddrByte(b byte) bool { return isAlnum(b) || b == ':' || b == '.' }

// piiRules are the pii detectors, by type.
var piiRules = map[string]rule{
	PIIEmail: {typ: PIIEmail,
		re:   regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9](?:[A-Za-z0-9\-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9\-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,}`),
		edge: func(b byte) bool { return isEmailByte(b) && b != '.' },
		pre:  func(s string) bool { return strings.IndexByte(s, '@') >= 0 },
	},
	// An international number (+ and 7 to 15 digits, spaces, dots or
	// dashes between groups) or a North American one ((555) 123-4567).
	PIIPhone: {typ: PIIPhone,
		re:    regexp.MustCompile(`\+[1-9](?:[ .\-]?\(?[0-9]\)?){6,14}|\(?[2-9][0-9]{2}\)?[ .\-][0-9]{3}[ .\-][0-9]{4}`),
		check: phoneDigits,
		edge:  func(b byte) bool { return isDigit(b) || b == '+' },
		pre:   atLeastDigits(7),
	},
	PIICreditCard: {typ: PIICreditCard,
		re:    regexp.MustCompile(`[0-9](?:[ \-]?[0-9]){12,18}`),
		check: luhnCard,
		edge:  func(b byte) bool { return isDigit(b) },
		pre:   atLeastDigits(13),
	},
	PIIIBAN: {typ: PIIIBAN,
		re:    regexp.MustCompile(`[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]){11,30}`),
		check: ibanValid,
		edge:  isAlnum,
		pre:   hasIBANStart,
	},
	PIIUSSSN: {typ: PIIUSSSN,
		re:    regexp.MustCompile(`[0-9]{3}-[0-9]{2}-[0-9]{4}`),
		check: ssnValid,
		edge:  func(b byte) bool { return isDigit(b) || b == '-' },
		pre:   func(s string) bool { return strings.IndexByte(s, '-') >= 0 && atLeastDigits(9)(s) },
	},
	PIIIPAddress: {typ: PIIIPAddress,
		re:    regexp.MustCompile(`[0-9]{1,3}(?:\.[0-9]{1,3}){3}|[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}`),
		check: ipValid,
		edge:  isAddrByte,
		pre:   hasAddrStart,
	},
}

// atLeastDigits is a pre test: the text holds n digits or more.
func atLeastDigits(n int) func(string) bool {
	return func(s string) bool {
		c := 0
		for i := 0; i < len(s); i++ {
			if isDigit(s[i]) {
				if c++; c >= n {
					return true
				}
			}
		}
		return false
	}
}

// hasIBANStart: two capitals and two digits in a row somewhere.
func hasIBANStart(s string) bool {
	for i := 0; i+3 < len(s); i++ {
		if s[i] >= 'A' && s[i] <= 'Z' && s[i+1] >= 'A' && s[i+1] <= 'Z' && isDigit(s[i+2]) && isDigit(s[i+3]) {
			return true
		}
	}
	return false
}

// hasAddrStart: a digit next to a dot (IPv4), or two colons within an
// address's reach (IPv6).
func hasAddrStart(s string) bool {
	lastColon := -100
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '.' && i > 0 && isDigit(s[i-1]) && i+1 < len(s) && isDigit(s[i+1]):
			return true
		case s[i] == ':':
			if i-lastColon <= 5 {
				return true
			}
			lastColon = i
		}
	}
	return false
}

func digits(s string) []byte {
	d := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if isDigit(s[i]) {
			d = append(d, s[i]-'0')
		}
	}
	return d
}

func phoneDigits(s string) bool {
	n := len(digits(s))
	return n >= 7 && n <= 15
}

// Luhn reports whether the digits of s pass the Luhn checksum (payment
// card numbers do).
func Luhn(s string) bool {
	d := digits(s)
	if len(d) == 0 {
		return false
	}
	sum := 0
	for i := range d {
		v := int(d[len(d)-1-i])
		if i%2 == 1 {
			v *= 2
			if v > 9 {
				v -= 9
			}
		}
		sum += v
	}
	return sum%10 == 0
}

func luhnCard(s string) bool {
	n := len(digits(s))
	if n < 13 || n > 19 {
		return false
	}
	// One separator style throughout: "4111 1111-1111 1111" is not a card.
	if strings.Contains(s, " ") && strings.Contains(s, "-") {
		return false
	}
	return Luhn(s)
}

// IBANValid reports whether s (spaces allowed) is an IBAN whose check
// digits pass ISO 13616's mod-97 test.
func IBANValid(s string) bool { return ibanValid(s) }

func ibanValid(s string) bool {
	s = strings.ReplaceAll(s, " ", "")
	if len(s) < 15 || len(s) > 34 {
		return false
	}
	rearranged := s[4:] + s[:4]
	rem := 0
	for i := 0; i < len(rearranged); i++ {
		c := rearranged[i]
		switch {
		case isDigit(c):
			rem = (rem*10 + int(c-'0')) % 97
		case c >= 'A' && c <= 'Z':
			v := int(c-'A') + 10
			rem = (rem*100 + v) % 97
		default:
			return false
		}
	}
	return rem == 1
}

func ssnValid(s string) bool {
	area, group, serial := s[0:3], s[4:6], s[7:11]
	return area != "000" && area != "666" && area[0] != '9' && group != "00" && serial != "0000"
}

func ipValid(s string) bool {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return false
	}
	if a.Is6() && strings.Count(s, ":") < 2 {
		return false
	}
	return true
}

// secretRules are gw's own table of credential shapes (gitleaks' rule set
// is not a Go library this module can take: see docs/guardrails.md). Each
// has a test of a shape it catches and one it must not.
var secretRules = []rule{
	{typ: "private_key", re: regexp.MustCompile(`-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----`)},
	{typ: "anthropic_api_key", re: regexp.MustCompile(`sk-ant-(?:api|admin|oat)[0-9]{2}-[A-Za-z0-9_\-]{32,}`), edge: isTokenByte},
	{typ: "openai_api_key", re: regexp.MustCompile(`sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}`), edge: isTokenByte},
	{typ: "aws_access_key", re: regexp.MustCompile(`(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}`), edge: isAlnum},
	{typ: "github_token", re: regexp.MustCompile(`(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{82})`), edge: isWordByte},
	{typ: "slack_token", re: regexp.MustCompile(`xox[abposr]-(?:[0-9]+-)?[A-Za-z0-9\-]{10,}`), edge: isTokenByte},
	{typ: "slack_webhook", re: regexp.MustCompile(`https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_\-]{20,}`)},
	{typ: "google_api_key", re: regexp.MustCompile(`AIza[0-9A-Za-z_\-]{35}`), edge: isTokenByte},
	{typ: "jwt", re: regexp.MustCompile(`eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`), edge: isTokenByte},
}

// SecretTypes lists the secret rules' types.
func SecretTypes() []string {
	out := make([]string, len(secretRules))
	for i, r := range secretRules {
		out[i] = r.typ
	}
	return out
}

// privateKeyOpen finds the header of a private-key block: the streaming
// redactor holds back from an unclosed one, however long it grows.
var privateKeyOpen = regexp.MustCompile(`-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----`)

// compileLocal builds the finders of a detector that runs in process.
func compileLocal(d DetectorSpec) ([]finder, error) {
	switch d.Kind {
	case KindPII:
		var fs []finder
		for _, t := range d.Types {
			if r, ok := piiRules[t]; ok {
				fs = append(fs, r.find(KindPII))
			}
		}
		return fs, nil
	case KindSecrets:
		fs := make([]finder, len(secretRules))
		for i, r := range secretRules {
			fs[i] = r.find(KindSecrets)
		}
		return fs, nil
	case KindRegex:
		var fs []finder
		for _, p := range d.Patterns {
			re, err := regexp.Compile(p)
			if err != nil {
				return nil, err
			}
			fs = append(fs, rule{typ: "regex", re: re, check: func(s string) bool { return s != "" }}.find(KindRegex))
		}
		return fs, nil
	case KindKeywords:
		// ASCII words are found by a case-insensitive scan (strings.EqualFold
		// at each place their first letter stands); others by a
		// case-insensitive expression. Word boundaries are checked by hand:
		// RE2's \b is ASCII-only, and a word that starts or ends with
		// punctuation has no \b there. A match may not touch a letter,
		// digit or underscore on either side.
		var ascii []string
		var quoted []string
		for _, w := range d.Words {
			w = strings.TrimSpace(w)
			if isASCII(w) {
				ascii = append(ascii, w)
			} else {
				quoted = append(quoted, regexp.QuoteMeta(w))
			}
		}
		var fs []finder
		if len(ascii) > 0 {
			fs = append(fs, asciiKeywords(ascii))
		}
		if len(quoted) > 0 {
			fs = append(fs, keywordFinder(regexp.MustCompile(`(?i)(?:`+strings.Join(quoted, "|")+`)`)))
		}
		return fs, nil
	}
	return nil, nil
}

func keywordFinder(re *regexp.Regexp) finder {
	return func(text string, out []Match) []Match {
		for i := 0; i < len(text); {
			loc := re.FindStringIndex(text[i:])
			if loc == nil {
				break
			}
			s, e := i+loc[0], i+loc[1]
			if (s > 0 && wordBefore(text[:s])) || (e < len(text) && wordAfter(text[e:])) {
				// Not at a word boundary: look again one rune on.
				i = s + runeLen(text[s:])
				continue
			}
			out = append(out, Match{Start: s, End: e, Type: "keyword", Kind: KindKeywords})
			i = e
		}
		return out
	}
}

// merge sorts matches and joins the overlapping ones (the earliest
// starting keeps its type), so each byte is redacted once.
func merge(ms []Match) []Match {
	if len(ms) < 2 {
		return ms
	}
	sort.SliceStable(ms, func(i, j int) bool {
		if ms[i].Start != ms[j].Start {
			return ms[i].Start < ms[j].Start
		}
		return ms[i].End > ms[j].End
	})
	out := ms[:1]
	for _, m := range ms[1:] {
		last := &out[len(out)-1]
		if m.Start < last.End {
			if m.End > last.End {
				last.End = m.End
			}
			continue
		}
		out = append(out, m)
	}
	return out
}

// Redact replaces each match (merged) with [REDACTED:<type>].
func Redact(text string, ms []Match) string {
	ms = merge(append([]Match(nil), ms...))
	if len(ms) == 0 {
		return text
	}
	var b strings.Builder
	b.Grow(len(text))
	at := 0
	for _, m := range ms {
		b.WriteString(text[at:m.Start])
		b.WriteString("[REDACTED:")
		b.WriteString(m.Type)
		b.WriteString("]")
		at = m.End
	}
	b.WriteString(text[at:])
	return b.String()
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func lowerASCII(b byte) byte {
	if b >= 'A' && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

// asciiKeywords finds ASCII words case-insensitively at word boundaries.
func asciiKeywords(words []string) finder {
	return func(text string, out []Match) []Match {
		for _, w := range words {
			first := string([]byte{lowerASCII(w[0]), lowerASCII(w[0]) - ('a' - 'A')})
			if lowerASCII(w[0]) < 'a' || lowerASCII(w[0]) > 'z' {
				first = w[:1]
			}
			for i := 0; i+len(w) <= len(text); {
				j := strings.IndexAny(text[i:], first)
				if j < 0 {
					break
				}
				s := i + j
				e := s + len(w)
				if e > len(text) {
					break
				}
				if strings.EqualFold(text[s:e], w) && !(s > 0 && wordBefore(text[:s])) && !(e < len(text) && wordAfter(text[e:])) {
					out = append(out, Match{Start: s, End: e, Type: "keyword", Kind: KindKeywords})
					i = e
					continue
				}
				i = s + 1
			}
		}
		return out
	}
}
