package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// keyTarget is where the data plane's MCP endpoint is asked and with which
// inference key: --key or GW_INFERENCE_KEY, --data-plane-url or
// GW_DATA_PLANE_URL or else the server's (as gw models). A key is named by
// its secret only: gw never shows a key's secret again after creating it,
// so a --key-name could not be turned into a credential (docs/mcp.md).
type keyTarget struct {
	Key          string
	DataPlaneURL string
}

func addKeyTargetFlags(cmd *cobra.Command, t *keyTarget) {
	cmd.Flags().StringVar(&t.Key, "key", "", "inference key, sk-gw-… [GW_INFERENCE_KEY]")
	cmd.Flags().StringVar(&t.DataPlaneURL, "data-plane-url", "", "data plane URL when it is not the server's [GW_DATA_PLANE_URL]")
}

func (t *keyTarget) resolve() error {
	if t.Key == "" {
		t.Key = os.Getenv("GW_INFERENCE_KEY")
	}
	if t.DataPlaneURL == "" {
		t.DataPlaneURL = os.Getenv("GW_DATA_PLANE_URL")
	}
	if t.Key == "" {
		return cmdutil.UsageError{Err: errors.New("no inference key: pass --key or set GW_INFERENCE_KEY (gw inference-keys create shows a key once)")}
	}
	return nil
}

// session opens an MCP client session (the Go SDK's client, Streamable
// HTTP) on the data plane's /inf/v1/mcp, or /inf/v1/mcp/<server> when
// server is given, sending the inference key as a bearer token.
type sessionFunc func(ctx context.Context, t keyTarget, server string) (*mcp.ClientSession, func(error) error, error)

func keySession(f *cmdutil.Factory) sessionFunc {
	return func(ctx context.Context, t keyTarget, server string) (*mcp.ClientSession, func(error) error, error) {
		base := f.BaseServerURL(t.DataPlaneURL)
		if base == "" {
			s, err := f.Settings()
			if err != nil {
				return nil, nil, err
			}
			base = s.Server
		}
		if base == "" {
			return nil, nil, cmdutil.UsageError{Err: errors.New("no server: pass --server or --data-plane-url, or set GW_SERVER")}
		}
		endpoint := strings.TrimRight(base, "/") + "/inf/v1/mcp"
		if server != "" {
			endpoint += "/" + url.PathEscape(server)
		}
		hc := http.DefaultClient
		if f.HTTPClient != nil {
			hc = f.HTTPClient
		}
		rt := &keyTransport{key: t.Key, next: hc.Transport}
		c := mcp.NewClient(&mcp.Implementation{Name: "gw-cli", Version: cmdutil.Version()}, nil)
		tr := &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: rt, Timeout: hc.Timeout},
			DisableStandaloneSSE: true, MaxRetries: -1}
		cs, err := c.Connect(ctx, tr, nil)
		if err != nil {
			return nil, nil, rt.explain(err)
		}
		return cs, rt.explain, nil
	}
}

// keyTransport adds the key and remembers a refusal of it, so that a
// wrong key exits as an authentication failure (exit 4) with the data
// plane's answer rather than the SDK's wrapping.
type keyTransport struct {
	key    string
	next   http.RoundTripper
	status atomic.Int32
}

func (k *keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+k.key)
	next := k.next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(r)
	if err == nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusNotFound) {
		k.status.Store(int32(resp.StatusCode))
	}
	return resp, err
}

func (k *keyTransport) explain(err error) error {
	if err == nil {
		return nil
	}
	switch s := int(k.status.Load()); s {
	case http.StatusUnauthorized:
		return &client.APIError{Status: s, Detail: "the data plane refused the inference key"}
	case http.StatusForbidden, http.StatusNotFound:
		return &client.APIError{Status: s, Detail: err.Error()}
	}
	return err
}

// ToolsOptions configure gw mcp tools.
type ToolsOptions struct {
	IO      *cmdutil.IOStreams
	Session sessionFunc
	Client  func() (*client.Client, cmdutil.Settings, error)
	Output  cmdutil.Output
	Target  keyTarget
	// KeyName names a key of the workspace (its name, prefix or id) whose
	// view the control plane works out: no secret needed.
	KeyName string
	// Server narrows the list to one server's endpoint, with its own tool
	// names; empty: the aggregated endpoint, tools named <server>__<tool>.
	Server string
}

