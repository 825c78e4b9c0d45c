package dataplane_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/guardrails"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// The openai npm SDK (6.x) has a Responses WebSocket client
// (openai/resources/responses/ws), which needs the ws package the e2e
// clients do not install; these tests speak the published protocol
// (developers.openai.com, WebSocket mode) with coder/websocket instead:
// {"type":"response.create", …POST /v1/responses body…} in, the stream's
// events out as JSON text frames, stream_id echoed on a lane's events.

// wsConn is one client connection to /inf/v1/responses.
type wsConn struct {
	t *testing.T
	c *websocket.Conn
}

func (e *infEnv) dialResponses(t *testing.T, token string) *wsConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.srv.URL, "http")+"/inf/v1/responses",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	c.SetReadLimit(16 << 20)
	t.Cleanup(func() { c.CloseNow() })
	return &wsConn{t: t, c: c}
}

func (w *wsConn) send(event map[string]any) {
	w.t.Helper()
	event["type"] = "response.create"
	b, _ := json.Marshal(event)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.c.Write(ctx, websocket.MessageText, b); err != nil {
		w.t.Fatal(err)
	}
}

// wsEvent is a server event as the tests read it.
type wsEvent struct {
	Type     string `json:"type"`
	StreamID string `json:"stream_id"`
	Delta    string `json:"delta"`
	Status   int    `json:"status"`
	Code     string `json:"code"`
	Error    struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Response struct {
		ID     string          `json:"id"`
		Output json.RawMessage `json:"output"`
	} `json:"response"`
}

// next reads one event.
func (w *wsConn) next() (wsEvent, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	typ, b, err := w.c.Read(ctx)
	if err != nil {
		return wsEvent{}, err
	}
	if typ != websocket.MessageText {
		w.t.Fatalf("a %v frame", typ)
	}
	var ev wsEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		w.t.Fatalf("a frame that is no JSON object: %s", b)
	}
	return ev, nil
}

// turn reads one turn's events up to its response.completed (or error),
// returning the text its deltas carried and the last event.
func (w *wsConn) turn() (string, wsEvent) {
	w.t.Helper()
	var text strings.Builder
	for {
		ev, err := w.next()
		if err != nil {
			w.t.Fatalf("read: %v", err)
		}
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.completed", "error", "response.failed":
			return text.String(), ev
		}
	}
}

func (w *wsConn) completed() (string, wsEvent) {
	w.t.Helper()
	text, ev := w.turn()
	if ev.Type != "response.completed" || ev.Response.ID == "" {
		w.t.Fatalf("turn ended with %+v, want response.completed", ev)
	}
	return text, ev
}

func (w *wsConn) refused(code string) wsEvent {
	w.t.Helper()
	_, ev := w.turn()
	if ev.Type != "error" || ev.Error.Code != code || ev.Code != code || ev.Status == 0 {
		w.t.Fatalf("turn ended with %+v, want an error event %s", ev, code)
	}
	return ev
}

const wsAnswer = "Sockets carry the same words as streams."

var wsReply = providerstest.Reply{Text: wsAnswer, ChunkSize: 7, Usage: providerstest.Usage{Input: 41, Output: 9}}

