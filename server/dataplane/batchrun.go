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

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/batchfile"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/spend"
)

// DefaultBatchPace is how often the runner sends a batch line: ten lines
// a second, across every batch of the process.
const DefaultBatchPace = 100 * time.Millisecond

// interruptedLine is the error of a line a process took and did not end
// (it stopped): the line is never sent again (docs/batches.md).
const interruptedLine = "interrupted: the gateway stopped while this request was in flight; it is not sent again"

// maxRunningBatches bounds the batches whose lines are sent in turn (the
// oldest in progress): each holds its input file's lines in memory (up to
// batchfile.DefaultLimits.Bytes), so the runner holds at most this many.
const maxRunningBatches = 4

// batchRunner is RunBatches' state: its pace and the nudge a submission
// or a cancel gives it.
type batchRunner struct {
	pace time.Duration
	wake chan struct{}
	// inputs caches each running batch's lines as read from its input
	// file, read once per batch per process.
	mu     sync.Mutex
	inputs map[string]map[int]batchfile.Line
	// notBefore holds back a batch whose key's rate limit refused a line
	// until the limit's window moves on.
	notBefore map[string]time.Time

	// Native batches (batchnative.go), read by RunBatches only: poll is
	// how often a batch's provider batches are read (pollPaces paces);
	// nextPoll when each batch's are next; gatewayOnly the batches found
	// to have none; cancelAsked the provider batches asked to cancel.
	poll        time.Duration
	nextPoll    map[string]time.Time
	gatewayOnly map[string]bool
	cancelAsked map[string]bool
	// holds are the provider batch groups' holds on the budgets
	// (holdGroup), by batch and group.
	holds map[string]*spend.Reservation
	// reheld are the groups this process found sent and tried to hold
	// again.
	reheld map[string]bool
	// upstreamOpen are the batches with a provider batch not yet read
	// back (driveUpstreams), which are not finished meanwhile.
	upstreamOpen map[string]bool
	// batchHolds are the holds of the batches this process accepted
	// (batchhold.go), under mu: submissions add them; reheldBatch the
	// batches it looked at holding again after a restart.
	batchHolds  map[string]*batchHold
	reheldBatch map[string]bool
}

// pollPaces is how many paces apart a batch's provider batches are read
// (every 5 seconds at the default pace).
const pollPaces = 50

func newBatchRunner(pace time.Duration) batchRunner {
	if pace <= 0 {
		pace = DefaultBatchPace
	}
	return batchRunner{pace: pace, wake: make(chan struct{}, 1), inputs: map[string]map[int]batchfile.Line{}, notBefore: map[string]time.Time{},
		poll: pollPaces * pace, nextPoll: map[string]time.Time{}, gatewayOnly: map[string]bool{}, cancelAsked: map[string]bool{},
		holds: map[string]*spend.Reservation{}, reheld: map[string]bool{}, upstreamOpen: map[string]bool{},
		batchHolds: map[string]*batchHold{}, reheldBatch: map[string]bool{}}
}

func (p *Plane) wakeRunner() {
	select {
	case p.runner.wake <- struct{}{}:
	default:
	}
}

// batchLineCtx marks a request the runner sends for a batch line: the
// batch, the key that submitted it, and, once the line's event is
// recorded, its cost.
type batchLineCtx struct {
	batchID  string
	keyID    uuid.UUID
	orgID    uuid.UUID
	costNano int64
	recorded bool
	// rateLimited: the key's rate limit refused the line before anything
	// was sent (admitRate).
	rateLimited bool
	// native: the provider ran the line in its batch (batchnative.go), so
	// it bills the batch prices; a line gw's runner sends is a synchronous
	// request upstream and is billed, and priced here, as one.
	native bool
	// draw is the line's share of its batch's hold, which its first
	// reservation takes (batchhold.go); nil when none is held here.
	draw *budgetDraw
}

type batchLineKey struct{}

func batchLineOf(ctx context.Context) *batchLineCtx {
	l, _ := ctx.Value(batchLineKey{}).(*batchLineCtx)
	return l
}

