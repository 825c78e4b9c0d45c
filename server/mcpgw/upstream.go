package mcpgw

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/gw-gateway/gw/server/toolpolicy"
)

// Auth is an upstream's auth, its secret opened.
type Auth struct {
	Kind         string
	Header       string
	Secret       string
	TokenURL     string
	ClientID     string
	ClientSecret string
	Scopes       []string
}

// Upstream is one MCP server a request may reach.
type Upstream struct {
	ID     string
	Name   string
	URL    string
	Auth   Auth
	Filter toolpolicy.Filter
	Prices toolpolicy.Prices
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// message is a JSON-RPC message, any kind.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// upstreamError is a failure to get an answer from an upstream (not a
// JSON-RPC error it answered): unreachable, refused, timed out, garbled.
type upstreamError struct {
	server string
	msg    string
	status int // the HTTP status, 0 when none came
}

func (e *upstreamError) Error() string {
	return fmt.Sprintf("MCP server %q: %s", e.server, e.msg)
}

// errSessionGone is an upstream's 404 to a request carrying its session:
// the session expired or the upstream restarted.
var errSessionGone = errors.New("upstream session gone")

// session is what gw holds of one upstream session.
type session struct {
	ID      string `json:"sid,omitempty"`
	Version string `json:"pv"`
}

// stateless is the session of a request to an upstream that speaks
// 2026-07-28: none, the version in every request.
var stateless = session{Version: V20260728}

// client sends JSON-RPC requests to upstreams over Streamable HTTP.
type client struct {
	http       *http.Client
	maxMessage int64

	mu     sync.Mutex
	tokens map[string]oauth2.TokenSource
	// versions: what each upstream speaks, by upstreamKey, until an
	// expiry (detect).
	versions map[string]speaks
	// probing: the upstreams being asked now, closed when answered.
	probing map[string]chan struct{}
	// pool: the upstream sessions kept for (caller's key, upstream), by
	// poolKey, for callers whose own session does not carry one (pooled).
	pool map[string]pooledSession
	now  func() time.Time
	// ids numbers gw's requests to upstreams: requests on one upstream
	// session may be in flight at once (a key's calls, a caller's stream
	// and its calls), and a server refuses an id already in flight.
	ids atomic.Int64
}

// speaks is what an upstream was found to speak.
type speaks struct {
	stateless bool
	until     time.Time
}

type pooledSession struct {
	s     session
	until time.Time
}

// upstreamVersion is what gw offers an upstream in its initialize: the
// newest version of the session-ful protocol, which every upstream of
// 2025 and later takes (and negotiates down from).
const upstreamVersion = V20251125

// Version detection and the session pool (docs/mcp.md, "Protocol
// versions").
const (
	// versionTTL: how long what an upstream speaks is trusted before it
	// is asked again.
	versionTTL = 10 * time.Minute
	// versionRetryTTL: how long an upstream whose server/discover failed
	// with a server error is taken for a session-ful one.
	versionRetryTTL = 30 * time.Second
	// poolIdle: a pooled upstream session unused this long is forgotten
	// (upstreams expire idle sessions too; a forgotten one is answered
	// 404 and replaced).
	poolIdle = 10 * time.Minute
	// maxPool bounds the pool and the version cache.
	maxPool = 10_000
)

// upstreamKey names an upstream for the caches: its id and everything
// that makes what it is (its URL and credentials), hashed, so a server
// moved or given another secret is detected and sessioned afresh.
func upstreamKey(up *Upstream) string {
	h := sha256.New()
	for _, s := range append([]string{up.ID, up.URL, up.Auth.Kind, up.Auth.Header, up.Auth.Secret, up.Auth.TokenURL, up.Auth.ClientID,
		up.Auth.ClientSecret}, up.Auth.Scopes...) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// detect says whether up speaks 2026-07-28 (statelessly), asking it with
// server/discover when the answer is not known or has expired: a result
// that lists 2026-07-28 means it does; a JSON-RPC error or an HTTP refusal
// (a session-ful server wants initialize first) means it does not. An
// upstream that cannot be reached is an error, and nothing is learnt.
func (c *client) detect(ctx context.Context, up *Upstream) (bool, error) {
	key := upstreamKey(up)
	for {
		c.mu.Lock()
		v, ok := c.versions[key]
		if ok && c.now().Before(v.until) {
			c.mu.Unlock()
			return v.stateless, nil
		}
		// One request asks; the others of the moment wait for its answer.
		if wait, busy := c.probing[key]; busy {
			c.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return false, &upstreamError{server: up.Name, msg: "did not answer in time"}
			}
		}
		done := make(chan struct{})
		c.probing[key] = done
		c.mu.Unlock()
		v, err := c.probe(ctx, up)
		c.mu.Lock()
		delete(c.probing, key)
		if err == nil {
			if len(c.versions) >= maxPool {
				clear(c.versions)
			}
			c.versions[key] = v
		}
		c.mu.Unlock()
		close(done)
		return v.stateless, err
	}
}

// probe asks up server/discover (see detect).
func (c *client) probe(ctx context.Context, up *Upstream) (speaks, error) {
	now := c.now()
	raw, _, err := c.call(ctx, up, stateless, "server/discover", map[string]any{})
	var ue *upstreamError
	var rpcErr *rpcError
	v := speaks{until: now.Add(versionTTL)}
	switch {
	case err == nil:
		var d struct {
			SupportedVersions []string `json:"supportedVersions"`
		}
		v.stateless = json.Unmarshal(raw, &d) == nil && slices.Contains(d.SupportedVersions, V20260728)
	case errors.As(err, &rpcErr):
	case errors.As(err, &ue) && ue.status != 0:
		if ue.status >= 500 {
			v.until = now.Add(versionRetryTTL)
		}
	default:
		return speaks{}, err
	}
	return v, nil
}

// forgetVersion drops what up was found to speak (it refused the version
// gw used).
func (c *client) forgetVersion(up *Upstream) {
	c.mu.Lock()
	delete(c.versions, upstreamKey(up))
	c.mu.Unlock()
}

// poolKey names the pooled session of one caller's key with one upstream:
// a digest of the key (never the key itself) and the upstream's.
func poolKey(bearer string, up *Upstream) string {
	sum := sha256.Sum256([]byte("gw mcp upstream session\x00" + bearer + "\x00" + upstreamKey(up)))
	return hex.EncodeToString(sum[:])
}

// pooled is the caller's session with up: the kept one, else one opened
// now and kept (fresh). Sessions are never shared between keys: an
// upstream may hold per-session state, and one key's must not reach
// another's.
func (c *client) pooled(ctx context.Context, up *Upstream, bearer string) (s session, fresh bool, err error) {
	key := poolKey(bearer, up)
	c.mu.Lock()
	p, ok := c.pool[key]
	if ok && c.now().Before(p.until) {
		p.until = c.now().Add(poolIdle)
		c.pool[key] = p
		c.mu.Unlock()
		return p.s, false, nil
	}
	c.mu.Unlock()
	s, err = c.initialize(ctx, up, nil)
	if err != nil {
		return session{}, false, err
	}
	c.mu.Lock()
	if p, ok := c.pool[key]; ok && c.now().Before(p.until) {
		// Another request of the key opened one meanwhile: keep one.
		c.mu.Unlock()
		go c.close(up, s)
		return p.s, false, nil
	}
	if len(c.pool) >= maxPool {
		now := c.now()
		for k, p := range c.pool {
			if !now.Before(p.until) {
				delete(c.pool, k)
			}
		}
		if len(c.pool) >= maxPool {
			clear(c.pool)
		}
	}
	c.pool[key] = pooledSession{s: s, until: c.now().Add(poolIdle)}
	c.mu.Unlock()
	return s, true, nil
}

// unpool forgets the caller's session with up when it is s (the upstream
// forgot it).
func (c *client) unpool(up *Upstream, bearer string, s session) {
	key := poolKey(bearer, up)
	c.mu.Lock()
	if p, ok := c.pool[key]; ok && p.s == s {
		delete(c.pool, key)
	}
	c.mu.Unlock()
}

// initialize opens a session with an upstream: initialize, then the
// initialized notification. caps are the client capabilities gw declares
// (the caller's it relays: sampling, elicitation, roots); nil for none.
func (c *client) initialize(ctx context.Context, up *Upstream, caps map[string]json.RawMessage) (session, error) {
	declared := map[string]any{}
	for k, v := range caps {
		declared[k] = v
	}
	params := map[string]any{"protocolVersion": upstreamVersion, "capabilities": declared, "clientInfo": gwClientInfo}
	res, sid, err := c.call(ctx, up, session{}, "initialize", params)
	if err != nil {
		return session{}, err
	}
	var ir struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(res, &ir); err != nil || ir.ProtocolVersion == "" {
		return session{}, &upstreamError{server: up.Name, msg: "answered initialize without a protocol version"}
	}
	s := session{ID: sid, Version: ir.ProtocolVersion}
	if err := c.notify(ctx, up, s, "notifications/initialized"); err != nil {
		return session{}, err
	}
	return s, nil
}

// The _meta keys of a 2026-07-28 request, and what gw says of itself.
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
)

