package providers

import (
	"encoding/json"
	"path"
	"strconv"
	"strings"
)

// geminiRequest is a generateContent request, as the Gemini API and
// Vertex AI take it.
type geminiRequest struct {
	Contents          []geminiContent   `json:"contents"`
	SystemInstruction *geminiContent    `json:"systemInstruction,omitempty"`
	Tools             []geminiTool      `json:"tools,omitempty"`
	ToolConfig        *geminiToolConfig `json:"toolConfig,omitempty"`
	GenerationConfig  geminiGenConfig   `json:"generationConfig"`
	SafetySettings    json.RawMessage   `json:"safetySettings,omitempty"`
	CachedContent     string            `json:"cachedContent,omitempty"`
}

type geminiContent struct {
	Role  string       `json:"role,omitempty"`
	Parts []geminiPart `json:"parts"`
}

type geminiPart struct {
	Text             string                  `json:"text,omitempty"`
	Thought          bool                    `json:"thought,omitempty"`
	ThoughtSignature string                  `json:"thoughtSignature,omitempty"`
	InlineData       *geminiBlob             `json:"inlineData,omitempty"`
	FileData         *geminiFileData         `json:"fileData,omitempty"`
	FunctionCall     *geminiFunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *geminiFunctionResponse `json:"functionResponse,omitempty"`
}

type geminiBlob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

type geminiFileData struct {
	MimeType string `json:"mimeType"`
	FileURI  string `json:"fileUri"`
}

type geminiFunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

type geminiFunctionResponse struct {
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

type geminiTool struct {
	FunctionDeclarations []geminiFunctionDecl `json:"functionDeclarations"`
}

type geminiFunctionDecl struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
}

type geminiToolConfig struct {
	FunctionCallingConfig struct {
		Mode                 string   `json:"mode"`
		AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
	} `json:"functionCallingConfig"`
}

type geminiGenConfig struct {
	MaxOutputTokens    int64           `json:"maxOutputTokens,omitempty"`
	Temperature        json.RawMessage `json:"temperature,omitempty"`
	TopP               json.RawMessage `json:"topP,omitempty"`
	StopSequences      []string        `json:"stopSequences,omitempty"`
	Seed               json.RawMessage `json:"seed,omitempty"`
	PresencePenalty    json.RawMessage `json:"presencePenalty,omitempty"`
	FrequencyPenalty   json.RawMessage `json:"frequencyPenalty,omitempty"`
	ResponseMimeType   string          `json:"responseMimeType,omitempty"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema,omitempty"`
	ThinkingConfig     *geminiThinking `json:"thinkingConfig,omitempty"`
}

type geminiThinking struct {
	ThinkingBudget  *int64 `json:"thinkingBudget,omitempty"`
	IncludeThoughts bool   `json:"includeThoughts,omitempty"`
}

// geminiExtra is what Google's OpenAI-compatible endpoint takes in
// extra_body.google, read here too, so one request carries Gemini's own
// features to either kind: a thinking budget, cached content, safety
// settings.
type geminiExtra struct {
	Google *struct {
		ThinkingConfig *struct {
			ThinkingBudget  *int64 `json:"thinking_budget"`
			IncludeThoughts bool   `json:"include_thoughts"`
		} `json:"thinking_config"`
		CachedContent  string          `json:"cached_content"`
		SafetySettings json.RawMessage `json:"safety_settings"`
	} `json:"google"`
}

// geminiIgnored are the Chat Completions members generateContent has no
// counterpart for; a strict_parameters policy refuses them instead.
var geminiIgnored = []string{
	"audio", "function_call", "logit_bias", "logprobs", "metadata", "modalities", "prediction", "prompt_cache_key",
	"prompt_cache_options", "safety_identifier", "service_tier", "store", "top_logprobs", "user", "verbosity", "web_search_options",
	"parallel_tool_calls",
}

// geminiTranslator turns a Chat Completions request into generateContent.
type geminiTranslator struct {
	call *Call
	out  *geminiRequest
	// toolNames maps a tool call id to its function's name: a function
	// response names its function, where OpenAI names the call.
	toolNames map[string]string
}

