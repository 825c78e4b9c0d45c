package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/wire"
)

// Helpers shared by the resource command groups (orgs, workspaces, members,
// keys, credentials, catalog, activity, …).

// Paging is how a paginated list (organizations, activity) is read:
// one page by default, --all follows next_cursor to the end.
type Paging struct {
	// Limit is the page size (1 to 200); 0 leaves it to the server (50).
	Limit int
	// All follows the cursors through every page.
	All bool
	// Cursor starts from a page.next_cursor a previous call printed.
	Cursor string
}

func AddPagingFlags(cmd *cobra.Command, p *Paging) {
	cmd.Flags().IntVar(&p.Limit, "limit", 0, "page size, 1 to 200 (default: the server's, 50); without --all only one page is shown")
	cmd.Flags().BoolVar(&p.All, "all", false, "follow the cursors and show every page")
	cmd.Flags().StringVar(&p.Cursor, "cursor", "", "start at this page.next_cursor of an earlier listing")
}

func (p Paging) Check() error {
	if p.Limit != 0 && (p.Limit < 1 || p.Limit > 200) {
		return UsageError{fmt.Errorf("--limit must be between 1 and 200, not %d", p.Limit)}
	}
	return nil
}

// FollowPages reads one page, or every page with --all. When a single page
// leaves more behind, it says so on stderr with the cursor to go on from,
// so a person is not misled into thinking the list is complete and a
// script can page on its own.
func FollowPages[T any](ctx context.Context, p Paging, errOut io.Writer, fetch func(ctx context.Context, limit int, cursor string) (wire.Page[T], error)) ([]T, error) {
	items := []T{}
	cursor := p.Cursor
	for {
		page, err := fetch(ctx, p.Limit, cursor)
		if err != nil {
			return nil, err
		}
		items = append(items, page.Data...)
		next := page.Page.NextCursor
		if next == nil || *next == "" {
			return items, nil
		}
		if !p.All {
			fmt.Fprintf(errOut, "more results: pass --all, or --cursor %s for the next page\n", *next)
			return items, nil
		}
		cursor = *next
	}
}

// ExclusiveFlags fails when more than one of the named flags was set. It
// is a usage error (exit 2), which cobra's own flag groups do not give.
func ExclusiveFlags(fs *pflag.FlagSet, names ...string) error {
	var set []string
	for _, n := range names {
		if fs.Changed(n) {
			set = append(set, "--"+n)
		}
	}
	if len(set) > 1 {
		return UsageError{fmt.Errorf("%s cannot be used together", strings.Join(set, " and "))}
	}
	return nil
}

// RequireFlags fails, as a usage error, when a named flag was not set.
func RequireFlags(fs *pflag.FlagSet, names ...string) error {
	var missing []string
	for _, n := range names {
		if !fs.Changed(n) {
			missing = append(missing, "--"+n)
		}
	}
	if len(missing) > 0 {
		return UsageError{fmt.Errorf("required flag(s) %s not set", strings.Join(missing, ", "))}
	}
	return nil
}

// OneOf checks an enumerated flag value.
func OneOf(flag, value string, allowed ...string) error {
	for _, a := range allowed {
		if value == a {
			return nil
		}
	}
	return UsageError{fmt.Errorf("--%s must be one of %s, not %q", flag, strings.Join(allowed, ", "), value)}
}

// ExpiryFlags set a key's expiry, relative (--expires-in) or absolute
// (--expires-at); neither means the key does not expire.
type ExpiryFlags struct {
	In string
	At string
}

func AddExpiryFlags(cmd *cobra.Command, e *ExpiryFlags) {
	cmd.Flags().StringVar(&e.In, "expires-in", "", "expire after this long, e.g. 90d, 12h or 30m")
	cmd.Flags().StringVar(&e.At, "expires-at", "", "expire at this time (RFC 3339, e.g. 2026-12-31T00:00:00Z)")
}

// resolve turns the flags into a time; now anchors --expires-in.
func (e ExpiryFlags) Resolve(now time.Time) (*time.Time, error) {
	switch {
	case e.In != "" && e.At != "":
		return nil, UsageError{errors.New("--expires-in and --expires-at cannot be used together")}
	case e.In != "":
		d, err := parseLifetime(e.In)
		if err != nil {
			return nil, UsageError{fmt.Errorf("--expires-in: %w", err)}
		}
		t := now.Add(d).UTC().Truncate(time.Second)
		return &t, nil
	case e.At != "":
		t, err := time.Parse(time.RFC3339, e.At)
		if err != nil {
			return nil, UsageError{fmt.Errorf("--expires-at must be an RFC 3339 time such as 2026-12-31T00:00:00Z: %v", err)}
		}
		if !t.After(now) {
			return nil, UsageError{fmt.Errorf("--expires-at %s is not in the future", e.At)}
		}
		return &t, nil
	}
	return nil, nil
}

// parseLifetime is time.ParseDuration plus whole days ("90d"), the unit
// key lifetimes are usually thought in.
func parseLifetime(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("%q is not a positive number of days", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as 90d, 12h or 30m", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q is not positive", s)
	}
	return d, nil
}

