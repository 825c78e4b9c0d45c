// Package providers calls upstream model APIs on behalf of the data plane.
//
// Clients speak OpenAI Chat Completions to gw (DESIGN §8); an Adapter turns
// such a request into its upstream's protocol and the answer back into
// OpenAI's shapes, so the data plane handles every provider alike: it parses
// the request once (ParseChatRequest), picks a model and a credential, and
// hands the adapter a Call. Adapters report the tokens each call used in
// gw's disjoint categories (see catalog.Pricing), which is what usage is
// priced from, and classify failures (Error) so the data plane can decide on
// a fallback.
//
// The package does no routing, policy or bookkeeping, and it never logs: a
// Call carries a provider secret, and nothing here writes one anywhere but
// into the upstream request's header.
package providers

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/gw-gateway/gw/server/bodyread"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/egress"
)

// Adapter calls one kind of upstream API.
type Adapter interface {
	// Check reports, as an *InvalidRequestError, what in the call's
	// request this upstream cannot do, given the call's limits (its model,
	// URL and secret are not needed). With strict set, members the adapter
	// would otherwise leave out of the upstream request count too: a
	// strict_parameters policy promises the caller that nothing they sent
	// is silently dropped. Check is pure, so the data plane can ask it
	// about fallback candidates before trying them.
	Check(call *Call, strict bool) error
	// Complete makes a non-streaming call and returns the answer as an
	// OpenAI chat.completion.
	Complete(ctx context.Context, call *Call) (*Completion, error)
	// Stream starts a streaming call. It returns once the upstream has
	// accepted the request (an error before that is a normal *Error), and
	// the stream yields OpenAI chat.completion.chunk objects.
	Stream(ctx context.Context, call *Call) (ChunkStream, error)
}

// Call is one upstream request.
type Call struct {
	// Request is the client's request, already checked by the adapter.
	Request *ChatRequest
	// UpstreamModel is the model id the upstream knows (catalog
	// Model.UpstreamModel); ResponseModel is the id the client is shown,
	// gw's own (catalog Model.ID), so a client can tell which model of a
	// fallback chain answered.
	UpstreamModel string
	ResponseModel string
	// UpstreamModelJSON and ResponseModelJSON, when set, are the two ids
	// as JSON strings, made once by the caller (the data plane, per
	// bundle) rather than for every request; read only, never written.
	// Unset, they are made when needed (modelJSON).
	UpstreamModelJSON, ResponseModelJSON []byte
	// BaseURL is the API root, without a trailing slash (the credential's
	// URL, else the catalog provider's).
	BaseURL string
	// Secret is the opened provider credential; CredentialID names it
	// (what an upstream's quirks are remembered by), and Generation is the
	// version of the bundle the call was routed under, after which such
	// memories are forgotten.
	Secret       string
	CredentialID string
	Generation   uint64
	// Settings are the credential's non-secret settings (region, project,
	// location, api-version, deployments), for the kinds that take them.
	Settings Settings
	// MaxTokens, when positive, is the output limit to send whatever the
	// request said (a request_limits policy). DefaultMaxTokens is what to
	// send to an API that requires a limit when neither MaxTokens nor the
	// request sets one: the model's maximum output.
	MaxTokens        int64
	DefaultMaxTokens int64
	// Native is the client's request in its own dialect (a Messages or
	// Responses request, an embeddings request), for the adapters that
	// forward it to an upstream speaking that dialect (native.go); the
	// chat adapters ignore it.
	Native *NativeRequest
	// RequestID, when set, is sent upstream as X-Request-Id.
	RequestID string
	// Header holds other request headers to forward upstream (the trace
	// context, beta flags), or is nil.
	Header http.Header
	// InputFloor, when set, is the floor of the request's input tokens
	// the caller already counted (tokens.CountRequest), which usage is
	// checked against instead of counting again.
	InputFloor *int64
	// PromptCache, when set, is the workspace's prompt_cache setting:
	// breakpoints injected at the end of a long stable prefix the client
	// left unmarked (promptcache.go).
	PromptCache *PromptCacheInjection
	// Translated: the request is a Messages or Responses client's,
	// translated into Request (the chat hub), not a Chat Completions
	// client's own.
	Translated bool
	// Prepared, when set, is the route's: Check keeps its translation
	// there and the attempts send it (prepared.go).
	Prepared *Prepared
	// AnthropicVersion, when set, is the anthropic-version the model is
	// called with (its catalog constraints); empty is gw's 2023-06-01.
	AnthropicVersion string
}