var gwClientInfo = map[string]any{"name": "gw", "version": "1"}

// close ends an upstream session gw opened and does not keep.
func (c *client) close(up *Upstream, s session) {
	if s.ID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, up.URL, nil)
	if err != nil {
		return
	}
	req.Header.Set("Mcp-Session-Id", s.ID)
	req.Header.Set("MCP-Protocol-Version", s.Version)
	if c.authorize(ctx, up, req) != nil {
		return
	}
	if resp, err := c.http.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
	}
}

func (c *client) notify(ctx context.Context, up *Upstream, s session, method string) error {
	body, _ := json.Marshal(message{JSONRPC: "2.0", Method: method})
	resp, err := c.post(ctx, up, s, body, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	if resp.StatusCode/100 != 2 {
		return &upstreamError{server: up.Name, msg: fmt.Sprintf("answered %s with HTTP %d", method, resp.StatusCode), status: resp.StatusCode}
	}
	return nil
}

// call sends one request and reads its response: the result, or the
// JSON-RPC error as an *rpcError, or an *upstreamError. To an upstream
// spoken to statelessly (2026-07-28) the request carries the version, gw's
// client info and capabilities in _meta, and the Mcp-Method (and for
// tools/call Mcp-Name) header.
func (c *client) call(ctx context.Context, up *Upstream, s session, method string, params map[string]any) (json.RawMessage, string, error) {
	return c.callWith(ctx, up, s, method, params, nil)
}

// relay is given each message an upstream sends in a request's event
// stream before the response (its notifications, its requests) with the
// upstream session it came on; it says whether it took the message. A
// request it does not take is answered -32601 at once (refuse); a
// notification it does not take is dropped.
type relay func(m *message, s session) bool

// callWith is call, the upstream's messages before the response given to
// on (nil: none taken). params' "_meta" (a map), when present, is sent
// as the request's _meta.
func (c *client) callWith(ctx context.Context, up *Upstream, s session, method string, params map[string]any, on relay) (json.RawMessage, string, error) {
	var hdr map[string]string
	if s.Version == V20260728 {
		params = maps.Clone(params)
		meta := map[string]any{}
		if m, ok := params["_meta"].(map[string]any); ok {
			maps.Copy(meta, m)
		}
		meta[metaProtocolVersion], meta[metaClientInfo], meta[metaClientCapabilities] = s.Version, gwClientInfo, map[string]any{}
		params["_meta"] = meta
		hdr = map[string]string{"Mcp-Method": method}
		if name, ok := params["name"].(string); ok && method == "tools/call" {
			hdr["Mcp-Name"] = name
		}
	}
	p, err := json.Marshal(params)
	if err != nil {
		return nil, "", err
	}
	body, _ := json.Marshal(message{JSONRPC: "2.0", ID: json.RawMessage(strconv.FormatInt(c.ids.Add(1), 10)), Method: method, Params: p})
	resp, err := c.post(ctx, up, s, body, hdr)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound && s.ID != "" {
		return nil, "", errSessionGone
	}
	if resp.StatusCode == http.StatusBadRequest {
		// A JSON-RPC error in a 400 (a version refused, say) is the
		// upstream's answer.
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		var m message
		if json.Unmarshal(data, &m) == nil && m.Error != nil {
			return nil, "", m.Error
		}
		msg := "answered HTTP 400"
		if detail := strings.TrimSpace(string(data[:min(len(data), 200)])); detail != "" {
			msg += ": " + detail
		}
		return nil, "", &upstreamError{server: up.Name, msg: msg, status: resp.StatusCode}
	}
	if resp.StatusCode/100 != 2 {
		return nil, "", &upstreamError{server: up.Name, msg: httpProblem(resp), status: resp.StatusCode}
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		sid = s.ID
	}
	m, err := c.readResponse(resp, up, func(m *message) {
		in := session{ID: sid, Version: s.Version}
		if on != nil && on(m, in) {
			return
		}
		if len(m.ID) > 0 && string(m.ID) != "null" {
			c.refuse(ctx, up, in, m.ID, m.Method)
		}
	})
	if err != nil {
		return nil, "", err
	}
	if m.Error != nil {
		return nil, sid, m.Error
	}
	return m.Result, sid, nil
}

// httpProblem says what an upstream's non-2xx answer means.
func httpProblem(resp *http.Response) string {
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Sprintf("refused gw's credentials (HTTP %d): check the server's auth", resp.StatusCode)
	case http.StatusRequestEntityTooLarge:
		return "refused the message as too large (HTTP 413)"
	}
	var b [200]byte
	n, _ := io.ReadFull(resp.Body, b[:])
	detail := strings.TrimSpace(string(b[:n]))
	if detail != "" {
		return fmt.Sprintf("answered HTTP %d: %s", resp.StatusCode, detail)
	}
	return fmt.Sprintf("answered HTTP %d", resp.StatusCode)
}

