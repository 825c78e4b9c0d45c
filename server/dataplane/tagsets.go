package dataplane

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/tags"
)

// A tag set new to the control plane is registered when its first usage
// event is stored, and rolled up as a dimension of its own. In issue 27
// (row 7) one key sent 10,500 requests in 3.5 s, each with a new
// X-Gw-Tags set: 9,258 sets registered, and the database busy long enough
// to fail heartbeats, a budget sync and a bundle refresh. So each key may
// bring at most DefaultKeyTagSetsPerMinute tag sets a minute that it has
// not used lately; past that, a request with yet another set is refused,
// 429 too_many_tag_sets, with Retry-After until the first of them is a
// minute old. A set the key used lately (the last
// keyTagSetsRemembered it used) passes whatever the count: the bound is on
// new sets, not on requests. Each data plane counts on its own
// (docs/cost-centres.md).

// DefaultKeyTagSetsPerMinute is how many tag sets new to a key it may
// bring in a minute.
const DefaultKeyTagSetsPerMinute = 100

// keyTagSetsRemembered is how many of a key's latest tag sets count as
// used lately (the least recently used is forgotten first).
const keyTagSetsRemembered = 1000

// tagSetIdle is how long a key's memory of its tag sets is kept without a
// request.
const tagSetIdle = 10 * time.Minute

// tagSetBound counts the tag sets new to each key.
type tagSetBound struct {
	perMinute int

	mu    sync.Mutex
	byKey map[uuid.UUID]*keyTagSets
	swept time.Time
}

// keyTagSets is one key's recent tag sets.
type keyTagSets struct {
	// used is when each remembered set was last used.
	used map[uuid.UUID]time.Time
	// added is when each of the key's latest new sets came, oldest first,
	// those of the last minute at most.
	added []time.Time
	last  time.Time
}

// newTagSetBound bounds new tag sets to perMinute per key (the default
// when 0; none when negative).
func newTagSetBound(perMinute int) *tagSetBound {
	if perMinute == 0 {
		perMinute = DefaultKeyTagSetsPerMinute
	}
	return &tagSetBound{perMinute: perMinute, byKey: map[uuid.UUID]*keyTagSets{}}
}

// admit counts a request of key with the tags t at now, or refuses it.
func (b *tagSetBound) admit(key uuid.UUID, t map[string]string, now time.Time) *response {
	if b.perMinute < 0 || len(t) == 0 {
		return nil
	}
	set := tags.SetID(uuid.Nil, t)
	b.mu.Lock()
	defer b.mu.Unlock()
	if now.Sub(b.swept) >= time.Minute {
		for id, k := range b.byKey {
			if now.Sub(k.last) >= tagSetIdle {
				delete(b.byKey, id)
			}
		}
		b.swept = now
	}
	k := b.byKey[key]
	if k == nil {
		k = &keyTagSets{used: map[uuid.UUID]time.Time{}}
		b.byKey[key] = k
	}
	k.last = now
	if _, ok := k.used[set]; ok {
		k.used[set] = now
		return nil
	}
	drop := 0
	for drop < len(k.added) && now.Sub(k.added[drop]) >= time.Minute {
		drop++
	}
	k.added = k.added[drop:]
	if len(k.added) >= b.perMinute {
		return tooManyTagSets(b.perMinute, k.added[0].Add(time.Minute).Sub(now))
	}
	k.added = append(k.added, now)
	if len(k.used) >= keyTagSetsRemembered {
		k.forgetOldest()
	}
	k.used[set] = now
	return nil
}

// forgetOldest forgets the set used least recently.
func (k *keyTagSets) forgetOldest() {
	var oldest uuid.UUID
	var at time.Time
	for id, t := range k.used {
		if at.IsZero() || t.Before(at) {
			oldest, at = id, t
		}
	}
	delete(k.used, oldest)
}

// tooManyTagSets is the refusal of a tag set past a key's bound: a 429,
// so the SDKs retry it after Retry-After.
func tooManyTagSets(perMinute int, wait time.Duration) *response {
	retry := strconv.FormatInt(max(int64((wait+time.Second-1)/time.Second), 1), 10)
	return errorResponse(http.StatusTooManyRequests, apiError{
		Message: "This key brought " + strconv.Itoa(perMinute) + " tag sets it had not used lately within the last minute, " +
			"as many as a key may; retry in " + retry + "s, or send a set it used lately (a tag with many values, " +
			"such as a user or request id, is better kept out of " + tags.Header + ").",
		Type: typeRateLimit, Param: ref(tags.Header), Code: ref("too_many_tag_sets"),
	}, headerField{"Retry-After", []string{retry}})
}
