package providers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Dialect is the variant of Chat Completions an OpenAI-shaped upstream
// speaks.
type Dialect int

const (
	// DialectOpenAI is api.openai.com: the output limit is
	// max_completion_tokens (its reasoning models refuse max_tokens).
	DialectOpenAI Dialect = iota
	// DialectCompatible is the common subset look-alike servers (Mistral,
	// DeepSeek, Groq, vLLM, Ollama) accept: max_tokens, and no developer
	// role.
	DialectCompatible
	// DialectGoogle is Gemini's OpenAI-compatible endpoint, {base}/openai,
	// which speaks the compatible dialect.
	DialectGoogle
	// DialectAzure is Azure OpenAI: OpenAI's dialect at a deployment's
	// URL with an api-version, the api-key header or an Entra ID token,
	// and content filtering that answers finish_reason content_filter.
	DialectAzure
)

// OpenAI calls upstreams that speak Chat Completions. The client's request
// goes through member for member, so parameters gw does not know of (a
// vLLM server's top_k, say) reach the server; only the model, the output
// limit, the stream options and, for look-alikes, the developer role are
// rewritten.
type OpenAI struct {
	Client  *http.Client
	Dialect Dialect

	// noStreamOptions marks the credential and model pairs whose upstream
	// refused stream_options (Mistral answers 422 extra_forbidden, and
	// reports a stream's usage unasked), with the bundle generation the
	// refusal was seen under: such a pair is asked without it until the
	// next bundle, so it costs one refused request per bundle rather than
	// one per stream, and no other model at the same URL loses its usage.
	noStreamOptions sync.Map // streamOptionsKey → uint64 generation

	// tokens are Azure's Entra ID tokens, by credential.
	tokens oauthTokens
}

// streamOptionsKey is what a stream_options refusal is remembered by.
type streamOptionsKey struct{ credential, model string }

// Check accepts every request: the upstream speaks the client's protocol,
// so whatever it cannot do, it says itself.
func (a *OpenAI) Check(*Call, bool) error { return nil }

// Complete implements Adapter.
func (a *OpenAI) Complete(ctx context.Context, call *Call) (*Completion, error) {
	resp, err := a.send(ctx, call, noStream)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := readAnswer(resp.Body, resp.ContentLength)
	if err != nil {
		return nil, transportError(err)
	}
	if a.Dialect == DialectAzure && answerFiltered(raw) {
		return nil, errContentFilter()
	}
	body, rawUsage, rawTier, err := rewriteAnswer(raw, modelJSON(call.ResponseModelJSON, call.ResponseModel))
	if err != nil {
		return nil, &Error{Kind: Unavailable, Status: resp.StatusCode, Message: err.Error()}
	}
	var u Usage
	if rawUsage != nil {
		u = decodeOpenAIUsage(rawUsage)
	}
	u = estimate(u, call, answerTokens(raw))
	if rawTier != nil {
		u.ServiceTier = ServiceTierName(rawTier)
	}
	return &Completion{Body: body, Usage: u}, nil
}

// rewriteAnswer sets a Chat Completions answer's model member and returns
// the answer, encoded as json.Marshal encodes it as a map, with its usage
// and service_tier members, if any (found by the same walk). An answer with
// a member name that is not plain ASCII takes the map's way
// (rewriteAnswerMap), which setMember matches byte for byte otherwise.
func rewriteAnswer(raw []byte, model json.RawMessage) (body, usage, tier json.RawMessage, err error) {
	body, also, ok, plain := setMember(raw, "model", model, [2]string{"usage", "service_tier"})
	if !ok {
		return nil, nil, nil, errNotObject
	}
	if !plain {
		return rewriteAnswerMap(raw, model)
	}
	return body, also[0], also[1], nil
}

var errNotObject = errors.New("the upstream's answer is not a JSON object")

