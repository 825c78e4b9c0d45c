package dataplane

import (
	"context"
	"net/http"

	"github.com/google/uuid"
	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/guardrails"
	"github.com/gw-gateway/gw/server/policy"
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
