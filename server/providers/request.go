package providers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/gw-gateway/gw/server/catalog"
)

// ChatRequest is an OpenAI Chat Completions request, read strictly enough
// to route it (which model, what it requires of the model) and to translate
// it for upstreams that speak another protocol, and kept whole so an
// OpenAI-compatible upstream receives what the client sent.
type ChatRequest struct {
	// Members holds every top-level member exactly as sent. Adapters copy
	// it; nobody edits it.
	Members Members
	// body is the text Members are slices of (nil for a request not
	// parsed), which an upstream of the dialect gets with a few members
	// written over it.
	body []byte
	// memberBuf holds a parsed request's Members when there are at most
	// eight (most requests): in the request's own allocation.
	memberBuf [8]Member

	Model  string
	Stream bool
	// IncludeUsage: the client asked for the final usage chunk
	// (stream_options.include_usage).
	IncludeUsage bool
	Messages     []Message
	Tools        []Tool
	// Functions: the request uses the legacy functions member.
	Functions         bool
	ToolChoice        *ToolChoice
	ParallelToolCalls *bool
	ResponseFormat    *ResponseFormat
	ReasoningEffort   string
	// MaxTokens is max_completion_tokens, else max_tokens; 0 when neither
	// is set.
	MaxTokens int64
	Stop      []string
	// N is the number of choices asked for; 0 when not set.
	N    int64
	User string
}

// Message is one chat message.
type Message struct {
	Role string
	// Content is checked when the request is parsed but decoded only by a
	// translation that needs it (Decode): routing and policies need no
	// more than its part types, and a prompt of many megabytes is then
	// held once, as the body, not again as a string.
	Content Content
	// Name is the optional participant name.
	Name       string
	ToolCalls  []ToolCall
	ToolCallID string
}

// Content is a message's content as the client sent it: a string, an
// array of parts, or absent.
type Content struct {
	// raw is the content's JSON, a slice of the request body; nil when
	// absent or null.
	raw json.RawMessage
	// types are the parts' types, in order; nil for a string or absent.
	types []string
}

// IsParts reports whether the content is an array of parts.
func (c Content) IsParts() bool { return c.types != nil }

// Decode returns the content: the text of a string (parts nil), or the
// parts of an array (non-nil). Absent content is an empty string.
func (c Content) Decode() (text string, parts []Part, err error) {
	switch {
	case c.raw == nil:
		return "", nil, nil
	case !c.IsParts():
		err = json.Unmarshal(c.raw, &text)
		return text, nil, err
	}
	var wire []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
		// Breakpoint is OpenAI's explicit prompt-cache breakpoint
		// ({"mode": "explicit"}), which other vendors' translations
		// carry as their own cache markers (promptcache.go).
		Breakpoint json.RawMessage `json:"prompt_cache_breakpoint"`
		ImageURL   *struct {
			URL string `json:"url"`
		} `json:"image_url"`
		File *struct {
			FileData string `json:"file_data"`
			FileID   string `json:"file_id"`
			Filename string `json:"filename"`
		} `json:"file"`
	}
	if err := json.Unmarshal(c.raw, &wire); err != nil {
		return "", nil, err
	}
	parts = make([]Part, len(wire))
	for j, p := range wire {
		out := Part{Type: p.Type, CacheBreakpoint: len(p.Breakpoint) > 0 && !isNull(p.Breakpoint)}
		switch {
		case p.Type == "text":
			out.Text = p.Text
		case p.Type == "refusal":
			out.Text = p.Refusal
		case p.Type == "image_url" && p.ImageURL != nil:
			out.ImageURL = p.ImageURL.URL
		case p.Type == "file" && p.File != nil:
			out.FileData, out.FileID, out.Filename = p.File.FileData, p.File.FileID, p.File.Filename
		}
		parts[j] = out
	}
	return "", parts, nil
}

// Part is one content part.
type Part struct {
	// Type is text, refusal, image_url, input_audio or file.
	Type string
	// Text is a text or refusal part's text.
	Text string
	// ImageURL is an image_url part's URL: https or a data: URL.
	ImageURL string
	// FileData (a data: URL), FileID and Filename are a file part's.
	FileData, FileID, Filename string
	// CacheBreakpoint: the part ends a prefix to cache
	// (prompt_cache_breakpoint).
	CacheBreakpoint bool
}

// ToolCall is a tool call an assistant message made.
type ToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Tool is a tool the model may call.
type Tool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      *bool           `json:"strict"`
	} `json:"function"`
}