// rewriteAnswerMap is rewriteAnswer by a decode into a map and an encode.
func rewriteAnswerMap(raw []byte, model json.RawMessage) (body, usage, tier json.RawMessage, err error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, nil, nil, errNotObject
	}
	usage, tier = m["usage"], m["service_tier"]
	m["model"] = model
	body, err = json.Marshal(m)
	if err != nil {
		return nil, nil, nil, errors.New("the upstream's answer is not valid JSON")
	}
	return body, usage, tier, nil
}

// Stream implements Adapter.
func (a *OpenAI) Stream(ctx context.Context, call *Call) (ChunkStream, error) {
	key := streamOptionsKey{call.CredentialID, call.UpstreamModel}
	gen, marked := a.noStreamOptions.Load(key)
	refuses := marked && gen.(uint64) == call.Generation
	resp, err := a.send(ctx, call, streamWithOptions(!refuses))
	var e *Error
	if !refuses && errors.As(err, &e) && refusesStreamOptions(e) {
		// Only this credential and model, until the next bundle; the
		// request is sent once more without it, and its usage counted by
		// gw unless the upstream reports it unasked.
		a.noStreamOptions.Store(key, call.Generation)
		resp, err = a.send(ctx, call, streamWithOptions(false))
	}
	if err != nil {
		return nil, err
	}
	s := &openAIStream{body: resp.Body, sse: newSSEReader(resp.Body), call: call, filtered: a.Dialect == DialectAzure}
	s.chunk.members, s.chunk.deltas = s.memberBuf[:0], s.deltaBuf[:0]
	return s, nil
}

// streamMode says whether and how to ask for a stream.
type streamMode int

const (
	noStream streamMode = iota
	streamWithUsage
	streamBare
)

func streamWithOptions(ok bool) streamMode {
	if ok {
		return streamWithUsage
	}
	return streamBare
}

// refusesStreamOptions recognizes an upstream's refusal of the
// stream_options member gw added.
func refusesStreamOptions(e *Error) bool {
	return e.Kind == Rejected && (e.Status == http.StatusBadRequest || e.Status == http.StatusUnprocessableEntity) &&
		strings.Contains(e.Message, "stream_options")
}

// jsonTrue and includeUsageOnly are member values every streamed
// request's body gets; edits only read them.
var (
	jsonTrue         = []byte("true")
	includeUsageOnly = []byte(`{"include_usage":true}`)
)

// onlyIncludeUsage reports whether stream_options (an object, checked
// with the request) has include_usage for its only member, as the SDKs
// send it when asked for usage.
func onlyIncludeUsage(raw []byte) bool {
	var stack [2]jsonMember
	members, ok := objectMembers(stack[:0], raw)
	return ok && len(members) == 1 && isKey(members[0].key, "include_usage")
}

func (a *OpenAI) url(call *Call) string {
	switch a.Dialect {
	case DialectGoogle:
		return trimBase(call.BaseURL) + "/openai/chat/completions"
	case DialectAzure:
		return azureDeploymentURL(call, "/chat/completions")
	}
	return trimBase(call.BaseURL) + "/chat/completions"
}

func (a *OpenAI) send(ctx context.Context, call *Call, stream streamMode) (*http.Response, error) {
	body, err := a.body(call, stream)
	if err != nil {
		return nil, err
	}
	authorize := bearerKey
	if a.Dialect == DialectAzure {
		auth, err := azureAuth(ctx, a.Client, &a.tokens, call)
		if err != nil {
			return nil, err
		}
		authorize = headerAuth(auth)
	}
	return send(ctx, a.Client, call, upstreamPost{url: a.url(call), body: body, accept: acceptFor(stream != noStream),
		authorize: authorize, refusal: openAIRefusal})
}

