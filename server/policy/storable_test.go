package policy

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/gw-gateway/gw/server/validate"
)

// TestCheckStorable: the grammar admits these definitions (a stored one
// must keep reading), and CheckStorable names every value gw could not
// enforce exactly, so no save path stores one.
func TestCheckStorable(t *testing.T) {
	budget := func(amount string) string {
		return `{"match":{"kind":"all_requests"},"action":{"kind":"budget","amount_usd":"` + amount + `","period":"day","aggregation":"shared"}}`
	}
	prices := func(in, out string) string {
		return `{"match":{"kind":"all_requests"},"action":{"kind":"price_limit","max_input_price_per_mtok":"` + in + `","max_output_price_per_mtok":"` + out + `"}}`
	}
	limits := func(n string) string {
		return `{"match":{"kind":"all_requests"},"action":{"kind":"request_limits","max_output_tokens":` + n + `}}`
	}
	cases := []struct {
		rules string
		want  []string // loc:type, as validate.FormatLoc writes it
	}{
		{budget("12.50"), nil},
		{budget("0"), nil},
		{budget("1000000000"), nil},
		{budget("0.0000000001"), []string{"rules[0].action.amount_usd:decimal_max_places"}},
		{budget("1.234567890123"), []string{"rules[0].action.amount_usd:decimal_max_places"}},
		{budget("9223372037"), []string{"rules[0].action.amount_usd:less_than_equal"}},
		{budget("000000000000000000000000000000000001"), []string{"rules[0].action.amount_usd:string_too_long"}},
		{prices("2.5", "10"), nil},
		{prices("0.0000000001", "2000000"), []string{"rules[0].action.max_input_price_per_mtok:decimal_max_places",
			"rules[0].action.max_output_price_per_mtok:less_than_equal"}},
		{limits("1000000000"), nil},
		{limits("1000000001"), []string{"rules[0].action.max_output_tokens:less_than_equal"}},
		{limits("9223372036854775807"), []string{"rules[0].action.max_output_tokens:less_than_equal"}},
		// Every rule is checked, each at its own index.
		{budget("1") + "," + budget("1.5000000001"), []string{"rules[1].action.amount_usd:decimal_max_places"}},
	}
	for _, c := range cases {
		d, err := ParseDefinitionJSON([]byte(`{"target":{"kind":"workspace"},"rules":[` + c.rules + `]}`))
		if err != nil {
			t.Fatalf("%s: the grammar refuses it: %v", c.rules, err)
		}
		var errs validate.Errors
		CheckStorable(d, nil, &errs)
		var got []string
		for _, is := range errs.Issues() {
			got = append(got, fmt.Sprintf("%s:%s", validate.FormatLoc(is.Loc), is.Type))
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %v\nwant %v", c.rules, got, c.want)
		}
		if (StorableErr(d, nil) == nil) != (len(c.want) == 0) {
			t.Errorf("%s: StorableErr disagrees", c.rules)
		}
	}
}
