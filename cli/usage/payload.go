package usage

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// PayloadOptions configure gw usage payload.
type PayloadOptions struct {
	IO        *cmdutil.IOStreams
	Client    func() (*client.Client, cmdutil.Settings, error)
	RequestID string
}

// NewCmdPayload builds `gw usage payload`, a request's archived body and
// answer (issue 32).
func NewCmdPayload(f *cmdutil.Factory, runF func(context.Context, *PayloadOptions) error) *cobra.Command {
	opts := &PayloadOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "payload REQUEST_ID",
		Short: "Print a request's archived body and answer (audit.read)",
		Long: `Print what a request sent and was answered, as its workspace's payload archive
kept it (redactions applied): one JSON object with the usage event id, the
request body and the answer (an event stream as a string).

REQUEST_ID is the X-Request-Id the request was answered with, or its usage
event id. The workspace must archive payloads (its archive setting), and the
data plane uploads in the background: a request just made may not be there
yet.`,
		Example: `  gw usage payload req-7f3a9c
  gw usage payload 0d55f306-54d1-4eb5-bb1b-59a32dbf5d4f | jq .request`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.RequestID = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return usagePayloadRun(cmd.Context(), opts)
		},
	}
	return cmd
}

func usagePayloadRun(ctx context.Context, opts *PayloadOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	org, err := s.RequireOrg()
	if err != nil {
		return err
	}
	scope := client.OrgScope(org)
	events, err := c.UsageEventsOfRequest(ctx, scope, opts.RequestID)
	if client.IsStatus(err, http.StatusForbidden) && s.Workspace != "" {
		scope = client.WorkspaceScope(org, s.Workspace)
		events, err = c.UsageEventsOfRequest(ctx, scope, opts.RequestID)
	}
	if err != nil {
		return err
	}
	ids := make([]string, 0, len(events))
	for _, e := range events {
		ids = append(ids, e.ID.String())
	}
	if len(ids) == 0 {
		if _, err := uuid.Parse(opts.RequestID); err != nil {
			return noUsageEvent(ctx, c, org, opts.RequestID)
		}
		ids = append(ids, opts.RequestID)
	}
	var out []wire.UsagePayload
	for _, id := range ids {
		p, err := c.UsagePayload(ctx, scope, id)
		if err != nil {
			return err
		}
		out = append(out, p)
	}
	enc := json.NewEncoder(opts.IO.Out)
	enc.SetIndent("", "  ")
	for _, p := range out {
		if err := enc.Encode(p); err != nil {
			return fmt.Errorf("print payload: %w", err)
		}
	}
	return nil
}
