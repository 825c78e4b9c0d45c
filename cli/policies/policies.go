// Package policies is `gw policies`: the workspace's routing and budget
// policies, applied from a file, diffed, explained for a key and a model.
package policies

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/cmdutil/budgetstate"
	"github.com/gw-gateway/gw/cli/cmdutil/declfile"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/wire"
)

// NewCmd builds `gw policies`, the workspace's inference policies.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policies",
		Short: "Manage the workspace's inference policies declaratively",
		Long: `Inference policies decide which models a workspace's inference keys may use,
at what price, with which limits, budgets and fallbacks (DESIGN §6).

Keep them in a file and apply it: gw policies apply -f policies.yaml creates,
updates, enables or disables the workspace's policies to match the file,
matching them by name, and says "no changes" when they already match.`,
	}
	cmd.AddCommand(
		NewCmdList(f, nil),
		NewCmdGet(f, nil),
		NewCmdApply(f, nil),
		NewCmdDiff(f, nil),
		NewCmdDelete(f, nil),
		NewCmdExplain(f, nil),
	)
	return cmd
}

// ListOptions configure gw policies list.
type ListOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
}

// NewCmdList builds `gw policies list`.
func NewCmdList(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the workspace's policies",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return policiesListRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	return cmd
}

func policiesListRun(ctx context.Context, opts *ListOptions) error {
	c, org, ws, err := cmdutil.WorkspaceClient(opts.Client)
	if err != nil {
		return err
	}
	ps, err := c.ListPolicies(ctx, org, ws)
	if err != nil {
		return err
	}
	slices.SortFunc(ps, func(a, b wire.Policy) int { return strings.Compare(a.Name, b.Name) })
	return opts.Output.Print(opts.IO, ps, func() cmdutil.Table {
		t := cmdutil.Table{Headers: []string{"name", "id", "enabled", "target", "rules", "updated"}}
		for _, p := range ps {
			t.Rows = append(t.Rows, []string{p.Name, p.ID.String(), strconv.FormatBool(p.Enabled), describePolicyTarget(policyDef(p).Target),
				strconv.Itoa(len(policyDef(p).Rules)), p.UpdatedAt.UTC().Format(time.RFC3339)})
		}
		return t
	})
}

func describePolicyTarget(t policy.Target) string {
	switch t.Kind {
	case policy.TargetSelectedUsers:
		return fmt.Sprintf("%s (%d)", t.Kind, len(t.UserIDs))
	case policy.TargetSelectedKeys:
		if tag := budgetstate.SelectedKeysTag(t.KeyIDs); tag != "" {
			return fmt.Sprintf("%s (%d, tag %s)", t.Kind, budgetstate.SelectedKeyCount(t.KeyIDs), tag)
		}
		return fmt.Sprintf("%s (%d)", t.Kind, budgetstate.SelectedKeyCount(t.KeyIDs))
	}
	return string(t.Kind)
}

// findPolicy resolves NAME_OR_ID among the workspace's policies. An id
// wins over a name, since a name could look like another policy's id but
// an id is never ambiguous.
func findPolicy(ctx context.Context, c *client.Client, org, ws, ref string) (*wire.Policy, error) {
	ps, err := c.ListPolicies(ctx, org, ws)
	if err != nil {
		return nil, err
	}
	for i := range ps {
		if strings.EqualFold(ps[i].ID.String(), ref) {
			return &ps[i], nil
		}
	}
	for i := range ps {
		if ps[i].Name == ref {
			return &ps[i], nil
		}
	}
	return nil, fmt.Errorf("no policy named %q (or with that id) in workspace %s", ref, ws)
}

// GetOptions configure gw policies get.
type GetOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	Ref    string
}

// NewCmdGet builds `gw policies get`.
func NewCmdGet(f *cmdutil.Factory, runF func(context.Context, *GetOptions) error) *cobra.Command {
	opts := &GetOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "get NAME_OR_ID",
		Short: "Show one policy with its definition",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			opts.Ref = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return policiesGetRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	return cmd
}

func policiesGetRun(ctx context.Context, opts *GetOptions) error {
	c, org, ws, err := cmdutil.WorkspaceClient(opts.Client)
	if err != nil {
		return err
	}
	p, err := findPolicy(ctx, c, org, ws, opts.Ref)
	if err != nil {
		return err
	}
	if opts.Output.Format != cmdutil.OutputTable {
		return opts.Output.Print(opts.IO, p, nil)
	}
	// One policy reads best as its fields and its definition, not as a
	// one-row table that could not show the definition.
	def, err := definitionYAML(policyDef(*p))
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "name:       %s\nid:         %s\nenabled:    %t\ncreated_at: %s\nupdated_at: %s\ndefinition:\n",
		p.Name, p.ID, p.Enabled, p.CreatedAt.UTC().Format(time.RFC3339), p.UpdatedAt.UTC().Format(time.RFC3339))
	for _, line := range declfile.TextLines(def) {
		b.WriteString("  " + line + "\n")
	}
	if _, err := io.WriteString(opts.IO.Out, b.String()); err != nil {
		return err
	}
	// The budgets' state is for people reading the policy; -o json and
	// -o yaml stay the API's policy resource, which scripts and
	// gw policies apply read, and gw budgets -o json has the state.
	if hasBudgetRules(policyDef(*p)) {
		return budgetstate.WritePolicySection(ctx, opts.IO.Out, c, org, ws, p)
	}
	return nil
}

