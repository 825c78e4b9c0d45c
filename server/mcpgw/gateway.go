// Package mcpgw is gw's MCP gateway (issue 30): one MCP server over
// Streamable HTTP in front of the upstream MCP servers a key may reach.
// It speaks the protocol, both sides: the caller's versions (2025-06-18
// and 2025-11-25 with a session, 2026-07-28 stateless) and the upstreams'
// (asked once in a while with server/discover: 2026-07-28 statelessly to
// those that take it, else a 2025-11-25 session, negotiated down as the
// upstream says). What a key may see and call, admission, budgets and
// metering are the data plane's, reached through Guard: this package
// knows no bundle and no usage event.
//
// Upstream requests are built here, not in server/providers: MCP is
// JSON-RPC over Streamable HTTP (sessions, event streams, notifications),
// nothing like a model provider's one POST per call. The http.Client the
// data plane gives dials through server/egress (the boundary test holds
// both rules).
package mcpgw

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/gw-gateway/gw/server/toolpolicy"
)

// The protocol versions gw serves.
const (
	V20250618 = "2025-06-18"
	V20251125 = "2025-11-25"
	V20260728 = "2026-07-28"
)

// Versions are the versions served, newest first.
var Versions = []string{V20260728, V20251125, V20250618}

// legacy are the versions with initialize and a session.
var legacy = []string{V20251125, V20250618}

// Separator joins a server's name and a tool's on the aggregated
// endpoint: github__create_issue.
const Separator = "__"

// Limits and defaults.
const (
	DefaultTimeout    = 60 * time.Second
	DefaultMaxMessage = 4 << 20
	closeTimeout      = 5 * time.Second
	maxTokenSources   = 4096
	maxListPages      = 20
	// ListTTL is the ttlMs of tools/list answers: what a key sees changes
	// with its bundle, so a client may cache it a minute, privately.
	ListTTL = 60_000
	// sessionLifetime bounds a sealed session: a client re-initializes
	// after a day.
	sessionLifetime = 24 * time.Hour
)

// JSON-RPC error codes gw answers beside the standard ones.
const (
	// CodeDenied: a tool policy, a budget or a rate limit refused the
	// call; nothing was sent upstream.
	CodeDenied = -32001
	// CodeUpstream: the upstream could not be reached, refused gw, or
	// did not answer in time.
	CodeUpstream = -32002
	// codeSessionMissing: a legacy request without a valid session.
	codeSessionMissing = -32000
	// codeUnsupportedVersion: a 2026-07-28 server's refusal of the
	// version a request carries (UnsupportedProtocolVersionError).
	codeUnsupportedVersion = -32022
)

// Call is one tools/call as the guard sees it, or one read admitted and
// metered like a tools/call of price $0 (Method set: resources/read,
// prompts/get, completion/complete; Tool is then the method).
type Call struct {
	Server    string
	Tool      string
	Method    string
	Upstream  *Upstream
	PriceNano int64
	// Arguments are the call's arguments as sent (JSON), for an audit row
	// that records them.
	Arguments json.RawMessage
	// Version is the caller's protocol version.
	Version string
}

// Operation is one answered request other than a tools/call (whose
// outcome Admit's finish or Refused records), for telemetry.
type Operation struct {
	// Method is the JSON-RPC method, OtherMethod for one gw does not
	// serve (the caller's text is never a label).
	Method string
	// Server is the server of /inf/v1/mcp/{server}, "" on the aggregated
	// endpoint.
	Server string
	// Version is the protocol version in force ("" when none was told).
	Version string
	// SessionID is the caller's Mcp-Session-Id, or the one initialize
	// answered ("" for none).
	SessionID string
	// ErrorCode is the JSON-RPC error code answered, 0 for a result.
	ErrorCode int
	Duration  time.Duration
}

// OtherMethod stands for a method gw does not serve in an Operation (the
// OpenTelemetry conventions' _OTHER).
const OtherMethod = "_OTHER"

// served are the methods gw answers, which an Operation names.
var served = []string{"initialize", "ping", "tools/list", "tools/call", "server/discover", "resources/list",
	"resources/templates/list", "resources/read", "resources/subscribe", "resources/unsubscribe", "prompts/list", "prompts/get", "completion/complete", "logging/setLevel"}

