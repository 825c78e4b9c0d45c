package tui

import (
	"reflect"
	"testing"

	"github.com/gw-gateway/gw/wire"
)

// The dashboard breaks usage down by the tag keys it is given, names the
// rows without a value, and enter on a tag's row filters by that tag
// (issue 21).
func TestTagBreakdownAndFilter(t *testing.T) {
	fake := newFake()
	fake.rows["tag:team"] = []wire.UsageBreakdownRow{
		{Key: "search", UsageCounters: counters(600, "100.00")},
		{NoValue: true, UsageCounters: counters(300, "20.50")},
		{OverTagLimit: true, UsageCounters: counters(100, "5.00")},
	}
	fake.rows["tag:env"] = []wire.UsageBreakdownRow{{Key: "prod", UsageCounters: counters(1000, "125.50")}}
	d := start(t, fake, fake, Options{TagKeys: []string{"team", "env"}, By: "tag:team"})
	d.mustShow("Tag team", "search", "(no tag)", "(over tag limit)")

	d.key("enter") // search
	q := d.src.lastCall(t, "report")
	if !reflect.DeepEqual(q.Tags, []string{"team:search"}) {
		t.Fatalf("filter by tag: %+v", q)
	}
	if bq := d.src.lastCall(t, "breakdown:tag:team"); !reflect.DeepEqual(bq.Tags, []string{"team:search"}) {
		t.Fatalf("the breakdown must follow the filter: %+v", bq)
	}
	d.mustShow("filters: tag team=search")

	// The row without a value filters nothing.
	calls := fake.callCount()
	d.key("down")
	d.key("enter")
	if fake.callCount() != calls {
		t.Fatal("enter on the row without the tag sent a query")
	}

	// tab reaches the next tag key; its filter adds up with the first.
	d.key("tab")
	d.mustShow("Tag env", "prod")
	d.key("enter")
	if q := d.src.lastCall(t, "report"); !reflect.DeepEqual(q.Tags, []string{"team:search", "env:prod"}) {
		t.Fatalf("tag filters add up: %+v", q)
	}
	d.mustShow("tag team=search · tag env=prod")
	d.key("tab") // back to the first dimension after the last tag key
	d.mustShow("Model")
	d.key("c")
	if q := d.src.lastCall(t, "report"); q.Tags != nil {
		t.Fatalf("c must clear the tag filters: %+v", q)
	}

	// An answer's note (past the tag bound) is shown.
	fake.notes = map[string]string{"tag:env": "This organization has reached 10000 distinct tag combinations"}
	d.key("shift+tab") // from model back to the last dimension, tag:env
	d.mustShow("Tag env", "reached 10000 distinct tag combinations")

	// Started filtered by tag.
	d = start(t, fake, fake, Options{Tags: []string{"env:prod"}})
	if q := d.src.lastCall(t, "report"); !reflect.DeepEqual(q.Tags, []string{"env:prod"}) {
		t.Fatalf("start filtered: %+v", q)
	}
}
