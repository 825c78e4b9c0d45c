package guardrails

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"
)

// Outcome is what a guardrail did to one request at one stage.
type Outcome string

const (
	Passed   Outcome = "passed"
	Blocked  Outcome = "blocked"
	Redacted Outcome = "redacted"
	Flagged  Outcome = "flagged"
	Errored  Outcome = "errored"
	Skipped  Outcome = "skipped"
)

// Outcomes lists the outcomes.
var Outcomes = []string{string(Passed), string(Blocked), string(Redacted), string(Flagged), string(Errored), string(Skipped)}

// rank orders outcomes: a guardrail that saw several texts in a request
// keeps the strongest. Skipped ranks over passed: a request with a part no
// guardrail could read is never recorded as passed.
func rank(o Outcome) int {
	switch o {
	case Blocked:
		return 6
	case Errored:
		return 5
	case Redacted:
		return 4
	case Flagged:
		return 3
	case Skipped:
		return 2
	case Passed:
		return 1
	}
	return 0
}

// Record is one guardrail's outcome at one stage of one request: the
// usage event's guardrails entry.
type Record struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Stage     Stage    `json:"stage"`
	Outcome   Outcome  `json:"outcome"`
	Detectors []string `json:"detectors,omitempty"`
}

// HookRequest is what a webhook detector is asked: the guardrail and the
// detector's index (the caller keeps the sealed secret by them), the URL
// and timeout, the stage and the text.
type HookRequest struct {
	GuardrailID string
	Detector    int
	URL         string
	TimeoutMS   int
	Stage       Stage
	Text        string
}

// Hook calls a webhook detector and returns the body of its 2xx answer.
// An error says why there is no answer; its text is never shown to a
// caller (HookError's Reason is).
type Hook interface {
	Call(ctx context.Context, req HookRequest) ([]byte, error)
}

// HookError is a webhook failure with a reason fit to show and record
// ("timeout", "status 500", "unreachable", "garbage answer").
type HookError struct{ Reason string }

func (e *HookError) Error() string { return "webhook " + e.Reason }

// HookAnswer is a webhook's answer: action is "pass", "block", "redact"
// or "flag"; redactions are code-point offsets into the text it was sent
// ([start, end)), with the type that names the redaction.
type HookAnswer struct {
	Action     string          `json:"action"`
	Redactions []HookRedaction `json:"redactions"`
}

// HookRedaction is one span a webhook found.
type HookRedaction struct {
	Start int    `json:"start"`
	End   int    `json:"end"`
	Type  string `json:"type"`
}

var errGarbage = &HookError{Reason: "garbage answer"}

// ParseHookAnswer reads a webhook's answer against the text it was sent:
// the matches it names (byte offsets) and whether it asks to block. An
// answer that is not the shape, names an unknown action, or a span outside
// the text is garbage: an error, honoured by on_error.
func ParseHookAnswer(body []byte, text string) (ms []Match, block bool, err error) {
	var a HookAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, false, errGarbage
	}
	switch a.Action {
	case "pass", "allow":
		return nil, false, nil
	case "block":
		block = true
	case "redact", "flag":
	default:
		return nil, false, errGarbage
	}
	// Code-point offsets to byte offsets.
	var offs []int
	if len(a.Redactions) > 0 {
		offs = make([]int, 0, len(text)+1)
		for i := range text {
			offs = append(offs, i)
		}
		offs = append(offs, len(text))
	}
	for _, r := range a.Redactions {
		if r.Start < 0 || r.End <= r.Start || r.End >= len(offs) || !typeOK(r.Type) {
			return nil, false, errGarbage
		}
		ms = append(ms, Match{Start: offs[r.Start], End: offs[r.End], Type: r.Type, Kind: KindWebhook})
	}
	if len(ms) == 0 {
		// A finding with no span: the whole text.
		ms = []Match{{Start: 0, End: len(text), Type: KindWebhook, Kind: KindWebhook}}
	}
	return ms, block, nil
}