func hasBudgetRules(d policy.Definition) bool {
	return slices.ContainsFunc(d.Rules, func(r policy.Rule) bool { return r.Action.Kind == policy.ActionBudget })
}

// ApplyOptions configure gw policies apply and gw policies diff.
type ApplyOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	File   string
	Prune  bool
	DryRun bool
	Yes    bool
	// DiffOnly: gw policies diff, which plans and reports through its exit
	// code.
	DiffOnly bool
}

const policyFileHelp = `The file (YAML or JSON; -f - reads stdin) holds one policy or a list of them:

  - name: allow-cheap          # identifies the policy in the workspace
    enabled: true              # optional, default true
    definition:                # exactly as the API takes it (spec 2.3)
      target: {kind: workspace}
      rules:
        - match: {kind: all_requests}
          action: {kind: models, names: [openai/gpt-4o-mini]}
  - name: cap-costs
    definition:
      target: {kind: workspace}
      rules:
        - match: {kind: all_requests}
          action: {kind: price_limit, max_input_price_per_mtok: "1.00", max_output_price_per_mtok: "4.00"}

Policies are matched to the workspace's by name; names must be unique in the
file. Every policy is validated locally, with the server's own parser, before
anything is sent; problems are reported as FILE: policy "NAME" (#N): LOCATION.
A policy is unchanged when its definition (compared in canonical form) and its
enabled flag equal the workspace's.`

func addApplyFlags(cmd *cobra.Command, opts *ApplyOptions) {
	cmd.Flags().StringVarP(&opts.File, "file", "f", "", "policy file, YAML or JSON (- for stdin)")
	cmd.Flags().BoolVar(&opts.Prune, "prune", false, "also delete the workspace's policies that the file does not name")
}

// checkApplyFlags reports a missing -f as a usage error (exit 2) rather
// than as cobra's required-flag error, which would exit 1 as if the
// server had failed.
func checkApplyFlags(opts *ApplyOptions) error {
	if opts.File == "" {
		return cmdutil.UsageError{Err: errors.New("-f FILE is required (- reads stdin)")}
	}
	return nil
}

