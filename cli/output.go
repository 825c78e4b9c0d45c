package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
	"golang.org/x/term"
)

// Output formats of list and get commands. OutputWide is a table with
// every column (kubectl's -o wide).
const (
	OutputTable = "table"
	OutputWide  = "wide"
	OutputJSON  = "json"
	OutputYAML  = "yaml"
)

// outputFormats are the values of --output, for its help and completion.
var outputFormats = []string{OutputTable, OutputWide, OutputJSON, OutputYAML}

// outputFlag is the value of --output. -o wide is a table: the command
// reads "table" (commands tell tables from json and yaml by that value, and
// need not know about wide), while Print asks the flag whether the wide
// columns were asked for.
type outputFlag struct {
	target *string
	wide   bool
}

func (o *outputFlag) String() string {
	if o.wide {
		return OutputWide
	}
	return *o.target
}

func (o *outputFlag) Set(s string) error {
	o.wide = s == OutputWide
	if o.wide {
		s = OutputTable
	}
	*o.target = s
	return nil
}

func (o *outputFlag) Type() string { return "string" }

func addOutputFlag(cmd *cobra.Command, target *string) {
	*target = OutputTable
	cmd.Flags().VarP(&outputFlag{target: target}, "output", "o", "output format: table, wide (a table with every column), json or yaml")
}

func checkOutput(format string) error {
	switch format {
	case OutputTable, OutputWide, OutputJSON, OutputYAML:
		return nil
	}
	return usageError{fmt.Errorf("--output must be table, wide, json or yaml, not %q", format)}
}

// Table is what a command shows in table form.
type Table struct {
	Headers []string
	Rows    [][]string
	// Empty is said on stderr when there are no rows, e.g. "no
	// inference keys"; unset, a list command says "no" and its group's
	// name (see emptyMessage).
	Empty string
	// Wide names (by header) the columns a person sees only with -o wide:
	// ids and details that would push the table past 80 columns. Piped
	// rows keep them (a script wants the ids, and a pipe has no width).
	Wide []string
	// Shrink names (by header, in order) the columns that give way when
	// the table is wider than the terminal: names and lists, cut with
	// "…". Numbers, money and ids never shrink.
	Shrink []string
}

// minShrunk is the narrowest a shrinking column gets: enough to tell
// most names apart.
const minShrunk = 10

// narrow drops the wide columns.
func (t Table) narrow() Table {
	keep := make([]int, 0, len(t.Headers))
	for i, h := range t.Headers {
		if !slices.Contains(t.Wide, h) {
			keep = append(keep, i)
		}
	}
	if len(keep) == len(t.Headers) {
		return t
	}
	pick := func(row []string) []string {
		out := make([]string, 0, len(keep))
		for _, i := range keep {
			if i < len(row) {
				out = append(out, row[i])
			}
		}
		return out
	}
	n := t
	n.Headers, n.Rows = pick(t.Headers), make([][]string, len(t.Rows))
	for i, r := range t.Rows {
		n.Rows[i] = pick(r)
	}
	return n
}

// fit cuts the shrinking columns, in order, until the table's lines fit
// width (as Print aligns them: two spaces between columns); 0 is an
// unknown width, and nothing is cut. A table that cannot fit is cut as far
// as minShrunk allows and left at that.
func (t Table) fit(width int) Table {
	if width <= 0 || len(t.Shrink) == 0 {
		return t
	}
	widths := make([]int, len(t.Headers))
	for i, h := range t.Headers {
		widths[i] = utf8.RuneCountInString(h)
	}
	for _, r := range t.Rows {
		for i, c := range r {
			if i < len(widths) {
				widths[i] = max(widths[i], utf8.RuneCountInString(c))
			}
		}
	}
	excess := 2 * (len(widths) - 1)
	for _, w := range widths {
		excess += w
	}
	excess -= width
	cut := map[int]int{}
	for _, name := range t.Shrink {
		i := slices.Index(t.Headers, name)
		if excess <= 0 || i < 0 {
			continue
		}
		floor := max(minShrunk, utf8.RuneCountInString(name))
		if by := min(excess, widths[i]-floor); by > 0 {
			cut[i] = widths[i] - by
			excess -= by
		}
	}
	if len(cut) == 0 {
		return t
	}
	out := t
	out.Rows = make([][]string, len(t.Rows))
	for j, r := range t.Rows {
		row := slices.Clone(r)
		for i, w := range cut {
			if i < len(row) && utf8.RuneCountInString(row[i]) > w {
				row[i] = string([]rune(row[i])[:w-1]) + "…"
			}
		}
		out.Rows[j] = row
	}
	return out
}

// Print writes data in the chosen format: the wire JSON (or YAML of it)
// for machines, a table for people. Tables are aligned under a header on a
// terminal, or when -o table was given by name; otherwise, piped, they are
// tab-separated rows without a header, so they stay easy to cut and awk.
// An aligned table leaves out its wide columns unless -o wide asked for
// them, and on a terminal its names give way to fit the width; piped rows
// have every column, uncut. An empty table says so on stderr, leaving
// stdout empty.
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
		if !f.wideAsked() {
			t = t.narrow().fit(f.IO.TerminalWidth())
		}
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

// wideAsked reports whether the running command was given -o wide.
func (f *Factory) wideAsked() bool {
	if f.running == nil {
		return false
	}
	fl := f.running.Flags().Lookup("output")
	return fl != nil && fl.Value.String() == OutputWide
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

// TerminalWidth is the width of the terminal Out writes to: Width when
// set (tests), else the terminal's own; 0 when Out is no terminal or its
// size cannot be read.
func (s *IOStreams) TerminalWidth() int {
	if s.Width > 0 {
		return s.Width
	}
	file, ok := s.Out.(*os.File)
	if !ok || !term.IsTerminal(int(file.Fd())) {
		return 0
	}
	w, _, err := term.GetSize(int(file.Fd()))
	if err != nil {
		return 0
	}
	return w
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

// decimalRE is a plain decimal as the API writes money: digits, and
// decimals after a point.
var decimalRE = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)

// moneyCell writes an exact decimal amount of USD for a table: at least
// two decimals (0.30, not 0.3; 100.00), and every significant digit the
// API gave (0.00042 stays 0.00042), without the trailing zeros of its
// nine-decimal form (1.250000000 is 1.25). Anything else is shown as it
// is.
func moneyCell(s string) string {
	if !decimalRE.MatchString(s) {
		return orDash(s)
	}
	whole, frac, _ := strings.Cut(s, ".")
	frac = strings.TrimRight(frac, "0")
	for len(frac) < 2 {
		frac += "0"
	}
	return whole + "." + frac
}
