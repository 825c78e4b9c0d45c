package dataplane

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/server/respcache"
)

// The response cache (issue 35, docs/cache.md): a workspace that turns it
// on has its deterministic requests (temperature 0, or the header
// x-gw-cache-allow: true) answered again from this data plane's memory
// while the answer lives. The key is a digest of the workspace, the
// policies' decision for the route (so keys whose policies decide
// differently never share an answer), the dialect, the model and what
// the route sets of the request, and the request body in canonical form:
// two tenants, or two keys with different policies, never meet. A hit is
// admitted, rate-limited and reserved like any request; its usage event
// says usage_source "cache", costs $0 and records what the upstream call
// would have cost (cache_saving_usd).

// DefaultResponseCacheBytes bounds a data plane's response cache when
// Options.ResponseCacheBytes is 0.
const DefaultResponseCacheBytes = 64 << 20

// newResponseCache is the plane's cache, nil when opts turn it off.
func newResponseCache(opts Options, now func() time.Time) *respcache.Cache {
	n := opts.ResponseCacheBytes
	if n < 0 {
		return nil
	}
	if n == 0 {
		n = DefaultResponseCacheBytes
	}
	return respcache.New(n, now)
}

// cachedAnswer is what an entry keeps beyond its bytes: the answer's
// status line, content type and usage, and the model that gave it.
type cachedAnswer struct {
	contentType string
	usage       providers.Usage
	model       string
	stream      bool
}

// cacheStage answers a request its workspace's cache holds (a hit
// finishes the request itself), or, for a request the cache may keep,
// runs the attempt with its answer recorded and keeps it (a miss). Any
// other request goes on to attempt untouched.
func (x *exchange) cacheStage() bool {
	c := x.p.respCache
	if c == nil || x.caller != nil {
		return true
	}
	set := x.key.org.responseCaches[x.key.workspace]
	if set == nil || !x.cacheable() {
		return true
	}
	serve, keep := cacheDirectives(x.r.Header)
	key, ok := x.cacheKey()
	if !ok {
		return true
	}
	if serve {
		if e, ok := c.Get(key); ok {
			x.cacheHit(e)
			return false
		}
	}
	x.w.Header()["X-Gw-Cache"] = []string{"miss"}
	if !keep {
		return true
	}
	rec := &cacheRecorder{ResponseWriter: x.w, limit: set.MaxEntryBytes}
	x.w = rec
	x.run(x.rt)
	x.w = rec.ResponseWriter
	x.keepAnswer(c, key, set, rec)
	return false
}

// cacheable: the request is deterministic (temperature 0) or its caller
// allows the cache (x-gw-cache-allow: true).
func (x *exchange) cacheable() bool {
	if strings.EqualFold(x.r.Header.Get("X-Gw-Cache-Allow"), "true") {
		return true
	}
	raw, ok := x.req.Members.Get("temperature")
	if !ok {
		return false
	}
	t, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
	return err == nil && t == 0
}

// cacheDirectives reads the request's Cache-Control: no-cache answers
// afresh and keeps the new answer; no-store neither reads nor keeps.
func cacheDirectives(h http.Header) (serve, keep bool) {
	serve, keep = true, true
	for _, v := range h.Values("Cache-Control") {
		for _, d := range strings.Split(v, ",") {
			switch strings.ToLower(strings.TrimSpace(d)) {
			case "no-cache":
				serve = false
			case "no-store":
				serve, keep = false, false
			}
		}
	}
	return serve, keep
}

// cacheForwarded are the request headers that change an upstream's
// answer and so are part of the key.
var cacheForwarded = []string{"Anthropic-Beta", "Anthropic-Version", "Openai-Beta"}