// NewCmdApply builds `gw policies apply`.
func NewCmdApply(f *cmdutil.Factory, runF func(context.Context, *ApplyOptions) error) *cobra.Command {
	opts := &ApplyOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Make the workspace's policies match a file",
		Long: `Create, update, enable or disable the workspace's policies so that they match
FILE, after showing what will change. Applying the same file twice changes
nothing the second time and says "no changes".

` + policyFileHelp + `

Policies in the workspace but not in the file are left alone, unless --prune
is given: then they are deleted, after a confirmation on a terminal (--yes
confirms without one). --dry-run shows the plan and changes nothing.`,
		Example: `  gw policies apply -f policies.yaml
  gw policies apply -f policies.yaml --dry-run
  gw policies apply -f policies.yaml --prune --yes
  gw policies get allow-cheap -o json | jq '{name, enabled, definition}' | gw policies apply -f -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkApplyFlags(opts); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return policiesApplyRun(cmd.Context(), opts)
		},
	}
	addApplyFlags(cmd, opts)
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "show what would change and change nothing")
	cmdutil.AddYesFlag(cmd, &opts.Yes)
	return cmd
}

// NewCmdDiff builds `gw policies diff`.
func NewCmdDiff(f *cmdutil.Factory, runF func(context.Context, *ApplyOptions) error) *cobra.Command {
	opts := &ApplyOptions{IO: f.IO, Client: f.AuthedClient, DiffOnly: true}
	cmd := &cobra.Command{
		Use:   "diff -f FILE",
		Short: "Show what apply -f FILE would change, and change nothing",
		Long: `Show what gw policies apply -f FILE would change, and change nothing.

Exit status: 0 when the workspace matches the file; 3 when it differs (the
plan is on stdout, the number of changes on stderr); 1 when the comparison
failed (server unreachable, server error, no such workspace); 2 when the file
is invalid or the command was misused; 4 when authentication failed. diff(1)
says "differs" with 1, which gw uses for every error.

` + policyFileHelp,
		Example: `  gw policies diff -f policies.yaml
  gw policies diff -f policies.yaml --prune

  # in CI: fail on drift, and tell drift from a failed check
  gw policies diff -f policies.yaml; status=$?
  [ $status -eq 3 ] && echo "workspace drifted from policies.yaml"
  exit $status`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkApplyFlags(opts); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return policiesApplyRun(cmd.Context(), opts)
		},
	}
	addApplyFlags(cmd, opts)
	return cmd
}

// policiesDifferError is diff's "there are changes": exit status 3
// (cmdutil.ExitDiffers), apart from failures. The plan on stdout is the real
// answer; this sets the status and says how many on stderr.
type policiesDifferError struct {
	file    string
	changes int
}

func (e policiesDifferError) ExitStatus() int { return cmdutil.ExitDiffers }

func (e policiesDifferError) Error() string {
	return fmt.Sprintf("the workspace differs from %s: %d %s", e.file, e.changes, declfile.Plural(e.changes, "change", "changes"))
}

func policiesApplyRun(ctx context.Context, opts *ApplyOptions) error {
	streams := opts.IO
	// The file is read and validated before any client exists, so a bad
	// file never costs a request.
	file, specs, err := readPolicyFile(opts.File, streams.In)
	if err != nil {
		return err
	}
	c, org, ws, err := cmdutil.WorkspaceClient(opts.Client)
	if err != nil {
		return err
	}
	current, err := c.ListPolicies(ctx, org, ws)
	if err != nil {
		return err
	}
	warnUnmatchedTargets(ctx, c, org, ws, streams.ErrOut, specDefinitions(specs))
	plan, err := planPolicies(file, specs, current, opts.Prune)
	if err != nil {
		return err
	}
	if err := plan.render(streams.Out); err != nil {
		return err
	}
	switch {
	case opts.DiffOnly:
		if len(plan.Steps) > 0 {
			return policiesDifferError{file: file, changes: len(plan.Steps)}
		}
		return nil
	case len(plan.Steps) == 0:
		return nil
	case opts.DryRun:
		fmt.Fprintln(streams.ErrOut, "dry run: nothing was changed")
		return nil
	}
	if n := plan.count(declfile.StepDelete); n > 0 {
		q := fmt.Sprintf("delete %d %s not in %s from workspace %s?", n, declfile.Plural(n, "policy", "policies"), file, ws)
		if err := cmdutil.Confirm(opts.IO, q, opts.Yes); err != nil {
			return err
		}
	}
	for i, s := range plan.Steps {
		msg, err := applyStep(ctx, c, org, ws, s)
		if err != nil {
			return fmt.Errorf("%s policy %q: %w (%d of %d changes were applied before it)", s.Kind, s.Name, err, i, len(plan.Steps))
		}
		fmt.Fprintln(streams.Out, msg)
	}
	fmt.Fprintf(streams.ErrOut, "applied %d %s to workspace %s\n", len(plan.Steps), declfile.Plural(len(plan.Steps), "change", "changes"), ws)
	return nil
}

// applyStep makes one change and says what it did.
func applyStep(ctx context.Context, c *client.Client, org, ws string, s planStep) (string, error) {
	switch s.Kind {
	case declfile.StepCreate:
		enabled := s.Spec.Enabled
		p, err := c.CreatePolicy(ctx, org, ws, wire.PolicyCreate{Name: s.Name, Enabled: &enabled, Definition: wireDefinition(s.Spec.Definition)})
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("created policy %q (%s)", p.Name, p.ID), nil
	case declfile.StepUpdate:
		in := wire.PolicyUpdate{Definition: wireDefinition(s.Spec.Definition)}
		if s.EnabledChanged {
			in.Enabled = &s.Spec.Enabled
		}
		p, err := c.UpdatePolicy(ctx, org, ws, s.Current.ID.String(), in)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("updated policy %q (%s)", p.Name, p.ID), nil
	case declfile.StepEnable:
		p, err := c.EnablePolicy(ctx, org, ws, s.Current.ID.String())
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("enabled policy %q (%s)", p.Name, p.ID), nil
	case declfile.StepDisable:
		p, err := c.DisablePolicy(ctx, org, ws, s.Current.ID.String())
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("disabled policy %q (%s)", p.Name, p.ID), nil
	case declfile.StepDelete:
		if _, err := c.DeletePolicy(ctx, org, ws, s.Current.ID.String()); err != nil {
			return "", err
		}
		return fmt.Sprintf("deleted policy %q (%s)", s.Name, s.Current.ID), nil
	}
	return "", fmt.Errorf("unknown plan step %q", s.Kind)
}

// DeleteOptions configure gw policies delete.
type DeleteOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Ref    string
	Yes    bool
}

// NewCmdDelete builds `gw policies delete`.
func NewCmdDelete(f *cmdutil.Factory, runF func(context.Context, *DeleteOptions) error) *cobra.Command {
	opts := &DeleteOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "delete NAME_OR_ID",
		Short: "Delete a policy (asks on a terminal; --yes otherwise)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Ref = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return policiesDeleteRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddYesFlag(cmd, &opts.Yes)
	return cmd
}

func policiesDeleteRun(ctx context.Context, opts *DeleteOptions) error {
	c, org, ws, err := cmdutil.WorkspaceClient(opts.Client)
	if err != nil {
		return err
	}
	p, err := findPolicy(ctx, c, org, ws, opts.Ref)
	if err != nil {
		return err
	}
	if err := cmdutil.Confirm(opts.IO, fmt.Sprintf("delete policy %q (%s) from workspace %s?", p.Name, p.ID, ws), opts.Yes); err != nil {
		return err
	}
	if _, err := c.DeletePolicy(ctx, org, ws, p.ID.String()); err != nil {
		return err
	}
	_, err = fmt.Fprintf(opts.IO.Out, "deleted policy %q (%s)\n", p.Name, p.ID)
	return err
}

// ExplainOptions configure gw policies explain.
type ExplainOptions struct {
	IO           *cmdutil.IOStreams
	Client       func() (*client.Client, cmdutil.Settings, error)
	Key          string
	Model        string
	Stream       bool
	Capabilities []policy.Capability
	Phase        policy.Phase
	Output       cmdutil.Output
	// Server and Tool ask the tool form: what the workspace's tool
	// policies decide for the key and this MCP tool, at list time and at
	// call time with Arguments (docs/mcp.md).
	Server    string
	Tool      string
	Arguments any
}

// NewCmdExplain builds `gw policies explain`.
func NewCmdExplain(f *cmdutil.Factory, runF func(context.Context, *ExplainOptions) error) *cobra.Command {
	opts := &ExplainOptions{IO: f.IO, Client: f.AuthedClient}
	var caps []string
	var phase, arguments string
	cmd := &cobra.Command{
		Use:   "explain --key KEY (--model MODEL | --server SERVER --tool TOOL [--arguments JSON])",
		Short: "Explain what the workspace's policies do to a request",
		Long: `Evaluate the workspace's policies for one request, exactly as the data plane
does (the same evaluator, run here), and show which policy and rule admits,
narrows or denies it, and why, then the verdict.

The request is described by the inference key that sends it (an id, or a
name that picks out one key; its owner is looked up, for selected_users
targets), the model (its provider and prices come from the workspace's
catalog; a model alias in force in the workspace has each of its targets
explained, as the data plane judges each target as if asked for by its id),
and at inference whether it streams and which capabilities it needs. --phase discovery asks instead whether the model is listed to the key,
which applies only the rules that need no request.

The scopes where the model's provider has a credential are read from the
provider credential lists; a list the caller may not read is assumed to have
one, and the output says so. --output json or yaml prints the decision.

The tool form (--server and --tool instead of --model) asks what the
workspace's tool policies and its mcp_default decide for the key and one
MCP tool (its upstream name), by the data plane's evaluator: whether
tools/list shows it, and whether a tools/call with --arguments (a JSON
object, which call rules may test) goes through; the server's own tools
filter and enabled flag are applied first.`,
		Example: `  gw policies explain --key ci-runner --model openai/gpt-4o-mini
  gw policies explain --key 3f6c… --model anthropic/claude-sonnet-4-5-20250929 --stream --capability tools
  gw policies explain --key 3f6c… --model openai/gpt-4o --phase discovery -o json
  gw policies explain --key ci-runner --model claude-opus-4-8     # an alias: each target
  gw policies explain --key ci-runner --server github --tool search_issues --arguments '{"repo": "acme/api"}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if opts.Server != "" || opts.Tool != "" || arguments != "" {
				if opts.Key == "" || opts.Server == "" || opts.Tool == "" || opts.Model != "" {
					return cmdutil.UsageError{Err: errors.New("the tool form takes --key, --server and --tool (and --arguments), not --model")}
				}
				if cmd.Flags().Changed("phase") || cmd.Flags().Changed("stream") || len(caps) > 0 {
					return cmdutil.UsageError{Err: errors.New("--phase, --stream and --capability are for models; the tool form explains both list and call")}
				}
				opts.Arguments = nil
				if arguments != "" {
					var args map[string]any
					if err := json.Unmarshal([]byte(arguments), &args); err != nil || args == nil {
						return cmdutil.UsageError{Err: errors.New("--arguments: want a JSON object, e.g. '{\"repo\": \"acme/api\"}'")}
					}
					opts.Arguments = args
				}
				if runF != nil {
					return runF(cmd.Context(), opts)
				}
				return toolExplainRun(cmd.Context(), opts)
			}
			if opts.Key == "" || opts.Model == "" {
				return cmdutil.UsageError{Err: errors.New("--key and --model are required (or --server and --tool for an MCP tool)")}
			}
			p, err := policy.ParsePhase(phase)
			if err != nil {
				return cmdutil.UsageError{Err: fmt.Errorf("--phase must be inference or discovery, not %q", phase)}
			}
			opts.Phase = p
			opts.Capabilities = nil
			for _, c := range caps {
				for _, part := range strings.Split(c, ",") {
					cp, err := policy.ParseCapability(strings.TrimSpace(part))
					if err != nil {
						return cmdutil.UsageError{Err: fmt.Errorf("--capability must be tools, reasoning or structured_output, not %q", part)}
					}
					if !slices.Contains(opts.Capabilities, cp) {
						opts.Capabilities = append(opts.Capabilities, cp)
					}
				}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return policiesExplainRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Key, "key", "", "the inference key that sends the request: its id, or its name")
	cmd.Flags().StringVar(&opts.Model, "model", "", "catalog id of the model, e.g. openai/gpt-4o-mini, or a model alias (each target explained)")
	cmd.Flags().BoolVar(&opts.Stream, "stream", false, "the request streams (inference phase)")
	cmd.Flags().StringArrayVar(&caps, "capability", nil, "a capability the request needs: tools, reasoning or structured_output (repeatable)")
	cmd.Flags().StringVar(&phase, "phase", string(policy.PhaseInference), "inference (a request) or discovery (model listing)")
	cmd.Flags().StringVar(&opts.Server, "server", "", "tool form: the MCP server's name")
	cmd.Flags().StringVar(&opts.Tool, "tool", "", "tool form: the tool's name on its server")
	cmd.Flags().StringVar(&arguments, "arguments", "", "tool form: the call's arguments, a JSON object")
	cmdutil.AddOutput(cmd, &opts.Output)
	return cmd
}

