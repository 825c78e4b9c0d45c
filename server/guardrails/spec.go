// Package guardrails is the pure core of gw's guardrails (issue 32): the
// detectors (pii, secrets, regex, keywords, and the webhook's answer),
// what a guardrail does with what they find (block, redact, flag), how
// its outcome is recorded, and a streaming redactor with a hold-back
// window. It does no I/O: the webhook is called through the Hook a caller
// passes (server/guardrails/webhook dials through server/egress).
//
// No text this package returns as an error, a refusal or a record ever
// contains the text a detector matched: a refusal names the guardrail and
// the detector, never what it found.
package guardrails

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
)

// Stage is where a guardrail looks: what the caller sends, or the answer.
type Stage string

const (
	StageInput  Stage = "input"
	StageOutput Stage = "output"
)

// Stages lists the stages (the OpenAPI enum reads it).
var Stages = []string{string(StageInput), string(StageOutput)}

// Action is what a guardrail does with a match.
type Action string

const (
	ActionBlock  Action = "block"
	ActionRedact Action = "redact"
	ActionFlag   Action = "flag"
)

// Actions lists the actions.
var Actions = []string{string(ActionBlock), string(ActionRedact), string(ActionFlag)}

// OnError is what a guardrail does when a detector cannot give an answer
// (a webhook that times out, errors or answers garbage).
type OnError string

const (
	FailClosed OnError = "fail_closed"
	FailOpen   OnError = "fail_open"
)

// OnErrors lists the failure modes.
var OnErrors = []string{string(FailClosed), string(FailOpen)}

// Detector kinds.
const (
	KindPII      = "pii"
	KindSecrets  = "secrets"
	KindRegex    = "regex"
	KindKeywords = "keywords"
	KindWebhook  = "webhook"
)

// Kinds lists the detector kinds.
var Kinds = []string{KindPII, KindSecrets, KindRegex, KindKeywords, KindWebhook}

// PII types.
const (
	PIIEmail      = "email"
	PIIPhone      = "phone"
	PIICreditCard = "credit_card"
	PIIIBAN       = "iban"
	PIIUSSSN      = "us_ssn"
	PIIIPAddress  = "ip_address"
)

// PIITypes lists the pii types a detector may name.
var PIITypes = []string{PIIEmail, PIIPhone, PIICreditCard, PIIIBAN, PIIUSSSN, PIIIPAddress}

// Limits on what a guardrail may hold (a setting that cannot work is
// refused when saved).
const (
	MaxDetectors      = 16
	MaxPatterns       = 64
	MaxPatternLen     = 1024
	MaxWords          = 1024
	MaxWordLen        = 256
	MaxWebhookTimeout = 30_000
	DefaultTimeoutMS  = 2_000
)

// DetectorSpec is one detector as saved. Kind discriminates; the other
// fields belong to one kind each. The webhook's signing secret is not
// here: it is sealed, and reaches the Hook separately.
type DetectorSpec struct {
	Kind      string   `json:"kind"`
	Types     []string `json:"types,omitempty"`
	Patterns  []string `json:"patterns,omitempty"`
	Words     []string `json:"words,omitempty"`
	URL       string   `json:"url,omitempty"`
	TimeoutMS int      `json:"timeout_ms,omitempty"`
}

// Spec is a guardrail as the data plane receives it.
type Spec struct {
	ID        string         `json:"id"`
	Name      string         `json:"name"`
	Stages    []Stage        `json:"stages"`
	Detectors []DetectorSpec `json:"detectors"`
	Action    Action         `json:"action"`
	OnError   OnError        `json:"on_error"`
}

// Problem is one thing wrong with a spec, with the field it is about
// (JSON path from the guardrail's body, e.g. "detectors[1].patterns[0]").
type Problem struct {
	Field   string
	Message string
}

func (p Problem) Error() string { return p.Field + ": " + p.Message }

