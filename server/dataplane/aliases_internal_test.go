package dataplane

import "testing"

// TestPickTargetsReadsEachStateOnce: a target another request cools down
// while one request picks is read once, so the weighted draw always lands
// on a target it counted (it used to index -1 and panic).
func TestPickTargetsReadsEachStateOnce(t *testing.T) {
	targets := []aliasTarget{{id: "a", weight: 3}, {id: "b", weight: 1}, {id: "c", weight: 2}}
	defer func(d func(int) int) { aliasDraw = d }(aliasDraw)
	for draw := range 6 {
		aliasDraw = func(int) int { return draw }
		reads := map[string]int{}
		// "a" is ready on its first read and cooling from then on.
		cooling := func(id string) bool { reads[id]++; return id == "a" && reads[id] > 1 }
		got := pickTargets(targets, cooling)
		if len(got) != len(targets) {
			t.Fatalf("draw %d: %d targets, want %d", draw, len(got), len(targets))
		}
		for id, n := range reads {
			if n != 1 {
				t.Fatalf("draw %d: target %s read %d times, want once", draw, id, n)
			}
		}
		want := "a"
		if draw >= 3 {
			want = map[bool]string{true: "b", false: "c"}[draw == 3]
		}
		if got[0].id != want {
			t.Fatalf("draw %d picked %s first, want %s", draw, got[0].id, want)
		}
	}
}
