package providers

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/gw-gateway/gw/server/catalog"
)

// The native adapters forward a client's request to an upstream that
// speaks the client's own dialect: Messages to Anthropic, Responses and
// embeddings to OpenAI. Only the model, the output limit and the stream
// flag are rewritten, so everything else the client sent (cache_control,
// thinking, server tools, reasoning items, …) reaches the upstream as is.
// Answers come back in the same dialect with gw's model id, and each
// adapter reads the usage the upstream reports for metering.

// forwardHeader copies the headers a call carries onto an upstream
// request: the request id and trace context, so a request can be followed
// across gw.
func forwardHeader(dst, src http.Header) {
	for k, v := range src {
		dst[k] = v
	}
}

// nativeBody is the client's request with model, limit and stream set,
// and then extra, written over the body as sent (editObject): the body is
// neither decoded nor copied.
func nativeBody(call *Call, limitName string, stream *bool, extra ...Edit) (rope, error) {
	n := call.Native
	edits := append(slices.Clip(n.Edits), setTo("model", modelJSON(call.UpstreamModelJSON, call.UpstreamModel)))
	if limitName != "" && call.MaxTokens > 0 {
		var asked int64
		if raw, ok := n.Members.Get(limitName); ok {
			asked, _ = strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
		}
		if asked == 0 || asked > call.MaxTokens {
			edits = append(edits, setTo(limitName, []byte(strconv.FormatInt(call.MaxTokens, 10))))
		}
	}
	if stream != nil {
		edits = append(edits, setTo("stream", []byte(strconv.FormatBool(*stream))))
	}
	body, ok := editObject(n.Body, append(edits, extra...))
	if !ok {
		return nil, invalid("", "invalid_json", "The request body is not valid JSON.")
	}
	return body, nil
}

// post sends body to url through send, authorized by auth; refusals read
// in statusError's shape.
func post(ctx context.Context, client *http.Client, url string, body rope, call *Call, stream bool,
	auth func(http.Header), refusal func(*http.Response, *Call) *Error) (*http.Response, error) {
	return send(ctx, client, call, upstreamPost{url: url, body: body, accept: acceptFor(stream), authorize: headerAuth(auth),
		refusal: refusal})
}

// newRequest is an upstream request of method (POST when empty) with the
// body rope (none when empty). net/http writes a body it knows is in
// memory (a bytes.Reader) into the connection's buffer behind the headers,
// one write(2) for both; any other reader makes it flush the headers first
// (transferWriter.FlushHeaders), a second write(2) and a second segment a
// request. So a body of one piece is read where it is, one of several
// pieces up to joinedBodyMax is copied into one buffer (a copy of a few
// KiB costs far less than the system call), and only a larger one is read
// piece by piece, never joined.
func newRequest(ctx context.Context, method, url string, body rope) (*http.Request, error) {
	if method == "" {
		method = http.MethodPost
	}
	target, err := upstreamURLs.parse(url)
	if err != nil {
		return nil, &Error{Kind: Unavailable, Message: "the upstream URL is not valid", Cause: err}
	}
	var req *http.Request
	// The URL is set below from target, as net/http would have set it.
	switch n := body.len(); {
	case len(body) == 0:
		req, err = http.NewRequestWithContext(ctx, method, "", http.NoBody)
	case len(body) == 1:
		req, err = http.NewRequestWithContext(ctx, method, "", bytes.NewReader(body[0]))
	case n <= joinedBodyMax:
		req, err = http.NewRequestWithContext(ctx, method, "", bytes.NewReader(body.bytes()))
	default:
		req, err = http.NewRequestWithContext(ctx, method, "", body.reader())
		if err == nil {
			req.ContentLength = int64(body.len())
			req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(body.reader()), nil }
		}
	}
	if err != nil {
		return nil, &Error{Kind: Unavailable, Message: "the upstream request is not valid", Cause: err}
	}
	// The URL NewRequest made of "" is this request's own: filled in
	// place, no second one allocated.
	*req.URL, req.Host = *target.url, target.host
	return req, nil
}

