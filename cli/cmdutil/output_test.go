package cmdutil

import (
	"strings"
	"testing"
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