// batchKey is the key a batch line runs as: the one that submitted the
// batch, found in the bundle in force (a key revoked since is refused as
// any request with it is).
func (p *Plane) batchKey(l *batchLineCtx) (*admittedKey, *response) {
	for _, k := range p.state.Load().keys {
		if k.inference.id == l.keyID && k.orgID == l.orgID {
			if k.expires && !p.now().Before(k.expiresAt) {
				return nil, errExpiredKey
			}
			return k, nil
		}
	}
	return nil, errInvalidKey
}

// RunBatches sends the lines of every batch in the store, one at a time
// at the plane's pace, until ctx ends: off the request path, as gw serve
// runs it. Each line is a request through the same exchange as a
// synchronous one (ServeHTTP, as the key that submitted the batch), at the
// batch prices, leaving one usage event that names the batch. At start, a
// line that an earlier process had taken and not ended (it stopped) is
// failed as interrupted, never sent again; a line that process's request
// journal holds is billed by it (crash.go). A batch with no line left is
// finished: its output and error files written. Over a store several
// processes share (BatchRunnerLease), only the lease's holder runs them
// (batchlease.go).
func (p *Plane) RunBatches(ctx context.Context) {
	if p.batches == nil {
		return
	}
	if l, ok := p.batches.(BatchRunnerLease); ok {
		p.runLeased(ctx, l)
		return
	}
	p.runBatches(ctx)
}

// runBatches is RunBatches' passes, until ctx ends.
func (p *Plane) runBatches(ctx context.Context) {
	started := p.now()
	interrupted := map[string]bool{}
	tick := time.NewTicker(p.runner.pace)
	defer tick.Stop()
	for ctx.Err() == nil {
		sent := false
		listed := time.Now()
		active, err := p.batches.Active(ctx)
		if err != nil && ctx.Err() == nil {
			p.inference.log.Warn("batches: listing the active batches", "error", err)
		}
		if err == nil {
			// Held here, finished by another process.
			p.endedElsewhere(active, listed)
		}
		running := 0
		for _, b := range active {
			if ctx.Err() != nil {
				return
			}
			if !interrupted[b.ID] {
				if _, err := p.batches.Interrupt(ctx, b.ID, started, p.now(), interruptedLine); err != nil {
					p.inference.log.Warn("batches: ending interrupted lines", "batch_id", b.ID, "error", err)
					continue
				}
				interrupted[b.ID] = true
			}
			// Its hold kept to what its pending lines may need, or held
			// again after a restart (batchhold.go).
			p.tendHold(ctx, &b)
			// Its lines on a provider's batch API, if any: submitted,
			// polled, read back (batchnative.go).
			p.driveUpstreams(ctx, &b)
			// Past its completion window, its pending lines are never
			// sent (batchexpiry.go); it finishes once none runs.
			p.expireBatch(ctx, &b)
			if b.Status == batchInProgress && running == maxRunningBatches {
				// Later batches wait for one of the oldest to end: the
				// input files held in memory stay bounded.
				continue
			}
			if b.Status == batchInProgress && p.now().Before(p.runner.notBefore[b.ID]) {
				running++
				continue
			}
			if b.Status == batchInProgress {
				running++
				ran, err := p.runLine(ctx, &b)
				if err != nil {
					if ctx.Err() == nil {
						p.inference.log.Warn("batches: running a line", "batch_id", b.ID, "error", err)
					}
					continue
				}
				if ran {
					sent = true
					select {
					case <-ctx.Done():
						return
					case <-tick.C:
					}
					continue
				}
			}
			if p.runner.upstreamOpen[b.ID] {
				// Its lines at a provider end when that batch does.
				continue
			}
			if err := p.finishBatch(ctx, &b); err != nil && ctx.Err() == nil {
				p.inference.log.Warn("batches: finishing", "batch_id", b.ID, "error", err)
			}
		}
		if !sent {
			select {
			case <-ctx.Done():
				return
			case <-p.runner.wake:
			case <-time.After(10 * p.runner.pace):
			}
		}
	}
}