// upstreamURLs are the upstream URLs parsed so far. A provider's endpoint
// is one of a few URLs per credential, parsed for every request it served
// (url.Parse was 1.3 µs of a request under the harness's load, issue 33,
// fourteenth round); each is parsed once now, by http.NewRequest itself,
// and every request gets its own copy.
var upstreamURLs = urlCache{max: 4096}

// urlCache maps a URL to the URL and Host http.NewRequest makes of it.
// It keeps at most max; past that (URLs of credentials long replaced,
// each still kept) a URL is parsed every time, as before. A URL that does
// not parse is never kept, nor one with user information: a password in
// a base URL would outlive its credential here.
type urlCache struct {
	max int
	n   atomic.Int64
	m   sync.Map // string → *parsedURL
}

type parsedURL struct {
	url  *url.URL
	host string
}

func (c *urlCache) parse(s string) (*parsedURL, error) {
	if p, ok := c.m.Load(s); ok {
		return p.(*parsedURL), nil
	}
	req, err := http.NewRequest(http.MethodGet, s, nil)
	if err != nil {
		return nil, err
	}
	p := &parsedURL{url: req.URL, host: req.Host}
	if req.URL.User == nil && c.n.Load() < int64(c.max) {
		if _, loaded := c.m.LoadOrStore(s, p); !loaded {
			c.n.Add(1)
		}
	}
	return p, nil
}

// readObject reads a JSON object answer and sets its model member; raw is
// the answer as the upstream wrote it.
func readObject(resp *http.Response, model string) (m map[string]json.RawMessage, raw []byte, err error) {
	defer resp.Body.Close()
	raw, err = readAnswer(resp.Body, resp.ContentLength)
	if err != nil {
		return nil, nil, transportError(err)
	}
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, nil, &Error{Kind: Unavailable, Status: resp.StatusCode, Message: "the upstream's answer is not a JSON object"}
	}
	if _, ok := m["model"]; ok {
		m["model"] = jsonString(model)
	}
	return m, raw, nil
}

// AnthropicNative forwards Messages requests to the Messages API.
type AnthropicNative struct {
	Client *http.Client
}

// Check accepts every request: the upstream speaks the client's dialect.
func (a *AnthropicNative) Check(*Call, bool) error { return nil }

func (a *AnthropicNative) auth(call *Call) func(http.Header) {
	return func(h http.Header) {
		// The client's anthropic-beta flags (forwarded in call.Header)
		// are kept; the key and version are gw's.
		h.Set("X-Api-Key", call.Secret)
		h.Set("Anthropic-Version", versionOr(call.AnthropicVersion))
	}
}

func (a *AnthropicNative) send(ctx context.Context, call *Call, stream bool) (*http.Response, error) {
	body, err := nativeBody(call, "max_tokens", &stream, messagesInjection(call)...)
	if err != nil {
		return nil, err
	}
	return post(ctx, a.Client, trimBase(call.BaseURL)+"/messages", body, call, stream, a.auth(call), anthropicRefusal)
}

// versionOr is the model's anthropic-version, else gw's.
func versionOr(v string) string {
	if v == "" {
		return anthropicVersion
	}
	return v
}

// Complete implements Adapter; the body is a Messages answer.
func (a *AnthropicNative) Complete(ctx context.Context, call *Call) (*Completion, error) {
	resp, err := a.send(ctx, call, false)
	if err != nil {
		return nil, err
	}
	return anthropicNativeCompletion(resp, call)
}

// anthropicNativeCompletion reads a Messages answer, relayed as a
// Messages answer with gw's model id.
func anthropicNativeCompletion(resp *http.Response, call *Call) (*Completion, error) {
	m, raw, err := readObject(resp, call.ResponseModel)
	if err != nil {
		return nil, err
	}
	var u Usage
	var au anthropicUsage
	if rawUsage, ok := m["usage"]; ok && json.Unmarshal(rawUsage, &au) == nil {
		u = au.usage().reported()
	}
	// The answer as the upstream wrote it with gw's model id spliced in,
	// not re-encoded: its thinking blocks and signatures reach the caller
	// byte for byte (an encoder would escape <, > and & in their text).
	body := mustMarshal(m)
	if edited, ok := editObject(raw, []Edit{setTo("model", modelJSON(call.ResponseModelJSON, call.ResponseModel))}); ok {
		body = edited.bytes()
	}
	return &Completion{Body: body, Usage: estimate(u, call, answerTokens(raw))}, nil
}

