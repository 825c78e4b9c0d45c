package dataplane

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/google/uuid"
	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/guardrails"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/wire"
)

// The guard stage (issue 32): the guardrails of a request's key check
// every text the caller sends before any upstream sees it (a redaction is
// what is sent; a block answers 400 guardrail_blocked in the dialect's
// error shape, naming the guardrail and detector, never the matched
// text), and what each did is recorded on the request's usage event.

// reasonGuardrailBlocked is the usage event's reason for a block.
const reasonGuardrailBlocked = "guardrail_blocked"

// guardEntry is one compiled guardrail of a bundle, with what selects the
// keys it applies to and its webhooks' sealed secrets.
type guardEntry struct {
	g         *guardrails.Guardrail
	id        uuid.UUID
	workspace *uuid.UUID
	target    policy.Target
	sealed    map[int]string
	urls      map[int]string
}

// guardIndex is a bundle's guardrails, in the bundle's order (by id).
type guardIndex []guardEntry

func newGuardIndex(gs []bundle.Guardrail) guardIndex {
	var out guardIndex
	for _, bg := range gs {
		g, err := guardrails.Compile(bg.Spec())
		if err != nil {
			// The bundle was validated with the same compiler.
			continue
		}
		e := guardEntry{g: g, id: bg.ID, workspace: bg.WorkspaceID, target: bg.Target, sealed: map[int]string{}, urls: map[int]string{}}
		for i, d := range bg.Detectors {
			if d.SecretSealed != "" {
				e.sealed[i], e.urls[i] = d.SecretSealed, d.URL
			}
		}
		out = append(out, e)
	}
	return out
}

// guardsFor is the set that applies to a key: the organization's (applying
// to every workspace) first, then its workspace's, each whose target
// covers the key.
func (o *inferenceOrg) guardsFor(k bundle.Key) guardrails.Set {
	req := policy.Request{KeyID: k.ID.String(), OwnerUserID: k.OwnerID}
	var set guardrails.Set
	for _, level := range []bool{false, true} {
		for _, e := range o.guards {
			if (e.workspace != nil) != level || (e.workspace != nil && *e.workspace != k.WorkspaceID) {
				continue
			}
			if e.target.Covers(req) {
				set = append(set, e.g)
			}
		}
	}
	return set
}

// guardHook is the webhook caller with the secrets of the key's
// organization's bundle, opened when a call needs them.
type guardHook struct {
	x *admission
}

func (h guardHook) Call(ctx context.Context, req guardrails.HookRequest) ([]byte, error) {
	secret := ""
	for _, e := range h.x.key.org.guards {
		if e.g.Spec.ID != req.GuardrailID {
			continue
		}
		if sealed, ok := e.sealed[req.Detector]; ok && h.x.p.inference.keyring != nil {
			pt, err := h.x.p.inference.keyring.Open(sealed, secrets.GuardrailWebhookAAD(e.id, e.urls[req.Detector]))
			if err != nil {
				// A secret that does not open: the webhook is not called
				// unsigned; on_error decides.
				return nil, &guardrails.HookError{Reason: "secret unavailable"}
			}
			secret = string(pt)
		}
	}
	return h.x.p.inference.hooks.CallSigned(ctx, req, secret)
}

// guardInput runs the input stage over a request body: the body as it may
// go on, and the refusal when a guardrail blocks.
func (x *exchange) guardInput(body []byte) ([]byte, *response) {
	set := x.key.guards
	if len(set) == 0 {
		x.archiveRequest(body)
		return body, nil
	}
	run := guardrails.NewRun(set, guardrails.StageInput, guardHook{&x.admission})
	out, _ := guardrails.GuardBody(x.r.Context(), run, body)
	x.noteGuards(run)
	if b := run.Blocked(); b != nil {
		// A blocked body is not archived: it holds what was blocked.
		return body, guardrailBlocked(b)
	}
	x.archiveRequest(out)
	return out, nil
}

// noteGuards adds a run's records to the request's.
func (x *admission) noteGuards(run *guardrails.Run) {
	for _, r := range run.Records() {
		x.guardRecords = append(x.guardRecords, wire.GuardrailRecord{ID: r.ID, Name: r.Name, Stage: string(r.Stage),
			Outcome: string(r.Outcome), Detectors: append([]string{}, r.Detectors...)})
	}
}

// guardrailBlocked is a block's 400, OpenAI's shape (each dialect's
// refuse turns it into its own): the guardrail and the detector by name,
// never the matched text.
func guardrailBlocked(b *guardrails.Block) *response {
	return errorResponse(http.StatusBadRequest, apiError{Message: b.Message(), Type: typeInvalidRequest, Code: ref(reasonGuardrailBlocked)})
}