// body is the upstream request: the client's members with the model,
// output limit and streaming members rewritten, written over the request's
// bytes (editObject), which are neither decoded nor copied.
func (a *OpenAI) body(call *Call, stream streamMode) (rope, error) {
	req := call.Request
	// Room for the most edits a request takes here but the breakpoints'.
	edits := append(make([]Edit, 0, 8), setTo("model", modelJSON(call.UpstreamModelJSON, call.UpstreamModel)), removed("max_tokens"), removed("max_completion_tokens"))
	limit := req.MaxTokens
	if call.MaxTokens > 0 {
		limit = call.MaxTokens
	}
	if limit > 0 {
		name := "max_tokens"
		if a.Dialect == DialectOpenAI || a.Dialect == DialectAzure {
			name = "max_completion_tokens"
		}
		edits = append(edits, setTo(name, []byte(strconv.FormatInt(limit, 10))))
	}

	switch stream {
	case streamBare:
		edits = append(edits, setTo("stream", jsonTrue), removed("stream_options"))
	case streamWithUsage:
		// Usage arrives in a final chunk only when asked for; gw always
		// needs it, and drops that chunk again for a client that did not
		// ask (openAIStream.Recv).
		raw, ok := req.Members.Get("stream_options")
		if !ok || isNull(raw) || onlyIncludeUsage(raw) {
			// The common cases, and what the map's way below encodes for
			// them: a constant, not a map and a marshal per stream.
			edits = append(edits, setTo("stream", jsonTrue), setTo("stream_options", includeUsageOnly))
			break
		}
		opts := map[string]json.RawMessage{}
		_ = json.Unmarshal(raw, &opts) // already checked to be an object or null
		if opts == nil {
			opts = map[string]json.RawMessage{}
		}
		opts["include_usage"] = json.RawMessage("true")
		edits = append(edits, setTo("stream", jsonTrue), setTo("stream_options", mustMarshal(opts)))
	}

	if a.Dialect != DialectOpenAI && slices.ContainsFunc(req.Messages, func(msg Message) bool { return msg.Role == "developer" }) {
		// Look-alike servers know the developer role's predecessor only.
		var msgs []map[string]json.RawMessage
		if err := json.Unmarshal(req.Members.Value("messages"), &msgs); err != nil {
			return nil, invalid("messages", "invalid_value", "'messages' must be an array of message objects.")
		}
		for _, msg := range msgs {
			if string(msg["role"]) == `"developer"` {
				msg["role"] = json.RawMessage(`"system"`)
			}
		}
		edits = append(edits, setTo("messages", mustMarshal(msgs)))
	}
	edits, err := openAIBreakpointEdits(a.Dialect, call, edits)
	if err != nil {
		return nil, err
	}
	if req.body == nil {
		// A request made by hand rather than parsed: its members are all
		// there is.
		m := req.Members.Clone()
		for _, e := range edits {
			if e.Value == nil {
				m.Delete(e.Name)
			} else {
				m.Set(e.Name, e.Value.bytes())
			}
		}
		body, err := encodeMembers(m)
		if err != nil {
			return nil, invalid("", "invalid_json", "The request body is not valid JSON.")
		}
		return rope{body}, nil
	}
	body, ok := editObject(req.body, edits)
	if !ok {
		return nil, invalid("", "invalid_json", "The request body is not valid JSON.")
	}
	return body, nil
}

// openAIStream relays an upstream's chunks with gw's model id, noting
// usage as it passes.
type openAIStream struct {
	// end is how it ended, for Close (closeStream).
	end streamEnd
	// serviceTier is the last service_tier a chunk named.
	serviceTier string
	body        io.ReadCloser
	sse         *sseReader
	call        *Call
	usage       Usage
	done        bool
	// finished: a chunk carried a finish_reason, so the answer is whole
	// even if [DONE] never comes.
	finished bool
	// model is the client's model id, encoded once per stream; members and
	// compact are scratch space reused from chunk to chunk.
	model   json.RawMessage
	chunk   chunkWalk
	compact bytes.Buffer
	// memberBuf and deltaBuf back the chunk's lists up to a chunk's
	// usual size (one allocation with the stream, none per chunk).
	memberBuf [16]jsonMember
	deltaBuf  [6]jsonMember
	// view is RecvView's buffer, reused from chunk to chunk.
	view []byte
	// relayed is the answer's text so far, counted if no usage comes.
	relayed relayed
	// filtered: a choice that finishes with content_filter ends the
	// stream with that error (Azure's content filtering).
	filtered bool
}

