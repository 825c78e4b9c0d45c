package dataplane

import (
	"net/http"
	"slices"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/playground"
	"github.com/gw-gateway/gw/server/providers"
)

// dialect is how one inference endpoint speaks to its caller. Every
// endpoint shares one admission (serveInference, exchange): the key, rate
// limits, the body, the model's visibility, policies, budgets, the
// attempts with their fallback, and the one usage event. A dialect only
// reads its requests, writes its answers and errors, and names itself.
//
// A request is routed as the Chat Completions request it amounts to
// (parse translates it), which is what policies, capabilities and budgets
// judge, and what the chat adapters translate for their upstreams. Where
// the upstream speaks the dialect itself (providers.Set.Native), the
// request goes there as the caller sent it, and the answer comes back as
// is.
type dialect interface {
	// name is the endpoint in usage events and the key of its native
	// adapters.
	name() string
	// parse reads a body; err refuses the request at once.
	parse(body []byte) (parsed, error)
	// unknown lists the members a strict_parameters policy refuses.
	unknown(x *exchange, translated bool) []string
	// serves reports whether model answers this endpoint.
	serves(m catalog.Model) bool
	// translates reports whether a request may go to an upstream that
	// does not speak the dialect, translated.
	translates() bool
	// refuse writes an error (built in OpenAI's shape) in the dialect's.
	refuse(w http.ResponseWriter, r *response)
	// answer is a non-streaming answer's body in the dialect.
	answer(c *providers.Completion, native bool, model string) ([]byte, error)
	// startStream sends a streaming answer's headers.
	startStream(w http.ResponseWriter, native bool, model string) streamOut
}

// parsed is a request as its dialect reads it.
type parsed struct {
	// req is what routing reads: the request as Chat Completions. Of a
	// Messages or Responses request it is the translation of the body's
	// outline (providers.Outline), unless whole: a request that goes to
	// an upstream of its own dialect is never translated whole, and the
	// whole translation (translator) is made when a route needs it.
	req   *providers.ChatRequest
	whole bool
	// native is the request in its own dialect, for upstreams that speak
	// it (nil for Chat Completions).
	native *providers.NativeRequest
	// translateErr is why the request cannot be translated for an
	// upstream that does not speak its dialect, which refuses it only
	// where it must be translated (a native upstream takes what the
	// translation cannot express).
	translateErr error
	// held is what parsing made beyond the body (an outline, a
	// translation), which the body's hold counts too.
	held int64
}

// translator is a dialect whose requests are routed as their outline's
// translation (parsed.req).
type translator interface {
	// translate is the whole request as Chat Completions, and the bytes
	// the translation holds.
	translate(body []byte) (*providers.ChatRequest, int64, error)
}

// streamOut writes a streaming answer in a dialect.
type streamOut interface {
	// chunk writes what the adapter yielded: a chat.completion.chunk, or
	// a native upstream's event. more says another whole event is already
	// at hand, so the writer may hold this one to send both in one write.
	chunk(data []byte, more bool) error
	// end finishes a stream that ended whole.
	end(u providers.Usage) error
	// fail ends a stream that broke off.
	fail(model string, f *providers.Error) error
}

// Caller is the management principal a playground request runs as
// (package playground, which the management API shares).
type Caller = playground.Caller

// maxRequestIDLen is the longest caller request id kept (the usage
// ingest's bound).
const maxRequestIDLen = 100

// setRequestID answers the request's id: the caller's own X-Request-Id
// when it is a plausible id (1 to 100 visible ASCII characters), else
// own, the request's usage event id, so a caller's report of a request
// finds its record. It is echoed, recorded in the usage event and
// forwarded upstream.
func setRequestID(w http.ResponseWriter, r *http.Request, own uuid.UUID) string {
	id := r.Header.Get("X-Request-Id")
	if !plausibleID(id) {
		id = own.String()
	}
	w.Header()["X-Request-Id"] = []string{id}
	return id
}

