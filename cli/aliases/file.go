package aliases

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/cmdutil/declfile"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

// The alias file of `gw aliases apply -f FILE` is read by the declarative
// file machinery of policy files (declfile.go) with the API's own rules
// (backend.ParseAliasTargets), so that its problems are reported all at
// once, each with its line, before anything is sent; then the models are
// checked against the catalog in force, and apply shows its plan, as
// gw policies apply does (issue 26, row 5).

const aliasFileHelp = `The file (YAML or JSON; -f - reads stdin) lists the aliases of one level:

  aliases:
    - name: claude-opus-4-8          # the name agents ask for
      targets:                       # 1 to 8 catalog models
        - {model: anthropic/claude-opus-4-8, weight: 3}   # weight 1 to 100
        - {model: openai/gpt-4o}                          # default weight 1
    - name: gpt-5.1-codex
      targets:
        - model: anthropic/claude-sonnet-4-5

A bare list of aliases (without "aliases:") is read the same; "aliases: []"
lists none. Aliases are matched to the level's by name; names must be unique
in the file. The file is checked before anything is sent, with the server's
rules and against the catalog in force; problems are reported as
FILE:LINE: alias "NAME" (#N): LOCATION: PROBLEM, all at once.`

// aliasSpec is one alias as the file declares it.
type aliasSpec struct {
	Name    string
	Targets []backend.AliasTarget
	// Index is the alias's 1-based position in the file, for messages.
	Index int
	// loc is where the alias is in the document, for the problems found
	// once the catalog is known.
	loc validate.Loc
}

// aliasDoc is a checked alias file.
type aliasDoc struct {
	File  string
	Specs []aliasSpec
	lines declfile.Lines
}

// readAliasFile reads and checks the file at path ("-" is stdin); its
// problems are usage errors.
func readAliasFile(path string, stdin io.Reader) (*aliasDoc, error) {
	name, data, err := declfile.ReadFile("alias", path, stdin)
	if err != nil {
		return nil, err
	}
	doc, err := parseAliasFile(name, data)
	if err != nil {
		return nil, cmdutil.UsageError{Err: err}
	}
	return doc, nil
}

// parseAliasFile decodes and validates an alias file's content; name is
// what messages call the file.
func parseAliasFile(name string, data []byte) (*aliasDoc, error) {
	tree, lines, err := declfile.DecodeDocument(name, data)
	if err != nil {
		return nil, declfile.Problem(name, "%v", err)
	}
	items, prefix, err := aliasItems(name, tree, lines)
	if err != nil {
		return nil, err
	}
	doc := &aliasDoc{File: name, lines: lines}
	var problems []string
	firstByName := map[string]int{}
	for i, item := range items {
		spec, issues := parseAliasSpec(item, i+1)
		spec.loc = append(prefix[:len(prefix):len(prefix)], i)
		problems = append(problems, declfile.ItemProblems(name, lines, spec.loc, "alias", spec.Name, i+1, issues)...)
		if spec.Name != "" {
			if first, dup := firstByName[spec.Name]; dup {
				problems = append(problems, fmt.Sprintf("%s: name: duplicate of alias #%d; names identify aliases, so each may appear once",
					declfile.ItemLabel(lines.At(name, spec.loc.With("name")), "alias", spec.Name, i+1), first))
			} else {
				firstByName[spec.Name] = i + 1
			}
		}
		doc.Specs = append(doc.Specs, spec)
	}
	if len(problems) > 0 {
		return nil, &declfile.FileError{File: name, Problems: problems, PerItem: true}
	}
	return doc, nil
}

// aliasItems finds the list of aliases: the document's aliases member,
// or the document itself when it is a list.
func aliasItems(name string, tree any, lines declfile.Lines) ([]any, validate.Loc, error) {
	switch v := tree.(type) {
	case []any:
		return v, nil, nil
	case nil:
		return nil, nil, declfile.Problem(name, `no aliases: the file is empty (a file that lists none is "aliases: []")`)
	case map[string]any:
		var errs validate.Errors
		o := validate.ReadObject(v, nil, &errs)
		raw, _ := o.Require("aliases")
		o.Close()
		items, isList := raw.([]any)
		if raw != nil && !isList {
			errs.Add(validate.Loc{"aliases"}, "list_type", "Input should be a valid list of aliases", raw, nil)
		}
		if err := errs.Err(); err != nil {
			ve, _ := validate.AsError(err)
			var problems []string
			for _, is := range ve.Issues {
				problems = append(problems, lines.At(name, is.Loc)+": "+declfile.FormatIssue(is))
			}
			return nil, nil, &declfile.FileError{File: name, Problems: problems, PerItem: true}
		}
		return items, validate.Loc{"aliases"}, nil
	}
	return nil, nil, declfile.Problem(name, "expected a mapping with an aliases list (see gw aliases apply --help), not %s", declfile.DescribeValue(tree))
}

