// Package catalog is `gw catalog`: providers and models, and the instance's overrides.
package catalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/wire"
)

// NewCmd builds `gw catalog`.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "catalog", Short: "Show and maintain the model catalog: providers, models, prices, capabilities"}
	cmd.AddCommand(
		NewCmdList(f, nil),
		NewCmdImport(f, nil),
		NewCmdRetire(f, nil),
	)
	return cmd
}

func catalogModelTable(ms []wire.CatalogModel) cmdutil.Table {
	t := cmdutil.Table{Headers: []string{"id", "provider", "context", "input_per_mtok", "output_per_mtok", "capabilities", "state"}}
	for _, m := range ms {
		state := "active"
		switch {
		case m.RetiredAt != nil:
			state = "retired"
		case m.Available != nil && !*m.Available:
			// No credential where the reader could use it: listed, but a
			// request for it would find no upstream.
			state = "no-credential"
		case m.Available != nil:
			state = "available"
		}
		t.Rows = append(t.Rows, []string{m.ID, m.Provider, strconv.FormatInt(m.ContextWindow, 10), cmdutil.MoneyCell(m.Pricing.InputPerMTok),
			cmdutil.MoneyCell(m.Pricing.OutputPerMTok), cmdutil.OrDash(strings.Join(m.Capabilities, ",")), state})
	}
	return t
}

func catalogProviderTable(ps []wire.CatalogProvider) cmdutil.Table {
	t := cmdutil.Table{Headers: []string{"id", "name", "kind", "base_url", "state"}}
	for _, p := range ps {
		state := "active"
		if p.RetiredAt != nil {
			state = "retired"
		}
		t.Rows = append(t.Rows, []string{p.ID, p.Name, p.Kind, cmdutil.OrDash(p.BaseURL), state})
	}
	return t
}

// ListOptions configure gw catalog list.
type ListOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	Scope  string
	// Providers shows the providers instead of the models (tables only:
	// json and yaml always carry both).
	Providers bool
}

// NewCmdList builds `gw catalog list`.
func NewCmdList(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "list [--scope instance|org|workspace] [--providers]",
		Short: "List the catalog's models (or providers)",
		Long: `List the model catalog. At org or workspace scope it is the catalog in force,
each model marked available when a provider credential is configured where
that scope can use it; at instance scope it is the whole catalog, retired
entries included. --output json or yaml prints the catalog document
({providers, models}) as the server returns it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if err := cmdutil.CheckScope(cmd, &opts.Scope, "instance", "org", "workspace"); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return listRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	cmd.Flags().StringVar(&opts.Scope, "scope", "org", "instance (everything, retired included), org or workspace (what is in force there; default org, or workspace when --workspace is given)")
	cmd.Flags().BoolVar(&opts.Providers, "providers", false, "list the providers instead of the models")
	return cmd
}

func listRun(ctx context.Context, opts *ListOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	scope, err := cmdutil.ScopeFor(s, opts.Scope, "instance")
	if err != nil {
		return err
	}
	cat, err := c.GetCatalog(ctx, scope)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, cat, func() cmdutil.Table {
		if opts.Providers {
			return catalogProviderTable(cat.Providers)
		}
		return catalogModelTable(cat.Models)
	})
}

// ImportOptions configure gw catalog import.
type ImportOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	// File is the document's path; "-" reads standard input.
	File   string
	DryRun bool
}

// NewCmdImport builds `gw catalog import`.
func NewCmdImport(f *cmdutil.Factory, runF func(context.Context, *ImportOptions) error) *cobra.Command {
	opts := &ImportOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "import -f FILE [--dry-run]",
		Short: "Import a catalog document (YAML or JSON); entries are added or replaced by id",
		Long: `Import a catalog document of providers and models, in the format of gw's
embedded default catalog. The file is validated here first with the same
code the server uses, so every problem is reported at once without a
round trip; --dry-run stops after that. Needs catalog.manage at instance scope.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if err := cmdutil.RequireFlags(cmd.Flags(), "file"); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return importRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	cmd.Flags().StringVarP(&opts.File, "file", "f", "", `catalog document to import ("-" for standard input)`)
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "validate the document without importing it")
	return cmd
}