// NativeRequest is a request in the caller's own dialect, for an upstream
// that speaks it.
type NativeRequest struct {
	// Body is the request as the caller sent it.
	Body []byte
	// Members are its top-level members, slices of Body, to read.
	Members Members
	// Edits are what gw changed of it before an adapter (Claude Code's
	// system turns folded into system, count_tokens' nominal limit
	// removed): the adapter adds its own (the model, the limit, stream)
	// and writes them all over Body (editObject), which is never decoded
	// and encoded again whole.
	Edits []Edit
}

// Completion is a non-streaming answer.
type Completion struct {
	// Body is an OpenAI chat.completion object, encoded, its model set to
	// the call's ResponseModel.
	Body  []byte
	Usage Usage
}

// ChunkStream is a streaming answer, one chat.completion.chunk at a time.
type ChunkStream interface {
	// Recv returns the next chunk, encoded, or io.EOF after the last one.
	// Any other error is an *Error; the stream is over after it.
	Recv() ([]byte, error)
	// Usage is what the upstream reported so far; after io.EOF, the
	// stream's total.
	Usage() Usage
	// Close releases the upstream connection; it may be called at any time
	// and more than once.
	Close() error
}

// ViewStream is a ChunkStream that can also return a chunk in a buffer of
// its own, valid only until its next RecvView or Recv: for a caller that
// copies each chunk before it asks for the next, no allocation a chunk.
type ViewStream interface {
	ChunkStream
	RecvView() ([]byte, error)
}

// MaxTokenCount bounds any token count an upstream reports: far above any
// real request, low enough that sums over years of events fit an int64.
const MaxTokenCount = 1_000_000_000_000

// clampCount clamps an upstream's count into [0, MaxTokenCount].
func clampCount(n int64) int64 { return max(0, min(n, MaxTokenCount)) }

// Set holds one adapter per provider kind, sharing one HTTP client.
type Set struct {
	client *http.Client
	byKind map[catalog.Kind]Adapter
	// native holds the adapters that forward a dialect as is, by
	// "dialect/kind" (native.go).
	native map[string]Adapter
	// batch is the batch APIs' client (batchapi.go).
	batch *BatchAPI
}

// NewSet returns the adapters of every supported kind. client may be nil
// for NewHTTPClient's.
func NewSet(client *http.Client) *Set {
	if client == nil {
		client = NewHTTPClient()
	}
	embeddings := &OpenAIEmbeddings{Client: client}
	bedrock, vertex := &Bedrock{Client: client}, &Vertex{Client: client}
	return &Set{client: client, batch: &BatchAPI{Client: client}, native: map[string]Adapter{
		// Only api.openai.com and Azure are known to speak Responses;
		// look-alike servers get Chat Completions.
		"responses/" + string(catalog.KindOpenAI):            &OpenAIResponses{Client: client},
		"responses/" + string(catalog.KindAzureOpenAI):       &OpenAIResponses{Client: client, Dialect: DialectAzure},
		"responses.compact/" + string(catalog.KindOpenAI):    &OpenAIResponsesCompact{Client: client},
		"messages/" + string(catalog.KindAnthropic):          &AnthropicNative{Client: client},
		"messages/" + string(catalog.KindBedrock):            &BedrockMessages{Bedrock: bedrock},
		"messages/" + string(catalog.KindVertex):             &VertexMessages{Vertex: vertex},
		"embeddings/" + string(catalog.KindOpenAI):           embeddings,
		"embeddings/" + string(catalog.KindOpenAICompatible): embeddings,
		"embeddings/" + string(catalog.KindGoogle):           &OpenAIEmbeddings{Client: client, Dialect: DialectGoogle},
		"embeddings/" + string(catalog.KindAzureOpenAI):      &OpenAIEmbeddings{Client: client, Dialect: DialectAzure},
		"embeddings/" + string(catalog.KindGemini):           &GeminiEmbeddings{Client: client},
		"embeddings/" + string(catalog.KindBedrock):          &BedrockEmbeddings{Bedrock: bedrock},
	}, byKind: map[catalog.Kind]Adapter{
		catalog.KindOpenAI:           &OpenAI{Client: client, Dialect: DialectOpenAI},
		catalog.KindOpenAICompatible: &OpenAI{Client: client, Dialect: DialectCompatible},
		// Gemini is served through its OpenAI-compatible endpoint, which
		// speaks the compatible dialect under {base}/openai.
		catalog.KindGoogle:      &OpenAI{Client: client, Dialect: DialectGoogle},
		catalog.KindAnthropic:   &Anthropic{Client: client},
		catalog.KindBedrock:     bedrock,
		catalog.KindVertex:      vertex,
		catalog.KindGemini:      &Gemini{Client: client},
		catalog.KindAzureOpenAI: &OpenAI{Client: client, Dialect: DialectAzure},
	}}
}