// Outcome is how a call ended.
type Outcome struct {
	// Status is "ok", "error" (the tool answered isError, or the upstream
	// failed) or "denied" (refused before anything was sent).
	Status string
	// Delivered is whether the upstream answered (the price is owed).
	Delivered bool
	Duration  time.Duration
	// Message says why, for errors and refusals.
	Message string
}

// Guard is what the data plane decides for one authenticated request.
type Guard interface {
	// Servers are the upstreams the key's workspace sees (enabled, a
	// workspace's shadowing an organization's), by name.
	Servers() []*Upstream
	// Decide applies the key's tool policies to one tool.
	Decide(phase, server, tool string, args any) toolpolicy.Decision
	// Admit admits a permitted call before anything is sent (rate
	// limits, budget reservation). An error refuses it: its text is the
	// caller's message. finish records the outcome (the usage event, the
	// audit row) and settles the reservation.
	Admit(ctx context.Context, c Call) (finish func(Outcome), err error)
	// Refused records a call refused by a tool policy or the server's
	// tool filter (a usage event with status denied).
	Refused(ctx context.Context, c Call, o Outcome)
	// Observe records one answered request other than a tools/call
	// (spans and the operation duration metric).
	Observe(op Operation)
}

// Options configure a Gateway.
type Options struct {
	// HTTP is the client for upstreams; its transport dials through
	// server/egress.
	HTTP *http.Client
	// Timeout cuts an upstream that does not answer (DefaultTimeout).
	Timeout time.Duration
	// MaxMessage bounds a message, either way (DefaultMaxMessage).
	MaxMessage int64
	// ServerName names gw in initialize and discover answers.
	ServerName, ServerVersion string
}

// Gateway serves the MCP endpoint.
type Gateway struct {
	opts   Options
	client *client
}

// New makes a Gateway.
func New(o Options) *Gateway {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxMessage <= 0 {
		o.MaxMessage = DefaultMaxMessage
	}
	if o.ServerName == "" {
		o.ServerName = "gw"
	}
	if o.ServerVersion == "" {
		o.ServerVersion = "1"
	}
	return &Gateway{opts: o, client: &client{http: o.HTTP, maxMessage: o.MaxMessage, tokens: map[string]oauth2.TokenSource{},
		versions: map[string]speaks{}, probing: map[string]chan struct{}{}, pool: map[string]pooledSession{}, now: time.Now}}
}

// request is one request in flight.
type request struct {
	g       *Gateway
	w       http.ResponseWriter
	r       *http.Request
	guard   Guard
	single  string // "" on the aggregated endpoint
	secret  string // the caller's bearer token: seals the session
	version string
	sess    *sessionToken
	msg     message
	start   time.Time
	// errCode is the JSON-RPC error code answered (0: none yet).
	errCode int
	// mu guards the answer once it is an event stream (stream: its
	// header is written).
	mu     sync.Mutex
	stream bool
}

// Serve answers one HTTP request on the endpoint. single names the
// server of /inf/v1/mcp/{server} ("" for the aggregated /inf/v1/mcp);
// bearer is the caller's credential, which seals its sessions (never sent
// anywhere). body is the request's body when the caller read it already
// (within its own limit); nil reads it here, within MaxMessage.
func (g *Gateway) Serve(w http.ResponseWriter, r *http.Request, body []byte, guard Guard, single, bearer string) {
	switch r.Method {
	case http.MethodPost, http.MethodGet:
	case http.MethodDelete:
		// Sessions are sealed tokens: nothing to forget here. The
		// upstream sessions it carries expire on their own.
		w.WriteHeader(http.StatusNoContent)
		return
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		writeRPCError(w, http.StatusMethodNotAllowed, nil, jsonrpcInvalidRequest,
			"gw's MCP endpoint takes POST, GET (a session's own event stream) and DELETE")
		return
	}
	if single != "" && !slices.ContainsFunc(guard.Servers(), func(u *Upstream) bool { return u.Name == single }) {
		writeRPCError(w, http.StatusNotFound, nil, jsonrpcInvalidRequest, fmt.Sprintf("MCP server %q not found", single))
		return
	}
	if r.Method == http.MethodGet {
		(&request{g: g, w: w, r: r, guard: guard, single: single, secret: bearer, start: time.Now()}).listen()
		return
	}
	if body == nil {
		var err error
		body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, g.opts.MaxMessage))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				writeRPCError(w, http.StatusRequestEntityTooLarge, nil, jsonrpcInvalidRequest,
					fmt.Sprintf("the message is larger than %d bytes", g.opts.MaxMessage))
				return
			}
			writeRPCError(w, http.StatusBadRequest, nil, jsonrpcParseError, "the body could not be read")
			return
		}
	}
	rq := &request{g: g, w: w, r: r, guard: guard, single: single, secret: bearer, start: time.Now()}
	if problem := rq.parse(body); problem != "" {
		writeRPCError(w, http.StatusBadRequest, rq.msg.ID, rq.parseCode(body), problem)
		return
	}
	rq.serve()
}

