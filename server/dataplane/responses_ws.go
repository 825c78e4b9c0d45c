package dataplane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
)

// Responses over WebSocket (issue 35): OpenAI's WebSocket mode of the
// Responses API. GET /inf/v1/responses upgrades; the client sends
// {"type":"response.create", …the body of POST /v1/responses…} and reads
// the events the SSE stream would carry, one JSON text frame each.
//
// A turn is a request: it becomes a POST /inf/v1/responses with stream
// true, the upgrade's headers (its key, its tags) and the turn's body, and
// goes through serveInference — the same admission, stages, budgets,
// rate limits, guardrails and one usage event as an HTTP stream — with a
// ResponseWriter (socketWriter) that frames the stream's events onto the
// socket. There is no second metering path: what an HTTP stream of the
// same answer records, a turn records.
//
// gw keeps no responses (responses.go), so previous_response_id is, as at
// OpenAI in this mode, connection-local: the socket keeps the last
// response of each lane (its input and output items) and a turn that
// names it is sent with that history before its own input. A response of
// another connection — another key, another workspace — is not found.
//
// stream_id multiplexes: turns of one lane run in order (FIFO), lanes run
// side by side, and every event of a lane's turn echoes its stream_id.

// DefaultMaxSocketDuration is how long a Responses WebSocket stays open:
// OpenAI's 60-minute connection limit.
const DefaultMaxSocketDuration = 60 * time.Minute

const (
	// maxSocketLanes bounds the stream_id lanes a connection may open, and
	// with them the turns it runs at once and the histories it keeps.
	maxSocketLanes = 16
	// maxLaneQueue bounds the turns waiting on one lane.
	maxLaneQueue = 16
	// socketWriteTimeout bounds one frame's write: a reader that stopped
	// reading ends its turn as a caller that left would.
	socketWriteTimeout = 30 * time.Second
	// maxSocketErrorBody bounds what of a refusal's body is read to answer
	// it as an error event.
	maxSocketErrorBody = 64 << 10
)

// isWebSocketUpgrade: a GET that asks to become a WebSocket (RFC 6455 §4.1).
func isWebSocketUpgrade(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.EqualFold(r.Header.Get("Upgrade"), "websocket") &&
		headerHasToken(r.Header, "Connection", "upgrade")
}

func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// socketRegistry is the sockets a plane has open, which a shutdown ends
// (EndSockets): http.Server.Shutdown does not wait for hijacked
// connections.
type socketRegistry struct {
	mu     sync.Mutex
	open   map[*responsesSocket]struct{}
	closed bool
}

func (g *socketRegistry) add(s *responsesSocket) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	if g.open == nil {
		g.open = map[*responsesSocket]struct{}{}
	}
	g.open[s] = struct{}{}
	return true
}

func (g *socketRegistry) remove(s *responsesSocket) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.open, s)
}

// EndSockets ends the Responses WebSockets for a server shutting down: no
// socket opens and no turn starts any more (an error event
// gateway_shutting_down), the turns in flight are waited for until ctx
// ends and then cut (metered for what they relayed), and every socket
// closes with 1001 (going away), after which the SDKs connect again. Call
// it beside http.Server.Shutdown, with its deadline.
func (p *Plane) EndSockets(ctx context.Context) error {
	g := &p.sockets
	g.mu.Lock()
	g.closed = true
	open := make([]*responsesSocket, 0, len(g.open))
	for s := range g.open {
		open = append(open, s)
	}
	g.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range open {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.drain(ctx)
		}()
	}
	wg.Wait()
	if len(open) > 0 && ctx.Err() != nil {
		return errors.New("responses websockets: turns still in flight at the shutdown deadline were cut")
	}
	return nil
}

// errSocketsEnded refuses an upgrade once the sockets are ended.
var errSocketsEnded = errorResponse(http.StatusServiceUnavailable, apiError{Type: typeServer, Code: ref("gateway_shutting_down"),
	Message: "The gateway is shutting down; retry the request."})

