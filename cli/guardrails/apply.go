package guardrails

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/cmdutil/declfile"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/guardrails"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

const fileHelp = `The file (YAML or JSON; -f - reads stdin) lists the guardrails of one level:

  guardrails:
    - name: no-secrets
      target: {kind: workspace}              # the policies' target
      stages: [input, output]
      detectors:
        - {kind: secrets}
        - {kind: pii, types: [email, credit_card]}
        - {kind: regex, patterns: ["ACME-[0-9]{6}"]}
        - {kind: webhook, url: "https://guard.internal/check", timeout_ms: 500, secret: "…"}
      action: block                          # block, redact or flag
      on_error: fail_closed                  # or fail_open
      enabled: true                          # the default

A bare list (without "guardrails:") is read the same. Guardrails are matched
to the level's by name. Each is checked with the server's rules before
anything is sent; problems are reported as FILE:LINE: guardrail "NAME" (#N):
LOCATION: PROBLEM, all at once. A webhook's secret is write-only: a webhook
without one keeps the secret it has (same URL); one given is sent, so its
guardrail is always updated.`

// ApplyOptions configure gw guardrails apply.
type ApplyOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	File   string
	Scope  string
	Prune  bool
	DryRun bool
	Yes    bool
}

// NewCmdApply builds `gw guardrails apply`.
func NewCmdApply(f *cmdutil.Factory, runF func(context.Context, *ApplyOptions) error) *cobra.Command {
	opts := &ApplyOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Make a level's guardrails match a file, after showing the plan (--prune deletes the others)",
		Long: `Create and update the guardrails of the organization (or, with --workspace WS,
of a workspace) so that they match FILE, after showing what will change as a
diff. Applying the same file twice changes nothing the second time.

` + fileHelp + `

Guardrails of the level that the file does not list are left alone, unless
--prune is given: then they are deleted, after a confirmation on a terminal
(--yes confirms without one). --dry-run shows the plan and changes nothing.`,
		Example: `  gw guardrails apply -f guardrails.yaml --dry-run
  gw guardrails apply -f guardrails.yaml --workspace search
  gw guardrails apply -f guardrails.yaml --prune --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.File == "" {
				return cmdutil.UsageError{Err: errNoFile}
			}
			if err := cmdutil.CheckScope(cmd, &opts.Scope, "org", "workspace"); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return applyRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVarP(&opts.File, "file", "f", "", "the guardrail file, YAML or JSON (- for stdin)")
	addScopeFlag(cmd, &opts.Scope)
	cmd.Flags().BoolVar(&opts.Prune, "prune", false, "also delete the level's guardrails that the file does not list")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "show what would change and change nothing")
	cmdutil.AddYesFlag(cmd, &opts.Yes)
	return cmd
}

// spec is one guardrail of a file: what is sent, and what is compared.
type spec struct {
	Name   string
	Create wire.GuardrailCreate
	Doc    doc
	Secret bool
}

// doc is a guardrail as a plan compares it: the server's own reading of
// it (backend.ParseGuardrail), so that the file's spelling and the
// server's answer compare alike. Webhook secrets are write-only and not
// compared.
type doc struct {
	Enabled   bool                      `json:"enabled"`
	Target    policy.Target             `json:"target"`
	Stages    []guardrails.Stage        `json:"stages"`
	Detectors []guardrails.DetectorSpec `json:"detectors"`
	Action    guardrails.Action         `json:"action"`
	OnError   guardrails.OnError        `json:"on_error"`
}

// parseItem reads one guardrail with the server's rules; issues are
// relative to the item.
func parseItem(v any) (doc, bool, []validate.Issue) {
	var errs validate.Errors
	var d doc
	secret := false
	if o := validate.ReadObject(v, nil, &errs); o != nil {
		in := backend.ParseGuardrail(o, true) // closes o
		d.Enabled = in.Enabled == nil || *in.Enabled
		if in.Target != nil {
			d.Target = *in.Target
		}
		d.Stages, d.Detectors = in.Stages, in.Detectors
		if in.Action != nil {
			d.Action = *in.Action
		}
		if in.OnError != nil {
			d.OnError = *in.OnError
		}
		secret = len(in.Secrets) > 0
		if errs.Len() == 0 {
			// What the server checks once the body reads (patterns
			// that do not compile, members of another kind).
			for _, p := range guardrails.Validate(guardrails.Spec{Stages: d.Stages, Detectors: d.Detectors, Action: d.Action, OnError: d.OnError}) {
				errs.Add(fieldLoc(p.Field), "value_error", p.Message, nil, nil)
			}
		}
	}
	if ve, ok := validate.AsError(errs.Err()); ok {
		return d, secret, ve.Issues
	}
	return d, secret, nil
}

// fieldLoc is a guardrails.Problem's field, detectors[0].patterns[1], as
// a location in the item.
func fieldLoc(field string) validate.Loc {
	var loc validate.Loc
	for _, part := range strings.Split(field, ".") {
		name, rest, _ := strings.Cut(part, "[")
		loc = append(loc, name)
		for rest != "" {
			n, after, _ := strings.Cut(rest, "]")
			if i, err := strconv.Atoi(n); err == nil {
				loc = append(loc, i)
			}
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return loc
}

// readFile reads and checks a guardrail file; its problems are usage
// errors, found before any request.
func readFile(path string, stdin io.Reader) (string, []spec, error) {
	name, items, lines, problems, err := declfile.ReadResources(path, stdin, "guardrails", "guardrail")
	if err != nil {
		return name, nil, err
	}
	specs := make([]spec, 0, len(items))
	for _, it := range items {
		if it.Name == "" {
			continue // its problem is said
		}
		d, secret, issues := parseItem(it.Value)
		if len(issues) > 0 {
			problems = append(problems, declfile.ItemProblems(name, lines, it.Loc, "guardrail", it.Name, it.Index, issues)...)
			continue
		}
		s := spec{Name: it.Name, Doc: d, Secret: secret}
		if err := declfile.DecodeStrict(name, lines, "guardrail", it, &s.Create); err != nil {
			problems = append(problems, err.Error())
			continue
		}
		specs = append(specs, s)
	}
	if len(problems) > 0 {
		return name, nil, cmdutil.UsageError{Err: &declfile.FileError{File: name, Problems: problems, PerItem: true}}
	}
	return name, specs, nil
}

// currentDoc reads a stored guardrail as a file's would be read.
func currentDoc(g wire.Guardrail) (doc, error) {
	dets := make([]wire.GuardrailDetectorIn, len(g.Detectors))
	for i, d := range g.Detectors {
		dets[i] = wire.GuardrailDetectorIn{Kind: d.Kind, Types: d.Types, Patterns: d.Patterns, Words: d.Words, URL: d.URL, TimeoutMS: d.TimeoutMS}
	}
	enabled := g.Enabled
	raw, err := json.Marshal(wire.GuardrailCreate{Name: g.Name, Enabled: &enabled, Target: g.Target, Stages: g.Stages, Detectors: dets,
		Action: g.Action, OnError: g.OnError})
	if err != nil {
		return doc{}, err
	}
	tree, err := validate.ParseJSON(raw, nil)
	if err != nil {
		return doc{}, err
	}
	d, _, issues := parseItem(tree)
	if len(issues) > 0 {
		return d, fmt.Errorf("guardrail %q as stored does not read: %s", g.Name, declfile.FormatIssue(issues[0]))
	}
	return d, nil
}

func applyRun(ctx context.Context, opts *ApplyOptions) error {
	file, specs, err := readFile(opts.File, opts.IO.In)
	if err != nil {
		return err
	}
	l, err := level(opts.Client, opts.Scope)
	if err != nil {
		return err
	}
	current, err := l.Client.ListGuardrails(ctx, l.Scope)
	if err != nil {
		return err
	}
	desired := make([]declfile.Resource, len(specs))
	for i, s := range specs {
		desired[i] = declfile.Resource{Name: s.Name, Doc: s.Doc}
		if s.Secret {
			desired[i].Force = "a webhook secret is given: write-only, it is sent"
		}
	}
	have := make([]declfile.Resource, len(current))
	for i, g := range current {
		d, err := currentDoc(g)
		if err != nil {
			return err
		}
		have[i] = declfile.Resource{Name: g.Name, Doc: d}
	}
	plan := declfile.PlanResources("guardrail", "guardrails", file, l.Name, desired, have, opts.Prune)
	if err := plan.Render(opts.IO.Out); err != nil {
		return err
	}
	switch {
	case len(plan.Steps) == 0:
		return nil
	case opts.DryRun:
		fmt.Fprintln(opts.IO.ErrOut, "dry run: nothing was changed")
		return nil
	}
	if n := plan.Count(declfile.StepDelete); n > 0 {
		q := fmt.Sprintf("delete %d %s of %s not in %s?", n, declfile.Plural(n, "guardrail", "guardrails"), l.Name, file)
		if err := cmdutil.Confirm(opts.IO, q, opts.Yes); err != nil {
			return err
		}
	}
	for i, s := range plan.Steps {
		switch s.Kind {
		case declfile.StepCreate:
			_, err = l.Client.CreateGuardrail(ctx, l.Scope, specs[s.Desired].Create)
		case declfile.StepUpdate:
			in := specs[s.Desired].Create
			enabled := in.Enabled == nil || *in.Enabled
			_, err = l.Client.UpdateGuardrail(ctx, l.Scope, current[s.Current].ID.String(), wire.GuardrailUpdate{Enabled: &enabled,
				Target: in.Target, Stages: in.Stages, Detectors: in.Detectors, Action: &in.Action, OnError: &in.OnError})
		case declfile.StepDelete:
			_, err = l.Client.DeleteGuardrail(ctx, l.Scope, current[s.Current].ID.String())
		}
		if err != nil {
			return fmt.Errorf("%s guardrail %q: %w (%d of %d changes were applied before it)", s.Kind, s.Name, err, i, len(plan.Steps))
		}
		fmt.Fprintf(opts.IO.Out, "%sd guardrail %s\n", s.Kind, s.Name)
	}
	fmt.Fprintf(opts.IO.ErrOut, "applied %d %s to %s\n", len(plan.Steps), declfile.Plural(len(plan.Steps), "change", "changes"), l.Name)
	return nil
}
