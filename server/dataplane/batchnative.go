package dataplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/batchfile"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/server/spend"
	"github.com/gw-gateway/gw/wire"
)

// Native batches (issue 34; docs/batches.md): the lines of a batch that
// route to a credential whose provider has a batch API for the line's
// dialect (OpenAI and Azure OpenAI: chat completions, responses,
// embeddings; Anthropic: messages; Bedrock: messages to Anthropic's
// models and chat completions through Converse, in a batch inference job
// on the credential's S3 prefix; Vertex AI: chat completions to Gemini
// models and messages to Claude, in a batch prediction job on the
// credential's Cloud Storage prefix) run there, at the price gw records
// them at, instead of one by one through gw. At submission each such line
// is put in a group, one per credential and model (a provider batch is of
// one model); the runner submits each group, polls it off the request
// path and, once it ended, reads its results back into the lines and
// meters each line once, through the same admission.finish as a line gw
// runs.
//
// Never twice at the provider: a group is pending (nothing sent), then
// submitting (recorded before the create call, with the input file
// OpenAI got), then submitted (the provider's batch id recorded). A
// process that finds a group submitting (it stopped, or the create call's
// answer was lost) first looks for the provider batch that call may have
// made: OpenAI's by its input file, which gw uploaded for this group
// alone; Anthropic's, which carries nothing of gw's, by its creation time
// and request count; Bedrock's and Vertex AI's by its job name, made of
// gw's batch id and group. Only when none is found does it create one.
//
// Metered once: a line's usage event id is its request id, fixed when
// the batch was created; the events are recorded and flushed to the store
// before the lines are ended, so a process stopping in between records
// them again under the same ids, which the store keeps once.

// Group and line states of native batches (store.Upstream*, LineUpstream).
const (
	upstreamPending    = "pending"
	upstreamSubmitting = "submitting"
	upstreamSubmitted  = "submitted"
	upstreamEnded      = "ended"
	lineUpstream       = "upstream"
	lineCancelled      = "cancelled"
)

// nativeGroups puts each line that can run on its provider's batch API in
// a group, one per credential and model: the line's model (an alias's
// first target, as a synchronous request tries first), the credential a
// synchronous request would take, and nothing gw would do to the request
// on its own path (guardrails, a request limit). A credential with
// settings.batches "gateway" keeps its lines on gw's runner, as does a
// bedrock credential without its batch bucket and role, a chat line a
// Converse job cannot take (tools, structured output), and a bedrock
// group smaller than the fewest records a Bedrock job takes; and a vertex
// credential without its batch bucket, or a vertex line its synchronous
// request would be refused (gw's runner sends it, and the refusal fails
// that line alone, not its whole job).
func (a *admission) nativeGroups(lines []batchfile.Line, endpoint string) []BatchUpstream {
	if len(a.key.guards) > 0 {
		// The guardrails run on gw's own path only.
		return nil
	}
	var out []BatchUpstream
	index := map[string]int{}
	for _, l := range lines {
		models := a.batchModels(l.Model)
		if len(models) == 0 {
			continue
		}
		m := models[0]
		if !providers.NativeBatches(m.kind, endpoint, m.model.UpstreamModel()) {
			continue
		}
		d := a.evaluate(policy.Request{Model: m.model.ID, Provider: m.model.Provider, InputPricePerMTok: m.input, OutputPricePerMTok: m.output,
			CredentialScopes: a.key.org.credentials.eligible(a.key.workspace, m.model.Provider)})
		if !d.Allowed || d.MaxOutputTokens > 0 {
			continue
		}
		cred := a.key.org.credentials.pick(a.key.workspace, m.model.Provider, d.CredentialScopes)
		if cred == nil || cred.settings.Batches == providers.BatchesGateway {
			continue
		}
		if m.kind == catalog.KindBedrock && (cred.settings.BatchS3URI == "" || cred.settings.BatchRoleARN == "" ||
			!providers.BedrockBatchLine(endpoint, m.model.UpstreamModel(), l.Body)) {
			continue
		}
		if m.kind == catalog.KindVertex && (cred.settings.BatchGCSURI == "" || !providers.VertexBatchTakes(m.model.UpstreamModel(), l.Body)) {
			continue
		}
		k := cred.idString + "|" + m.model.ID
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, BatchUpstream{Seq: i + 1, Kind: string(m.kind), CredentialID: cred.id, Model: m.model.ID,
				UpstreamModel: m.model.UpstreamModel(), Status: upstreamPending})
		}
		out[i].Lines = append(out[i].Lines, UpstreamLine{Line: l.Number, RequestID: uuid.Must(uuid.NewV7()).String()})
	}
	// Bedrock refuses a job of fewer records than its minimum: such a
	// group's lines stay on gw's runner (the groups numbered again).
	kept := out[:0]
	for _, g := range out {
		if g.Kind == string(catalog.KindBedrock) && len(g.Lines) < providers.BedrockBatchMinRecords {
			continue
		}
		g.Seq = len(kept) + 1
		kept = append(kept, g)
	}
	return kept
}