// serveResponsesSocket answers GET /inf/v1/responses with an upgrade. The
// key is checked here, so a bad one is an HTTP 401 before any socket; each
// turn is admitted again as its own request (a key revoked mid-connection
// refuses the next turn).
func (p *Plane) serveResponsesSocket(w http.ResponseWriter, r *http.Request) {
	setRequestID(w, r, uuid.New())
	_, refusal := p.authenticate(r)
	if refusal == nil && !p.inference.enabled() {
		refusal = errInferenceNotConfigured
	}
	if refusal != nil {
		refusal.write(w)
		return
	}
	s := &responsesSocket{p: p, upgrade: r, lanes: map[string]chan []byte{}, chains: map[string][]json.RawMessage{},
		laneLast: map[string]string{}}
	if !p.sockets.add(s) {
		errSocketsEnded.write(w)
		return
	}
	defer p.sockets.remove(s)
	// The key travels in Authorization, which a web page cannot set on a
	// WebSocket: there is no ambient credential a foreign origin could
	// use, so the origin is not checked.
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return // Accept answered the handshake's error
	}
	conn.SetReadLimit(p.inference.maxBody)
	s.mu.Lock()
	s.conn = conn
	s.turns, s.stopTurns = context.WithCancel(r.Context())
	draining := s.draining
	s.mu.Unlock()
	if draining {
		// The shutdown began during the handshake.
		s.stopTurns()
		_ = conn.Close(websocket.StatusGoingAway, "server shutting down")
		return
	}
	s.run(r.Context())
}

// responsesSocket is one upgraded connection.
type responsesSocket struct {
	p       *Plane
	conn    *websocket.Conn
	upgrade *http.Request
	// turns is the turns' context, cancelled when the connection ends or
	// reaches its limit: a turn cut short is metered for what it relayed,
	// as a caller that left.
	turns     context.Context
	stopTurns context.CancelFunc
	wg        sync.WaitGroup
	// busy counts the turns queued or running, which a shutdown waits for.
	busy sync.WaitGroup

	mu sync.Mutex
	// draining: the server is shutting down; no turn starts.
	draining bool
	// closing: the connection is ending; no lane opens any more.
	closing bool
	// lanes are the stream_id lanes' queues ("" is the lane of turns
	// without one).
	lanes map[string]chan []byte
	// chains are the responses a turn may continue: a response id's whole
	// history (input and output items), the last response of each lane
	// (laneLast).
	chains   map[string][]json.RawMessage
	laneLast map[string]string
	// kept is the bytes the chains hold, bounded by the body limit: a
	// longer history could not be sent on anyway.
	kept int64
}

// run reads client events until the connection ends or its time is up.
func (s *responsesSocket) run(ctx context.Context) {
	defer s.conn.CloseNow()
	// Releasing: stopped, the timer no longer reaches the socket and the
	// history it kept.
	limit := afterFuncReleasing(s.p.inference.maxSocket, s.limitReached)
	defer limit.Stop()
	for {
		typ, data, err := s.conn.Read(ctx)
		if err != nil {
			break
		}
		if typ != websocket.MessageText {
			s.sendError(s.turns, "", http.StatusBadRequest, apiError{Type: typeInvalidRequest, Message: "Client events are JSON text frames."}, "invalid_event")
			continue
		}
		s.dispatch(data)
	}
	s.stop()
}

// stop cancels the turns in flight and waits for their lanes to end.
func (s *responsesSocket) stop() {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.stopTurns()
	s.wg.Wait()
}

// drain ends the connection for a shutdown: no new turn, the turns
// queued or running waited for until ctx ends, then a going-away closure.
func (s *responsesSocket) drain(ctx context.Context) {
	s.mu.Lock()
	s.draining = true
	started := s.conn != nil
	s.mu.Unlock()
	if !started {
		return // the upgrade is not done; its socket closes when it is
	}
	idle := make(chan struct{})
	go func() {
		s.busy.Wait()
		close(idle)
	}()
	select {
	case <-idle:
	case <-ctx.Done():
	}
	s.stop()
	_ = s.conn.Close(websocket.StatusGoingAway, "server shutting down")
}

// limitReached ends the connection at its limit, as OpenAI does: an error
// event websocket_connection_limit_reached, then a normal closure; the
// client opens a new connection to go on.
func (s *responsesSocket) limitReached() {
	s.stop()
	ctx, cancel := context.WithTimeout(context.Background(), socketWriteTimeout)
	defer cancel()
	s.sendError(ctx, "", http.StatusBadRequest, apiError{Type: typeInvalidRequest,
		Message: "Responses websocket connection limit reached (" + s.p.inference.maxSocket.String() + "). Create a new websocket connection to continue."},
		"websocket_connection_limit_reached")
	_ = s.conn.Close(websocket.StatusNormalClosure, "connection limit reached")
}

