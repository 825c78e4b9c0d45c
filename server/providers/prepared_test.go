package providers

import (
	"context"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/server/providers/providerstest"
)

// A route's Check translates its request once and every attempt sends
// that translation (issue 29): swapping the request after the check
// changes nothing the upstream receives, and a call without a Prepared
// translates what it holds.
func TestPreparedOncePerRoute(t *testing.T) {
	an := providerstest.NewAnthropic(t, "sk-ant")
	ge := providerstest.NewGemini(t, "AIza-gemini")
	br := providerstest.NewBedrock(t, "us-east-1")
	vx := providerstest.NewVertex(t, "proj", "us-east5")
	vxSet := Settings{Project: "proj", Location: "us-east5", TokenURL: vx.TokenURL()}
	set := NewSet(nil)
	cases := []struct {
		name    string
		adapter Adapter
		model   string
		up      interface {
			Requests() []providerstest.Request
		}
		base     string
		secret   string
		settings Settings
	}{
		{"anthropic", set.byKind["anthropic"], "claude-sonnet-4-5", an, an.BaseURL(), "sk-ant", Settings{}},
		{"gemini", set.byKind["gemini"], "gemini-2.5-flash", ge, ge.BaseURL(), "AIza-gemini", Settings{}},
		{"bedrock", set.byKind["bedrock"], "amazon.nova-lite-v1:0", br, br.BaseURL(), br.Secret(), Settings{Region: "us-east-1"}},
		{"vertex-claude", set.byKind["vertex"], "claude-sonnet-4-5", vx, vx.BaseURL(), vx.ServiceAccount(), vxSet},
		{"vertex-gemini", set.byKind["vertex"], "gemini-2.5-flash", vx, vx.BaseURL(), vx.ServiceAccount(), vxSet},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.adapter == nil {
				t.Fatal("no adapter")
			}
			for _, prepared := range []bool{true, false} {
				call := cloudCall(t, c.model, `{"model":"m","messages":[{"role":"user","content":"checked"}]}`)
				call.BaseURL, call.Secret, call.Settings = c.base, c.secret, c.settings
				if prepared {
					call.Prepared = &Prepared{}
				}
				if err := c.adapter.Check(call, false); err != nil {
					t.Fatal(err)
				}
				call.Request = cloudCall(t, c.model, `{"model":"m","messages":[{"role":"user","content":"swapped"}]}`).Request
				for range 2 { // two attempts of the route
					if _, err := c.adapter.Complete(context.Background(), call); err != nil {
						t.Fatal(err)
					}
					reqs := c.up.Requests()
					raw := string(reqs[len(reqs)-1].Raw)
					want, not := "checked", "swapped"
					if !prepared {
						want, not = not, want
					}
					if !strings.Contains(raw, want) || strings.Contains(raw, not) {
						t.Errorf("prepared=%v: the upstream received %s, want the %s request", prepared, raw, want)
					}
				}
				// One Prepare per route, its bytes encoded once: both
				// attempts sent what the check translated, as encoded by
				// the first.
				if p := call.Prepared; p != nil && (p.translations != 1 || p.encodings != 1 || p.body == nil) {
					t.Errorf("a route of two attempts translated %d times and encoded %d times, want 1 and 1", p.translations, p.encodings)
				}
			}
		})
	}
}
