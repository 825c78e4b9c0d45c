package mcpgw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"
)

// relayedNotifications are the upstream notifications gw passes on to
// the caller when they come in a request's own stream: progress (its
// token is the caller's, passed upstream as sent) and log messages.
// Others (cancellations naming gw's own upstream request ids, list
// changes) are dropped.
var relayedNotifications = map[string]bool{"notifications/progress": true, "notifications/message": true}

// relayedRequests are the upstream requests gw relays to a caller that
// declared the capability each needs at initialize.
var relayedRequests = map[string]string{"sampling/createMessage": "sampling", "elicitation/create": "elicitation", "roots/list": "roots"}

// acceptsStream says whether the caller takes an event stream in answer
// to its POST.
func acceptsStream(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && (mt == "text/event-stream" || mt == "*/*") {
			return true
		}
	}
	return false
}

// event writes m to the caller as an event of the request's stream,
// answering the request with an event stream from the first one; false
// when the caller takes no stream (then nothing is written).
func (rq *request) event(m message) bool {
	rq.mu.Lock()
	defer rq.mu.Unlock()
	if !rq.stream {
		if !acceptsStream(rq.r) {
			return false
		}
		h := rq.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Del("Content-Length")
		rq.w.WriteHeader(http.StatusOK)
		rq.stream = true
	}
	b, err := json.Marshal(m)
	if err != nil {
		return false
	}
	_, _ = fmt.Fprintf(rq.w, "event: message\ndata: %s\n\n", b)
	_ = http.NewResponseController(rq.w).Flush()
	return true
}

// relayFor is what gw does with the messages up sends in the stream of a
// request it forwards: progress and log notifications go to the caller's
// stream; sampling, elicitation and roots requests too, for a caller
// whose session declared the capability, under an id that seals where
// the answer goes (answerUpstream). Anything else is not taken (a
// request is refused at once).
func (rq *request) relayFor(up *Upstream) relay {
	return func(m *message, s session) bool {
		if len(m.ID) == 0 || string(m.ID) == "null" {
			// The caller's own stream passes on more (listen filters).
			return (relayedNotifications[m.Method] || rq.r.Method == http.MethodGet) &&
				rq.event(message{JSONRPC: "2.0", Method: m.Method, Params: m.Params})
		}
		capability := relayedRequests[m.Method]
		if capability == "" || rq.sess == nil || rq.sess.Caps[capability] == nil {
			return false
		}
		id, err := sealRelay(rq.secret, &relayID{Server: up.ID, Session: s, ID: m.ID, Issued: time.Now().Unix()})
		if err != nil {
			return false
		}
		raw, _ := json.Marshal(id)
		return rq.event(message{JSONRPC: "2.0", ID: raw, Method: m.Method, Params: m.Params})
	}
}

// relayMaxAge bounds how long after gw relayed an upstream's request the
// caller's answer is taken: the call that waits for it is cut at the
// timeout anyway.
func (rq *request) relayMaxAge() time.Duration { return rq.g.opts.Timeout + time.Minute }

// answerUpstream passes the caller's answer to a relayed request (its id
// one gw sealed) to the upstream session the request came on, with the
// upstream's own id and auth. It needs no state of the replica that
// relayed the request: the id says it all, sealed under the caller's key.
func (rq *request) answerUpstream(sealed string) {
	rid, err := openRelay(rq.secret, sealed, time.Now(), rq.relayMaxAge())
	if err != nil {
		writeRPCError(rq.w, http.StatusBadRequest, nil, jsonrpcInvalidRequest,
			"the response's id is not one gw gave this key, or it expired")
		return
	}
	var up *Upstream
	for _, u := range rq.servers() {
		if u.ID == rid.Server {
			up = u
		}
	}
	if up == nil {
		writeRPCError(rq.w, http.StatusNotFound, nil, jsonrpcInvalidRequest, "the MCP server that asked is not reachable with this key")
		return
	}
	ctx, cancel := context.WithTimeout(rq.r.Context(), rq.g.opts.Timeout)
	defer cancel()
	err = rq.g.client.respond(ctx, up, rid.Session, message{JSONRPC: "2.0", ID: rid.ID, Result: rq.msg.Result, Error: rq.msg.Error})
	if err != nil {
		msg := err.Error()
		if errors.Is(err, errSessionGone) {
			msg = fmt.Sprintf("MCP server %q: the session that asked is gone", up.Name)
		}
		writeRPCError(rq.w, http.StatusBadGateway, nil, CodeUpstream, msg)
		return
	}
	rq.w.WriteHeader(http.StatusAccepted)
}

