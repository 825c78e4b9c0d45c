package usage

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/wire"
)

// The price classes of a FOCUS charge row (docs/focus.md). Reasoning
// tokens are part of an event's output, priced like it, and shown apart;
// one-hour cache writes are part of its cache writes at their own price.
const (
	FocusClassInput        = "input"
	FocusClassCachedInput  = "cached_input"
	FocusClassCacheWrite   = "cache_write"
	FocusClassCacheWrite1h = "cache_write_1h"
	FocusClassOutput       = "output"
	FocusClassReasoning    = "reasoning"
)

// FocusRemainderClass is the class an event's rounding remainder goes to:
// the event's cost is rounded once on the sum of its classes (catalog
// CostNanoUSD), each class's share is rounded down, and what the shares
// miss of the cost is added here, so the classes add up to the cost
// exactly. An event without recorded prices has its whole cost here; one
// whose cost is not its prices' (a response-cache hit at $0) shares its
// cost in proportion to what its prices would charge each class.
const FocusRemainderClass = FocusClassInput

// FocusBatchPrefix begins the class of a batch line's tokens (an event
// whose provenance.prices.price_class is "batch"): batch_input,
// batch_cached_input, …, batch_reasoning, each at the batch price, so a
// finance team sees the batch price class apart from the synchronous one.
const FocusBatchPrefix = "batch_"

var focusClassNames = map[string]string{
	FocusClassInput: "Input tokens", FocusClassCachedInput: "Cached input tokens", FocusClassCacheWrite: "Cache write tokens",
	FocusClassCacheWrite1h: "One-hour cache write tokens", FocusClassOutput: "Output tokens", FocusClassReasoning: "Reasoning tokens",
}

// focusClassName is how a row's description names its class.
func focusClassName(class string) string {
	if base, ok := strings.CutPrefix(class, FocusBatchPrefix); ok {
		return "Batch " + strings.ToLower(focusClassNames[base][:1]) + focusClassNames[base][1:]
	}
	return focusClassNames[class]
}

// FocusExport is what a FOCUS export is made of: the organization, its
// workspaces' names and the window's events.
type FocusExport struct {
	OrgID      uuid.UUID
	OrgName    string
	Workspaces map[uuid.UUID]string
	Events     []store.UsageEvent
}

// FocusCharge is one charge: a day, a workspace, a provider and model, a
// price class at one unit price, and one set of tags.
type FocusCharge struct {
	Day                  time.Time
	WorkspaceID          uuid.UUID
	WorkspaceName        string
	Provider, Model      string
	Class                string
	UnitPricePerMTok     decimal.Decimal
	Tags                 string // canonical JSON object, "" for none
	Tokens               int64
	BilledNanoUSD        int64
	billingID, billingNm string
}

type focusKey struct {
	day             int64
	ws              uuid.UUID
	provider, model string
	class, price    string
	tags            string
}

type classShare struct {
	class  string
	tokens int64
	price  string
}

// shares splits an event into its price classes with each class's cost
// rounded down, the remainder added to FocusRemainderClass.
func shares(e *store.UsageEvent) ([]classShare, []int64, error) {
	var p wire.UsagePrices
	if e.Provenance != nil && e.Provenance.Prices != nil {
		p = *e.Provenance.Prices
	}
	w1h := cmp.Or(p.CacheWrite1hPerMTok, p.CacheWritePerMTok)
	out := []classShare{
		{FocusClassInput, e.InputTokens, p.InputPerMTok},
		{FocusClassCachedInput, e.CacheReadTokens, p.CacheReadPerMTok},
		{FocusClassCacheWrite, e.CacheWriteTokens - e.CacheWrite1hTokens, p.CacheWritePerMTok},
		{FocusClassCacheWrite1h, e.CacheWrite1hTokens, w1h},
		{FocusClassOutput, e.OutputTokens - e.ReasoningTokens, p.OutputPerMTok},
		{FocusClassReasoning, e.ReasoningTokens, p.OutputPerMTok},
	}
	if p.PriceClass == wire.PriceClassBatch {
		for i := range out {
			out[i].class = FocusBatchPrefix + out[i].class
		}
	}
	exact := make([]decimal.Decimal, len(out))
	total := decimal.Zero
	for i, s := range out {
		if s.tokens < 0 {
			return nil, nil, fmt.Errorf("usage event %s: negative %s token count", e.ID, s.class)
		}
		if s.price == "" || s.tokens == 0 {
			continue
		}
		price, err := decimal.NewFromString(s.price)
		if err != nil {
			return nil, nil, fmt.Errorf("usage event %s: price %q: %w", e.ID, s.price, err)
		}
		// USD per million tokens × tokens × 10⁹ / 10⁶ nano-dollars.
		exact[i] = price.Mul(decimal.NewFromInt(s.tokens)).Shift(3)
		total = total.Add(exact[i])
	}
	// An event charged at its prices has each class's exact share; one
	// charged otherwise (a response-cache hit at $0, a discount) shares
	// its cost in proportion to them.
	cost := decimal.NewFromInt(e.CostNanoUSD)
	atPrices := total.Sub(cost).Abs().LessThan(decimal.NewFromInt(1))
	costs := make([]int64, len(out))
	var sum int64
	for i := range out {
		share := exact[i]
		if !atPrices && total.IsPositive() {
			share = exact[i].Mul(cost).Div(total)
		} else if !atPrices {
			share = decimal.Zero
		}
		costs[i] = share.Floor().IntPart()
		sum += costs[i]
	}
	costs[0] += e.CostNanoUSD - sum // out[0] is FocusRemainderClass
	return out, costs, nil
}

