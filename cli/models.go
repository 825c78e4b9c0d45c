package cli

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/client"
)

// NewCmdModels builds `gw models`, model discovery on the data plane.
func NewCmdModels(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "models",
		Short: "Discover the models an inference key may use (data plane, /inf/v1/models)",
		Long: `Ask the data plane which models an inference key may use: the catalog models
with a configured credential, narrowed by the workspace's policies. This is
what OpenAI-compatible clients see at {server}/inf/v1/models.

The inference key comes from --key or GW_INFERENCE_KEY; management keys are
not accepted by the data plane.`,
	}
	cmd.AddCommand(NewCmdModelsList(f, nil), NewCmdModelsGet(f, nil))
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
		return usageError{errors.New("no inference key: pass --key or set GW_INFERENCE_KEY (create one with gw inference-keys create)")}
	}
	return nil
}

// client builds a client that authenticates with the inference key.
func (t inferenceTarget) client(f *Factory) (*client.Client, error) {
	server := f.BaseServerURL(t.DataPlaneURL)
	if server == "" {
		s, err := f.Settings()
		if err != nil {
			return nil, err
		}
		server = s.Server
	}
	if server == "" {
		return nil, usageError{errors.New("no server: pass --server or --data-plane-url, or set GW_SERVER")}
	}
	return client.New(client.Options{Server: server, Token: t.Key, Version: Version(), HTTPClient: f.HTTPClient})
}

func modelTable(ms ...client.Model) Table {
	t := Table{Headers: []string{"id", "provider", "context", "input_per_mtok", "output_per_mtok", "capabilities"}}
	for _, m := range ms {
		t.Rows = append(t.Rows, []string{m.ID, m.Provider, strconv.FormatInt(m.ContextWindow, 10),
			moneyCell(m.Pricing.InputPerMTok), moneyCell(m.Pricing.OutputPerMTok), orDash(strings.Join(m.Capabilities, ","))})
	}
	return t
}

func modelDetail(m client.Model) Table {
	return detailTable("id", m.ID, "name", orDash(m.Name), "provider", m.Provider, "owned_by", m.OwnedBy,
		"context_window", strconv.FormatInt(m.ContextWindow, 10), "max_output_tokens", strconv.FormatInt(m.MaxOutputTokens, 10),
		"input_per_mtok", moneyCell(m.Pricing.InputPerMTok), "output_per_mtok", moneyCell(m.Pricing.OutputPerMTok),
		"cache_read_per_mtok", moneyCell(m.Pricing.CacheReadPerMTok), "cache_write_per_mtok", moneyCell(m.Pricing.CacheWritePerMTok),
		"capabilities", orDash(strings.Join(m.Capabilities, ",")), "modalities", orDash(strings.Join(m.Modalities, ",")))
}

// ModelsListOptions configure gw models list.
type ModelsListOptions struct {
	f      *Factory
	Output string
	Target inferenceTarget
}

// NewCmdModelsList builds `gw models list`.
func NewCmdModelsList(f *Factory, runF func(context.Context, *ModelsListOptions) error) *cobra.Command {
	opts := &ModelsListOptions{f: f}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the models the inference key may use, sorted by id",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			if err := opts.Target.resolve(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return modelsListRun(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	addInferenceTargetFlags(cmd, &opts.Target)
	return cmd
}

func modelsListRun(ctx context.Context, opts *ModelsListOptions) error {
	c, err := opts.Target.client(opts.f)
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
	return opts.f.Print(opts.Output, list.Data, func() Table { return modelTable(list.Data...) })
}

// ModelsGetOptions configure gw models get.
type ModelsGetOptions struct {
	f      *Factory
	Output string
	Target inferenceTarget
	// ID is the model id, e.g. openai/gpt-4o-mini (slashes included).
	ID string
}

// NewCmdModelsGet builds `gw models get`.
func NewCmdModelsGet(f *Factory, runF func(context.Context, *ModelsGetOptions) error) *cobra.Command {
	opts := &ModelsGetOptions{f: f}
	cmd := &cobra.Command{
		Use:   "get MODEL_ID",
		Short: "Show one model, e.g. gw models get openai/gpt-4o-mini",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			if err := opts.Target.resolve(); err != nil {
				return err
			}
			opts.ID = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return modelsGetRun(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	addInferenceTargetFlags(cmd, &opts.Target)
	return cmd
}

func modelsGetRun(ctx context.Context, opts *ModelsGetOptions) error {
	c, err := opts.Target.client(opts.f)
	if err != nil {
		return err
	}
	m, err := c.GetModel(ctx, opts.ID)
	if err != nil {
		return err
	}
	return opts.f.Print(opts.Output, m, func() Table { return modelDetail(m) })
}