func (c *client) post(ctx context.Context, up *Upstream, s session, body []byte, hdr map[string]string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, up.URL, bytes.NewReader(body))
	if err != nil {
		return nil, &upstreamError{server: up.Name, msg: "its URL does not make a request: " + err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.Version != "" {
		req.Header.Set("MCP-Protocol-Version", s.Version)
	}
	if s.ID != "" {
		req.Header.Set("Mcp-Session-Id", s.ID)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if err := c.authorize(ctx, up, req); err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, &upstreamError{server: up.Name, msg: "did not answer in time"}
		}
		return nil, &upstreamError{server: up.Name, msg: "cannot be reached: " + scrub(err.Error(), up)}
	}
	return resp, nil
}

// scrub keeps secrets out of an error's text.
func scrub(s string, up *Upstream) string {
	for _, secret := range []string{up.Auth.Secret, up.Auth.ClientSecret} {
		if secret != "" {
			s = strings.ReplaceAll(s, secret, "…")
		}
	}
	return s
}

// authorize gives the request the upstream's own auth: never the
// caller's credential.
func (c *client) authorize(ctx context.Context, up *Upstream, req *http.Request) error {
	switch up.Auth.Kind {
	case toolpolicy.AuthHeader:
		req.Header.Set(up.Auth.Header, up.Auth.Secret)
	case toolpolicy.AuthOAuthClientCreds:
		tok, err := c.tokenSource(up).Token()
		if err != nil {
			return &upstreamError{server: up.Name, msg: "its token endpoint gave no token: " + scrub(oauthProblem(err), up)}
		}
		tok.SetAuthHeader(req)
	}
	return nil
}