// byID is the bundle's credential id, nil when it has none.
func (s *credentialSet) byID(id uuid.UUID) *upstreamCredential {
	for _, m := range []map[string][]*upstreamCredential{s.platform, s.org} {
		for _, list := range m {
			for _, c := range list {
				if c.id == id {
					return c
				}
			}
		}
	}
	for _, m := range s.workspace {
		for _, list := range m {
			for _, c := range list {
				if c.id == id {
					return c
				}
			}
		}
	}
	return nil
}

// upstreamCustomID is a line's custom_id at the provider: its number
// (Anthropic takes only [a-zA-Z0-9_-], gw's custom_ids are any printable
// text).
func upstreamCustomID(line int) string { return "gw-" + strconv.Itoa(line) }

// driveUpstreams moves the batch's provider batches on: submits those
// pending, polls those submitted (at most every poll interval), cancels
// them when the batch is cancelled, and reads those that ended back into
// their lines.
func (p *Plane) driveUpstreams(ctx context.Context, b *Batch) {
	if p.runner.gatewayOnly[b.ID] || p.now().Before(p.runner.nextPoll[b.ID]) {
		return
	}
	groups, err := p.batches.Upstreams(ctx, b.ID)
	if err != nil {
		p.inference.log.Warn("batches: reading the provider batches", "batch_id", b.ID, "error", err)
		return
	}
	if len(groups) == 0 {
		// Groups are made with the batch: this one has none.
		p.runner.gatewayOnly[b.ID] = true
		return
	}
	p.runner.nextPoll[b.ID] = p.now().Add(p.runner.poll)
	moved := false
	for _, g := range groups {
		if g.Status == upstreamEnded || ctx.Err() != nil {
			continue
		}
		moved = true
		if err := p.driveUpstream(ctx, b, g); err != nil && ctx.Err() == nil {
			p.inference.log.Warn("batches: a provider batch", "batch_id", b.ID, "group", g.Seq, "upstream_batch_id", g.UpstreamID, "error", err)
		}
	}
	if moved {
		// As they are now: the runner does not look at the batch's lines
		// for finishing while a provider batch is open.
		if groups, err = p.batches.Upstreams(ctx, b.ID); err != nil {
			return
		}
	}
	open := false
	for _, g := range groups {
		open = open || g.Status != upstreamEnded
	}
	p.runner.upstreamOpen[b.ID] = open
}

// nativeCall is what the group's provider calls need: the key's org's
// model and credential, opened. nil (with the reason) when the bundle in
// force no longer has them.
type nativeCall struct {
	key *admittedKey
	// keyGone: the key was revoked, its owner left or it expired since the
	// batch was submitted. Nothing more is sent for it; what was sent is
	// cancelled at the provider, and what ran is recorded as the key's.
	keyGone bool
	m       *routeModel
	cred    *upstreamCredential
	call    *providers.Call
	kind    catalog.Kind
}

func (p *Plane) nativeCallOf(b *Batch, g BatchUpstream) (*nativeCall, string) {
	key, refusal := p.batchKey(&batchLineCtx{keyID: b.InferenceKeyID, orgID: b.OrgID})
	gone := refusal != nil
	if gone {
		if key = p.sentBatchKey(b); key == nil {
			return nil, "the key that submitted the batch is no longer valid"
		}
	}
	m := key.inference.org.models[g.Model]
	cred := key.inference.org.credentials.byID(g.CredentialID)
	if m == nil || cred == nil {
		return nil, "the model or the credential the batch was submitted with is no longer available"
	}
	secret, err := cred.open(p.inference.keyring)
	if err != nil {
		return nil, "the provider credential could not be opened"
	}
	base := cred.baseURL
	if base == "" {
		base = m.baseURL
	}
	return &nativeCall{key: key, keyGone: gone, m: m, cred: cred, kind: catalog.Kind(g.Kind), call: &providers.Call{UpstreamModel: g.UpstreamModel,
		ResponseModel: m.model.ID, BaseURL: base, Secret: secret, CredentialID: cred.idString, Settings: cred.settings,
		AnthropicVersion: m.model.AnthropicVersion()}}, ""
}