// translateGemini builds the generateContent request for a call.
func translateGemini(call *Call, strict bool) (*geminiRequest, error) {
	req := call.Request
	if err := refuseIgnored(req, strict, geminiIgnored, "Gemini"); err != nil {
		return nil, err
	}
	if req.N > 1 {
		return nil, invalid("n", "unsupported_value", "Gemini models answer one choice through gw; 'n' must be 1.")
	}
	if req.Functions {
		return nil, invalid("functions", "unsupported_parameter", "'functions' is not supported for Gemini models; use 'tools'.")
	}
	t := &geminiTranslator{call: call, out: &geminiRequest{}, toolNames: map[string]string{}}
	for _, step := range []func() error{t.messages, t.tools, t.generation, t.extra} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return t.out, nil
}

// refuseIgnored refuses, under strict, a member the upstream cannot take.
func refuseIgnored(req *ChatRequest, strict bool, ignored []string, vendor string) error {
	if !strict {
		return nil
	}
	for _, name := range ignored {
		if raw, ok := req.Members.Get(name); ok && !neutral(name, raw) {
			return invalid(name, "unsupported_parameter",
				"'%s' is not supported by %s models, and a strict_parameters policy forbids dropping it.", name, vendor)
		}
	}
	return nil
}

func (t *geminiTranslator) add(role string, parts ...geminiPart) {
	if len(parts) == 0 {
		return
	}
	c := t.out.Contents
	if n := len(c); n > 0 && c[n-1].Role == role {
		c[n-1].Parts = append(c[n-1].Parts, parts...)
		return
	}
	t.out.Contents = append(c, geminiContent{Role: role, Parts: parts})
}

func (t *geminiTranslator) messages() error {
	for i, m := range t.call.Request.Messages {
		param := "messages[" + strconv.Itoa(i) + "]"
		if err := t.message(m, param); err != nil {
			return err
		}
	}
	if len(t.out.Contents) == 0 {
		return invalid("messages", "invalid_value", "Gemini models need at least one user or assistant message.")
	}
	return nil
}

func (t *geminiTranslator) message(m Message, param string) error {
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
		if t.out.SystemInstruction == nil {
			t.out.SystemInstruction = &geminiContent{}
		}
		for _, tx := range texts {
			t.out.SystemInstruction.Parts = append(t.out.SystemInstruction.Parts, geminiPart{Text: tx.Text})
		}
	case "user":
		out, err := geminiUserParts(text, parts, param+".content")
		if err != nil {
			return err
		}
		t.add("user", out...)
	case "assistant":
		out, err := t.assistantParts(m, text, parts, param)
		if err != nil {
			return err
		}
		t.add("model", out...)
	case "tool":
		t.add("user", t.functionResponse(m, text, parts))
	default:
		return invalid(param+".role", "unsupported_value", "The %q role is not supported for Gemini models.", m.Role)
	}
	return nil
}

func geminiUserParts(text string, parts []Part, param string) ([]geminiPart, error) {
	if parts == nil {
		if text == "" {
			return nil, nil
		}
		return []geminiPart{{Text: text}}, nil
	}
	out := make([]geminiPart, 0, len(parts))
	for j, p := range parts {
		at := param + "[" + strconv.Itoa(j) + "]"
		part, err := geminiUserPart(p, at)
		if err != nil {
			return nil, err
		}
		if part.Text != "" || part.InlineData != nil || part.FileData != nil {
			out = append(out, part)
		}
	}
	return out, nil
}

func geminiUserPart(p Part, at string) (geminiPart, error) {
	switch p.Type {
	case "text":
		return geminiPart{Text: p.Text}, nil
	case "image_url":
		return geminiMedia(p.ImageURL, at+".image_url.url")
	case "file":
		if p.FileData == "" {
			return geminiPart{}, invalid(at+".file.file_id", "unsupported_value", "Gemini models take files inline as file_data; file_id is not supported.")
		}
		return geminiMedia(p.FileData, at+".file.file_data")
	}
	return geminiPart{}, invalid(at+".type", "unsupported_value", "%s content is not supported for Gemini models.", p.Type)
}

