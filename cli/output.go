package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
	"golang.org/x/term"
)

// Output formats of list and get commands.
const (
	OutputTable = "table"
	OutputJSON  = "json"
	OutputYAML  = "yaml"
)

func addOutputFlag(cmd *cobra.Command, target *string) {
	cmd.Flags().StringVarP(target, "output", "o", OutputTable, "output format: table, json or yaml")
}

func checkOutput(format string) error {
	switch format {
	case OutputTable, OutputJSON, OutputYAML:
		return nil
	}
	return usageError{fmt.Errorf("--output must be table, json or yaml, not %q", format)}
}

// Table is what a command shows in table form.
type Table struct {
	Headers []string
	Rows    [][]string
	// Empty is said on stderr when there are no rows, e.g. "no
	// inference keys"; unset, a list command says "no" and its group's
	// name (see emptyMessage).
	Empty string
}

// Print writes data in the chosen format: the wire JSON (or YAML of it)
// for machines, a table for people. Tables are aligned under a header on a
// terminal, or when -o table was given by name; otherwise, piped, they are
// tab-separated rows without a header, so they stay easy to cut and awk.
// An empty table says so on stderr, leaving stdout empty.
func (f *Factory) Print(format string, data any, table func() Table) error {
	switch format {
	case OutputJSON:
		enc := json.NewEncoder(f.IO.Out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(data)
	case OutputYAML:
		// Through JSON, so YAML shows the wire names and shapes exactly.
		raw, err := json.Marshal(data)
		if err != nil {
			return err
		}
		var generic any
		if err := json.Unmarshal(raw, &generic); err != nil {
			return err
		}
		return yaml.NewEncoder(f.IO.Out).Encode(generic)
	}
	t := table()
	if len(t.Rows) == 0 {
		msg := t.Empty
		if msg == "" {
			msg = emptyMessage(f.running)
		}
		_, err := fmt.Fprintln(f.IO.ErrOut, msg)
		return err
	}
	if f.IO.IsTerminal() || f.outputFlagGiven() {
		w := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, strings.ToUpper(strings.Join(t.Headers, "\t")))
		for _, row := range t.Rows {
			fmt.Fprintln(w, strings.Join(row, "\t"))
		}
		return w.Flush()
	}
	for _, row := range t.Rows {
		if _, err := fmt.Fprintln(f.IO.Out, strings.Join(row, "\t")); err != nil {
			return err
		}
	}
	return nil
}

// outputFlagGiven reports whether the running command was given --output
// by name: a person asking for a table gets its header even when piped.
func (f *Factory) outputFlagGiven() bool {
	if f.running == nil {
		return false
	}
	fl := f.running.Flags().Lookup("output")
	return fl != nil && fl.Changed
}

// emptyNouns name what a group lists where its name does not.
var emptyNouns = map[string]string{"catalog": "catalog entries"}

// emptyMessage is what an empty table of cmd says: `gw inference-keys
// list` says "no inference keys".
func emptyMessage(cmd *cobra.Command) string {
	if cmd == nil || cmd.Name() != "list" || cmd.Parent() == nil || !cmd.Parent().HasParent() {
		return "nothing to show"
	}
	group := cmd.Parent().Name()
	if noun, ok := emptyNouns[group]; ok {
		return "no " + noun
	}
	return "no " + strings.ReplaceAll(group, "-", " ")
}

// IsTerminal reports whether Out is a terminal.
func (s *IOStreams) IsTerminal() bool {
	if s.ForceTerminal {
		return true
	}
	file, ok := s.Out.(*os.File)
	return ok && term.IsTerminal(int(file.Fd()))
}

// CanPrompt reports whether a person can answer prompts (In and ErrOut
// are a terminal).
func (s *IOStreams) CanPrompt() bool {
	in, ok := s.In.(*os.File)
	return ok && term.IsTerminal(int(in.Fd()))
}

// describeForPrompt is how a confirmation names what it acts on: by name,
// read only when a person will be asked (not with --yes, not in a script),
// else as the command was given it.
func describeForPrompt(f *Factory, yes bool, ref string, describe func() (string, error)) string {
	if yes || !f.IO.CanPrompt() {
		return ref
	}
	if d, err := describe(); err == nil {
		return d
	}
	return ref
}

// Confirm asks a yes/no question on the terminal; without one it refuses
// and tells the user to pass --yes.
func (f *Factory) Confirm(question string, yes bool) error {
	if yes {
		return nil
	}
	if !f.IO.CanPrompt() {
		return usageError{fmt.Errorf("%s: refusing without a terminal to confirm; pass --yes", question)}
	}
	fmt.Fprintf(f.IO.ErrOut, "%s [y/N] ", question)
	var answer string
	_, _ = fmt.Fscanln(f.IO.In, &answer)
	if a := strings.ToLower(strings.TrimSpace(answer)); a == "y" || a == "yes" {
		return nil
	}
	return usageError{fmt.Errorf("cancelled")}
}

// ListOptions configure a list command whose only flag is --output.
type ListOptions struct {
	f      *Factory
	Output string
}

// newListCmd builds such a list command: `list`, no arguments, --output
// checked before anything runs.
func newListCmd(f *Factory, short string, runF, run func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{f: f}
	cmd := &cobra.Command{
		Use:   "list",
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return run(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	return cmd
}

// IDOptions configure a command acting on one resource named by its id,
// with --output (and --yes when it destroys).
type IDOptions struct {
	f      *Factory
	ID     string
	Output string
	Yes    bool
}

// newIDCmd builds a command taking exactly one id argument.
func newIDCmd(f *Factory, use, short string, runF, run func(context.Context, *IDOptions) error) *cobra.Command {
	return idCmd(f, use, short, false, runF, run)
}

// newDestructiveIDCmd is newIDCmd with --yes, for commands that confirm.
func newDestructiveIDCmd(f *Factory, use, short string, runF, run func(context.Context, *IDOptions) error) *cobra.Command {
	return idCmd(f, use, short, true, runF, run)
}

func idCmd(f *Factory, use, short string, destructive bool, runF, run func(context.Context, *IDOptions) error) *cobra.Command {
	opts := &IDOptions{f: f}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			opts.ID = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return run(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	if destructive {
		addYesFlag(cmd, &opts.Yes)
	}
	return cmd
}