// sentBatchKey is the key that submitted b when it no longer admits
// requests: expired (still in the bundle's keys), or revoked or its owner
// gone (in the bundle only for its provider batches out). nil when the
// bundle has it in neither.
func (p *Plane) sentBatchKey(b *Batch) *admittedKey {
	s := p.state.Load()
	if a := s.orgs[b.OrgID]; a != nil {
		if k := a.batchKeys[b.InferenceKeyID]; k != nil {
			return k
		}
	}
	for _, k := range s.keys {
		if k.inference.id == b.InferenceKeyID && k.orgID == b.OrgID {
			return k
		}
	}
	return nil
}

// driveUpstream takes the group a step on.
func (p *Plane) driveUpstream(ctx context.Context, b *Batch, g BatchUpstream) error {
	cancelling := b.Status == batchCancelling || b.Status == batchCancelled
	nc, why := p.nativeCallOf(b, g)
	if nc != nil && nc.keyGone && g.Status == upstreamPending {
		nc, why = nil, "the key that submitted the batch is no longer valid"
	}
	if nc == nil {
		if g.Status == upstreamPending {
			// Nothing was sent: the lines fail, costing nothing.
			return p.endGroup(ctx, b, g, lineFailed, why)
		}
		// Sent: the provider runs it and bills it; it is metered once
		// the bundle has what that needs again.
		return errors.New(why)
	}
	// A key that no longer admits requests spends no more: its provider
	// batch is cancelled as a gw cancel does it, and what ran before the
	// cancel is still read and recorded as the key's (never less than was
	// delivered).
	cancelling = cancelling || nc.keyGone
	api := p.inference.upstreams.BatchAPI()
	switch g.Status {
	case upstreamPending:
		if cancelling {
			return p.endGroup(ctx, b, g, lineCancelled, "")
		}
		reqs, err := p.upstreamRequests(ctx, b, g)
		if err != nil {
			return err
		}
		k := groupKey(b, g)
		if p.runner.holds[k] == nil {
			hold, refusal := p.holdGroup(ctx, b, g, nc, 30*time.Second)
			if refusal != nil && refusal.status != http.StatusPaymentRequired {
				// Busy (requests in flight hold the room) or not known
				// now (the control plane out of reach): nothing is sent,
				// and the group waits for its next turn.
				return fmt.Errorf("holding the provider batch's bound: %s", errorMessage(refusal.body))
			}
			if refusal != nil {
				// The budget's room is gone for its period, as for a line
				// gw runs: nothing is sent, the lines fail and cost nothing.
				return p.endGroup(ctx, b, g, lineFailed, errorMessage(refusal.body))
			}
			p.runner.holds[k] = hold
		}
		if g.FileID, err = api.Upload(ctx, nc.kind, nc.call, b.Endpoint, upstreamJobName(b, g), reqs); err != nil {
			return p.refused(ctx, b, g, nc, err)
		}
		g.Status, g.SubmittingAt = upstreamSubmitting, p.now()
		if ok, err := p.batches.UpdateUpstream(ctx, g, upstreamPending, p.now()); err != nil || !ok {
			if err == nil {
				// Another process took the group on: its file is left
				// unused at the provider, its hold given back here.
				p.release(b, g)
			}
			return err
		}
		return p.createUpstream(ctx, b, g, nc, reqs)
	case upstreamSubmitting:
		// An earlier create's answer was not recorded: it may have
		// made the provider batch.
		lines, err := p.batches.UpstreamLines(ctx, b.ID, g.Seq)
		if err != nil {
			return err
		}
		job, found, err := api.Find(ctx, nc.kind, nc.call, upstreamJobName(b, g), g.FileID, g.SubmittingAt, len(lines))
		if err != nil {
			return err
		}
		if found {
			return p.submitted(ctx, g, job)
		}
		if cancelling {
			return p.endGroup(ctx, b, g, lineCancelled, "")
		}
		return p.createUpstream(ctx, b, g, nc, nil)
	case upstreamSubmitted:
		k := groupKey(b, g)
		if p.runner.holds[k] == nil && !p.runner.reheld[k] {
			// Sent by an earlier process, whose hold went with it: this
			// one holds the bound again if the budgets still take it
			// (once; they may not, the lines being at the provider
			// already, and are then charged as the results arrive).
			p.runner.reheld[k] = true
			if hold, refusal := p.holdGroup(ctx, b, g, nc, 2*time.Second); refusal == nil {
				p.runner.holds[k] = hold
			}
		}
		if cancelling && !p.runner.cancelAsked[k] {
			// A provider that refuses the cancel (the batch ended in the
			// meantime) has nothing left to stop: its results are read as
			// they are. Any other failure is tried again.
			var pe *providers.Error
			if _, err := api.Cancel(ctx, nc.kind, nc.call, g.UpstreamID); err != nil && !(errors.As(err, &pe) && pe.Kind == providers.Rejected) {
				return err
			}
			p.runner.cancelAsked[k] = true
		}
		job, err := api.Get(ctx, nc.kind, nc.call, g.UpstreamID)
		if err != nil || !job.Ended {
			return err
		}
		results, err := api.Results(ctx, nc.kind, nc.call, b.Endpoint, job)
		if err != nil {
			return err
		}
		return p.settleUpstream(ctx, b, g, nc, job, results)
	}
	return nil
}

