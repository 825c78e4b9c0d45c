package providers

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"
)

// This file translates between OpenAI's Responses API, as a client speaks
// it to /inf/v1/responses, and Chat Completions. A Responses request bound
// for api.openai.com is forwarded as sent instead (OpenAIResponses); look-
// alike servers and Anthropic get the translation. What it keeps and drops
// is listed in docs/dialects.md.

// ResponsesKnownMembers are the request members of the Responses API; a
// strict_parameters policy refuses any other.
var ResponsesKnownMembers = []string{
	"background", "conversation", "include", "input", "instructions", "max_output_tokens", "max_tool_calls",
	"metadata", "model", "parallel_tool_calls", "previous_response_id", "prompt", "prompt_cache_key",
	"prompt_cache_options", "reasoning", "safety_identifier", "service_tier", "store", "stream", "stream_options", "temperature", "text",
	"tool_choice", "tools", "top_logprobs", "top_p", "truncation", "user",
}

// responsesDropped are the members the translation leaves out; a
// strict_parameters policy refuses them instead.
var responsesDropped = []string{"include", "max_tool_calls", "metadata", "prompt_cache_key", "safety_identifier",
	"service_tier", "stream_options", "top_logprobs", "truncation"}

// ResponsesUnknown lists, sorted, the members a strict_parameters policy
// refuses: unknown ones, and with translate those the translation drops.
func ResponsesUnknown(members Members, translate bool) []string {
	var out []string
	for _, mb := range members {
		name, raw := mb.Name, mb.Value
		if !slices.Contains(ResponsesKnownMembers, name) || (translate && slices.Contains(responsesDropped, name) && !isNull(raw)) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// CheckResponsesState refuses what needs server-side state gw does not
// keep: stored responses and conversations. Forwarded and translated
// requests alike are refused, so a request's fate never depends on which
// model of a fallback chain answers it.
func CheckResponsesState(members Members) error {
	for _, name := range []string{"previous_response_id", "conversation", "prompt"} {
		if raw, ok := members.Get(name); ok && !isNull(raw) {
			return invalid(name, "unsupported_parameter",
				"'%s' needs responses stored by the gateway, which gw does not do; send the whole conversation in 'input' instead.", name)
		}
	}
	if raw, ok := members.Get("store"); ok && string(bytes.TrimSpace(raw)) == "true" {
		return invalid("store", "unsupported_value", "gw does not store responses; send 'store': false, or leave it out.")
	}
	if raw, ok := members.Get("background"); ok && string(bytes.TrimSpace(raw)) == "true" {
		return invalid("background", "unsupported_value", "Background responses need stored responses, which gw does not keep.")
	}
	return nil
}

// responsesTool is a tool of a Responses request: a function, a custom
// tool (free-form input, with an optional grammar), a namespace of them
// (Codex), or a hosted tool.
type responsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
	Format      *struct {
		Type       string `json:"type"`
		Syntax     string `json:"syntax"`
		Definition string `json:"definition"`
	} `json:"format"`
	Tools []responsesTool `json:"tools"`
}

type responsesRequest struct {
	Model           string          `json:"model"`
	Instructions    string          `json:"instructions"`
	Stream          bool            `json:"stream"`
	MaxOutputTokens *int64          `json:"max_output_tokens"`
	Temperature     json.RawMessage `json:"temperature"`
	TopP            json.RawMessage `json:"top_p"`
	User            string          `json:"user"`
	ParallelTools   *bool           `json:"parallel_tool_calls"`
	Tools           []responsesTool `json:"tools"`
	ToolChoice      json.RawMessage `json:"tool_choice"`
	Text            *struct {
		Format *struct {
			Type   string          `json:"type"`
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
			Strict *bool           `json:"strict"`
		} `json:"format"`
	} `json:"text"`
	Reasoning *struct {
		Effort string `json:"effort"`
	} `json:"reasoning"`
	PromptCacheOptions json.RawMessage `json:"prompt_cache_options"`
}

// ResponsesToChat translates a Responses request body into a Chat
// Completions request body.
func ResponsesToChat(body []byte) ([]byte, error) {
	members, err := ParseObject(body)
	if err != nil {
		return nil, err
	}
	t := &responsesToChat{input: members.Value("input")}
	if err := json.Unmarshal(body, &t.req); err != nil {
		return nil, invalid("", "invalid_request", "The request body is not a Responses request: %s", err.Error())
	}
	if t.req.Model == "" {
		return nil, invalid("model", "missing_required_parameter", "Missing required parameter: 'model'.")
	}
	return t.translate(members.Value("input"))
}

// responsesToChat is one Responses request on its way to Chat
// Completions: the small members decoded, and the Chat members written
// so far. The input, which holds the bulk, is read from the body in place
// (translate_responses_raw.go).
type responsesToChat struct {
	req   responsesRequest
	input json.RawMessage
	out   map[string]any
}

func (t *responsesToChat) translate(input json.RawMessage) ([]byte, error) {
	t.out = map[string]any{"model": t.req.Model}
	t.sampling()
	msgs, err := t.messages(input)
	if err != nil {
		return nil, err
	}
	for _, step := range []func() error{t.tools, t.toolChoice, t.format} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	if r := t.req.Reasoning; r != nil && r.Effort != "" {
		t.out["reasoning_effort"] = r.Effort
	}
	if o := t.req.PromptCacheOptions; len(o) > 0 && !isNull(o) {
		// The same member in Chat Completions.
		t.out["prompt_cache_options"] = o
	}
	// The small members through encoding/json; the messages, which hold
	// the bulk, spliced in after them.
	head, err := json.Marshal(t.out)
	if err != nil {
		return nil, err
	}
	return rawObject(string(head[:len(head)-1])+`,"messages":`, rawArray(msgs), `}`).bytes(), nil
}

// sampling carries the members that shape sampling and the request's
// identity across as they are.
func (t *responsesToChat) sampling() {
	req := t.req
	if req.Stream {
		t.out["stream"] = true
	}
	if req.MaxOutputTokens != nil {
		t.out["max_completion_tokens"] = *req.MaxOutputTokens
	}
	if len(req.Temperature) > 0 && !isNull(req.Temperature) {
		t.out["temperature"] = req.Temperature
	}
	if len(req.TopP) > 0 && !isNull(req.TopP) {
		t.out["top_p"] = req.TopP
	}
	if req.User != "" {
		t.out["user"] = req.User
	}
	if req.ParallelTools != nil {
		t.out["parallel_tool_calls"] = *req.ParallelTools
	}
}

// messages are the instructions as a system message, then the input.
func (t *responsesToChat) messages(input json.RawMessage) ([]rope, error) {
	var msgs []rope
	if t.req.Instructions != "" {
		msgs = append(msgs, rope{mustMarshal(map[string]any{"role": "system", "content": t.req.Instructions})})
	}
	items, err := responsesInputRaw(input)
	if err != nil {
		return nil, err
	}
	msgs = append(msgs, items...)
	if len(msgs) == 0 {
		return nil, invalid("input", "missing_required_parameter", "Missing required parameter: 'input'.")
	}
	return msgs, nil
}

// tools: function tools, custom tools as functions of one string
// argument, input, and the functions and custom tools of namespaces
// (top-level or in Codex's additional_tools input items) flattened into
// them (named in x-gw-translated-tools, ResponsesTranslatedTools). A
// hosted tool needs OpenAI's own servers: it is left out and named
// (ResponsesDroppedTools), or refused by a strict_parameters policy.
func (t *responsesToChat) tools() error {
	all := append([]responsesTool(nil), t.req.Tools...)
	arrayElements(bytes.TrimSpace(t.input), func(item []byte) {
		if valueKind(item) != "object" || string(bytes.TrimSpace(memberValue(item, "type"))) != `"additional_tools"` {
			return
		}
		var extra []responsesTool
		if json.Unmarshal(memberValue(item, "tools"), &extra) == nil {
			all = append(all, extra...)
		}
	})
	if len(all) == 0 {
		return nil
	}
	var tools []map[string]any
	seen := map[string]bool{}
	var add func(ts []responsesTool)
	add = func(ts []responsesTool) {
		for _, tool := range ts {
			if tool.Type == "namespace" {
				add(tool.Tools)
				continue
			}
			if (tool.Type != "function" && tool.Type != "custom") || tool.Name == "" || seen[tool.Name] {
				continue
			}
			seen[tool.Name] = true
			if tool.Type == "custom" {
				tools = append(tools, chatFunction(map[string]any{"name": tool.Name, "parameters": customParameters(tool)}, tool.Description, nil))
				continue
			}
			fn := map[string]any{"name": tool.Name}
			if len(tool.Parameters) > 0 && !isNull(tool.Parameters) {
				fn["parameters"] = tool.Parameters
			}
			tools = append(tools, chatFunction(fn, tool.Description, tool.Strict))
		}
	}
	add(all)
	if len(tools) > 0 {
		t.out["tools"] = tools
	}
	return nil
}

// customParameters is a custom tool's free-form input as a function's one
// string argument, input; its grammar, if any, in the argument's
// description for the model to follow.
func customParameters(tool responsesTool) map[string]any {
	input := map[string]any{"type": "string", "description": "The tool's whole input, as free-form text."}
	if f := tool.Format; f != nil && f.Type == "grammar" && f.Definition != "" {
		input["description"] = "The tool's whole input, as free-form text matching this " + f.Syntax + " grammar:\n" + f.Definition
	}
	return map[string]any{"type": "object", "properties": map[string]any{"input": input}, "required": []string{"input"}}
}

// toolChoice: a mode as it is, or a function by name.
func (t *responsesToChat) toolChoice() error {
	raw := t.req.ToolChoice
	if len(raw) == 0 || isNull(raw) {
		return nil
	}
	var mode string
	if json.Unmarshal(raw, &mode) == nil {
		t.out["tool_choice"] = mode
		return nil
	}
	var obj struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &obj) != nil || obj.Type != "function" {
		return invalid("tool_choice", "unsupported_value", "'tool_choice' must be none, auto, required or a function for this model.")
	}
	t.out["tool_choice"] = map[string]any{"type": "function", "function": map[string]any{"name": obj.Name}}
	return nil
}

