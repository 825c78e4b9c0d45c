package cli

import (
	"context"
	"errors"
	"io"

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

	flagField      = cmdutil.FlagField
	secretInput    = cmdutil.SecretInput
	resourcePaging = cmdutil.Paging
	expiryFlags    = cmdutil.ExpiryFlags
	renameFlags    = cmdutil.RenameFlags
)

// Output formats (cmdutil's).
const (
	OutputTable = cmdutil.OutputTable
	OutputWide  = cmdutil.OutputWide
	OutputJSON  = cmdutil.OutputJSON
	OutputYAML  = cmdutil.OutputYAML
)

var (
	errNotLoggedIn        = cmdutil.ErrNotLoggedIn
	outputFormats         = cmdutil.OutputFormats
	newViper              = cmdutil.NewViper
	serverBase            = cmdutil.ServerBase
	sameServer            = cmdutil.SameServer
	addOutputFlag         = cmdutil.AddOutputFlag
	checkOutput           = cmdutil.CheckOutput
	moneyCell             = cmdutil.MoneyCell
	addYesFlag            = cmdutil.AddYesFlag
	describeForPrompt     = cmdutil.DescribeForPrompt
	addPagingFlags        = cmdutil.AddPagingFlags
	exclusiveFlags        = cmdutil.ExclusiveFlags
	requireFlags          = cmdutil.RequireFlags
	oneOf                 = cmdutil.OneOf
	addExpiryFlags        = cmdutil.AddExpiryFlags
	permissionList        = cmdutil.PermissionList
	scopeFor              = cmdutil.ScopeFor
	checkScope            = cmdutil.CheckScope
	memberRef             = cmdutil.MemberRef
	detailTable           = cmdutil.DetailTable
	deletedTable          = cmdutil.DeletedTable
	timeCell              = cmdutil.TimeCell
	dateCell              = cmdutil.DateCell
	uuidCell              = cmdutil.UUIDCell
	orDash                = cmdutil.OrDash
	withFlags             = cmdutil.WithFlags
	addSecretInputFlags   = cmdutil.AddSecretInputFlags
	Version               = cmdutil.Version
	since                 = cmdutil.Since
	sleepCtx              = cmdutil.SleepCtx
	newNameBookOf         = cmdutil.NewNameBook
	resolveInferenceKey   = cmdutil.ResolveInferenceKey
	resolveManagementKey  = cmdutil.ResolveManagementKey
	resolveServiceAccount = cmdutil.ResolveServiceAccount
)

func followPages[T any](ctx context.Context, p resourcePaging, errOut io.Writer, fetch func(ctx context.Context, limit int, cursor string) (wire.Page[T], error)) ([]T, error) {
	return cmdutil.FollowPages(ctx, p, errOut, fetch)
}

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