// createUpstream creates the group's provider batch (reqs read again when
// nil) and records its id.
func (p *Plane) createUpstream(ctx context.Context, b *Batch, g BatchUpstream, nc *nativeCall, reqs []providers.BatchRequest) error {
	if reqs == nil && nc.kind == catalog.KindAnthropic {
		var err error
		if reqs, err = p.upstreamRequests(ctx, b, g); err != nil {
			return err
		}
	}
	job, err := p.inference.upstreams.BatchAPI().Create(ctx, nc.kind, nc.call, b.Endpoint, upstreamJobName(b, g), g.FileID, reqs,
		map[string]string{"gw_batch_id": b.ID, "gw_group": strconv.Itoa(g.Seq)})
	if err != nil {
		return p.refused(ctx, b, g, nc, err)
	}
	return p.submitted(ctx, g, job)
}

func (p *Plane) submitted(ctx context.Context, g BatchUpstream, job providers.BatchJob) error {
	from := g.Status
	g.Status, g.UpstreamID = upstreamSubmitted, job.ID
	_, err := p.batches.UpdateUpstream(context.WithoutCancel(ctx), g, from, p.now())
	return err
}

// refused ends the group's lines as failed when the provider refused the
// upload or the batch (a 4xx: it took nothing, so nothing was run or
// billed), and deletes the input it was given (best effort: gw keeps the
// requests); any other error is returned, to try again.
func (p *Plane) refused(ctx context.Context, b *Batch, g BatchUpstream, nc *nativeCall, err error) error {
	var pe *providers.Error
	if errors.As(err, &pe) && (pe.Kind == providers.Rejected || pe.Kind == providers.Unauthorized) {
		if err := p.endGroup(ctx, b, g, lineFailed, "the provider refused the batch: "+pe.Message); err != nil {
			return err
		}
		if err := p.inference.upstreams.BatchAPI().DeleteFile(ctx, nc.kind, nc.call, g.FileID); err != nil {
			p.inference.log.Warn("batches: deleting a refused provider batch's input", "batch_id", b.ID, "file_id", g.FileID, "error", err)
		}
		return nil
	}
	return err
}

// endGroup ends every line still in the group as status (failed with
// message, or cancelled), none of them sent, and the group.
func (p *Plane) endGroup(ctx context.Context, b *Batch, g BatchUpstream, status, message string) error {
	lines, err := p.batches.UpstreamLines(ctx, b.ID, g.Seq)
	if err != nil {
		return err
	}
	for _, l := range lines {
		out := BatchLine{BatchID: b.ID, Line: l.Line, CustomID: l.CustomID, RequestID: l.RequestID, Status: status, Error: message}
		if _, err := p.batches.EndLine(ctx, out, p.now()); err != nil {
			return err
		}
	}
	from := g.Status
	g.Status, g.Error = upstreamEnded, message
	if _, err = p.batches.UpdateUpstream(ctx, g, from, p.now()); err == nil {
		p.release(b, g)
		// Ended before it held its share of the batch's hold: the
		// share goes back.
		p.groupDone(b.ID, g.Seq, false)
	}
	return err
}

