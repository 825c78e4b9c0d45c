package providers

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/gw-gateway/gw/server/tokens"
)

// Prompt-cache breakpoints across vendors (issue 35, part 4). Each vendor
// marks the end of a prefix to cache in its own words:
//
//   - OpenAI (GPT-5.6 and later): prompt_cache_breakpoint: {mode:
//     "explicit"} on an input content part, and prompt_cache_options
//     ({mode, ttl}) on the request;
//   - Anthropic: cache_control: {type: "ephemeral", ttl?: "5m"|"1h"} on a
//     block, a tool, or a system block, at most four a request;
//   - Bedrock Converse: a {cachePoint: {type: "default", ttl?}} block after
//     the content, system block or tool it closes.
//
// Chat Completions is the hub every translation goes through, so a
// translated breakpoint is carried on the hub's content parts in OpenAI's
// own form, and each adapter writes it in its vendor's words. What is kept,
// moved and dropped is in docs/dialects.md ("Prompt-cache breakpoints").

// breakpointMember is OpenAI's explicit breakpoint, as a member of a chat
// content part.
const breakpointMember = `"prompt_cache_breakpoint":{"mode":"explicit"}`

// maxAnthropicBreakpoints is the most cache_control markers Anthropic's API
// takes in one request (more is a 400).
const maxAnthropicBreakpoints = 4

// PromptCacheInjection is a workspace's prompt_cache setting as a call
// carries it: breakpoints are added at the end of the tool list and of the
// system prompt, when the caller marked none and that prefix is at least
// MinPrefixTokens long.
type PromptCacheInjection struct {
	MinPrefixTokens int64
}

// withBreakpoint is a chat content part (a JSON object in pieces) with
// OpenAI's breakpoint member added before its closing brace.
func withBreakpoint(part rope) rope {
	if len(part) == 0 {
		return part
	}
	last := bytes.TrimRight(part[len(part)-1], " \t\r\n")
	if len(last) == 0 || last[len(last)-1] != '}' {
		return part
	}
	tail := make([]byte, 0, len(last)+len(breakpointMember)+1)
	tail = append(append(append(tail, last[:len(last)-1]...), ','), breakpointMember...)
	tail = append(tail, '}')
	out := slices.Clone(part[:len(part)-1])
	return append(out, tail)
}

// marked reports whether a JSON object carries member name with a value
// other than null (a Messages block's cache_control, a Responses part's
// prompt_cache_breakpoint).
func marked(obj []byte, name string) bool {
	v := bytes.TrimSpace(memberValue(obj, name))
	return len(v) > 0 && !isNull(v)
}

// messagesSystemParts is a Messages system prompt of text blocks, some of
// which carry cache_control, as a chat system message of text parts with
// the marked ones ending in breakpoints; ok is false when no block is
// marked (the system prompt is then sent as one string, as before).
func messagesSystemParts(raw json.RawMessage) (rope, bool) {
	raw = bytes.TrimSpace(raw)
	if valueKind(raw) != "array" {
		return nil, false
	}
	var parts []rope
	any := false
	arrayElements(raw, func(b []byte) {
		var h struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(b, &h) != nil || h.Type != "text" {
			return
		}
		part := rawObject(`{"type":"text","text":`, rope{jsonStringOr(bytes.TrimSpace(memberValue(b, "text")))}, `}`)
		if marked(b, "cache_control") {
			part, any = withBreakpoint(part), true
		}
		parts = append(parts, part)
	})
	if !any {
		return nil, false
	}
	return rawObject(`{"role":"system","content":`, rawArray(parts), `}`), true
}

// openAIBreakpoints reports whether an OpenAI-shaped upstream takes
// prompt_cache_breakpoint and prompt_cache_options: OpenAI's and Azure's
// GPT-5.6 family and later (older models answer them with a 400; look-alike
// servers do not know them). Decided by the upstream model's name, as
// OpenAI's documentation gates the feature by family.
func openAIBreakpoints(d Dialect, model string) bool {
	if d != DialectOpenAI && d != DialectAzure {
		return false
	}
	name := model
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	rest, ok := strings.CutPrefix(name, "gpt-")
	if !ok {
		return false
	}
	major, minor, _ := strings.Cut(rest, ".")
	minor, _, _ = strings.Cut(minor, "-")
	if i := strings.IndexFunc(major, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		major, minor = major[:i], ""
	}
	switch {
	case len(major) == 0:
		return false
	case len(major) > 1 || major[0] > '5':
		return true
	case major == "5" && len(minor) > 0 && minor[0] >= '0' && minor[0] <= '9':
		n := 0
		for _, r := range minor {
			if r < '0' || r > '9' {
				break
			}
			n = n*10 + int(r-'0')
		}
		return n >= 6
	}
	return false
}