// ToolChoice is tool_choice: Mode is none, auto or required for the string
// forms; for the object forms it is the object's type ("function",
// "allowed_tools", "custom") and Function the named function.
type ToolChoice struct {
	Mode     string
	Function string
}

// ResponseFormat is response_format.
type ResponseFormat struct {
	// Type is text, json_object or json_schema.
	Type       string
	JSONSchema struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Strict *bool           `json:"strict"`
	}
}

// KnownMembers are the request members of OpenAI's Chat Completions API. A
// strict_parameters policy refuses any other.
var KnownMembers = []string{
	"audio", "frequency_penalty", "function_call", "functions", "logit_bias", "logprobs",
	"max_completion_tokens", "max_tokens", "messages", "metadata", "modalities", "model", "n",
	"parallel_tool_calls", "prediction", "presence_penalty", "prompt_cache_key", "prompt_cache_options", "reasoning_effort",
	"response_format", "safety_identifier", "seed", "service_tier", "stop", "store", "stream",
	"stream_options", "temperature", "tool_choice", "tools", "top_logprobs", "top_p", "user",
	"verbosity", "web_search_options",
}

// UnknownMembers lists, sorted, the request's members that are not in
// KnownMembers.
func (r *ChatRequest) UnknownMembers() []string {
	var out []string
	for _, m := range r.Members {
		if !slices.Contains(KnownMembers, m.Name) {
			out = append(out, m.Name)
		}
	}
	slices.Sort(out)
	return out
}

// Capabilities lists what the request requires of a model (spec 2.8):
// streaming when it streams, tools when it offers tools, structured_output
// for a JSON-schema response format, reasoning when it sets a reasoning
// effort (a parameter only reasoning models accept).
func (r *ChatRequest) Capabilities() []catalog.Capability {
	var out []catalog.Capability
	if r.Stream {
		out = append(out, catalog.CapabilityStreaming)
	}
	if len(r.Tools) > 0 || r.Functions {
		out = append(out, catalog.CapabilityTools)
	}
	if r.ReasoningEffort != "" {
		out = append(out, catalog.CapabilityReasoning)
	}
	if r.ResponseFormat != nil && r.ResponseFormat.Type == "json_schema" {
		out = append(out, catalog.CapabilityStructuredOutput)
	}
	return out
}

// Modalities lists the input modalities the request's content uses beyond
// text, in catalog order.
func (r *ChatRequest) Modalities() []catalog.Modality {
	var image, audio, pdf bool
	for _, m := range r.Messages {
		for _, t := range m.Content.types {
			switch t {
			case "image_url":
				image = true
			case "input_audio":
				audio = true
			case "file":
				pdf = true
			}
		}
	}
	var out []catalog.Modality
	if image {
		out = append(out, catalog.ModalityImage)
	}
	if audio {
		out = append(out, catalog.ModalityAudio)
	}
	if pdf {
		out = append(out, catalog.ModalityPDF)
	}
	return out
}