// guardOutput runs the output stage over a whole answer (not an
// embedding's vectors, which no detector reads).
func (x *exchange) guardOutput(body []byte) ([]byte, *response) {
	set := x.key.guards.For(guardrails.StageOutput)
	if len(set) == 0 || x.endpoint == endpointEmbeddings {
		return body, nil
	}
	run := guardrails.NewRun(set, guardrails.StageOutput, guardHook{&x.admission})
	out, _ := guardrails.GuardBody(x.r.Context(), run, body)
	x.noteGuards(run)
	if b := run.Blocked(); b != nil {
		return body, guardrailBlocked(b)
	}
	return out, nil
}

// guardStreamSkipped records the output stage of a streamed answer no
// guardrail can read (a native route's own events) as skipped: an answer
// no guardrail inspected is never recorded as passed.
func (x *exchange) guardStreamSkipped() {
	set := x.key.guards.For(guardrails.StageOutput)
	if len(set) == 0 || x.guardStreamNoted {
		return
	}
	x.guardStreamNoted = true
	run := guardrails.NewRun(set, guardrails.StageOutput, nil)
	run.Skip()
	x.noteGuards(run)
}

// guardArguments is the input stage over a JSON document a request
// carries outside a model's body (an MCP tools/call's arguments, issue
// 32), every string of it checked whatever its member's name: the
// document as it may go on, or the refusal (OpenAI's shape, code guardrail_blocked; a
// JSON-RPC endpoint writes it in its own). What the guardrails did is
// recorded on the request's usage event, as for a chat completion.
func (a *admission) guardArguments(args []byte) ([]byte, *response) {
	set := a.key.guards
	if len(set) == 0 {
		return args, nil
	}
	run := guardrails.NewRun(set, guardrails.StageInput, guardHook{a})
	out, _ := guardrails.GuardArguments(a.r.Context(), run, args)
	a.noteGuards(run)
	if b := run.Blocked(); b != nil {
		return args, guardrailBlocked(b)
	}
	return out, nil
}

// guardStream is the output stage of a streamed answer. A translated
// route's chunks are chat.completion.chunks whatever the caller's dialect
// (the dialect's writer turns them into its events), so the decorator
// works on their text deltas: each choice's text goes through a
// guardrails.Stream (the hold-back window), and the chunk carries what may
// be sent now. A native route's events are the upstream's own; their
// output stage is recorded skipped.
func (x *exchange) guardStream(out streamOut, rt *route) streamOut {
	set := x.key.guards.For(guardrails.StageOutput)
	if len(set) == 0 || x.guardOut != nil {
		return out
	}
	if rt.native && x.endpoint != endpointMessages {
		x.guardStreamSkipped()
		return out
	}
	x.guardOut = guardrails.NewRun(set, guardrails.StageOutput, guardHook{&x.admission})
	return &guardedStream{streamOut: out, x: x, model: rt.model.model.ID, streams: map[string]*guardrails.Stream{}}
}

type guardedStream struct {
	streamOut
	x       *exchange
	model   string
	streams map[string]*guardrails.Stream
	// meta is the last chunk's id, object, created and model, for a chunk
	// made up to carry the held text when the stream ends without a
	// finishing chunk.
	meta    map[string]any
	blocked bool
	// drained: the held text went (drainGuard), with drainErr.
	drained  bool
	drainErr error
}

func (g *guardedStream) stream(index string) *guardrails.Stream {
	s := g.streams[index]
	if s == nil {
		s = guardrails.NewStream(g.x.r.Context(), g.x.guardOut, 0)
		g.streams[index] = s
	}
	return s
}

func (g *guardedStream) chunk(data []byte, more bool) error {
	if g.blocked {
		return nil
	}
	var c map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if dec.Decode(&c) != nil {
		return g.streamOut.chunk(data, more)
	}
	if typ, _ := c["type"].(string); typ != "" {
		return g.messagesEvent(c, typ, data, more)
	}
	choices, _ := c["choices"].([]any)
	g.meta = map[string]any{"id": c["id"], "object": c["object"], "created": c["created"], "model": c["model"]}
	changed := false
	for _, ch := range choices {
		choice, _ := ch.(map[string]any)
		if choice == nil {
			continue
		}
		index := fmt.Sprint(choice["index"])
		delta, _ := choice["delta"].(map[string]any)
		text, isText := "", false
		if delta != nil {
			text, isText = delta["content"].(string)
		}
		s := g.stream(index)
		var sent string
		var blocked bool
		if isText {
			sent, blocked = s.Write(text)
		}
		if !blocked && choice["finish_reason"] != nil {
			rest, b := s.Close()
			sent, blocked = sent+rest, b
			isText = isText || rest != ""
		}
		if blocked {
			return g.block()
		}
		if isText {
			if delta == nil {
				delta = map[string]any{}
				choice["delta"] = delta
			}
			delta["content"] = sent
			changed = true
		}
	}
	if !changed {
		return g.streamOut.chunk(data, more)
	}
	b, err := json.Marshal(c)
	if err != nil {
		return g.streamOut.chunk(data, more)
	}
	return g.streamOut.chunk(b, more)
}

