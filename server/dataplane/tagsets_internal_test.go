package dataplane

import (
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/tags"
)

// A key remembers its latest keyTagSetsRemembered sets: the one used least
// recently is new again once forgotten, and a key idle for tagSetIdle is
// forgotten whole.
func TestTagSetBoundRemembersLatestSets(t *testing.T) {
	b := newTagSetBound(keyTagSetsRemembered + 10)
	key := uuid.New()
	at := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	set := func(i int) map[string]string { return map[string]string{"run": strconv.Itoa(i)} }
	for i := range keyTagSetsRemembered {
		if b.admit(key, set(i), at.Add(time.Duration(i)*time.Millisecond)) != nil {
			t.Fatalf("set %d refused", i)
		}
	}
	b.admit(key, set(0), at.Add(time.Second)) // used again: set 1 is now the oldest
	b.admit(key, set(keyTagSetsRemembered), at.Add(time.Second))
	k := b.byKey[key]
	if _, kept := k.used[tags.SetID(uuid.Nil, set(0))]; !kept {
		t.Error("the set used again was forgotten")
	}
	if _, kept := k.used[tags.SetID(uuid.Nil, set(1))]; kept || len(k.used) != keyTagSetsRemembered {
		t.Errorf("the least recently used set is still remembered (%d remembered)", len(k.used))
	}
	if len(k.added) != keyTagSetsRemembered+1 {
		t.Errorf("%d new sets counted, want %d", len(k.added), keyTagSetsRemembered+1)
	}
	// After tagSetIdle without a request the key is forgotten whole.
	b.admit(uuid.New(), set(0), at.Add(tagSetIdle+time.Minute))
	if b.byKey[key] != nil || len(b.byKey) != 1 {
		t.Errorf("%d keys remembered, the idle one among them", len(b.byKey))
	}
}