// policyExplanation is everything explain found out, for printing.
type policyExplanation struct {
	Key      wire.InferenceKey
	Model    wire.CatalogModel
	Request  policy.Request
	Policies []wire.Policy
	Decision policy.Decision
	// ScopeNotes say which credential scopes were assumed, and why.
	ScopeNotes []string
}

func policiesExplainRun(ctx context.Context, opts *ExplainOptions) error {
	c, org, ws, err := cmdutil.WorkspaceClient(opts.Client)
	if err != nil {
		return err
	}
	key, err := findInferenceKey(ctx, c, org, ws, opts.Key)
	if err != nil {
		return err
	}
	cat, err := c.GetCatalog(ctx, client.WorkspaceScope(org, ws))
	if err != nil {
		return err
	}
	ps, err := c.ListPolicies(ctx, org, ws)
	if err != nil {
		return err
	}
	ex := &explainer{c: c, org: org, ws: ws, key: key, policies: ps, opts: opts}
	warnUnmatchedTargets(ctx, c, org, ws, opts.IO.ErrOut, policyDefinitions(ps))
	if i := slices.IndexFunc(cat.Models, func(m wire.CatalogModel) bool { return m.ID == opts.Model }); i >= 0 {
		x, err := ex.explain(ctx, cat.Models[i])
		if err != nil {
			return err
		}
		if opts.Output.Format != cmdutil.OutputTable {
			return opts.Output.Print(opts.IO, x.Decision, nil)
		}
		return writePolicyExplanation(opts.IO.Out, x)
	}
	// Not a catalog model: an alias in force in the workspace, whose
	// targets the policies judge as if each were asked for by its id
	// (issue 26, row 8), as the data plane does.
	alias, level, err := aliasInForce(ctx, c, org, ws, opts.Model)
	if err != nil {
		return err
	}
	if alias == nil {
		return fmt.Errorf("model %q is neither in the workspace's catalog (retired models are not listed) nor an alias in force there (gw aliases list --workspace %s)", opts.Model, ws)
	}
	return ex.explainAlias(ctx, cat, *alias, level)
}