func groupKey(b *Batch, g BatchUpstream) string { return b.ID + "/" + strconv.Itoa(g.Seq) }

// upstreamJobName is the group's name at a provider that names its jobs
// (Bedrock, Vertex AI): gw's batch id and the group's number, so a create
// whose answer was lost is found by it for certain.
func upstreamJobName(b *Batch, g BatchUpstream) string {
	if g.Kind == string(catalog.KindVertex) {
		return providers.VertexBatchJobName(b.ID, g.Seq)
	}
	return providers.BedrockBatchJobName(b.ID, g.Seq)
}

// release gives back the group's hold on the budgets, if this process has
// one.
func (p *Plane) release(b *Batch, g BatchUpstream) {
	k := groupKey(b, g)
	if h := p.runner.holds[k]; h != nil {
		h.Settle(0)
		delete(p.runner.holds, k)
	}
}

// holdGroup holds the group's upper-bound cost (its lines' bounds at the
// batch prices, as at submission) against the budgets its model counts
// against, from before it is sent until its results are read: the
// provider runs the lines when it will, and the budgets keep room for
// them meanwhile, as they do for a line gw sends. A budget that cannot
// take it is the refusal returned. The hold lives in this process: a
// restart drops it, and the lines are then charged as their results
// arrive (docs/batches.md).
func (p *Plane) holdGroup(ctx context.Context, b *Batch, g BatchUpstream, nc *nativeCall, wait time.Duration) (*spend.Reservation, *response) {
	input, err := p.batchInput(ctx, b)
	if err != nil {
		return nil, errBudgetUnavailable
	}
	lines, err := p.batches.UpstreamLines(ctx, b.ID, g.Seq)
	if err != nil {
		return nil, errBudgetUnavailable
	}
	var bound int64
	for _, l := range lines {
		n, err := lineBoundOf(nc.m, input[l.Line], true)
		if err != nil || bound > (1<<62)-n {
			return nil, errBudgetUnavailable
		}
		bound += n
	}
	// The runner waits for room at most wait (it has other batches to
	// move on).
	rctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	r, err := batchAdmissionRequest(rctx, b.Endpoint)
	if err != nil {
		return nil, errBudgetUnavailable
	}
	a := &admission{p: p, r: r, key: nc.key.inference, view: nc.key.models, id: uuid.Must(uuid.NewV7())}
	m := nc.m
	d := a.evaluate(policy.Request{Model: m.model.ID, Provider: m.model.Provider, InputPricePerMTok: m.input, OutputPricePerMTok: m.output,
		CredentialScopes: a.key.org.credentials.eligible(a.key.workspace, m.model.Provider)})
	// Its share of the batch's hold, when this process holds one, moves
	// to the group's in one step (batchhold.go). The group's is a
	// request's reservation, not a hold: once sent, its lines are in
	// flight at the provider, and a process that dies counts it spent
	// (the budget journal) until it holds it again or reads the results.
	var src spend.Source
	draw := p.groupDraw(b.ID, g.Seq)
	if draw != nil {
		src = draw.src
	}
	if refusal := a.reserveFrom(&d, func() (int64, error) { return bound, nil }, src); refusal != nil {
		return nil, refusal
	}
	if draw != nil {
		p.groupDone(b.ID, g.Seq, a.budget != nil)
	}
	return a.budget, nil
}

// upstreamRequests are the group's lines as the provider takes them: the
// input file's bodies (the batch API names the model as the provider
// knows it).
func (p *Plane) upstreamRequests(ctx context.Context, b *Batch, g BatchUpstream) ([]providers.BatchRequest, error) {
	input, err := p.batchInput(ctx, b)
	if err != nil {
		return nil, err
	}
	lines, err := p.batches.UpstreamLines(ctx, b.ID, g.Seq)
	if err != nil {
		return nil, err
	}
	out := make([]providers.BatchRequest, 0, len(lines))
	for _, l := range lines {
		in, ok := input[l.Line]
		if !ok {
			continue // the input file is gone: no result, the line fails
		}
		out = append(out, providers.BatchRequest{CustomID: upstreamCustomID(l.Line), Body: in.Body})
	}
	return out, nil
}

