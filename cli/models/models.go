// Package models is `gw models`: model discovery on the data plane, with an
// inference key.
package models

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
)

// NewCmd builds `gw models`, model discovery on the data plane.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "models",
		Short: "Discover the models an inference key may use (data plane, /inf/v1/models)",
		Long: `Ask the data plane which models an inference key may use: the catalog models
with a configured credential, narrowed by the workspace's policies. This is
what OpenAI-compatible clients see at {server}/inf/v1/models.

The inference key comes from --key or GW_INFERENCE_KEY; management keys are
not accepted by the data plane.`,
	}
	cmd.AddCommand(NewCmdList(f, nil), NewCmdGet(f, nil))
	return cmd
}

// inferenceTarget is where discovery is asked and with which key.
type inferenceTarget struct {
	// Key is the inference key (sk-gw-…).
	Key string
	// DataPlaneURL overrides the server for split deployments, where the
	// data plane runs apart from the control plane.
	DataPlaneURL string
}

func addInferenceTargetFlags(cmd *cobra.Command, t *inferenceTarget) {
	cmd.Flags().StringVar(&t.Key, "key", "", "inference key, sk-gw-… [GW_INFERENCE_KEY]")
	cmd.Flags().StringVar(&t.DataPlaneURL, "data-plane-url", "", "data plane URL when it is not the server's [GW_DATA_PLANE_URL]")
}

// resolve fills the key and URL from the environment and checks the key.
func (t *inferenceTarget) resolve() error {
	if t.Key == "" {
		t.Key = os.Getenv("GW_INFERENCE_KEY")
	}
	if t.DataPlaneURL == "" {
		t.DataPlaneURL = os.Getenv("GW_DATA_PLANE_URL")
	}
	if t.Key == "" {
		return cmdutil.UsageError{Err: errors.New("no inference key: pass --key or set GW_INFERENCE_KEY (create one with gw inference-keys create)")}
	}
	return nil
}

// keyClient is the constructor of a client that authenticates with an
// inference key, at the data plane's URL or else the server's.
func keyClient(f *cmdutil.Factory) func(inferenceTarget) (*client.Client, error) {
	return func(t inferenceTarget) (*client.Client, error) { return t.client(f) }
}

// client builds a client that authenticates with the inference key.
func (t inferenceTarget) client(f *cmdutil.Factory) (*client.Client, error) {
	server := f.BaseServerURL(t.DataPlaneURL)
	if server == "" {
		s, err := f.Settings()
		if err != nil {
			return nil, err
		}
		server = s.Server
	}
	if server == "" {
		return nil, cmdutil.UsageError{Err: errors.New("no server: pass --server or --data-plane-url, or set GW_SERVER")}
	}
	return client.New(client.Options{Server: server, Token: t.Key, Version: cmdutil.Version(), HTTPClient: f.HTTPClient})
}

func modelTable(ms ...client.Model) cmdutil.Table {
	t := cmdutil.Table{Headers: []string{"id", "provider", "context", "input_per_mtok", "output_per_mtok", "capabilities"}}
	for _, m := range ms {
		t.Rows = append(t.Rows, []string{m.ID, m.Provider, strconv.FormatInt(m.ContextWindow, 10),
			cmdutil.MoneyCell(m.Pricing.InputPerMTok), cmdutil.MoneyCell(m.Pricing.OutputPerMTok), cmdutil.OrDash(strings.Join(m.Capabilities, ","))})
	}
	return t
}

func modelDetail(m client.Model) cmdutil.Table {
	return cmdutil.DetailTable("id", m.ID, "name", cmdutil.OrDash(m.Name), "provider", m.Provider, "owned_by", m.OwnedBy,
		"context_window", strconv.FormatInt(m.ContextWindow, 10), "max_output_tokens", strconv.FormatInt(m.MaxOutputTokens, 10),
		"input_per_mtok", cmdutil.MoneyCell(m.Pricing.InputPerMTok), "output_per_mtok", cmdutil.MoneyCell(m.Pricing.OutputPerMTok),
		"cache_read_per_mtok", cmdutil.MoneyCell(m.Pricing.CacheReadPerMTok), "cache_write_per_mtok", cmdutil.MoneyCell(m.Pricing.CacheWritePerMTok),
		"capabilities", cmdutil.OrDash(strings.Join(m.Capabilities, ",")), "modalities", cmdutil.OrDash(strings.Join(m.Modalities, ",")))
}

// ListOptions configure gw models list.
type ListOptions struct {
	IO     *cmdutil.IOStreams
	Client func(inferenceTarget) (*client.Client, error)
	Output cmdutil.Output
	Target inferenceTarget
}

// NewCmdList builds `gw models list`.
func NewCmdList(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: f.IO, Client: keyClient(f)}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the models the inference key may use, sorted by id",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if err := opts.Target.resolve(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return listRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	addInferenceTargetFlags(cmd, &opts.Target)
	return cmd
}

func listRun(ctx context.Context, opts *ListOptions) error {
	c, err := opts.Client(opts.Target)
	if err != nil {
		return err
	}
	list, err := c.ListModels(ctx)
	if err != nil {
		return err
	}
	if list.Data == nil {
		list.Data = []client.Model{}
	}
	// The data array, as every other list command prints: the models
	// exactly as the data plane sent them.
	return opts.Output.Print(opts.IO, list.Data, func() cmdutil.Table { return modelTable(list.Data...) })
}

// GetOptions configure gw models get.
type GetOptions struct {
	IO     *cmdutil.IOStreams
	Client func(inferenceTarget) (*client.Client, error)
	Output cmdutil.Output
	Target inferenceTarget
	// ID is the model id, e.g. openai/gpt-4o-mini (slashes included).
	ID string
}

// NewCmdGet builds `gw models get`.
func NewCmdGet(f *cmdutil.Factory, runF func(context.Context, *GetOptions) error) *cobra.Command {
	opts := &GetOptions{IO: f.IO, Client: keyClient(f)}
	cmd := &cobra.Command{
		Use:   "get MODEL_ID",
		Short: "Show one model, e.g. gw models get openai/gpt-4o-mini",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if err := opts.Target.resolve(); err != nil {
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
	addInferenceTargetFlags(cmd, &opts.Target)
	return cmd
}

func getRun(ctx context.Context, opts *GetOptions) error {
	c, err := opts.Client(opts.Target)
	if err != nil {
		return err
	}
	m, err := c.GetModel(ctx, opts.ID)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, m, func() cmdutil.Table { return modelDetail(m) })
}
