package usage

import (
	"testing"

	"github.com/gw-gateway/gw/wire"
)

// An answer of the response cache (issue 35) is checked at ingest: it
// costs 0, and only it carries a saving, a decimal of USD; Row keeps the
// saving in nano-dollars.
func TestCheckCacheSaving(t *testing.T) {
	s := func(v string) *string { return &v }
	for _, c := range []struct {
		name, source, cost string
		saving             *string
		field              string
	}{
		{"a hit", wire.UsageSourceCache, "0", s("0.0005253"), ""},
		{"a hit without saving", wire.UsageSourceCache, "0", nil, ""},
		{"an upstream answer", wire.UsageSourceUpstream, "0.01", nil, ""},
		{"a hit that costs", wire.UsageSourceCache, "0.01", s("0.01"), "cost_usd"},
		{"a saving on an upstream answer", wire.UsageSourceUpstream, "0.01", s("0.01"), "cache_saving_usd"},
		{"a saving not a decimal", wire.UsageSourceCache, "0", s("-1"), "cache_saving_usd"},
	} {
		var ps problems
		e := wire.UsageEventIn{UsageSource: c.source, CostUSD: c.cost, CacheSavingUSD: c.saving}
		checkMetering(&e, &ps)
		switch {
		case c.field == "" && len(ps.out) != 0:
			t.Errorf("%s: refused %+v", c.name, ps.out)
		case c.field != "" && (len(ps.out) != 1 || ps.out[0].Field != c.field):
			t.Errorf("%s: want one problem in %s, got %+v", c.name, c.field, ps.out)
		}
		if c.field == "" {
			if n := cacheSavingNano(&e); c.saving != nil && *c.saving == "0.0005253" && n != 525300 {
				t.Errorf("%s: saving %d nano-dollars, want 525300", c.name, n)
			}
		}
	}
}