// Pending reports whether a whole event is already buffered, so the next
// Recv returns without waiting on the upstream: the caller may hold the
// chunk it has and write both at once.
func (s *openAIStream) Pending() bool { return !s.done && s.sse.ready() }

// Recv returns the next chunk to relay: the upstream's bytes with gw's
// model id, less the usage chunk gw asked for on a client's behalf.
func (s *openAIStream) Recv() ([]byte, error) { return s.end.note(s.recv(false)) }

// RecvView is Recv into the stream's own buffer (ViewStream).
func (s *openAIStream) RecvView() ([]byte, error) { return s.end.note(s.recv(true)) }

func (s *openAIStream) recv(view bool) ([]byte, error) {
	for !s.done {
		c, err := s.nextChunk()
		if err == nil {
			err = s.note(c)
		}
		if err != nil {
			s.done = true
			return nil, err
		}
		if !s.call.Request.IncludeUsage && string(bytes.TrimSpace(c.choices)) == "[]" {
			// The usage chunk gw asked for on the client's behalf.
			continue
		}
		if view {
			s.view = s.relay(s.view[:0])
			return s.view, nil
		}
		return s.relay(nil), nil
	}
	return nil, io.EOF
}

// chunkParts are the members of a chunk gw reads; the chunk's members
// are in s.chunk.members.
type chunkParts struct {
	choices, usage, xGroq, errObj, serviceTier json.RawMessage
	// read: the choices were read in the chunk's one pass (s.chunk's
	// deltas and finished); otherwise note reads them.
	read bool
}

// nextChunk reads the next event and splits it into members. The end of
// the stream is io.EOF; an upstream that ends before a finish_reason was
// cut off (some servers end without [DONE], after one).
func (s *openAIStream) nextChunk() (chunkParts, error) {
	_, data, err := s.sse.next()
	switch {
	case err == io.EOF && !s.finished:
		return chunkParts{}, &Error{Kind: Unavailable, Message: "the upstream stream ended before its last chunk", Cause: ErrStreamTruncated}
	case err == io.EOF:
		return chunkParts{}, io.EOF
	case err != nil:
		return chunkParts{}, transportError(err)
	case bytes.Equal(data, []byte("[DONE]")):
		return chunkParts{}, io.EOF
	}
	// The chunk is relayed as the upstream wrote it, with the model member
	// rewritten in the bytes: no decode into a map, no re-encode.
	notObject := func() error {
		return &Error{Kind: Unavailable, Message: "the upstream sent an event that is not a JSON object"}
	}
	var ok, read bool
	if bytes.IndexByte(data, '\n') >= 0 {
		// An event's data spread over lines: compact it, so that the
		// relayed event is one data line.
		if !validJSON(data) {
			return chunkParts{}, notObject()
		}
		s.compact.Reset()
		_ = json.Compact(&s.compact, data)
		data = s.compact.Bytes()
		s.chunk.members, ok = objectMembers(s.chunk.members[:0], data)
	} else {
		// Checked, split into members and its choices read in one pass.
		ok, read = validChunk(&s.chunk, data)
	}
	if !ok {
		return chunkParts{}, notObject()
	}
	c := chunkParts{read: read}
	for _, m := range s.chunk.members {
		switch {
		case isKey(m.key, "choices"):
			c.choices = m.value
		case isKey(m.key, "usage"):
			c.usage = m.value
		case isKey(m.key, "x_groq"):
			c.xGroq = m.value
		case isKey(m.key, "error"):
			c.errObj = m.value
		case isKey(m.key, "service_tier"):
			c.serviceTier = m.value
		}
	}
	return c, nil
}