// CloseIdleConnections closes the kept-alive upstream connections, so
// that the next calls dial again under an egress policy that changed.
func (s *Set) CloseIdleConnections() { s.client.CloseIdleConnections() }

// For returns the adapter for kind.
func (s *Set) For(kind catalog.Kind) (Adapter, bool) {
	a, ok := s.byKind[kind]
	return a, ok
}

// NewHTTPClient returns the client adapters use by default: the built-in
// egress policy alone (NewGuardedHTTPClient).
func NewHTTPClient() *http.Client {
	return NewGuardedHTTPClient(func() egress.Policy { return egress.Policy{} })
}

// NewGuardedHTTPClient returns the client adapters use. It has no overall
// timeout: a long generation is legitimate, and the data plane bounds each
// call with its context instead. Connections are pooled generously per
// host, since nearly all traffic goes to a handful of API hosts.
//
// Every connection is checked against the egress policy policy returns
// (egress.Dialer: cloud metadata services, link-local and unspecified
// addresses are refused, and what the instance's setting refuses; the
// address actually dialled is checked, so DNS cannot swap it). Redirects
// are not followed: an upstream answering with one would carry the
// provider key (x-api-key survives cross-host redirects) somewhere it was
// not configured to go.
func NewGuardedHTTPClient(policy func() egress.Policy) *http.Client {
	dialer := egress.NewDialer(policy)
	return &http.Client{CheckRedirect: refuseRedirects,
		Transport: &http.Transport{
			Proxy:                 proxied(policy),
			DialContext:           dialer.DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          1000,
			MaxIdleConnsPerHost:   256,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
			WriteBufferSize:       upstreamWriteBuffer,
			ReadBufferSize:        upstreamReadBuffer,
		}}
}

// upstreamWriteBuffer is each upstream connection's write buffer: a
// request's headers and a body of up to about this size leave in one
// write(2) (net/http's default, 4 KiB, splits any body past it into two,
// and model requests are mostly a few KiB to a few tens of KiB). It is
// held by each open connection, idle ones too.
const upstreamWriteBuffer = 32 << 10

// upstreamReadBuffer is each upstream connection's read buffer: an answer,
// or the events of a stream that arrived together, of up to this size is
// read in one read(2) (4 KiB took two for a 20-chunk stream's five).
// Held by each open connection, so streams do not each zero one
// (sseReader keeps its own small).
const upstreamReadBuffer = 16 << 10

// joinedBodyMax is the largest body of several pieces newRequest copies
// into one buffer, so that it leaves with its headers: the connection's
// write buffer's size.
const joinedBodyMax = upstreamWriteBuffer

// proxied is the environment's proxy for a request (HTTPS_PROXY and the
// like), if any. Through a proxy the dialer sees only the proxy's
// address, so the upstream's URL is checked here; the proxy, which the
// operator configured, resolves the name itself.
func proxied(policy func() egress.Policy) func(*http.Request) (*url.URL, error) {
	return func(req *http.Request) (*url.URL, error) {
		proxy, err := http.ProxyFromEnvironment(req)
		if err != nil || proxy == nil {
			return proxy, err
		}
		if err := egress.CheckURL(req.Context(), policy(), req.URL.String()); err != nil {
			return nil, err
		}
		return proxy, nil
	}
}

// maxAnswerBody bounds an upstream's answer read into memory, so a
// misbehaving upstream cannot exhaust the shared data plane.
const maxAnswerBody = 64 << 20

// answerAhead is the most readAnswer allocates ahead of the bytes on an
// answer's declared length: an upstream may declare more than it sends
// before it stalls.
const answerAhead = 1 << 20

// readAnswer reads an answer body up to maxAnswerBody, into one buffer of
// its declared length (resp.ContentLength; below 0 when unknown, as for a
// body the transport decompresses).
func readAnswer(r io.Reader, declared int64) ([]byte, error) {
	b, err := bodyread.Read(r, declared, answerAhead, maxAnswerBody)
	if errors.Is(err, bodyread.ErrTooLarge) {
		return nil, errAnswerTooLarge()
	}
	return b, err
}

func errAnswerTooLarge() *Error {
	return &Error{Kind: Unavailable, Message: "the upstream's answer exceeds 64 MiB"}
}