// explainer evaluates the workspace's policies for one key's requests.
type explainer struct {
	c        *client.Client
	org, ws  string
	key      wire.InferenceKey
	policies []wire.Policy
	opts     *ExplainOptions
}

// explain evaluates a request for one catalog model.
func (ex *explainer) explain(ctx context.Context, model wire.CatalogModel) (policyExplanation, error) {
	in, err := decimal.NewFromString(model.Pricing.InputPerMTok)
	if err != nil {
		return policyExplanation{}, fmt.Errorf("catalog input price of %s: %w", model.ID, err)
	}
	out, err := decimal.NewFromString(model.Pricing.OutputPerMTok)
	if err != nil {
		return policyExplanation{}, fmt.Errorf("catalog output price of %s: %w", model.ID, err)
	}
	scopes, notes, err := policyCredentialScopes(ctx, ex.c, ex.org, ex.ws, model)
	if err != nil {
		return policyExplanation{}, err
	}
	req := policy.Request{
		Phase: ex.opts.Phase, KeyID: ex.key.ID.String(), OwnerUserID: ex.key.UserID,
		Model: model.ID, Provider: model.Provider, InputPricePerMTok: in, OutputPricePerMTok: out,
		Stream: ex.opts.Stream, Capabilities: ex.opts.Capabilities, CredentialScopes: scopes,
	}
	evaluated := make([]policy.Policy, len(ex.policies))
	for i, p := range ex.policies {
		evaluated[i] = policy.Policy{ID: p.ID, Name: p.Name, Enabled: p.Enabled, Definition: policyDef(p)}
	}
	d := policy.Evaluate(evaluated, req)
	return policyExplanation{Key: ex.key, Model: model, Request: req, Policies: ex.policies, Decision: d, ScopeNotes: notes}, nil
}