// ParseChatRequest reads a Chat Completions request body. It fails with an
// *InvalidRequestError naming the member at fault.
// The request's members (Members) are slices of body, which the caller
// must not change afterwards.
func ParseChatRequest(body []byte) (*ChatRequest, error) {
	r := &ChatRequest{body: body}
	members, err := parseObjectInto(r.memberBuf[:0], body)
	if err != nil {
		return nil, err
	}
	r.Members = members
	d := memberDecoder{members: members}

	if raw, ok := d.present("model"); !ok {
		return nil, invalid("model", "missing_required_parameter", "Missing required parameter: 'model'.")
	} else if err := d.decode("model", raw, &r.Model); err != nil || r.Model == "" {
		return nil, invalid("model", "invalid_type", "'model' must be a non-empty string.")
	}
	if err := d.optional("stream", &r.Stream); err != nil {
		return nil, err
	}
	if raw, ok := d.present("stream_options"); ok {
		// What the SDKs send, read as it is; anything else decoded.
		switch string(raw) {
		case `{"include_usage":true}`:
			r.IncludeUsage = true
		case `{"include_usage":false}`:
		default:
			var so struct {
				IncludeUsage *bool `json:"include_usage"`
			}
			if err := d.decode("stream_options", raw, &so); err != nil {
				return nil, err
			}
			r.IncludeUsage = so.IncludeUsage != nil && *so.IncludeUsage
		}
	}
	if err := r.parseMessages(&d); err != nil {
		return nil, err
	}
	if err := r.parseTools(&d); err != nil {
		return nil, err
	}
	if err := r.parseResponseFormat(&d); err != nil {
		return nil, err
	}
	if err := d.optional("reasoning_effort", &r.ReasoningEffort); err != nil {
		return nil, err
	}
	for _, name := range []string{"max_tokens", "max_completion_tokens"} {
		n, err := d.positiveInt(name)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			// max_completion_tokens, read second, wins: it is the current
			// name, and max_tokens its deprecated alias.
			r.MaxTokens = n
		}
	}
	if r.N, err = d.positiveInt("n"); err != nil {
		return nil, err
	}
	if raw, ok := d.present("stop"); ok {
		var one string
		if json.Unmarshal(raw, &one) == nil {
			r.Stop = []string{one}
		} else if err := d.decode("stop", raw, &r.Stop); err != nil {
			return nil, invalid("stop", "invalid_type", "'stop' must be a string or an array of strings.")
		}
	}
	if err := d.optional("user", &r.User); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *ChatRequest) parseMessages(d *memberDecoder) error {
	raw, ok := d.present("messages")
	if !ok {
		return invalid("messages", "missing_required_parameter", "Missing required parameter: 'messages'.")
	}
	if kind := valueKind(raw); kind != "array" {
		return invalid("messages", "invalid_type", "Invalid type for 'messages': expected an array, got %s.", kind)
	}
	// The messages and their content stay slices of the body.
	n := 0
	arrayElements(raw, func([]byte) { n++ })
	if n == 0 {
		return invalid("messages", "empty_array", "'messages' must contain at least one message.")
	}
	r.Messages = make([]Message, 0, n)
	i := 0
	var err error
	arrayElements(raw, func(item []byte) {
		if err != nil {
			return
		}
		if m, ok := scanMessage(item); ok {
			r.Messages = append(r.Messages, m)
		} else {
			var m Message
			m, err = parseMessage(d, i, item)
			r.Messages = append(r.Messages, m)
		}
		i++
	})
	return err
}

// parseMessage reads one message the general way (scanMessage is the
// common case without its allocations).
func parseMessage(d *memberDecoder, i int, item []byte) (Message, error) {
	param := "messages[" + strconv.Itoa(i) + "]"
	if kind := valueKind(item); kind != "object" {
		return Message{}, invalid(param, "invalid_type", "Invalid type for '%s': expected an object, got %s.", param, kind)
	}
	// content is read apart: decoding it here would copy it.
	var w struct {
		Role       string     `json:"role"`
		Name       string     `json:"name"`
		ToolCalls  []ToolCall `json:"tool_calls"`
		ToolCallID string     `json:"tool_call_id"`
	}
	if err := d.decode(param, item, &w); err != nil {
		return Message{}, err
	}
	switch w.Role {
	case "system", "developer", "user", "assistant", "tool", "function":
	case "":
		return Message{}, invalid(param+".role", "missing_required_parameter", "Missing required parameter: '%s.role'.", param)
	default:
		return Message{}, invalid(param+".role", "invalid_value", "Invalid value for '%s.role': %q.", param, w.Role)
	}
	content, err := parseContent(d, param+".content", memberValue(item, "content"))
	if err != nil {
		return Message{}, err
	}
	return Message{Role: w.Role, Content: content, Name: w.Name, ToolCalls: w.ToolCalls, ToolCallID: w.ToolCallID}, nil
}

// messageKeys are the members parseMessage's decode reads; encoding/json
// matches them whatever their case, which scanMessage leaves to it.
var messageKeys = []string{"role", "name", "tool_calls", "tool_call_id", "content"}

// scanMessage reads the common message, whose members are plain keys, a
// known role, plain strings (or null) for name and tool_call_id, no
// tool_calls, and text or no content, as parseMessage would, without
// decoding: the same Message, or ok false and parseMessage decides.
// TestScanMessageMatchesParse holds it to parseMessage.
func scanMessage(item []byte) (Message, bool) {
	var stack [8]jsonMember
	members, isObject := objectMembers(stack[:0], item)
	if !isObject {
		return Message{}, false
	}
	var m Message
	var content []byte
	for _, mb := range members {
		key, plain := asciiKey(mb.key)
		if !plain {
			return Message{}, false
		}
		v := mb.value
		switch string(key) {
		case "role":
			role, ok := knownRole(v)
			if !ok {
				return Message{}, false
			}
			m.Role = role
		case "name", "tool_call_id":
			if string(v) == "null" { // encoding/json leaves the field as it was
				continue
			}
			str, ok := plainString(v)
			if !ok {
				return Message{}, false
			}
			if string(key) == "name" {
				m.Name = str
			} else {
				m.ToolCallID = str
			}
		case "tool_calls":
			if string(v) != "null" {
				return Message{}, false
			}
		case "content":
			content = v
		default:
			for _, k := range messageKeys {
				if bytes.EqualFold(key, []byte(k)) {
					return Message{}, false
				}
			}
		}
	}
	if m.Role == "" {
		return Message{}, false
	}
	switch valueKind(content) {
	case "nothing", "null":
	case "string":
		m.Content = Content{raw: bytes.TrimSpace(content)}
	default:
		return Message{}, false
	}
	return m, true
}

