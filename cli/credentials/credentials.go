// Package credentials is `gw credentials`: the upstream provider API keys.
package credentials

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// NewCmd builds `gw credentials`, the upstream provider
// credentials.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "credentials",
		Aliases: []string{"creds"},
		Short:   "Manage provider credentials (upstream API keys) at platform, organization or workspace scope",
		Long: `Manage the upstream API keys gw uses to call providers. Secrets are sealed by
the server and never returned; only a hint of their last characters is shown.
A secret is never taken from a flag value (it would end up in shell history
and process listings): it is asked for on the terminal without echo, or read
from --secret-file or --secret-stdin.`,
	}
	cmd.AddCommand(
		NewCmdList(f, nil),
		NewCmdGet(f, nil),
		NewCmdCreate(f, nil),
		NewCmdUpdate(f, nil),
		NewCmdDelete(f, nil),
	)
	return cmd
}

func addCredentialScopeFlag(cmd *cobra.Command, scope *string) {
	cmd.Flags().StringVar(scope, "scope", "org", "where the credential lives: platform, org or workspace (default org, or workspace when --workspace is given; org and workspace from --org/--workspace or the context)")
}

func checkCredentialScope(cmd *cobra.Command, scope *string) error {
	return cmdutil.CheckScope(cmd, scope, "platform", "org", "workspace")
}

func credentialScopeCell(c wire.ProviderCredential) string {
	switch {
	case c.Scope.WorkspaceID != nil:
		return "workspace:" + c.Scope.WorkspaceID.String()
	case c.Scope.OrgID != nil:
		return "org:" + c.Scope.OrgID.String()
	}
	return cmdutil.OrDash(c.Scope.Level)
}

func credentialTable(cs ...wire.ProviderCredential) cmdutil.Table {
	t := cmdutil.Table{Headers: []string{"id", "provider", "label", "scope", "secret", "base_url", "updated"}}
	for _, c := range cs {
		base := "-"
		if c.BaseURL != nil {
			base = *c.BaseURL
		}
		t.Rows = append(t.Rows, []string{c.ID.String(), c.Provider, c.Label, credentialScopeCell(c), cmdutil.OrDash(c.SecretHint), base, cmdutil.TimeCell(&c.UpdatedAt)})
	}
	return t
}

func credentialDetail(c wire.ProviderCredential) cmdutil.Table {
	base := "-"
	if c.BaseURL != nil {
		base = *c.BaseURL
	}
	return cmdutil.DetailTable("id", c.ID.String(), "provider", c.Provider, "label", c.Label, "scope", c.Scope.Level,
		"org_id", cmdutil.UUIDCell(c.Scope.OrgID), "workspace_id", cmdutil.UUIDCell(c.Scope.WorkspaceID), "base_url", base,
		"settings", settingsCell(c.Settings),
		"secret_hint", cmdutil.OrDash(c.SecretHint), "created_at", cmdutil.TimeCell(&c.CreatedAt), "updated_at", cmdutil.TimeCell(&c.UpdatedAt))
}

// ListOptions configure gw credentials list.
type ListOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	Scope  string
}

// NewCmdList builds `gw credentials list`.
func NewCmdList(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "list [--scope platform|org|workspace]",
		Short: "List the credentials configured at exactly one scope",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if err := checkCredentialScope(cmd, &opts.Scope); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return listRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	addCredentialScopeFlag(cmd, &opts.Scope)
	return cmd
}

func listRun(ctx context.Context, opts *ListOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	scope, err := cmdutil.ScopeFor(s, opts.Scope, "platform")
	if err != nil {
		return err
	}
	cs, err := c.ListCredentials(ctx, scope)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, cs, func() cmdutil.Table { return credentialTable(cs...) })
}

// GetOptions configure gw credentials get.
type GetOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	Scope  string
	ID     string
}

// NewCmdGet builds `gw credentials get`.
func NewCmdGet(f *cmdutil.Factory, runF func(context.Context, *GetOptions) error) *cobra.Command {
	opts := &GetOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "get CREDENTIAL_ID [--scope platform|org|workspace]",
		Short: "Show a credential's metadata (never its secret)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if err := checkCredentialScope(cmd, &opts.Scope); err != nil {
				return err
			}
			opts.ID = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return getRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	addCredentialScopeFlag(cmd, &opts.Scope)
	return cmd
}

func getRun(ctx context.Context, opts *GetOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	scope, err := cmdutil.ScopeFor(s, opts.Scope, "platform")
	if err != nil {
		return err
	}
	cred, err := c.GetCredential(ctx, scope, opts.ID)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, cred, func() cmdutil.Table { return credentialDetail(cred) })
}