// withMember is the JSON object body with member name set to value.
func withMember(body []byte, name string, value any) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		return body, err
	}
	v, err := json.Marshal(value)
	if err != nil {
		return nil, err
	}
	m[name] = v
	return json.Marshal(m)
}

// settleUpstream reads an ended provider batch back into its lines: each
// succeeded request's answer (its model gw's name, as gw's own path
// answers) and its one usage event at the batch prices from the usage the
// provider reports; an errored one failed with the provider's error and an
// event at $0; a canceled or expired one, or one the provider reports
// nothing of, cancelled or failed with no event and no cost. The events
// are flushed before the lines end (see the top of this file).
func (p *Plane) settleUpstream(ctx context.Context, b *Batch, g BatchUpstream, nc *nativeCall, job providers.BatchJob, results []providers.BatchResult) error {
	ctx = context.WithoutCancel(ctx)
	lines, err := p.batches.UpstreamLines(ctx, b.ID, g.Seq)
	if err != nil {
		return err
	}
	input, err := p.batchInput(ctx, b)
	if err != nil {
		return err
	}
	byID := make(map[string]providers.BatchResult, len(results))
	for _, r := range results {
		byID[r.CustomID] = r
	}
	// The group's hold is given back, and each line then charged its
	// exact cost, which the hold made room for (a provider that reports
	// more than the bound is charged what fits, its event flagged, as a
	// line gw sends).
	p.release(b, g)
	outs := make([]BatchLine, 0, len(lines))
	for _, l := range lines {
		out := BatchLine{BatchID: b.ID, Line: l.Line, CustomID: l.CustomID, RequestID: l.RequestID}
		r, ok := byID[upstreamCustomID(l.Line)]
		requested := input[l.Line].Model
		switch {
		case !ok && job.Cancelled:
			out.Status = lineCancelled
		case !ok:
			out.Status, out.Error = lineFailed, fmt.Sprintf("the provider's batch ended (%s) with no result for this request", job.Status)
		case r.Outcome == providers.BatchSucceeded:
			body, err := withMember(r.Body, "model", nc.m.model.ID)
			if err != nil {
				body = r.Body
			}
			out.Status, out.StatusCode, out.Response = lineCompleted, http.StatusOK, string(body)
			out.CostNanoUSD = p.recordNativeLine(ctx, b, nc, l, requested, statusOK, r.Usage)
		case r.Outcome == providers.BatchCanceled:
			out.Status = lineCancelled
		case r.Outcome == providers.BatchExpired:
			out.Status, out.Error = lineFailed, "expired: the provider's batch window ended before this request ran"
		default:
			out.Status, out.StatusCode, out.Response, out.Error = lineFailed, r.StatusCode, string(r.Body), r.Error
			p.recordNativeLine(ctx, b, nc, l, requested, statusError, providers.Usage{})
		}
		outs = append(outs, out)
	}
	if f, ok := p.inference.usage.(interface{ Flush(context.Context) error }); ok {
		if err := f.Flush(ctx); err != nil {
			// The lines stay in the provider batch: read again next time,
			// their events recorded again under the same ids.
			return fmt.Errorf("flushing the batch lines' usage events: %w", err)
		}
	}
	for _, out := range outs {
		if _, err := p.batches.EndLine(ctx, out, p.now()); err != nil {
			return err
		}
	}
	g.Status = upstreamEnded
	if _, err = p.batches.UpdateUpstream(ctx, g, upstreamSubmitted, p.now()); err != nil {
		return err
	}
	// The provider's copies of the requests and answers are not kept
	// there: gw has them (best effort; the provider's retention applies to
	// any left).
	api := p.inference.upstreams.BatchAPI()
	for _, id := range []string{g.FileID, job.OutputFileID, job.ErrorFileID} {
		if err := api.DeleteFile(ctx, nc.kind, nc.call, id); err != nil {
			p.inference.log.Warn("batches: deleting a provider batch's file", "batch_id", b.ID, "file_id", id, "error", err)
		}
	}
	if err := api.DeleteBatch(ctx, nc.kind, nc.call, job.ID); err != nil {
		p.inference.log.Warn("batches: deleting a provider batch", "batch_id", b.ID, "upstream_batch_id", job.ID, "error", err)
	}
	return nil
}

