package budgets

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/cmdutil/budgetstate"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/tags"
	"github.com/gw-gateway/gw/wire"
)

// CreateForTagOptions configure gw budgets create-for-tag.
type CreateForTagOptions struct {
	IO        *cmdutil.IOStreams
	Client    func() (*client.Client, cmdutil.Settings, error)
	Output    cmdutil.Output
	TagKey    string
	TagValue  string
	AmountUSD string
	Period    string
	Name      string
}

// NewCmdCreateForTag builds `gw budgets create-for-tag`.
func NewCmdCreateForTag(f *cmdutil.Factory, runF func(context.Context, *CreateForTagOptions) error) *cobra.Command {
	opts := &CreateForTagOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "create-for-tag KEY=VALUE --amount USD --period day|month [--name NAME]",
		Short: "Create a shared budget for the workspace's keys carrying a tag (a cost centre)",
		Long: `Create a budget for a cost centre: the workspace's inference keys carrying the
tag KEY=VALUE share one budget of --amount USD per --period. It is an
ordinary policy (gw policies list shows it): a selected_keys target and a
budget rule with aggregation shared. gw keeps its key list on the keys that
carry the tag: issuing, re-tagging or revoking a key of the workspace
rewrites the list in the same change, so a key gaining the tag is held to the
budget from its next request and one losing it is free of it. The list
starts with the marker tag:KEY=VALUE, which matches no key. Delete the
policy to delete the budget.`,
		Example: `  gw budgets create-for-tag team=search --amount 100 --period month
  gw budgets create-for-tag env=staging --amount 5 --period day --workspace research --name staging-daily`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			k, v, ok := strings.Cut(args[0], "=")
			if !ok || k == "" || v == "" {
				return cmdutil.UsageError{Err: fmt.Errorf("the tag is KEY=VALUE, e.g. team=search, not %q", args[0])}
			}
			if m := tags.CheckKey(k); m != "" {
				return cmdutil.UsageError{Err: fmt.Errorf("the tag's KEY %q: %s", k, m)}
			}
			if m := tags.CheckValue(v); m != "" {
				return cmdutil.UsageError{Err: fmt.Errorf("the tag's VALUE %q: %s", v, m)}
			}
			opts.TagKey, opts.TagValue = k, v
			if err := cmdutil.RequireFlags(cmd.Flags(), "amount", "period"); err != nil {
				return err
			}
			if err := checkAmountFlag("amount", opts.AmountUSD); err != nil {
				return err
			}
			if err := cmdutil.OneOf("period", opts.Period, "day", "month"); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return cmdutil.WithFlags(budgetsCreateForTagRun(cmd.Context(), opts), tagBudgetFields...)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	cmd.Flags().StringVar(&opts.AmountUSD, "amount", "", "the budget in USD per period, an exact decimal (100, 12.50)")
	cmd.Flags().StringVar(&opts.Period, "period", "", "day or month (UTC)")
	cmd.Flags().StringVar(&opts.Name, "name", "", "the policy's name (default budget-KEY-VALUE)")
	return cmd
}

// tagBudgetFields are the request's fields and the flags that set them.
var tagBudgetFields = []cmdutil.FlagField{
	{Loc: "body.amount_usd", Flag: "--amount", Want: amountWant},
	{Loc: "body.period", Flag: "--period", Want: "day or month"},
	{Loc: "body.name", Flag: "--name"},
	{Loc: "body.tag_key", Flag: "the tag's KEY", Input: true},
	{Loc: "body.tag_value", Flag: "the tag's VALUE", Input: true},
}

// amountWant is what an amount of money flag takes.
const amountWant = "a non-negative decimal number of USD, e.g. 12.50"

// amountPattern is the API's decimal (server/policy's decimalPattern).
var amountPattern = regexp.MustCompile(`^\d+(?:\.\d+)?$`)

// checkAmountFlag checks an amount of USD before it is sent, so that
// the message names the flag; the server checks it again (its precision
// too).
func checkAmountFlag(flag, v string) error {
	if !amountPattern.MatchString(v) {
		return cmdutil.UsageError{Err: fmt.Errorf("--%s must be %s, not %q", flag, amountWant, v)}
	}
	return nil
}

func budgetsCreateForTagRun(ctx context.Context, opts *CreateForTagOptions) error {
	c, org, ws, err := cmdutil.WorkspaceClient(opts.Client)
	if err != nil {
		return err
	}
	tb, err := c.CreateTagBudget(ctx, org, ws, wire.TagBudgetCreate{Name: opts.Name, TagKey: opts.TagKey, TagValue: opts.TagValue,
		AmountUSD: opts.AmountUSD, Period: opts.Period})
	if err != nil {
		return err
	}
	if opts.Output.Format == cmdutil.OutputTable {
		fmt.Fprintf(opts.IO.ErrOut, "Created policy %s: a %s USD %s budget shared by the keys tagged %s=%s (%d now).\n",
			tb.Policy.Name, cmdutil.MoneyCell(opts.AmountUSD), opts.Period, tb.TagKey, tb.TagValue, tagBudgetKeys(tb))
	}
	return opts.Output.Print(opts.IO, tb, func() cmdutil.Table {
		return cmdutil.DetailTable("policy_id", tb.PolicyID.String(), "name", tb.Policy.Name, "tag", tb.TagKey+"="+tb.TagValue,
			"keys", fmt.Sprint(tagBudgetKeys(tb)), "amount_usd", cmdutil.MoneyCell(opts.AmountUSD), "period", opts.Period)
	})
}

// tagBudgetKeys counts the keys a tag budget covers.
func tagBudgetKeys(tb wire.TagBudget) int {
	var def struct {
		Target struct {
			KeyIDs []string `json:"key_ids"`
		} `json:"target"`
	}
	if err := json.Unmarshal(tb.Policy.Definition, &def); err != nil {
		return 0
	}
	return budgetstate.SelectedKeyCount(def.Target.KeyIDs)
}