// geminiMedia reads a data: URL as inline data, or a gs:// or https URL of
// a known file type as file data.
func geminiMedia(u, param string) (geminiPart, error) {
	if strings.HasPrefix(u, "data:") {
		src, err := mediaSource(u, param, false)
		if err != nil {
			return geminiPart{}, err
		}
		return geminiPart{InlineData: &geminiBlob{MimeType: src.MediaType, Data: src.Data}}, nil
	}
	if strings.HasPrefix(u, "gs://") || strings.HasPrefix(u, "https://") {
		if mime := mimeByExtension(u); mime != "" {
			return geminiPart{FileData: &geminiFileData{MimeType: mime, FileURI: u}}, nil
		}
	}
	return geminiPart{}, invalid(param, "invalid_value",
		"'%s' must be a base64 data: URL, or a gs:// or https URL ending in .png, .jpg, .jpeg, .webp, .gif or .pdf.", param)
}

func mimeByExtension(u string) string {
	switch strings.ToLower(path.Ext(strings.SplitN(u, "?", 2)[0])) {
	case ".png":
		return "image/png"
	case ".jpg", ".jpeg":
		return "image/jpeg"
	case ".webp":
		return "image/webp"
	case ".gif":
		return "image/gif"
	case ".pdf":
		return "application/pdf"
	}
	return ""
}

// geminiSignaturePrefix marks a tool call id that carries Gemini's thought
// signature: Gemini wants the signature of a function call back with it
// in the next turn, and the id is what a client sends back.
const geminiSignaturePrefix = "gemsig_"

func geminiCallID(index int, signature string) string {
	id := "call_" + strconv.Itoa(index)
	if signature != "" {
		return geminiSignaturePrefix + strconv.Itoa(index) + "_" + signature
	}
	return id
}

func geminiSignature(id string) string {
	rest, ok := strings.CutPrefix(id, geminiSignaturePrefix)
	if !ok {
		return ""
	}
	_, sig, _ := strings.Cut(rest, "_")
	return sig
}

func (t *geminiTranslator) assistantParts(m Message, text string, parts []Part, param string) ([]geminiPart, error) {
	var out []geminiPart
	texts, err := textBlocks(text, refusalsAsText(parts), param+".content")
	if err != nil {
		return nil, err
	}
	for _, tx := range texts {
		if tx.Text != "" {
			out = append(out, geminiPart{Text: tx.Text})
		}
	}
	for j, tc := range m.ToolCalls {
		args, err := toolArguments(tc, param+".tool_calls["+strconv.Itoa(j)+"].function.arguments")
		if err != nil {
			return nil, err
		}
		t.toolNames[tc.ID] = tc.Function.Name
		out = append(out, geminiPart{FunctionCall: &geminiFunctionCall{Name: tc.Function.Name, Args: args},
			ThoughtSignature: geminiSignature(tc.ID)})
	}
	return out, nil
}

// refusalsAsText is an assistant message's parts with refusals as text.
func refusalsAsText(parts []Part) []Part {
	if parts == nil {
		return nil
	}
	out := make([]Part, len(parts))
	for i, p := range parts {
		if p.Type == "refusal" {
			p.Type = "text"
		}
		out[i] = p
	}
	return out
}

// toolArguments reads a tool call's arguments, which must be a JSON
// object (or empty).
func toolArguments(tc ToolCall, param string) (json.RawMessage, error) {
	args := strings.TrimSpace(tc.Function.Arguments)
	if args == "" {
		return json.RawMessage("{}"), nil
	}
	if !json.Valid([]byte(args)) || args[0] != '{' {
		return nil, invalid(param, "invalid_value", "Tool call arguments must be a JSON object.")
	}
	return json.RawMessage(args), nil
}

// functionResponse answers a function call: the tool's output, as the
// object it is when it is one, else as {"content": text}.
func (t *geminiTranslator) functionResponse(m Message, text string, parts []Part) geminiPart {
	for _, p := range parts {
		text += p.Text
	}
	response := mustMarshal(map[string]string{"content": text})
	if trimmed := strings.TrimSpace(text); strings.HasPrefix(trimmed, "{") && json.Valid([]byte(trimmed)) {
		response = json.RawMessage(trimmed)
	}
	return geminiPart{FunctionResponse: &geminiFunctionResponse{Name: t.toolNames[m.ToolCallID], Response: response}}
}

