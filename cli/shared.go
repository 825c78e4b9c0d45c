package cli

import (
	"context"
	"errors"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// usageError is cmdutil.UsageError as the commands still in this package
// write it (their own type, so that their unkeyed literals stay valid);
// Run maps either to exit 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// isUsageError: err is a usage error of cmdutil's, of this package's, or
// one of cobra's own.
func isUsageError(err error) bool {
	var ue usageError
	var cue cmdutil.UsageError
	return errors.As(err, &ue) || errors.As(err, &cue) || cmdutil.IsCobraUsageError(err)
}

// The names below are cmdutil's, under the names the commands still in
// this package (policies, usage and those not yet moved to a package of
// their own) were written with; each goes when its last user moves.

type (
	// Factory hands commands their dependencies (cmdutil.Factory).
	Factory = cmdutil.Factory
	// IOStreams are a command's input and outputs (cmdutil.IOStreams).
	IOStreams = cmdutil.IOStreams
	// Settings are the effective connection settings (cmdutil.Settings).
	Settings = cmdutil.Settings
	// Table is what a command shows in table form (cmdutil.Table).
	Table = cmdutil.Table

	flagField = cmdutil.FlagField
)

// Output formats (cmdutil's).
const (
	OutputTable = cmdutil.OutputTable
	OutputJSON  = cmdutil.OutputJSON
	OutputYAML  = cmdutil.OutputYAML
)

var (
	outputFormats = cmdutil.OutputFormats
	addOutputFlag = cmdutil.AddOutputFlag
	checkOutput   = cmdutil.CheckOutput
	moneyCell     = cmdutil.MoneyCell
	addYesFlag    = cmdutil.AddYesFlag
	requireFlags  = cmdutil.RequireFlags
	oneOf         = cmdutil.OneOf
	scopeFor      = cmdutil.ScopeFor
	checkScope    = cmdutil.CheckScope
	detailTable   = cmdutil.DetailTable
	orDash        = cmdutil.OrDash
	withFlags     = cmdutil.WithFlags
	Version       = cmdutil.Version
	since         = cmdutil.Since
	newNameBookOf = cmdutil.NewNameBook
)

// nameBook is cmdutil.NameBook under the method names the commands still
// here call.
type nameBook struct{ b *cmdutil.NameBook }

func newNameBook(c *client.Client) *nameBook { return &nameBook{newNameBookOf(c)} }

func (n *nameBook) orgName(ctx context.Context, id string) string { return n.b.OrgName(ctx, id) }
func (n *nameBook) workspaceName(ctx context.Context, org, id string) string {
	return n.b.WorkspaceName(ctx, org, id)
}
func (n *nameBook) memberName(ctx context.Context, org, id string) string {
	return n.b.MemberName(ctx, org, id)
}
func (n *nameBook) inferenceKeyName(ctx context.Context, org, ws, id string) string {
	return n.b.InferenceKeyName(ctx, org, ws, id)
}
func (n *nameBook) scopeLine(ctx context.Context, s wire.KeyScope) string {
	return n.b.ScopeLine(ctx, s)
}