// knownRole is a role as a constant string, for a plain JSON string of a
// role a message may have.
func knownRole(v []byte) (string, bool) {
	for _, r := range [...]string{"system", "user", "assistant", "developer", "tool", "function"} {
		if len(v) == len(r)+2 && v[0] == '"' && string(v[1:len(v)-1]) == r {
			return r, true
		}
	}
	return "", false
}

// plainString decodes a JSON string whose bytes are its text: quoted,
// without escapes, quotes or control characters inside, valid UTF-8
// (encoding/json would change invalid bytes). ok is false for anything
// else, JSON or not, which json.Unmarshal is left to read.
func plainString(v []byte) (string, bool) {
	n := len(v)
	if n < 2 || v[0] != '"' || v[n-1] != '"' {
		return "", false
	}
	inner := v[1 : n-1]
	for _, c := range inner {
		if c < 0x20 || c == '"' || c == '\\' {
			return "", false
		}
	}
	if !utf8.Valid(inner) {
		return "", false
	}
	return string(inner), true
}

// parseContent checks a message's content without decoding its strings,
// which may be most of the body: the parts' types and required members.
func parseContent(d *memberDecoder, param string, raw json.RawMessage) (Content, error) {
	raw = bytes.TrimSpace(raw)
	switch kind := valueKind(raw); kind {
	case "nothing", "null":
		return Content{}, nil
	case "string":
		return Content{raw: raw}, nil
	case "array":
	default:
		return Content{}, invalid(param, "invalid_type", "'%s' must be a string or an array of content parts.", param)
	}
	var parts []struct {
		Type     string      `json:"type"`
		Text     stringShape `json:"text"`
		Refusal  stringShape `json:"refusal"`
		ImageURL *struct {
			URL stringShape `json:"url"`
		} `json:"image_url"`
		File *struct {
			FileData stringShape `json:"file_data"`
			FileID   stringShape `json:"file_id"`
			Filename string      `json:"filename"`
		} `json:"file"`
	}
	if err := d.decode(param, raw, &parts); err != nil {
		return Content{}, err
	}
	c := Content{raw: raw, types: make([]string, len(parts))}
	for j, p := range parts {
		at := param + "[" + strconv.Itoa(j) + "]"
		switch p.Type {
		case "text", "refusal", "input_audio":
		case "image_url":
			if p.ImageURL == nil || !p.ImageURL.URL.given {
				return Content{}, invalid(at+".image_url.url", "missing_required_parameter", "Missing required parameter: '%s.image_url.url'.", at)
			}
		case "file":
			if p.File == nil || (!p.File.FileData.given && !p.File.FileID.given) {
				return Content{}, invalid(at+".file", "missing_required_parameter", "'%s.file' needs file_data or file_id.", at)
			}
		default:
			return Content{}, invalid(at+".type", "invalid_value", "Invalid content part type %q at '%s'.", p.Type, at)
		}
		c.types[j] = p.Type
	}
	return c, nil
}

func (r *ChatRequest) parseTools(d *memberDecoder) error {
	if raw, ok := d.present("tools"); ok {
		if err := d.decode("tools", raw, &r.Tools); err != nil {
			return err
		}
		for i, t := range r.Tools {
			if t.Type == "function" && t.Function.Name == "" {
				return invalid("tools["+strconv.Itoa(i)+"].function.name", "missing_required_parameter", "Missing required parameter: 'tools[%d].function.name'.", i)
			}
		}
	}
	if raw, ok := d.present("functions"); ok {
		var fns []json.RawMessage
		if err := d.decode("functions", raw, &fns); err != nil {
			return err
		}
		r.Functions = len(fns) > 0
	}
	if raw, ok := d.present("tool_choice"); ok {
		var mode string
		if json.Unmarshal(raw, &mode) == nil {
			switch mode {
			case "none", "auto", "required":
			default:
				return invalid("tool_choice", "invalid_value", "Invalid value for 'tool_choice': %q.", mode)
			}
			r.ToolChoice = &ToolChoice{Mode: mode}
		} else {
			var obj struct {
				Type     string `json:"type"`
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			}
			if err := d.decode("tool_choice", raw, &obj); err != nil || obj.Type == "" {
				return invalid("tool_choice", "invalid_type", "'tool_choice' must be none, auto, required or a tool choice object.")
			}
			r.ToolChoice = &ToolChoice{Mode: obj.Type, Function: obj.Function.Name}
		}
	}
	if raw, ok := d.present("parallel_tool_calls"); ok {
		var b bool
		if err := d.decode("parallel_tool_calls", raw, &b); err != nil {
			return err
		}
		r.ParallelToolCalls = &b
	}
	return nil
}