func (t *geminiTranslator) tools() error {
	req := t.call.Request
	var decls []geminiFunctionDecl
	for i, tool := range req.Tools {
		if tool.Type != "function" {
			return invalid("tools["+strconv.Itoa(i)+"].type", "unsupported_value", "Only function tools are supported for Gemini models.")
		}
		d := geminiFunctionDecl{Name: tool.Function.Name, Description: tool.Function.Description}
		if len(tool.Function.Parameters) > 0 && !isNull(tool.Function.Parameters) {
			d.ParametersJSONSchema = tool.Function.Parameters
		}
		decls = append(decls, d)
	}
	if len(decls) == 0 {
		return nil
	}
	t.out.Tools = []geminiTool{{FunctionDeclarations: decls}}
	tc := req.ToolChoice
	if tc == nil {
		return nil
	}
	cfg := &geminiToolConfig{}
	switch tc.Mode {
	case "none":
		cfg.FunctionCallingConfig.Mode = "NONE"
	case "auto":
		cfg.FunctionCallingConfig.Mode = "AUTO"
	case "required":
		cfg.FunctionCallingConfig.Mode = "ANY"
	case "function":
		cfg.FunctionCallingConfig.Mode = "ANY"
		cfg.FunctionCallingConfig.AllowedFunctionNames = []string{tc.Function}
	default:
		return invalid("tool_choice", "unsupported_value", "tool_choice of type %q is not supported for Gemini models.", tc.Mode)
	}
	t.out.ToolConfig = cfg
	return nil
}

func (t *geminiTranslator) generation() error {
	req, g := t.call.Request, &t.out.GenerationConfig
	g.MaxOutputTokens = req.MaxTokens
	if t.call.MaxTokens > 0 {
		g.MaxOutputTokens = t.call.MaxTokens
	}
	g.StopSequences = req.Stop
	g.Temperature, g.TopP, g.Seed = member(req, "temperature"), member(req, "top_p"), member(req, "seed")
	g.PresencePenalty, g.FrequencyPenalty = member(req, "presence_penalty"), member(req, "frequency_penalty")
	if rf := req.ResponseFormat; rf != nil {
		switch rf.Type {
		case "json_object":
			g.ResponseMimeType = "application/json"
		case "json_schema":
			g.ResponseMimeType, g.ResponseJSONSchema = "application/json", rf.JSONSchema.Schema
		}
	}
	switch effort := req.ReasoningEffort; effort {
	case "":
	case "none":
		g.ThinkingConfig = &geminiThinking{ThinkingBudget: new(int64)}
	default:
		budget, ok := thinkingBudgets[effort]
		if !ok {
			return invalid("reasoning_effort", "invalid_value", "Invalid value for 'reasoning_effort': %q.", effort)
		}
		g.ThinkingConfig = &geminiThinking{ThinkingBudget: &budget}
	}
	return nil
}

// member is a request member that is set and not null.
func member(req *ChatRequest, name string) json.RawMessage {
	if raw, ok := req.Members.Get(name); ok && !isNull(raw) {
		return raw
	}
	return nil
}

// extra reads extra_body.google: Gemini's own features, which win over
// what the Chat Completions members imply.
func (t *geminiTranslator) extra() error {
	raw := member(t.call.Request, "extra_body")
	if raw == nil {
		return nil
	}
	var x geminiExtra
	if json.Unmarshal(raw, &x) != nil {
		return invalid("extra_body", "invalid_value", "'extra_body.google' must be an object of thinking_config, cached_content and safety_settings.")
	}
	g := x.Google
	if g == nil {
		return nil
	}
	if tc := g.ThinkingConfig; tc != nil {
		t.out.GenerationConfig.ThinkingConfig = &geminiThinking{ThinkingBudget: tc.ThinkingBudget, IncludeThoughts: tc.IncludeThoughts}
	}
	t.out.CachedContent = g.CachedContent
	if len(g.SafetySettings) > 0 && !isNull(g.SafetySettings) {
		t.out.SafetySettings = g.SafetySettings
	}
	return nil
}