// A turn over the socket is metered exactly as the HTTP stream of the same
// answer: one event, the same tokens and cost, never 0 tokens (LiteLLM
// #38674); previous_response_id sends the history to the upstream, which
// keeps nothing.
func TestResponsesWebSocketTurnsAreMeteredAsStreams(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.openai.SetDefault(wsReply)
		e.sync(t)

		resp := e.postTo(t, "/inf/v1/responses", `{"model":"`+gptMini+`","stream":true,"input":"hello"}`)
		if _, err := io.ReadAll(resp.Body); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("HTTP stream: %d %v", resp.StatusCode, err)
		}
		overHTTP := e.usage.wait(t, 1)[0]
		e.usage.reset()

		ws := e.dialResponses(t, e.token)
		ws.send(map[string]any{"model": gptMini, "input": "hello"})
		text, first := ws.completed()
		if text != wsAnswer {
			t.Fatalf("deltas %q, want %q", text, wsAnswer)
		}
		overSocket := e.usage.wait(t, 1)[0]
		same := func(a, b wire.UsageEventIn) bool {
			return a.InputTokens == b.InputTokens && a.OutputTokens == b.OutputTokens && a.CostUSD == b.CostUSD &&
				a.Status == b.Status && a.Model == b.Model && a.WorkspaceID == b.WorkspaceID && *a.InferenceKeyID == *b.InferenceKeyID &&
				*a.Endpoint == *b.Endpoint && a.UsageSource == b.UsageSource
		}
		if !same(overHTTP, overSocket) || overSocket.InputTokens != 41 || overSocket.OutputTokens != 9 || overSocket.Status != "ok" {
			t.Fatalf("socket turn metered as %+v, the HTTP stream as %+v", overSocket, overHTTP)
		}

		// The next turn names the first: the upstream is sent the whole
		// conversation, without the id it never kept.
		ws.send(map[string]any{"model": gptMini, "input": "and again", "previous_response_id": first.Response.ID})
		ws.completed()
		events := e.usage.wait(t, 2)
		if events[1].InputTokens != 41 || events[1].OutputTokens != 9 || *events[1].RequestID == *events[0].RequestID {
			t.Fatalf("second turn metered as %+v (first %+v)", events[1], events[0])
		}
		sent := e.openai.Last(t).Body
		if _, ok := sent["previous_response_id"]; ok {
			t.Fatalf("the upstream was sent previous_response_id: %v", sent)
		}
		input, _ := sent["input"].([]any)
		if len(input) != 3 || !strings.Contains(mustMarshal(t, input[1]), wsAnswer) || !strings.Contains(mustMarshal(t, input[2]), "and again") {
			t.Fatalf("the upstream was sent input %s, want the user's, the answer, the new one", mustMarshal(t, input))
		}
		if strings.Contains(mustMarshal(t, input), `"id"`) {
			t.Fatalf("the history carries item ids an upstream with store off never kept: %s", mustMarshal(t, input))
		}
	})
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// stream_id lanes run side by side, each turn's events echo their lane,
// and a lane may fork from another lane's response.
func TestResponsesWebSocketLanes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		hold := make(chan struct{})
		held := wsReply
		held.Hold, held.ResponseID = hold, "resp_a"
		e.openai.Enqueue(held)
		e.openai.SetDefault(wsReply)
		e.sync(t)

		ws := e.dialResponses(t, e.token)
		ws.send(map[string]any{"model": gptMini, "input": "slow", "stream_id": "a"})
		// Lane a's first delta is out and its upstream holds: lane b's
		// turn must complete meanwhile.
		first, err := ws.next()
		for err == nil && first.Type != "response.output_text.delta" {
			first, err = ws.next()
		}
		if err != nil || first.StreamID != "a" {
			t.Fatalf("lane a: %+v %v", first, err)
		}
		ws.send(map[string]any{"model": gptMini, "input": "fast", "stream_id": "b"})
		var bDone, aDone wsEvent
		for bDone.Type == "" || aDone.Type == "" {
			ev, err := ws.next()
			if err != nil {
				t.Fatal(err)
			}
			if ev.StreamID != "a" && ev.StreamID != "b" {
				t.Fatalf("an event without its lane: %+v", ev)
			}
			if ev.Type == "response.completed" {
				if ev.StreamID == "b" {
					bDone = ev
					close(hold) // a goes on only once b is done
				} else {
					if bDone.Type == "" {
						t.Fatal("lane a completed before lane b: the lanes ran in turn")
					}
					aDone = ev
				}
			}
		}
		// Lane c forks from lane a's response.
		ws.send(map[string]any{"model": gptMini, "input": "fork", "stream_id": "c", "previous_response_id": aDone.Response.ID})
		if _, ev := ws.completed(); ev.StreamID != "c" {
			t.Fatalf("fork answered on lane %q", ev.StreamID)
		}
		input, _ := e.openai.Last(t).Body["input"].([]any)
		if s := mustMarshal(t, input); len(input) != 3 || !strings.Contains(s, "slow") || strings.Contains(s, "fast") {
			t.Fatalf("the fork sent %s, want lane a's conversation", s)
		}
		if n := len(e.usage.wait(t, 3)); n != 3 {
			t.Fatalf("%d events", n)
		}
	})
}

// A budget refusal is answered on the socket as an error event and metered
// as a refused request; the connection stays usable for the next turn.
func TestResponsesWebSocketBudgetRefusalMidConnection(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.openai.SetDefault(wsReply)
		e.sync(t)
		ws := e.dialResponses(t, e.token)
		ws.send(map[string]any{"model": gptMini, "input": "one"})
		ws.completed()
		e.usage.wait(t, 1)

		budget := e.org.Policy(e.ws, "no-money", true, `{"target":{"kind":"workspace"},"rules":[`+budgetRule("0", "day", "shared")+`]}`)
		e.sync(t)
		ws.send(map[string]any{"model": gptMini, "input": "two"})
		refusal := ws.refused("budget_exceeded")
		e.usage.wait(t, 2)
		if refusal.Status != http.StatusTooManyRequests && refusal.Status != http.StatusPaymentRequired {
			t.Fatalf("budget refusal with status %d", refusal.Status)
		}

		e.org.SetPolicyEnabled(e.ws, budget, false)
		e.sync(t)
		ws.send(map[string]any{"model": gptMini, "input": "three"})
		ws.completed()
		events := e.usage.wait(t, 3)
		if events[0].Status != "ok" || events[1].Status == "ok" || events[1].OutputTokens != 0 || events[2].Status != "ok" {
			t.Fatalf("events %+v", events)
		}
	})
}

