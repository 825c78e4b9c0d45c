// Package egress is gw's address policy for every URL it calls because
// someone configured it: provider base URLs, OAuth token endpoints (a
// setting, a service account's token_uri), and, as they come, MCP servers,
// webhooks, archive destinations and OIDC issuers (issue 27).
//
// A URL is checked twice: when it is saved (CheckURL, names resolved then
// too) and when a connection is made (Dialer, which checks every address
// it actually dials, so a name that resolves elsewhere by then, DNS
// rebinding, gains nothing).
//
// By default gw refuses cloud metadata services (names and addresses),
// link-local addresses and the unspecified address, in every encoding
// (IPv4-mapped IPv6, NAT64 and 6to4 embeddings, decimal, octal and hex
// IPv4). Loopback and private ranges stay reachable: self-hosted gateways
// call local models and internal services. An operator may refuse them
// too (gw serve --egress-deny-private) or refuse any range (the instance's
// egress setting), and make exceptions (its allow list).
package egress

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Class is why an address is refused; its String names it in refusals.
type Class int

// The classes of refused addresses.
const (
	Metadata Class = iota + 1
	LinkLocal
	Unspecified
	Loopback
	Private
	Denied
)

func (c Class) String() string {
	switch c {
	case Metadata:
		return "cloud metadata service"
	case LinkLocal:
		return "link-local address"
	case Unspecified:
		return "unspecified address"
	case Loopback:
		return "loopback address (denied by the instance's egress policy)"
	case Private:
		return "private address (denied by the instance's egress policy)"
	case Denied:
		return "address denied by the instance's egress policy"
	}
	return "address"
}

type rule struct {
	prefix netip.Prefix
	class  Class
}

func rules(class Class, cidrs ...string) []rule {
	out := make([]rule, len(cidrs))
	for i, c := range cidrs {
		out[i] = rule{netip.MustParsePrefix(c), class}
	}
	return out
}

// builtin is refused unless the instance's allow list names the very
// range (a wider or narrower allow does not lift it). Ranges are listed
// most specific first: the metadata addresses inside 169.254.0.0/16 stay
// refused when the link-local range is allowed, and are named for what
// they are.
var builtin = slices.Concat(
	rules(Metadata,
		"169.254.169.254/32", // AWS, Google Cloud, Azure, Oracle, DigitalOcean, OpenStack…
		"169.254.170.2/32",   // ECS task metadata and credentials
		"169.254.170.23/32",  // EKS Pod Identity agent
		"fd00:ec2::254/128",  // AWS instance metadata over IPv6
		"fd00:ec2::23/128",   // EKS Pod Identity agent over IPv6
		"100.100.100.200/32", // Alibaba Cloud
	),
	rules(LinkLocal, "169.254.0.0/16", "fe80::/10", "224.0.0.0/24", "ff02::/16"),
	// 0.0.0.0 (and all of "this network") reaches the host itself.
	rules(Unspecified, "0.0.0.0/8", "::/128"),
)

// private is what --egress-deny-private refuses.
var private = slices.Concat(
	rules(Loopback, "127.0.0.0/8", "::1/128"),
	rules(Private,
		"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",
		"100.64.0.0/10", // shared address space: carrier-grade NAT, tailnets
		"fc00::/7",      // unique local addresses
		"fec0::/10",     // deprecated site-local addresses
	),
)

// metadataNames are the host names of metadata services, refused with
// every name under them whatever they resolve to (on the cloud's own
// network they resolve to a metadata address; elsewhere, to nothing).
var metadataNames = []string{
	"metadata.google.internal", "metadata.goog", "metadata",
	"instance-data", "instance-data.ec2.internal",
	"metadata.tencentyun.com", "metadata.platformequinix.com", "metadata.packet.net",
}

// BuiltinDeny lists the ranges refused by default, for documentation and
// the instance settings' answer.
func BuiltinDeny() []netip.Prefix {
	out := make([]netip.Prefix, len(builtin))
	for i, r := range builtin {
		out[i] = r.prefix
	}
	return out
}

// Resolver resolves host names; *net.Resolver is one. Tests inject their
// own, so that nothing leaves 127.0.0.1 and a name can change its answer.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// NoLookup resolves no name: with it CheckURL judges address literals and
// metadata names alone and leaves other names to the dialer, for saves
// that would otherwise resolve many names at once (a catalog document).
var NoLookup Resolver = noLookup{}

type noLookup struct{}

func (noLookup) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return nil, &net.DNSError{Err: "not looked up", Name: host, IsNotFound: true}
}