// WriteError answers a JSON-RPC error outside a parsed request (an
// unauthenticated one, a refused admission).
func WriteError(w http.ResponseWriter, status, code int, msg string) {
	writeRPCError(w, status, nil, code, msg)
}

// CodeInvalidRequest is JSON-RPC's invalid request code.
const CodeInvalidRequest = jsonrpcInvalidRequest

const (
	jsonrpcParseError     = -32700
	jsonrpcInvalidRequest = -32600
	jsonrpcMethodNotFound = -32601
	jsonrpcInvalidParams  = -32602
	jsonrpcInternal       = -32603
)

func (rq *request) parseCode(body []byte) int {
	if !json.Valid(body) {
		return jsonrpcParseError
	}
	return jsonrpcInvalidRequest
}

// parse reads one JSON-RPC message; "" when it is one gw takes.
func (rq *request) parse(body []byte) string {
	trimmed := strings.TrimSpace(string(body))
	if strings.HasPrefix(trimmed, "[") {
		return "JSON-RPC batches are not supported (MCP removed them in 2025-06-18): send one message per request"
	}
	if !json.Valid(body) {
		return "the body is not JSON"
	}
	if err := json.Unmarshal(body, &rq.msg); err != nil {
		return "the body is not a JSON-RPC message: " + err.Error()
	}
	m := &rq.msg
	if m.JSONRPC != "2.0" {
		return `the message's jsonrpc member must be "2.0"`
	}
	if m.Method == "" && m.Result == nil && m.Error == nil {
		return "the message has no method"
	}
	if len(m.ID) > 0 {
		var id any
		if json.Unmarshal(m.ID, &id) != nil {
			return "the message's id is not JSON"
		}
		switch id.(type) {
		case string, float64:
		default:
			return "the message's id must be a string or a number"
		}
	}
	return ""
}

// serve answers a parsed message.
func (rq *request) serve() {
	m := &rq.msg
	if m.Method == "" || len(m.ID) == 0 {
		// A response to an upstream's request gw relayed goes back to the
		// upstream session that asked.
		var relayed string
		if m.Method == "" && json.Unmarshal(m.ID, &relayed) == nil && strings.HasPrefix(relayed, relayPrefix) {
			rq.answerUpstream(relayed)
			return
		}
		// Any other response or a notification: accepted, nothing to
		// answer.
		if m.Method == "initialize" {
			rq.fail(http.StatusBadRequest, jsonrpcInvalidRequest, "initialize must be a request, with an id")
			return
		}
		rq.w.WriteHeader(http.StatusAccepted)
		return
	}
	if m.Method != "tools/call" {
		defer rq.observe()
	}
	if m.Method == "initialize" {
		rq.initialize()
		return
	}
	header := rq.r.Header.Get("MCP-Protocol-Version")
	if header == V20260728 || m.Method == "server/discover" {
		if problem := rq.stateless(header); problem != "" {
			rq.fail(http.StatusBadRequest, jsonrpcInvalidRequest, problem)
			return
		}
	} else if problem, status := rq.session(header); problem != "" {
		rq.fail(status, codeSessionMissing, problem)
		return
	}
	switch m.Method {
	case "ping":
		rq.result(map[string]any{})
	case "server/discover":
		rq.discover()
	case "tools/list":
		rq.listTools()
	case "tools/call":
		rq.callTool()
	case "logging/setLevel":
		rq.setLevel()
	case "resources/list", "resources/templates/list", "resources/read", "resources/subscribe", "resources/unsubscribe":
		rq.resources()
	case "prompts/list":
		rq.listPrompts()
	case "prompts/get", "completion/complete":
		rq.promptOrCompletion()
	default:
		rq.fail(http.StatusOK, jsonrpcMethodNotFound, fmt.Sprintf("method %q is not served by gw's MCP gateway", m.Method))
	}
}

