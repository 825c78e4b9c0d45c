// Package respcache is the data plane's response cache (issue 35): answers
// kept in memory under a byte bound (least recently used evicted first),
// each for its time to live, keyed by a digest the caller computes of
// everything that must match for an answer to be served again (Key). It
// knows nothing of tenants, stores or HTTP: the key carries the tenant.
package respcache

import (
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"sync"
	"time"
)

// Key identifies an answer: a SHA-256 over its parts, each length-prefixed
// so no two part lists share a key.
type Key [sha256.Size]byte

// KeyOf is the key of parts in order (a workspace id, a policy identity,
// the canonical request, …).
func KeyOf(parts ...[]byte) Key {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	var k Key
	h.Sum(k[:0])
	return k
}

// Entry is a kept answer: a whole body, or a stream's chunks in order,
// with what the cache counts of it. Value is the caller's (usage, what the
// answer would have cost); Size must count what it holds.
type Entry struct {
	Body   []byte
	Chunks [][]byte
	Value  any
	// Extra is bytes the caller's Value holds, counted in the bound.
	Extra int
}

// Size is what an entry counts against the bound: its bytes and a fixed
// overhead per chunk and entry.
func (e *Entry) Size() int {
	n := entryOverhead + len(e.Body) + e.Extra
	for _, c := range e.Chunks {
		n += chunkOverhead + len(c)
	}
	return n
}

const (
	entryOverhead = 128
	chunkOverhead = 24
)

type item struct {
	key     Key
	entry   *Entry
	size    int
	expires time.Time
}

// Cache is a byte-bounded LRU of entries with a time to live each. Safe
// for concurrent use.
type Cache struct {
	mu    sync.Mutex
	max   int
	bytes int
	ll    *list.List
	items map[Key]*list.Element
	now   func() time.Time

	hits, misses, evictions, expired uint64
}

// New is a cache holding at most maxBytes (by Entry.Size); now is its
// clock (time.Now when nil).
func New(maxBytes int, now func() time.Time) *Cache {
	if now == nil {
		now = time.Now
	}
	return &Cache{max: maxBytes, ll: list.New(), items: map[Key]*list.Element{}, now: now}
}

// Get is the entry under k if one is kept and not expired; an expired one
// is dropped, never served.
func (c *Cache) Get(k Key) (*Entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[k]
	if !ok {
		c.misses++
		return nil, false
	}
	it := el.Value.(*item)
	if !c.now().Before(it.expires) {
		c.remove(el)
		c.expired++
		c.misses++
		return nil, false
	}
	c.ll.MoveToFront(el)
	c.hits++
	return it.entry, true
}

// Put keeps e under k for ttl, evicting the least recently used entries
// until the bound holds. An entry larger than maxEntry (when positive) or
// than the whole bound is not kept; Put reports whether it was.
func (c *Cache) Put(k Key, e *Entry, ttl time.Duration, maxEntry int) bool {
	size := e.Size()
	if ttl <= 0 || size > c.max || (maxEntry > 0 && size > maxEntry) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		c.remove(el)
	}
	for c.bytes+size > c.max {
		c.remove(c.ll.Back())
		c.evictions++
	}
	c.items[k] = c.ll.PushFront(&item{key: k, entry: e, size: size, expires: c.now().Add(ttl)})
	c.bytes += size
	return true
}

func (c *Cache) remove(el *list.Element) {
	it := c.ll.Remove(el).(*item)
	delete(c.items, it.key)
	c.bytes -= it.size
}

// Stats is what a cache has counted.
type Stats struct {
	Entries, Bytes, MaxBytes         int
	Hits, Misses, Evictions, Expired uint64
}

// Stats reports the cache's counts now.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Entries: c.ll.Len(), Bytes: c.bytes, MaxBytes: c.max, Hits: c.hits, Misses: c.misses, Evictions: c.evictions, Expired: c.expired}
}