// note takes what a chunk says of the answer: an error, a filtered
// choice, a finish, the text so far, the usage.
func (s *openAIStream) note(c chunkParts) error {
	if c.errObj != nil && !isNull(c.errObj) {
		e := &Error{Kind: Unavailable}
		fillOpenAIError(e, c.errObj, s.call.Secret)
		return e
	}
	if s.filtered && choicesFiltered(c.choices) {
		return errContentFilter()
	}
	// One walk of the choices: the deltas' text, and whether one
	// finished.
	if c.read {
		s.relayed.chatDeltas(s.chunk.deltas)
		if s.chunk.finished {
			s.finished = true
		}
	} else if s.relayed.chatDelta(c.choices) {
		s.finished = true
	}
	if c.serviceTier != nil {
		s.serviceTier = ServiceTierName(c.serviceTier)
	}
	if c.usage != nil && !isNull(c.usage) {
		s.usage = decodeOpenAIUsage(c.usage)
	} else if c.xGroq != nil {
		// Groq reports a stream's usage in its own member.
		var xg struct {
			Usage json.RawMessage `json:"usage"`
		}
		if json.Unmarshal(c.xGroq, &xg) == nil && len(xg.Usage) > 0 && !isNull(xg.Usage) {
			s.usage = decodeOpenAIUsage(xg.Usage)
		}
	}
	return nil
}

