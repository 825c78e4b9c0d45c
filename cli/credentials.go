package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/wire"
)

// NewCmdCredentials builds `gw credentials`, the upstream provider
// credentials.
func NewCmdCredentials(f *Factory) *cobra.Command {
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
		NewCmdCredentialsList(f, nil),
		NewCmdCredentialsGet(f, nil),
		NewCmdCredentialsCreate(f, nil),
		NewCmdCredentialsUpdate(f, nil),
		NewCmdCredentialsDelete(f, nil),
	)
	return cmd
}

func addCredentialScopeFlag(cmd *cobra.Command, scope *string) {
	cmd.Flags().StringVar(scope, "scope", "org", "where the credential lives: platform, org or workspace (default org, or workspace when --workspace is given; org and workspace from --org/--workspace or the context)")
}

func checkCredentialScope(cmd *cobra.Command, scope *string) error {
	return checkScope(cmd, scope, "platform", "org", "workspace")
}

func credentialScopeCell(c wire.ProviderCredential) string {
	switch {
	case c.Scope.WorkspaceID != nil:
		return "workspace:" + c.Scope.WorkspaceID.String()
	case c.Scope.OrgID != nil:
		return "org:" + c.Scope.OrgID.String()
	}
	return orDash(c.Scope.Level)
}

func credentialTable(cs ...wire.ProviderCredential) Table {
	t := Table{Headers: []string{"id", "provider", "label", "scope", "secret", "base_url", "updated"}}
	for _, c := range cs {
		base := "-"
		if c.BaseURL != nil {
			base = *c.BaseURL
		}
		t.Rows = append(t.Rows, []string{c.ID.String(), c.Provider, c.Label, credentialScopeCell(c), orDash(c.SecretHint), base, timeCell(&c.UpdatedAt)})
	}
	return t
}

func credentialDetail(c wire.ProviderCredential) Table {
	base := "-"
	if c.BaseURL != nil {
		base = *c.BaseURL
	}
	return detailTable("id", c.ID.String(), "provider", c.Provider, "label", c.Label, "scope", c.Scope.Level,
		"org_id", uuidCell(c.Scope.OrgID), "workspace_id", uuidCell(c.Scope.WorkspaceID), "base_url", base,
		"settings", settingsCell(c.Settings),
		"secret_hint", orDash(c.SecretHint), "created_at", timeCell(&c.CreatedAt), "updated_at", timeCell(&c.UpdatedAt))
}

// CredentialsListOptions configure gw credentials list.
type CredentialsListOptions struct {
	f      *Factory
	Output string
	Scope  string
}

