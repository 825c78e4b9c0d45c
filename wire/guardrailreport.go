package wire

import "time"

// GuardrailReport counts, over a report's period, what each guardrail did
// at each stage (issue 32): one row per guardrail and stage, with how many
// requests it passed, blocked, redacted, flagged, errored on or skipped,
// and which detectors matched how often.
type GuardrailReport struct {
	Period UsagePeriod          `json:"period"`
	Rows   []GuardrailReportRow `json:"rows"`
	// UpdatedAt is when the counts were read.
	UpdatedAt time.Time `json:"updated_at"`
}

// GuardrailReportRow is one guardrail at one stage. Name is the
// guardrail's current name, or the one its events recorded when it has
// since been deleted (Deleted).
type GuardrailReportRow struct {
	GuardrailID string `json:"guardrail_id"`
	Name        string `json:"name"`
	Deleted     bool   `json:"deleted"`
	Stage       string `json:"stage" jsonschema:"enum=input,enum=output"`
	// Requests is how many requests the guardrail was recorded on at this
	// stage: the sum of the outcomes.
	Requests int64 `json:"requests"`
	Passed   int64 `json:"passed"`
	Blocked  int64 `json:"blocked"`
	Redacted int64 `json:"redacted"`
	Flagged  int64 `json:"flagged"`
	Errored  int64 `json:"errored"`
	Skipped  int64 `json:"skipped"`
	// Detectors counts, per detector name, the requests on which it was
	// named (the detectors that matched, or that failed).
	Detectors map[string]int64 `json:"detectors"`
}
