package usage

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// FOCUS column data types.
const (
	FocusString       = "String"
	FocusDecimal      = "Decimal"
	FocusDateTimeType = "DateTime"
	FocusKeyValue     = "KeyValue"
)

// FocusColumn is one column of a FOCUS version, as its definition states
// it: its data type, whether it allows nulls, and its allowed values.
type FocusColumn struct {
	Name     string
	Type     string
	Nullable bool
	Allowed  []string
	// Since and Until bound the versions the column is in: Until is the
	// first version without it ("" for none).
	Since, Until string
}

// focusColumns are the columns gw's export writes, in order, with the
// versions that define them (docs/focus.md). ProviderName and PublisherName
// are deprecated in 1.3 (replaced by ServiceProviderName, HostProviderName
// and InvoiceIssuerName) and still required: FOCUS removes a column only
// in a version its deprecation names, and 1.3's names none, so 1.4 keeps
// them too.
var focusColumns = []FocusColumn{
	{Name: "BilledCost", Type: FocusDecimal},
	{Name: "BillingAccountId", Type: FocusString},
	{Name: "BillingAccountName", Type: FocusString, Nullable: true},
	{Name: "BillingAccountType", Type: FocusString, Nullable: true},
	{Name: "BillingCurrency", Type: FocusString},
	{Name: "BillingPeriodEnd", Type: FocusDateTimeType},
	{Name: "BillingPeriodStart", Type: FocusDateTimeType},
	{Name: "ChargeCategory", Type: FocusString, Allowed: []string{"Usage", "Purchase", "Tax", "Credit", "Adjustment"}},
	{Name: "ChargeClass", Type: FocusString, Nullable: true, Allowed: []string{"Correction"}},
	{Name: "ChargeDescription", Type: FocusString, Nullable: true},
	{Name: "ChargeFrequency", Type: FocusString, Allowed: []string{"One-Time", "Recurring", "Usage-Based"}},
	{Name: "ChargePeriodEnd", Type: FocusDateTimeType},
	{Name: "ChargePeriodStart", Type: FocusDateTimeType},
	{Name: "ConsumedQuantity", Type: FocusDecimal, Nullable: true},
	{Name: "ConsumedUnit", Type: FocusString, Nullable: true},
	{Name: "ContractedCost", Type: FocusDecimal},
	{Name: "ContractedUnitPrice", Type: FocusDecimal, Nullable: true},
	{Name: "EffectiveCost", Type: FocusDecimal},
	{Name: "HostProviderName", Type: FocusString, Nullable: true, Since: "1.3"},
	{Name: "InvoiceIssuerName", Type: FocusString},
	{Name: "ListCost", Type: FocusDecimal},
	{Name: "ListUnitPrice", Type: FocusDecimal, Nullable: true},
	{Name: "PricingCategory", Type: FocusString, Nullable: true, Allowed: []string{"Standard", "Dynamic", "Committed", "Other"}},
	{Name: "PricingCurrency", Type: FocusString, Nullable: true},
	{Name: "PricingQuantity", Type: FocusDecimal, Nullable: true},
	{Name: "PricingUnit", Type: FocusString, Nullable: true},
	{Name: "ProviderName", Type: FocusString, Until: "1.4"},
	{Name: "PublisherName", Type: FocusString, Until: "1.4"},
	{Name: "ResourceId", Type: FocusString, Nullable: true},
	{Name: "ResourceName", Type: FocusString, Nullable: true},
	{Name: "ResourceType", Type: FocusString, Nullable: true},
	{Name: "ServiceCategory", Type: FocusString, Allowed: focusServiceCategories},
	{Name: "ServiceName", Type: FocusString},
	{Name: "ServiceProviderName", Type: FocusString, Since: "1.3"},
	{Name: "ServiceSubcategory", Type: FocusString, Nullable: true},
	{Name: "SkuId", Type: FocusString, Nullable: true},
	{Name: "SkuPriceId", Type: FocusString, Nullable: true},
	{Name: "SubAccountId", Type: FocusString, Nullable: true},
	{Name: "SubAccountName", Type: FocusString, Nullable: true},
	{Name: "SubAccountType", Type: FocusString, Nullable: true},
	{Name: "Tags", Type: FocusKeyValue, Nullable: true},
}

var focusServiceCategories = []string{"AI and Machine Learning", "Analytics", "Business Applications", "Compute", "Databases",
	"Developer Tools", "Multicloud", "Identity", "Integration", "Internet of Things", "Management and Governance", "Media",
	"Migration", "Mobile", "Networking", "Security", "Storage", "Web", "Other"}

// focusSubcategories are the service subcategories of "AI and Machine
// Learning", the only category the export writes.
var focusSubcategories = map[string][]string{
	"AI and Machine Learning": {"AI Platforms", "Bots", "Generative AI", "Machine Learning", "Natural Language Processing", "Other (AI and Machine Learning)"},
}