// openAIBreakpointEdits are the edits that take breakpoints out of a
// translated request (a Messages or Responses client's, carried on the
// hub) bound for an OpenAI-shaped upstream that does not take them. A
// client's own Chat Completions request goes as sent: what it asks of its
// model is its own. The messages are taken from an edit of them already
// made (the developer role's), else from the request.
func openAIBreakpointEdits(d Dialect, call *Call, edits []Edit) ([]Edit, error) {
	req := call.Request
	if !call.Translated || openAIBreakpoints(d, call.UpstreamModel) {
		return edits, nil
	}
	if _, ok := req.Members.Get("prompt_cache_options"); ok {
		edits = append(edits, removed("prompt_cache_options"))
	}
	raw := []byte(req.Members.Value("messages"))
	at := slices.IndexFunc(edits, func(e Edit) bool { return e.Name == "messages" && e.Value != nil })
	if at >= 0 {
		raw = edits[at].Value.bytes()
	}
	if !bytes.Contains(raw, []byte(`"prompt_cache_breakpoint"`)) {
		return edits, nil
	}
	var msgs []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return nil, invalid("messages", "invalid_value", "'messages' must be an array of message objects.")
	}
	for _, msg := range msgs {
		content := bytes.TrimSpace(msg["content"])
		if valueKind(content) != "array" {
			continue
		}
		var parts []map[string]json.RawMessage
		if json.Unmarshal(content, &parts) != nil {
			continue
		}
		for _, p := range parts {
			delete(p, "prompt_cache_breakpoint")
		}
		msg["content"] = mustMarshal(parts)
	}
	if at >= 0 {
		edits[at] = setTo("messages", mustMarshal(msgs))
		return edits, nil
	}
	return append(edits, setTo("messages", mustMarshal(msgs))), nil
}

// anthropicCache is Anthropic's cache_control.
type anthropicCache struct {
	Type string `json:"type"`
	TTL  string `json:"ttl,omitempty"`
}

// ephemeral is the cache_control a translated breakpoint becomes: the
// five-minute cache, whose writes cost 1.25 times input as OpenAI's do
// (an hour's cost twice; OpenAI's only TTL, 30 minutes, has no Anthropic
// counterpart, and the cheaper one is taken).
func ephemeral(on bool) *anthropicCache {
	if !on {
		return nil
	}
	return &anthropicCache{Type: "ephemeral"}
}

// anthropicMarkers calls fn with a pointer to every cache_control slot of a
// translated Messages request, in prefix order: tools, system, messages.
// fn may clear or set the marker.
func anthropicMarkers(out *anthropicRequest, fn func(**anthropicCache)) {
	for i := range out.Tools {
		fn(&out.Tools[i].CacheControl)
	}
	for i := range out.System {
		fn(&out.System[i].CacheControl)
	}
	for _, m := range out.Messages {
		for j, b := range m.Content {
			switch b := b.(type) {
			case anthropicText:
				fn(&b.CacheControl)
				m.Content[j] = b
			case anthropicMedia:
				fn(&b.CacheControl)
				m.Content[j] = b
			case anthropicToolResult:
				fn(&b.CacheControl)
				m.Content[j] = b
			}
		}
	}
}

// anthropicPromptCache finishes a translated request's markers: more than
// Anthropic's four keep the last four (the longest prefixes, which the
// shorter ones' cached entries are looked up through anyway); none, with
// injection on and a long enough stable prefix, marks the end of the tools
// and of the system prompt.
func anthropicPromptCache(call *Call, out *anthropicRequest) {
	n := 0
	anthropicMarkers(out, func(c **anthropicCache) {
		if *c != nil {
			n++
		}
	})
	if n > maxAnthropicBreakpoints {
		drop := n - maxAnthropicBreakpoints
		anthropicMarkers(out, func(c **anthropicCache) {
			if *c != nil && drop > 0 {
				*c, drop = nil, drop-1
			}
		})
		return
	}
	if n > 0 || !injectFor(call) {
		return
	}
	if len(out.Tools) > 0 {
		out.Tools[len(out.Tools)-1].CacheControl = ephemeral(true)
	}
	if len(out.System) > 0 {
		out.System[len(out.System)-1].CacheControl = ephemeral(true)
	}
}

// injectFor reports whether a call's stable prefix (its system prompt and
// tools, as the client sent them) gets breakpoints injected: the
// workspace asks for it, the client marked none, and the prefix is at
// least the workspace's minimum, counted with the upstream model's
// counter (the same estimate budgets use).
func injectFor(call *Call) bool {
	inj := call.PromptCache
	if inj == nil || call.Request == nil {
		return false
	}
	req := call.Request
	var prefix int64
	c := tokens.ForModel(call.UpstreamModel)
	if n := call.Native; n != nil {
		// A forwarded request is counted as sent: the chat request a
		// Messages request is routed by may hold an outline of its long
		// strings.
		for _, name := range []string{"system", "tools"} {
			if raw, ok := n.Members.Get(name); ok {
				prefix += tokens.CountJSON(c, raw)
			}
		}
		return prefix > 0 && prefix >= inj.MinPrefixTokens
	}
	for _, m := range req.Messages {
		if m.Role != "system" && m.Role != "developer" {
			continue
		}
		text, parts, err := m.Content.Decode()
		if err != nil {
			return false
		}
		prefix += c.Count(text)
		for _, p := range parts {
			if p.CacheBreakpoint {
				return false
			}
			prefix += c.Count(p.Text)
		}
	}
	if raw, ok := req.Members.Get("tools"); ok {
		prefix += tokens.CountJSON(c, raw)
	}
	return prefix > 0 && prefix >= inj.MinPrefixTokens && !chatHasBreakpoint(req)
}