// NewCmdCredentialsList builds `gw credentials list`.
func NewCmdCredentialsList(f *Factory, runF func(context.Context, *CredentialsListOptions) error) *cobra.Command {
	opts := &CredentialsListOptions{f: f}
	cmd := &cobra.Command{
		Use:   "list [--scope platform|org|workspace]",
		Short: "List the credentials configured at exactly one scope",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			if err := checkCredentialScope(cmd, &opts.Scope); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return credentialsListRun(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	addCredentialScopeFlag(cmd, &opts.Scope)
	return cmd
}

func credentialsListRun(ctx context.Context, opts *CredentialsListOptions) error {
	c, s, err := opts.f.AuthedClient()
	if err != nil {
		return err
	}
	scope, err := scopeFor(s, opts.Scope, "platform")
	if err != nil {
		return err
	}
	cs, err := c.ListCredentials(ctx, scope)
	if err != nil {
		return err
	}
	return opts.f.Print(opts.Output, cs, func() Table { return credentialTable(cs...) })
}

// CredentialsGetOptions configure gw credentials get.
type CredentialsGetOptions struct {
	f      *Factory
	Output string
	Scope  string
	ID     string
}

// NewCmdCredentialsGet builds `gw credentials get`.
func NewCmdCredentialsGet(f *Factory, runF func(context.Context, *CredentialsGetOptions) error) *cobra.Command {
	opts := &CredentialsGetOptions{f: f}
	cmd := &cobra.Command{
		Use:   "get CREDENTIAL_ID [--scope platform|org|workspace]",
		Short: "Show a credential's metadata (never its secret)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			if err := checkCredentialScope(cmd, &opts.Scope); err != nil {
				return err
			}
			opts.ID = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return credentialsGetRun(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	addCredentialScopeFlag(cmd, &opts.Scope)
	return cmd
}

func credentialsGetRun(ctx context.Context, opts *CredentialsGetOptions) error {
	c, s, err := opts.f.AuthedClient()
	if err != nil {
		return err
	}
	scope, err := scopeFor(s, opts.Scope, "platform")
	if err != nil {
		return err
	}
	cred, err := c.GetCredential(ctx, scope, opts.ID)
	if err != nil {
		return err
	}
	return opts.f.Print(opts.Output, cred, func() Table { return credentialDetail(cred) })
}

// CredentialsCreateOptions configure gw credentials create. The secret is
// not among them: it is read when the command runs, from Secret's source.
type CredentialsCreateOptions struct {
	f        *Factory
	Output   string
	Scope    string
	Provider string
	Label    string
	BaseURL  string
	// Settings are the --setting KEY=VALUE pairs (docs/providers.md).
	Settings []string
	Secret   secretInput
}

// NewCmdCredentialsCreate builds `gw credentials create`.
func NewCmdCredentialsCreate(f *Factory, runF func(context.Context, *CredentialsCreateOptions) error) *cobra.Command {
	opts := &CredentialsCreateOptions{f: f}
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
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			if err := checkCredentialScope(cmd, &opts.Scope); err != nil {
				return err
			}
			if err := requireFlags(cmd.Flags(), "provider", "label"); err != nil {
				return err
			}
			if err := exclusiveFlags(cmd.Flags(), "secret-file", "secret-stdin"); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return withFlags(credentialsCreateRun(cmd.Context(), opts), credentialFields...)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	addCredentialScopeFlag(cmd, &opts.Scope)
	cmd.Flags().StringVar(&opts.Provider, "provider", "", "catalog provider id, e.g. openai or anthropic (see gw catalog list --providers)")
	cmd.Flags().StringVar(&opts.Label, "label", "", "a name to tell credentials apart (1 to 80 characters)")
	cmd.Flags().StringVar(&opts.BaseURL, "base-url", "", "upstream base URL (default: the catalog provider's; required only for a provider the catalog gives none, e.g. openai-compatible)")
	addSettingFlag(cmd, &opts.Settings)
	addSecretInputFlags(cmd, &opts.Secret, "secret", "provider API key")
	return cmd
}

func credentialsCreateRun(ctx context.Context, opts *CredentialsCreateOptions) error {
	c, s, err := opts.f.AuthedClient()
	if err != nil {
		return err
	}
	scope, err := scopeFor(s, opts.Scope, "platform")
	if err != nil {
		return err
	}
	secret, err := opts.Secret.Read(opts.f.IO, "secret", fmt.Sprintf("API key for %s (input is hidden): ", opts.Provider))
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
	return opts.f.Print(opts.Output, cred, func() Table { return credentialDetail(cred) })
}

// CredentialsUpdateOptions configure gw credentials update.
type CredentialsUpdateOptions struct {
	f            *Factory
	Output       string
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
	Secret    secretInput
}

// NewCmdCredentialsUpdate builds `gw credentials update`.
func NewCmdCredentialsUpdate(f *Factory, runF func(context.Context, *CredentialsUpdateOptions) error) *cobra.Command {
	opts := &CredentialsUpdateOptions{f: f}
	var label, baseURL string
	var prompt bool
	cmd := &cobra.Command{
		Use:   "update CREDENTIAL_ID [--label L] [--base-url URL | --clear-base-url] [--setting K=V... | --clear-settings] [--secret-file F | --secret-stdin | --prompt-secret]",
		Short: "Change a credential's label, base URL or settings, or rotate its secret",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			if err := checkCredentialScope(cmd, &opts.Scope); err != nil {
				return err
			}
			if err := exclusiveFlags(cmd.Flags(), "secret-file", "secret-stdin", "prompt-secret"); err != nil {
				return err
			}
			if err := exclusiveFlags(cmd.Flags(), "base-url", "clear-base-url"); err != nil {
				return err
			}
			if err := exclusiveFlags(cmd.Flags(), "setting", "clear-settings"); err != nil {
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
				return usageError{errors.New("nothing to change: pass --label, --base-url, --clear-base-url, --setting, --clear-settings, or a new secret")}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return withFlags(credentialsUpdateRun(cmd.Context(), opts), credentialFields...)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	addCredentialScopeFlag(cmd, &opts.Scope)
	cmd.Flags().StringVar(&label, "label", "", "new label")
	cmd.Flags().StringVar(&baseURL, "base-url", "", "new upstream base URL")
	cmd.Flags().BoolVar(&opts.ClearBaseURL, "clear-base-url", false, "remove the base URL (use the provider's default)")
	addSettingFlag(cmd, &opts.Settings)
	cmd.Flags().BoolVar(&opts.ClearSettings, "clear-settings", false, "remove the credential's settings")
	addSecretInputFlags(cmd, &opts.Secret, "secret", "new provider API key")
	cmd.Flags().BoolVar(&prompt, "prompt-secret", false, "ask for a new provider API key on the terminal (input is hidden)")
	return cmd
}

func credentialsUpdateRun(ctx context.Context, opts *CredentialsUpdateOptions) error {
	c, s, err := opts.f.AuthedClient()
	if err != nil {
		return err
	}
	scope, err := scopeFor(s, opts.Scope, "platform")
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
		secret, err := opts.Secret.Read(opts.f.IO, "secret", "New API key (input is hidden): ")
		if err != nil {
			return err
		}
		in.Secret = &secret
	}
	cred, err := c.UpdateCredential(ctx, scope, opts.ID, in, opts.ClearBaseURL)
	if err != nil {
		return err
	}
	return opts.f.Print(opts.Output, cred, func() Table { return credentialDetail(cred) })
}

// CredentialsDeleteOptions configure gw credentials delete.
type CredentialsDeleteOptions struct {
	f      *Factory
	Output string
	Scope  string
	ID     string
	Yes    bool
}

// NewCmdCredentialsDelete builds `gw credentials delete`.
func NewCmdCredentialsDelete(f *Factory, runF func(context.Context, *CredentialsDeleteOptions) error) *cobra.Command {
	opts := &CredentialsDeleteOptions{f: f}
	cmd := &cobra.Command{
		Use:   "delete CREDENTIAL_ID [--scope platform|org|workspace]",
		Short: "Delete a provider credential; models needing it become unavailable",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			if err := checkCredentialScope(cmd, &opts.Scope); err != nil {
				return err
			}
			opts.ID = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return credentialsDeleteRun(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	addCredentialScopeFlag(cmd, &opts.Scope)
	addYesFlag(cmd, &opts.Yes)
	return cmd
}

func credentialsDeleteRun(ctx context.Context, opts *CredentialsDeleteOptions) error {
	c, s, err := opts.f.AuthedClient()
	if err != nil {
		return err
	}
	scope, err := scopeFor(s, opts.Scope, "platform")
	if err != nil {
		return err
	}
	if err := opts.f.Confirm(fmt.Sprintf("Delete provider credential %s? Models that need it become unavailable.", opts.ID), opts.Yes); err != nil {
		return err
	}
	d, err := c.DeleteCredential(ctx, scope, opts.ID)
	if err != nil {
		return err
	}
	return opts.f.Print(opts.Output, d, func() Table { return deletedTable(d) })
}