// A response id is resolvable only on the connection that made it: not on
// another key's connection in another workspace, nor on a new connection
// of the same key; each connection's turns are attributed to its own key.
func TestResponsesWebSocketConfinesResponseIDs(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.openai.SetDefault(wsReply)
		e.sync(t)
		other := e.org.Workspace("other")
		otherToken, otherKey := e.org.Key(other, e.org.Member(auth.MembershipActive), nil)
		e.sync(t)

		mine := e.dialResponses(t, e.token)
		mine.send(map[string]any{"model": gptMini, "input": "secret plans"})
		_, done := mine.completed()
		e.usage.wait(t, 1) // recorded once the answer is out: in order

		theirs := e.dialResponses(t, otherToken)
		theirs.send(map[string]any{"model": gptMini, "input": "tell me", "previous_response_id": done.Response.ID})
		theirs.refused("previous_response_not_found")
		theirs.send(map[string]any{"model": gptMini, "input": "my own"})
		theirs.completed()

		again := e.dialResponses(t, e.token)
		again.send(map[string]any{"model": gptMini, "input": "more", "previous_response_id": done.Response.ID})
		again.refused("previous_response_not_found")

		reqs := e.openai.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d upstream calls, want 2: a refused continuation reaches no upstream", len(reqs))
		}
		if strings.Contains(mustMarshal(t, reqs[1].Body), "secret plans") {
			t.Fatalf("another workspace's turn carried this one's conversation: %v", reqs[1].Body)
		}
		events := e.usage.wait(t, 2)
		if events[0].WorkspaceID != e.ws || *events[0].InferenceKeyID != e.keyID ||
			events[1].WorkspaceID != other || *events[1].InferenceKeyID != otherKey {
			t.Fatalf("attribution: %+v", events)
		}

		// Over HTTP gw keeps no responses at all.
		resp := e.postTo(t, "/inf/v1/responses", `{"model":"`+gptMini+`","input":"x","previous_response_id":"`+done.Response.ID+`"}`)
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("HTTP previous_response_id: %d", resp.StatusCode)
		}
	})
}

// The upgrade authenticates: no key, no socket.
func TestResponsesWebSocketNeedsAKey(t *testing.T) {
	e := newInfEnv(t, storetest.Open(t, storetest.SQLite))
	e.sync(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.srv.URL, "http")+"/inf/v1/responses",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer sk-gw-" + uuid.NewString()}}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("dial with a bad key: %v %v", err, resp)
	}
}

// At the connection limit the server says websocket_connection_limit_reached
// and closes normally (OpenAI's 60 minutes; short here).
func TestResponsesWebSocketConnectionLimit(t *testing.T) {
	e := newInfEnv(t, storetest.Open(t, storetest.SQLite), func(o *dataplane.Options) { o.MaxSocketDuration = time.Second })
	e.openai.SetDefault(wsReply)
	e.sync(t)
	ws := e.dialResponses(t, e.token)
	ws.send(map[string]any{"model": gptMini, "input": "quick"})
	ws.completed()
	ev, err := ws.next()
	if err != nil || ev.Type != "error" || ev.Error.Code != "websocket_connection_limit_reached" {
		t.Fatalf("at the limit: %+v %v", ev, err)
	}
	_, err = ws.next()
	if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("closed with %v, want a normal closure", err)
	}
	e.usage.wait(t, 1)
}

