package providers

import (
	"encoding/json"
	"strconv"
	"strings"
)

// converseRequest is a Converse (and ConverseStream) request; the model is
// in the URL.
type converseRequest struct {
	Messages                     []converseMessage   `json:"messages"`
	System                       []converseBlock     `json:"system,omitempty"`
	InferenceConfig              *converseInference  `json:"inferenceConfig,omitempty"`
	ToolConfig                   *converseToolConfig `json:"toolConfig,omitempty"`
	AdditionalModelRequestFields map[string]any      `json:"additionalModelRequestFields,omitempty"`
}

type converseMessage struct {
	Role    string          `json:"role"`
	Content []converseBlock `json:"content"`
}

// converseBlock is a content block; exactly one member is set.
type converseBlock struct {
	Text             *string            `json:"text,omitempty"`
	Image            *converseMedia     `json:"image,omitempty"`
	Document         *converseMedia     `json:"document,omitempty"`
	ToolUse          *converseToolUse   `json:"toolUse,omitempty"`
	ToolResult       *converseResult    `json:"toolResult,omitempty"`
	ReasoningContent *converseReasoning `json:"reasoningContent,omitempty"`
	// CachePoint closes a prefix to cache (promptcache.go).
	CachePoint *converseCache `json:"cachePoint,omitempty"`
}

type converseMedia struct {
	Format string         `json:"format"`
	Name   string         `json:"name,omitempty"`
	Source converseSource `json:"source"`
}

type converseSource struct {
	Bytes      string `json:"bytes,omitempty"`
	S3Location *struct {
		URI string `json:"uri"`
	} `json:"s3Location,omitempty"`
}

type converseToolUse struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

type converseResult struct {
	ToolUseID string          `json:"toolUseId"`
	Content   []converseBlock `json:"content"`
}

type converseReasoning struct {
	ReasoningText *struct {
		Text      string `json:"text"`
		Signature string `json:"signature,omitempty"`
	} `json:"reasoningText,omitempty"`
}

type converseInference struct {
	MaxTokens     int64           `json:"maxTokens,omitempty"`
	Temperature   json.RawMessage `json:"temperature,omitempty"`
	TopP          json.RawMessage `json:"topP,omitempty"`
	StopSequences []string        `json:"stopSequences,omitempty"`
}

type converseToolConfig struct {
	Tools      []converseTool  `json:"tools"`
	ToolChoice json.RawMessage `json:"toolChoice,omitempty"`
}

// converseTool is a tool, or a cachePoint closing the tools before it.
type converseTool struct {
	ToolSpec   *converseToolSpec `json:"toolSpec,omitempty"`
	CachePoint *converseCache    `json:"cachePoint,omitempty"`
}

type converseToolSpec struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	InputSchema struct {
		JSON json.RawMessage `json:"json"`
	} `json:"inputSchema"`
}

// structuredTool is the tool a structured-output request is answered
// through: Converse has no response format, so the schema becomes a tool
// the model must call, and its input becomes the answer's text.
const structuredTool = "gw_structured_output"

// bedrockIgnored are the Chat Completions members Converse has no
// counterpart for; a strict_parameters policy refuses them instead.
var bedrockIgnored = []string{
	"audio", "frequency_penalty", "function_call", "logit_bias", "logprobs", "metadata", "modalities", "prediction",
	"presence_penalty", "prompt_cache_key", "safety_identifier", "seed", "service_tier", "store",
	"top_logprobs", "user", "verbosity", "web_search_options", "parallel_tool_calls",
}

// converseTranslator turns a Chat Completions request into Converse.
type converseTranslator struct {
	call *Call
	out  *converseRequest
}

func translateConverse(call *Call, strict bool) (*converseRequest, error) {
	req := call.Request
	if err := refuseIgnored(req, strict, bedrockIgnored, "Bedrock"); err != nil {
		return nil, err
	}
	if req.N > 1 {
		return nil, invalid("n", "unsupported_value", "Bedrock models return one choice; 'n' must be 1.")
	}
	if req.Functions {
		return nil, invalid("functions", "unsupported_parameter", "'functions' is not supported for Bedrock models; use 'tools'.")
	}
	t := &converseTranslator{call: call, out: &converseRequest{}}
	for _, step := range []func() error{t.messages, t.tools, t.structured, t.inference} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	conversePromptCache(call, t.out)
	return t.out, nil
}

func (t *converseTranslator) add(role string, blocks ...converseBlock) {
	if len(blocks) == 0 {
		return
	}
	m := t.out.Messages
	if n := len(m); n > 0 && m[n-1].Role == role {
		m[n-1].Content = append(m[n-1].Content, blocks...)
		return
	}
	t.out.Messages = append(m, converseMessage{Role: role, Content: blocks})
}

