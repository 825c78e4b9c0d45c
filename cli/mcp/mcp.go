// Package mcp is `gw mcp`: the MCP servers whose tools gw serves behind
// inference keys (docs/mcp.md).
package mcp

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// NewCmd builds `gw mcp`.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Manage the MCP servers gw serves at /inf/v1/mcp",
		Long: `Manage the upstream MCP servers whose tools gw serves behind inference keys,
at /inf/v1/mcp (every server, tools named <server>__<tool>) and
/inf/v1/mcp/<server>. Tool policies decide what each key may list and call
(deny by default); docs/mcp.md has the recipes for Claude Code, Codex and
the SDKs.`,
	}
	servers := &cobra.Command{Use: "servers", Short: "List, add, update and delete MCP servers of an organization or a workspace"}
	servers.AddCommand(NewCmdList(f, nil), NewCmdAdd(f, nil), NewCmdUpdate(f, nil), NewCmdDelete(f, nil))
	cmd.AddCommand(servers, NewCmdTools(f, nil), NewCmdCall(f, nil))
	return cmd
}

func addScopeFlag(cmd *cobra.Command, scope *string) {
	cmd.Flags().StringVar(scope, "scope", "org", "where the server lives: org or workspace (default org, or workspace when --workspace is given)")
}

func checkScope(cmd *cobra.Command, scope *string) error {
	return cmdutil.CheckScope(cmd, scope, "org", "workspace")
}

func table(ms ...wire.MCPServer) cmdutil.Table {
	t := cmdutil.Table{Headers: []string{"name", "url", "enabled", "auth", "secret", "scope", "updated"}}
	for _, m := range ms {
		scope := "org"
		if m.WorkspaceID != nil {
			scope = "workspace"
		}
		t.Rows = append(t.Rows, []string{m.Name, m.URL, fmt.Sprint(m.Enabled), m.Auth.Kind, cmdutil.OrDash(m.Auth.SecretHint), scope,
			cmdutil.TimeCell(&m.UpdatedAt)})
	}
	return t
}

func detail(m wire.MCPServer) cmdutil.Table {
	prices := make([]string, 0, len(m.Prices))
	for k, v := range m.Prices {
		prices = append(prices, k+"="+v)
	}
	sort.Strings(prices)
	tools := "-"
	if m.Tools != nil {
		tools = "allow " + strings.Join(m.Tools.Allow, ",") + "; deny " + strings.Join(m.Tools.Deny, ",")
	}
	return cmdutil.DetailTable("id", m.ID.String(), "name", m.Name, "url", m.URL, "enabled", fmt.Sprint(m.Enabled), "auth", m.Auth.Kind,
		"header", cmdutil.OrDash(m.Auth.Header), "token_url", cmdutil.OrDash(m.Auth.TokenURL), "client_id", cmdutil.OrDash(m.Auth.ClientID),
		"secret_hint", cmdutil.OrDash(m.Auth.SecretHint), "tools", tools, "prices", cmdutil.OrDash(strings.Join(prices, " ")),
		"workspace_id", cmdutil.UUIDCell(m.WorkspaceID), "updated_at", cmdutil.TimeCell(&m.UpdatedAt))
}

// ListOptions configure gw mcp servers list.
type ListOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	Scope  string
}

// NewCmdList builds `gw mcp servers list`.
func NewCmdList(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "list [--scope org|workspace]",
		Short: "List the MCP servers of exactly one scope",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if err := checkScope(cmd, &opts.Scope); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			c, s, err := opts.Client()
			if err != nil {
				return err
			}
			scope, err := cmdutil.ScopeFor(s, opts.Scope, "platform")
			if err != nil {
				return err
			}
			ms, err := c.ListMCPServers(cmd.Context(), scope)
			if err != nil {
				return err
			}
			return opts.Output.Print(opts.IO, ms, func() cmdutil.Table { return table(ms...) })
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	addScopeFlag(cmd, &opts.Scope)
	return cmd
}

// AddOptions configure gw mcp servers add.
type AddOptions struct {
	IO       *cmdutil.IOStreams
	Client   func() (*client.Client, cmdutil.Settings, error)
	Output   cmdutil.Output
	Scope    string
	Name     string
	URL      string
	Disabled bool
	// Auth is none, header or oauth_client_credentials; the secret (the
	// header's value or the client secret) is read from Secret's source.
	Auth     string
	Header   string
	TokenURL string
	ClientID string
	Scopes   []string
	Allow    []string
	Deny     []string
	Prices   []string
	Secret   cmdutil.SecretInput
}