// runLine sends the batch's next pending line, if it has one.
func (p *Plane) runLine(ctx context.Context, b *Batch) (bool, error) {
	input, err := p.batchInput(ctx, b)
	if err != nil {
		return false, err
	}
	requestID := uuid.Must(uuid.NewV7()).String()
	// The take is not cut by the runner stopping: a take cut after the
	// store made it would leave the line running, never sent, until the
	// next start failed it as interrupted. Taken, the line is given back
	// if the runner stopped meanwhile.
	line, ok, err := p.batches.StartLine(context.WithoutCancel(ctx), b.ID, requestID, p.now())
	if err != nil || !ok {
		return false, err
	}
	if ctx.Err() != nil {
		_, err := p.batches.Requeue(context.WithoutCancel(ctx), b.ID, line.Line, p.now())
		return false, err
	}
	l, found := input[line.Line]
	out := BatchLine{BatchID: b.ID, Line: line.Line, CustomID: line.CustomID, RequestID: requestID}
	if !found {
		// The input file changed under the batch (it cannot: files are
		// never edited); the line is failed rather than guessed at.
		out.Status, out.Error = lineFailed, "the line is not in the batch's input file"
		p.lineDone(b.ID, line.Line, nil, false)
	} else {
		bl := &batchLineCtx{batchID: b.ID, keyID: b.InferenceKeyID, orgID: b.OrgID, draw: p.lineDraw(b.ID, line.Line)}
		// Not cut when the runner stops: a line sent is finished and
		// metered; shutdown ends it as it ends every call in flight
		// (EndInFlight, through the plane's call registry).
		status, body, retryAfter := p.sendLine(context.WithValue(context.WithoutCancel(ctx), batchLineKey{}, bl), l, requestID)
		p.lineDone(b.ID, line.Line, bl.draw, bl.rateLimited)
		if bl.rateLimited {
			// Nothing was sent and no event made: the line waits for the
			// key's next window, as a client that honours Retry-After.
			p.runner.notBefore[b.ID] = p.now().Add(retryAfter)
			_, err := p.batches.Requeue(context.WithoutCancel(ctx), b.ID, line.Line, p.now())
			return true, err
		}
		out.StatusCode, out.Response, out.CostNanoUSD = status, string(body), bl.costNano
		out.Status = lineCompleted
		if status != http.StatusOK {
			out.Status, out.Error = lineFailed, errorMessage(body)
		}
	}
	// The outcome is recorded even when ctx has ended: the request was
	// sent and billed.
	_, err = p.batches.EndLine(context.WithoutCancel(ctx), out, p.now())
	return true, err
}

// sendLine is the line's request through the plane's own handler, answered
// into memory.
func (p *Plane) sendLine(ctx context.Context, l batchfile.Line, requestID string) (int, []byte, time.Duration) {
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://gw.batch/inf"+l.URL, bytes.NewReader(l.Body))
	if err != nil {
		return http.StatusInternalServerError, mustJSON(map[string]any{"error": map[string]string{"message": err.Error()}}), 0
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("X-Request-Id", requestID)
	w := &lineWriter{header: http.Header{}}
	p.ServeHTTP(w, r)
	if w.status == 0 {
		w.status = http.StatusOK
	}
	retry := time.Second
	if n, err := strconv.Atoi(w.header.Get("Retry-After")); err == nil && n > 0 {
		retry = time.Duration(n) * time.Second
	}
	return w.status, w.body.Bytes(), retry
}

// lineWriter keeps a line's answer in memory.
type lineWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *lineWriter) Header() http.Header { return w.header }
func (w *lineWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}
func (w *lineWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(b)
}
func (w *lineWriter) Flush() {}

// errorMessage is an error answer's message (OpenAI's error shape), or the
// body itself.
func errorMessage(body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	return strings.TrimSpace(string(body))
}

// batchInput is the batch's lines by number, read from its input file
// once per process.
func (p *Plane) batchInput(ctx context.Context, b *Batch) (map[int]batchfile.Line, error) {
	p.runner.mu.Lock()
	in, ok := p.runner.inputs[b.ID]
	p.runner.mu.Unlock()
	if ok {
		return in, nil
	}
	f, err := p.batches.File(ctx, b.WorkspaceID, b.InputFileID)
	in = map[int]batchfile.Line{}
	if err == nil {
		// Checked at submission; read the same way again.
		lines, err := batchfile.Read(f.Content, b.Endpoint, batchfile.LimitsFor(b.Endpoint))
		if err != nil {
			return nil, err
		}
		for _, l := range lines {
			in[l.Number] = l
		}
	} else if !errors.Is(err, ErrBatchNotFound) {
		return nil, err
	}
	// A deleted input file leaves every pending line failing (not found
	// in the map), never sent.
	p.runner.mu.Lock()
	p.runner.inputs[b.ID] = in
	p.runner.mu.Unlock()
	return in, nil
}