func importRun(ctx context.Context, opts *ImportOptions) error {
	var doc []byte
	var err error
	if opts.File == "-" {
		doc, err = io.ReadAll(opts.IO.In)
	} else {
		doc, err = os.ReadFile(opts.File)
	}
	// A file that cannot be read or is no valid catalog is a usage error
	// (exit 2), as a bad policy file is: the command was given bad input.
	if err != nil {
		return cmdutil.UsageError{Err: fmt.Errorf("read catalog document: %w", err)}
	}
	parsed, err := catalog.Parse(doc)
	if err != nil {
		var ve *catalog.ValidationError
		if errors.As(err, &ve) {
			for _, p := range ve.Problems {
				fmt.Fprintln(opts.IO.ErrOut, "  "+p.Error())
			}
			return cmdutil.UsageError{Err: fmt.Errorf("%s: %d problem(s); nothing imported", opts.File, len(ve.Problems))}
		}
		return cmdutil.UsageError{Err: fmt.Errorf("%s: %w; nothing imported", opts.File, err)}
	}
	counts := wire.CatalogImportResult{Providers: len(parsed.Providers), Models: len(parsed.Models)}
	if opts.DryRun {
		fmt.Fprintf(opts.IO.ErrOut, "%s is valid: %d providers, %d models (dry run, nothing imported)\n", opts.File, counts.Providers, counts.Models)
		return opts.Output.Print(opts.IO, counts, func() cmdutil.Table { return importTable(counts) })
	}
	c, _, err := opts.Client()
	if err != nil {
		return err
	}
	res, err := c.ImportCatalog(ctx, doc)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, res, func() cmdutil.Table { return importTable(res) })
}

func importTable(r wire.CatalogImportResult) cmdutil.Table {
	return cmdutil.DetailTable("providers", strconv.Itoa(r.Providers), "models", strconv.Itoa(r.Models))
}

// RetireOptions configure gw catalog retire.
type RetireOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	// Model is the model id (it may contain slashes), or empty with
	// Provider.
	Model    string
	Provider string
	Yes      bool
}

// NewCmdRetire builds `gw catalog retire`.
func NewCmdRetire(f *cmdutil.Factory, runF func(context.Context, *RetireOptions) error) *cobra.Command {
	opts := &RetireOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "retire MODEL_ID | --provider PROVIDER_ID",
		Short: "Retire a model, or a provider with all its models; requests for them stop routing",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if len(args) == 1 {
				opts.Model = args[0]
			}
			if (opts.Model == "") == (opts.Provider == "") {
				return cmdutil.UsageError{Err: errors.New("name exactly one of a MODEL_ID argument or --provider PROVIDER_ID")}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return retireRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	cmd.Flags().StringVar(&opts.Provider, "provider", "", "retire this provider and so every model of it")
	cmdutil.AddYesFlag(cmd, &opts.Yes)
	return cmd
}

func retireRun(ctx context.Context, opts *RetireOptions) error {
	c, _, err := opts.Client()
	if err != nil {
		return err
	}
	if opts.Provider != "" {
		if err := cmdutil.Confirm(opts.IO, fmt.Sprintf("Retire provider %s and every model of it?", opts.Provider), opts.Yes); err != nil {
			return err
		}
		p, err := c.RetireCatalogProvider(ctx, opts.Provider)
		if err != nil {
			return err
		}
		return opts.Output.Print(opts.IO, p, func() cmdutil.Table { return catalogProviderTable([]wire.CatalogProvider{p}) })
	}
	if err := cmdutil.Confirm(opts.IO, fmt.Sprintf("Retire model %s?", opts.Model), opts.Yes); err != nil {
		return err
	}
	m, err := c.RetireCatalogModel(ctx, opts.Model)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, m, func() cmdutil.Table { return catalogModelTable([]wire.CatalogModel{m}) })
}