func oauthProblem(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		if re.ErrorCode != "" {
			return fmt.Sprintf("HTTP %d %s", re.Response.StatusCode, re.ErrorCode)
		}
		return fmt.Sprintf("HTTP %d", re.Response.StatusCode)
	}
	return err.Error()
}

// tokenSource is the upstream's cached client-credentials token source
// (oauth2 reuses a token until shortly before it expires, then fetches
// another), keyed by everything that makes the token: a changed secret
// or scope gets a fresh source.
func (c *client) tokenSource(up *Upstream) oauth2.TokenSource {
	h := sha256.New()
	for _, s := range append([]string{up.ID, up.Auth.TokenURL, up.Auth.ClientID, up.Auth.ClientSecret}, up.Auth.Scopes...) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	key := hex.EncodeToString(h.Sum(nil))
	c.mu.Lock()
	defer c.mu.Unlock()
	if ts, ok := c.tokens[key]; ok {
		return ts
	}
	cfg := clientcredentials.Config{ClientID: up.Auth.ClientID, ClientSecret: up.Auth.ClientSecret, TokenURL: up.Auth.TokenURL,
		Scopes: up.Auth.Scopes, AuthStyle: oauth2.AuthStyleInParams}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, c.http)
	ts := cfg.TokenSource(ctx)
	if len(c.tokens) > maxTokenSources {
		clear(c.tokens)
	}
	c.tokens[key] = ts
	return ts
}

// refuse answers a request an upstream sent gw in its event stream
// (sampling/createMessage, elicitation/create, roots/list): gw relays no
// server-to-client requests and offers upstreams no client capabilities,
// so it answers -32601 at once, as JSON-RPC wants every request answered,
// rather than leave the upstream waiting for an answer until gw's timeout
// cuts the call.
func (c *client) refuse(ctx context.Context, up *Upstream, s session, id json.RawMessage, method string) {
	_ = c.respond(ctx, up, s, message{JSONRPC: "2.0", ID: id, Error: &rpcError{Code: jsonrpcMethodNotFound,
		Message: fmt.Sprintf("gw's MCP gateway relays no server-to-client requests (%s)", method)}})
}