func (r *ChatRequest) parseResponseFormat(d *memberDecoder) error {
	raw, ok := d.present("response_format")
	if !ok {
		return nil
	}
	var w struct {
		Type       string          `json:"type"`
		JSONSchema json.RawMessage `json:"json_schema"`
	}
	if err := d.decode("response_format", raw, &w); err != nil {
		return err
	}
	rf := &ResponseFormat{Type: w.Type}
	switch w.Type {
	case "text", "json_object":
	case "json_schema":
		if err := d.decode("response_format.json_schema", w.JSONSchema, &rf.JSONSchema); err != nil || len(w.JSONSchema) == 0 {
			return invalid("response_format.json_schema", "missing_required_parameter", "Missing required parameter: 'response_format.json_schema'.")
		}
	default:
		return invalid("response_format.type", "invalid_value", "Invalid value for 'response_format.type': %q.", w.Type)
	}
	r.ResponseFormat = rf
	return nil
}

// memberDecoder decodes members into Go values, turning encoding/json's
// errors, which name Go types, into messages in the request's terms.
type memberDecoder struct {
	members Members
}

// present returns a member unless it is absent or null: OpenAI treats an
// explicit null as not set, and so do the adapters.
func (d *memberDecoder) present(name string) (json.RawMessage, bool) {
	raw, ok := d.members.Get(name)
	if !ok || string(bytes.TrimSpace(raw)) == "null" {
		return nil, false
	}
	return raw, true
}

func (d *memberDecoder) optional(name string, v any) error {
	if raw, ok := d.present(name); ok {
		return d.decode(name, raw, v)
	}
	return nil
}

func (d *memberDecoder) decode(param string, raw json.RawMessage, v any) error {
	// The scalars every request has (the model; a stream's flag) without
	// encoding/json's reflection and decoder (two allocations and most of
	// a parse's time for a request's model, issue 33's thirteenth round);
	// anything else, and anything json.Unmarshal would read otherwise, the
	// general way below. FuzzDecodeScalars holds the two to each other.
	switch p := v.(type) {
	case *string:
		if s, ok := plainString(raw); ok {
			*p = s
			return nil
		}
	case *bool:
		switch string(raw) {
		case "true":
			*p = true
			return nil
		case "false":
			*p = false
			return nil
		}
	}
	err := json.Unmarshal(raw, v)
	if err == nil {
		return nil
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		at := param
		if typeErr.Field != "" {
			at += "." + typeErr.Field
		}
		return invalid(at, "invalid_type", "Invalid type for '%s': expected %s, got %s.", at, jsonKind(typeErr.Type), typeErr.Value)
	}
	return invalid(param, "invalid_value", "Invalid value for '%s'.", param)
}

// positiveInt reads an optional integer member of at least 1; 0 when
// absent.
func (d *memberDecoder) positiveInt(name string) (int64, error) {
	raw, ok := d.present(name)
	if !ok {
		return 0, nil
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
	if err != nil || n < 1 {
		return 0, invalid(name, "invalid_value", "'%s' must be an integer of at least 1.", name)
	}
	return n, nil
}

// jsonKind names a Go type by the JSON value it decodes from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return fmt.Sprintf("a %s", t.Kind())
}

// LowEffort reports whether the request asks for no or minimal reasoning
// (reasoning_effort none or minimal): what a model that does not reason
// does anyway, so such a model may serve it with the effort left out.
func (r *ChatRequest) LowEffort() bool {
	return r.ReasoningEffort == "none" || r.ReasoningEffort == "minimal"
}

// WithoutReasoningEffort is the request with reasoning_effort left out,
// for a model that does not reason; r is not changed.
func (r *ChatRequest) WithoutReasoningEffort() *ChatRequest {
	c := *r
	c.ReasoningEffort = ""
	c.Members = r.Members.Clone()
	c.Members.Delete("reasoning_effort")
	// Written from its members (OpenAI.body), not over the body that has
	// the effort.
	c.body = nil
	return &c
}
