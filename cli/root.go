// Package cli is gw's command tree: the root, which gathers the command
// groups (a package each under cli/, gh-style) and runs them. Each command
// is an options struct holding what it uses (its streams, a client
// constructor, its cmdutil.Output and flags), a constructor taking the
// cmdutil.Factory and an optional runF (so tests can check flag parsing),
// and a run function. Nothing records which command is running: each
// prints through its own Output.
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/activity"
	"github.com/gw-gateway/gw/cli/admin"
	"github.com/gw-gateway/gw/cli/aliases"
	"github.com/gw-gateway/gw/cli/auth"
	"github.com/gw-gateway/gw/cli/batches"
	"github.com/gw-gateway/gw/cli/budgets"
	"github.com/gw-gateway/gw/cli/catalog"
	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/credentials"
	"github.com/gw-gateway/gw/cli/dataplanes"
	"github.com/gw-gateway/gw/cli/db"
	"github.com/gw-gateway/gw/cli/guardrails"
	"github.com/gw-gateway/gw/cli/inferencekeys"
	"github.com/gw-gateway/gw/cli/instance"
	"github.com/gw-gateway/gw/cli/invitations"
	"github.com/gw-gateway/gw/cli/keys"
	"github.com/gw-gateway/gw/cli/mcp"
	"github.com/gw-gateway/gw/cli/members"
	"github.com/gw-gateway/gw/cli/models"
	"github.com/gw-gateway/gw/cli/oauth"
	"github.com/gw-gateway/gw/cli/orgs"
	"github.com/gw-gateway/gw/cli/policies"
	"github.com/gw-gateway/gw/cli/scimtokens"
	"github.com/gw-gateway/gw/cli/serve"
	"github.com/gw-gateway/gw/cli/serviceaccounts"
	"github.com/gw-gateway/gw/cli/status"
	"github.com/gw-gateway/gw/cli/toolpolicies"
	"github.com/gw-gateway/gw/cli/usage"
	"github.com/gw-gateway/gw/cli/version"
	"github.com/gw-gateway/gw/cli/workspaces"
	"github.com/gw-gateway/gw/client"
)

// Exit codes (cmdutil's; documented in README.md and docs/cli.md).
const (
	ExitOK      = cmdutil.ExitOK
	ExitError   = cmdutil.ExitError
	ExitUsage   = cmdutil.ExitUsage
	ExitDiffers = cmdutil.ExitDiffers
	ExitAuth    = cmdutil.ExitAuth
)

// exitStatus is an outcome that is no failure but has its own exit code,
// such as policies diff finding differences.
type exitStatus interface {
	error
	ExitStatus() int
}

// NewRootCmd builds the command tree.
func NewRootCmd(f *cmdutil.Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "gw",
		Short: "gw is an LLM routing gateway: server and client in one binary",
		Long: `gw is an LLM routing gateway: server and client in one binary.

Start here: run a server (gw serve), log the CLI in to it through the browser
(gw login), then give it a provider key, a workspace and an inference key, and
send requests to /inf/v1 with that key. The examples below are those steps;
README.md, "Day one", walks them in full, as far as a remote data plane.`,
		Example: `  # a server on http://127.0.0.1:8080: its log prints a one-time setup URL
  gw serve
  # the CLI, logged in through the browser, and who it is
  gw login --server http://127.0.0.1:8080
  gw whoami
  # a provider key (read from a file, never a flag), a workspace, an inference key
  gw credentials create --provider openai --label main --secret-file openai.key
  gw workspaces create --name Search --slug search
  gw inference-keys create --name my-app --workspace search
  # what the key may call, and what it costs
  gw models list --key sk-gw-…
  gw usage report --by model`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return cmdutil.UsageError{Err: err} })
	cmdutil.AddGlobalFlags(root)
	f.UseGlobalFlags(root)
	if f.Browser == nil {
		f.Browser = cmdutil.SystemBrowser{}
	}
	root.AddCommand(
		serve.NewCmd(f, nil),
		version.NewCmd(f, nil),
		db.NewCmd(f),
		admin.NewCmd(f),
		auth.NewCmdLogin(f, nil),
		auth.NewCmdLogout(f, nil),
		auth.NewCmdWhoami(f, nil),
		auth.NewCmdContext(f),
		policies.NewCmd(f),
		aliases.NewCmd(f),
		budgets.NewCmd(f, nil),
		orgs.NewCmd(f),
		workspaces.NewCmd(f),
		members.NewCmd(f),
		invitations.NewCmd(f),
		serviceaccounts.NewCmd(f),
		scimtokens.NewCmd(f),
		keys.NewCmd(f),
		inferencekeys.NewCmd(f),
		credentials.NewCmd(f),
		mcp.NewCmd(f),
		toolpolicies.NewCmd(f),
		oauth.NewCmd(f),
		guardrails.NewCmd(f),
		catalog.NewCmd(f),
		models.NewCmd(f),
		activity.NewCmd(f),
		usage.NewCmd(f),
		batches.NewCmd(f),
		dataplanes.NewCmd(f),
		status.NewCmd(f, nil),
		instance.NewCmd(f),
	)
	addDynamicCompletion(f, root)
	addExamples(root)
	refuseUnknownSubcommands(root)
	return root
}