// observe reports the answered request (not a tools/call: its guard
// records it) to the guard.
func (rq *request) observe() {
	op := Operation{Method: OtherMethod, Server: rq.single, Version: rq.version, SessionID: rq.r.Header.Get("Mcp-Session-Id"),
		ErrorCode: rq.errCode, Duration: time.Since(rq.start)}
	if slices.Contains(served, rq.msg.Method) {
		op.Method = rq.msg.Method
	}
	if op.Version == "" {
		op.Version = rq.r.Header.Get("MCP-Protocol-Version")
	}
	if rq.msg.Method == "initialize" {
		op.SessionID = rq.w.Header().Get("Mcp-Session-Id")
	}
	rq.guard.Observe(op)
}

// stateless checks a 2026-07-28 request: the version in _meta (or the
// header), and the Mcp-Method / Mcp-Name headers against the body.
func (rq *request) stateless(header string) string {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
		Name string                     `json:"name"`
	}
	if len(rq.msg.Params) > 0 {
		if err := json.Unmarshal(rq.msg.Params, &p); err != nil {
			return "the params are not an object"
		}
	}
	version := header
	if raw, ok := p.Meta[mcp.MetaKeyProtocolVersion]; ok {
		var v string
		if json.Unmarshal(raw, &v) != nil {
			return "_meta's " + mcp.MetaKeyProtocolVersion + " is not a string"
		}
		if header != "" && v != header {
			return fmt.Sprintf("the MCP-Protocol-Version header (%s) and _meta's protocol version (%s) differ", header, v)
		}
		version = v
	}
	if version == "" && rq.msg.Method == "server/discover" {
		version = V20260728
	}
	if version != V20260728 {
		return fmt.Sprintf("protocol version %q is not served statelessly: use %s, or initialize a session with %s or %s",
			version, V20260728, V20251125, V20250618)
	}
	if header != "" {
		if got := rq.r.Header.Get("Mcp-Method"); got != rq.msg.Method {
			return fmt.Sprintf("the Mcp-Method header (%q) does not match the body's method (%q)", got, rq.msg.Method)
		}
		if rq.msg.Method == "tools/call" {
			if got := rq.r.Header.Get("Mcp-Name"); got != p.Name {
				return fmt.Sprintf("the Mcp-Name header (%q) does not match the body's name (%q)", got, p.Name)
			}
		}
	}
	rq.version = V20260728
	return ""
}

// session opens the caller's sealed session (legacy versions).
func (rq *request) session(header string) (string, int) {
	sid := rq.r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		return "Bad Request: no Mcp-Session-Id: initialize first (versions " + V20251125 + ", " + V20250618 +
			"), or send MCP-Protocol-Version " + V20260728 + " statelessly", http.StatusBadRequest
	}
	t, err := openSession(rq.secret, sid, time.Now())
	if err != nil {
		// 404 tells the client to initialize again (the spec's answer to
		// a session the server no longer knows).
		return "the session is unknown or expired: initialize again", http.StatusNotFound
	}
	// Any session-ful version gw serves is taken in a session, as the
	// transport asks 400 only for an invalid or unsupported one (and the
	// SDKs do the same); the session's version stays in force.
	if header != "" && !slices.Contains(legacy, header) {
		return fmt.Sprintf("the MCP-Protocol-Version header (%s) is not a version gw serves in a session (%s, %s)", header,
			V20251125, V20250618), http.StatusBadRequest
	}
	rq.sess, rq.version = t, t.Version
	return "", 0
}

