package bundle_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/bundle/bundletest"
)

// A bundle carries the instance's egress setting to data planes; one whose
// setting a data plane could not read whole (a range it would silently
// drop from a deny) is refused.
func TestBundleEgress(t *testing.T) {
	pub, priv := signingPair(t)
	withEgress := func(t *testing.T, e *bundle.Egress) (*bundle.Body, error) {
		syn, err := bundletest.NewSynthetic(3, small)
		if err != nil {
			t.Fatal(err)
		}
		syn.Body.Egress = e
		s, err := bundle.Sign(syn.Body, priv)
		if err != nil {
			t.Fatal(err)
		}
		return bundle.Verify(s, pub)
	}
	good := &bundle.Egress{Revision: 3, Deny: []string{"10.0.0.0/8", "fd00::/8"}, Allow: []string{"10.1.0.0/16", "169.254.169.254/32"}}
	body, err := withEgress(t, good)
	if err != nil || body.Egress == nil || body.Egress.Revision != 3 || !slices.Equal(body.Egress.Deny, good.Deny) || !slices.Equal(body.Egress.Allow, good.Allow) {
		t.Fatalf("a bundle with an egress setting: %+v, %v", body, err)
	}
	if body, err := withEgress(t, nil); err != nil || body.Egress != nil {
		t.Fatalf("a bundle without one: %v", err)
	}
	for name, e := range map[string]*bundle.Egress{
		"no revision":                {Deny: []string{}, Allow: []string{}},
		"no deny list":               {Revision: 1, Allow: []string{}},
		"a range that does not read": {Revision: 1, Deny: []string{"nonsense"}, Allow: []string{}},
		"host bits set":              {Revision: 1, Deny: []string{"10.1.2.3/8"}, Allow: []string{}},
		"a bare address":             {Revision: 1, Deny: []string{}, Allow: []string{"10.0.0.1"}},
	} {
		if _, err := withEgress(t, e); !errors.Is(err, bundle.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}