// NewCmdTools builds `gw mcp tools`.
func NewCmdTools(f *cmdutil.Factory, runF func(context.Context, *ToolsOptions) error) *cobra.Command {
	opts := &ToolsOptions{IO: f.IO, Session: keySession(f), Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "tools [--server NAME] [--key sk-gw-… | --key-name NAME]",
		Short: "List the tools an inference key sees at /inf/v1/mcp (after the tool policies)",
		Long: `List the tools the inference key sees: what an MCP client given this key
gets from tools/list at /inf/v1/mcp (every server, tools named
<server>__<tool>), or at /inf/v1/mcp/<server> with --server. The list is
the data plane's own answer, after the servers' filters and the tool
policies' list rules (deny by default).

The key comes from --key or GW_INFERENCE_KEY. --key-name NAME (a key of the
workspace by name, prefix or id) needs no secret: the control plane lists
each enabled server's tools itself, with the server's own auth, and applies
the server's filter and the tool policies for that key; each tool listed is
shown with the rule that allowed it, and -o json gives every tool, listed or
not, with what decided (the management key needs inference-keys.read and
policies.read).`,
		Example: `  gw mcp tools --key sk-gw-…
  GW_INFERENCE_KEY=sk-gw-… gw mcp tools --server github -o json
  gw mcp tools --key-name ci-agent --workspace search`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if opts.KeyName != "" {
				if cmd.Flags().Changed("key") || cmd.Flags().Changed("data-plane-url") {
					return cmdutil.UsageError{Err: errors.New("--key-name asks the control plane; drop --key and --data-plane-url")}
				}
				if runF != nil {
					return runF(cmd.Context(), opts)
				}
				return keyNameToolsRun(cmd.Context(), opts)
			}
			if err := opts.Target.resolve(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return toolsRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	addKeyTargetFlags(cmd, &opts.Target)
	cmd.Flags().StringVar(&opts.Server, "server", "", "one server's endpoint, /inf/v1/mcp/NAME (its own tool names)")
	cmd.Flags().StringVar(&opts.KeyName, "key-name", "", "a key of the workspace by name, prefix or id: what it would see, worked out by the control plane")
	return cmd
}

// keyNameToolsRun is gw mcp tools --key-name: the control plane's view of
// what the key would see, each tool with the rule that decided.
func keyNameToolsRun(ctx context.Context, opts *ToolsOptions) error {
	c, org, ws, err := cmdutil.WorkspaceClient(opts.Client)
	if err != nil {
		return err
	}
	id, err := cmdutil.ResolveRef(ctx, opts.KeyName, "inference key", "in workspace "+ws, func(ctx context.Context) ([]cmdutil.RefCandidate, error) {
		ks, err := c.ListInferenceKeys(ctx, org, ws)
		out := make([]cmdutil.RefCandidate, len(ks))
		for i, k := range ks {
			out[i] = cmdutil.RefCandidate{ID: k.ID, Names: []string{k.Name, k.Prefix}, Active: k.Status == wire.KeyActive,
				Desc: fmt.Sprintf("%s (%s…, %s)", k.Name, k.Prefix, k.Status)}
		}
		return out, err
	})
	if err != nil {
		return err
	}
	view, err := c.KeyMCPTools(ctx, org, ws, id)
	if err != nil {
		return err
	}
	if opts.Server != "" {
		var one []wire.KeyMCPServer
		for _, s := range view.Servers {
			if s.Server == opts.Server {
				one = append(one, s)
			}
		}
		if len(one) == 0 {
			return fmt.Errorf("no enabled MCP server %q in workspace %s", opts.Server, ws)
		}
		view.Servers = one
	}
	hidden := 0
	for _, s := range view.Servers {
		if s.Error != "" {
			fmt.Fprintf(opts.IO.ErrOut, "warning: server %s: its tools could not be listed: %s\n", s.Server, s.Error)
		}
		for _, t := range s.Tools {
			if !t.Listed {
				hidden++
			}
		}
	}
	if hidden > 0 && opts.Output.Format != cmdutil.OutputJSON && opts.Output.Format != cmdutil.OutputYAML {
		fmt.Fprintf(opts.IO.ErrOut, "%d %s hidden from this key (-o json shows each with the rule that hid it)\n", hidden,
			map[bool]string{true: "tool", false: "tools"}[hidden == 1])
	}
	return opts.Output.Print(opts.IO, view, func() cmdutil.Table {
		t := cmdutil.Table{Headers: []string{"name", "rule", "description"}, Shrink: []string{"description"}, Empty: "no tool is listed for this key"}
		for _, s := range view.Servers {
			for _, tool := range s.Tools {
				if !tool.Listed {
					continue
				}
				name := s.Server + "__" + tool.Name
				if opts.Server != "" {
					name = tool.Name
				}
				desc, _, _ := strings.Cut(tool.Description, "\n")
				t.Rows = append(t.Rows, []string{name, tool.Rule, cmdutil.OrDash(desc)})
			}
		}
		return t
	})
}

func toolsRun(ctx context.Context, opts *ToolsOptions) error {
	cs, explain, err := opts.Session(ctx, opts.Target, opts.Server)
	if err != nil {
		return err
	}
	defer cs.Close()
	tools := []*mcp.Tool{}
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return explain(err)
		}
		tools = append(tools, t)
	}
	return opts.Output.Print(opts.IO, tools, func() cmdutil.Table {
		t := cmdutil.Table{Headers: []string{"name", "title", "description"}}
		for _, tool := range tools {
			desc, _, _ := strings.Cut(tool.Description, "\n")
			if len(desc) > 80 {
				desc = desc[:77] + "..."
			}
			t.Rows = append(t.Rows, []string{tool.Name, cmdutil.OrDash(tool.Title), cmdutil.OrDash(desc)})
		}
		return t
	})
}