// aliasNameHelp says what an alias name may be, for people rather than
// as backend.AliasNamePattern.
const aliasNameHelp = "an alias name is 1 to 128 letters, digits and . _ : @ [ ] -, starting with a letter or digit (a slash would make it read as a catalog id)"

// parseAliasSpec reads one entry with the API's rules. The name is
// returned even when the rest is invalid, so that messages can say which
// alias they are about.
func parseAliasSpec(v any, index int) (aliasSpec, []validate.Issue) {
	var errs validate.Errors
	spec := aliasSpec{Index: index}
	o := validate.ReadObject(v, nil, &errs)
	if o != nil {
		if raw, ok := o.Require("name"); ok {
			spec.Name, _ = validate.String(raw, validate.Loc{"name"}, backend.AliasNameRule, &errs)
		}
		if raw, ok := o.Require("targets"); ok {
			spec.Targets = backend.ParseAliasTargets(raw, validate.Loc{"targets"}, &errs)
		}
		o.Close()
	}
	seen := map[string]bool{}
	for i, t := range spec.Targets {
		if t.Model != "" && seen[t.Model] {
			errs.Add(validate.Loc{"targets", i, "model"}, "value_error", t.Model+" is already a target of this alias", t.Model, nil)
		}
		seen[t.Model] = true
	}
	err := errs.Err()
	if err == nil {
		return spec, nil
	}
	ve, _ := validate.AsError(err)
	for i, is := range ve.Issues {
		if is.Type == "string_pattern_mismatch" && slices.Equal(is.Loc, validate.Loc{"name"}) {
			ve.Issues[i].Msg = aliasNameHelp
		}
	}
	return spec, ve.Issues
}

// checkAliasModels holds the file to the catalog in force, as the server
// will: every target a model of it, no name a model's id. All problems
// are reported at once, with their lines, before any change.
func checkAliasModels(doc *aliasDoc, cat wire.Catalog) error {
	models := make(map[string]bool, len(cat.Models))
	for _, m := range cat.Models {
		models[m.ID] = true
	}
	var problems []string
	for _, s := range doc.Specs {
		label := func(loc validate.Loc) string {
			return declfile.ItemLabel(doc.lines.At(doc.File, append(s.loc[:len(s.loc):len(s.loc)], loc...)), "alias", s.Name, s.Index)
		}
		if models[s.Name] {
			problems = append(problems, label(validate.Loc{"name"})+": name: "+s.Name+" is a catalog model's id; an alias cannot shadow a model")
		}
		for i, t := range s.Targets {
			if !models[t.Model] {
				problems = append(problems, fmt.Sprintf("%s: targets[%d].model: %s is not a model of the catalog in force (gw catalog list shows them)",
					label(validate.Loc{"targets", i, "model"}), i, t.Model))
			}
		}
	}
	if len(problems) > 0 {
		return cmdutil.UsageError{Err: &declfile.FileError{File: doc.File, Problems: problems, PerItem: true}}
	}
	return nil
}

// ApplyOptions configure gw aliases apply.
type ApplyOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	File   string
	Scope  string
	Prune  bool
	DryRun bool
	Yes    bool
}