// FocusCharges folds the events into charges: one per UTC day, workspace,
// provider, model, price class, unit price and tag set, in that order.
// The charges' costs add up to the events' costs exactly.
func FocusCharges(x FocusExport) ([]FocusCharge, error) {
	f := newFocusFolder(x)
	if err := f.add(x.Events); err != nil {
		return nil, err
	}
	return f.charges(), nil
}

// focusFolder folds events into charges as they come.
type focusFolder struct {
	x     FocusExport
	byKey map[focusKey]*FocusCharge
}

func newFocusFolder(x FocusExport) *focusFolder {
	return &focusFolder{x: x, byKey: map[focusKey]*FocusCharge{}}
}

func (f *focusFolder) add(events []store.UsageEvent) error {
	for i := range events {
		e := &events[i]
		classes, costs, err := shares(e)
		if err != nil {
			return err
		}
		tags := ""
		if len(e.Tags) > 0 {
			b, _ := json.Marshal(map[string]string(e.Tags)) // keys sorted
			tags = string(b)
		}
		day := e.OccurredAt.UTC().Truncate(24 * time.Hour)
		for j, s := range classes {
			if s.tokens == 0 && costs[j] == 0 {
				continue
			}
			price := decimal.Zero
			if s.price != "" {
				price, _ = decimal.NewFromString(s.price) // parsed by shares
			}
			k := focusKey{day.Unix(), e.WorkspaceID, e.Provider, e.Model, s.class, price.String(), tags}
			c := f.byKey[k]
			if c == nil {
				c = &FocusCharge{Day: day, WorkspaceID: e.WorkspaceID, WorkspaceName: f.x.Workspaces[e.WorkspaceID],
					Provider: e.Provider, Model: e.Model, Class: s.class, UnitPricePerMTok: price, Tags: tags,
					billingID: f.x.OrgID.String(), billingNm: f.x.OrgName}
				f.byKey[k] = c
			}
			c.Tokens += s.tokens
			c.BilledNanoUSD += costs[j]
		}
	}
	return nil
}

func (f *focusFolder) charges() []FocusCharge {
	keys := slices.SortedFunc(maps.Keys(f.byKey), func(a, b focusKey) int {
		return cmp.Or(cmp.Compare(a.day, b.day), cmp.Compare(a.ws.String(), b.ws.String()), cmp.Compare(a.provider, b.provider),
			cmp.Compare(a.model, b.model), cmp.Compare(a.class, b.class), cmp.Compare(a.price, b.price), cmp.Compare(a.tags, b.tags))
	})
	out := make([]FocusCharge, 0, len(keys))
	for _, k := range keys {
		out = append(out, *f.byKey[k])
	}
	return out
}

// FocusTable renders charges as the version's columns: the header and one
// row of values each, nil for null. Decimal columns hold decimal strings.
func FocusTable(version string, charges []FocusCharge) ([]string, [][]*string, error) {
	cols, err := FocusColumns(version)
	if err != nil {
		return nil, nil, err
	}
	header := make([]string, len(cols))
	for i, c := range cols {
		header[i] = c.Name
	}
	rows := make([][]*string, 0, len(charges))
	for _, c := range charges {
		v := c.values()
		row := make([]*string, len(cols))
		for i, col := range cols {
			row[i] = v[col.Name]
		}
		rows = append(rows, row)
	}
	return header, rows, nil
}