// CallOptions configure gw mcp call.
type CallOptions struct {
	IO        *cmdutil.IOStreams
	Session   sessionFunc
	Output    cmdutil.Output
	Target    keyTarget
	Server    string
	Tool      string
	Arguments map[string]any
}

// NewCmdCall builds `gw mcp call`.
func NewCmdCall(f *cmdutil.Factory, runF func(context.Context, *CallOptions) error) *cobra.Command {
	opts := &CallOptions{IO: f.IO, Session: keySession(f)}
	var arguments string
	cmd := &cobra.Command{
		Use:   "call SERVER TOOL [--arguments JSON] [--key sk-gw-…]",
		Short: "Call one tool through /inf/v1/mcp/SERVER with an inference key (a quick check)",
		Long: `Call one tool through the data plane at /inf/v1/mcp/SERVER with the inference
key, as an MCP client would: the tool policies' call rules, the server's
filter, the budgets and the key's rate limit apply, and the call is
metered and audited like any other. The tool's text content is printed
(-o json: the whole result); a result the tool marks as an error exits 1.`,
		Example: `  gw mcp call github search_issues --arguments '{"query": "is:open label:bug"}' --key sk-gw-…`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			opts.Server, opts.Tool = args[0], args[1]
			if arguments != "" {
				if err := json.Unmarshal([]byte(arguments), &opts.Arguments); err != nil || opts.Arguments == nil {
					return cmdutil.UsageError{Err: fmt.Errorf("--arguments: want a JSON object, e.g. '{\"query\": \"x\"}'")}
				}
			}
			if err := opts.Target.resolve(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return callRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	addKeyTargetFlags(cmd, &opts.Target)
	cmd.Flags().StringVar(&arguments, "arguments", "", "the tool's arguments, a JSON object")
	return cmd
}

func callRun(ctx context.Context, opts *CallOptions) error {
	cs, explain, err := opts.Session(ctx, opts.Target, opts.Server)
	if err != nil {
		return err
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: opts.Tool, Arguments: opts.Arguments})
	if err != nil {
		return explain(err)
	}
	if opts.Output.Format == cmdutil.OutputJSON || opts.Output.Format == cmdutil.OutputYAML {
		if err := opts.Output.Print(opts.IO, res, nil); err != nil {
			return err
		}
	} else {
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				fmt.Fprintln(opts.IO.Out, t.Text)
			} else {
				b, _ := json.Marshal(c)
				fmt.Fprintln(opts.IO.Out, string(b))
			}
		}
		if len(res.Content) == 0 && res.StructuredContent != nil {
			b, _ := json.Marshal(res.StructuredContent)
			fmt.Fprintln(opts.IO.Out, string(b))
		}
	}
	if res.IsError {
		return fmt.Errorf("tool %s of %s answered an error", opts.Tool, opts.Server)
	}
	return nil
}
