package providers

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// anthropicVersion is the Messages API version gw speaks.
const anthropicVersion = "2023-06-01"

// structuredOutputsBeta enables JSON-schema outputs and strict tools.
const structuredOutputsBeta = "structured-outputs-2025-11-13"

// anthropicIgnored are the Chat Completions members the Messages API has
// no counterpart for. They are left out of the upstream request, unless a
// strict_parameters policy applies, which refuses them instead.
var anthropicIgnored = []string{
	"audio", "frequency_penalty", "function_call", "logit_bias", "logprobs", "metadata", "modalities", "prediction",
	"presence_penalty", "prompt_cache_key", "safety_identifier", "seed", "service_tier", "store",
	"top_logprobs", "verbosity", "web_search_options",
}

// thinkingBudgets maps reasoning_effort to an extended-thinking budget.
// Fixed budgets rather than shares of max_tokens: max_tokens defaults to
// the model's maximum output (64,000 for current models), and a share of
// that would make every "low" request expensive.
var thinkingBudgets = map[string]int64{"minimal": 1024, "low": 4096, "medium": 8192, "high": 16384}

// minThinkingBudget is the Messages API's smallest thinking budget.
const minThinkingBudget = 1024

// Anthropic calls the Anthropic Messages API, translating Chat Completions
// requests to Messages and the answers, streamed or not, back.
type Anthropic struct {
	Client *http.Client
}

// Check translates the request and discards the result: translation is
// pure, so whatever it would refuse is known before any upstream call.
func (a *Anthropic) Check(call *Call, strict bool) error {
	req := call.Request
	if err := refuseIgnored(req, strict, anthropicIgnored, "Anthropic"); err != nil {
		return err
	}
	out, beta, err := translateAnthropic(call, req.Stream)
	if err == nil && call.Prepared != nil {
		call.Prepared.anthropic, call.Prepared.beta, call.Prepared.stream = out, beta, req.Stream
		call.Prepared.translations++
	}
	return err
}

// neutral reports whether a member's value asks for nothing beyond the
// default, so leaving it out changes nothing: null, false, n of 1, a zero
// penalty.
func neutral(name string, raw json.RawMessage) bool {
	v := string(bytes.TrimSpace(raw))
	switch {
	case v == "null" || v == "false":
		return true
	case name == "frequency_penalty" || name == "presence_penalty":
		return v == "0" || v == "0.0"
	}
	return false
}

// Complete implements Adapter.
func (a *Anthropic) Complete(ctx context.Context, call *Call) (*Completion, error) {
	resp, err := a.send(ctx, call, false)
	if err != nil {
		return nil, err
	}
	return anthropicCompletion(resp, call)
}

// anthropicCompletion reads a Messages answer into a chat.completion
// (Anthropic's API, and Claude on Vertex AI and Bedrock, answer alike).
func anthropicCompletion(resp *http.Response, call *Call) (*Completion, error) {
	defer resp.Body.Close()
	raw, err := readAnswer(resp.Body, resp.ContentLength)
	if err != nil {
		return nil, transportError(err)
	}
	var msg anthropicMessageResponse
	if err := json.Unmarshal(raw, &msg); err != nil {
		return nil, &Error{Kind: Unavailable, Status: resp.StatusCode, Message: "the upstream's answer is not a Messages response"}
	}
	// The answer shows the counts it is billed at, gw's where the upstream
	// reported none.
	u := estimate(msg.usage(), call, answerTokens(raw))
	out := chatCompletion{
		ID: msg.ID, Object: "chat.completion", Created: time.Now().Unix(), Model: call.ResponseModel,
		Choices: []completionChoice{{Message: completionMessage{Role: "assistant"}, FinishReason: finishReason(msg.StopReason)}},
		Usage:   u.chat(),
	}
	m := &out.Choices[0].Message
	var text strings.Builder
	hasText := false
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
			hasText = true
		case "tool_use":
			tc := responseToolCall{ID: b.ID, Type: "function"}
			tc.Function.Name = b.Name
			tc.Function.Arguments = compactJSON(b.Input)
			m.ToolCalls = append(m.ToolCalls, tc)
		}
		// Thinking blocks have no place in a chat.completion: OpenAI's
		// own reasoning models do not return their reasoning either.
	}
	if hasText || len(m.ToolCalls) == 0 {
		s := text.String()
		m.Content = &s
	}
	body, err := json.Marshal(out)
	if err != nil {
		return nil, &Error{Kind: Unavailable, Message: "encoding the answer failed", Cause: err}
	}
	return &Completion{Body: body, Usage: u}, nil
}