// block ends the stream with the dialect's error event; the rest of the
// upstream's answer is not relayed (it is metered: the tokens were spent).
func (g *guardedStream) block() error {
	g.blocked = true
	b := g.x.guardOut.Blocked()
	return g.streamOut.fail(g.model, &providers.Error{Kind: providers.Rejected, Status: http.StatusBadRequest,
		Type: typeInvalidRequest, Code: reasonGuardrailBlocked, Message: b.Message()})
}

// flush sends what the streams still hold, in a chunk of its own.
func (g *guardedStream) flush() error {
	for index, s := range g.streams {
		rest, blocked := s.Close()
		if blocked {
			return g.block()
		}
		if rest == "" {
			continue
		}
		c := map[string]any{"choices": []any{map[string]any{"index": json.Number(index), "delta": map[string]any{"content": rest}, "finish_reason": nil}}}
		for k, v := range g.meta {
			c[k] = v
		}
		b, err := json.Marshal(c)
		if err != nil {
			return err
		}
		if err := g.streamOut.chunk(b, false); err != nil {
			return err
		}
	}
	return nil
}

func (g *guardedStream) end(u providers.Usage) error {
	if g.blocked {
		return nil
	}
	err := g.drainErr
	if !g.drained {
		err = g.flush()
	}
	if err != nil || g.blocked {
		return err
	}
	return g.streamOut.end(u)
}

func (g *guardedStream) fail(model string, f *providers.Error) error {
	if g.blocked {
		return nil
	}
	return g.streamOut.fail(model, f)
}

// allGuardRecords is the request's guardrail records, a streamed answer's
// output stage included.
func (a *admission) allGuardRecords() []wire.GuardrailRecord {
	if a.guardOut == nil {
		return a.guardRecords
	}
	out := append([]wire.GuardrailRecord{}, a.guardRecords...)
	for _, r := range a.guardOut.Records() {
		out = append(out, wire.GuardrailRecord{ID: r.ID, Name: r.Name, Stage: string(r.Stage),
			Outcome: string(r.Outcome), Detectors: append([]string{}, r.Detectors...)})
	}
	return out
}

// drainGuard sends what a guarded stream still holds (or blocks it), so
// the usage event recorded next says what its tail was.
func drainGuard(out streamOut) {
	if g, ok := out.(*guardedStream); ok && !g.blocked {
		g.drainErr = g.flush()
		g.drained = true
	}
}

// messagesEvent is chunk for a native Anthropic stream: each content
// block's text deltas go through their own hold-back stream, and what a
// block still holds is sent as one more text delta before its
// content_block_stop.
func (g *guardedStream) messagesEvent(c map[string]any, typ string, data []byte, more bool) error {
	index := fmt.Sprint(c["index"])
	switch typ {
	case "content_block_delta":
		delta, _ := c["delta"].(map[string]any)
		if delta == nil || delta["type"] != "text_delta" {
			return g.streamOut.chunk(data, more)
		}
		text, _ := delta["text"].(string)
		sent, blocked := g.stream(index).Write(text)
		if blocked {
			return g.block()
		}
		delta["text"] = sent
		b, err := json.Marshal(c)
		if err != nil {
			return err
		}
		return g.streamOut.chunk(b, more)
	case "content_block_stop":
		s := g.streams[index]
		if s == nil {
			return g.streamOut.chunk(data, more)
		}
		delete(g.streams, index)
		rest, blocked := s.Close()
		if blocked {
			return g.block()
		}
		if rest != "" {
			b, err := json.Marshal(map[string]any{"type": "content_block_delta", "index": c["index"],
				"delta": map[string]any{"type": "text_delta", "text": rest}})
			if err != nil {
				return err
			}
			if err := g.streamOut.chunk(b, true); err != nil {
				return err
			}
		}
	}
	return g.streamOut.chunk(data, more)
}