// chatHasBreakpoint reports whether any message of a chat request carries
// a breakpoint.
func chatHasBreakpoint(req *ChatRequest) bool {
	return bytes.Contains(req.Members.Value("messages"), []byte(`"prompt_cache_breakpoint"`))
}

// converseCaches reports whether a Bedrock model takes cachePoint blocks:
// Anthropic's Claude and Amazon's Nova families (others answer them with a
// ValidationException, so their breakpoints are left out).
func converseCaches(model string) bool {
	return strings.Contains(model, "anthropic.") || strings.Contains(model, "amazon.nova")
}

// converseCachePoint is a cachePoint block.
func converseCachePoint() converseBlock {
	return converseBlock{CachePoint: &converseCache{Type: "default"}}
}

// converseCache is a cachePoint.
type converseCache struct {
	Type string `json:"type"`
	TTL  string `json:"ttl,omitempty"`
}

// conversePromptCache finishes a Converse request's cache points: for a
// model without them, the translated ones are taken out; else, with
// injection on and no breakpoint of the caller's, a point closes the tools
// (Claude only: Nova caches no tools) and the system prompt. Converse
// takes four points, as Anthropic's API does; the earliest are dropped.
func conversePromptCache(call *Call, out *converseRequest) {
	caches := converseCaches(call.UpstreamModel)
	points := 0
	for _, b := range out.System {
		if b.CachePoint != nil {
			points++
		}
	}
	for _, m := range out.Messages {
		for _, b := range m.Content {
			if b.CachePoint != nil {
				points++
			}
		}
	}
	drop := points
	if caches {
		drop = max(points-maxAnthropicBreakpoints, 0)
	}
	if drop > 0 {
		out.System = dropCachePoints(out.System, &drop)
		for i := range out.Messages {
			out.Messages[i].Content = dropCachePoints(out.Messages[i].Content, &drop)
		}
	}
	if !caches || points > 0 || !injectFor(call) {
		return
	}
	if out.ToolConfig != nil && len(out.ToolConfig.Tools) > 0 && strings.Contains(call.UpstreamModel, "anthropic.") {
		out.ToolConfig.Tools = append(out.ToolConfig.Tools, converseTool{CachePoint: &converseCache{Type: "default"}})
	}
	if len(out.System) > 0 {
		out.System = append(out.System, converseCachePoint())
	}
}

// dropCachePoints removes the first *n cachePoint blocks of blocks.
func dropCachePoints(blocks []converseBlock, n *int) []converseBlock {
	return slices.DeleteFunc(blocks, func(b converseBlock) bool {
		if b.CachePoint != nil && *n > 0 {
			*n--
			return true
		}
		return false
	})
}

// marked reports whether a Messages block carries cache_control.
func (b *messagesBlockHead) marked() bool {
	return len(b.CacheControl) > 0 && !isNull(b.CacheControl)
}

// messagesInjection are the edits that inject breakpoints into a Messages
// request forwarded as sent (to Anthropic, Claude on Vertex AI or
// Bedrock): cache_control on the last tool and the last system block,
// when the workspace asks for it and the client wrote no cache_control
// anywhere. The system prompt is taken from an edit already made of it
// (Claude Code's folded system turns), else as sent.
func messagesInjection(call *Call) []Edit {
	n := call.Native
	if n == nil || bytes.Contains(n.Body, []byte(`"cache_control"`)) || !injectFor(call) {
		return nil
	}
	var edits []Edit
	sys := []byte(n.Members.Value("system"))
	for _, e := range n.Edits {
		if e.Name == "system" && e.Value != nil {
			sys = e.Value.bytes()
		}
	}
	if v, ok := markLast(sys); ok {
		edits = append(edits, setTo("system", v))
	}
	if v, ok := markLast(n.Members.Value("tools")); ok {
		edits = append(edits, setTo("tools", v))
	}
	return edits
}

// markLast is a Messages system prompt or tool list with cache_control on
// its last element (a string system prompt becomes one text block).
func markLast(raw []byte) ([]byte, bool) {
	raw = bytes.TrimSpace(raw)
	var s string
	if valueKind(raw) == "string" && json.Unmarshal(raw, &s) == nil && s != "" {
		return mustMarshal([]any{anthropicText{Type: "text", Text: s, CacheControl: ephemeral(true)}}), true
	}
	var items []map[string]json.RawMessage
	if valueKind(raw) != "array" || json.Unmarshal(raw, &items) != nil || len(items) == 0 || items[len(items)-1] == nil {
		return nil, false
	}
	items[len(items)-1]["cache_control"] = json.RawMessage(`{"type":"ephemeral"}`)
	return mustMarshal(items), true
}