// relay writes the chunk's members back with gw's model id (added when
// the upstream sent none), without the usage a client did not ask for,
// appended to dst: a fresh slice per chunk when dst is nil (callers of
// Recv may keep it), the stream's view buffer for RecvView.
func (s *openAIStream) relay(dst []byte) []byte {
	if s.model == nil {
		s.model = jsonString(s.call.ResponseModel)
	}
	dropUsage := !s.call.Request.IncludeUsage
	size := len(s.model) + 16
	for _, m := range s.chunk.members {
		size += len(m.key) + len(m.value) + 2
	}
	out := slices.Grow(dst, size)
	out = append(out, '{')
	sawModel := false
	for _, m := range s.chunk.members {
		if dropUsage && isKey(m.key, "usage") {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(append(out, m.key...), ':')
		if isKey(m.key, "model") {
			out, sawModel = append(out, s.model...), true
		} else {
			out = append(out, m.value...)
		}
	}
	if !sawModel {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(append(out, `"model":`...), s.model...)
	}
	return append(out, '}')
}

// Usage is the upstream's usage, completed by gw's count where the stream
// has not (yet) reported it.
func (s *openAIStream) Usage() Usage {
	u := estimate(s.relayed.checked(s.usage), s.call, &s.relayed)
	u.ServiceTier = s.serviceTier
	return u
}

func (s *openAIStream) Close() error { return closeStream(s.body, s.end) }

// openAIUsage is Chat Completions' usage object; DeepSeek reports its cache
// hits in members of its own.
type openAIUsage struct {
	PromptTokens            int64                `json:"prompt_tokens"`
	CompletionTokens        int64                `json:"completion_tokens"`
	TotalTokens             int64                `json:"total_tokens"`
	PromptTokensDetails     *openAIPromptDetails `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details,omitempty"`
	PromptCacheHitTokens int64 `json:"prompt_cache_hit_tokens,omitempty"`
}

// openAIPromptDetails are the prompt's cached tokens: read from the
// cache, and (GPT-5.6 on, with explicit cache breakpoints) written to it.
type openAIPromptDetails struct {
	CachedTokens     int64 `json:"cached_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
}

// decodeOpenAIUsage converts usage to gw's disjoint categories: OpenAI's
// prompt_tokens include the cached ones. A total above prompt and
// completion together (Gemini's compatible endpoint leaves its thinking
// out of completion_tokens) is output too, reasoning the model did not
// show: billed, as the provider bills it. A usage object that cannot be
// read is not reported, and gw counts the request itself.
func decodeOpenAIUsage(raw json.RawMessage) Usage {
	u, ok := scanOpenAIUsage(raw)
	if !ok && json.Unmarshal(raw, &u) != nil {
		return Usage{}
	}
	cached := u.PromptCacheHitTokens
	if u.PromptTokensDetails != nil && u.PromptTokensDetails.CachedTokens > 0 {
		cached = u.PromptTokensDetails.CachedTokens
	}
	prompt, completion := clampCount(u.PromptTokens), clampCount(u.CompletionTokens)
	cached = max(0, min(cached, prompt))
	var written int64
	if u.PromptTokensDetails != nil {
		written = max(0, min(u.PromptTokensDetails.CacheWriteTokens, prompt-cached))
	}
	var reasoning int64
	if d := u.CompletionTokensDetails; d != nil {
		reasoning = max(0, min(d.ReasoningTokens, completion))
	}
	if hidden := clampCount(u.TotalTokens) - prompt - completion; hidden > 0 {
		completion, reasoning = clampCount(completion+hidden), clampCount(reasoning+hidden)
	}
	return Usage{
		InputTokens:      prompt - cached - written,
		OutputTokens:     completion,
		CacheReadTokens:  cached,
		CacheWriteTokens: written,
		ReasoningTokens:  reasoning,
	}.reported()
}

// scanOpenAIUsage reads a usage object as json.Unmarshal fills an
// openAIUsage, without its allocations (every answer and every stream has
// one). It only takes the shapes whose result it is sure of: keys written
// plainly in ASCII, integers written as integers that fit, null, and
// detail objects of those; a key that differs from a known one only in
// case (encoding/json would take it), an escaped key, another kind of
// value, or anything not valid JSON makes ok false, and the caller
// decodes the slow way. TestScanOpenAIUsageMatchesUnmarshal and
// FuzzScanOpenAIUsage hold it to json.Unmarshal.
func scanOpenAIUsage(raw []byte) (u openAIUsage, ok bool) {
	if !validJSON(raw) {
		return u, false
	}
	var stack [12]jsonMember
	members, isObject := objectMembers(stack[:0], raw)
	if !isObject {
		return u, false
	}
	var prompt, completion usageDetail
	for _, m := range members {
		key, plain := asciiKey(m.key)
		if !plain {
			return u, false
		}
		var ok bool
		switch string(key) {
		case "prompt_tokens_details":
			ok = prompt.scan(m.value, "cached_tokens", "cache_write_tokens")
		case "completion_tokens_details":
			ok = completion.scan(m.value, "reasoning_tokens", "")
		default:
			ok = u.scanCount(key, m.value)
		}
		if !ok {
			return u, false
		}
	}
	if prompt.present {
		u.PromptTokensDetails = &openAIPromptDetails{prompt.n, prompt.n2}
	}
	if completion.present {
		u.CompletionTokensDetails = &struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		}{completion.n}
	}
	return u, true
}

// scanCount reads one of the usage object's counts. A member the decode
// would match only by case-folding (encoding/json does) is left to it:
// the scan reports it cannot answer.
func (u *openAIUsage) scanCount(key, value []byte) bool {
	var dst *int64
	switch string(key) {
	case "prompt_tokens":
		dst = &u.PromptTokens
	case "completion_tokens":
		dst = &u.CompletionTokens
	case "total_tokens":
		dst = &u.TotalTokens
	case "prompt_cache_hit_tokens":
		dst = &u.PromptCacheHitTokens
	default:
		for _, known := range openAIUsageKeys {
			if bytes.EqualFold(key, []byte(known)) {
				return false
			}
		}
		return true
	}
	return scanInt(value, dst)
}

// usageDetail is a details object's counts (inner, and inner2 when the
// object has two) as the decode would leave them: a details object
// decoded again after an earlier one fills the same struct (encoding/json
// reuses the pointer), and null drops it.
type usageDetail struct {
	present bool
	n, n2   int64
}

// scan reads a details object's inner counts; inner2 "" reads one.
func (d *usageDetail) scan(value []byte, inner, inner2 string) bool {
	if string(value) == "null" {
		d.present, d.n, d.n2 = false, 0, 0
		return true
	}
	if !d.present {
		d.present, d.n, d.n2 = true, 0, 0
	}
	var inStack [8]jsonMember
	in, isObject := objectMembers(inStack[:0], value)
	if !isObject {
		return false
	}
	for _, im := range in {
		ik, plain := asciiKey(im.key)
		switch {
		case !plain:
			return false
		case string(ik) == inner:
			if !scanInt(im.value, &d.n) {
				return false
			}
		case inner2 != "" && string(ik) == inner2:
			if !scanInt(im.value, &d.n2) {
				return false
			}
		case bytes.EqualFold(ik, []byte(inner)), inner2 != "" && bytes.EqualFold(ik, []byte(inner2)):
			return false
		}
	}
	return true
}

var openAIUsageKeys = []string{"prompt_tokens", "completion_tokens", "total_tokens", "prompt_cache_hit_tokens",
	"prompt_tokens_details", "completion_tokens_details"}

// asciiKey is a member's key without its quotes when it is printable
// ASCII without escapes.
func asciiKey(key []byte) ([]byte, bool) {
	if len(key) < 2 {
		return nil, false
	}
	k := key[1 : len(key)-1]
	for _, c := range k {
		if c == '\\' || c < 0x20 || c >= 0x80 {
			return nil, false
		}
	}
	return k, true
}

// scanInt sets *dst from an integer literal that fits an int64, leaves it
// for null (as encoding/json does), and is false for anything else.
func scanInt(v []byte, dst *int64) bool {
	if string(v) == "null" {
		return true
	}
	neg := len(v) > 0 && v[0] == '-'
	digits := v
	if neg {
		digits = v[1:]
	}
	if len(digits) == 0 || len(digits) > 19 {
		return false
	}
	var n uint64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + uint64(c-'0')
	}
	switch {
	case !neg && n <= math.MaxInt64:
		*dst = int64(n)
	case neg && n <= 1<<63:
		*dst = int64(-n)
	default:
		return false
	}
	return true
}

// openAIStatusError reads an upstream's error answer. Look-alike servers
// shape errors in several ways; the message is taken from whichever is
// found: {"error":{"message",…}} (OpenAI), {"error":"…"}, {"message",…}
// (Mistral), [{"error":{…}}] (Gemini), {"detail":"…"} (FastAPI servers).
func openAIStatusError(resp *http.Response, secret string) *Error {
	e := &Error{Kind: statusKind(resp.StatusCode), Status: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After")}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '[' {
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) == nil && len(list) > 0 {
			raw = list[0]
		}
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil {
		return e
	}
	switch {
	case top["error"] != nil:
		fillOpenAIError(e, top["error"], secret)
	case top["message"] != nil:
		fillOpenAIError(e, raw, secret)
	case top["detail"] != nil:
		var detail string
		if json.Unmarshal(top["detail"], &detail) == nil {
			e.Message = redact(detail, secret)
		}
	}
	return e
}

// fillOpenAIError reads an error object, or a bare error string, into e.
func fillOpenAIError(e *Error, raw json.RawMessage, secret string) {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		e.Message = redact(text, secret)
		return
	}
	var obj struct {
		Message json.RawMessage `json:"message"`
		Type    json.RawMessage `json:"type"`
		Param   json.RawMessage `json:"param"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(raw, &obj) != nil {
		return
	}
	// Mistral's message is sometimes an object (pydantic's detail list);
	// its JSON text still says what was wrong.
	msg := stringOrEmpty(obj.Message)
	if msg == "" && len(obj.Message) > 0 && !isNull(obj.Message) {
		msg = compactJSON(obj.Message)
	}
	e.Message = redact(msg, secret)
	e.Type = stringOrEmpty(obj.Type)
	e.Param = redact(stringOrEmpty(obj.Param), secret)
	// Gemini's code is the HTTP status as a number; only a string code
	// is one in OpenAI's sense.
	e.Code = redact(stringOrEmpty(obj.Code), secret)
}

func stringOrEmpty(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func jsonString(s string) json.RawMessage {
	if plainName(s) {
		// json.Marshal writes such a string as it is, in quotes; model
		// names are, and this runs several times a request.
		b := make([]byte, 0, len(s)+2)
		return append(append(append(b, '"'), s...), '"')
	}
	return mustMarshal(s)
}

// mustMarshal encodes values whose encoding cannot fail: strings, and maps
// of values that were decoded from JSON a moment ago.
func mustMarshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("providers: encoding: " + err.Error())
	}
	return b
}

// trimBase drops a trailing slash so resource paths can be appended.
func trimBase(base string) string { return strings.TrimRight(base, "/") }