func (t *converseTranslator) messages() error {
	for i, m := range t.call.Request.Messages {
		if err := t.message(m, "messages["+strconv.Itoa(i)+"]"); err != nil {
			return err
		}
	}
	return nil
}

func (t *converseTranslator) message(m Message, param string) error {
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
		for _, tx := range texts {
			t.out.System = append(t.out.System, textBlock(tx.Text))
			if tx.CacheControl != nil {
				t.out.System = append(t.out.System, converseCachePoint())
			}
		}
	case "user":
		blocks, err := converseUserBlocks(text, parts, param+".content")
		if err != nil {
			return err
		}
		t.add("user", blocks...)
	case "assistant":
		blocks, err := converseAssistantBlocks(m, text, parts, param)
		if err != nil {
			return err
		}
		t.add("assistant", blocks...)
	case "tool":
		texts, err := textBlocks(text, parts, param+".content")
		if err != nil {
			return err
		}
		result := &converseResult{ToolUseID: m.ToolCallID, Content: []converseBlock{}}
		point := false
		for _, tx := range texts {
			result.Content = append(result.Content, textBlock(tx.Text))
			point = point || tx.CacheControl != nil
		}
		t.add("user", converseBlock{ToolResult: result})
		if point {
			// A cache point closes the tool result it follows.
			t.add("user", converseCachePoint())
		}
	default:
		return invalid(param+".role", "unsupported_value", "The %q role is not supported for Bedrock models.", m.Role)
	}
	return nil
}

func textBlock(s string) converseBlock { return converseBlock{Text: &s} }

func converseUserBlocks(text string, parts []Part, param string) ([]converseBlock, error) {
	if parts == nil {
		if text == "" {
			return nil, nil
		}
		return []converseBlock{textBlock(text)}, nil
	}
	out := make([]converseBlock, 0, len(parts))
	for j, p := range parts {
		at := param + "[" + strconv.Itoa(j) + "]"
		switch p.Type {
		case "text":
			out = append(out, textBlock(p.Text))
		case "image_url":
			media, err := converseMediaOf(p.ImageURL, at+".image_url.url", imageFormats)
			if err != nil {
				return nil, err
			}
			out = append(out, converseBlock{Image: media})
		case "file":
			if p.FileData == "" {
				return nil, invalid(at+".file.file_id", "unsupported_value", "Bedrock models take files inline as file_data; file_id is not supported.")
			}
			media, err := converseMediaOf(p.FileData, at+".file.file_data", documentFormats)
			if err != nil {
				return nil, err
			}
			media.Name = "document-" + strconv.Itoa(j+1)
			out = append(out, converseBlock{Document: media})
		default:
			return nil, invalid(at+".type", "unsupported_value", "%s content is not supported for Bedrock models.", p.Type)
		}
		if p.CacheBreakpoint {
			out = append(out, converseCachePoint())
		}
	}
	return out, nil
}

