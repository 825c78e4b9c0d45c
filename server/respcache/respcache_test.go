package respcache_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gw-gateway/gw/server/respcache"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestKeyOfSeparatesParts(t *testing.T) {
	if respcache.KeyOf([]byte("ab"), []byte("c")) == respcache.KeyOf([]byte("a"), []byte("bc")) {
		t.Fatal("part boundaries must change the key")
	}
	if respcache.KeyOf([]byte("ws1"), []byte("req")) == respcache.KeyOf([]byte("ws2"), []byte("req")) {
		t.Fatal("a different tenant part must change the key")
	}
	if respcache.KeyOf([]byte("x")) != respcache.KeyOf([]byte("x")) {
		t.Fatal("equal parts must give equal keys")
	}
}

// TestHitRatio: a workload of 10 distinct requests each asked 10 times
// is served 90 times from the cache.
func TestHitRatio(t *testing.T) {
	c := respcache.New(1<<20, nil)
	for round := 0; round < 10; round++ {
		for i := 0; i < 10; i++ {
			k := respcache.KeyOf([]byte(fmt.Sprint(i)))
			if _, ok := c.Get(k); !ok {
				c.Put(k, &respcache.Entry{Body: []byte("answer")}, time.Minute, 0)
			}
		}
	}
	s := c.Stats()
	if s.Hits != 90 || s.Misses != 10 {
		t.Fatalf("hits %d misses %d, want 90 and 10", s.Hits, s.Misses)
	}
}

// TestBoundUnderFlood: 100 000 distinct requests never hold more than the
// bound, the oldest are evicted and never served, the newest are.
func TestBoundUnderFlood(t *testing.T) {
	const bound = 64 << 10
	c := respcache.New(bound, nil)
	body := make([]byte, 300)
	for i := 0; i < 100000; i++ {
		c.Put(respcache.KeyOf([]byte(fmt.Sprint(i))), &respcache.Entry{Body: body, Chunks: [][]byte{body[:10]}}, time.Hour, 0)
		if s := c.Stats(); s.Bytes > bound {
			t.Fatalf("after %d puts the cache holds %d bytes, over its bound %d", i+1, s.Bytes, bound)
		}
	}
	s := c.Stats()
	per := (&respcache.Entry{Body: body, Chunks: [][]byte{body[:10]}}).Size()
	if s.Entries != bound/per || s.Evictions != uint64(100000-s.Entries) {
		t.Fatalf("entries %d evictions %d, want %d and %d", s.Entries, s.Evictions, bound/per, 100000-bound/per)
	}
	if _, ok := c.Get(respcache.KeyOf([]byte("0"))); ok {
		t.Fatal("an evicted entry was served")
	}
	if _, ok := c.Get(respcache.KeyOf([]byte("99999"))); !ok {
		t.Fatal("the newest entry was not served")
	}
}

func TestLRUKeepsRecentlyRead(t *testing.T) {
	per := (&respcache.Entry{Body: []byte("x")}).Size()
	c := respcache.New(2*per, nil)
	a, b, d := respcache.KeyOf([]byte("a")), respcache.KeyOf([]byte("b")), respcache.KeyOf([]byte("d"))
	c.Put(a, &respcache.Entry{Body: []byte("x")}, time.Hour, 0)
	c.Put(b, &respcache.Entry{Body: []byte("x")}, time.Hour, 0)
	c.Get(a)
	c.Put(d, &respcache.Entry{Body: []byte("x")}, time.Hour, 0)
	if _, ok := c.Get(b); ok {
		t.Fatal("the least recently used entry was kept")
	}
	if _, ok := c.Get(a); !ok {
		t.Fatal("the recently read entry was evicted")
	}
}

func TestExpiredNeverServed(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	c := respcache.New(1<<20, clk.now)
	k := respcache.KeyOf([]byte("k"))
	c.Put(k, &respcache.Entry{Body: []byte("x")}, 10*time.Second, 0)
	clk.t = clk.t.Add(9 * time.Second)
	if _, ok := c.Get(k); !ok {
		t.Fatal("a live entry was not served")
	}
	clk.t = clk.t.Add(time.Second)
	if _, ok := c.Get(k); ok {
		t.Fatal("an expired entry was served")
	}
	if s := c.Stats(); s.Entries != 0 || s.Bytes != 0 || s.Expired != 1 {
		t.Fatalf("expired entry kept: %+v", s)
	}
}

func TestEntryLimits(t *testing.T) {
	c := respcache.New(1000, nil)
	big := &respcache.Entry{Body: make([]byte, 500)}
	if c.Put(respcache.KeyOf([]byte("a")), big, time.Hour, 200) {
		t.Fatal("an entry over max_entry_bytes was kept")
	}
	if c.Put(respcache.KeyOf([]byte("b")), &respcache.Entry{Body: make([]byte, 2000)}, time.Hour, 0) {
		t.Fatal("an entry over the whole bound was kept")
	}
	if c.Put(respcache.KeyOf([]byte("c")), big, 0, 0) {
		t.Fatal("an entry with no time to live was kept")
	}
	if !c.Put(respcache.KeyOf([]byte("d")), big, time.Hour, 1000) {
		t.Fatal("an entry within its limits was not kept")
	}
}
