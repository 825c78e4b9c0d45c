package providers

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// This file translates between Anthropic's Messages API, as a client
// speaks it to /inf/v1/messages, and Chat Completions, which every
// adapter takes. A Messages request bound for an Anthropic upstream does
// not come through here: it is forwarded as sent (AnthropicNative), so
// cache_control, thinking and every other member survive. What the
// translation keeps and drops is listed in docs/dialects.md.

// MessagesKnownMembers are the request members of Anthropic's Messages
// API; a strict_parameters policy refuses any other.
var MessagesKnownMembers = []string{
	"container", "context_management", "max_tokens", "mcp_servers", "messages", "metadata", "model",
	"output_config", "output_format", "service_tier", "stop_sequences", "stream", "system", "temperature", "thinking",
	"tool_choice", "tools", "top_k", "top_p",
}

// messagesDropped are the Messages members the translation to Chat
// Completions leaves out; a strict_parameters policy refuses them instead
// of dropping them.
var messagesDropped = []string{"container", "context_management", "mcp_servers", "service_tier", "top_k"}

// MessagesUnknown lists, sorted, the members a strict_parameters policy
// refuses: unknown ones always, and with translate those the translation
// drops.
func MessagesUnknown(members Members, translate bool) []string {
	var out []string
	for _, mb := range members {
		name, raw := mb.Name, mb.Value
		if !slices.Contains(MessagesKnownMembers, name) || (translate && slices.Contains(messagesDropped, name) && !isNull(raw)) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// messagesRequest is a Messages request as the translation reads it.
type messagesRequest struct {
	Model         string          `json:"model"`
	MaxTokens     *int64          `json:"max_tokens"`
	System        json.RawMessage `json:"system"`
	Stream        bool            `json:"stream"`
	Temperature   json.RawMessage `json:"temperature"`
	TopP          json.RawMessage `json:"top_p"`
	StopSequences []string        `json:"stop_sequences"`
	Metadata      *struct {
		UserID string `json:"user_id"`
	} `json:"metadata"`
	Tools []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
		Strict      *bool           `json:"strict"`
	} `json:"tools"`
	ToolChoice *struct {
		Type                   string `json:"type"`
		Name                   string `json:"name"`
		DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
	} `json:"tool_choice"`
	Thinking *struct {
		Type         string `json:"type"`
		BudgetTokens int64  `json:"budget_tokens"`
	} `json:"thinking"`
	OutputFormat *messagesOutputFormat `json:"output_format"`
	// OutputConfig is where Anthropic's API took the output format in
	// 2026 (the SDKs' messages.parse sends it there); output_format is
	// the older place.
	OutputConfig *struct {
		Format *messagesOutputFormat `json:"format"`
	} `json:"output_config"`
}

// messagesOutputFormat is a Messages request's structured output format.
type messagesOutputFormat struct {
	Type   string          `json:"type"`
	Schema json.RawMessage `json:"schema"`
}

// MessagesToChat translates a Messages request body into a Chat
// Completions request body. Errors are *InvalidRequestError naming the
// Messages member at fault.
func MessagesToChat(body []byte) ([]byte, error) {
	t, err := readMessagesRequest(body)
	if err != nil {
		return nil, err
	}
	return t.translate()
}

// messagesToChat is one Messages request on its way to Chat Completions:
// the small members decoded, the turns (which hold the bulk) as raw
// bytes, and the Chat members written so far.
type messagesToChat struct {
	req   messagesRequest
	turns [][]byte
	out   map[string]any
}

// readMessagesRequest decodes a Messages request and checks the members
// every Messages request must have, as Anthropic's API does.
func readMessagesRequest(body []byte) (*messagesToChat, error) {
	members, err := ParseObject(body)
	if err != nil {
		return nil, err
	}
	t := &messagesToChat{}
	// The messages are read from the body in place (translate_messages_raw.go).
	if raw, ok := members.Get("messages"); ok && !isNull(raw) {
		if valueKind(raw) != "array" {
			return nil, invalid("messages", "invalid_type", "messages: Input should be a valid list")
		}
		arrayElements(raw, func(turn []byte) { t.turns = append(t.turns, turn) })
	}
	if err := json.Unmarshal(body, &t.req); err != nil {
		return nil, invalid("", "invalid_request", "The request body is not a Messages request: %s", err.Error())
	}
	switch {
	case t.req.Model == "":
		return nil, invalid("model", "missing_required_parameter", "model: Field required")
	case t.req.MaxTokens == nil:
		return nil, invalid("max_tokens", "missing_required_parameter", "max_tokens: Field required")
	case *t.req.MaxTokens < 1:
		return nil, invalid("max_tokens", "invalid_value", "max_tokens: Input should be greater than or equal to 1")
	case len(t.turns) == 0:
		return nil, invalid("messages", "missing_required_parameter", "messages: Field required")
	}
	return t, nil
}

func (t *messagesToChat) translate() ([]byte, error) {
	t.out = map[string]any{"model": t.req.Model, "max_completion_tokens": *t.req.MaxTokens}
	t.sampling()
	// In the order a client reads problems: the conversation, then the
	// tools.
	msgs, err := t.messages()
	if err != nil {
		return nil, err
	}
	if err := t.tools(); err != nil {
		return nil, err
	}
	if err := t.toolChoice(); err != nil {
		return nil, err
	}
	t.thinking()
	of := t.req.OutputFormat
	if oc := t.req.OutputConfig; oc != nil && oc.Format != nil {
		of = oc.Format
	}
	if of != nil && of.Type == "json_schema" {
		t.out["response_format"] = map[string]any{"type": "json_schema",
			"json_schema": map[string]any{"name": "output", "schema": of.Schema, "strict": true}}
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
func (t *messagesToChat) sampling() {
	req := t.req
	if req.Stream {
		t.out["stream"] = true
	}
	if len(req.Temperature) > 0 && !isNull(req.Temperature) {
		t.out["temperature"] = req.Temperature
	}
	if len(req.TopP) > 0 && !isNull(req.TopP) {
		t.out["top_p"] = req.TopP
	}
	if len(req.StopSequences) > 0 {
		t.out["stop"] = req.StopSequences
	}
	if req.Metadata != nil && req.Metadata.UserID != "" {
		t.out["user"] = req.Metadata.UserID
	}
}

// messages is the system prompt as a system message, then every turn.
func (t *messagesToChat) messages() ([]rope, error) {
	var msgs []rope
	if sys, ok := messagesSystemParts(t.req.System); ok {
		// Blocks marked with cache_control: parts, with breakpoints.
		msgs = append(msgs, sys)
	} else if sys, err := messagesSystem(t.req.System); err != nil {
		return nil, err
	} else if sys != "" {
		msgs = append(msgs, rope{mustMarshal(map[string]any{"role": "system", "content": sys})})
	}
	for i, turn := range t.turns {
		converted, err := messagesTurnRaw(turn, "messages."+strconv.Itoa(i))
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, converted...)
	}
	return msgs, nil
}

// tools become functions. Anthropic's server tools have no Chat form:
// they are left out and named (MessagesDroppedTools), or refused by a
// strict_parameters policy.
func (t *messagesToChat) tools() error {
	if len(t.req.Tools) == 0 {
		return nil
	}
	tools := make([]map[string]any, 0, len(t.req.Tools))
	for _, tool := range t.req.Tools {
		if tool.Type != "" && tool.Type != "custom" {
			continue
		}
		fn := map[string]any{"name": tool.Name, "parameters": tool.InputSchema}
		tools = append(tools, chatFunction(fn, tool.Description, tool.Strict))
	}
	if len(tools) > 0 {
		t.out["tools"] = tools
	}
	return nil
}

// chatFunction is a Chat Completions function tool from its name and
// parameters (fn), with the description and strictness a tool has.
func chatFunction(fn map[string]any, description string, strict *bool) map[string]any {
	if description != "" {
		fn["description"] = description
	}
	if strict != nil {
		fn["strict"] = *strict
	}
	return map[string]any{"type": "function", "function": fn}
}

// messagesToolChoices are the tool_choice types with a fixed Chat form.
var messagesToolChoices = map[string]string{"auto": "auto", "any": "required", "none": "none"}

func (t *messagesToChat) toolChoice() error {
	tc := t.req.ToolChoice
	if tc == nil {
		return nil
	}
	switch choice, fixed := messagesToolChoices[tc.Type]; {
	case fixed:
		t.out["tool_choice"] = choice
	case tc.Type == "tool":
		t.out["tool_choice"] = map[string]any{"type": "function", "function": map[string]any{"name": tc.Name}}
	default:
		return invalid("tool_choice.type", "invalid_value", "tool_choice.type: %q is not auto, any, tool or none", tc.Type)
	}
	if tc.DisableParallelToolUse && len(t.req.Tools) > 0 {
		t.out["parallel_tool_calls"] = false
	}
	return nil
}

// thinking: a budget becomes the nearest reasoning effort; the budgets
// are the ones the Anthropic adapter maps efforts to.
func (t *messagesToChat) thinking() {
	th := t.req.Thinking
	if th == nil || th.Type != "enabled" {
		return
	}
	switch {
	case th.BudgetTokens <= thinkingBudgets["low"]:
		t.out["reasoning_effort"] = "low"
	case th.BudgetTokens <= thinkingBudgets["medium"]:
		t.out["reasoning_effort"] = "medium"
	default:
		t.out["reasoning_effort"] = "high"
	}
}

// messagesSystem reads the system prompt: a string or text blocks.
func messagesSystem(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || isNull(raw) {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", invalid("system", "invalid_type", "system: Input should be a string or a list of text blocks")
	}
	var texts []string
	for _, b := range blocks {
		if b.Type == "text" {
			texts = append(texts, b.Text)
		}
	}
	return strings.Join(texts, "\n\n"), nil
}

// messagesUsage is the usage object of a Messages answer.
func messagesUsage(u Usage) map[string]any {
	w1h := min(u.CacheWrite1hTokens, u.CacheWriteTokens)
	return map[string]any{"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens,
		"cache_creation_input_tokens": u.CacheWriteTokens, "cache_read_input_tokens": u.CacheReadTokens,
		"cache_creation": map[string]any{"ephemeral_5m_input_tokens": u.CacheWriteTokens - w1h, "ephemeral_1h_input_tokens": w1h}}
}

// stopReason maps a finish reason to a Messages stop reason.
func stopReason(finish string) string {
	switch finish {
	case "length":
		return "max_tokens"
	case "tool_calls", "function_call":
		return "tool_use"
	case "content_filter":
		return "refusal"
	}
	return "end_turn"
}

// chatAnswer is the part of a chat.completion the translations read.
type chatAnswer struct {
	ID      string `json:"id"`
	Created int64  `json:"created"`
	Choices []struct {
		Message struct {
			Content   *string    `json:"content"`
			Refusal   *string    `json:"refusal"`
			ToolCalls []ToolCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

// ChatToMessage translates a chat.completion into a Messages answer; u is
// the call's usage in gw's categories.
func ChatToMessage(body []byte, model string, u Usage) ([]byte, error) {
	var c chatAnswer
	if err := json.Unmarshal(body, &c); err != nil || len(c.Choices) == 0 {
		return nil, &Error{Kind: Unavailable, Message: "the upstream's answer has no choice"}
	}
	ch := c.Choices[0]
	content := []any{}
	if t := ch.Message.Content; t != nil && *t != "" {
		content = append(content, map[string]any{"type": "text", "text": *t})
	} else if r := ch.Message.Refusal; r != nil && *r != "" {
		content = append(content, map[string]any{"type": "text", "text": *r})
	}
	for _, tc := range ch.Message.ToolCalls {
		content = append(content, map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Function.Name, "input": toolInput(tc.Function.Arguments)})
	}
	return json.Marshal(map[string]any{
		"id": messageID(c.ID), "type": "message", "role": "assistant", "model": model, "content": content,
		"stop_reason": stopReason(ch.FinishReason), "stop_sequence": nil, "usage": messagesUsage(u),
	})
}

// toolInput is a tool call's arguments as the object a tool_use block
// carries; arguments that are not a JSON object become an empty one.
func toolInput(args string) json.RawMessage {
	raw := json.RawMessage(strings.TrimSpace(args))
	if len(raw) == 0 || raw[0] != '{' || !json.Valid(raw) {
		return json.RawMessage("{}")
	}
	return raw
}

func messageID(id string) string {
	if strings.HasPrefix(id, "msg_") {
		return id
	}
	return "msg_" + strings.TrimPrefix(id, "chatcmpl-")
}

// chatChunk is the part of a chat.completion.chunk the stream
// translations read.
type chatChunk struct {
	ID      string `json:"id"`
	Choices []struct {
		Delta struct {
			Content   *string             `json:"content"`
			Refusal   *string             `json:"refusal"`
			ToolCalls []chatChunkToolCall `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
}

// chatChunkToolCall is a tool call's delta in a chunk.
type chatChunkToolCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// MessagesStream turns chat.completion.chunk objects into the Messages
// event sequence: message_start, then per content block
// content_block_start, its deltas and content_block_stop, then
// message_delta with the stop reason and usage, and message_stop. Each
// event is returned as its data; its event name is its type member.
type MessagesStream struct {
	Model string
	// InputTokens is the request's input as estimated before the call,
	// which message_start reports (Claude Code reads its context size
	// there); the real counts come with message_delta at the end.
	InputTokens int64
	started     bool
	id          string
	// open is the index of the open content block, -1 when none; tool is
	// the chat tool call index it belongs to, -1 for a text block.
	open, next, tool int
	finish           string
}

// Chunk translates one chunk into zero or more events.
func (s *MessagesStream) Chunk(raw []byte) ([][]byte, error) {
	var c chatChunk
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, &Error{Kind: Unavailable, Message: "the upstream sent a chunk that is not a chat.completion.chunk"}
	}
	var out [][]byte
	if !s.started {
		s.started, s.open, s.tool, s.id = true, -1, -1, messageID(c.ID)
		out = append(out, mustMarshal(map[string]any{"type": "message_start", "message": map[string]any{
			"id": s.id, "type": "message", "role": "assistant", "model": s.Model, "content": []any{},
			"stop_reason": nil, "stop_sequence": nil, "usage": messagesUsage(Usage{InputTokens: s.InputTokens})}}))
	}
	for _, ch := range c.Choices {
		out = s.text(out, ch.Delta.Content, ch.Delta.Refusal)
		for _, tc := range ch.Delta.ToolCalls {
			out = s.toolCall(out, tc)
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			s.finish = *ch.FinishReason
		}
	}
	return out, nil
}

// text relays a delta's text (or refusal) in the open text block,
// opening one when a tool's block (or none) is open.
func (s *MessagesStream) text(out [][]byte, content, refusal *string) [][]byte {
	text := content
	if text == nil || *text == "" {
		text = refusal
	}
	if text == nil || *text == "" {
		return out
	}
	if s.open < 0 || s.tool >= 0 {
		out = s.closeBlock(out)
		out = s.openBlock(out, -1, map[string]any{"type": "text", "text": ""})
	}
	return append(out, mustMarshal(map[string]any{"type": "content_block_delta", "index": s.open,
		"delta": map[string]any{"type": "text_delta", "text": *text}}))
}

// toolCall relays a tool call's arguments in its tool_use block, opening
// the block when the call is new.
func (s *MessagesStream) toolCall(out [][]byte, tc chatChunkToolCall) [][]byte {
	if s.open < 0 || s.tool != tc.Index {
		out = s.closeBlock(out)
		out = s.openBlock(out, tc.Index, map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Function.Name, "input": map[string]any{}})
	}
	if tc.Function.Arguments == "" {
		return out
	}
	return append(out, mustMarshal(map[string]any{"type": "content_block_delta", "index": s.open,
		"delta": map[string]any{"type": "input_json_delta", "partial_json": tc.Function.Arguments}}))
}

func (s *MessagesStream) openBlock(out [][]byte, tool int, block map[string]any) [][]byte {
	s.open, s.tool = s.next, tool
	s.next++
	return append(out, mustMarshal(map[string]any{"type": "content_block_start", "index": s.open, "content_block": block}))
}

func (s *MessagesStream) closeBlock(out [][]byte) [][]byte {
	if s.open < 0 {
		return out
	}
	out = append(out, mustMarshal(map[string]any{"type": "content_block_stop", "index": s.open}))
	s.open, s.tool = -1, -1
	return out
}

// End closes the stream with the call's usage.
func (s *MessagesStream) End(u Usage) [][]byte {
	out := s.closeBlock(nil)
	return append(out,
		mustMarshal(map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stopReason(s.finish), "stop_sequence": nil},
			"usage": messagesUsage(u)}),
		mustMarshal(map[string]any{"type": "message_stop"}))
}