// Guardrails apply to a turn as to an HTTP stream: an input block is an
// error event before any upstream call, an output block ends the turn's
// events with guardrail_blocked and none of the text; the socket goes on.
func TestResponsesWebSocketGuardrails(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.openai.SetDefault(wsReply)
		e.sync(t)
		e.guardrail(t, true, guardrails.ActionBlock, guardrails.FailClosed, "", guardrails.DetectorSpec{Kind: guardrails.KindKeywords, Words: []string{guardWord}})
		ws := e.dialResponses(t, e.token)

		ws.send(map[string]any{"model": gptMini, "input": "tell me about " + guardWord})
		ws.refused("guardrail_blocked")
		if n := len(e.openai.Requests()); n != 0 {
			t.Fatalf("a blocked input reached the upstream (%d calls)", n)
		}
		e.usage.wait(t, 1)

		leaky := wsReply
		leaky.Text = "the secret is " + guardWord + ", do not tell"
		e.openai.Enqueue(leaky)
		ws.send(map[string]any{"model": gptMini, "input": "what is the secret?"})
		text, ev := ws.turn()
		if ev.Type != "error" || ev.Code != "guardrail_blocked" || strings.Contains(text, guardWord) {
			t.Fatalf("output block: %+v after %q", ev, text)
		}
		e.usage.wait(t, 2)

		ws.send(map[string]any{"model": gptMini, "input": "hello"})
		if text, _ := ws.completed(); text != wsAnswer {
			t.Fatalf("after the blocks: %q", text)
		}
		e.usage.wait(t, 3)
	})
}

// What a connection keeps for previous_response_id is bounded by the body
// limit: a history that could not be sent on is not kept.
func TestResponsesWebSocketKeepsHistoryWithinTheBodyLimit(t *testing.T) {
	e := newInfEnv(t, storetest.Open(t, storetest.SQLite), func(o *dataplane.Options) { o.MaxRequestBytes = 2048 })
	e.openai.SetDefault(wsReply)
	for _, id := range []string{"resp_1", "resp_2", "resp_big"} {
		r := wsReply
		r.ResponseID = id
		e.openai.Enqueue(r)
	}
	e.sync(t)
	ws := e.dialResponses(t, e.token)
	ws.send(map[string]any{"model": gptMini, "input": "short"})
	_, small := ws.completed()
	ws.send(map[string]any{"model": gptMini, "input": "more", "previous_response_id": small.Response.ID})
	_, next := ws.completed()

	ws.send(map[string]any{"model": gptMini, "input": strings.Repeat("long ", 380), "stream_id": "big"})
	_, big := ws.completed()
	ws.send(map[string]any{"model": gptMini, "input": "go on", "previous_response_id": big.Response.ID, "stream_id": "big"})
	ws.refused("previous_response_not_found")
	// The small lane's history still fits beside nothing bigger.
	ws.send(map[string]any{"model": gptMini, "input": "again", "previous_response_id": next.Response.ID})
	ws.completed()
}

// At shutdown no turn starts, the turn in flight finishes and is metered,
// and the socket closes going away (1001), which the SDKs reconnect after.
func TestResponsesWebSocketShutdown(t *testing.T) {
	e := newInfEnv(t, storetest.Open(t, storetest.SQLite))
	hold := make(chan struct{})
	held := wsReply
	held.Hold = hold
	e.openai.Enqueue(held)
	e.openai.SetDefault(wsReply)
	e.sync(t)
	ws := e.dialResponses(t, e.token)
	ws.send(map[string]any{"model": gptMini, "input": "long answer"})
	if ev, err := ws.next(); err != nil || ev.Type != "response.created" {
		t.Fatalf("first event %+v %v", ev, err)
	}

	ended := make(chan error, 1)
	go func() { ended <- e.plane.EndSockets(context.Background()) }()
	// A new turn is refused while the one in flight goes on; the refusal
	// arrives among its events.
	// (A turn sent before the shutdown began runs, and is metered.)
	refused, ran := false, 0
	for !refused {
		ws.send(map[string]any{"model": gptMini, "input": "one more", "stream_id": "late"})
		for {
			ev, err := ws.next()
			if err != nil {
				t.Fatal(err)
			}
			if ev.StreamID == "late" && (ev.Type == "error" || ev.Type == "response.completed") {
				refused = ev.Type == "error" && ev.Code == "gateway_shutting_down"
				if ev.Type == "response.completed" {
					ran++
				}
				break
			}
		}
	}
	close(hold)
	text, done := ws.turn()
	if done.Type != "response.completed" || !strings.HasSuffix(wsAnswer, text) {
		t.Fatalf("the turn in flight ended %+v after %q", done, text)
	}
	if _, err := ws.next(); websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("closed with %v, want going away", err)
	}
	if err := <-ended; err != nil {
		t.Fatal(err)
	}
	for _, ev := range e.usage.wait(t, 1+ran) {
		if ev.Status != "ok" || ev.OutputTokens != 9 {
			t.Fatalf("a drained turn metered as %+v", ev)
		}
	}
	if _, resp, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(e.srv.URL, "http")+"/inf/v1/responses",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + e.token}}}); err == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a socket after shutdown: %v %v", err, resp)
	}
}