// Stream implements Adapter.
func (a *Anthropic) Stream(ctx context.Context, call *Call) (ChunkStream, error) {
	resp, err := a.send(ctx, call, true)
	if err != nil {
		return nil, err
	}
	return newAnthropicStream(resp.Body, newSSEReader(resp.Body), call), nil
}

func newAnthropicStream(body io.ReadCloser, events eventReader, call *Call) *anthropicStream {
	return &anthropicStream{body: body, sse: events, call: call, tools: map[int]int{}}
}

func (a *Anthropic) send(ctx context.Context, call *Call, stream bool) (*http.Response, error) {
	req, beta, kept, err := preparedAnthropic(call, stream)
	if err != nil {
		return nil, err
	}
	body, err := encodeOnce(call, kept, req)
	if err != nil {
		return nil, invalid("", "invalid_json", "The request could not be translated for an Anthropic model.")
	}
	accept := ""
	if stream {
		accept = "text/event-stream"
	}
	return send(ctx, a.Client, call, upstreamPost{url: trimBase(call.BaseURL) + "/messages", body: rope{body}, accept: accept,
		header: anthropicHeaders(beta, call.AnthropicVersion), authorize: anthropicKey, refusal: anthropicRefusal})
}

// anthropicHeaders sets the API version (the model's own, else gw's) and,
// when asked, the structured-outputs beta beside the caller's flags.
func anthropicHeaders(beta bool, version string) func(http.Header) {
	switch {
	case version != "":
		return func(h http.Header) {
			h.Set("Anthropic-Version", version)
			if beta {
				addBeta(h, structuredOutputsBeta)
			}
		}
	case beta:
		return anthropicBetaHeaders
	}
	return anthropicVersionHeader
}

func anthropicVersionHeader(h http.Header) { h.Set("Anthropic-Version", anthropicVersion) }

func anthropicBetaHeaders(h http.Header) {
	h.Set("Anthropic-Version", anthropicVersion)
	addBeta(h, structuredOutputsBeta)
}

// addBeta adds flag to the anthropic-beta flags forwarded from the
// caller, unless one of them is it already: the caller's flags enable
// what it asked for, gw's what its translation needs.
func addBeta(h http.Header, flag string) {
	for _, v := range h.Values("Anthropic-Beta") {
		for _, f := range strings.Split(v, ",") {
			if strings.TrimSpace(f) == flag {
				return
			}
		}
	}
	h.Add("Anthropic-Beta", flag)
}

// anthropicRequest is a Messages API request.
type anthropicRequest struct {
	Model         string              `json:"model"`
	MaxTokens     int64               `json:"max_tokens"`
	System        []anthropicText     `json:"system,omitempty"`
	Messages      []anthropicMessage  `json:"messages"`
	Stream        bool                `json:"stream,omitempty"`
	Temperature   json.RawMessage     `json:"temperature,omitempty"`
	TopP          json.RawMessage     `json:"top_p,omitempty"`
	StopSequences []string            `json:"stop_sequences,omitempty"`
	Tools         []anthropicTool     `json:"tools,omitempty"`
	ToolChoice    *anthropicChoice    `json:"tool_choice,omitempty"`
	Metadata      *anthropicMetadata  `json:"metadata,omitempty"`
	Thinking      *anthropicThinking  `json:"thinking,omitempty"`
	OutputFormat  *anthropicOutFormat `json:"output_format,omitempty"`
}

type anthropicMessage struct {
	Role    string `json:"role"`
	Content []any  `json:"content"`
}

type anthropicText struct {
	Type         string          `json:"type"`
	Text         string          `json:"text"`
	CacheControl *anthropicCache `json:"cache_control,omitempty"`
}

// anthropicMedia is an image or document block.
type anthropicMedia struct {
	Type         string          `json:"type"`
	Source       anthropicSource `json:"source"`
	CacheControl *anthropicCache `json:"cache_control,omitempty"`
}

type anthropicSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

