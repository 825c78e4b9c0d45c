package dataplane

import (
	"errors"
	"io"
	"net/http"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Bounded memory for authenticated traffic (issue 17). A request body is
// the largest thing an inference holds, and a caller with one valid key
// chooses its size: sixteen concurrent 30 MiB chat completions took the
// process to 3.6 GB. Every inference body (the playground's too) is
// therefore counted against a process-wide budget of body bytes in flight,
// and each key against a share of it, from before its first byte is read
// until the request's answer is written. A body the budget cannot hold is
// refused at once, 503 overloaded with Retry-After: a declared length is
// reserved whole before reading; a body of unknown length (chunked) is
// reserved as it arrives.
//
// What a request holds besides its body is counted too, once it is made
// (issue 27, where 16 × 30 MiB bodies over 16 keys took 541 MB on Chat
// Completions but 1,021 MB on Messages and 1,472 MB on Responses):
//
//   - Chat Completions: the body; providers.ParseChatRequest keeps the
//     rest as slices of it.
//   - Messages and Responses: the body, and the outline routing reads
//     (providers.Outline: the body with long strings cut, small next to
//     it) with its translation to Chat Completions; for an upstream that
//     does not speak the dialect, the whole translation too, counted when
//     a route makes it.
//
// The upstream request is not counted: to an upstream of the request's
// own dialect (OpenAI-shaped chat, Anthropic Messages, OpenAI Responses)
// it is the body's (or the translation's) own bytes with a few members
// written over them (providers' editObject), no copy; to other upstreams,
// and to Bedrock and Vertex AI (which sign or take it whole), it is one
// copy in their format.
//
// What parsing and translating make is counted whatever the budget has
// left (count): the request was admitted with its body, and refusing it
// half-way would waste what it took; later bodies find the budget fuller.
// So the budget bounds the memory inference bodies take to about once
// itself for requests their upstream takes as sent, twice for those
// translated or re-encoded.

// DefaultBodyBytesInFlight is the process-wide budget of inference body
// bytes in flight.
const DefaultBodyBytesInFlight = 256 << 20

// DefaultKeyBodyBytesInFlight is one key's share of it: a quarter, so that
// one key's large requests leave room for others'. A share is never less
// than the largest body a request may have (Options.MaxRequestBytes).
const DefaultKeyBodyBytesInFlight = DefaultBodyBytesInFlight / 4

// memoryReturnAfter is how many bytes of large bodies (largeBody or more)
// pass through the budget before the memory they took is given back to
// the operating system, the next time no body is in flight, and at most
// once per memoryReturnEvery. The Go runtime would give it back only at
// its own pace (minutes after the next collection, which an idle process
// does not start); a collection after large bodies costs little next to
// reading them.
const (
	memoryReturnAfter = 16 << 20
	largeBody         = 1 << 20
	memoryReturnEvery = 10 * time.Second
	// memoryReturnDelay lets the last requests' handlers finish (their
	// bodies are still referenced until then) before collecting.
	memoryReturnDelay = time.Second
)

// unknownLengthStep is the first reservation of a body without a declared
// length; each further one doubles what is held.
const unknownLengthStep = 64 << 10

// bodyBudget counts the body bytes in flight, in all and per key.
type bodyBudget struct {
	limit, perKey int64

	mu    sync.Mutex
	used  int64
	byKey map[uuid.UUID]int64
	// sinceReturn counts the large bodies' bytes reserved since memory
	// was last given back, at lastReturn; pending: a return is due.
	sinceReturn int64
	lastReturn  time.Time
	pending     bool
	// returnMemory gives freed memory back to the operating system.
	returnMemory func()
}

func newBodyBudget(limit, perKey, maxBody int64) *bodyBudget {
	if limit <= 0 {
		limit = DefaultBodyBytesInFlight
	}
	if perKey <= 0 {
		perKey = min(DefaultKeyBodyBytesInFlight, limit)
	}
	// A body of the largest size allowed must fit in a share, and a share
	// in the whole, or such a request could never be served.
	perKey = max(perKey, maxBody)
	limit = max(limit, perKey)
	return &bodyBudget{limit: limit, perKey: perKey, byKey: map[uuid.UUID]int64{}, returnMemory: debug.FreeOSMemory}
}

// reserve takes n more bytes for key, or reports which bound refused them.
func (b *bodyBudget) reserve(key uuid.UUID, n int64) *response {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.byKey[key]+n > b.perKey:
		return errKeyOverloaded
	case b.used+n > b.limit:
		return errOverloaded
	}
	b.used += n
	b.byKey[key] += n
	if n >= largeBody {
		b.sinceReturn += n
	}
	return nil
}

// release gives back n bytes of key's. Once nothing is in flight after
// enough large bodies, the memory is returned to the operating system.
func (b *bodyBudget) release(key uuid.UUID, n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if left := b.byKey[key] - n; left > 0 {
		b.byKey[key] = left
	} else {
		delete(b.byKey, key)
	}
	if b.used > 0 || b.sinceReturn < memoryReturnAfter || b.pending {
		return
	}
	b.pending = true
	wait := time.Until(b.lastReturn.Add(memoryReturnEvery))
	time.AfterFunc(max(wait, memoryReturnDelay), func() {
		b.returnMemory()
		b.mu.Lock()
		b.pending, b.sinceReturn, b.lastReturn = false, 0, time.Now()
		b.mu.Unlock()
		// What the last handlers made after their bodies went (an answer
		// metered, an event recorded, a count's garbage, a translation
		// still on its way upstream) is given back again, later, a few
		// times while no bodies come: a slow upstream can keep a handler
		// and what it holds for many seconds after its body's budget was
		// released, and an idle process starts no collection of its own
		// for minutes. Bodies that come meanwhile schedule their own.
		b.returnWhileQuiet(memoryReturnFollowUps)
	})
}