// FocusColumns are the columns of a FOCUS version, in the export's order.
func FocusColumns(version string) ([]FocusColumn, error) {
	if !slices.Contains([]string{"1.3", "1.4"}, version) {
		return nil, fmt.Errorf("unknown FOCUS version %q", version)
	}
	var out []FocusColumn
	for _, c := range focusColumns {
		if (c.Since == "" || version >= c.Since) && (c.Until == "" || version < c.Until) {
			out = append(out, c)
		}
	}
	return out, nil
}

var (
	focusDecimalRe  = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)
	focusCurrencyRe = regexp.MustCompile(`^[A-Z]{3}$`)
)

// ValidateFocusCSV checks a CSV export against the version's column
// definitions (ValidateFocusTable); an empty cell is a null.
func ValidateFocusCSV(version string, body []byte) error {
	recs, err := csv.NewReader(bytes.NewReader(body)).ReadAll()
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		return errors.New("no header")
	}
	rows := make([][]*string, 0, len(recs)-1)
	for _, rec := range recs[1:] {
		row := make([]*string, len(rec))
		for i, v := range rec {
			if v != "" {
				row[i] = &v
			}
		}
		rows = append(rows, row)
	}
	return ValidateFocusTable(version, recs[0], rows)
}

// ValidateFocusJSON checks a JSON export, {data: [rows]}: every row an
// object of exactly the version's columns, decimals as JSON numbers, the
// other columns strings or null; then the table's rules.
func ValidateFocusJSON(version string, body []byte) error {
	cols, err := FocusColumns(version)
	if err != nil {
		return err
	}
	var doc struct {
		Data []map[string]any `json:"data"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return err
	}
	header := make([]string, len(cols))
	for i, c := range cols {
		header[i] = c.Name
	}
	rows := make([][]*string, 0, len(doc.Data))
	var errs []error
	for n, obj := range doc.Data {
		if len(obj) != len(cols) {
			errs = append(errs, fmt.Errorf("row %d: %d columns, the version has %d", n, len(obj), len(cols)))
		}
		row := make([]*string, len(cols))
		for i, c := range cols {
			v, ok := obj[c.Name]
			switch x := v.(type) {
			case nil:
				if !ok {
					errs = append(errs, fmt.Errorf("row %d: %s is missing", n, c.Name))
				}
			case json.Number:
				if c.Type != FocusDecimal {
					errs = append(errs, fmt.Errorf("row %d: %s is a number, its type is %s", n, c.Name, c.Type))
				}
				s := x.String()
				row[i] = &s
			case string:
				if c.Type == FocusDecimal {
					errs = append(errs, fmt.Errorf("row %d: %s is a string, its type is Decimal", n, c.Name))
				}
				row[i] = &x
			default:
				errs = append(errs, fmt.Errorf("row %d: %s is neither a string, a number nor null", n, c.Name))
			}
		}
		rows = append(rows, row)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return ValidateFocusTable(version, header, rows)
}

// ValidateFocusTable checks rows against the version's column definitions:
// every column present, none unknown (custom columns start with x_), each
// value of its type and format (decimals without exponent, date/times as
// ISO 8601 UTC, currencies ISO 4217, key-value columns JSON objects), the
// allowed values, nullability, and the rules between columns.
func ValidateFocusTable(version string, header []string, rows [][]*string) error {
	cols, err := FocusColumns(version)
	if err != nil {
		return err
	}
	var errs []error
	at := map[string]int{}
	for i, h := range header {
		at[h] = i
	}
	def := map[string]FocusColumn{}
	for _, c := range cols {
		def[c.Name] = c
		if _, ok := at[c.Name]; !ok {
			errs = append(errs, fmt.Errorf("column %s is required in FOCUS %s and missing", c.Name, version))
		}
	}
	for _, h := range header {
		if _, ok := def[h]; !ok && !strings.HasPrefix(h, "x_") {
			errs = append(errs, fmt.Errorf("column %s is not a FOCUS %s column (custom columns start with x_)", h, version))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for n, row := range rows {
		if len(row) != len(header) {
			errs = append(errs, fmt.Errorf("row %d: %d values for %d columns", n, len(row), len(header)))
			continue
		}
		get := func(name string) *string { return row[at[name]] }
		for _, c := range cols {
			if err := checkFocusValue(c, get(c.Name)); err != nil {
				errs = append(errs, fmt.Errorf("row %d: %w", n, err))
			}
		}
		errs = append(errs, focusRowRules(n, get)...)
	}
	return errors.Join(errs...)
}

func checkFocusValue(c FocusColumn, v *string) error {
	if v == nil {
		if !c.Nullable {
			return fmt.Errorf("%s must not be null", c.Name)
		}
		return nil
	}
	switch c.Type {
	case FocusDecimal:
		if !focusDecimalRe.MatchString(*v) {
			return fmt.Errorf("%s %q is not a decimal", c.Name, *v)
		}
	case FocusDateTimeType:
		if _, err := time.Parse(FocusDateTime, *v); err != nil {
			return fmt.Errorf("%s %q is not an ISO 8601 UTC date/time (YYYY-MM-DDTHH:mm:ssZ)", c.Name, *v)
		}
	case FocusKeyValue:
		var obj map[string]any
		if err := json.Unmarshal([]byte(*v), &obj); err != nil || obj == nil {
			return fmt.Errorf("%s %q is not a JSON object", c.Name, *v)
		}
	case FocusString:
		if *v == "" {
			return fmt.Errorf("%s is an empty string (null is written as null)", c.Name)
		}
	}
	if c.Allowed != nil && !slices.Contains(c.Allowed, *v) {
		return fmt.Errorf("%s %q is not one of %v", c.Name, *v, c.Allowed)
	}
	return nil
}

// focusRowRules are the rules between a row's columns.
func focusRowRules(n int, get func(string) *string) []error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("row %d: "+format, append([]any{n}, a...)...))
	}
	for _, cur := range []string{"BillingCurrency", "PricingCurrency"} {
		if v := get(cur); v != nil && !focusCurrencyRe.MatchString(*v) {
			bad("%s %q is not an ISO 4217 code", cur, *v)
		}
	}
	for _, pair := range [][2]string{{"PricingQuantity", "PricingUnit"}, {"ConsumedQuantity", "ConsumedUnit"}, {"SubAccountId", "SubAccountName"}} {
		if (get(pair[0]) == nil) != (get(pair[1]) == nil) {
			bad("%s and %s must both be null or both not null", pair[0], pair[1])
		}
	}
	t := func(name string) time.Time { v, _ := time.Parse(FocusDateTime, deref(get(name))); return v }
	if !t("ChargePeriodStart").Before(t("ChargePeriodEnd")) {
		bad("ChargePeriodEnd must be after ChargePeriodStart")
	}
	if !t("BillingPeriodStart").Before(t("BillingPeriodEnd")) {
		bad("BillingPeriodEnd must be after BillingPeriodStart")
	}
	if t("ChargePeriodStart").Before(t("BillingPeriodStart")) || t("ChargePeriodEnd").After(t("BillingPeriodEnd")) {
		bad("the charge period must lie within the billing period")
	}
	usage := deref(get("ChargeCategory")) == "Usage" || deref(get("ChargeCategory")) == "Purchase"
	if usage && get("ChargeClass") == nil {
		for _, name := range []string{"ListUnitPrice", "ContractedUnitPrice", "PricingQuantity", "PricingUnit", "PricingCategory"} {
			if get(name) == nil {
				bad("%s must not be null on a %s charge", name, deref(get("ChargeCategory")))
			}
		}
	}
	if deref(get("ChargeCategory")) == "Usage" && get("ConsumedQuantity") == nil {
		bad("ConsumedQuantity must not be null on a Usage charge")
	}
	if sub, cat := get("ServiceSubcategory"), deref(get("ServiceCategory")); sub != nil {
		if allowed, ok := focusSubcategories[cat]; ok && !slices.Contains(allowed, *sub) {
			bad("ServiceSubcategory %q is not a subcategory of %q", *sub, cat)
		}
	}
	if get("BillingCurrency") != nil && get("PricingCurrency") != nil && *get("BillingCurrency") == *get("PricingCurrency") {
		// One currency: the list and contracted costs are the unit prices
		// times the quantity, exactly.
		for _, pair := range [][2]string{{"ListCost", "ListUnitPrice"}, {"ContractedCost", "ContractedUnitPrice"}} {
			if get(pair[1]) != nil && get("PricingQuantity") != nil {
				if want := mulDecimal(*get(pair[1]), *get("PricingQuantity")); want != "" && !equalDecimal(want, deref(get(pair[0]))) {
					bad("%s %s is not %s × PricingQuantity = %s", pair[0], deref(get(pair[0])), pair[1], want)
				}
			}
		}
	}
	return errs
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// mulDecimal is a × b exactly, "" when either is not a decimal.
func mulDecimal(a, b string) string {
	x, err1 := decimal.NewFromString(a)
	y, err2 := decimal.NewFromString(b)
	if err1 != nil || err2 != nil {
		return ""
	}
	return x.Mul(y).String()
}

func equalDecimal(a, b string) bool {
	x, err1 := decimal.NewFromString(a)
	y, err2 := decimal.NewFromString(b)
	return err1 == nil && err2 == nil && x.Equal(y)
}