type anthropicToolUse struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type anthropicToolResult struct {
	Type         string          `json:"type"`
	ToolUseID    string          `json:"tool_use_id"`
	Content      any             `json:"content"`
	CacheControl *anthropicCache `json:"cache_control,omitempty"`
}

type anthropicTool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	Strict       *bool           `json:"strict,omitempty"`
	CacheControl *anthropicCache `json:"cache_control,omitempty"`
}

type anthropicChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

type anthropicMetadata struct {
	UserID string `json:"user_id"`
}

type anthropicThinking struct {
	Type         string `json:"type"`
	BudgetTokens int64  `json:"budget_tokens"`
}

type anthropicOutFormat struct {
	Type   string          `json:"type"`
	Schema json.RawMessage `json:"schema"`
}

// translateAnthropic builds the Messages request for a call, and says
// whether it needs the structured-outputs beta.
func translateAnthropic(call *Call, stream bool) (*anthropicRequest, bool, error) {
	req := call.Request
	if req.N > 1 {
		return nil, false, invalid("n", "unsupported_value", "Anthropic models return one choice; 'n' must be 1.")
	}
	if req.Functions {
		return nil, false, invalid("functions", "unsupported_parameter", "'functions' is not supported for Anthropic models; use 'tools'.")
	}
	out := &anthropicRequest{Model: call.UpstreamModel, Stream: stream, StopSequences: req.Stop, MaxTokens: anthropicMaxTokens(call)}
	if raw, ok := req.Members.Get("temperature"); ok && !isNull(raw) {
		out.Temperature = raw
	}
	if raw, ok := req.Members.Get("top_p"); ok && !isNull(raw) {
		out.TopP = raw
	}
	if req.User != "" {
		out.Metadata = &anthropicMetadata{UserID: req.User}
	}
	if err := translateMessages(req, out); err != nil {
		return nil, false, err
	}
	beta, err := translateTools(req, out)
	if err != nil {
		return nil, false, err
	}
	structured, err := anthropicOutputFormat(req, out)
	if err != nil {
		return nil, false, err
	}
	if err := anthropicThinkingFor(req, out); err != nil {
		return nil, false, err
	}
	anthropicPromptCache(call, out)
	return out, beta || structured, nil
}

// anthropicMaxTokens is the call's limit: the Messages API requires one,
// so a catalog entry without a maximum output gets a conventional one.
func anthropicMaxTokens(call *Call) int64 {
	switch {
	case call.MaxTokens > 0:
		return call.MaxTokens
	case call.Request.MaxTokens > 0:
		return call.Request.MaxTokens
	case call.DefaultMaxTokens > 0:
		return call.DefaultMaxTokens
	}
	return 4096
}

// anthropicOutputFormat carries a json_schema response format (through
// the structured-outputs beta, which it reports); json_object has no
// Anthropic form.
func anthropicOutputFormat(req *ChatRequest, out *anthropicRequest) (bool, error) {
	rf := req.ResponseFormat
	if rf == nil {
		return false, nil
	}
	switch rf.Type {
	case "json_object":
		return false, invalid("response_format.type", "unsupported_value",
			"Anthropic models support response_format json_schema, not json_object.")
	case "json_schema":
		out.OutputFormat = &anthropicOutFormat{Type: "json_schema", Schema: rf.JSONSchema.Schema}
		return true, nil
	}
	return false, nil
}

// anthropicThinkingFor turns a reasoning effort into an extended-thinking
// budget, which counts against max_tokens and must stay below it.
func anthropicThinkingFor(req *ChatRequest, out *anthropicRequest) error {
	effort := req.ReasoningEffort
	if effort == "" || effort == "none" {
		return nil
	}
	budget, ok := thinkingBudgets[effort]
	if !ok {
		return invalid("reasoning_effort", "invalid_value", "Invalid value for 'reasoning_effort': %q.", effort)
	}
	budget = min(budget, out.MaxTokens-1)
	if budget < minThinkingBudget {
		return invalid("max_tokens", "invalid_value", "Reasoning on Anthropic models needs max_tokens above %d.", minThinkingBudget)
	}
	out.Thinking = &anthropicThinking{Type: "enabled", BudgetTokens: budget}
	return nil
}