// NewCmdAdd builds `gw mcp servers add`.
func NewCmdAdd(f *cmdutil.Factory, runF func(context.Context, *AddOptions) error) *cobra.Command {
	opts := &AddOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "add NAME --url URL [--auth none|header|oauth_client_credentials ...] [--allow GLOB...] [--deny GLOB...] [--price TOOL=USD...]",
		Short: "Configure an MCP server; a secret is prompted for, or read from a file or stdin",
		Example: `  # a public server, every tool, $0.001 a call
  gw mcp servers add docs --url https://mcp.example.com/mcp --price '*=0.001'
  # a server wanting a header; the value is prompted for, never echoed
  gw mcp servers add github --url https://api.githubcopilot.com/mcp/ --auth header --header Authorization --allow 'get_*' --allow 'search_*'
  # OAuth client credentials, the client secret from a file
  gw mcp servers add crm --url https://crm.internal/mcp --auth oauth_client_credentials --token-url https://crm.internal/oauth/token --client-id gw --secret-file ./crm.secret`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if err := checkScope(cmd, &opts.Scope); err != nil {
				return err
			}
			if err := cmdutil.RequireFlags(cmd.Flags(), "url"); err != nil {
				return err
			}
			if err := cmdutil.OneOf("auth", opts.Auth, "none", "header", "oauth_client_credentials"); err != nil {
				return err
			}
			opts.Name = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return addRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	addScopeFlag(cmd, &opts.Scope)
	cmd.Flags().StringVar(&opts.URL, "url", "", "the upstream's Streamable HTTP endpoint (http or https)")
	cmd.Flags().BoolVar(&opts.Disabled, "disabled", false, "add it disabled (its tools are served once enabled)")
	addAuthFlags(cmd, &opts.Auth, &opts.Header, &opts.TokenURL, &opts.ClientID, &opts.Scopes, &opts.Secret)
	cmd.Flags().StringArrayVar(&opts.Allow, "allow", nil, "serve only tools matching this glob (repeatable; none: every tool)")
	cmd.Flags().StringArrayVar(&opts.Deny, "deny", nil, "never serve tools matching this glob (repeatable)")
	cmd.Flags().StringArrayVar(&opts.Prices, "price", nil, "a tool's price per call, TOOL_OR_GLOB=USD (repeatable; none: $0)")
	return cmd
}

func addAuthFlags(cmd *cobra.Command, kind, header, tokenURL, clientID *string, scopes *[]string, secret *cmdutil.SecretInput) {
	cmd.Flags().StringVar(kind, "auth", "none", "how gw authenticates to the upstream: none, header or oauth_client_credentials")
	cmd.Flags().StringVar(header, "header", "", "the header carrying the secret (--auth header), e.g. Authorization")
	cmd.Flags().StringVar(tokenURL, "token-url", "", "the token endpoint (--auth oauth_client_credentials)")
	cmd.Flags().StringVar(clientID, "client-id", "", "the OAuth client id (--auth oauth_client_credentials)")
	cmd.Flags().StringArrayVar(scopes, "oauth-scope", nil, "an OAuth scope to ask for (repeatable)")
	cmdutil.AddSecretInputFlags(cmd, secret, "secret", "header value or client secret")
}

func readAuth(ios *cmdutil.IOStreams, name, kind, header, tokenURL, clientID string, scopes []string, in cmdutil.SecretInput) (*wire.MCPAuth, error) {
	a := &wire.MCPAuth{Kind: kind}
	if kind == "none" {
		return a, nil
	}
	secret, err := in.Read(ios, "secret", fmt.Sprintf("%s secret for MCP server %s (input is hidden): ", kind, name))
	if err != nil {
		return nil, err
	}
	if kind == "header" {
		a.Header, a.Secret = header, secret
		return a, nil
	}
	a.TokenURL, a.ClientID, a.ClientSecret, a.Scopes = tokenURL, clientID, secret, scopes
	return a, nil
}

func parsePrices(pairs []string) (map[string]string, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" || v == "" {
			return nil, cmdutil.UsageError{Err: fmt.Errorf("--price %q: want TOOL_OR_GLOB=USD, e.g. 'search_*=0.002'", p)}
		}
		out[k] = v
	}
	return out, nil
}

func addRun(ctx context.Context, opts *AddOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	scope, err := cmdutil.ScopeFor(s, opts.Scope, "platform")
	if err != nil {
		return err
	}
	prices, err := parsePrices(opts.Prices)
	if err != nil {
		return err
	}
	auth, err := readAuth(opts.IO, opts.Name, opts.Auth, opts.Header, opts.TokenURL, opts.ClientID, opts.Scopes, opts.Secret)
	if err != nil {
		return err
	}
	in := wire.MCPServerCreate{Name: opts.Name, URL: opts.URL, Auth: auth, Prices: prices}
	if opts.Disabled {
		f := false
		in.Enabled = &f
	}
	if len(opts.Allow) > 0 || len(opts.Deny) > 0 {
		in.Tools = &wire.MCPToolFilter{Allow: opts.Allow, Deny: opts.Deny}
	}
	m, err := c.CreateMCPServer(ctx, scope, in)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, m, func() cmdutil.Table { return detail(m) })
}