// aliasInForce finds the alias name in force in the workspace: the
// workspace's own, else the organization's. level says whose it is.
func aliasInForce(ctx context.Context, c *client.Client, org, ws, name string) (*wire.ModelAlias, string, error) {
	for _, at := range []struct{ ws, level string }{{ws, "workspace " + ws}, {"", "organization " + org}} {
		as, err := c.ListModelAliases(ctx, org, at.ws)
		// A key of one workspace may not read the organization's list;
		// then only the workspace's aliases are known.
		if at.ws == "" && (client.IsStatus(err, http.StatusForbidden) || client.IsStatus(err, http.StatusNotFound)) {
			return nil, "", nil
		}
		if err != nil {
			return nil, "", err
		}
		if i := slices.IndexFunc(as, func(a wire.ModelAlias) bool { return a.Name == name }); i >= 0 {
			return &as[i], at.level, nil
		}
	}
	return nil, "", nil
}

// aliasTargetExplanation is one target's evaluation, for -o json|yaml.
type aliasTargetExplanation struct {
	Model    string           `json:"model"`
	Weight   int              `json:"weight"`
	Retired  bool             `json:"retired,omitempty"`
	Decision *policy.Decision `json:"decision,omitempty"`
}

// aliasExplanation is explain's answer for an alias: each target's
// decision; the alias serves when one target is allowed.
type aliasExplanation struct {
	Alias   string                   `json:"alias"`
	Of      string                   `json:"defined_by"`
	Allowed bool                     `json:"allowed"`
	Targets []aliasTargetExplanation `json:"targets"`
}

// explainAlias explains each target of the alias, then the alias's
// verdict: allowed when a target is, served by one of those by weight.
func (ex *explainer) explainAlias(ctx context.Context, cat wire.Catalog, a wire.ModelAlias, level string) error {
	res := aliasExplanation{Alias: a.Name, Of: level}
	var xs []*policyExplanation
	var allowed []string
	for _, t := range a.Targets {
		te := aliasTargetExplanation{Model: t.Model, Weight: t.Weight, Retired: t.Retired}
		i := slices.IndexFunc(cat.Models, func(m wire.CatalogModel) bool { return m.ID == t.Model })
		if t.Retired || i < 0 {
			te.Retired = true
			res.Targets, xs = append(res.Targets, te), append(xs, nil)
			continue
		}
		x, err := ex.explain(ctx, cat.Models[i])
		if err != nil {
			return err
		}
		te.Decision = &x.Decision
		if x.Decision.Allowed {
			allowed = append(allowed, fmt.Sprintf("%s (weight %d)", t.Model, t.Weight))
		}
		res.Targets, xs = append(res.Targets, te), append(xs, &x)
	}
	res.Allowed = len(allowed) > 0
	if ex.opts.Output.Format != cmdutil.OutputTable {
		return ex.opts.Output.Print(ex.opts.IO, res, nil)
	}
	w := ex.opts.IO.Out
	fmt.Fprintf(w, "alias:       %s, of %s: %s\n", a.Name, level, cmdutil.DescribeAliasTargets(a.Targets))
	fmt.Fprintln(w, "             the policies judge each target as if it were asked for by its id;")
	fmt.Fprintln(w, "             a request goes to an allowed target by weight, the others its fallbacks")
	for i, x := range xs {
		t := res.Targets[i]
		fmt.Fprintf(w, "\n== target %d of %d: %s (weight %d)\n", i+1, len(xs), t.Model, t.Weight)
		if x == nil {
			fmt.Fprintln(w, "retired from the catalog: skipped")
			continue
		}
		if err := writePolicyExplanation(w, *x); err != nil {
			return err
		}
	}
	if !res.Allowed {
		_, err := fmt.Fprintf(w, "\nalias verdict: denied: no target of %s is allowed to this request\n", a.Name)
		return err
	}
	served := allowed[0]
	if len(allowed) > 1 {
		served = "one of " + strings.Join(allowed, ", ") + ", by weight"
	}
	_, err := fmt.Fprintf(w, "\nalias verdict: allowed: served by %s\n", served)
	return err
}