// format is text.format as a response_format.
func (t *responsesToChat) format() error {
	if t.req.Text == nil || t.req.Text.Format == nil {
		return nil
	}
	f := t.req.Text.Format
	switch f.Type {
	case "json_schema":
		js := map[string]any{"name": f.Name, "schema": f.Schema}
		if f.Strict != nil {
			js["strict"] = *f.Strict
		}
		t.out["response_format"] = map[string]any{"type": "json_schema", "json_schema": js}
	case "json_object", "text":
		t.out["response_format"] = map[string]any{"type": f.Type}
	default:
		return invalid("text.format.type", "invalid_value", "Invalid value for 'text.format.type': %q.", f.Type)
	}
	return nil
}

// responsesUsage is a Responses usage object: input_tokens include the
// cached ones.
func responsesUsage(u Usage) map[string]any {
	in := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
	return map[string]any{"input_tokens": in, "input_tokens_details": map[string]any{"cached_tokens": u.CacheReadTokens},
		"output_tokens": u.OutputTokens, "output_tokens_details": map[string]any{"reasoning_tokens": u.ReasoningTokens},
		"total_tokens": in + u.OutputTokens}
}

// responseObject is a response with status, output and usage.
func responseObject(id, model string, created int64, status string, output []any, usage any, incomplete any) map[string]any {
	return map[string]any{
		"id": id, "object": "response", "created_at": created, "status": status, "model": model,
		"output": output, "usage": usage, "error": nil, "incomplete_details": incomplete,
		"instructions": nil, "metadata": map[string]any{}, "parallel_tool_calls": true, "tool_choice": "auto",
		"tools": []any{}, "temperature": nil, "top_p": nil, "text": map[string]any{"format": map[string]any{"type": "text"}},
		"store": false,
	}
}