// dispatch queues a response.create on its lane; anything else is
// answered with an error event and the connection goes on.
func (s *responsesSocket) dispatch(data []byte) {
	var head struct {
		Type     string  `json:"type"`
		StreamID *string `json:"stream_id"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		s.sendError(s.turns, "", http.StatusBadRequest, apiError{Type: typeInvalidRequest, Message: "The event is not a JSON object: " + err.Error()}, "invalid_json")
		return
	}
	lane := ""
	if head.StreamID != nil {
		lane = *head.StreamID
	}
	if head.Type != "response.create" {
		s.sendError(s.turns, lane, http.StatusBadRequest, apiError{Type: typeInvalidRequest,
			Message: "Unsupported client event type " + strconv.Quote(head.Type) + ": gw takes response.create."}, "unsupported_event_type")
		return
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return
	}
	if s.draining {
		s.mu.Unlock()
		s.sendError(s.turns, lane, http.StatusServiceUnavailable, apiError{Type: typeServer,
			Message: "The gateway is shutting down; open a new connection."}, "gateway_shutting_down")
		return
	}
	q, ok := s.lanes[lane]
	if !ok && len(s.lanes) >= maxSocketLanes {
		s.mu.Unlock()
		s.sendError(s.turns, lane, http.StatusBadRequest, apiError{Type: typeInvalidRequest,
			Message: "A connection opens at most " + strconv.Itoa(maxSocketLanes) + " stream_id lanes."}, "too_many_streams")
		return
	}
	if !ok {
		q = make(chan []byte, maxLaneQueue)
		s.lanes[lane] = q
		s.wg.Add(1)
		go s.serveLane(lane, q)
	}
	// Queued under the lock that stop takes first: once the connection is
	// closing nothing more is queued, and a lane that ends releases what
	// its queue held.
	queued := false
	select {
	case q <- data:
		queued = true
		s.busy.Add(1)
	default:
	}
	s.mu.Unlock()
	if !queued {
		s.sendError(s.turns, lane, http.StatusTooManyRequests, apiError{Type: typeInvalidRequest,
			Message: "Too many turns are waiting on this stream: wait for a response before sending more."}, "response_queue_full")
	}
}

// serveLane runs a lane's turns one after another.
func (s *responsesSocket) serveLane(lane string, q chan []byte) {
	defer s.wg.Done()
	for {
		select {
		case <-s.turns.Done():
			for {
				select {
				case <-q:
					s.busy.Done()
				default:
					return
				}
			}
		case data := <-q:
			s.turn(lane, data)
			s.busy.Done()
		}
	}
}

// turn runs one response.create as a POST /inf/v1/responses stream.
func (s *responsesSocket) turn(lane string, data []byte) {
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(data, &msg); err != nil {
		s.sendError(s.turns, lane, http.StatusBadRequest, apiError{Type: typeInvalidRequest, Message: "The event is not a JSON object: " + err.Error()}, "invalid_json")
		return
	}
	delete(msg, "type")
	delete(msg, "stream_id")
	if b, ok := msg["background"]; ok && string(b) == "true" {
		param := "background"
		s.sendError(s.turns, lane, http.StatusBadRequest, apiError{Type: typeInvalidRequest, Param: &param,
			Message: "background is not supported over WebSocket."}, "unsupported_parameter")
		return
	}
	msg["stream"] = json.RawMessage("true")
	input, err := inputItems(msg["input"])
	if err != nil {
		param := "input"
		s.sendError(s.turns, lane, http.StatusBadRequest, apiError{Type: typeInvalidRequest, Param: &param, Message: err.Error()}, "invalid_value")
		return
	}
	if prev, ok := msg["previous_response_id"]; ok && string(prev) != "null" {
		var id string
		_ = json.Unmarshal(prev, &id)
		s.mu.Lock()
		history, found := s.chains[id]
		s.mu.Unlock()
		if !found {
			param := "previous_response_id"
			s.sendError(s.turns, lane, http.StatusBadRequest, apiError{Type: typeInvalidRequest, Param: &param,
				Message: "Previous response with id " + strconv.Quote(id) + " not found on this connection: gw keeps each lane's last response " +
					"for the connection's life only. Send the whole conversation without previous_response_id."}, "previous_response_not_found")
			return
		}
		input = append(append(make([]json.RawMessage, 0, len(history)+len(input)), history...), input...)
	}
	// The upstream keeps nothing (store is off), so it is given the
	// history, not the id.
	delete(msg, "previous_response_id")
	if input != nil {
		msg["input"] = mustJSON(input)
	}
	body, err := json.Marshal(msg)
	if err != nil {
		s.sendError(s.turns, lane, http.StatusBadRequest, apiError{Type: typeInvalidRequest, Message: err.Error()}, "invalid_json")
		return
	}

	w := &socketWriter{s: s, lane: lane, header: http.Header{}, input: input}
	s.p.serveInference(w, s.request(body), responsesDialect{})
	w.end()
}

// request is a turn as the HTTP request serveInference reads: the
// upgrade's headers (the key, X-Gw-Tags, trace context) without the
// WebSocket's own, a POST of the turn's body.
func (s *responsesSocket) request(body []byte) *http.Request {
	r := s.upgrade.Clone(s.turns)
	r.Method = http.MethodPost
	r.Body = http.NoBody
	if len(body) > 0 {
		r.Body = readCloser{bytes.NewReader(body)}
	}
	r.ContentLength = int64(len(body))
	for _, h := range []string{"Upgrade", "Connection", "Sec-Websocket-Key", "Sec-Websocket-Version", "Sec-Websocket-Extensions",
		"Sec-Websocket-Protocol", "Content-Length", "Transfer-Encoding",
		// Each turn is its own request, with its own id.
		"X-Request-Id"} {
		r.Header.Del(h)
	}
	r.Header.Set("Content-Type", "application/json")
	return r
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

// inputItems reads a Responses input as a list of items: a string is one
// user message.
func inputItems(raw json.RawMessage) ([]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var text string
		if err := json.Unmarshal(raw, &text); err != nil {
			return nil, errors.New("input is not a string or a list of items")
		}
		return []json.RawMessage{mustJSON(map[string]string{"role": "user", "content": text})}, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, errors.New("input is not a string or a list of items")
	}
	return items, nil
}

// keep records a completed response as its lane's last, the history a
// later turn may continue: what it was sent and what it answered. The
// output items go back without their ids, which name items an upstream
// with store off never kept; reasoning items only with their encrypted
// content, the only form in which a stateless upstream takes them back.
func (s *responsesSocket) keep(lane string, input []json.RawMessage, completed []byte) {
	var ev struct {
		Response struct {
			ID     string                       `json:"id"`
			Output []map[string]json.RawMessage `json:"output"`
		} `json:"response"`
	}
	if json.Unmarshal(completed, &ev) != nil || ev.Response.ID == "" {
		return
	}
	history := append(make([]json.RawMessage, 0, len(input)+len(ev.Response.Output)), input...)
	for _, item := range ev.Response.Output {
		if string(item["type"]) == `"reasoning"` {
			if enc, ok := item["encrypted_content"]; !ok || string(enc) == "null" {
				continue
			}
		} else {
			delete(item, "id")
		}
		history = append(history, mustJSON(item))
	}
	size := historySize(history)
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.laneLast[lane]; ok && !s.lastOfAnotherLane(lane, old) {
		s.forget(old)
	}
	delete(s.laneLast, lane)
	limit := s.p.inference.maxBody
	if size > limit {
		return // a continuation of it would be refused as too large
	}
	// Other lanes' histories give way to the newest.
	for l, id := range s.laneLast {
		if s.kept+size <= limit {
			break
		}
		if !s.lastOfAnotherLane(l, id) {
			s.forget(id)
		}
		delete(s.laneLast, l)
	}
	s.laneLast[lane] = ev.Response.ID
	s.forget(ev.Response.ID)
	s.chains[ev.Response.ID] = history
	s.kept += size
}

// forget drops a kept history.
func (s *responsesSocket) forget(id string) {
	if h, ok := s.chains[id]; ok {
		s.kept -= historySize(h)
		delete(s.chains, id)
	}
}

func historySize(h []json.RawMessage) int64 {
	var n int64
	for _, item := range h {
		n += int64(len(item)) + 1
	}
	return n
}

// lastOfAnotherLane: id is also another lane's last response (an upstream
// that does not make its ids unique).
func (s *responsesSocket) lastOfAnotherLane(lane, id string) bool {
	for l, last := range s.laneLast {
		if l != lane && last == id {
			return true
		}
	}
	return false
}

// sendError writes an error event: OpenAI's WebSocket shape (status and
// error) with the stream error event's members (code, message, param)
// beside it, which the SDKs' stream readers take.
func (s *responsesSocket) sendError(ctx context.Context, lane string, status int, e apiError, code string) {
	if e.Code == nil && code != "" {
		e.Code = &code
	}
	ev := map[string]any{"type": "error", "status": status, "error": e, "message": e.Message, "param": e.Param, "code": e.Code}
	if lane != "" {
		ev["stream_id"] = lane
	}
	_ = s.write(ctx, mustJSON(ev))
}

func (s *responsesSocket) write(ctx context.Context, frame []byte) error {
	ctx, cancel := context.WithTimeout(ctx, socketWriteTimeout)
	defer cancel()
	return s.conn.Write(ctx, websocket.MessageText, frame)
}

// socketWriter is the http.ResponseWriter a turn's request is served
// with: the event stream's events become frames (with the lane's
// stream_id), its comments (gw's cost) are dropped; a refusal's JSON body
// becomes an error event.
type socketWriter struct {
	s      *responsesSocket
	lane   string
	header http.Header
	status int
	sse    bool
	buf    []byte
	data   []byte
	err    error
	// input is the turn's whole input, which its response continues.
	input []json.RawMessage
}

func (w *socketWriter) Header() http.Header { return w.header }

func (w *socketWriter) WriteHeader(code int) {
	if w.status != 0 {
		return
	}
	w.status = code
	w.sse = code == http.StatusOK && strings.HasPrefix(w.header.Get("Content-Type"), "text/event-stream")
}

func (w *socketWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return 0, w.err
	}
	if !w.sse {
		if room := maxSocketErrorBody - len(w.buf); room > 0 {
			w.buf = append(w.buf, b[:min(len(b), room)]...)
		}
		return len(b), nil
	}
	w.buf = append(w.buf, b...)
	// Whole lines only; an event ends at a blank line (the SSE format).
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		line := bytes.TrimSuffix(w.buf[:i], []byte("\r"))
		switch {
		case len(line) == 0:
			if len(w.data) > 0 {
				w.err = w.frame(w.data)
				w.data = w.data[:0]
			}
		case bytes.HasPrefix(line, []byte("data:")):
			d := bytes.TrimPrefix(line[5:], []byte(" "))
			if len(w.data) > 0 {
				w.data = append(w.data, '\n')
			}
			w.data = append(w.data, d...)
		}
		w.buf = w.buf[i+1:]
		if w.err != nil {
			return 0, w.err
		}
	}
	// What is left is a line begun; keep it at the buffer's start.
	w.buf = append(w.buf[:0:0], w.buf...)
	return len(b), nil
}

// Flush: every event is sent as it is complete.
func (w *socketWriter) Flush() {}

// FlushError lets http.ResponseController report a socket gone.
func (w *socketWriter) FlushError() error { return w.err }

// frame sends one event's payload.
func (w *socketWriter) frame(payload []byte) error {
	if string(payload) == "[DONE]" || len(payload) < 2 || payload[0] != '{' {
		return nil
	}
	if bytes.Contains(payload, []byte(`"response.completed"`)) {
		var head struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(payload, &head) == nil && head.Type == "response.completed" {
			// Kept before the client reads the event: its next turn, on
			// any lane, may name the response at once.
			w.s.keep(w.lane, w.input, payload)
		}
	}
	if w.lane != "" {
		out := make([]byte, 0, len(payload)+len(w.lane)+16)
		out = append(append(append(out, `{"stream_id":`...), mustJSON(w.lane)...), ',')
		if rest := bytes.TrimSpace(payload[1:]); len(rest) > 0 && rest[0] == '}' {
			out = out[:len(out)-1]
		}
		payload = append(out, payload[1:]...)
	}
	return w.s.write(w.s.turns, payload)
}

// end sends what a turn that answered no stream said: a refusal as an
// error event, its status kept.
func (w *socketWriter) end() {
	if w.sse || w.err != nil {
		return
	}
	var body struct {
		Error apiError `json:"error"`
	}
	status := w.status
	if status == 0 {
		status = http.StatusInternalServerError
	}
	if json.Unmarshal(w.buf, &body) != nil || body.Error.Message == "" {
		body.Error = apiError{Type: "server_error", Message: "The request ended without an answer (status " + strconv.Itoa(status) + ")."}
	}
	// A turn refused after the socket's limit cancelled it has no one to
	// tell; the connection closes with its own event.
	ctx := w.s.turns
	if ctx.Err() != nil {
		return
	}
	w.s.sendError(ctx, w.lane, status, body.Error, "")
}
