package providers

import (
	"encoding/json"

	"github.com/gw-gateway/gw/server/catalog"
)

// The 2026 APIs refuse, per model, request members every earlier model
// took (catalog.Constraints): Anthropic's API version 2026-10-21 and the
// models after Claude Opus 4.7 answer 400 to temperature, top_p and top_k,
// and some models refuse a forced tool choice. A request is adapted to the
// model actually called, for each route anew (a fallback to another model
// gets its own adaptation): the decision is here, pure; the data plane
// applies it, names it in x-gw-dropped-params, or refuses the request
// under strict_parameters.

// The request shapes an adaptation reads, by the dialect whose members
// they are.
const (
	ShapeChat      = "chat"      // Chat Completions, and every translated request
	ShapeResponses = "responses" // a Responses request forwarded as sent
	ShapeMessages  = "messages"  // a Messages request forwarded as sent
)

// samplingMembers are the members a model refusing sampling parameters
// does not get, in the order they are named.
var samplingMembers = []string{"temperature", "top_p", "top_k"}

// Adaptation is what a request needs changed for the model it is sent to.
type Adaptation struct {
	// Dropped are the sampling members the request sets and the model
	// refuses, in samplingMembers' order.
	Dropped []string
	// ToolChoice, when set, is the tool_choice sent in place of the
	// forced one the model refuses: auto, in the request's shape.
	ToolChoice json.RawMessage
}

// Empty reports whether the request goes as it is.
func (a Adaptation) Empty() bool { return len(a.Dropped) == 0 && a.ToolChoice == nil }

// Params names every member adapted, dropped ones first, for
// x-gw-dropped-params and a strict_parameters refusal.
func (a Adaptation) Params() []string {
	out := append([]string(nil), a.Dropped...)
	if a.ToolChoice != nil {
		out = append(out, "tool_choice")
	}
	return out
}

// Edits are the adaptation as edits of a request forwarded in its own
// dialect (NativeRequest.Edits).
func (a Adaptation) Edits() []Edit {
	var out []Edit
	for _, name := range a.Dropped {
		out = append(out, removed(name))
	}
	if a.ToolChoice != nil {
		out = append(out, setTo("tool_choice", a.ToolChoice))
	}
	return out
}

// Adapt decides what a request of shape, given by its top-level members,
// needs changed for model m. A null member is as good as absent and is
// left alone.
func Adapt(members Members, shape string, m catalog.Model) Adaptation {
	var a Adaptation
	if m.RefusesSampling() {
		for _, name := range samplingMembers {
			if raw, ok := members.Get(name); ok && !isNull(raw) {
				a.Dropped = append(a.Dropped, name)
			}
		}
	}
	if m.RefusesForcedToolChoice() {
		if raw, ok := members.Get("tool_choice"); ok && !isNull(raw) {
			a.ToolChoice = unforced(raw, shape)
		}
	}
	return a
}

// unforced is the tool choice that leaves the model free where raw forces
// a tool, or nil where raw forces none: Anthropic's any and tool become
// auto (keeping disable_parallel_tool_use); OpenAI's required, a named
// function, custom or hosted tool become auto, and allowed_tools its own
// mode auto (the tools it allows stay the only ones allowed).
func unforced(raw json.RawMessage, shape string) json.RawMessage {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if shape != ShapeMessages && s == "required" {
			return json.RawMessage(`"auto"`)
		}
		return nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return nil
	}
	var typ string
	_ = json.Unmarshal(obj["type"], &typ)
	if shape == ShapeMessages {
		if typ != "any" && typ != "tool" {
			return nil
		}
		out := map[string]json.RawMessage{"type": json.RawMessage(`"auto"`)}
		if d, ok := obj["disable_parallel_tool_use"]; ok {
			out["disable_parallel_tool_use"] = d
		}
		return mustMarshal(out)
	}
	if typ != "allowed_tools" {
		// Every other object names the one tool to call.
		return json.RawMessage(`"auto"`)
	}
	// Chat Completions nests the mode in allowed_tools; Responses has it
	// beside the type.
	if inner, ok := obj["allowed_tools"]; ok {
		var nested map[string]json.RawMessage
		if json.Unmarshal(inner, &nested) != nil || nested == nil || !isRequired(nested["mode"]) {
			return nil
		}
		nested["mode"] = json.RawMessage(`"auto"`)
		obj["allowed_tools"] = mustMarshal(nested)
		return mustMarshal(obj)
	}
	if !isRequired(obj["mode"]) {
		return nil
	}
	obj["mode"] = json.RawMessage(`"auto"`)
	return mustMarshal(obj)
}

func isRequired(raw json.RawMessage) bool {
	var s string
	return json.Unmarshal(raw, &s) == nil && s == "required"
}

// Adapted is the request with the adaptation applied, for an adapter
// that translates it (a chat request); r is not changed.
func (r *ChatRequest) Adapted(a Adaptation) *ChatRequest {
	if a.Empty() {
		return r
	}
	c := *r
	c.Members = r.Members.Clone()
	for _, name := range a.Dropped {
		c.Members.Delete(name)
	}
	if a.ToolChoice != nil {
		c.Members.Set("tool_choice", a.ToolChoice)
		tc := ToolChoice{Mode: "auto"}
		if r.ToolChoice != nil && r.ToolChoice.Mode == "allowed_tools" {
			// The allowed tools' mode is auto now; the choice is still
			// theirs.
			tc = *r.ToolChoice
		}
		c.ToolChoice = &tc
	}
	// Written from its members (OpenAI.body), not over the body that has
	// the refused ones.
	c.body = nil
	return &c
}
