package providers

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// What coding agents send that a plain translation would refuse (issue
// 19): Claude Code's role "system" turns inside messages, and the tools an
// upstream of another vendor cannot run (Responses' hosted tools, Codex's
// namespace tools, Messages' server tools). Each function here does one
// such thing, so the translators stay small.

// MessagesRequired checks the members every Messages request must have,
// whatever upstream it goes to: a native upstream would refuse the request
// anyway, after gw had spent a call on it.
func MessagesRequired(members Members) error {
	for _, name := range []string{"model", "max_tokens", "messages"} {
		if raw, ok := members.Get(name); !ok || isNull(raw) {
			return invalid(name, "missing_required_parameter", "%s: Field required", name)
		}
	}
	if valueKind(bytes.TrimSpace(members.Value("messages"))) != "array" {
		return invalid("messages", "invalid_type", "messages: Input should be a valid list")
	}
	if n, err := strconv.ParseInt(string(bytes.TrimSpace(members.Value("max_tokens"))), 10, 64); err != nil || n < 1 {
		return invalid("max_tokens", "invalid_value", "max_tokens: Input should be an integer greater than or equal to 1")
	}
	return nil
}

// ResponsesRequired checks the members every Responses request must have
// through gw: model, and input, since gw keeps no responses for
// previous_response_id, conversation or prompt to stand in for it.
func ResponsesRequired(members Members) error {
	for _, name := range []string{"model", "input"} {
		if raw, ok := members.Get(name); !ok || isNull(raw) {
			return invalid(name, "missing_required_parameter", "Missing required parameter: '%s'.", name)
		}
	}
	return nil
}

// systemTurnRaw translates a role "system" turn, which Claude Code sends
// among the messages, into a chat system message: its text, text blocks
// joined by blank lines.
func systemTurnRaw(content []byte, param string) ([]rope, error) {
	text, err := messagesSystem(content)
	if err != nil {
		return nil, invalid(param+".content", "invalid_type", "%s.content: Input should be a string or a list of text blocks", param)
	}
	return []rope{{mustMarshal(map[string]any{"role": "system", "content": text})}}, nil
}

// FoldSystemTurns returns the edits (of NativeRequest.Edits) that move
// the role "system" turns of messages into system (as text blocks, after
// the system prompt's own), since the Messages API itself takes no system
// turns; none when there are none. The turns kept and the blocks moved are
// written as sent, not copied. cache_control on a system turn's blocks
// travels with them.
func FoldSystemTurns(members Members) []Edit {
	var kept, system []rope
	arrayElements(bytes.TrimSpace(members.Value("messages")), func(turn []byte) {
		// The role alone is decoded: a turn's content may be most of the
		// body.
		var role string
		if json.Unmarshal(memberValue(turn, "role"), &role) == nil && role == "system" {
			system = append(system, systemBlocks(memberValue(turn, "content"))...)
			return
		}
		kept = append(kept, rope{turn})
	})
	if len(system) == 0 {
		return nil
	}
	head := systemBlocks(members.Value("system"))
	return []Edit{{Name: "system", Value: rawArray(append(head, system...))}, {Name: "messages", Value: rawArray(kept)}}
}

// systemBlocks are a system prompt's (or system turn's) text blocks: a
// string becomes one block.
func systemBlocks(raw json.RawMessage) []rope {
	raw = bytes.TrimSpace(raw)
	switch valueKind(raw) {
	case "string":
		return []rope{rawObject(`{"type":"text","text":`, rope{raw}, `}`)}
	case "array":
		var out []rope
		arrayElements(raw, func(b []byte) { out = append(out, rope{b}) })
		return out
	}
	return nil
}

// DroppedTool is a tool a translation leaves out: Name is what the
// x-gw-dropped-tools header says (a hosted tool's type, a namespace's
// name), Param where the request has it.
type DroppedTool struct {
	Name, Param string
}