func responseStatus(finish string) (string, any) {
	switch finish {
	case "length":
		return "incomplete", map[string]any{"reason": "max_output_tokens"}
	case "content_filter":
		return "incomplete", map[string]any{"reason": "content_filter"}
	}
	return "completed", nil
}

func responseID(id string) string { return "resp_" + strings.TrimPrefix(id, "chatcmpl-") }

func messageItem(id, text, status string) map[string]any {
	return map[string]any{"id": id, "type": "message", "status": status, "role": "assistant",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}, "logprobs": []any{}}}}
}

func functionItem(callID, name, args, status string) map[string]any {
	return map[string]any{"id": "fc_" + callID, "type": "function_call", "status": status, "call_id": callID, "name": name, "arguments": args}
}

// customItem is a call of a custom tool, whose function (customParameters)
// the model called with its input as the one argument.
func customItem(callID, name, args, status string) map[string]any {
	var a struct {
		Input string `json:"input"`
	}
	if json.Unmarshal([]byte(args), &a) != nil {
		a.Input = args
	}
	return map[string]any{"id": "ctc_" + callID, "type": "custom_tool_call", "status": status, "call_id": callID, "name": name, "input": a.Input}
}

// callItem is a tool call's output item: a custom tool's when custom names
// it.
func callItem(custom map[string]bool, callID, name, args, status string) map[string]any {
	if custom[name] {
		return customItem(callID, name, args, status)
	}
	return functionItem(callID, name, args, status)
}