var (
	imageFormats    = map[string]string{"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}
	documentFormats = map[string]string{"application/pdf": "pdf", "text/csv": "csv", "text/plain": "txt", "text/html": "html",
		"text/markdown": "md"}
)

// converseMediaOf reads a base64 data: URL of a format Converse takes, or
// an s3:// URI (whose format is its extension's).
func converseMediaOf(u, param string, formats map[string]string) (*converseMedia, error) {
	if strings.HasPrefix(u, "s3://") {
		format := strings.ToLower(u[strings.LastIndexByte(u, '.')+1:])
		if format == "jpg" {
			format = "jpeg"
		}
		m := &converseMedia{Format: format}
		m.Source.S3Location = &struct {
			URI string `json:"uri"`
		}{u}
		return m, nil
	}
	src, err := mediaSource(u, param, false)
	if err != nil {
		return nil, invalid(param, "invalid_value", "'%s' must be a base64 data: URL or an s3:// URI for Bedrock models.", param)
	}
	format, ok := formats[src.MediaType]
	if !ok {
		return nil, invalid(param, "invalid_value", "Bedrock models do not take %s content.", src.MediaType)
	}
	return &converseMedia{Format: format, Source: converseSource{Bytes: src.Data}}, nil
}

func converseAssistantBlocks(m Message, text string, parts []Part, param string) ([]converseBlock, error) {
	var out []converseBlock
	texts, err := textBlocks(text, refusalsAsText(parts), param+".content")
	if err != nil {
		return nil, err
	}
	for _, tx := range texts {
		if tx.Text != "" {
			out = append(out, textBlock(tx.Text))
		}
	}
	for j, tc := range m.ToolCalls {
		args, err := toolArguments(tc, param+".tool_calls["+strconv.Itoa(j)+"].function.arguments")
		if err != nil {
			return nil, err
		}
		out = append(out, converseBlock{ToolUse: &converseToolUse{ToolUseID: tc.ID, Name: tc.Function.Name, Input: args}})
	}
	return out, nil
}

func (t *converseTranslator) tools() error {
	req := t.call.Request
	if tc := req.ToolChoice; tc != nil && tc.Mode == "none" {
		// Converse has no "none": a model offered no tools calls none.
		return nil
	}
	for i, tool := range req.Tools {
		if tool.Type != "function" {
			return invalid("tools["+strconv.Itoa(i)+"].type", "unsupported_value", "Only function tools are supported for Bedrock models.")
		}
		t.addTool(tool.Function.Name, tool.Function.Description, tool.Function.Parameters)
	}
	if t.out.ToolConfig == nil || req.ToolChoice == nil {
		return nil
	}
	switch tc := req.ToolChoice; tc.Mode {
	case "auto":
		t.out.ToolConfig.ToolChoice = json.RawMessage(`{"auto":{}}`)
	case "required":
		t.out.ToolConfig.ToolChoice = json.RawMessage(`{"any":{}}`)
	case "function":
		t.out.ToolConfig.ToolChoice = mustMarshal(map[string]any{"tool": map[string]string{"name": tc.Function}})
	default:
		return invalid("tool_choice", "unsupported_value", "tool_choice of type %q is not supported for Bedrock models.", tc.Mode)
	}
	return nil
}

func (t *converseTranslator) addTool(name, description string, schema json.RawMessage) {
	if len(schema) == 0 || isNull(schema) {
		schema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	tool := converseTool{ToolSpec: &converseToolSpec{Name: name, Description: description}}
	tool.ToolSpec.InputSchema.JSON = schema
	if t.out.ToolConfig == nil {
		t.out.ToolConfig = &converseToolConfig{}
	}
	t.out.ToolConfig.Tools = append(t.out.ToolConfig.Tools, tool)
}

// structured answers a response format through a forced tool call.
func (t *converseTranslator) structured() error {
	rf := t.call.Request.ResponseFormat
	if rf == nil || rf.Type == "text" {
		return nil
	}
	if len(t.call.Request.Tools) > 0 {
		return invalid("response_format", "unsupported_value",
			"Bedrock models answer a response_format through a tool call, so it cannot be combined with tools.")
	}
	schema := json.RawMessage(`{"type":"object"}`)
	if rf.Type == "json_schema" && len(rf.JSONSchema.Schema) > 0 {
		schema = rf.JSONSchema.Schema
	}
	t.addTool(structuredTool, "Answer with the structured output.", schema)
	t.out.ToolConfig.ToolChoice = json.RawMessage(`{"tool":{"name":"` + structuredTool + `"}}`)
	return nil
}

func (t *converseTranslator) inference() error {
	req, call := t.call.Request, t.call
	inf := &converseInference{MaxTokens: req.MaxTokens, StopSequences: req.Stop,
		Temperature: member(req, "temperature"), TopP: member(req, "top_p")}
	if call.MaxTokens > 0 {
		inf.MaxTokens = call.MaxTokens
	}
	if effort := req.ReasoningEffort; effort != "" && effort != "none" {
		if !strings.Contains(call.UpstreamModel, "anthropic.") {
			return invalid("reasoning_effort", "unsupported_parameter", "reasoning_effort is supported for Anthropic models on Bedrock.")
		}
		budget, ok := thinkingBudgets[effort]
		if !ok {
			return invalid("reasoning_effort", "invalid_value", "Invalid value for 'reasoning_effort': %q.", effort)
		}
		if inf.MaxTokens == 0 {
			inf.MaxTokens = max(call.DefaultMaxTokens, budget+1)
		}
		budget = min(budget, inf.MaxTokens-1)
		if budget < minThinkingBudget {
			return invalid("max_tokens", "invalid_value", "Reasoning on Anthropic models needs max_tokens above %d.", minThinkingBudget)
		}
		t.out.AdditionalModelRequestFields = map[string]any{"thinking": anthropicThinking{Type: "enabled", BudgetTokens: budget}}
	}
	if inf.MaxTokens != 0 || inf.StopSequences != nil || inf.Temperature != nil || inf.TopP != nil {
		t.out.InferenceConfig = inf
	}
	return nil
}
