package dataplane

import (
	"crypto/ed25519"
	"crypto/rand"
	"net/netip"
	"slices"
	"testing"

	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/bundle/bundletest"
	"github.com/gw-gateway/gw/server/egress"
)

// TestPlaneAdoptsTheNewestEgressSetting: every bundle carries the
// instance's egress setting; the plane enforces the newest revision it
// admitted, whichever organization's bundle brought it and in whatever
// order, keeping its own --egress-deny-private.
func TestPlaneAdoptsTheNewestEgressSetting(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signed := func(seed uint64, e *bundle.Egress) bundle.Signed {
		syn, err := bundletest.NewSynthetic(seed, bundletest.Scale{Keys: 2, Policies: 1, Workspaces: 1, Users: 1})
		if err != nil {
			t.Fatal(err)
		}
		syn.Body.Egress = e
		s, err := bundle.Sign(syn.Body, priv)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	newer := &bundle.Egress{Revision: 2, Deny: []string{"127.0.0.0/8"}, Allow: []string{"127.0.0.2/32"}}
	older := &bundle.Egress{Revision: 1, Deny: []string{}, Allow: []string{}}
	for name, order := range map[string][]bundle.Signed{
		"newer first": {signed(1, newer), signed(2, older), signed(3, nil)},
		"newer last":  {signed(2, older), signed(3, nil), signed(1, newer)},
	} {
		p := NewPlane(pub, Options{Egress: egress.Policy{DenyPrivate: true}})
		if got := p.egressPolicy(); got.DenyPrivate != true || len(got.Deny) != 0 {
			t.Fatalf("%s: before any bundle %+v", name, got)
		}
		for _, s := range order {
			if err := p.Admit(s); err != nil {
				t.Fatal(err)
			}
		}
		got := p.egressPolicy()
		if !got.DenyPrivate || !slices.Equal(got.Deny, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}) ||
			!slices.Equal(got.Allow, []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}) {
			t.Errorf("%s: in force %+v, want revision 2's lists with the flag kept", name, got)
		}
		if c := got.Check(netip.MustParseAddr("127.0.0.1")); c != egress.Loopback {
			t.Errorf("%s: 127.0.0.1 is %v", name, c)
		}
	}
}