// ChatToResponse translates a chat.completion into a response object; a
// call of a tool custom names is a custom_tool_call.
func ChatToResponse(body []byte, model string, u Usage, custom map[string]bool) ([]byte, error) {
	var c chatAnswer
	if err := json.Unmarshal(body, &c); err != nil || len(c.Choices) == 0 {
		return nil, &Error{Kind: Unavailable, Message: "the upstream's answer has no choice"}
	}
	ch := c.Choices[0]
	id := responseID(c.ID)
	output := []any{}
	if t := ch.Message.Content; t != nil && *t != "" {
		output = append(output, messageItem("msg_"+strings.TrimPrefix(id, "resp_"), *t, "completed"))
	}
	for _, tc := range ch.Message.ToolCalls {
		output = append(output, callItem(custom, tc.ID, tc.Function.Name, tc.Function.Arguments, "completed"))
	}
	status, incomplete := responseStatus(ch.FinishReason)
	created := c.Created
	if created == 0 {
		created = time.Now().Unix()
	}
	return json.Marshal(responseObject(id, model, created, status, output, responsesUsage(u), incomplete))
}

// CustomToolCalls rewrites a translated response object's function_call
// items that call a tool custom names as custom_tool_call items.
func CustomToolCalls(body []byte, custom map[string]bool) ([]byte, error) {
	var r map[string]any
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	output, _ := r["output"].([]any)
	changed := false
	for i, o := range output {
		item, _ := o.(map[string]any)
		name, _ := item["name"].(string)
		if item["type"] != "function_call" || !custom[name] {
			continue
		}
		callID, _ := item["call_id"].(string)
		args, _ := item["arguments"].(string)
		output[i], changed = customItem(callID, name, args, "completed"), true
	}
	if !changed {
		return body, nil
	}
	return json.Marshal(r)
}

// ResponsesStream turns chat.completion.chunk objects into the Responses
// event sequence: response.created and response.in_progress; per output
// item response.output_item.added, its content part, text or argument
// deltas and their .done events, response.output_item.done; and
// response.completed (or response.incomplete) with the usage.
type ResponsesStream struct {
	Model string
	// Custom names the request's custom tools: their calls are written as
	// custom_tool_call items, their input in one delta when the call ends.
	Custom  map[string]bool
	started bool
	id      string
	created int64
	seq     int
	// The output item being written: text (a message), or a function
	// call of chat index tool.
	open             bool
	tool             int
	itemID           string
	text, args, name string
	callID           string
	output           []any
	finish           string
}

func (s *ResponsesStream) event(out [][]byte, typ string, fields map[string]any) [][]byte {
	fields["type"] = typ
	fields["sequence_number"] = s.seq
	s.seq++
	return append(out, mustMarshal(fields))
}