// finishBatch ends a batch none of whose lines is pending or running:
// completed (cancelled when it was cancelled, expired when its window
// ended lines unsent), with an output file of the completed lines and an
// error file of the failed and expired ones, as OpenAI writes them.
func (p *Plane) finishBatch(ctx context.Context, b *Batch) error {
	var output, errs bytes.Buffer
	after, expired := 0, false
	for {
		lines, err := p.batches.Lines(ctx, b.ID, after, 1000)
		if err != nil {
			return err
		}
		if len(lines) == 0 {
			break
		}
		for _, l := range lines {
			after = l.Line
			switch l.Status {
			case "pending", "running", lineUpstream:
				return nil // not done yet
			case lineCompleted:
				output.Write(mustJSON(outputLine(l)))
				output.WriteByte('\n')
			case lineFailed, lineExpired:
				expired = expired || l.Status == lineExpired
				errs.Write(mustJSON(outputLine(l)))
				errs.WriteByte('\n')
			}
		}
	}
	// The batch as it is now: a cancel since it was listed makes it
	// cancelled, not completed.
	now, err := p.batches.Batch(ctx, b.WorkspaceID, b.ID)
	if err != nil {
		return err
	}
	status := batchCompleted
	switch {
	case now.Status == batchCancelling || now.Status == batchCancelled:
		status = batchCancelled
	case expired:
		// Its window ended with lines unsent (batchexpiry.go).
		status = batchExpired
	}
	at := p.now()
	file := func(buf *bytes.Buffer, name string) *BatchFile {
		if buf.Len() == 0 || b.Endpoint == batchfile.MessagesEndpoint {
			// An Anthropic batch's results are read from its lines
			// (messagebatches.go), not from files.
			return nil
		}
		return &BatchFile{ID: "file-" + strings.ReplaceAll(uuid.NewString(), "-", ""), OrgID: b.OrgID, WorkspaceID: b.WorkspaceID,
			Purpose: "batch_output", Filename: b.ID + "_" + name + ".jsonl", Bytes: int64(buf.Len()), Content: buf.Bytes(), CreatedAt: at}
	}
	_, err = p.batches.Finish(ctx, b.ID, status, file(&output, "output"), file(&errs, "error"), at)
	if err == nil {
		p.runner.mu.Lock()
		delete(p.runner.inputs, b.ID)
		delete(p.runner.notBefore, b.ID)
		p.runner.mu.Unlock()
		delete(p.runner.nextPoll, b.ID)
		delete(p.runner.gatewayOnly, b.ID)
		delete(p.runner.upstreamOpen, b.ID)
		delete(p.runner.reheldBatch, b.ID)
		p.releaseBatchHold(b.ID)
	}
	return err
}

// outputLine is a line of a batch's output or error file, in OpenAI's
// shape: the answer as the endpoint gave it, or the error.
func outputLine(l BatchLine) map[string]any {
	out := map[string]any{"id": "batch_req_" + strings.ReplaceAll(l.RequestID, "-", ""), "custom_id": l.CustomID, "response": nil, "error": nil}
	if l.StatusCode != 0 {
		body := json.RawMessage(l.Response)
		if !json.Valid(body) {
			body = mustJSON(l.Response)
		}
		out["response"] = map[string]any{"status_code": l.StatusCode, "request_id": l.RequestID, "body": body}
	}
	switch l.Status {
	case lineFailed:
		out["error"] = map[string]string{"code": "request_failed", "message": l.Error}
	case lineExpired:
		out["error"] = map[string]string{"code": batchExpiredCode, "message": batchExpiredMessage}
	}
	return out
}

// batchPricing is the pricing of a request at m when it is a line its
// provider ran in a batch (ForBatch at the model's provider kind). A line
// gw's runner sent is priced as the synchronous request its upstream
// billed (never less than was delivered); its event still names the batch.
// bl is the request's batch line (admission.batchLine), nil for none.
func batchPricing(bl *batchLineCtx, m *routeModel) (catalog.ParsedPricing, bool) {
	if bl == nil || !bl.native {
		return catalog.ParsedPricing{}, false
	}
	return m.pricing.ForBatch(m.kind), true
}