// translateMessages moves system and developer messages into the system
// prompt, tool results into user turns, and merges consecutive turns of
// one role: the Messages API wants the tool results answering one
// assistant turn together in the next user turn.
func translateMessages(req *ChatRequest, out *anthropicRequest) error {
	add := func(role string, blocks ...any) {
		if len(blocks) == 0 {
			return
		}
		if n := len(out.Messages); n > 0 && out.Messages[n-1].Role == role {
			out.Messages[n-1].Content = append(out.Messages[n-1].Content, blocks...)
			return
		}
		out.Messages = append(out.Messages, anthropicMessage{Role: role, Content: blocks})
	}
	for i, m := range req.Messages {
		param := "messages[" + strconv.Itoa(i) + "]"
		text, parts, err := m.Content.Decode()
		if err != nil {
			return invalid(param+".content", "invalid_value", "Invalid value for '%s.content'.", param)
		}
		switch m.Role {
		case "system", "developer":
			texts, err := textBlocks(text, parts, param+".content")
			if err != nil {
				return err
			}
			out.System = append(out.System, texts...)
		case "user":
			blocks, err := userBlocks(text, parts, param+".content")
			if err != nil {
				return err
			}
			add("user", blocks...)
		case "assistant":
			blocks, err := assistantBlocks(m, text, parts, param)
			if err != nil {
				return err
			}
			add("assistant", blocks...)
		case "tool":
			texts, err := textBlocks(text, parts, param+".content")
			if err != nil {
				return err
			}
			// A breakpoint in a tool message marks its tool_result.
			var cache *anthropicCache
			for j := range texts {
				if texts[j].CacheControl != nil {
					cache, texts[j].CacheControl = texts[j].CacheControl, nil
				}
			}
			var content any = texts
			if parts == nil {
				content = text
			}
			add("user", anthropicToolResult{Type: "tool_result", ToolUseID: m.ToolCallID, Content: content, CacheControl: cache})
		default:
			return invalid(param+".role", "unsupported_value", "The %q role is not supported for Anthropic models.", m.Role)
		}
	}
	return nil
}

// textBlocks reads content that may only hold text.
func textBlocks(text string, parts []Part, param string) ([]anthropicText, error) {
	if parts == nil {
		if text == "" {
			return nil, nil
		}
		return []anthropicText{{Type: "text", Text: text}}, nil
	}
	out := make([]anthropicText, 0, len(parts))
	for j, p := range parts {
		if p.Type != "text" {
			return nil, invalid(param+"["+strconv.Itoa(j)+"]", "unsupported_value", "Only text parts are allowed in '%s'.", param)
		}
		out = append(out, anthropicText{Type: "text", Text: p.Text, CacheControl: ephemeral(p.CacheBreakpoint)})
	}
	return out, nil
}

func userBlocks(text string, parts []Part, param string) ([]any, error) {
	if parts == nil {
		return []any{anthropicText{Type: "text", Text: text}}, nil
	}
	out := make([]any, 0, len(parts))
	for j, p := range parts {
		at := param + "[" + strconv.Itoa(j) + "]"
		switch p.Type {
		case "text":
			out = append(out, anthropicText{Type: "text", Text: p.Text, CacheControl: ephemeral(p.CacheBreakpoint)})
		case "image_url":
			src, err := mediaSource(p.ImageURL, at+".image_url.url", true)
			if err != nil {
				return nil, err
			}
			out = append(out, anthropicMedia{Type: "image", Source: src, CacheControl: ephemeral(p.CacheBreakpoint)})
		case "file":
			if p.FileData == "" {
				return nil, invalid(at+".file.file_id", "unsupported_value", "Anthropic models take files inline as file_data; file_id is not supported.")
			}
			src, err := mediaSource(p.FileData, at+".file.file_data", false)
			if err != nil {
				return nil, err
			}
			out = append(out, anthropicMedia{Type: "document", Source: src, CacheControl: ephemeral(p.CacheBreakpoint)})
		default:
			return nil, invalid(at+".type", "unsupported_value", "%s content is not supported for Anthropic models.", p.Type)
		}
	}
	return out, nil
}

// mediaSource reads a data: URL (base64) or, where allowed, an http(s) URL.
func mediaSource(u, param string, urlAllowed bool) (anthropicSource, error) {
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		meta, data, found := strings.Cut(rest, ",")
		mediaType, isBase64 := strings.CutSuffix(meta, ";base64")
		if !found || !isBase64 || mediaType == "" {
			return anthropicSource{}, invalid(param, "invalid_value", "'%s' must be a base64 data: URL with a media type.", param)
		}
		return anthropicSource{Type: "base64", MediaType: mediaType, Data: data}, nil
	}
	if urlAllowed && (strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://")) {
		return anthropicSource{Type: "url", URL: u}, nil
	}
	return anthropicSource{}, invalid(param, "invalid_value", "'%s' must be a base64 data: URL or an http(s) URL.", param)
}