// Chunk translates one chunk into zero or more events.
func (s *ResponsesStream) Chunk(raw []byte) ([][]byte, error) {
	var c chatChunk
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, &Error{Kind: Unavailable, Message: "the upstream sent a chunk that is not a chat.completion.chunk"}
	}
	var out [][]byte
	if !s.started {
		s.started, s.id, s.created = true, responseID(c.ID), time.Now().Unix()
		r := responseObject(s.id, s.Model, s.created, "in_progress", []any{}, nil, nil)
		out = s.event(out, "response.created", map[string]any{"response": r})
		out = s.event(out, "response.in_progress", map[string]any{"response": r})
	}
	for _, ch := range c.Choices {
		if t := ch.Delta.Content; t != nil && *t != "" {
			if !s.open || s.tool >= 0 {
				out = s.closeItem(out)
				s.open, s.tool, s.text = true, -1, ""
				s.itemID = "msg_" + strings.TrimPrefix(s.id, "resp_") + "_" + strconv.Itoa(len(s.output))
				item := messageItem(s.itemID, "", "in_progress")
				item["content"] = []any{}
				out = s.event(out, "response.output_item.added", map[string]any{"output_index": len(s.output), "item": item})
				out = s.event(out, "response.content_part.added", map[string]any{"item_id": s.itemID, "output_index": len(s.output),
					"content_index": 0, "part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
			}
			s.text += *t
			out = s.event(out, "response.output_text.delta", map[string]any{"item_id": s.itemID, "output_index": len(s.output),
				"content_index": 0, "delta": *t, "logprobs": []any{}})
		}
		for _, tc := range ch.Delta.ToolCalls {
			if !s.open || s.tool != tc.Index {
				out = s.closeItem(out)
				s.open, s.tool, s.args, s.name, s.callID = true, tc.Index, "", tc.Function.Name, tc.ID
				s.itemID = "fc_" + tc.ID
				if s.Custom[s.name] {
					s.itemID = "ctc_" + tc.ID
				}
				out = s.event(out, "response.output_item.added", map[string]any{"output_index": len(s.output),
					"item": callItem(s.Custom, s.callID, s.name, "", "in_progress")})
			}
			if a := tc.Function.Arguments; a != "" && s.Custom[s.name] {
				s.args += a
			} else if a != "" {
				s.args += a
				out = s.event(out, "response.function_call_arguments.delta", map[string]any{"item_id": s.itemID,
					"output_index": len(s.output), "delta": a})
			}
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			s.finish = *ch.FinishReason
		}
	}
	return out, nil
}

func (s *ResponsesStream) closeItem(out [][]byte) [][]byte {
	if !s.open {
		return out
	}
	idx := len(s.output)
	var item map[string]any
	if s.tool < 0 {
		out = s.event(out, "response.output_text.done", map[string]any{"item_id": s.itemID, "output_index": idx,
			"content_index": 0, "text": s.text, "logprobs": []any{}})
		out = s.event(out, "response.content_part.done", map[string]any{"item_id": s.itemID, "output_index": idx,
			"content_index": 0, "part": map[string]any{"type": "output_text", "text": s.text, "annotations": []any{}}})
		item = messageItem(s.itemID, s.text, "completed")
	} else if s.Custom[s.name] {
		item = customItem(s.callID, s.name, s.args, "completed")
		out = s.event(out, "response.custom_tool_call_input.delta", map[string]any{"item_id": s.itemID, "output_index": idx,
			"delta": item["input"]})
		out = s.event(out, "response.custom_tool_call_input.done", map[string]any{"item_id": s.itemID, "output_index": idx,
			"input": item["input"]})
	} else {
		out = s.event(out, "response.function_call_arguments.done", map[string]any{"item_id": s.itemID, "output_index": idx,
			"name": s.name, "arguments": s.args})
		item = functionItem(s.callID, s.name, s.args, "completed")
	}
	out = s.event(out, "response.output_item.done", map[string]any{"output_index": idx, "item": item})
	s.output = append(s.output, item)
	s.open = false
	return out
}

// End closes the stream with the call's usage.
func (s *ResponsesStream) End(u Usage) [][]byte {
	out := s.closeItem(nil)
	status, incomplete := responseStatus(s.finish)
	typ := "response.completed"
	if status == "incomplete" {
		typ = "response.incomplete"
	}
	output := s.output
	if output == nil {
		output = []any{}
	}
	return s.event(out, typ, map[string]any{"response": responseObject(s.id, s.Model, s.created, status, output, responsesUsage(u), incomplete)})
}

// Failed is the event a broken stream ends with.
func (s *ResponsesStream) Failed(code, message string) []byte {
	out := s.event(nil, "response.failed", map[string]any{"response": func() map[string]any {
		r := responseObject(s.id, s.Model, s.created, "failed", append([]any{}, s.output...), nil, nil)
		r["error"] = map[string]any{"code": code, "message": message}
		return r
	}()})
	return out[0]
}