// CreateOptions configure gw credentials create. The secret is
// not among them: it is read when the command runs, from Secret's source.
type CreateOptions struct {
	IO       *cmdutil.IOStreams
	Client   func() (*client.Client, cmdutil.Settings, error)
	Output   cmdutil.Output
	Scope    string
	Provider string
	Label    string
	BaseURL  string
	// Settings are the --setting KEY=VALUE pairs (docs/providers.md).
	Settings []string
	Secret   cmdutil.SecretInput
}

// NewCmdCreate builds `gw credentials create`.
func NewCmdCreate(f *cmdutil.Factory, runF func(context.Context, *CreateOptions) error) *cobra.Command {
	opts := &CreateOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "create --provider ID --label LABEL [--base-url URL] [--setting K=V...] [--secret-file FILE | --secret-stdin]",
		Short: "Configure a provider credential; the secret is prompted for, or read from a file or stdin",
		Example: `  # prompted for on the terminal, never echoed
  gw credentials create --provider openai --label main
  # from a secret manager, for this workspace only
  vault kv get -field=key secret/anthropic | gw credentials create --provider anthropic --label team --scope workspace --secret-stdin
  # an OpenAI-compatible gateway of your own
  gw credentials create --provider openai --label proxy --base-url https://llm-proxy.internal/v1 --secret-file ./proxy.key
  # Amazon Bedrock: the secret is {"access_key_id","secret_access_key","session_token"?}
  gw credentials create --provider bedrock --label prod --setting region=us-east-1 --secret-file ./aws.json
  # Vertex AI: the secret is a service account's JSON key file
  gw credentials create --provider vertex --label prod --setting location=us-east5 --secret-file ./sa.json
  # Azure OpenAI: a resource, and a model served by a deployment of another name
  gw credentials create --provider azure-openai --label prod --base-url https://acme.openai.azure.com \
    --setting deployments.gpt-4o=prod-gpt-4o --secret-stdin`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if err := checkCredentialScope(cmd, &opts.Scope); err != nil {
				return err
			}
			if err := cmdutil.RequireFlags(cmd.Flags(), "provider", "label"); err != nil {
				return err
			}
			if err := cmdutil.ExclusiveFlags(cmd.Flags(), "secret-file", "secret-stdin"); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return cmdutil.WithFlags(createRun(cmd.Context(), opts), credentialFields...)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	addCredentialScopeFlag(cmd, &opts.Scope)
	cmd.Flags().StringVar(&opts.Provider, "provider", "", "catalog provider id, e.g. openai or anthropic (see gw catalog list --providers)")
	cmd.Flags().StringVar(&opts.Label, "label", "", "a name to tell credentials apart (1 to 80 characters)")
	cmd.Flags().StringVar(&opts.BaseURL, "base-url", "", "upstream base URL (default: the catalog provider's; required only for a provider the catalog gives none, e.g. openai-compatible)")
	addSettingFlag(cmd, &opts.Settings)
	cmdutil.AddSecretInputFlags(cmd, &opts.Secret, "secret", "provider API key")
	return cmd
}

func createRun(ctx context.Context, opts *CreateOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	scope, err := cmdutil.ScopeFor(s, opts.Scope, "platform")
	if err != nil {
		return err
	}
	secret, err := opts.Secret.Read(opts.IO, "secret", fmt.Sprintf("API key for %s (input is hidden): ", opts.Provider))
	if err != nil {
		return err
	}
	settings, err := parseSettings(opts.Settings)
	if err != nil {
		return err
	}
	cred, err := c.CreateCredential(ctx, scope, wire.ProviderCredentialCreate{Provider: opts.Provider, Label: opts.Label, Secret: secret,
		BaseURL: opts.BaseURL, Settings: settings})
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, cred, func() cmdutil.Table { return credentialDetail(cred) })
}

// UpdateOptions configure gw credentials update.
type UpdateOptions struct {
	IO           *cmdutil.IOStreams
	Client       func() (*client.Client, cmdutil.Settings, error)
	Output       cmdutil.Output
	Scope        string
	ID           string
	Label        *string
	BaseURL      *string
	ClearBaseURL bool
	// Settings replace the credential's settings whole; ClearSettings
	// removes them.
	Settings      []string
	ClearSettings bool
	// NewSecret says the secret is replaced: read from Secret's file or
	// stdin, or prompted for (--prompt-secret).
	NewSecret bool
	Secret    cmdutil.SecretInput
}