// Policy is the address policy in force in a process: the instance's
// setting (Deny, Allow: canonical prefixes), this process's
// --egress-deny-private, and the resolver names go through.
type Policy struct {
	Deny, Allow []netip.Prefix
	DenyPrivate bool
	// Resolver resolves names; net.DefaultResolver when nil.
	Resolver Resolver
}

// WithInstance is p with the instance's deny and allow lists in place of
// p's: the process keeps its flag and resolver.
func (p Policy) WithInstance(deny, allow []netip.Prefix) Policy {
	p.Deny, p.Allow = deny, allow
	return p
}

func (p Policy) resolver() Resolver {
	if p.Resolver == nil {
		return net.DefaultResolver
	}
	return p.Resolver
}

// Refusal is an address or name the policy refuses.
type Refusal struct {
	// Host is the host as the URL gave it.
	Host string
	// Addr is the address refused; the zero Addr for a refused name.
	Addr netip.Addr
	// Resolved says Addr is what Host resolved to (not Host itself, in
	// some encoding).
	Resolved bool
	Class    Class
}

func (r *Refusal) Error() string {
	var b strings.Builder
	b.WriteString("the egress policy refuses ")
	b.WriteString(r.Host)
	if r.Addr.IsValid() && r.Addr.String() != r.Host {
		if r.Resolved {
			b.WriteString(" (resolves to " + r.Addr.String() + ")")
		} else {
			b.WriteString(" (" + r.Addr.String() + ")")
		}
	}
	b.WriteString(": " + r.Class.String())
	return b.String()
}

// Check classifies one address: 0 when the policy lets gw connect to it.
// An address embedding an IPv4 address (IPv4-mapped, IPv4-compatible,
// NAT64, 6to4, Teredo) is refused if either is.
func (p Policy) Check(a netip.Addr) Class {
	a = a.WithZone("").Unmap()
	if c := p.classify(a); c != 0 {
		return c
	}
	for _, v4 := range embeddedIPv4(a) {
		if c := p.classify(v4); c != 0 {
			return c
		}
	}
	return 0
}

func (p Policy) classify(a netip.Addr) Class {
	// The most specific built-in range holding the address decides; it
	// is lifted only by an allow of that very range.
	for _, r := range builtin {
		if r.prefix.Contains(a) {
			if !slices.Contains(p.Allow, r.prefix) {
				return r.class
			}
			break
		}
	}
	for _, allow := range p.Allow {
		if allow.Contains(a) {
			return 0
		}
	}
	if p.DenyPrivate {
		for _, r := range private {
			if r.prefix.Contains(a) {
				return r.class
			}
		}
	}
	for _, deny := range p.Deny {
		if deny.Contains(a) {
			// A range the operator denies is named by what the address
			// is, where it is one of the private kinds.
			for _, r := range private {
				if r.prefix.Contains(a) {
					return r.class
				}
			}
			return Denied
		}
	}
	return 0
}

// embeddedIPv4 is the IPv4 address an IPv6 address carries, in the forms
// that reach it (through a translator, a tunnel or a dual stack).
func embeddedIPv4(a netip.Addr) []netip.Addr {
	if !a.Is6() {
		return nil
	}
	b := a.As16()
	v4 := func(i int) netip.Addr { return netip.AddrFrom4([4]byte(b[i : i+4])) }
	zero := func(from, to int) bool {
		for _, x := range b[from:to] {
			if x != 0 {
				return false
			}
		}
		return true
	}
	var out []netip.Addr
	switch {
	case zero(0, 12) && !zero(12, 14): // IPv4-compatible ::a.b.c.d (not ::, ::1)
		out = append(out, v4(12))
	case zero(0, 8) && b[8] == 0xff && b[9] == 0xff && zero(10, 12): // IPv4-translated ::ffff:0:a.b.c.d
		out = append(out, v4(12))
	case b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b: // NAT64 64:ff9b::/96 and 64:ff9b:1::/48
		out = append(out, v4(12))
	case b[0] == 0x20 && b[1] == 0x02: // 6to4 2002:a.b.c.d::/48
		out = append(out, v4(2))
	case b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0: // Teredo: server, and the client inverted
		client := [4]byte{^b[12], ^b[13], ^b[14], ^b[15]}
		out = append(out, v4(4), netip.AddrFrom4(client))
	}
	return out
}

// host is a URL host read the way a dialer reads it.
type host struct {
	addr netip.Addr // an address literal, in any encoding
	name string     // else the DNS name: ASCII, lower case, no final dot
}