// refuseUnknownSubcommands makes `gw policies aply` what `gw aply` is: a
// usage error (exit 2) with suggestions. Cobra checks a group's arguments
// only at the root; below it, a group without a run function prints its
// help for any word and exits 0, so a typo in a script passes unnoticed.
func refuseUnknownSubcommands(cmd *cobra.Command) {
	for _, sub := range cmd.Commands() {
		refuseUnknownSubcommands(sub)
	}
	if !cmd.HasParent() || !cmd.HasSubCommands() || cmd.Runnable() {
		return
	}
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		return unknownSubcommand(cmd, args[0])
	}
}

// unknownSubcommand is cobra's own message for an unknown command at the
// root, for a group below it.
func unknownSubcommand(cmd *cobra.Command, word string) error {
	msg := fmt.Sprintf("unknown command %q for %q", word, cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's default, which it sets only for the root
	}
	if suggestions := cmd.SuggestionsFor(word); len(suggestions) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(suggestions, "\n\t")
	}
	return cmdutil.UsageError{Err: errors.New(msg + fmt.Sprintf("\n\nRun '%s --help' for usage.", cmd.CommandPath()))}
}

// Main runs gw with the process's arguments and returns the exit code.
func Main() int {
	f := &cmdutil.Factory{IO: cmdutil.SystemIO()}
	return Run(context.Background(), f, os.Args[1:])
}

// Run executes the command tree with args and maps the outcome to an exit
// code.
func Run(ctx context.Context, f *cmdutil.Factory, args []string) int {
	root := NewRootCmd(f)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var st exitStatus
	if errors.As(err, &st) {
		fmt.Fprintln(f.IO.ErrOut, err)
		return st.ExitStatus()
	}
	err = explainRefusal(ctx, f, err)
	fmt.Fprintln(f.IO.ErrOut, "error:", err)
	return cmdutil.ExitCode(err)
}

// explainRefusal turns the server's "out of scope … does not reach
// organization X" into "not found" when X is none of the caller's
// organizations: the server may not say whether X exists to a key scoped
// elsewhere, but the caller's own list tells a typo from a real
// organization (issue 22, row 10).
func explainRefusal(ctx context.Context, f *cmdutil.Factory, err error) error {
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Status != 403 || !strings.Contains(ae.Detail, "does not reach organization") {
		return err
	}
	c, s, cerr := f.Client()
	if cerr != nil || s.Org == "" {
		return err
	}
	page, lerr := c.ListOrganizations(ctx, 200, "")
	if lerr != nil {
		return err
	}
	var mine []string
	for _, o := range page.Data {
		if o.Slug == s.Org || o.ID.String() == s.Org {
			return err // one of theirs: out of scope is the cause
		}
		mine = append(mine, o.Slug)
	}
	return fmt.Errorf("organization %q not found among your organizations (%s): check --org, GW_ORG or the context's organization",
		s.Org, strings.Join(mine, ", "))
}
