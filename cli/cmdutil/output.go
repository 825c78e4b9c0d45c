package cmdutil

import (
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

// OutputFormats are the values of --output, for its help and completion.
var OutputFormats = []string{OutputTable, OutputWide, OutputJSON, OutputYAML}

// Output is a command's --output flag and what it prints with: the
// format asked for, whether it was named on the command line (a person
// asking for a table gets its header even when piped) and whether it was
// -o wide. Each command's options hold one, bound by AddOutput; nothing
// needs to know which command is running to print.
type Output struct {
	// Format is table, json or yaml: -o wide is a table (commands tell
	// tables from json and yaml by this value, and need not know about
	// wide), with Wide set.
	Format string
	Wide   bool
	// Given: --output was named on the command line.
	Given bool
	// cmd is the command the flag belongs to, whose name says what an
	// empty list is a list of.
	cmd *cobra.Command
}

// outputValue is Output as a flag value.
type outputValue struct{ o *Output }

func (v outputValue) String() string {
	if v.o.Wide {
		return OutputWide
	}
	return v.o.Format
}

func (v outputValue) Set(s string) error {
	v.o.Given = true
	v.o.Wide = s == OutputWide
	if v.o.Wide {
		s = OutputTable
	}
	v.o.Format = s
	return nil
}

func (v outputValue) Type() string { return "string" }

const outputUsage = "output format: table, wide (a table with every column), json or yaml"

// AddOutput adds --output (-o) to cmd, bound to o.
func AddOutput(cmd *cobra.Command, o *Output) {
	*o = Output{Format: OutputTable, cmd: cmd}
	cmd.Flags().VarP(outputValue{o}, "output", "o", outputUsage)
}

// Check refuses a format Print cannot write (a usage error).
func (o *Output) Check() error { return checkOutput(o.Format) }

// checkOutput refuses a format Print cannot write (a usage error).
func checkOutput(format string) error {
	switch format {
	case OutputTable, OutputWide, OutputJSON, OutputYAML:
		return nil
	}
	return UsageError{fmt.Errorf("--output must be table, wide, json or yaml, not %q", format)}
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

// Narrow drops the wide columns.
func (t Table) Narrow() Table {
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

// Fit cuts the shrinking columns, in order, until the table's lines fit
// width (as Print aligns them: two spaces between columns); 0 is an
// unknown width, and nothing is cut. A table that cannot fit is cut as far
// as minShrunk allows and left at that.
func (t Table) Fit(width int) Table {
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

// Print writes data in the chosen format to io: the wire JSON (or YAML of
// it) for machines, a table for people. Tables are aligned under a header
// on a terminal, or when -o table was given by name; otherwise, piped,
// they are tab-separated rows without a header, so they stay easy to cut
// and awk. An aligned table leaves out its wide columns unless -o wide
// asked for them, and on a terminal its names give way to fit the width;
// piped rows have every column, uncut. An empty table says so on stderr,
// leaving stdout empty.
func (o *Output) Print(io *IOStreams, data any, table func() Table) error {
	switch o.Format {
	case OutputJSON:
		enc := json.NewEncoder(io.Out)
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
		return yaml.NewEncoder(io.Out).Encode(generic)
	}
	t := table()
	if len(t.Rows) == 0 {
		msg := t.Empty
		if msg == "" {
			msg = emptyMessage(o.cmd)
		}
		_, err := fmt.Fprintln(io.ErrOut, msg)
		return err
	}
	if io.IsTerminal() || o.Given {
		if !o.Wide {
			t = t.Narrow().Fit(io.TerminalWidth())
		}
		w := tabwriter.NewWriter(io.Out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, strings.ToUpper(strings.Join(t.Headers, "\t")))
		for _, row := range t.Rows {
			fmt.Fprintln(w, strings.Join(row, "\t"))
		}
		return w.Flush()
	}
	for _, row := range t.Rows {
		if _, err := fmt.Fprintln(io.Out, strings.Join(row, "\t")); err != nil {
			return err
		}
	}
	return nil
}

// PrintOnce shows a secret that the server returns only in this response:
// the secret alone on stdout (so `TOKEN=$(gw … create)` works), the warning
// on stderr. In json or yaml the whole object, secret included, is the data.
func (o *Output) PrintOnce(io *IOStreams, what, secret string, data any, table func() Table) error {
	fmt.Fprintf(io.ErrOut, "The %s is shown only once; store it now, it cannot be read back.\n", what)
	if o.Format != OutputTable {
		return o.Print(io, data, table)
	}
	_, err := fmt.Fprintln(io.Out, secret)
	return err
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

// DescribeForPrompt is how a confirmation names what it acts on: by name,
// read only when a person will be asked (not with --yes, not in a script),
// else as the command was given it.
func DescribeForPrompt(io *IOStreams, yes bool, ref string, describe func() (string, error)) string {
	if yes || !io.CanPrompt() {
		return ref
	}
	if d, err := describe(); err == nil {
		return d
	}
	return ref
}

// Confirm asks a yes/no question on the terminal; without one it refuses
// and tells the user to pass --yes.
func Confirm(io *IOStreams, question string, yes bool) error {
	if yes {
		return nil
	}
	if !io.CanPrompt() {
		return UsageError{fmt.Errorf("%s: refusing without a terminal to confirm; pass --yes", question)}
	}
	fmt.Fprintf(io.ErrOut, "%s [y/N] ", question)
	var answer string
	_, _ = fmt.Fscanln(io.In, &answer)
	if a := strings.ToLower(strings.TrimSpace(answer)); a == "y" || a == "yes" {
		return nil
	}
	return UsageError{fmt.Errorf("cancelled")}
}

// decimalRE is a plain decimal as the API writes money: digits, and
// decimals after a point.
var decimalRE = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)

// MoneyCell writes an exact decimal amount of USD for a table: at least
// two decimals (0.30, not 0.3; 100.00), and every significant digit the
// API gave (0.00042 stays 0.00042), without the trailing zeros of its
// nine-decimal form (1.250000000 is 1.25). Anything else is shown as it
// is.
func MoneyCell(s string) string {
	if !decimalRE.MatchString(s) {
		return OrDash(s)
	}
	whole, frac, _ := strings.Cut(s, ".")
	frac = strings.TrimRight(frac, "0")
	for len(frac) < 2 {
		frac += "0"
	}
	return whole + "." + frac
}