func assistantBlocks(m Message, text string, parts []Part, param string) ([]any, error) {
	var out []any
	if parts == nil {
		if text != "" {
			out = append(out, anthropicText{Type: "text", Text: text})
		}
	} else {
		for j, p := range parts {
			if p.Type != "text" && p.Type != "refusal" {
				return nil, invalid(param+".content["+strconv.Itoa(j)+"]", "unsupported_value", "Assistant content may only hold text.")
			}
			if p.Text != "" {
				out = append(out, anthropicText{Type: "text", Text: p.Text})
			}
		}
	}
	for j, tc := range m.ToolCalls {
		input := json.RawMessage("{}")
		if args := strings.TrimSpace(tc.Function.Arguments); args != "" {
			if !json.Valid([]byte(args)) || args[0] != '{' {
				return nil, invalid(param+".tool_calls["+strconv.Itoa(j)+"].function.arguments", "invalid_value",
					"Tool call arguments must be a JSON object.")
			}
			input = json.RawMessage(args)
		}
		out = append(out, anthropicToolUse{Type: "tool_use", ID: tc.ID, Name: tc.Function.Name, Input: input})
	}
	return out, nil
}

// translateTools maps tools and tool_choice; it reports whether a strict
// tool needs the structured-outputs beta.
func translateTools(req *ChatRequest, out *anthropicRequest) (bool, error) {
	beta := false
	for i, t := range req.Tools {
		if t.Type != "function" {
			return false, invalid("tools["+strconv.Itoa(i)+"].type", "unsupported_value", "Only function tools are supported for Anthropic models.")
		}
		schema := t.Function.Parameters
		if len(schema) == 0 || isNull(schema) {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		tool := anthropicTool{Name: t.Function.Name, Description: t.Function.Description, InputSchema: schema}
		if t.Function.Strict != nil && *t.Function.Strict {
			tool.Strict, beta = t.Function.Strict, true
		}
		out.Tools = append(out.Tools, tool)
	}
	if len(out.Tools) == 0 {
		// tool_choice means nothing without tools.
		return beta, nil
	}
	if tc := req.ToolChoice; tc != nil {
		choice, err := anthropicToolChoice(tc.Mode, tc.Function)
		if err != nil {
			return false, err
		}
		out.ToolChoice = choice
	}
	if p := req.ParallelToolCalls; p != nil && !*p {
		if out.ToolChoice == nil {
			out.ToolChoice = &anthropicChoice{Type: "auto"}
		}
		if out.ToolChoice.Type != "none" {
			out.ToolChoice.DisableParallelToolUse = true
		}
	}
	return beta, nil
}

// anthropicChoiceTypes are the tool_choice modes with a fixed Anthropic
// form.
var anthropicChoiceTypes = map[string]string{"none": "none", "auto": "auto", "required": "any"}

// anthropicToolChoice is a Chat tool_choice in Anthropic's terms.
func anthropicToolChoice(mode, function string) (*anthropicChoice, error) {
	if typ, ok := anthropicChoiceTypes[mode]; ok {
		return &anthropicChoice{Type: typ}, nil
	}
	if mode == "function" {
		return &anthropicChoice{Type: "tool", Name: function}, nil
	}
	return nil, invalid("tool_choice", "unsupported_value", "tool_choice of type %q is not supported for Anthropic models.", mode)
}

// anthropicMessageResponse is a Messages API answer.
type anthropicMessageResponse struct {
	ID      string `json:"id"`
	Content []struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"content"`
	StopReason string        `json:"stop_reason"`
	Usage      *lenientUsage `json:"usage"`
}

// usage is the answer's usage, reported only when it has a usage object
// that reads.
func (m *anthropicMessageResponse) usage() Usage {
	if m.Usage == nil || !m.Usage.ok {
		return Usage{}
	}
	return m.Usage.usage().reported()
}

type anthropicUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	// CacheCreation splits the cache writes by TTL.
	CacheCreation *struct {
		Ephemeral5m int64 `json:"ephemeral_5m_input_tokens"`
		Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation,omitempty"`
}

// usage: Anthropic's categories are already disjoint. The one-hour writes
// are part of the cache writes, whose total is the larger of the total
// reported and the sum of the TTLs' parts.
func (u anthropicUsage) usage() Usage {
	out := Usage{
		InputTokens: clampCount(u.InputTokens), OutputTokens: clampCount(u.OutputTokens),
		CacheReadTokens: clampCount(u.CacheReadInputTokens), CacheWriteTokens: clampCount(u.CacheCreationInputTokens),
	}
	if c := u.CacheCreation; c != nil {
		out.CacheWrite1hTokens = clampCount(c.Ephemeral1h)
		out.CacheWriteTokens = max(out.CacheWriteTokens, clampCount(clampCount(c.Ephemeral5m)+out.CacheWrite1hTokens))
	}
	return out
}

// chat is the usage as OpenAI reports it: prompt tokens include the cached
// ones, completion tokens the reasoning ones (Gemini's thoughts, Claude's
// thinking), which completion_tokens_details also names.
func (g Usage) chat() chatUsage {
	prompt := g.InputTokens + g.CacheReadTokens + g.CacheWriteTokens
	out := chatUsage{PromptTokens: prompt, CompletionTokens: g.OutputTokens, TotalTokens: prompt + g.OutputTokens}
	out.PromptTokensDetails.CachedTokens = g.CacheReadTokens
	out.CompletionTokensDetails.ReasoningTokens = g.ReasoningTokens
	return out
}

// merge takes a message_delta's usage: the output count is cumulative, and
// newer API versions repeat the input counts there.
func (u *anthropicUsage) merge(d anthropicUsage) {
	u.OutputTokens = d.OutputTokens
	if d.InputTokens > 0 {
		u.InputTokens = d.InputTokens
	}
	if d.CacheCreationInputTokens > 0 {
		u.CacheCreationInputTokens = d.CacheCreationInputTokens
	}
	if d.CacheCreation != nil {
		u.CacheCreation = d.CacheCreation
	}
	if d.CacheReadInputTokens > 0 {
		u.CacheReadInputTokens = d.CacheReadInputTokens
	}
}

// chatCompletion is OpenAI's chat.completion.
type chatCompletion struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   chatUsage          `json:"usage"`
}