// initialize answers a legacy client's initialize: gw negotiates the
// version, opens a session with each upstream the request may reach (in
// parallel; one that fails is opened again per request later) and seals
// them all in the Mcp-Session-Id.
func (rq *request) initialize() {
	var p struct {
		ProtocolVersion string                     `json:"protocolVersion"`
		Capabilities    map[string]json.RawMessage `json:"capabilities"`
	}
	if err := json.Unmarshal(rq.msg.Params, &p); err != nil {
		rq.fail(http.StatusOK, jsonrpcInvalidParams, "initialize's params are not an object")
		return
	}
	version := V20251125
	if slices.Contains(legacy, p.ProtocolVersion) {
		version = p.ProtocolVersion
	}
	t := &sessionToken{Version: version, Issued: time.Now().Unix(), Upstreams: map[string]session{}}
	for _, c := range relayedRequests {
		if v, ok := p.Capabilities[c]; ok && len(v) > 0 && string(v) != "null" {
			if t.Caps == nil {
				t.Caps = map[string]json.RawMessage{}
			}
			t.Caps[c] = v
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, up := range rq.servers() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(rq.r.Context(), rq.g.opts.Timeout)
			defer cancel()
			// An upstream that speaks 2026-07-28 needs no session.
			if st, err := rq.g.client.detect(ctx, up); err != nil || st {
				return
			}
			s, err := rq.g.client.initialize(ctx, up, t.Caps)
			if err != nil || s.ID == "" && s.Version == "" {
				return
			}
			mu.Lock()
			t.Upstreams[up.ID] = s
			mu.Unlock()
		}()
	}
	wg.Wait()
	sid, err := sealSession(rq.secret, t)
	if err != nil {
		rq.fail(http.StatusInternalServerError, jsonrpcInternal, "the session could not be sealed")
		return
	}
	rq.version = version
	rq.w.Header().Set("Mcp-Session-Id", sid)
	rq.result(&mcp.InitializeResult{ProtocolVersion: version, Capabilities: rq.capabilities(),
		ServerInfo: &mcp.Implementation{Name: rq.g.opts.ServerName, Version: rq.g.opts.ServerVersion}, Instructions: rq.instructions()})
}

func (rq *request) capabilities() *mcp.ServerCapabilities {
	c := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Logging: &mcp.LoggingCapabilities{},
		Prompts: &mcp.PromptCapabilities{}, Completions: &mcp.CompletionCapabilities{}}
	if rq.single != "" {
		// Resources are served per server (docs/mcp.md, "Resources,
		// prompts, completion"); updates come on the caller's GET.
		c.Resources = &mcp.ResourceCapabilities{Subscribe: true}
	}
	return c
}

func (rq *request) instructions() string {
	if rq.single != "" {
		return ""
	}
	return "Tools of several MCP servers, each named <server>" + Separator + "<tool>."
}

// discover answers server/discover (2026-07-28).
func (rq *request) discover() {
	res := &mcp.DiscoverResult{SupportedVersions: []string{V20260728}, Capabilities: rq.capabilities(), Instructions: rq.instructions(),
		Meta: mcp.Meta{mcp.MetaKeyServerInfo: &mcp.Implementation{Name: rq.g.opts.ServerName, Version: rq.g.opts.ServerVersion}}}
	res.TTLMs, res.CacheScope = ListTTL, "private"
	rq.result(res)
}

// servers are the upstreams this request may reach: one on the
// single-server endpoint.
func (rq *request) servers() []*Upstream {
	all := rq.guard.Servers()
	if rq.single == "" {
		return all
	}
	for _, u := range all {
		if u.Name == rq.single {
			return []*Upstream{u}
		}
	}
	return nil
}

// withSession runs fn with what speaking to up takes: nothing for an
// upstream that speaks 2026-07-28 (each request stateless); else the
// upstream session the caller's own session carries, else the session
// kept for the caller's key with that upstream (opened now when there is
// none). A session the upstream has forgotten (its 404) is replaced once;
// a stateless upstream that refuses the version is asked again what it
// speaks.
func (rq *request) withSession(ctx context.Context, up *Upstream, fn func(s session) error) error {
	st, err := rq.g.client.detect(ctx, up)
	if err != nil {
		return err
	}
	if st {
		err := fn(stateless)
		var rpcErr *rpcError
		if !errors.As(err, &rpcErr) || rpcErr.Code != codeUnsupportedVersion {
			return err
		}
		rq.g.client.forgetVersion(up)
		if st, err := rq.g.client.detect(ctx, up); err != nil || st {
			return cmp.Or(err, error(rpcErr))
		}
	}
	if rq.sess != nil {
		if s, ok := rq.sess.Upstreams[up.ID]; ok {
			err := fn(s)
			if !errors.Is(err, errSessionGone) {
				return err
			}
		}
	}
	for range 2 {
		s, fresh, err := rq.g.client.pooled(ctx, up, rq.secret)
		if err != nil {
			return err
		}
		err = fn(s)
		if !errors.Is(err, errSessionGone) {
			return err
		}
		rq.g.client.unpool(up, rq.secret, s)
		if fresh {
			break
		}
	}
	return &upstreamError{server: up.Name, msg: "lost its session at once"}
}