// Stream implements Adapter; each item is a Messages event's data.
func (a *AnthropicNative) Stream(ctx context.Context, call *Call) (ChunkStream, error) {
	resp, err := a.send(ctx, call, true)
	if err != nil {
		return nil, err
	}
	return &anthropicNativeStream{body: resp.Body, sse: newSSEReader(resp.Body), call: call}, nil
}

// CountTokens forwards a count_tokens request and returns the upstream's
// answer.
func (a *AnthropicNative) CountTokens(ctx context.Context, call *Call) ([]byte, error) {
	body, err := nativeBody(call, "", nil)
	if err != nil {
		return nil, err
	}
	raw, err := answerOf(post(ctx, a.Client, trimBase(call.BaseURL)+"/messages/count_tokens", body, call, false, a.auth(call), anthropicRefusal))
	if err != nil {
		return nil, err
	}
	return raw, nil
}

type anthropicNativeStream struct {
	// end is how it ended, for Close (closeStream).
	end                streamEnd
	body               io.ReadCloser
	sse                eventReader
	call               *Call
	usage              anthropicUsage
	sawStart, sawDelta bool
	relayed            relayed
	done               bool
}

func (s *anthropicNativeStream) Recv() ([]byte, error) { return s.end.note(s.recv()) }

func (s *anthropicNativeStream) recv() ([]byte, error) {
	if s.done {
		return nil, io.EOF
	}
	// Every event is relayed as it comes, so each call reads one.
	data, ev, err := nextAnthropicEvent(s.sse, s.call)
	if err != nil {
		s.done = true
		return nil, err
	}
	s.relayed.anthropicEvent(&ev)
	switch ev.Type {
	case "message_start":
		if ev.Message != nil {
			s.usage, s.sawStart = ev.Message.Usage.anthropicUsage, ev.Message.Usage.ok
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(data, &m) == nil {
			var msg map[string]json.RawMessage
			if json.Unmarshal(m["message"], &msg) == nil && msg != nil {
				msg["model"] = jsonString(s.call.ResponseModel)
				m["message"] = mustMarshal(msg)
				return mustMarshal(m), nil
			}
		}
	case "message_delta":
		if ev.Usage != nil && ev.Usage.ok {
			s.usage.merge(ev.Usage.anthropicUsage)
			s.sawDelta = true
		}
	case "message_stop":
		s.done = true
		// The terminal event is the caller's too; io.EOF follows.
		return append([]byte(nil), data...), nil
	}
	return append([]byte(nil), data...), nil
}

// Pending reports whether the next Recv returns without waiting on the
// upstream (openAIStream.Pending): its event is already buffered (every
// event is relayed), or the stream is done and it returns io.EOF. The
// caller may then hold the event it has and write both at once (the last
// one with the stream's end). Bedrock's event-stream messages are not
// looked ahead into.
func (s *anthropicNativeStream) Pending() bool {
	if s.done {
		return true
	}
	r, ok := s.sse.(*sseReader)
	return ok && r.ready()
}

func (s *anthropicNativeStream) Usage() Usage {
	return anthropicStreamUsage(s.usage, s.sawStart, s.sawDelta, s.call, &s.relayed)
}
func (s *anthropicNativeStream) Close() error { return closeStream(s.body, s.end) }

// OpenAIResponses forwards Responses requests to OpenAI's /responses, or
// to Azure OpenAI's (Dialect DialectAzure).
type OpenAIResponses struct {
	Client  *http.Client
	Dialect Dialect
	tokens  oauthTokens
}

// Check accepts every request: the upstream speaks the client's dialect.
func (a *OpenAIResponses) Check(*Call, bool) error { return nil }

func (a *OpenAIResponses) send(ctx context.Context, call *Call, stream bool) (*http.Response, error) {
	// gw keeps no responses (CheckResponsesState), and neither may the
	// upstream on its behalf: a stored response would be reachable only
	// outside gw.
	noStore := setTo("store", []byte("false"))
	if a.Dialect == DialectAzure {
		// Azure's v1 API names the deployment where OpenAI names the model.
		body, err := nativeBody(call, "max_output_tokens", &stream, noStore, setTo("model", jsonString(azureDeployment(call))))
		if err != nil {
			return nil, err
		}
		auth, err := azureAuth(ctx, a.Client, &a.tokens, call)
		if err != nil {
			return nil, err
		}
		return post(ctx, a.Client, trimBase(call.BaseURL)+"/openai/v1/responses", body, call, stream, auth, openAIRefusal)
	}
	body, err := nativeBody(call, "max_output_tokens", &stream, noStore)
	if err != nil {
		return nil, err
	}
	return post(ctx, a.Client, trimBase(call.BaseURL)+"/responses", body, call, stream,
		func(h http.Header) { h.Set("Authorization", "Bearer "+call.Secret) }, openAIRefusal)
}

// Complete implements Adapter; the body is a response object.
func (a *OpenAIResponses) Complete(ctx context.Context, call *Call) (*Completion, error) {
	resp, err := a.send(ctx, call, false)
	if err != nil {
		return nil, err
	}
	m, raw, err := readObject(resp, call.ResponseModel)
	if err != nil {
		return nil, err
	}
	u := estimate(decodeResponsesUsage(m["usage"]), call, answerTokens(raw))
	u.ServiceTier = ServiceTierName(m["service_tier"])
	return &Completion{Body: mustMarshal(m), Usage: u}, nil
}

// Stream implements Adapter; each item is a Responses event's data.
func (a *OpenAIResponses) Stream(ctx context.Context, call *Call) (ChunkStream, error) {
	resp, err := a.send(ctx, call, true)
	if err != nil {
		return nil, err
	}
	return &responsesNativeStream{body: resp.Body, sse: newSSEReader(resp.Body), call: call}, nil
}

// decodeResponsesUsage converts a Responses usage object: its
// input_tokens include the cached ones.
func decodeResponsesUsage(raw json.RawMessage) Usage {
	var u struct {
		InputTokens        int64 `json:"input_tokens"`
		OutputTokens       int64 `json:"output_tokens"`
		InputTokensDetails struct {
			CachedTokens     int64 `json:"cached_tokens"`
			CacheWriteTokens int64 `json:"cache_write_tokens"`
		} `json:"input_tokens_details"`
		OutputTokensDetails struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
	}
	if len(raw) == 0 || isNull(raw) || json.Unmarshal(raw, &u) != nil {
		return Usage{}
	}
	input, output := clampCount(u.InputTokens), clampCount(u.OutputTokens)
	cached := max(0, min(u.InputTokensDetails.CachedTokens, input))
	written := max(0, min(u.InputTokensDetails.CacheWriteTokens, input-cached))
	return Usage{InputTokens: input - cached - written, OutputTokens: output, CacheReadTokens: cached, CacheWriteTokens: written,
		ReasoningTokens: max(0, min(u.OutputTokensDetails.ReasoningTokens, output))}.reported()
}

type responsesNativeStream struct {
	// end is how it ended, for Close (closeStream).
	end         streamEnd
	serviceTier string
	body        io.ReadCloser
	sse         *sseReader
	call        *Call
	usage       Usage
	relayed     relayed
	done        bool
}

func (s *responsesNativeStream) Recv() ([]byte, error) { return s.end.note(s.recv()) }

func (s *responsesNativeStream) recv() ([]byte, error) {
	if s.done {
		return nil, io.EOF
	}
	_, data, err := s.sse.next()
	if err != nil {
		s.done = true
		if err == io.EOF {
			return nil, &Error{Kind: Unavailable, Message: "the upstream stream ended before response.completed", Cause: ErrStreamTruncated}
		}
		return nil, transportError(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		s.done = true
		return nil, &Error{Kind: Unavailable, Message: "the upstream sent an event that is not a JSON object"}
	}
	var typ string
	_ = json.Unmarshal(m["type"], &typ)
	if typ == "error" {
		s.done = true
		e := &Error{Kind: Unavailable}
		fillOpenAIError(e, data, s.call.Secret)
		return nil, e
	}
	switch typ {
	case "response.output_text.delta", "response.refusal.delta", "response.function_call_arguments.delta",
		"response.custom_tool_call_input.delta":
		s.relayed.addJSON(m["delta"], false)
	case "response.reasoning_text.delta", "response.reasoning_summary_text.delta":
		s.relayed.addJSON(m["delta"], true)
	}
	if raw, ok := m["response"]; ok {
		var r map[string]json.RawMessage
		if json.Unmarshal(raw, &r) == nil && r != nil {
			r["model"] = jsonString(s.call.ResponseModel)
			if u, ok := r["usage"]; ok && !isNull(u) {
				s.usage = decodeResponsesUsage(u)
			}
			if t := ServiceTierName(r["service_tier"]); t != "" {
				s.serviceTier = t
			}
			m["response"] = mustMarshal(r)
		}
	}
	switch typ {
	case "response.completed", "response.incomplete", "response.failed":
		// Each is the stream's last event; the caller gets it and then
		// the end.
		s.done = true
	}
	return mustMarshal(m), nil
}

// Pending reports whether the next Recv returns without waiting on the
// upstream (anthropicNativeStream.Pending).
func (s *responsesNativeStream) Pending() bool { return s.done || s.sse.ready() }

func (s *responsesNativeStream) Usage() Usage {
	u := estimate(s.relayed.checked(s.usage), s.call, &s.relayed)
	u.ServiceTier = s.serviceTier
	return u
}
func (s *responsesNativeStream) Close() error { return closeStream(s.body, s.end) }

// OpenAIEmbeddings calls an OpenAI-shaped /embeddings endpoint.
type OpenAIEmbeddings struct {
	Client *http.Client
	// Google serves its OpenAI-compatible API under {base}/openai, Azure
	// at a deployment's URL.
	Dialect Dialect
	tokens  oauthTokens
}

// Check accepts every request: the upstream speaks the client's dialect.
func (a *OpenAIEmbeddings) Check(*Call, bool) error { return nil }

// Complete implements Adapter; the body is an embeddings list.
func (a *OpenAIEmbeddings) Complete(ctx context.Context, call *Call) (*Completion, error) {
	body, err := nativeBody(call, "", nil)
	if err != nil {
		return nil, err
	}
	url := trimBase(call.BaseURL) + "/embeddings"
	auth := func(h http.Header) { h.Set("Authorization", "Bearer "+call.Secret) }
	switch a.Dialect {
	case DialectGoogle:
		url = trimBase(call.BaseURL) + "/openai/embeddings"
	case DialectAzure:
		url = azureDeploymentURL(call, "/embeddings")
		if auth, err = azureAuth(ctx, a.Client, &a.tokens, call); err != nil {
			return nil, err
		}
	}
	resp, err := post(ctx, a.Client, url, body, call, false, auth, openAIRefusal)
	if err != nil {
		return nil, err
	}
	m, _, err := readObject(resp, call.ResponseModel)
	if err != nil {
		return nil, err
	}
	// Embeddings have no output: the input is all there is to count.
	var u Usage
	if raw, ok := m["usage"]; ok && !isNull(raw) {
		u = decodeOpenAIUsage(raw)
	}
	u.OutputReported = true
	return &Completion{Body: mustMarshal(m), Usage: estimate(u, call, noOutput)}, nil
}

// Stream is never called: embeddings do not stream.
func (a *OpenAIEmbeddings) Stream(context.Context, *Call) (ChunkStream, error) {
	return nil, invalid("stream", "unsupported_parameter", "Embeddings do not stream.")
}

// Native returns the adapter that forwards a dialect's requests to the
// upstream model of kind, if it speaks that dialect: on Bedrock and Vertex
// AI only Anthropic's models speak Messages.
func (s *Set) Native(dialect string, kind catalog.Kind, upstreamModel string) (Adapter, bool) {
	a, ok := s.native[dialect+"/"+string(kind)]
	switch {
	case !ok:
	case kind == catalog.KindBedrock && dialect == "messages":
		ok = isBedrockAnthropic(upstreamModel)
	case kind == catalog.KindVertex && dialect == "messages":
		ok = isClaude(upstreamModel)
	}
	if !ok {
		return nil, false
	}
	return a, true
}