type completionChoice struct {
	Index        int               `json:"index"`
	Message      completionMessage `json:"message"`
	FinishReason string            `json:"finish_reason"`
	Logprobs     *struct{}         `json:"logprobs"`
}

type completionMessage struct {
	Role      string             `json:"role"`
	Content   *string            `json:"content"`
	Refusal   *string            `json:"refusal"`
	ToolCalls []responseToolCall `json:"tool_calls,omitempty"`
}

type responseToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// finishReason maps a Messages stop reason to OpenAI's finish reasons.
func finishReason(stop string) string {
	switch stop {
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "refusal":
		return "content_filter"
	}
	return "stop"
}

func compactJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "{}"
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// anthropicStatusError reads a Messages API error:
// {"type":"error","error":{"type":"…","message":"…"}}.
func anthropicStatusError(resp *http.Response, secret string) *Error {
	e := &Error{Kind: statusKind(resp.StatusCode), Status: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After")}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var body struct {
		Error anthropicErrorObject `json:"error"`
	}
	if json.Unmarshal(raw, &body) == nil {
		body.Error.fill(e, secret)
	}
	return e
}

type anthropicErrorObject struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// fill sets e's message, and its type in OpenAI's words.
func (o anthropicErrorObject) fill(e *Error, secret string) {
	e.Message = redact(o.Message, secret)
	switch o.Type {
	case "invalid_request_error", "not_found_error", "request_too_large":
		e.Type = "invalid_request_error"
	case "":
	default:
		e.Type = o.Type
	}
}

// anthropicStreamKind classifies an error event inside a stream, which
// arrives after a 200 and so carries no status.
func anthropicStreamKind(errType string) ErrorKind {
	switch errType {
	case "rate_limit_error":
		return RateLimited
	case "invalid_request_error", "not_found_error", "request_too_large":
		return Rejected
	case "authentication_error", "permission_error":
		return Unauthorized
	}
	return Unavailable
}