// cacheKey is the request's key: the workspace, the decision the route
// is on, the dialect and endpoint, the route's model, upstream form,
// output limit and request constraints, the headers that change the answer, and the body in
// canonical JSON (keys sorted, numbers as written).
func (x *exchange) cacheKey() (respcache.Key, bool) {
	decision, err := json.Marshal(x.rt.decision)
	if err != nil {
		return respcache.Key{}, false
	}
	var body any
	dec := json.NewDecoder(bytes.NewReader(x.body))
	dec.UseNumber()
	if dec.Decode(&body) != nil {
		return respcache.Key{}, false
	}
	canonical, err := json.Marshal(body)
	if err != nil {
		return respcache.Key{}, false
	}
	var headers []byte
	for _, h := range cacheForwarded {
		headers = append(headers, strings.Join(x.r.Header.Values(h), ",")...)
		headers = append(headers, 0)
	}
	ws := x.key.workspace
	route := x.d.name() + "\x00" + x.endpoint + "\x00" + x.rt.model.model.ID + "\x00" +
		strconv.FormatBool(x.rt.native) + "\x00" + strconv.FormatInt(x.rt.maxTokens, 10)
	if c := x.rt.model.model.Constraints; c != nil {
		// The model's constraints change what it is sent (adapt): an
		// answer to the request as it went before they did is not one to
		// the request as it goes now.
		constraints, _ := json.Marshal(c)
		route += "\x00" + string(constraints)
	}
	return respcache.KeyOf(ws[:], decision, []byte(route), headers, canonical), true
}

// cacheHit answers from e and records the request: no upstream was
// called (no attempt), the cost is $0, the reservation settles at $0,
// and the event says what the call would have cost.
func (x *exchange) cacheHit(e *respcache.Entry) {
	a := e.Value.(*cachedAnswer)
	m := x.key.org.models[a.model]
	if m == nil {
		m = x.rt.model
	}
	saving, err := m.pricing.CostNanoUSD(a.usage.Tokens())
	if err != nil {
		saving = 0
	}
	if !x.closing(statusOK, "") {
		return
	}
	u := usageRecord{status: statusOK, model: m.model.ID, provider: m.model.Provider, requested: x.requestedModel(),
		usage: a.usage, cacheHit: true, savingNano: saving}
	x.record(u)
	h := x.w.Header()
	h["X-Gw-Cache"] = []string{"hit"}
	x.setAttemptHeaders(m)
	h["Content-Type"] = []string{a.contentType}
	h["Cache-Control"] = noStore
	if !a.stream {
		h["Content-Length"] = []string{strconv.Itoa(len(e.Body))}
		x.w.WriteHeader(http.StatusOK)
		_, _ = x.w.Write(e.Body)
		return
	}
	x.w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(x.w)
	for _, chunk := range e.Chunks {
		if _, err := x.w.Write(chunk); err != nil {
			return
		}
		_ = rc.Flush()
	}
}

// keepAnswer keeps what rec recorded when it is a whole answer of the
// route's model alone: 200, ok, counted by the upstream (not estimated),
// no fallback, no guardrail at work, within the entry limit.
func (x *exchange) keepAnswer(c *respcache.Cache, key respcache.Key, set *bundle.ResponseCache, rec *cacheRecorder) {
	if rec.over || rec.status != http.StatusOK || !x.finished || x.final.status != statusOK || x.final.usage.Estimated ||
		len(x.attempts) != 1 || x.final.model != x.rt.model.model.ID || len(x.allGuardRecords()) > 0 {
		return
	}
	a := &cachedAnswer{contentType: rec.contentType, usage: x.final.usage, model: x.final.model, stream: x.streamed}
	e := &respcache.Entry{Value: a, Extra: len(a.contentType) + len(a.model)}
	if a.stream {
		e.Chunks = rec.chunks
	} else {
		e.Body = bytes.Join(rec.chunks, nil)
	}
	c.Put(key, e, time.Duration(set.TTLSeconds)*time.Second, set.MaxEntryBytes)
}

// cacheRecorder keeps a copy of what an answer writes, each write a
// chunk (a stream's events as the caller read them), up to limit bytes.
type cacheRecorder struct {
	http.ResponseWriter
	limit       int
	size        int
	over        bool
	status      int
	contentType string
	chunks      [][]byte
}

func (r *cacheRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
		r.contentType = r.Header().Get("Content-Type")
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *cacheRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	if !r.over {
		if r.size += len(b); r.limit > 0 && r.size > r.limit {
			r.over, r.chunks = true, nil
		} else {
			r.chunks = append(r.chunks, bytes.Clone(b))
		}
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets a response controller flush and set deadlines through.
func (r *cacheRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
