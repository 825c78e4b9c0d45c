package mcpgw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gw-gateway/gw/server/toolpolicy"
)

// Resources, prompts, completion and logging (docs/mcp.md, "Resources,
// prompts, completion"). Tool policies speak of tools only, so a key
// reaches a server's resources, prompts, completions and log level
// exactly when it may see at least one of the server's tools: the
// server's tool filter and the key's list rules let one of its tools
// through (with mcp_default allow, any tool no deny matches). Reads
// (resources/read, prompts/get, completion/complete) are admitted and
// metered like a tools/call of price $0 named by the method
// (mcp/<server>/resources/read …): the key's rate limit, its budgets, one
// usage event and one audit row each.

// errUnreached refuses a request to a server none of whose tools the
// key may see.
type errUnreached struct{ server string }

func (e *errUnreached) Error() string {
	return fmt.Sprintf("MCP server %q is not reachable with this key: no tool policy lets it see any of the server's tools", e.server)
}

// reaches says whether the key may reach up's resources and prompts (nil)
// or why not.
func (rq *request) reaches(ctx context.Context, up *Upstream) error {
	tools, err := rq.upstreamTools(ctx, up)
	if err != nil {
		return err
	}
	for _, t := range tools {
		if t != nil && up.Filter.Admits(t.Name) && rq.guard.Decide(toolpolicy.PhaseList, up.Name, t.Name, nil).Allowed {
			return nil
		}
	}
	return &errUnreached{server: up.Name}
}

// single is the upstream of /inf/v1/mcp/{server}.
func (rq *request) singleUpstream() *Upstream {
	if s := rq.servers(); len(s) == 1 {
		return s[0]
	}
	return nil
}

// forwardTo sends the request upstream as method with params (the
// upstream's progress and log notifications and its requests relayed as
// for a tools/call) and answers the caller with what the upstream
// answered. metered: admitted and recorded as a $0 call named by the
// method.
func (rq *request) forwardTo(up *Upstream, method string, params map[string]any, metered bool) {
	ctx, cancel := context.WithTimeout(rq.r.Context(), rq.g.opts.Timeout)
	defer cancel()
	var call Call
	if metered {
		args := map[string]any{}
		for k, v := range params {
			if k != "_meta" {
				args[k] = v
			}
		}
		raw, _ := json.Marshal(args)
		call = Call{Server: up.Name, Tool: method, Method: method, Upstream: up, Arguments: raw, Version: rq.version}
	}
	if err := rq.reaches(ctx, up); err != nil {
		var unreached *errUnreached
		if errors.As(err, &unreached) {
			if metered {
				rq.guard.Refused(rq.r.Context(), call, Outcome{Status: "denied", Message: err.Error()})
			}
			rq.fail(http.StatusOK, CodeDenied, err.Error())
			return
		}
		rq.upstreamFailure(err)
		return
	}
	var finish func(Outcome)
	if metered {
		f, err := rq.guard.Admit(rq.r.Context(), call)
		if err != nil {
			rq.fail(http.StatusOK, CodeDenied, err.Error())
			return
		}
		finish = f
	}
	start := time.Now()
	var raw json.RawMessage
	err := rq.withSession(ctx, up, func(s session) error {
		var err error
		raw, _, err = rq.g.client.callWith(ctx, up, s, method, params, rq.relayFor(up))
		return err
	})
	if finish != nil {
		out := Outcome{Status: "ok", Delivered: true, Duration: time.Since(start)}
		var rpcErr *rpcError
		switch {
		case errors.As(err, &rpcErr):
			out.Status, out.Message = "error", rpcErr.Message
		case err != nil:
			out.Status, out.Delivered, out.Message = "error", false, err.Error()
		}
		finish(out)
	}
	if err != nil {
		rq.upstreamFailure(err)
		return
	}
	rq.write(http.StatusOK, message{JSONRPC: "2.0", ID: rq.msg.ID, Result: raw})
}

// setLevel answers logging/setLevel: forwarded to the server, or on the
// aggregated endpoint to every server the key reaches (each its own
// answer; gw answers {}).
func (rq *request) setLevel() {
	params, err := rq.forwardParams()
	if err != nil {
		rq.fail(http.StatusOK, jsonrpcInvalidParams, "logging/setLevel's params are not an object")
		return
	}
	if rq.single != "" {
		rq.forwardTo(rq.singleUpstream(), "logging/setLevel", params, false)
		return
	}
	ctx, cancel := context.WithTimeout(rq.r.Context(), rq.g.opts.Timeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, up := range rq.servers() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if rq.reaches(ctx, up) != nil {
				return
			}
			_ = rq.withSession(ctx, up, func(s session) error {
				_, _, err := rq.g.client.call(ctx, up, s, "logging/setLevel", params)
				return err
			})
		}()
	}
	wg.Wait()
	rq.result(map[string]any{})
}

// resources answers resources/list, resources/templates/list,
// resources/read and resources/subscribe / unsubscribe: forwarded on
// /inf/v1/mcp/{server} (the updates of a subscription come on the
// caller's own stream, its GET, from the upstream session its session
// holds). The aggregated
// endpoint lists none: a resource's URI is the upstream's own and names
// no server, and gw rewrites none, so resources are read per server.
func (rq *request) resources() {
	if rq.single == "" {
		switch rq.msg.Method {
		case "resources/list":
			rq.result(map[string]any{"resources": []any{}})
		case "resources/templates/list":
			rq.result(map[string]any{"resourceTemplates": []any{}})
		case "resources/read":
			rq.fail(http.StatusOK, jsonrpcInvalidParams, "the aggregated endpoint serves no resources: read them at /inf/v1/mcp/{server}")
		default:
			rq.fail(http.StatusOK, jsonrpcMethodNotFound, fmt.Sprintf("method %q is not served on the aggregated endpoint, "+
				"which serves no resources: subscribe at /inf/v1/mcp/{server}", rq.msg.Method))
		}
		return
	}
	params, err := rq.forwardParams()
	if err != nil {
		rq.fail(http.StatusOK, jsonrpcInvalidParams, rq.msg.Method+"'s params are not an object")
		return
	}
	rq.forwardTo(rq.singleUpstream(), rq.msg.Method, params, rq.msg.Method == "resources/read")
}