// PermissionList splits comma-separated --permissions values and checks
// each name locally, so a typo fails before anything is sent.
func PermissionList(values []string) ([]string, error) {
	var out []string
	for _, v := range values {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p == "" {
				continue
			}
			if !auth.Known(p) {
				return nil, UsageError{fmt.Errorf("unknown permission %q (see docs/permissions.md)", p)}
			}
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, UsageError{errors.New("--permissions needs at least one permission")}
	}
	return out, nil
}

// ScopeFor maps a --scope word to where the resource lives, taking the
// organization and workspace from the settings. instanceWord is what the
// group calls the instance level ("instance" for keys and activity,
// "platform" for provider credentials).
func ScopeFor(s Settings, level, instanceWord string) (client.Scope, error) {
	switch level {
	case instanceWord:
		return client.InstanceScope(), nil
	case "org":
		org, err := s.RequireOrg()
		return client.OrgScope(org), err
	case "workspace":
		org, ws, err := s.RequireWorkspace()
		return client.WorkspaceScope(org, ws), err
	}
	return client.Scope{}, UsageError{fmt.Errorf("--scope must be %s, org or workspace, not %q", instanceWord, level)}
}

// CheckScope checks a --scope word against the levels a command acts at
// and settles it against the global --workspace and --org (issue 26,
// row 3). --workspace means "this workspace" in every command: named on
// the command line, it makes workspace the level of a command that acts
// at several when --scope is not given, and it contradicts a --scope that
// names another level, which would otherwise ignore it without a word.
// --org beside the instance level is the same contradiction. GW_WORKSPACE,
// GW_ORG and the context only supply what a level needs; they never
// choose the level, since they are there for every command.
func CheckScope(cmd *cobra.Command, scope *string, levels ...string) error {
	if err := OneOf("scope", *scope, levels...); err != nil {
		return err
	}
	fl := cmd.Flags()
	given := func(name string) *pflag.Flag {
		if f := fl.Lookup(name); f != nil && f.Changed {
			return f
		}
		return nil
	}
	if ws := given("workspace"); ws != nil && slices.Contains(levels, "workspace") {
		if !fl.Changed("scope") {
			*scope = "workspace"
			return nil
		}
		if *scope != "workspace" {
			return UsageError{fmt.Errorf("--workspace %s names a workspace, but --scope %s acts on %s: pass --scope workspace, or drop --workspace",
				ws.Value, *scope, levelNoun(*scope))}
		}
	}
	if org := given("org"); org != nil && *scope != "org" && *scope != "workspace" {
		return UsageError{fmt.Errorf("--org %s names an organization, but --scope %s acts on %s: pass --scope org, or drop --org",
			org.Value, *scope, levelNoun(*scope))}
	}
	return nil
}

// levelNoun is what a --scope word acts on, for messages.
func levelNoun(level string) string {
	switch level {
	case "org":
		return "the organization"
	case "workspace":
		return "the workspace"
	}
	return "the whole instance"
}

// MemberRef resolves a user given by UUID or by email to the UUID of an
// organization member; emails are looked up in the member list so people
// need not copy UUIDs around.
func MemberRef(ctx context.Context, c *client.Client, org, ref string) (uuid.UUID, error) {
	if id, err := uuid.Parse(ref); err == nil {
		return id, nil
	}
	if !strings.Contains(ref, "@") {
		return uuid.Nil, UsageError{fmt.Errorf("%q is neither a user UUID nor an email address", ref)}
	}
	members, err := c.ListMembers(ctx, org)
	if err != nil {
		return uuid.Nil, err
	}
	for _, m := range members {
		if strings.EqualFold(m.Email, ref) {
			return m.UserID, nil
		}
	}
	return uuid.Nil, fmt.Errorf("no member of organization %s has the email %s", org, ref)
}

// DeletedTable is the table of what a delete answered.
func DeletedTable(d wire.Deleted) Table {
	return DetailTable("id", d.ID.String(), "deleted_at", TimeCell(&d.DeletedAt))
}

// DetailTable is the table of one object: a row per field.
func DetailTable(pairs ...string) Table {
	t := Table{Headers: []string{"field", "value"}}
	for i := 0; i+1 < len(pairs); i += 2 {
		t.Rows = append(t.Rows, []string{pairs[i], pairs[i+1]})
	}
	return t
}

// TimeCell formats a timestamp for a table; nil (never) is "-".
func TimeCell(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// DateCell is a timestamp's UTC day, for tables where the time of day
// would cost more room than it says; nil (never) is "-".
func DateCell(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.DateOnly)
}

// UUIDCell formats an optional UUID for a table.
func UUIDCell(id *uuid.UUID) string {
	if id == nil {
		return "-"
	}
	return id.String()
}

// OrDash keeps empty table cells visible (and awk columns aligned).
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// RenameFlags are an update command's --name and --slug.
type RenameFlags struct{ name, slug string }

func (r *RenameFlags) Add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&r.name, "name", "", "new display name")
	cmd.Flags().StringVar(&r.slug, "slug", "", "new slug; links and configurations using the old one stop working")
}

// Read returns only what was given, so an update never resets a field the
// user did not mention; giving neither is a usage error.
func (r *RenameFlags) Read(cmd *cobra.Command) (name, slug *string, err error) {
	if cmd.Flags().Changed("name") {
		name = &r.name
	}
	if cmd.Flags().Changed("slug") {
		slug = &r.slug
	}
	if name == nil && slug == nil {
		return nil, nil, UsageError{errors.New("nothing to change: pass --name or --slug")}
	}
	return name, slug, nil
}