// findInferenceKey resolves --key: an id, or a name, which is what people
// remember. Names need not be unique, so a name must pick out one key, or
// one active key among several (a rotated key keeps its name).
func findInferenceKey(ctx context.Context, c *client.Client, org, ws, ref string) (wire.InferenceKey, error) {
	if _, err := uuid.Parse(ref); err == nil {
		k, err := c.GetInferenceKey(ctx, org, ws, ref)
		if client.IsStatus(err, http.StatusNotFound) {
			return k, fmt.Errorf("no inference key %s in workspace %s", ref, ws)
		}
		return k, err
	}
	keys, err := c.ListInferenceKeys(ctx, org, ws)
	if err != nil {
		return wire.InferenceKey{}, err
	}
	var named, active []wire.InferenceKey
	for _, k := range keys {
		if k.Name == ref {
			named = append(named, k)
			if k.Status == wire.KeyActive {
				active = append(active, k)
			}
		}
	}
	switch {
	case len(named) == 1:
		return named[0], nil
	case len(active) == 1:
		return active[0], nil
	case len(named) == 0:
		return wire.InferenceKey{}, fmt.Errorf("no inference key named %q in workspace %s", ref, ws)
	}
	ids := make([]string, len(named))
	for i, k := range named {
		ids[i] = k.ID.String() + " (" + k.Status + ")"
	}
	return wire.InferenceKey{}, cmdutil.UsageError{Err: fmt.Errorf("%d inference keys are named %q; pass one of their ids: %s", len(named), ref, strings.Join(ids, ", "))}
}