// BatchEndpointName names a batch's endpoint (its url, "/v1/…") as
// usage events do, for an event of a line recorded elsewhere (the
// control plane's, of a lost plane's line).
func BatchEndpointName(endpoint string) string { return endpointOf(endpoint) }

// endpointOf names a batch endpoint as usage events do.
func endpointOf(endpoint string) string {
	switch endpoint {
	case "/v1/responses":
		return endpointResponses
	case "/v1/embeddings":
		return endpointEmbeddings
	case batchfile.MessagesEndpoint:
		return endpointMessages
	}
	return endpointChatCompletions
}

// batchAdmissionRequest is the request a batch's admission is made with
// when no caller's request is at hand (a hold on the budgets, a line the
// provider ran): in process, to the batch's endpoint, never sent.
func batchAdmissionRequest(ctx context.Context, endpoint string) (*http.Request, error) {
	return http.NewRequestWithContext(ctx, http.MethodPost, "http://gw.batch/inf"+endpoint, http.NoBody)
}

// recordNativeLine records a line the provider ran: one usage event
// through the admission's finish, as the key that submitted the batch,
// with the line's request id as the event's id, at the model's batch
// prices (ForBatch, through batchPricing's marker) for the usage the
// provider reports — $0 unless it succeeded. Its cost is charged to the
// budgets the key's policies name as far as they take it (the request
// already ran: a budget other spending filled since submission is not
// refused it; docs/batches.md). It returns the cost.
func (p *Plane) recordNativeLine(ctx context.Context, b *Batch, nc *nativeCall, l BatchLine, requested, status string, u providers.Usage) int64 {
	bl := &batchLineCtx{batchID: b.ID, keyID: b.InferenceKeyID, orgID: b.OrgID, native: true}
	rctx, cancel := context.WithTimeout(context.WithValue(ctx, batchLineKey{}, bl), 30*time.Second)
	defer cancel()
	r, err := batchAdmissionRequest(rctx, b.Endpoint)
	if err != nil {
		return 0
	}
	r.Header.Set("X-Request-Id", l.RequestID)
	a := p.beginRequest(&lineWriter{header: http.Header{}}, r, endpointOf(b.Endpoint))
	defer a.end()
	if id, err := uuid.Parse(l.RequestID); err == nil {
		a.id = id
	}
	a.key, a.view = nc.key.inference, nc.key.models
	a.tags, _ = tagsOf(r, a.key)
	a.occurred = p.now().UTC().Truncate(time.Microsecond)
	m := nc.m
	d, _ := a.decide(policy.Request{Model: m.model.ID, Provider: m.model.Provider, InputPricePerMTok: m.input, OutputPricePerMTok: m.output,
		CredentialScopes: a.key.org.credentials.eligible(a.key.workspace, m.model.Provider)})
	pricing, _ := batchPricing(a.batchLine, m)
	tokens := u.Tokens()
	nano, err := pricing.CostNanoUSD(tokens)
	if err != nil || status != statusOK {
		nano = 0
	}
	if status == statusOK {
		_ = a.reserve(d, func() (int64, error) { return nano, nil })
	}
	if requested == "" {
		requested = m.model.ID
	}
	rec := usageRecord{status: status, model: m.model.ID, provider: m.model.Provider, requested: requested, credentialID: &nc.cred.id,
		usage: u, costNano: nano, attempts: []wire.UsageAttempt{{Model: m.model.ID, Provider: m.model.Provider}}}
	if status != statusOK {
		rec.reason, rec.failure = failUpstreamError, failUpstreamError
		f := failUpstreamError
		rec.attempts[0].Failure = &f
	}
	ap := pricing.AppliedTo(tokens)
	rec.prices = &wire.UsagePrices{InputPerMTok: ap.InputPerMTok, OutputPerMTok: ap.OutputPerMTok, CacheReadPerMTok: ap.CacheReadPerMTok,
		CacheWritePerMTok: ap.CacheWritePerMTok, CacheWrite1hPerMTok: ap.CacheWrite1hPerMTok, LongContext: ap.LongContext,
		ServiceTier: ap.ServiceTier, PriceClass: pricing.PriceClass()}
	a.finish(rec)
	return nano
}