// parseHost reads a URL host (url.URL.Hostname: no brackets, no port): an
// IPv6 literal, an IPv4 address in any notation inet_aton takes (a host
// whose last label is a number is one, as WHATWG URL parsers read it: a
// dialer that hands it to getaddrinfo connects to that address), or a
// name, mapped to ASCII as http.Transport does.
func parseHost(s string) (host, error) {
	if s == "" {
		return host{}, errBadHost("an empty host")
	}
	if strings.Contains(s, ":") {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return host{}, errBadHost("not an IPv6 address")
		}
		return host{addr: a.WithZone("")}, nil
	}
	name, err := asciiHost(s)
	if err != nil {
		return host{}, err
	}
	name = strings.TrimSuffix(name, ".")
	labels := strings.Split(name, ".")
	if last := labels[len(labels)-1]; isNumber(last) {
		a, ok := parseIPv4(labels)
		if !ok {
			return host{}, errBadHost("a host ending in a number must be an IPv4 address")
		}
		return host{addr: a}, nil
	}
	return host{name: name}, nil
}

type errBadHost string

func (e errBadHost) Error() string { return "invalid host: " + string(e) }

// isNumber reports a label that an IPv4 parser takes as a number: decimal
// digits, or 0x and hex digits.
func isNumber(label string) bool {
	if label == "" {
		return false
	}
	if l := strings.ToLower(label); strings.HasPrefix(l, "0x") {
		return strings.Trim(l[2:], "0123456789abcdef") == ""
	}
	return strings.Trim(label, "0123456789") == ""
}

// parseIPv4 reads one to four numbers (decimal, 0-led octal or 0x hex),
// the last filling the remaining bytes: 2852039166, 0251.0376.0251.0376,
// 0xa9fea9fe and 169.254.43518 all are 169.254.169.254.
func parseIPv4(labels []string) (netip.Addr, bool) {
	if len(labels) > 4 {
		return netip.Addr{}, false
	}
	var v uint64
	for i, l := range labels {
		n, ok := parseNumber(l)
		last := i == len(labels)-1
		switch {
		case !ok:
			return netip.Addr{}, false
		case !last && n > 255:
			return netip.Addr{}, false
		case last && n >= 1<<(8*(5-len(labels))):
			return netip.Addr{}, false
		case last:
			v = v<<(8*(5-len(labels))) | n
		default:
			v = v<<8 | n
		}
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

func parseNumber(l string) (uint64, bool) {
	base := 10
	switch lower := strings.ToLower(l); {
	case strings.HasPrefix(lower, "0x"):
		base, l = 16, l[2:]
		if l == "" {
			return 0, true
		}
	case len(l) > 1 && l[0] == '0':
		base, l = 8, l[1:]
	}
	if l == "" {
		return 0, false
	}
	n, err := strconv.ParseUint(l, base, 64)
	return n, err == nil
}

// isMetadataName reports a metadata service's name or one under it.
func isMetadataName(name string) bool {
	for _, m := range metadataNames {
		if name == m || strings.HasSuffix(name, "."+m) {
			return true
		}
	}
	return false
}

// isLocalhost reports localhost and names under it, which resolve to
// loopback (RFC 6761) whatever a resolver says.
func isLocalhost(name string) bool {
	return name == "localhost" || strings.HasSuffix(name, ".localhost")
}

var loopbackAddrs = []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()}

// resolve is the addresses a host stands for: its literal, loopback for
// localhost, or the resolver's answer. A metadata service's name is
// refused before anything is resolved.
func (p Policy) resolve(ctx context.Context, raw string) (addrs []netip.Addr, resolved bool, err error) {
	h, err := parseHost(raw)
	switch {
	case err != nil:
		return nil, false, err
	case h.addr.IsValid():
		return []netip.Addr{h.addr}, false, nil
	case isMetadataName(h.name):
		return nil, false, &Refusal{Host: raw, Class: Metadata}
	case isLocalhost(h.name):
		return loopbackAddrs, true, nil
	}
	addrs, err = p.resolver().LookupNetIP(ctx, "ip", h.name)
	return addrs, true, err
}

// checkAll refuses the first of addrs the policy refuses.
func (p Policy) checkAll(raw string, addrs []netip.Addr, resolved bool) error {
	for _, a := range addrs {
		if c := p.Check(a); c != 0 {
			return &Refusal{Host: raw, Addr: a.WithZone("").Unmap(), Resolved: resolved, Class: c}
		}
	}
	return nil
}