// policyCredentialScopes says in which scopes the model's provider has a
// credential the workspace may use. The catalog's `available` tells
// whether there is any; the three credential lists tell where. A list the
// caller may not read (instance credentials need an instance key) is
// assumed to hold one, so explain never denies for a credential it cannot
// see, and the notes say what was assumed.
func policyCredentialScopes(ctx context.Context, c *client.Client, org, ws string, m wire.CatalogModel) ([]policy.CredentialScope, []string, error) {
	all := []policy.CredentialScope{policy.ScopePlatform, policy.ScopeOrg, policy.ScopeWorkspace}
	if m.Available == nil {
		return all, []string{"the catalog did not say whether a credential exists; all three scopes assumed"}, nil
	}
	if !*m.Available {
		return []policy.CredentialScope{}, nil, nil
	}
	lists := []struct {
		scope policy.CredentialScope
		at    client.Scope
	}{
		{policy.ScopePlatform, client.InstanceScope()},
		{policy.ScopeOrg, client.OrgScope(org)},
		{policy.ScopeWorkspace, client.WorkspaceScope(org, ws)},
	}
	var scopes []policy.CredentialScope
	var notes []string
	for _, l := range lists {
		creds, err := c.ListCredentials(ctx, l.at)
		var ae *client.APIError
		if errors.As(err, &ae) && (ae.Status == http.StatusForbidden || ae.Status == http.StatusNotFound) {
			scopes = append(scopes, l.scope)
			notes = append(notes, fmt.Sprintf("%s credentials are not readable with this key; a %s credential is assumed", l.scope, l.scope))
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if slices.ContainsFunc(creds, func(c wire.ProviderCredential) bool { return c.Provider == m.Provider }) {
			scopes = append(scopes, l.scope)
		}
	}
	if len(scopes) == 0 {
		// The catalog saw a credential the lists did not (one was deleted
		// in between): assume rather than deny on a stale read.
		return all, []string{"the catalog reports a credential but none was found; all three scopes assumed"}, nil
	}
	return scopes, notes, nil
}

// writePolicyExplanation prints the request, every applied rule with its
// effect, the policies that did not apply and why, then the verdict.
func writePolicyExplanation(w io.Writer, x policyExplanation) error {
	var b strings.Builder
	writeExplainedRequest(&b, x)
	b.WriteString("\n")
	if err := writeExplainedRules(&b, x); err != nil {
		return err
	}
	b.WriteString("\n")
	writeVerdict(&b, x.Decision, x.Request)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeExplainedRequest says what was asked: the model and its prices,
// the phase, the key and the credentials it may use.
func writeExplainedRequest(b *strings.Builder, x policyExplanation) {
	req := x.Request
	fmt.Fprintf(b, "request:     model %s (provider %s; %s in / %s out per MTok)\n", req.Model, req.Provider,
		x.Model.Pricing.InputPerMTok, x.Model.Pricing.OutputPerMTok)
	if req.Phase == policy.PhaseDiscovery {
		b.WriteString("phase:       discovery (listing models: stream, capabilities and request-only rules do not apply)\n")
	} else {
		fmt.Fprintf(b, "phase:       inference, stream %t, capabilities %s\n", req.Stream, orNone(req.Capabilities))
	}
	fmt.Fprintf(b, "key:         %s %q (%s), owner %s\n", x.Key.ID, x.Key.Name, x.Key.Status, x.Key.UserID)
	if x.Key.Status != wire.KeyActive {
		fmt.Fprintf(b, "             the data plane refuses a %s key before any policy applies\n", x.Key.Status)
	}
	fmt.Fprintf(b, "credentials: %s\n", orNone(req.CredentialScopes))
	for _, n := range x.ScopeNotes {
		fmt.Fprintf(b, "             (%s)\n", n)
	}
}

// orNone lists enum values, or says none.
func orNone[T ~string](vs []T) string {
	if len(vs) == 0 {
		return "none"
	}
	return joinPolicyEnums(vs)
}

// writeExplainedRules is the table of rules that applied, and the
// policies that did not.
func writeExplainedRules(b *strings.Builder, x policyExplanation) error {
	if len(x.Decision.Reasons) == 0 {
		b.WriteString("no rule applies to this request\n")
	} else {
		tw := tabwriter.NewWriter(b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "POLICY\tRULE\tACTION\tEFFECT\tWHY")
		for _, r := range x.Decision.Reasons {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", r.PolicyName, r.RuleIndex, r.Action, r.Effect, r.Detail)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if idle := idlePolicies(x); len(idle) > 0 {
		b.WriteString("\nnot applied:\n")
		for _, line := range idle {
			b.WriteString("  " + line + "\n")
		}
	}
	return nil
}

// writeVerdict is the decision and what it imposes.
func writeVerdict(b *strings.Builder, d policy.Decision, req policy.Request) {
	if d.Allowed {
		b.WriteString("verdict: allowed\n")
	} else {
		fmt.Fprintf(b, "verdict: denied: %s\n", d.DenyMessage)
	}
	if d.MaxInputPricePerMTok != nil {
		fmt.Fprintf(b, "  price ceilings: %s in / %s out per MTok\n", d.MaxInputPricePerMTok, d.MaxOutputPricePerMTok)
	}
	if d.MaxOutputTokens > 0 {
		fmt.Fprintf(b, "  max output tokens: %d\n", d.MaxOutputTokens)
	}
	if len(d.CredentialScopes) > 0 && len(d.CredentialScopes) < len(req.CredentialScopes) {
		fmt.Fprintf(b, "  credentials used: %s only\n", joinPolicyEnums(d.CredentialScopes))
	}
	if d.StrictParameters {
		b.WriteString("  strict parameter checks\n")
	}
	for _, bu := range d.Budgets {
		fmt.Fprintf(b, "  budget: %s USD per %s, %s (policy %q, rule %d)\n", bu.AmountUSD, bu.Period, bu.Aggregation, bu.PolicyName, bu.RuleIndex)
	}
	if fb := d.Fallback; fb != nil {
		fmt.Fprintf(b, "  fallback: %s on %s, at most %d attempts, %d ms timeout (policy %q, rule %d)\n",
			strings.Join(fb.Models, ", "), joinPolicyEnums(fb.On), fb.MaxAttempts, fb.TimeoutMS, fb.PolicyName, fb.RuleIndex)
	}
}

// idlePolicies says, for each policy no rule of which applied, why not.
// Evaluate reports only what applied; the reason a policy did not is read
// off its enabled flag and target here, which is description, not a second
// evaluation: the verdict above comes from Evaluate alone.
func idlePolicies(x policyExplanation) []string {
	applied := map[string]bool{}
	for _, r := range x.Decision.Reasons {
		applied[r.PolicyID.String()] = true
	}
	var out []string
	ps := slices.Clone(x.Policies)
	slices.SortFunc(ps, func(a, b wire.Policy) int { return strings.Compare(a.Name, b.Name) })
	for _, p := range ps {
		if applied[p.ID.String()] {
			continue
		}
		t := policyDef(p).Target
		why := "its target covers this key, but none of its rules matches this request"
		if x.Request.Phase == policy.PhaseDiscovery {
			why = "its target covers this key, but none of its rules matches, or they apply at inference only"
		}
		switch {
		case !p.Enabled:
			why = "disabled"
		case t.Kind == policy.TargetSelectedUsers && !slices.Contains(t.UserIDs, x.Request.OwnerUserID):
			why = "selected_users target does not include the key's owner"
		case t.Kind == policy.TargetSelectedKeys && !slices.Contains(t.KeyIDs, x.Request.KeyID):
			why = "selected_keys target does not include this key"
		}
		out = append(out, fmt.Sprintf("%s: %s", p.Name, why))
	}
	return out
}

func joinPolicyEnums[T ~string](items []T) string {
	parts := make([]string, len(items))
	for i, v := range items {
		parts[i] = string(v)
	}
	return strings.Join(parts, ", ")
}

// policyDef parses a policy's definition as the server returned it; the
// server stores only definitions that parse, so a failure leaves the zero
// definition (no target, no rules) rather than stopping a listing.
func policyDef(p wire.Policy) policy.Definition {
	var d policy.Definition
	_ = json.Unmarshal(p.Definition, &d)
	return d
}

// wireDefinition is a parsed definition as the API takes it.
func wireDefinition(d policy.Definition) wire.PolicyDefinition {
	b, err := json.Marshal(d)
	if err != nil {
		return nil // a parsed definition always marshals
	}
	return b
}