// respond sends an upstream the answer to a request it sent (on its
// session s, with the upstream's own auth): gw's refusal, or the
// caller's answer relayed.
func (c *client) respond(ctx context.Context, up *Upstream, s session, m message) error {
	body, _ := json.Marshal(m)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, up.URL, bytes.NewReader(body))
	if err != nil {
		return &upstreamError{server: up.Name, msg: "its URL does not make a request: " + err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.Version != "" {
		req.Header.Set("MCP-Protocol-Version", s.Version)
	}
	if s.ID != "" {
		req.Header.Set("Mcp-Session-Id", s.ID)
	}
	if err := c.authorize(ctx, up, req); err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return &upstreamError{server: up.Name, msg: "cannot be reached: " + scrub(err.Error(), up)}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound && s.ID != "" {
		return errSessionGone
	}
	if resp.StatusCode/100 != 2 {
		return &upstreamError{server: up.Name, msg: fmt.Sprintf("answered a response with HTTP %d", resp.StatusCode), status: resp.StatusCode}
	}
	return nil
}

// readResponse reads the JSON-RPC response of a POST: one JSON body, or
// the SSE stream's events until the response (notifications of the
// upstream in between, notifications and requests, are given to
// onMessage). Nothing larger than maxMessage is read whole.
func (c *client) readResponse(resp *http.Response, up *Upstream, onMessage func(m *message)) (*message, error) {
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	limited := io.LimitReader(resp.Body, c.maxMessage+1)
	switch ct {
	case "application/json":
		data, err := io.ReadAll(limited)
		if err != nil {
			return nil, &upstreamError{server: up.Name, msg: "broke off its answer: " + err.Error()}
		}
		if int64(len(data)) > c.maxMessage {
			return nil, &upstreamError{server: up.Name, msg: fmt.Sprintf("answered more than %d bytes", c.maxMessage)}
		}
		var m message
		if err := json.Unmarshal(data, &m); err != nil || (m.Result == nil && m.Error == nil) {
			return nil, &upstreamError{server: up.Name, msg: "answered something that is not a JSON-RPC response"}
		}
		return &m, nil
	case "text/event-stream":
		var res *message
		err := c.scanEvents(resp.Body, up, func(m *message) bool {
			if m.Method == "" && (m.Result != nil || m.Error != nil) {
				res = m
				return true
			}
			if m.Method != "" {
				onMessage(m)
			}
			return false
		})
		if res != nil {
			return res, nil
		}
		if err != nil {
			return nil, err
		}
		return nil, &upstreamError{server: up.Name, msg: "closed its stream without answering"}
	}
	return nil, &upstreamError{server: up.Name, msg: fmt.Sprintf("answered with content type %q, not JSON or an event stream", ct)}
}

// scanEvents reads an event stream's JSON-RPC messages, each given to fn
// until it says stop; nil when the stream ended (or fn stopped it).
// Nothing larger than maxMessage is read whole.
func (c *client) scanEvents(body io.Reader, up *Upstream, fn func(m *message) (stop bool)) error {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64*1024), int(c.maxMessage))
	var data bytes.Buffer
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if data.Len() > 0 {
				var m message
				if json.Unmarshal(data.Bytes(), &m) == nil && fn(&m) {
					return nil
				}
				data.Reset()
			}
		case bytes.HasPrefix(line, []byte("data:")):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" ")))
			if int64(data.Len()) > c.maxMessage {
				return &upstreamError{server: up.Name, msg: fmt.Sprintf("sent an event of more than %d bytes", c.maxMessage)}
			}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return &upstreamError{server: up.Name, msg: fmt.Sprintf("sent an event of more than %d bytes", c.maxMessage)}
		}
		return &upstreamError{server: up.Name, msg: "broke off its stream: " + err.Error()}
	}
	return nil
}

// listen opens the upstream session's own event stream (a GET), on which
// the upstream sends what belongs to no request: its requests and
// notifications outside a call, resource updates. nil, nil when the
// upstream offers none (405) or has forgotten the session.
func (c *client) listen(ctx context.Context, up *Upstream, s session) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, up.URL, nil)
	if err != nil {
		return nil, &upstreamError{server: up.Name, msg: "its URL does not make a request: " + err.Error()}
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", s.ID)
	req.Header.Set("MCP-Protocol-Version", s.Version)
	if err := c.authorize(ctx, up, req); err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, &upstreamError{server: up.Name, msg: "cannot be reached: " + scrub(err.Error(), up)}
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return nil, nil
	}
	return resp, nil
}