// Validate reports what is wrong with a spec's stages, detectors, action
// and on_error (the name and target are the resource's, checked by the
// backend). Every regex is compiled as the data plane will compile it.
func Validate(s Spec) []Problem {
	var ps []Problem
	add := func(field, format string, args ...any) {
		ps = append(ps, Problem{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if len(s.Stages) == 0 {
		add("stages", "at least one of input, output")
	}
	for i, st := range s.Stages {
		if !slices.Contains(Stages, string(st)) {
			add(fmt.Sprintf("stages[%d]", i), "must be input or output")
		} else if slices.Index(s.Stages, st) != i {
			add(fmt.Sprintf("stages[%d]", i), "is repeated")
		}
	}
	if !slices.Contains(Actions, string(s.Action)) {
		add("action", "must be block, redact or flag")
	}
	if !slices.Contains(OnErrors, string(s.OnError)) {
		add("on_error", "must be fail_closed or fail_open")
	}
	if len(s.Detectors) == 0 {
		add("detectors", "at least one detector")
	}
	if len(s.Detectors) > MaxDetectors {
		add("detectors", "at most %d detectors", MaxDetectors)
	}
	for i, d := range s.Detectors {
		f := fmt.Sprintf("detectors[%d]", i)
		if d.Kind != KindPII && len(d.Types) > 0 {
			add(f+".types", "only a pii detector has types")
		}
		if d.Kind != KindRegex && len(d.Patterns) > 0 {
			add(f+".patterns", "only a regex detector has patterns")
		}
		if d.Kind != KindKeywords && len(d.Words) > 0 {
			add(f+".words", "only a keywords detector has words")
		}
		if d.Kind != KindWebhook && (d.URL != "" || d.TimeoutMS != 0) {
			add(f+".url", "only a webhook detector has url and timeout_ms")
		}
		switch d.Kind {
		case KindPII:
			if len(d.Types) == 0 {
				add(f+".types", "at least one of %s", strings.Join(PIITypes, ", "))
			}
			for j, t := range d.Types {
				if !slices.Contains(PIITypes, t) {
					add(fmt.Sprintf("%s.types[%d]", f, j), "must be one of %s", strings.Join(PIITypes, ", "))
				}
			}
		case KindSecrets:
		case KindRegex:
			if len(d.Patterns) == 0 {
				add(f+".patterns", "at least one pattern")
			}
			if len(d.Patterns) > MaxPatterns {
				add(f+".patterns", "at most %d patterns", MaxPatterns)
			}
			for j, p := range d.Patterns {
				pf := fmt.Sprintf("%s.patterns[%d]", f, j)
				switch {
				case p == "":
					add(pf, "is empty")
				case len(p) > MaxPatternLen:
					add(pf, "longer than %d bytes", MaxPatternLen)
				default:
					re, err := regexp.Compile(p)
					if err != nil {
						add(pf, "does not compile as RE2: %s", reError(err))
					} else if re.MatchString("") {
						add(pf, "matches the empty string")
					}
				}
			}
		case KindKeywords:
			if len(d.Words) == 0 {
				add(f+".words", "at least one word")
			}
			if len(d.Words) > MaxWords {
				add(f+".words", "at most %d words", MaxWords)
			}
			for j, w := range d.Words {
				if strings.TrimSpace(w) == "" || len(w) > MaxWordLen {
					add(fmt.Sprintf("%s.words[%d]", f, j), "must be 1 to %d bytes, not blank", MaxWordLen)
				}
			}
		case KindWebhook:
			if !strings.HasPrefix(d.URL, "https://") && !strings.HasPrefix(d.URL, "http://") {
				add(f+".url", "must be an http or https URL")
			}
			if d.TimeoutMS < 0 || d.TimeoutMS > MaxWebhookTimeout {
				add(f+".timeout_ms", "must be 0 (the default, %d) to %d", DefaultTimeoutMS, MaxWebhookTimeout)
			}
		default:
			add(f+".kind", "must be one of %s", strings.Join(Kinds, ", "))
		}
	}
	return ps
}

// reError is regexp's complaint without the pattern it quotes back (the
// caller has the pattern; the message names what is wrong with it).
func reError(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		if se.Expr != "" {
			return string(se.Code) + ": `" + se.Expr + "`"
		}
		return string(se.Code)
	}
	return "invalid pattern"
}