// listPrompts answers prompts/list: the server's, forwarded; on the
// aggregated endpoint every reachable server's prompts, named
// <server>__<prompt>.
func (rq *request) listPrompts() {
	params, err := rq.forwardParams()
	if err != nil {
		rq.fail(http.StatusOK, jsonrpcInvalidParams, "prompts/list's params are not an object")
		return
	}
	if rq.single != "" {
		rq.forwardTo(rq.singleUpstream(), "prompts/list", params, false)
		return
	}
	ctx, cancel := context.WithTimeout(rq.r.Context(), rq.g.opts.Timeout)
	defer cancel()
	servers := rq.servers()
	lists := make([][]map[string]json.RawMessage, len(servers))
	var wg sync.WaitGroup
	for i, up := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if rq.reaches(ctx, up) != nil {
				return
			}
			lists[i] = rq.upstreamPrompts(ctx, up)
		}()
	}
	wg.Wait()
	type named struct {
		name string
		p    map[string]json.RawMessage
	}
	var all []named
	for i, up := range servers {
		for _, p := range lists[i] {
			var name string
			if json.Unmarshal(p["name"], &name) != nil || name == "" {
				continue
			}
			full := up.Name + Separator + name
			p["name"], _ = json.Marshal(full)
			all = append(all, named{full, p})
		}
	}
	sort.SliceStable(all, func(a, b int) bool { return all[a].name < all[b].name })
	out := make([]map[string]json.RawMessage, 0, len(all))
	for _, n := range all {
		out = append(out, n.p)
	}
	rq.result(map[string]any{"prompts": out})
}

// upstreamPrompts lists an upstream's prompts, every page (nil when it
// fails: the aggregated list goes on without it).
func (rq *request) upstreamPrompts(ctx context.Context, up *Upstream) []map[string]json.RawMessage {
	var prompts []map[string]json.RawMessage
	err := rq.withSession(ctx, up, func(s session) error {
		prompts = nil
		cursor := ""
		for range maxListPages {
			params := map[string]any{}
			if cursor != "" {
				params["cursor"] = cursor
			}
			raw, _, err := rq.g.client.call(ctx, up, s, "prompts/list", params)
			if err != nil {
				return err
			}
			var page struct {
				Prompts    []map[string]json.RawMessage `json:"prompts"`
				NextCursor string                       `json:"nextCursor"`
			}
			if err := json.Unmarshal(raw, &page); err != nil {
				return &upstreamError{server: up.Name, msg: "answered prompts/list with something that is not a prompt list"}
			}
			prompts = append(prompts, page.Prompts...)
			if page.NextCursor == "" {
				return nil
			}
			cursor = page.NextCursor
		}
		return nil
	})
	if err != nil {
		return nil
	}
	return prompts
}

// promptOrCompletion answers prompts/get and completion/complete:
// forwarded to the server (on the aggregated endpoint the one the
// prompt's <server>__ prefix names, the prefix taken off), admitted and
// metered. A completion of a resource template's argument is served per
// server only (its URI names no server).
func (rq *request) promptOrCompletion() {
	params, err := rq.forwardParams()
	if err != nil {
		rq.fail(http.StatusOK, jsonrpcInvalidParams, rq.msg.Method+"'s params are not an object")
		return
	}
	if rq.single != "" {
		rq.forwardTo(rq.singleUpstream(), rq.msg.Method, params, true)
		return
	}
	var name string
	var ref map[string]json.RawMessage
	if rq.msg.Method == "prompts/get" {
		raw, _ := params["name"].(json.RawMessage)
		_ = json.Unmarshal(raw, &name)
	} else {
		raw, _ := params["ref"].(json.RawMessage)
		var kind string
		if json.Unmarshal(raw, &ref) != nil || json.Unmarshal(ref["type"], &kind) != nil || kind != "ref/prompt" {
			rq.fail(http.StatusOK, jsonrpcInvalidParams, "the aggregated endpoint completes prompts' arguments only (ref/prompt): "+
				"complete a resource template's at /inf/v1/mcp/{server}")
			return
		}
		_ = json.Unmarshal(ref["name"], &name)
	}
	serverName, prompt, ok := strings.Cut(name, Separator)
	if !ok || prompt == "" {
		rq.fail(http.StatusOK, jsonrpcInvalidParams, fmt.Sprintf("unknown prompt %q: prompts here are named <server>%s<prompt>", name, Separator))
		return
	}
	var up *Upstream
	for _, u := range rq.servers() {
		if u.Name == serverName {
			up = u
		}
	}
	if up == nil {
		rq.fail(http.StatusOK, jsonrpcInvalidParams, fmt.Sprintf("unknown prompt %q: no MCP server %q", name, serverName))
		return
	}
	bare, _ := json.Marshal(prompt)
	if ref != nil {
		ref["name"] = bare
		params["ref"] = ref
	} else {
		params["name"] = json.RawMessage(bare)
	}
	rq.forwardTo(up, rq.msg.Method, params, true)
}
