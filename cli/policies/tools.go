package policies

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/toolpolicy"
	"github.com/gw-gateway/gw/wire"
)

// toolExplanation is explain's tool form: what the data plane decides
// for one key and one tool of one MCP server, at list time and at call
// time (with the given arguments), by the same evaluator
// (server/toolpolicy.Decide) over the workspace's enabled tool policies
// and its mcp_default, after the server's own filter.
type toolExplanation struct {
	Key     string `json:"key_id"`
	Server  string `json:"server"`
	Tool    string `json:"tool"`
	Default string `json:"mcp_default"`
	// ServerFound is false when no server of that name is in force in the
	// workspace (neither its own nor the organization's, as far as the
	// caller may read); Filtered when the server's tools filter hides the
	// tool or the server is disabled: then nothing reaches it.
	ServerFound bool   `json:"server_found"`
	ServerScope string `json:"server_scope,omitempty"`
	Filtered    string `json:"filtered,omitempty"`
	// PriceUSD is the price of one call, from the server's prices.
	PriceUSD string       `json:"price_usd,omitempty"`
	List     toolDecision `json:"list"`
	Call     toolDecision `json:"call"`
}

type toolDecision struct {
	Allowed bool   `json:"allowed"`
	Rule    string `json:"rule,omitempty"`
	Message string `json:"message,omitempty"`
}

func toolExplainRun(ctx context.Context, opts *ExplainOptions) error {
	c, org, ws, err := cmdutil.WorkspaceClient(opts.Client)
	if err != nil {
		return err
	}
	key, err := findInferenceKey(ctx, c, org, ws, opts.Key)
	if err != nil {
		return err
	}
	w, err := c.GetWorkspace(ctx, org, ws)
	if err != nil {
		return err
	}
	tps, err := c.ListToolPolicies(ctx, org, ws)
	if err != nil {
		return err
	}
	var evaluated []toolpolicy.Policy
	for _, p := range tps {
		if !p.Enabled {
			continue
		}
		raw, err := json.Marshal(p.Definition)
		if err != nil {
			return err
		}
		d, err := toolpolicy.ParseDefinitionJSON(raw)
		if err != nil {
			return fmt.Errorf("tool policy %s: %w", p.Name, err)
		}
		evaluated = append(evaluated, toolpolicy.Policy{ID: p.ID.String(), Name: p.Name, Definition: d})
	}
	x := toolExplanation{Key: key.ID.String(), Server: opts.Server, Tool: opts.Tool, Default: w.MCPDefault}
	if x.Default == "" {
		x.Default = toolpolicy.DefaultDeny
	}
	srv, scope, err := serverInForce(ctx, c, org, ws, opts.Server)
	if err != nil {
		return err
	}
	if srv != nil {
		x.ServerFound, x.ServerScope = true, scope
		f := toolpolicy.Filter{}
		if srv.Tools != nil {
			f = toolpolicy.Filter{Allow: srv.Tools.Allow, Deny: srv.Tools.Deny}
		}
		switch {
		case !srv.Enabled:
			x.Filtered = "the server is disabled"
		case !f.Admits(opts.Tool):
			x.Filtered = "the server's tools filter leaves this tool out"
		}
		if n := toolpolicy.Prices(srv.Prices).NanoUSD(opts.Tool); n > 0 {
			x.PriceUSD = fmt.Sprintf("%d.%09d", n/1e9, n%1e9)
		}
	}
	req := toolpolicy.Request{KeyID: key.ID.String(), OwnerUserID: key.UserID, Server: opts.Server, Tool: opts.Tool}
	allow := x.Default == toolpolicy.DefaultAllow
	req.Phase = toolpolicy.PhaseList
	x.List = asToolDecision(toolpolicy.Decide(evaluated, req, allow))
	req.Phase, req.Arguments = toolpolicy.PhaseCall, opts.Arguments
	x.Call = asToolDecision(toolpolicy.Decide(evaluated, req, allow))
	if x.Filtered != "" || !x.ServerFound {
		x.List.Allowed, x.Call.Allowed = false, false
	}
	if opts.Output.Format != cmdutil.OutputTable {
		return opts.Output.Print(opts.IO, x, nil)
	}
	writeToolExplanation(opts.IO.Out, x)
	return nil
}

func asToolDecision(d toolpolicy.Decision) toolDecision {
	return toolDecision{Allowed: d.Allowed, Rule: d.Rule, Message: d.Message}
}

// serverInForce finds the MCP server name in force in the workspace: the
// workspace's own, which shadows the organization's of the same name.
func serverInForce(ctx context.Context, c *client.Client, org, ws, name string) (*wire.MCPServer, string, error) {
	for _, at := range []struct {
		scope client.Scope
		level string
	}{{client.WorkspaceScope(org, ws), "workspace " + ws}, {client.OrgScope(org), "organization " + org}} {
		ms, err := c.ListMCPServers(ctx, at.scope)
		if client.IsStatus(err, http.StatusForbidden) || client.IsStatus(err, http.StatusNotFound) {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		if i := slices.IndexFunc(ms, func(m wire.MCPServer) bool { return m.Name == name }); i >= 0 {
			return &ms[i], at.level, nil
		}
	}
	return nil, "", nil
}

func writeToolExplanation(w io.Writer, x toolExplanation) {
	fmt.Fprintf(w, "key:         %s\n", x.Key)
	fmt.Fprintf(w, "tool:        %s of server %s\n", x.Tool, x.Server)
	switch {
	case !x.ServerFound:
		fmt.Fprintf(w, "server:      none named %s in force in the workspace (or not readable by you): nothing reaches it\n", x.Server)
	case x.Filtered != "":
		fmt.Fprintf(w, "server:      %s's, but %s: nothing reaches it\n", x.ServerScope, x.Filtered)
	default:
		price := x.PriceUSD
		if price == "" {
			price = "0"
		}
		fmt.Fprintf(w, "server:      %s's; $%s a call\n", x.ServerScope, price)
	}
	fmt.Fprintf(w, "mcp_default: %s\n", x.Default)
	for _, p := range []struct {
		phase string
		d     toolDecision
	}{{"list", x.List}, {"call", x.Call}} {
		verdict := "denied"
		if p.d.Allowed {
			verdict = "allowed"
		}
		by := "by the workspace's mcp_default"
		if p.d.Rule != "" {
			by = "by rule " + p.d.Rule
		}
		if !x.ServerFound || x.Filtered != "" {
			by = "by the server"
		}
		line := fmt.Sprintf("%-12s %s %s", p.phase+":", verdict, by)
		if !p.d.Allowed && p.d.Message != "" && x.ServerFound && x.Filtered == "" {
			line += " — " + p.d.Message
		}
		fmt.Fprintln(w, line)
	}
}