func plausibleID(s string) bool {
	if len(s) == 0 || len(s) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// forwardHeader is what an upstream call carries of the caller's request
// besides its id (providers.Call.RequestID): the W3C trace context, and
// the caller's anthropic-beta or openai-beta flags for an upstream of
// their vendor (vendorHeaders); nil when there is none of them, as for
// most requests, which so allocate no map for it (issue 33).
func (x *exchange) forwardHeader(rt *route) http.Header {
	// Made once per exchange (a route's Check and each attempt's call
	// all read it, none writes it): it depends on the request alone, and
	// on whose beta flags the route's upstream takes.
	vendor := betaVendorOf(x.d.name(), rt)
	if x.fwdMade && x.fwdVendor == vendor {
		return x.fwdHeader
	}
	var h http.Header
	for _, name := range [...]string{"Traceparent", "Tracestate"} {
		if v := x.r.Header.Values(name); len(v) > 0 {
			if h == nil {
				h = make(http.Header, 3)
			}
			h[name] = v
		}
	}
	h = vendorHeaders(x.r, vendor, h)
	x.fwdHeader, x.fwdVendor, x.fwdMade = h, vendor, true
	return h
}

// errWrongEndpoint refuses a chat model on the embeddings endpoint and an
// embedding model on the others. Both are visible in discovery, which
// says what each serves, so this is a 400, not the 404 of a hidden model.
func errWrongEndpoint(m catalog.Model, endpoint string) *response {
	what := "a chat model"
	if m.Embeds() {
		what = "an embedding model"
	}
	return invalidRequest("model", "unsupported_model",
		"The model '"+m.ID+"' is "+what+" and does not serve "+endpoint+".")
}

// chatDialect is Chat Completions, the data plane's own dialect.
type chatDialect struct{}

func (chatDialect) name() string { return endpointChatCompletions }

func (chatDialect) parse(body []byte) (parsed, error) {
	req, err := providers.ParseChatRequest(body)
	return parsed{req: req, whole: true}, err
}

func (chatDialect) unknown(x *exchange, _ bool) []string { return x.req.UnknownMembers() }

func (chatDialect) serves(m catalog.Model) bool { return !m.Embeds() }

func (chatDialect) translates() bool { return true }

func (chatDialect) refuse(w http.ResponseWriter, r *response) { r.write(w) }

func (chatDialect) answer(c *providers.Completion, _ bool, _ string) ([]byte, error) {
	return c.Body, nil
}

func (chatDialect) startStream(w http.ResponseWriter, _ bool, _ string) streamOut {
	return chatStream{startEventStream(w)}
}

// chatStream relays chunks as they come, and ends with [DONE] or an
// error event, which the OpenAI SDKs report as an error.
type chatStream struct{ *eventStream }

func (s chatStream) chunk(data []byte, more bool) error {
	if more {
		s.add(data)
		return nil
	}
	return s.data(data)
}
func (s chatStream) end(providers.Usage) error { return s.done() }
func (s chatStream) fail(m string, f *providers.Error) error {
	return s.data(streamErrorData(m, f))
}

func sortedStrings(s []string) []string {
	slices.Sort(s)
	return s
}

// chunkTranslator turns chat chunks into a dialect's stream events.
type chunkTranslator interface {
	Chunk(raw []byte) ([][]byte, error)
	End(u providers.Usage) [][]byte
}

// translatedStream is the part of a named-event stream (Messages,
// Responses) that does not depend on the dialect: a native upstream's
// events relayed as they come, or chat chunks translated. A dialect adds
// its own fail.
type translatedStream struct {
	out       *namedEvents
	translate chunkTranslator // nil: the upstream speaks the dialect
}

func (s *translatedStream) chunk(data []byte, more bool) error {
	if s.translate == nil {
		return s.out.events([][]byte{data}, more)
	}
	events, err := s.translate.Chunk(data)
	if err != nil {
		// A chunk that cannot be translated is skipped; the usage and the
		// stream's end still come from the rest (and what is queued goes
		// now unless more follows).
		events = nil
	}
	return s.out.events(events, more)
}

// end writes the translation's last events without a flush (eventStream.
// last); a native upstream's own terminal event was relayed already, and
// anything still queued goes with the handler's end.
func (s *translatedStream) end(u providers.Usage) error {
	if s.translate != nil {
		for _, p := range s.translate.End(u) {
			s.out.queue(p)
		}
	}
	return s.out.last()
}