// UpdateOptions configure gw mcp servers update.
type UpdateOptions struct {
	IO      *cmdutil.IOStreams
	Client  func() (*client.Client, cmdutil.Settings, error)
	Output  cmdutil.Output
	Scope   string
	Name    string
	URL     *string
	Enabled *bool
	// Auth, when set, replaces the whole auth (its secret read from
	// Secret's source or prompted for).
	Auth     string
	Header   string
	TokenURL string
	ClientID string
	Scopes   []string
	Prices   []string
	Secret   cmdutil.SecretInput
}

// NewCmdUpdate builds `gw mcp servers update`.
func NewCmdUpdate(f *cmdutil.Factory, runF func(context.Context, *UpdateOptions) error) *cobra.Command {
	opts := &UpdateOptions{IO: f.IO, Client: f.AuthedClient}
	var url string
	var enable, disable bool
	cmd := &cobra.Command{
		Use:   "update NAME [--url URL --auth KIND ...] [--enable | --disable] [--price TOOL=USD...]",
		Short: "Change an MCP server; a new URL needs its auth again",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if err := checkScope(cmd, &opts.Scope); err != nil {
				return err
			}
			if err := cmdutil.ExclusiveFlags(cmd.Flags(), "enable", "disable"); err != nil {
				return err
			}
			opts.Name = args[0]
			if cmd.Flags().Changed("url") {
				opts.URL = &url
			}
			if enable || disable {
				opts.Enabled = &enable
			}
			if !cmd.Flags().Changed("auth") {
				opts.Auth = ""
			} else if err := cmdutil.OneOf("auth", opts.Auth, "none", "header", "oauth_client_credentials"); err != nil {
				return err
			}
			if opts.URL == nil && opts.Enabled == nil && opts.Auth == "" && len(opts.Prices) == 0 {
				return cmdutil.UsageError{Err: errors.New("nothing to change: pass --url (with --auth), --auth, --enable, --disable or --price")}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return updateRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	addScopeFlag(cmd, &opts.Scope)
	cmd.Flags().StringVar(&url, "url", "", "a new upstream URL (give --auth again: the secret is never sent to a new host unasked)")
	cmd.Flags().BoolVar(&enable, "enable", false, "serve the server's tools")
	cmd.Flags().BoolVar(&disable, "disable", false, "stop serving the server's tools")
	addAuthFlags(cmd, &opts.Auth, &opts.Header, &opts.TokenURL, &opts.ClientID, &opts.Scopes, &opts.Secret)
	cmd.Flags().StringArrayVar(&opts.Prices, "price", nil, "replace the prices: TOOL_OR_GLOB=USD (repeatable)")
	return cmd
}

func updateRun(ctx context.Context, opts *UpdateOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	scope, err := cmdutil.ScopeFor(s, opts.Scope, "platform")
	if err != nil {
		return err
	}
	in := wire.MCPServerUpdate{URL: opts.URL, Enabled: opts.Enabled}
	if len(opts.Prices) > 0 {
		prices, err := parsePrices(opts.Prices)
		if err != nil {
			return err
		}
		in.Prices = &prices
	}
	if opts.Auth != "" {
		if in.Auth, err = readAuth(opts.IO, opts.Name, opts.Auth, opts.Header, opts.TokenURL, opts.ClientID, opts.Scopes, opts.Secret); err != nil {
			return err
		}
	}
	m, err := c.UpdateMCPServer(ctx, scope, opts.Name, in)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, m, func() cmdutil.Table { return detail(m) })
}

// DeleteOptions configure gw mcp servers delete.
type DeleteOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	Scope  string
	Name   string
	Yes    bool
}

// NewCmdDelete builds `gw mcp servers delete`.
func NewCmdDelete(f *cmdutil.Factory, runF func(context.Context, *DeleteOptions) error) *cobra.Command {
	opts := &DeleteOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "delete NAME [--scope org|workspace]",
		Short: "Delete an MCP server; its tools stop being served",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if err := checkScope(cmd, &opts.Scope); err != nil {
				return err
			}
			opts.Name = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			c, s, err := opts.Client()
			if err != nil {
				return err
			}
			scope, err := cmdutil.ScopeFor(s, opts.Scope, "platform")
			if err != nil {
				return err
			}
			if err := cmdutil.Confirm(opts.IO, fmt.Sprintf("Delete MCP server %s? Its tools stop being served.", opts.Name), opts.Yes); err != nil {
				return err
			}
			d, err := c.DeleteMCPServer(cmd.Context(), scope, opts.Name)
			if err != nil {
				return err
			}
			return opts.Output.Print(opts.IO, d, func() cmdutil.Table { return cmdutil.DeletedTable(d) })
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	addScopeFlag(cmd, &opts.Scope)
	cmdutil.AddYesFlag(cmd, &opts.Yes)
	return cmd
}