// memoryReturnFollowUps is how many times, memoryReturnEvery apart, a
// quiet process gives memory back after a burst.
const memoryReturnFollowUps = 5

func (b *bodyBudget) returnWhileQuiet(left int) {
	if left == 0 {
		return
	}
	time.AfterFunc(memoryReturnEvery, func() {
		b.mu.Lock()
		quiet := b.used == 0 && !b.pending && b.sinceReturn == 0
		b.mu.Unlock()
		if quiet {
			b.returnMemory()
			b.returnWhileQuiet(left - 1)
		}
	})
}

// inFlight reports the bytes held, in all and by key, for tests.
func (b *bodyBudget) inFlight(key uuid.UUID) (all, ofKey int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used, b.byKey[key]
}

var (
	errOverloaded = errorResponse(http.StatusServiceUnavailable, apiError{
		Message: "The gateway holds as many request bodies as it can at the moment; retry shortly.",
		Type:    typeServer, Code: ref("overloaded"),
	}, headerField{"Retry-After", []string{"2"}})
	errKeyOverloaded = errorResponse(http.StatusServiceUnavailable, apiError{
		Message: "This key's requests in flight hold as many body bytes as one key may; retry when some have finished.",
		Type:    typeServer, Code: ref("overloaded"),
	}, headerField{"Retry-After", []string{"2"}})
)

// bodyHold is one request's reservation.
type bodyHold struct {
	budget *bodyBudget
	key    uuid.UUID
	held   int64
}

func (h *bodyHold) grow(n int64) *response {
	if refusal := h.budget.reserve(h.key, n); refusal != nil {
		return refusal
	}
	h.held += n
	return nil
}

// count adds n bytes the request holds besides its body (what parsing
// or a translation made), whatever the budget has left.
func (h *bodyHold) count(n int64) {
	if n <= 0 {
		return
	}
	h.budget.mu.Lock()
	h.budget.used += n
	h.budget.byKey[h.key] += n
	h.budget.mu.Unlock()
	h.held += n
}

func (h *bodyHold) release() {
	h.budget.release(h.key, h.held)
	h.held = 0
}

// refuser writes a refusal in an endpoint's shape: a dialect's error, a
// JSON-RPC error.
type refuser interface {
	refuse(w http.ResponseWriter, r *response)
}

// readBody reads an inference body within its size limit, the read
// deadline limitBodyTime set and the body budget, or answers the refusal
// in the endpoint's shape (d) and returns nil. The hold counts what the
// request holds; its release gives it back: call it once the answer is
// written.
func (p *Plane) readBody(w http.ResponseWriter, r *http.Request, d refuser, key uuid.UUID) (body []byte, hold *bodyHold) {
	limit := p.inference.maxBody
	if r.ContentLength > limit {
		d.refuse(w, errBodyTooLarge(limit))
		return nil, nil
	}
	h := &bodyHold{budget: p.bodies, key: key}
	body, refusal, err := h.read(http.MaxBytesReader(w, r.Body, limit), r.ContentLength, limit)
	if err == nil && refusal == nil {
		// A stream may take long to answer; the body is in.
		_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
		return body, h
	}
	h.release()
	var tooLarge *http.MaxBytesError
	switch {
	case refusal != nil:
		if r.ContentLength < 0 {
			// Part of the body was read; the rest is not waited for.
			w.Header().Set("Connection", "close")
		}
		d.refuse(w, refusal)
	case errors.As(err, &tooLarge):
		d.refuse(w, errBodyTooLarge(tooLarge.Limit))
	case errors.Is(err, os.ErrDeadlineExceeded):
		// The rest of the body is not waited for: the connection closes
		// after the answer.
		w.Header().Set("Connection", "close")
		d.refuse(w, errBodyTimeout)
	default:
		d.refuse(w, invalidRequest("", "invalid_body", "The request body could not be read."))
	}
	return nil, nil
}

// read reads a body of declared length n (-1: unknown) into a buffer of
// its size, reserving each part of the buffer before reading into it. A
// refusal means the budget could not hold it.
func (h *bodyHold) read(src io.Reader, n, limit int64) ([]byte, *response, error) {
	if n >= 0 {
		if refusal := h.grow(n); refusal != nil {
			return nil, refusal, nil
		}
		buf := make([]byte, n)
		if _, err := io.ReadFull(src, buf); err != nil {
			return nil, nil, err
		}
		return buf, nil, nil
	}
	var buf []byte
	for {
		if len(buf) == cap(buf) {
			// One byte past the limit lets the limit's error show.
			grown := min(max(2*int64(cap(buf)), unknownLengthStep), limit+1)
			if grown <= int64(cap(buf)) {
				return nil, nil, &http.MaxBytesError{Limit: limit}
			}
			if refusal := h.grow(grown - int64(cap(buf))); refusal != nil {
				return nil, refusal, nil
			}
			next := make([]byte, len(buf), grown)
			copy(next, buf)
			buf = next
		}
		m, err := src.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if errors.Is(err, io.EOF) {
			return buf, nil, nil
		}
		if err != nil {
			return nil, nil, err
		}
	}
}