// forwardParams are the caller's params as sent upstream: every member
// but _meta, of which only the progress token goes (the caller's protocol
// fields are its own with gw).
func (rq *request) forwardParams() (map[string]any, error) {
	params := map[string]any{}
	if len(rq.msg.Params) == 0 || string(rq.msg.Params) == "null" {
		return params, nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(rq.msg.Params, &raw); err != nil {
		return nil, err
	}
	for k, v := range raw {
		if k != "_meta" {
			params[k] = v
		}
	}
	if meta := progressMeta(raw["_meta"]); meta != nil {
		params["_meta"] = meta
	}
	return params, nil
}

// progressMeta is the _meta sent upstream for a caller's _meta: its
// progress token alone, nil when it has none.
func progressMeta(raw json.RawMessage) map[string]any {
	var meta map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &meta) != nil {
		return nil
	}
	if tok, ok := meta["progressToken"]; ok && string(tok) != "null" {
		return map[string]any{"progressToken": tok}
	}
	return nil
}

// MaxListen bounds the caller's own event stream (its GET): gw closes it
// then, and the caller opens another (the transport's reconnection).
const MaxListen = 5 * time.Minute

// listenedNotifications are the upstream notifications gw passes on in
// the caller's own stream: those of a request's stream, list changes and,
// per server, resource updates (a resource's URI names no server on the
// aggregated endpoint, which serves no resources).
func (rq *request) listenedNotifications() map[string]bool {
	n := map[string]bool{"notifications/progress": true, "notifications/message": true, "notifications/tools/list_changed": true,
		"notifications/prompts/list_changed": true}
	if rq.single != "" {
		n["notifications/resources/updated"], n["notifications/resources/list_changed"] = true, true
	}
	return n
}

// listen answers a session-ful caller's GET: its own event stream,
// carrying what each upstream session its session holds sends on the
// upstream's own stream (the upstream's requests outside a call —
// elicitation, sampling, roots — relayed as in a call's stream, resource
// updates, log messages). Any replica serves it: the session says which
// upstream sessions to listen to. A caller whose upstreams offer no
// stream is answered 405, as gw offered none before.
func (rq *request) listen() {
	if !acceptsStream(rq.r) {
		writeRPCError(rq.w, http.StatusNotAcceptable, nil, jsonrpcInvalidRequest, "a GET must accept text/event-stream")
		return
	}
	header := rq.r.Header.Get("MCP-Protocol-Version")
	if header == V20260728 {
		rq.noStream("a " + V20260728 + " caller is stateless: gw offers it no stream of its own")
		return
	}
	if problem, status := rq.session(header); problem != "" {
		writeRPCError(rq.w, status, nil, codeSessionMissing, problem)
		return
	}
	ctx, cancel := context.WithTimeout(rq.r.Context(), MaxListen)
	defer cancel()
	type stream struct {
		up     *Upstream
		s      session
		resp   *http.Response
		cancel context.CancelFunc
		// reached says, once known, whether the key reaches the server:
		// the stream opens at once (an upstream drops what it sends
		// before), its messages wait for the answer.
		reached chan bool
	}
	var mu sync.Mutex
	var streams []stream
	var wg sync.WaitGroup
	for _, up := range rq.servers() {
		s, ok := rq.sess.Upstreams[up.ID]
		if !ok || s.ID == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Only a server the key reaches speaks to it (found out while
			// the stream opens); an upstream that does not answer in time
			// offers nothing.
			reached := make(chan bool, 1)
			go func() {
				checking, stop := context.WithTimeout(ctx, rq.g.opts.Timeout)
				defer stop()
				reached <- rq.reaches(checking, up) == nil
			}()
			sctx, scancel := context.WithCancel(ctx)
			timer := time.AfterFunc(rq.g.opts.Timeout, scancel)
			resp, err := rq.g.client.listen(sctx, up, s)
			if !timer.Stop() || err != nil || resp == nil {
				if resp != nil {
					resp.Body.Close()
				}
				scancel()
				return
			}
			mu.Lock()
			streams = append(streams, stream{up, s, resp, scancel, reached})
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(streams) == 0 || ctx.Err() != nil {
		for _, st := range streams {
			st.resp.Body.Close()
			st.cancel()
		}
		rq.noStream("none of the MCP servers offers a stream of its own")
		return
	}
	h := rq.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	rq.w.WriteHeader(http.StatusOK)
	_ = http.NewResponseController(rq.w).Flush()
	rq.mu.Lock()
	rq.stream = true
	rq.mu.Unlock()
	notes := rq.listenedNotifications()
	for _, st := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer st.cancel()
			defer st.resp.Body.Close()
			relayed := rq.relayFor(st.up)
			if !<-st.reached {
				return
			}
			_ = rq.g.client.scanEvents(st.resp.Body, st.up, func(m *message) bool {
				if m.Method == "" {
					return false
				}
				isRequest := len(m.ID) > 0 && string(m.ID) != "null"
				if !isRequest && !notes[m.Method] {
					return false
				}
				if !relayed(m, st.s) && isRequest {
					rq.g.client.refuse(ctx, st.up, st.s, m.ID, m.Method)
				}
				return false
			})
		}()
	}
	wg.Wait()
}

// noStream answers a GET for which gw has no stream: 405, as the
// transport says.
func (rq *request) noStream(why string) {
	rq.w.Header().Set("Allow", "GET, POST, DELETE")
	writeRPCError(rq.w, http.StatusMethodNotAllowed, nil, jsonrpcInvalidRequest, why)
}