// FocusDateTime is FOCUS's date/time format: ISO 8601, UTC, seconds.
const FocusDateTime = "2006-01-02T15:04:05Z"

func str(s string) *string { return &s }

// values are the charge's value of every column of every version.
func (c FocusCharge) values() map[string]*string {
	unit := c.UnitPricePerMTok.Shift(-6) // USD per token
	qty := decimal.NewFromInt(c.Tokens)
	billed := catalog.FormatNanoUSD(c.BilledNanoUSD)
	month := time.Date(c.Day.Year(), c.Day.Month(), 1, 0, 0, 0, 0, time.UTC)
	sku := c.Provider + "/" + c.Model + ":" + c.Class
	desc := fmt.Sprintf("%s of %s (%s) at %s USD per million tokens", focusClassName(c.Class), c.Model, c.Provider, c.UnitPricePerMTok.String())
	v := map[string]*string{
		"BilledCost": str(billed), "EffectiveCost": str(billed),
		"ListCost": str(unit.Mul(qty).String()), "ContractedCost": str(unit.Mul(qty).String()),
		"ListUnitPrice": str(unit.String()), "ContractedUnitPrice": str(unit.String()),
		"PricingQuantity": str(qty.String()), "PricingUnit": str("Tokens"),
		"ConsumedQuantity": str(qty.String()), "ConsumedUnit": str("Tokens"),
		"PricingCategory": str("Standard"), "PricingCurrency": str("USD"), "BillingCurrency": str("USD"),
		"BillingAccountId": str(c.billingID), "BillingAccountName": str(c.billingNm), "BillingAccountType": str("Organization"),
		"BillingPeriodStart": str(month.Format(FocusDateTime)), "BillingPeriodEnd": str(month.AddDate(0, 1, 0).Format(FocusDateTime)),
		"ChargePeriodStart": str(c.Day.Format(FocusDateTime)), "ChargePeriodEnd": str(c.Day.AddDate(0, 0, 1).Format(FocusDateTime)),
		"ChargeCategory": str("Usage"), "ChargeClass": nil, "ChargeFrequency": str("Usage-Based"), "ChargeDescription": str(desc),
		"ServiceCategory": str("AI and Machine Learning"), "ServiceSubcategory": str("Generative AI"), "ServiceName": str(FocusServiceName),
		"ServiceProviderName": str(c.Provider), "HostProviderName": str(c.Provider), "InvoiceIssuerName": str(c.Provider),
		"ProviderName": str(c.Provider), "PublisherName": str(c.Provider),
		"ResourceId": str(c.Model), "ResourceName": str(c.Model), "ResourceType": str("Model"),
		"SkuId": str(sku), "SkuPriceId": str(sku + "@" + c.UnitPricePerMTok.String()),
		"SubAccountId": str(c.WorkspaceID.String()), "SubAccountName": str(c.WorkspaceName), "SubAccountType": str("Workspace"),
		"Tags": nil,
	}
	if c.WorkspaceName == "" {
		v["SubAccountName"] = str(c.WorkspaceID.String())
	}
	if c.Tags != "" {
		v["Tags"] = str(c.Tags)
	}
	return v
}

// FocusServiceName is every row's ServiceName: model inference reached
// through gw.
const FocusServiceName = "LLM inference"

// FocusJSON renders the table's rows as JSON objects: decimal columns as
// JSON numbers (exact, as written), the others as strings, nulls as null.
func FocusJSON(version string, header []string, rows [][]*string) ([]wire.FocusRow, error) {
	cols, err := FocusColumns(version)
	if err != nil {
		return nil, err
	}
	out := make([]wire.FocusRow, 0, len(rows))
	for _, r := range rows {
		obj := make(wire.FocusRow, len(header))
		for i, name := range header {
			switch {
			case r[i] == nil:
				obj[name] = nil
			case cols[i].Type == FocusDecimal:
				obj[name] = json.Number(*r[i])
			default:
				obj[name] = *r[i]
			}
		}
		out = append(out, obj)
	}
	return out, nil
}
