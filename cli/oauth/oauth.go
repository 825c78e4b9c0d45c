// Package oauth is `gw oauth`: the clients registered with gw's OAuth
// authorization server, and the grants people gave MCP and CLI clients
// (docs/identity.md). A client identified by its Client ID Metadata
// Document (an https URL) needs no registration.
package oauth

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// NewCmd builds `gw oauth`.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "oauth",
		Short: "Manage gw's OAuth authorization server: registered clients and people's grants",
		Long: `gw is the OAuth 2.1 authorization server of MCP and CLI clients: a person
signs in, picks a workspace on the consent page, and the client gets
short-lived access tokens accepted by /inf/v1 like that person's inference
key. Clients identify themselves by a Client ID Metadata Document (an https
URL) or are registered here by an administrator.`,
	}
	clients := &cobra.Command{Use: "clients", Short: "Manage the OAuth clients an administrator registered"}
	clients.AddCommand(cmdutil.NewListCmd(f, "List the registered OAuth clients", nil, listClients), NewCmdClientsAdd(f, nil),
		cmdutil.NewDestructiveIDCmd(f, "delete CLIENT_ID", "Delete a registered OAuth client and revoke its grants", nil, deleteClient))
	grants := &cobra.Command{Use: "grants", Short: "List and revoke the workspace's OAuth grants"}
	grants.AddCommand(cmdutil.NewListCmd(f, "List the workspace's OAuth grants", nil, listGrants),
		cmdutil.NewDestructiveIDCmd(f, "revoke GRANT_ID", "Revoke an OAuth grant and every token issued under it", nil, revokeGrant))
	cmd.AddCommand(clients, grants)
	return cmd
}

func clientsTable(cs ...wire.OAuthClient) cmdutil.Table {
	t := cmdutil.Table{Headers: []string{"client_id", "name", "confidential", "redirect_uris", "created"}}
	for _, c := range cs {
		t.Rows = append(t.Rows, []string{c.ClientID, c.Name, fmt.Sprint(c.Confidential), strings.Join(c.RedirectURIs, " "), cmdutil.TimeCell(&c.CreatedAt)})
	}
	return t
}

func grantsTable(gs ...wire.OAuthGrant) cmdutil.Table {
	t := cmdutil.Table{Headers: []string{"id", "client", "user_id", "resource", "status", "created", "last_used"}}
	for _, g := range gs {
		t.Rows = append(t.Rows, []string{g.ID.String(), g.ClientName, g.UserID.String(), g.Resource, g.Status, cmdutil.TimeCell(&g.CreatedAt),
			cmdutil.TimeCell(g.LastUsedAt)})
	}
	return t
}

func listClients(ctx context.Context, opts *cmdutil.ListOptions) error {
	c, _, err := opts.Client()
	if err != nil {
		return err
	}
	cs, err := c.ListOAuthClients(ctx)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, cs, func() cmdutil.Table { return clientsTable(cs...) })
}

// AddOptions configure gw oauth clients add.
type AddOptions struct {
	IO           *cmdutil.IOStreams
	Client       func() (*client.Client, cmdutil.Settings, error)
	Output       cmdutil.Output
	Name         string
	RedirectURIs []string
	Confidential bool
}

// NewCmdClientsAdd builds `gw oauth clients add`.
func NewCmdClientsAdd(f *cmdutil.Factory, runF func(context.Context, *AddOptions) error) *cobra.Command {
	opts := &AddOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "add NAME --redirect-uri URI...",
		Short: "Register an OAuth client (a confidential one's secret is shown once)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if err := cmdutil.RequireFlags(cmd.Flags(), "redirect-uri"); err != nil {
				return err
			}
			opts.Name = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return addClient(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	cmd.Flags().StringArrayVar(&opts.RedirectURIs, "redirect-uri", nil, "a redirect URI the client may use, matched exactly (repeat for more)")
	cmd.Flags().BoolVar(&opts.Confidential, "confidential", false, "give the client a secret (client_secret_basic); public clients have none")
	return cmd
}

func addClient(ctx context.Context, opts *AddOptions) error {
	c, _, err := opts.Client()
	if err != nil {
		return err
	}
	out, err := c.CreateOAuthClient(ctx, wire.OAuthClientCreate{Name: opts.Name, RedirectURIs: opts.RedirectURIs, Confidential: opts.Confidential})
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, out, func() cmdutil.Table {
		t := clientsTable(out)
		if out.ClientSecret != "" {
			t.Headers = append(t.Headers, "client_secret (shown once)")
			t.Rows[0] = append(t.Rows[0], out.ClientSecret)
		}
		return t
	})
}

func deleteClient(ctx context.Context, opts *cmdutil.IDOptions) error {
	c, _, err := opts.Client()
	if err != nil {
		return err
	}
	if err := cmdutil.Confirm(opts.IO, fmt.Sprintf("Delete OAuth client %s and revoke its grants?", opts.ID), opts.Yes); err != nil {
		return err
	}
	out, err := c.DeleteOAuthClient(ctx, opts.ID)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, out, func() cmdutil.Table { return clientsTable(out) })
}

func listGrants(ctx context.Context, opts *cmdutil.ListOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	org, ws, err := s.RequireWorkspace()
	if err != nil {
		return err
	}
	gs, err := c.ListOAuthGrants(ctx, org, ws)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, gs, func() cmdutil.Table { return grantsTable(gs...) })
}

func revokeGrant(ctx context.Context, opts *cmdutil.IDOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	org, ws, err := s.RequireWorkspace()
	if err != nil {
		return err
	}
	if err := cmdutil.Confirm(opts.IO, fmt.Sprintf("Revoke OAuth grant %s and every token issued under it?", opts.ID), opts.Yes); err != nil {
		return err
	}
	out, err := c.RevokeOAuthGrant(ctx, org, ws, opts.ID)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, out, func() cmdutil.Table { return grantsTable(out) })
}