// NewCmdApply builds `gw aliases apply`.
func NewCmdApply(f *cmdutil.Factory, runF func(context.Context, *ApplyOptions) error) *cobra.Command {
	opts := &ApplyOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Make a level's aliases match a file, after showing the plan (--prune deletes the others)",
		Long: `Create and update the aliases of the organization (or, with --scope workspace
or --workspace WS, of a workspace) so that they match FILE, after showing what
will change. Applying the same file twice changes nothing the second time and
says "no changes".

` + aliasFileHelp + `

Aliases of the level that the file does not list are left alone, unless
--prune is given: then they are deleted, after a confirmation on a terminal
(--yes confirms without one). --dry-run shows the plan and changes nothing.`,
		Example: `  gw aliases apply -f aliases.yaml --dry-run
  gw aliases apply -f aliases.yaml
  gw aliases apply -f aliases.yaml --workspace search --prune --yes
  gw aliases list -o json | jq '{aliases: [.[] | {name, targets: [.targets[] | {model, weight}]}]}' | gw aliases apply -f - --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.File == "" {
				return cmdutil.UsageError{Err: errors.New("-f FILE is required (- reads stdin)")}
			}
			if err := cmdutil.CheckScope(cmd, &opts.Scope, "org", "workspace"); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return aliasesApplyRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVarP(&opts.File, "file", "f", "", "the alias file, YAML or JSON (- for stdin)")
	addAliasScopeFlag(cmd, &opts.Scope)
	cmd.Flags().BoolVar(&opts.Prune, "prune", false, "also delete the level's aliases that the file does not list")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "show what would change and change nothing")
	cmdutil.AddYesFlag(cmd, &opts.Yes)
	return cmd
}

func aliasesApplyRun(ctx context.Context, opts *ApplyOptions) error {
	streams := opts.IO
	// The file is read and checked before any client exists, so a bad
	// file never costs a request.
	doc, err := readAliasFile(opts.File, streams.In)
	if err != nil {
		return err
	}
	c, org, ws, err := aliasLevel(opts.Client, opts.Scope)
	if err != nil {
		return err
	}
	at := client.OrgScope(org)
	if ws != "" {
		at = client.WorkspaceScope(org, ws)
	}
	cat, err := c.GetCatalog(ctx, at)
	if err != nil {
		return err
	}
	if err := checkAliasModels(doc, cat); err != nil {
		return err
	}
	current, err := c.ListModelAliases(ctx, org, ws)
	if err != nil {
		return err
	}
	level := aliasLevelName(org, ws)
	plan := planAliases(doc, current, level, opts.Prune)
	if err := plan.render(streams.Out); err != nil {
		return err
	}
	switch {
	case len(plan.Steps) == 0:
		return nil
	case opts.DryRun:
		fmt.Fprintln(streams.ErrOut, "dry run: nothing was changed")
		return nil
	}
	if n := plan.count(declfile.StepDelete); n > 0 {
		q := fmt.Sprintf("delete %d %s of %s not in %s?", n, declfile.Plural(n, "alias", "aliases"), level, doc.File)
		if err := cmdutil.Confirm(opts.IO, q, opts.Yes); err != nil {
			return err
		}
	}
	for i, s := range plan.Steps {
		if err := s.apply(ctx, c, org, ws); err != nil {
			return fmt.Errorf("%s alias %q: %w (%d of %d changes were applied before it)", s.Kind, s.Name, err, i, len(plan.Steps))
		}
		fmt.Fprintf(streams.Out, "%s alias %s\n", aliasStepDone[s.Kind], s.Name)
	}
	fmt.Fprintf(streams.ErrOut, "applied %d %s to %s\n", len(plan.Steps), declfile.Plural(len(plan.Steps), "change", "changes"), level)
	return nil
}

// aliasStepDone says what a step did.
var aliasStepDone = map[declfile.StepKind]string{declfile.StepCreate: "created", declfile.StepUpdate: "updated", declfile.StepDelete: "deleted"}

// aliasStep is one change of an alias apply: create, update or delete.
type aliasStep struct {
	Kind    declfile.StepKind
	Name    string
	Spec    *aliasSpec       // create, update
	Current *wire.ModelAlias // update, delete
}

func (s aliasStep) apply(ctx context.Context, c *client.Client, org, ws string) error {
	if s.Kind == declfile.StepDelete {
		_, err := c.DeleteModelAlias(ctx, org, ws, s.Name)
		return err
	}
	targets := make([]wire.ModelAliasTargetIn, len(s.Spec.Targets))
	for i, t := range s.Spec.Targets {
		targets[i] = wire.ModelAliasTargetIn{Model: t.Model, Weight: &t.Weight}
	}
	if s.Kind == declfile.StepCreate {
		_, err := c.CreateModelAlias(ctx, org, ws, wire.ModelAliasCreate{Name: s.Name, Targets: targets})
		return err
	}
	_, err := c.UpdateModelAlias(ctx, org, ws, s.Name, wire.ModelAliasUpdate{Targets: targets})
	return err
}

// aliasPlan is what apply would change, creates and updates before
// deletes, as a policy plan.
type aliasPlan struct {
	File, Level string
	Steps       []aliasStep
	// Unmanaged are the level's aliases the file does not list, kept
	// because --prune was not given.
	Unmanaged []string
	Unchanged int
}

// planAliases compares the file with the level's aliases, by name; an
// alias is unchanged when its targets, in order, have the file's models
// and weights.
func planAliases(doc *aliasDoc, current []wire.ModelAlias, level string, prune bool) *aliasPlan {
	plan := &aliasPlan{File: doc.File, Level: level}
	byName := make(map[string]*wire.ModelAlias, len(current))
	for i := range current {
		byName[current[i].Name] = &current[i]
	}
	inFile := map[string]bool{}
	for i := range doc.Specs {
		spec := &doc.Specs[i]
		inFile[spec.Name] = true
		cur := byName[spec.Name]
		switch {
		case cur == nil:
			plan.Steps = append(plan.Steps, aliasStep{Kind: declfile.StepCreate, Name: spec.Name, Spec: spec})
		case !slices.Equal(currentTargetLines(cur.Targets, false), specTargetLines(spec.Targets)):
			plan.Steps = append(plan.Steps, aliasStep{Kind: declfile.StepUpdate, Name: spec.Name, Spec: spec, Current: cur})
		default:
			plan.Unchanged++
		}
	}
	for i := range current {
		cur := &current[i]
		switch {
		case inFile[cur.Name]:
		case prune:
			plan.Steps = append(plan.Steps, aliasStep{Kind: declfile.StepDelete, Name: cur.Name, Current: cur})
		default:
			plan.Unmanaged = append(plan.Unmanaged, strconv.Quote(cur.Name))
		}
	}
	return plan
}

// currentTargetLines are an alias's targets a line each, MODEL=WEIGHT,
// marked when retired if marked is set.
func currentTargetLines(ts []wire.ModelAliasTarget, marked bool) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Model + "=" + strconv.Itoa(t.Weight)
		if marked && t.Retired {
			out[i] += " (retired)"
		}
	}
	return out
}

func specTargetLines(ts []backend.AliasTarget) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Model + "=" + strconv.Itoa(t.Weight)
	}
	return out
}

func (p *aliasPlan) count(kind declfile.StepKind) int {
	n := 0
	for _, s := range p.Steps {
		if s.Kind == kind {
			n++
		}
	}
	return n
}

// render writes the plan as a policy plan reads: a line per change, the
// targets created, changed (a unified diff) or deleted under it.
func (p *aliasPlan) render(w io.Writer) error {
	var b strings.Builder
	for _, s := range p.Steps {
		switch s.Kind {
		case declfile.StepCreate:
			fmt.Fprintf(&b, "+ create alias %q\n", s.Name)
			declfile.WriteIndented(&b, declfile.PrefixLines("+ ", strings.Join(specTargetLines(s.Spec.Targets), "\n")))
		case declfile.StepUpdate:
			fmt.Fprintf(&b, "~ update alias %q: targets\n", s.Name)
			declfile.WriteIndented(&b, declfile.UnifiedDiff(p.Level, p.File, currentTargetLines(s.Current.Targets, true), specTargetLines(s.Spec.Targets)))
		case declfile.StepDelete:
			fmt.Fprintf(&b, "- delete alias %q: not in %s\n", s.Name, p.File)
			declfile.WriteIndented(&b, declfile.PrefixLines("- ", strings.Join(currentTargetLines(s.Current.Targets, true), "\n")))
		}
	}
	if len(p.Steps) == 0 {
		n := p.Unchanged
		fmt.Fprintf(&b, "no changes: %s matches %s (%d %s)\n", p.Level, p.File, n, declfile.Plural(n, "alias", "aliases"))
	} else {
		fmt.Fprintf(&b, "plan: %d to create, %d to update, %d to delete; %d unchanged\n",
			p.count(declfile.StepCreate), p.count(declfile.StepUpdate), p.count(declfile.StepDelete), p.Unchanged)
	}
	if n := len(p.Unmanaged); n > 0 {
		fmt.Fprintf(&b, "note: %d %s of %s not in %s %s kept (--prune deletes %s): %s\n", n, declfile.Plural(n, "alias", "aliases"), p.Level,
			p.File, declfile.Plural(n, "is", "are"), declfile.Plural(n, "it", "them"), strings.Join(p.Unmanaged, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