// upstreamTools lists an upstream's tools, every page.
func (rq *request) upstreamTools(ctx context.Context, up *Upstream) ([]*mcp.Tool, error) {
	var tools []*mcp.Tool
	err := rq.withSession(ctx, up, func(s session) error {
		tools = nil
		cursor := ""
		for range maxListPages {
			params := map[string]any{}
			if cursor != "" {
				params["cursor"] = cursor
			}
			raw, _, err := rq.g.client.call(ctx, up, s, "tools/list", params)
			if err != nil {
				return err
			}
			var page struct {
				Tools      []*mcp.Tool `json:"tools"`
				NextCursor string      `json:"nextCursor"`
			}
			if err := json.Unmarshal(raw, &page); err != nil {
				return &upstreamError{server: up.Name, msg: "answered tools/list with something that is not a tool list"}
			}
			tools = append(tools, page.Tools...)
			if page.NextCursor == "" {
				return nil
			}
			cursor = page.NextCursor
		}
		return nil
	})
	return tools, err
}

// listTools answers tools/list: each upstream's tools the server's filter
// and the key's list rules let through, from every server at once.
func (rq *request) listTools() {
	servers := rq.servers()
	lists := make([][]*mcp.Tool, len(servers))
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(rq.r.Context(), rq.g.opts.Timeout)
	defer cancel()
	for i, up := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lists[i], errs[i] = rq.upstreamTools(ctx, up)
		}()
	}
	wg.Wait()
	if rq.single != "" && len(servers) == 1 && errs[0] != nil {
		rq.upstreamFailure(errs[0])
		return
	}
	out := []*mcp.Tool{}
	for i, up := range servers {
		for _, t := range lists[i] {
			if t == nil || !up.Filter.Admits(t.Name) || !rq.guard.Decide(toolpolicy.PhaseList, up.Name, t.Name, nil).Allowed {
				continue
			}
			if rq.single == "" {
				t.Name = up.Name + Separator + t.Name
			}
			out = append(out, t)
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	res := &mcp.ListToolsResult{Tools: out}
	res.TTLMs, res.CacheScope = ListTTL, "private"
	rq.result(res)
}

// callTool answers tools/call: the tool found, the key's call rules
// applied to its arguments, the call admitted (rate limit, budget), sent
// upstream with the server's own auth, cut at the timeout, and its
// outcome recorded.
func (rq *request) callTool() {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(rq.msg.Params, &p); err != nil || p.Name == "" {
		rq.fail(http.StatusOK, jsonrpcInvalidParams, "tools/call needs params with a tool name")
		return
	}
	serverName, tool := rq.single, p.Name
	if rq.single == "" {
		var ok bool
		serverName, tool, ok = strings.Cut(p.Name, Separator)
		if !ok || tool == "" {
			rq.fail(http.StatusOK, jsonrpcInvalidParams, fmt.Sprintf("unknown tool %q: tools here are named <server>%s<tool>", p.Name, Separator))
			return
		}
	}
	var up *Upstream
	for _, u := range rq.servers() {
		if u.Name == serverName {
			up = u
		}
	}
	if up == nil {
		rq.fail(http.StatusOK, jsonrpcInvalidParams, fmt.Sprintf("unknown tool %q: no MCP server %q", p.Name, serverName))
		return
	}
	var args any
	if len(p.Arguments) > 0 && string(p.Arguments) != "null" {
		dec := json.NewDecoder(strings.NewReader(string(p.Arguments)))
		dec.UseNumber()
		if err := dec.Decode(&args); err != nil {
			rq.fail(http.StatusOK, jsonrpcInvalidParams, "the tool's arguments are not JSON")
			return
		}
		if _, ok := args.(map[string]any); !ok {
			rq.fail(http.StatusOK, jsonrpcInvalidParams, "the tool's arguments must be an object")
			return
		}
	}
	call := Call{Server: up.Name, Tool: tool, Upstream: up, PriceNano: up.Prices.NanoUSD(tool), Arguments: p.Arguments, Version: rq.version}
	if !up.Filter.Admits(tool) {
		msg := fmt.Sprintf("tool %q of MCP server %q is not served (the server's tool filter)", tool, up.Name)
		rq.guard.Refused(rq.r.Context(), call, Outcome{Status: "denied", Message: msg})
		rq.fail(http.StatusOK, CodeDenied, msg)
		return
	}
	if d := rq.guard.Decide(toolpolicy.PhaseCall, up.Name, tool, args); !d.Allowed {
		rq.guard.Refused(rq.r.Context(), call, Outcome{Status: "denied", Message: d.Message})
		rq.fail(http.StatusOK, CodeDenied, d.Message)
		return
	}
	finish, err := rq.guard.Admit(rq.r.Context(), call)
	if err != nil {
		rq.fail(http.StatusOK, CodeDenied, err.Error())
		return
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(rq.r.Context(), rq.g.opts.Timeout)
	defer cancel()
	var raw json.RawMessage
	params := map[string]any{"name": tool}
	if len(p.Arguments) > 0 {
		params["arguments"] = p.Arguments
	}
	if meta := progressMeta(p.Meta); meta != nil {
		params["_meta"] = meta
	}
	err = rq.withSession(ctx, up, func(s session) error {
		var err error
		raw, _, err = rq.g.client.callWith(ctx, up, s, "tools/call", params, rq.relayFor(up))
		return err
	})
	out := Outcome{Status: "ok", Delivered: true, Duration: time.Since(start)}
	var rpcErr *rpcError
	switch {
	case errors.As(err, &rpcErr):
		out.Status, out.Message = "error", rpcErr.Message
	case err != nil:
		out.Status, out.Delivered, out.Message = "error", false, err.Error()
	default:
		var res struct {
			IsError bool `json:"isError"`
		}
		if json.Unmarshal(raw, &res) != nil {
			out.Status, out.Delivered, out.Message = "error", false, "the upstream's result is not an object"
			err = &upstreamError{server: up.Name, msg: "answered tools/call with something that is not a result"}
		} else if res.IsError {
			out.Status, out.Message = "error", "the tool reported an error"
		}
	}
	finish(out)
	if rpcErr != nil {
		rq.write(http.StatusOK, message{JSONRPC: "2.0", ID: rq.msg.ID, Error: rpcErr})
		return
	}
	if err != nil {
		rq.upstreamFailure(err)
		return
	}
	rq.write(http.StatusOK, message{JSONRPC: "2.0", ID: rq.msg.ID, Result: raw})
}

func (rq *request) upstreamFailure(err error) {
	var ue *upstreamError
	var rpcErr *rpcError
	switch {
	case errors.As(err, &rpcErr):
		rq.write(http.StatusOK, message{JSONRPC: "2.0", ID: rq.msg.ID, Error: rpcErr})
	case errors.As(err, &ue):
		rq.fail(http.StatusOK, CodeUpstream, ue.Error())
	default:
		rq.fail(http.StatusOK, CodeUpstream, "the MCP server failed: "+err.Error())
	}
}

func (rq *request) result(v any) {
	raw, err := json.Marshal(v)
	if err != nil {
		rq.fail(http.StatusInternalServerError, jsonrpcInternal, "the result could not be encoded")
		return
	}
	rq.write(http.StatusOK, message{JSONRPC: "2.0", ID: rq.msg.ID, Result: raw})
}

func (rq *request) fail(status, code int, msg string) {
	id := rq.msg.ID
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	rq.write(status, message{JSONRPC: "2.0", ID: id, Error: &rpcError{Code: code, Message: msg}})
}

// write answers the request: m as the body, or as the last event of the
// stream the answer became (status is then the stream's 200).
func (rq *request) write(status int, m message) {
	if m.Error != nil {
		rq.errCode = m.Error.Code
	}
	rq.mu.Lock()
	streaming := rq.stream
	rq.mu.Unlock()
	if streaming {
		rq.event(m)
		return
	}
	b, _ := json.Marshal(m)
	rq.w.Header().Set("Content-Type", "application/json")
	rq.w.WriteHeader(status)
	_, _ = rq.w.Write(b)
}

func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(message{JSONRPC: "2.0", ID: id, Error: &rpcError{Code: code, Message: msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// randomBytes fills b from crypto/rand.
func randomBytes(b []byte) error {
	_, err := rand.Read(b)
	return err
}
