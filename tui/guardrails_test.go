package tui

import (
	"context"
	"errors"
	"testing"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// guardSource is a fakeSource with a guardrail report.
type guardSource struct {
	*fakeSource
	rows []wire.GuardrailReportRow
	err  error
}

func (g *guardSource) Guardrails(_ context.Context, q client.UsageQuery) (wire.GuardrailReport, error) {
	if err := g.record("guardrails", q); err != nil {
		return wire.GuardrailReport{}, err
	}
	return wire.GuardrailReport{Rows: g.rows}, g.err
}

func guardRow(name, stage string, requests, blocked, redacted, errored int64) wire.GuardrailReportRow {
	return wire.GuardrailReportRow{GuardrailID: name + "-id", Name: name, Stage: stage, Requests: requests, Blocked: blocked,
		Redacted: redacted, Errored: errored, Passed: requests - blocked - redacted - errored}
}

// The dashboard counts blocks and redactions per guardrail (issue 32): a
// panel with the period's totals and a line per guardrail and stage, read
// with the dashboard's query; it follows the period and the filters, and
// shows nothing while no guardrail applied to a request.
func TestGuardrailsPanel(t *testing.T) {
	fake := newFake()
	src := &guardSource{fakeSource: fake, rows: []wire.GuardrailReportRow{
		guardRow("no-secrets", "input", 400, 37, 0, 2),
		guardRow("pii", "input", 400, 1, 12, 0),
		guardRow("pii", "output", 390, 0, 3, 0),
		guardRow("toxicity", "output", 390, 0, 0, 0),
	}}
	d := start(t, src, fake, Options{})
	if q := fake.lastCall(t, "guardrails"); q.Period != "30d" {
		t.Fatalf("the panel's query: %+v", q)
	}
	d.mustShow("Guardrails · 38 blocked · 15 redacted · 2 errored",
		"no-secrets  input   37 blocked · 0 redacted · 2 errored of 400",
		"pii         output  0 blocked · 3 redacted of 390",
		"… 1 more: gw usage guardrails lists them all")
	d.mustNotShow("toxicity")

	d.key("7")
	d.key("2") // 7d
	if q := fake.lastCall(t, "guardrails"); q.Period != "7d" {
		t.Fatalf("the panel follows the period: %+v", q)
	}
	d.key("enter") // filter by the first model
	if q := fake.lastCall(t, "guardrails"); q.ModelID != "openai/gpt-4o" {
		t.Fatalf("the panel follows the filters: %+v", q)
	}

	// A failed refresh keeps the rows on screen.
	src.err = errors.New("boom")
	d.key("r")
	d.mustShow("no-secrets  input")

	src.rows, src.err = nil, nil
	d.key("r")
	d.mustNotShow("Guardrails")

	src.err = errors.New("boom")
	d.key("r")
	d.mustShow("Guardrails  ⚠ boom")
}

// A source without guardrail reports (a fake, an older server) has no
// panel and asks nothing.
func TestNoGuardrailsPanelWithoutSource(t *testing.T) {
	d := startFake(t, Options{})
	for _, c := range d.src.calls {
		if c.kind == "guardrails" {
			t.Fatalf("asked a source without guardrails: %+v", c)
		}
	}
	d.mustNotShow("Guardrails")
}
