package api

import (
	"testing"
	"time"
)

// The rules every counter shares: a run of failures locks the subject, a
// lockout ends in a fresh run, an attempt begun by a replica that died
// stops counting after attemptLapse, and a success clears an account.
func TestThrottleEntryRules(t *testing.T) {
	rule := throttleRule{limit: 3}
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	e := throttleEntry{first: t0}
	for i := range 3 {
		if _, ok := e.begin(t0, rule); !ok {
			t.Fatalf("attempt %d refused", i)
		}
	}
	if wait, ok := e.begin(t0, rule); ok || wait != time.Second {
		t.Fatalf("a fourth attempt while three run: %v %v", wait, ok)
	}
	// The replica running them died: a minute later they no longer count.
	if _, ok := e.begin(t0.Add(attemptLapse+time.Second), rule); !ok {
		t.Fatal("attempts that never settled still count after their lapse")
	}
	e = throttleEntry{first: t0}
	var locked bool
	for range 3 {
		e.begin(t0, rule)
		locked, _ = e.end(t0, rule, false)
	}
	if !locked {
		t.Fatal("three failures did not lock")
	}
	if wait, ok := e.begin(t0.Add(time.Minute), rule); ok || wait != throttleLockout-time.Minute {
		t.Fatalf("during the lockout: %v %v", wait, ok)
	}
	if _, ok := e.begin(t0.Add(throttleLockout+time.Second), rule); !ok || e.failures != 0 {
		t.Fatalf("after the lockout: %+v", e)
	}
	if _, drop := e.end(t0.Add(throttleLockout+time.Second), rule, true); !drop {
		t.Fatal("a success did not clear the account")
	}
	addr := throttleRule{limit: 3, keepOnSuccess: true}
	e = throttleEntry{first: t0}
	e.begin(t0, addr)
	e.end(t0, addr, false)
	e.begin(t0, addr)
	if _, drop := e.end(t0, addr, true); drop || e.failures != 1 {
		t.Fatalf("an address's success cleared its failures: %+v", e)
	}
	if !e.spent(t0.Add(throttleWindow+time.Second)) || e.spent(t0) {
		t.Fatal("spent() does not follow the window")
	}
}