// NewCmdUpdate builds `gw credentials update`.
func NewCmdUpdate(f *cmdutil.Factory, runF func(context.Context, *UpdateOptions) error) *cobra.Command {
	opts := &UpdateOptions{IO: f.IO, Client: f.AuthedClient}
	var label, baseURL string
	var prompt bool
	cmd := &cobra.Command{
		Use:   "update CREDENTIAL_ID [--label L] [--base-url URL | --clear-base-url] [--setting K=V... | --clear-settings] [--secret-file F | --secret-stdin | --prompt-secret]",
		Short: "Change a credential's label, base URL or settings, or rotate its secret",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if err := checkCredentialScope(cmd, &opts.Scope); err != nil {
				return err
			}
			if err := cmdutil.ExclusiveFlags(cmd.Flags(), "secret-file", "secret-stdin", "prompt-secret"); err != nil {
				return err
			}
			if err := cmdutil.ExclusiveFlags(cmd.Flags(), "base-url", "clear-base-url"); err != nil {
				return err
			}
			if err := cmdutil.ExclusiveFlags(cmd.Flags(), "setting", "clear-settings"); err != nil {
				return err
			}
			opts.ID = args[0]
			if cmd.Flags().Changed("label") {
				opts.Label = &label
			}
			if cmd.Flags().Changed("base-url") {
				opts.BaseURL = &baseURL
			}
			opts.NewSecret = prompt || opts.Secret.Given()
			if opts.Label == nil && opts.BaseURL == nil && !opts.ClearBaseURL && !opts.NewSecret && len(opts.Settings) == 0 && !opts.ClearSettings {
				return cmdutil.UsageError{Err: errors.New("nothing to change: pass --label, --base-url, --clear-base-url, --setting, --clear-settings, or a new secret")}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return cmdutil.WithFlags(updateRun(cmd.Context(), opts), credentialFields...)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	addCredentialScopeFlag(cmd, &opts.Scope)
	cmd.Flags().StringVar(&label, "label", "", "new label")
	cmd.Flags().StringVar(&baseURL, "base-url", "", "new upstream base URL")
	cmd.Flags().BoolVar(&opts.ClearBaseURL, "clear-base-url", false, "remove the base URL (use the provider's default)")
	addSettingFlag(cmd, &opts.Settings)
	cmd.Flags().BoolVar(&opts.ClearSettings, "clear-settings", false, "remove the credential's settings")
	cmdutil.AddSecretInputFlags(cmd, &opts.Secret, "secret", "new provider API key")
	cmd.Flags().BoolVar(&prompt, "prompt-secret", false, "ask for a new provider API key on the terminal (input is hidden)")
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
	in := wire.ProviderCredentialUpdate{Label: opts.Label, BaseURL: opts.BaseURL}
	if len(opts.Settings) > 0 || opts.ClearSettings {
		if in.Settings, err = parseSettings(opts.Settings); err != nil {
			return err
		}
		if in.Settings == nil {
			in.Settings = &wire.CredentialSettings{}
		}
	}
	if opts.NewSecret {
		secret, err := opts.Secret.Read(opts.IO, "secret", "New API key (input is hidden): ")
		if err != nil {
			return err
		}
		in.Secret = &secret
	}
	cred, err := c.UpdateCredential(ctx, scope, opts.ID, in, opts.ClearBaseURL)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, cred, func() cmdutil.Table { return credentialDetail(cred) })
}

// DeleteOptions configure gw credentials delete.
type DeleteOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	Scope  string
	ID     string
	Yes    bool
}

// NewCmdDelete builds `gw credentials delete`.
func NewCmdDelete(f *cmdutil.Factory, runF func(context.Context, *DeleteOptions) error) *cobra.Command {
	opts := &DeleteOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "delete CREDENTIAL_ID [--scope platform|org|workspace]",
		Short: "Delete a provider credential; models needing it become unavailable",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if err := checkCredentialScope(cmd, &opts.Scope); err != nil {
				return err
			}
			opts.ID = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return deleteRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	addCredentialScopeFlag(cmd, &opts.Scope)
	cmdutil.AddYesFlag(cmd, &opts.Yes)
	return cmd
}

func deleteRun(ctx context.Context, opts *DeleteOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	scope, err := cmdutil.ScopeFor(s, opts.Scope, "platform")
	if err != nil {
		return err
	}
	if err := cmdutil.Confirm(opts.IO, fmt.Sprintf("Delete provider credential %s? Models that need it become unavailable.", opts.ID), opts.Yes); err != nil {
		return err
	}
	d, err := c.DeleteCredential(ctx, scope, opts.ID)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, d, func() cmdutil.Table { return cmdutil.DeletedTable(d) })
}