// ResponsesDroppedTools lists the tools of a Responses request that only
// OpenAI runs (web_search, file_search, code_interpreter, …), at the top
// or inside a namespace (Codex's, in tools or in an additional_tools input
// item): a translation to Chat Completions leaves them out. Functions and
// custom tools, in namespaces or not, are translated
// (ResponsesTranslatedTools).
func ResponsesDroppedTools(members Members) []DroppedTool {
	var out []DroppedTool
	responsesToolLists(members, func(raw json.RawMessage, param string) {
		out = append(out, droppedTools(raw, param, responsesExpressible)...)
	})
	return out
}

// responsesExpressible are the tool types a translation keeps.
func responsesExpressible(typ string) bool { return typ == "function" || typ == "custom" }

// responsesToolLists calls f with each list of tools of a Responses
// request: tools, each additional_tools input item's, and each
// namespace's inside them, param the format of their members' names.
func responsesToolLists(members Members, f func(raw json.RawMessage, param string)) {
	var walk func(raw json.RawMessage, param string)
	walk = func(raw json.RawMessage, param string) {
		f(raw, param+".type")
		i := 0
		arrayElements(bytes.TrimSpace(raw), func(tool []byte) {
			if valueKind(tool) == "object" && string(bytes.TrimSpace(memberValue(tool, "type"))) == `"namespace"` {
				walk(memberValue(tool, "tools"), sprintf(param, i)+".tools[%d]")
			}
			i++
		})
	}
	walk(members.Value("tools"), "tools[%d]")
	i := 0
	arrayElements(bytes.TrimSpace(members.Value("input")), func(item []byte) {
		if valueKind(item) == "object" && string(bytes.TrimSpace(memberValue(item, "type"))) == `"additional_tools"` {
			walk(memberValue(item, "tools"), "input["+strconv.Itoa(i)+"].tools[%d]")
		}
		i++
	})
}

// ResponsesTranslatedTools lists what a translation to Chat Completions
// sends in another form, for x-gw-translated-tools: each namespace whose
// tools become plain functions (by its name), and each custom tool, which
// becomes a function of one string argument (by its name).
func ResponsesTranslatedTools(members Members) []string {
	var out []string
	responsesToolLists(members, func(raw json.RawMessage, _ string) {
		arrayElements(bytes.TrimSpace(raw), func(b []byte) {
			var t struct {
				Type string `json:"type"`
				Name string `json:"name"`
			}
			if json.Unmarshal(b, &t) == nil && (t.Type == "namespace" || t.Type == "custom") && t.Name != "" {
				out = append(out, t.Name)
			}
		})
	})
	return out
}

// ResponsesCustomTools names the custom tools of a Responses request,
// whose calls a translated answer writes as custom_tool_call items; nil
// when there are none.
func ResponsesCustomTools(members Members) map[string]bool {
	var out map[string]bool
	responsesToolLists(members, func(raw json.RawMessage, _ string) {
		arrayElements(bytes.TrimSpace(raw), func(b []byte) {
			var t struct {
				Type string `json:"type"`
				Name string `json:"name"`
			}
			if json.Unmarshal(b, &t) == nil && t.Type == "custom" && t.Name != "" {
				if out == nil {
					out = map[string]bool{}
				}
				out[t.Name] = true
			}
		})
	})
	return out
}

// MessagesDroppedTools lists the server tools of a Messages request
// (web_search_20250305, …), which only Anthropic runs.
func MessagesDroppedTools(members Members) []DroppedTool {
	return droppedTools(members.Value("tools"), "tools.%d.type", func(typ string) bool { return typ == "" || typ == "custom" })
}

func droppedTools(raw json.RawMessage, param string, kept func(string) bool) []DroppedTool {
	var out []DroppedTool
	i := 0
	arrayElements(bytes.TrimSpace(raw), func(b []byte) {
		var t struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}
		if json.Unmarshal(b, &t) == nil && !kept(t.Type) && t.Type != "namespace" {
			out = append(out, DroppedTool{Name: t.Type, Param: sprintf(param, i)})
		}
		i++
	})
	return out
}

func sprintf(format string, i int) string {
	return string(bytes.Replace([]byte(format), []byte("%d"), []byte(strconv.Itoa(i)), 1))
}
