// Package batches is `gw batches`: a workspace's batches (issue 34,
// docs/batches.md) — list, get, cancel. Submitting one is the data
// plane's, with an inference key (the OpenAI SDKs' batches.create).
package batches

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// NewCmd builds `gw batches`.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "batches",
		Short: "See and cancel a workspace's batches (bulk requests at batch prices)",
		Long: `A batch is a file of requests an application submits with an inference key
(POST /inf/v1/batches); gw sends its lines off the request path, at the
batch prices, within the key's policies and budgets. These commands show a
workspace's batches and cancel one: its pending lines are never sent, a
line in flight ends.`,
	}
	cmd.AddCommand(NewCmdList(f, nil), NewCmdGet(f, nil), NewCmdCancel(f, nil))
	return cmd
}

func counts(c wire.BatchCounts) string {
	s := fmt.Sprintf("%d/%d done, %d failed, %d cancelled", c.Completed, c.Total, c.Failed, c.Cancelled)
	if c.Expired > 0 {
		s += fmt.Sprintf(", %d expired", c.Expired)
	}
	return s
}

// table is a batch per row; the key and the file are wide: the id, the
// status and the counts say where a batch is.
func table(bs ...wire.Batch) cmdutil.Table {
	t := cmdutil.Table{Headers: []string{"id", "status", "endpoint", "lines", "reserved usd", "created", "ended", "key", "input file"},
		Wide: []string{"key", "input file"}, Shrink: []string{"endpoint"}, Empty: "no batches"}
	for _, b := range bs {
		key := "-"
		if b.InferenceKeyID != nil {
			key = b.InferenceKeyID.String()
		}
		t.Rows = append(t.Rows, []string{b.ID, b.Status, b.Endpoint, counts(b.RequestCounts), b.ReservedUSD,
			cmdutil.TimeCell(&b.CreatedAt), cmdutil.TimeCell(b.CompletedAt), key, b.InputFileID})
	}
	return t
}

func detail(b wire.Batch) cmdutil.Table {
	key := "-"
	if b.InferenceKeyID != nil {
		key = b.InferenceKeyID.String()
	}
	str := func(s *string) string {
		if s == nil {
			return "-"
		}
		return *s
	}
	return cmdutil.DetailTable("id", b.ID, "status", b.Status, "endpoint", b.Endpoint, "lines", counts(b.RequestCounts),
		"reserved_usd", b.ReservedUSD, "inference_key_id", key, "input_file_id", b.InputFileID,
		"output_file_id", str(b.OutputFileID), "error_file_id", str(b.ErrorFileID),
		"org_id", b.OrgID.String(), "workspace_id", b.WorkspaceID.String(),
		"created_at", cmdutil.TimeCell(&b.CreatedAt), "updated_at", cmdutil.TimeCell(&b.UpdatedAt), "completed_at", cmdutil.TimeCell(b.CompletedAt))
}

// ListOptions configure gw batches list.
type ListOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	Paging cmdutil.Paging
	// Kind is batch (OpenAI's shape) or message_batch (Anthropic's).
	Kind string
}

// NewCmdList builds `gw batches list`.
func NewCmdList(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "list [--kind batch|message_batch] [--limit N] [--all]",
		Short: "List the workspace's batches of a kind, newest first",
		Example: `  gw batches list
  gw batches list --kind message_batch
  gw batches list --workspace research --all -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if err := opts.Paging.Check(); err != nil {
				return err
			}
			if opts.Kind != "batch" && opts.Kind != "message_batch" {
				return cmdutil.UsageError{Err: fmt.Errorf("--kind must be batch or message_batch, not %q", opts.Kind)}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return listRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Kind, "kind", "batch", "batch (POST /inf/v1/batches) or message_batch (POST /inf/v1/messages/batches)")
	cmdutil.AddOutput(cmd, &opts.Output)
	cmdutil.AddPagingFlags(cmd, &opts.Paging)
	return cmd
}

func listRun(ctx context.Context, opts *ListOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	org, ws, err := s.RequireWorkspace()
	if err != nil {
		return err
	}
	bs, err := cmdutil.FollowPages(ctx, opts.Paging, opts.IO.ErrOut, func(ctx context.Context, limit int, cursor string) (wire.Page[wire.Batch], error) {
		return c.ListBatches(ctx, org, ws, opts.Kind, limit, cursor)
	})
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, bs, func() cmdutil.Table { return table(bs...) })
}

// GetOptions configure gw batches get.
type GetOptions = cmdutil.IDOptions

// NewCmdGet builds `gw batches get`.
func NewCmdGet(f *cmdutil.Factory, runF func(context.Context, *GetOptions) error) *cobra.Command {
	return cmdutil.NewIDCmd(f, "get ID", "Show a batch: its status, its lines' counts and what was reserved (ID: batch_…)", runF, getRun)
}

func getRun(ctx context.Context, opts *GetOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	org, ws, err := s.RequireWorkspace()
	if err != nil {
		return err
	}
	b, err := c.GetBatch(ctx, org, ws, opts.ID)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, b, func() cmdutil.Table { return detail(b) })
}

// CancelOptions configure gw batches cancel.
type CancelOptions = cmdutil.IDOptions

// NewCmdCancel builds `gw batches cancel`.
func NewCmdCancel(f *cmdutil.Factory, runF func(context.Context, *CancelOptions) error) *cobra.Command {
	return cmdutil.NewDestructiveIDCmd(f, "cancel ID", "Cancel a batch: its pending lines are never sent (they cost nothing); a line in flight ends", runF, cancelRun)
}

func cancelRun(ctx context.Context, opts *CancelOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	org, ws, err := s.RequireWorkspace()
	if err != nil {
		return err
	}
	if err := cmdutil.Confirm(opts.IO, fmt.Sprintf("Cancel batch %s? Its pending lines will not be sent.", cmdutil.DescribeForPrompt(opts.IO, opts.Yes, opts.ID, func() (string, error) {
		b, err := c.GetBatch(ctx, org, ws, opts.ID)
		return fmt.Sprintf("%s (%s, %s)", b.ID, b.Status, counts(b.RequestCounts)), err
	})), opts.Yes); err != nil {
		return err
	}
	b, err := c.CancelBatch(ctx, org, ws, opts.ID)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, b, func() cmdutil.Table { return detail(b) })
}