// typeOK keeps a webhook's type name short and plain: it is written into
// texts as [REDACTED:<type>] and into records.
func typeOK(t string) bool {
	if t == "" || len(t) > 64 || !utf8.ValidString(t) {
		return false
	}
	for i := 0; i < len(t); i++ {
		if !isWordByte(t[i]) && t[i] != '.' && t[i] != '-' {
			return false
		}
	}
	return true
}

// Guardrail is a compiled spec.
type Guardrail struct {
	Spec    Spec
	finders [][]finder // by detector index; nil for a webhook
}

// Compile readies a spec for the data plane. A spec that Validate refuses
// is refused here too.
func Compile(s Spec) (*Guardrail, error) {
	if ps := Validate(s); len(ps) > 0 {
		return nil, fmt.Errorf("guardrail %s: %w", s.ID, ps[0])
	}
	g := &Guardrail{Spec: s, finders: make([][]finder, len(s.Detectors))}
	for i, d := range s.Detectors {
		fs, err := compileLocal(d)
		if err != nil {
			return nil, fmt.Errorf("guardrail %s: detectors[%d]: %s", s.ID, i, reError(err))
		}
		g.finders[i] = fs
	}
	return g, nil
}

// Applies reports whether the guardrail looks at a stage.
func (g *Guardrail) Applies(st Stage) bool { return slices.Contains(g.Spec.Stages, st) }

// Finding is what one guardrail's detectors found in one text.
type Finding struct {
	Matches []Match
	// Kinds names the detectors that found something, in detector order.
	Kinds []string
	// HookBlock: a webhook asked to block.
	HookBlock bool
	// Err is the first detector failure (a webhook's); ErrKind names it.
	Err     *HookError
	ErrKind string
}

// Inspect runs every detector of the guardrail over text. The local ones
// never fail; a webhook's failure is in Err, and what the other detectors
// found is kept.
func (g *Guardrail) Inspect(ctx context.Context, st Stage, text string, hook Hook) Finding {
	var f Finding
	for i, d := range g.Spec.Detectors {
		before := len(f.Matches)
		if d.Kind == KindWebhook {
			ms, block, err := g.callHook(ctx, hook, i, d, st, text)
			if err != nil {
				if f.Err == nil {
					f.Err, f.ErrKind = err, d.Kind
				}
				continue
			}
			f.Matches = append(f.Matches, ms...)
			f.HookBlock = f.HookBlock || block
		} else {
			for _, find := range g.finders[i] {
				f.Matches = find(text, f.Matches)
			}
		}
		if len(f.Matches) > before && !slices.Contains(f.Kinds, d.Kind) {
			f.Kinds = append(f.Kinds, d.Kind)
		}
	}
	return f
}

func (g *Guardrail) callHook(ctx context.Context, hook Hook, i int, d DetectorSpec, st Stage, text string) ([]Match, bool, *HookError) {
	if hook == nil {
		return nil, false, &HookError{Reason: "unreachable"}
	}
	timeout := d.TimeoutMS
	if timeout == 0 {
		timeout = DefaultTimeoutMS
	}
	body, err := hook.Call(ctx, HookRequest{GuardrailID: g.Spec.ID, Detector: i, URL: d.URL, TimeoutMS: timeout, Stage: st, Text: text})
	if err != nil {
		return nil, false, hookError(err)
	}
	ms, block, err := ParseHookAnswer(body, text)
	if err != nil {
		return nil, false, hookError(err)
	}
	return ms, block, nil
}

// hookError keeps only a reason fit to show: a HookError's, or timeout
// and unreachable. The underlying error's text is dropped.
func hookError(err error) *HookError {
	var he *HookError
	switch {
	case errors.As(err, &he):
		return he
	case errors.Is(err, context.DeadlineExceeded):
		return &HookError{Reason: "timeout"}
	}
	return &HookError{Reason: "unreachable"}
}
