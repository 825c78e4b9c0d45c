package cmdutil

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Money keeps every digit the API gave and shows two decimals at least
// (issue 26, row 12: 0.30 was printed 0.3).
func TestMoneyCell(t *testing.T) {
	for in, want := range map[string]string{
		"0.3": "0.30", "0.30": "0.30", "100": "100.00", "0": "0.00", "1.250000000": "1.25", "0.000420000": "0.00042",
		"13115.678901234": "13115.678901234", "-2.5": "-2.50", "": "-", "n/a": "n/a", "1e-7": "1e-7",
	} {
		if got := MoneyCell(in); got != want {
			t.Errorf("MoneyCell(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTableNarrowAndFit(t *testing.T) {
	tb := Table{Headers: []string{"id", "name", "tags", "cost"}, Wide: []string{"id"}, Shrink: []string{"tags", "name"},
		Rows: [][]string{{"0b9c5f5e", "a-rather-long-key-name", "env=production,team=search", "12.50"}}}
	n := tb.Narrow()
	if strings.Join(n.Headers, " ") != "name tags cost" || strings.Join(n.Rows[0], " ") != "a-rather-long-key-name env=production,team=search 12.50" {
		t.Fatalf("narrow: %+v", n)
	}
	for _, c := range []struct {
		width int
		want  string
	}{
		{0, "a-rather-long-key-name|env=production,team=search|12.50"},   // unknown width: nothing cut
		{100, "a-rather-long-key-name|env=production,team=search|12.50"}, // fits
		{50, "a-rather-long-key-name|env=production,tea…|12.50"},         // 57 wide: the tags give 7
		{40, "a-rather-long-key-na…|env=produ…|12.50"},                   // the tags down to minShrunk, then the name
		{10, "a-rather-…|env=produ…|12.50"},                              // cannot fit: cut to minShrunk and left
	} {
		got := n.Fit(c.width)
		if s := strings.Join(got.Rows[0], "|"); s != c.want {
			t.Errorf("fit(%d) = %q, want %q", c.width, s, c.want)
		}
	}
	if tb.Rows[0][1] != "a-rather-long-key-name" {
		t.Fatal("fit changed the table it was given")
	}
}

// TestOutputKnowsItsFlag: the Output a command holds says whether --output
// was given and whether it was -o wide, so Print needs no record of which
// command runs: piped, a named -o table keeps its header, and -o wide its
// wide columns; an empty list names its group.
func TestOutputKnowsItsFlag(t *testing.T) {
	tb := func() Table {
		return Table{Headers: []string{"id", "name"}, Wide: []string{"id"}, Rows: [][]string{{"k1", "main"}}}
	}
	for _, c := range []struct {
		args        []string
		format, out string
	}{
		{nil, OutputTable, "k1\tmain\n"},
		{[]string{"-o", "table"}, OutputTable, "NAME\nmain\n"},
		{[]string{"-o", "wide"}, OutputTable, "ID  NAME\nk1  main\n"},
		{[]string{"-o", "json"}, OutputJSON, "{\n  \"id\": \"k1\"\n}\n"},
	} {
		var o Output
		group := &cobra.Command{Use: "inference-keys"}
		cmd := &cobra.Command{Use: "list", RunE: func(*cobra.Command, []string) error { return nil }}
		(&cobra.Command{Use: "gw"}).AddCommand(group)
		group.AddCommand(cmd)
		AddOutput(cmd, &o)
		if err := cmd.ParseFlags(c.args); err != nil {
			t.Fatal(err)
		}
		var out, errOut strings.Builder
		if err := o.Print(&IOStreams{Out: &out, ErrOut: &errOut}, map[string]string{"id": "k1"}, tb); err != nil || o.Format != c.format || out.String() != c.out {
			t.Errorf("%v: format %q, printed %q (%v), want %q %q", c.args, o.Format, out.String(), err, c.format, c.out)
		}
		if o.Given != (len(c.args) > 0) || o.Wide != (len(c.args) > 0 && c.args[1] == OutputWide) {
			t.Errorf("%v: given %v, wide %v", c.args, o.Given, o.Wide)
		}
		errOut.Reset()
		if err := o.Print(&IOStreams{Out: &out, ErrOut: &errOut}, nil, func() Table { return Table{} }); err != nil ||
			(o.Format == OutputTable && errOut.String() != "no inference keys\n") {
			t.Errorf("%v: empty list said %q", c.args, errOut.String())
		}
	}
}
