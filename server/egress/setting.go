package egress

import (
	"net/netip"
	"strconv"
	"strings"
)

// MaxRanges bounds each list of the instance's egress setting.
const MaxRanges = 256

// ParseRange reads one entry of the instance's egress setting: a CIDR
// range in its canonical form (10.0.0.0/8, fd00::/8) or a single address
// (a /32 or /128). problem says what is wrong, for a 422.
func ParseRange(s string) (p netip.Prefix, problem string) {
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return netip.Prefix{}, "should be a CIDR range such as 10.0.0.0/8 or an IP address"
		}
		s = a.String() + "/" + strconv.Itoa(a.BitLen())
	}
	p, err := netip.ParsePrefix(s)
	switch {
	case err != nil:
		return netip.Prefix{}, "should be a CIDR range such as 10.0.0.0/8 or an IP address"
	case p.Addr().Is4In6():
		return netip.Prefix{}, "an IPv4 range is written in IPv4 form, such as 169.254.169.254/32"
	case p.Masked() != p:
		return netip.Prefix{}, "has bits set past its prefix length; the range is " + p.Masked().String()
	}
	return p, ""
}

// Strings is prefixes as the setting shows them.
func Strings(ps []netip.Prefix) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

// ParseRanges reads stored (already checked) ranges, skipping any that
// no longer parse.
func ParseRanges(ss []string) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(ss))
	for _, s := range ss {
		if p, problem := ParseRange(s); problem == "" {
			out = append(out, p)
		}
	}
	return out
}
