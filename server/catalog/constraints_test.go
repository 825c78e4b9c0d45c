package catalog

import (
	"strings"
	"testing"
)

// constrainedDoc is a catalog of an Anthropic model that refuses sampling
// parameters and forced tool choice and is called at API version
// 2026-10-21, as a file writes it.
const constrainedDoc = `providers:
  - {id: anthropic, name: Anthropic, kind: anthropic, base_url: https://api.anthropic.com/v1}
  - {id: openai, name: OpenAI, kind: openai, base_url: https://api.openai.com/v1}
models:
  - id: anthropic/claude-fable-5-1
    provider: anthropic
    name: Fable 5.1
    context_window: 200000
    max_output_tokens: 64000
    pricing: {input_per_mtok: "3", output_per_mtok: "15", cache_read_per_mtok: "0.30", cache_write_per_mtok: "3.75"}
    modalities: [text]
    constraints: {sampling_params: false, forced_tool_choice: false, anthropic_version: "2026-10-21"}
  - id: openai/gpt-4o
    provider: openai
    name: GPT-4o
    context_window: 128000
    max_output_tokens: 16384
    pricing: {input_per_mtok: "2.50", output_per_mtok: "10", cache_read_per_mtok: "1.25", cache_write_per_mtok: "2.50"}
    modalities: [text]
    constraints: {}
`

func TestConstraintsParse(t *testing.T) {
	c, err := Parse([]byte(constrainedDoc))
	if err != nil {
		t.Fatal(err)
	}
	fable, _ := c.Model("anthropic/claude-fable-5-1")
	if !fable.RefusesSampling() || !fable.RefusesForcedToolChoice() || fable.AnthropicVersion() != "2026-10-21" {
		t.Fatalf("constraints read as %+v", fable.Constraints)
	}
	gpt, _ := c.Model("openai/gpt-4o")
	if gpt.Constraints != nil || gpt.RefusesSampling() || gpt.RefusesForcedToolChoice() || gpt.AnthropicVersion() != "" {
		t.Fatalf("empty constraints should read as none: %+v", gpt.Constraints)
	}
	// Through JSON (a bundle, an export) and back: the same catalog.
	again, err := Parse(encode(t, *c))
	if err != nil {
		t.Fatal(err)
	}
	if f, _ := again.Model(fable.ID); !f.RefusesSampling() || !f.RefusesForcedToolChoice() || f.AnthropicVersion() != "2026-10-21" {
		t.Fatalf("round trip: %+v", f.Constraints)
	}
	// A model without constraints encodes as it did before they existed.
	if b := string(encode(t, Catalog{Models: []Model{gpt}})); strings.Contains(b, "constraints") {
		t.Fatalf("unset constraints encoded: %s", b)
	}
	// Clone copies them: an edit of the copy is not the original's.
	cl := c.Clone()
	m, _ := cl.Model(fable.ID)
	m.Constraints.AnthropicVersion = "2023-06-01"
	if f, _ := c.Model(fable.ID); f.AnthropicVersion() != "2026-10-21" {
		t.Fatal("a clone shares its constraints")
	}
	yes := true
	explicit := Model{Constraints: &Constraints{SamplingParams: &yes, ForcedToolChoice: &yes}}
	if explicit.RefusesSampling() || explicit.RefusesForcedToolChoice() {
		t.Fatal("true constrains nothing")
	}
}

func TestConstraintsRefused(t *testing.T) {
	for _, tc := range []struct{ name, from, to, want string }{
		{"unknown member", "forced_tool_choice: false,", "forced_tools: false,", `unknown field "forced_tools"`},
		{"not a boolean", "sampling_params: false", "sampling_params: nope", "want a boolean"},
		{"version not a date", `anthropic_version: "2026-10-21"`, `anthropic_version: "latest"`, "is not an API version date"},
		{"version on another kind", "constraints: {}", `constraints: {anthropic_version: "2026-10-21"}`, "models[1] (openai/gpt-4o): constraints.anthropic_version is for models of kind anthropic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(constrainedDoc, tc.from, tc.to, 1)
			if doc == constrainedDoc {
				t.Fatal("the case changes nothing")
			}
			_, err := Parse([]byte(doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	// In JSON too, a boolean is a boolean.
	_, err := Parse([]byte(`{"providers":[{"id":"anthropic","name":"A","kind":"anthropic","base_url":"https://a.example/v1"}],` +
		`"models":[{"id":"anthropic/m","provider":"anthropic","name":"M","context_window":10,"max_output_tokens":5,` +
		`"pricing":{"input_per_mtok":"1","output_per_mtok":"1","cache_read_per_mtok":"1","cache_write_per_mtok":"1"},` +
		`"modalities":["text"],"constraints":{"sampling_params":"false"}}]}`))
	if err == nil || !strings.Contains(err.Error(), "want a boolean") {
		t.Fatalf("a string for a boolean: %v", err)
	}
}
