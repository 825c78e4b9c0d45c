package guardrails

import (
	"context"
	"fmt"
	"slices"
)

// Block says which guardrail stopped a request and why, in words fit to
// answer a caller: the guardrail's name and id, the detector's kind and
// the type it found (or why it could not run). Never the matched text.
type Block struct {
	GuardrailID string
	Guardrail   string
	Stage       Stage
	Detector    string
	Type        string
	// Failed: the guardrail could not run and fails closed; Reason says why.
	Failed bool
	Reason string
}

// Message is the refusal's text.
func (b *Block) Message() string {
	if b.Failed {
		return fmt.Sprintf("guardrail %q could not inspect the %s (detector %s: %s) and fails closed", b.Guardrail, b.Stage.noun(), b.Detector, b.Reason)
	}
	if b.Type != "" && b.Type != b.Detector {
		return fmt.Sprintf("the %s was blocked by guardrail %q (detector %s: %s)", b.Stage.noun(), b.Guardrail, b.Detector, b.Type)
	}
	return fmt.Sprintf("the %s was blocked by guardrail %q (detector %s)", b.Stage.noun(), b.Guardrail, b.Detector)
}

func (s Stage) noun() string {
	if s == StageOutput {
		return "answer"
	}
	return "request"
}

// Set is the guardrails that apply to one request (the organization's and
// the workspace's, in order).
type Set []*Guardrail

// For is the part of the set that looks at a stage.
func (s Set) For(st Stage) Set {
	var out Set
	for _, g := range s {
		if g.Applies(st) {
			out = append(out, g)
		}
	}
	return out
}

// Run checks the texts of one request at one stage through a set, keeping
// each guardrail's strongest outcome across them.
type Run struct {
	set   Set
	stage Stage
	hook  Hook
	recs  []Record
	block *Block
}

// NewRun starts checking a stage with the guardrails of set that apply.
func NewRun(set Set, st Stage, hook Hook) *Run {
	r := &Run{set: set.For(st), stage: st, hook: hook}
	r.recs = make([]Record, len(r.set))
	for i, g := range r.set {
		r.recs[i] = Record{ID: g.Spec.ID, Name: g.Spec.Name, Stage: st, Outcome: Passed}
	}
	return r
}

// Empty reports whether no guardrail applies.
func (r *Run) Empty() bool { return r == nil || len(r.set) == 0 }

// Blocked is the block that stopped the run, or nil.
func (r *Run) Blocked() *Block {
	if r == nil {
		return nil
	}
	return r.block
}

func (r *Run) note(i int, o Outcome, kinds ...string) {
	rec := &r.recs[i]
	if rank(o) > rank(rec.Outcome) {
		rec.Outcome = o
	}
	for _, k := range kinds {
		if !slices.Contains(rec.Detectors, k) {
			rec.Detectors = append(rec.Detectors, k)
		}
	}
}

// Text checks one text and returns it as it may go on (redacted where a
// guardrail redacts). After a block it returns "" and true, and every
// later call does the same.
func (r *Run) Text(ctx context.Context, text string) (string, bool) {
	if r.Empty() {
		return text, false
	}
	if r.block != nil {
		return "", true
	}
	for i, g := range r.set {
		f := g.Inspect(ctx, r.stage, text, r.hook)
		if f.Err != nil {
			r.note(i, Errored, f.ErrKind)
			if g.Spec.OnError == FailClosed {
				r.block = &Block{GuardrailID: g.Spec.ID, Guardrail: g.Spec.Name, Stage: r.stage, Detector: f.ErrKind, Failed: true, Reason: f.Err.Reason}
				return "", true
			}
		}
		if len(f.Matches) == 0 {
			continue
		}
		if g.Spec.Action == ActionBlock || f.HookBlock {
			first := merge(append([]Match(nil), f.Matches...))[0]
			r.note(i, Blocked, f.Kinds...)
			r.block = &Block{GuardrailID: g.Spec.ID, Guardrail: g.Spec.Name, Stage: r.stage, Detector: first.Kind, Type: first.Type}
			return "", true
		}
		if g.Spec.Action == ActionRedact {
			text = Redact(text, f.Matches)
			r.note(i, Redacted, f.Kinds...)
			continue
		}
		r.note(i, Flagged, f.Kinds...)
	}
	return text, false
}

// Skip records a part of the request no guardrail can read (an image, an
// audio input): each guardrail of the run says skipped unless it has a
// stronger outcome.
func (r *Run) Skip() {
	if r.Empty() {
		return
	}
	for i := range r.recs {
		r.note(i, Skipped)
	}
}

// Records is the run's outcomes, one per guardrail that applied.
func (r *Run) Records() []Record {
	if r.Empty() {
		return nil
	}
	return slices.Clone(r.recs)
}

// Check is the input check of one text through a set, for a surface that
// has a single text (an MCP tools/call's arguments): the text as it may go
// on, the block if any, and the records.
func Check(ctx context.Context, set Set, st Stage, hook Hook, text string) (string, *Block, []Record) {
	r := NewRun(set, st, hook)
	out, _ := r.Text(ctx, text)
	return out, r.Blocked(), r.Records()
}
