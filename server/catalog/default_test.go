package catalog

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"go.yaml.in/yaml/v3"
)

func mustDefault(t *testing.T) *Catalog {
	t.Helper()
	c, err := Default()
	if err != nil {
		t.Fatalf("embedded default.yaml does not parse: %v", err)
	}
	return c
}

func TestDefaultProviders(t *testing.T) {
	c := mustDefault(t)
	want := map[string]Kind{
		"openai":            KindOpenAI,
		"anthropic":         KindAnthropic,
		"google":            KindGoogle,
		"mistral":           KindOpenAICompatible,
		"deepseek":          KindOpenAICompatible,
		"groq":              KindOpenAICompatible,
		"openai-compatible": KindOpenAICompatible,
		"bedrock":           KindBedrock,
		"vertex":            KindVertex,
		"gemini":            KindGemini,
		"azure-openai":      KindAzureOpenAI,
	}
	for id, kind := range want {
		p, ok := c.Provider(id)
		if !ok {
			t.Errorf("provider %q missing", id)
			continue
		}
		if p.Kind != kind {
			t.Errorf("provider %q: kind %q, want %q", id, p.Kind, kind)
		}
		if id == "azure-openai" {
			if p.BaseURL != "" || len(c.ModelsByProvider(id)) == 0 {
				t.Errorf("azure-openai: base_url %q (each resource's credential gives its own), %d models", p.BaseURL, len(c.ModelsByProvider(id)))
			}
			continue
		}
		if id == "openai-compatible" {
			if p.BaseURL != "" {
				t.Errorf("openai-compatible has base_url %q; its credentials supply the URL", p.BaseURL)
			}
			if ms := c.ModelsByProvider(id); len(ms) != 0 {
				t.Errorf("openai-compatible has fixed models %v", ms)
			}
			continue
		}
		if !strings.HasPrefix(p.BaseURL, "https://") {
			t.Errorf("provider %q: base_url %q is not https", id, p.BaseURL)
		}
		if len(c.ModelsByProvider(id)) == 0 {
			t.Errorf("provider %q has no models", id)
		}
	}
	if p, _ := c.Provider("openai"); p.BaseURL != "https://api.openai.com/v1" {
		t.Errorf("openai base_url = %q", p.BaseURL)
	}
	if n := len(c.Models); n < 40 || n > 90 {
		t.Errorf("default catalog has %d models, want 40 to 90", n)
	}
}

func TestDefaultModelsAreConsistent(t *testing.T) {
	c := mustDefault(t)
	if !slices.IsSortedFunc(c.Providers, func(a, b Provider) int { return strings.Compare(a.ID, b.ID) }) {
		t.Error("providers are not sorted by id")
	}
	for i, m := range c.Models {
		if i > 0 && c.Models[i-1].ID >= m.ID {
			t.Errorf("models not sorted and unique at %d: %q then %q", i, c.Models[i-1].ID, m.ID)
		}
		if _, ok := c.Provider(m.Provider); !ok {
			t.Errorf("%s: provider %q does not exist", m.ID, m.Provider)
		}
		if m.UpstreamModel() == "" || m.Provider+"/"+m.UpstreamModel() != m.ID {
			t.Errorf("%s: upstream model %q does not rebuild the id", m.ID, m.UpstreamModel())
		}
		if !m.HasModality(ModalityText) || (!m.Embeds() && !m.HasCapability(CapabilityStreaming)) {
			t.Errorf("%s: every default model takes text, and every chat model streams", m.ID)
		}
		if m.Embeds() && (len(m.Capabilities) > 0 || m.Pricing.OutputPerMTok != "0") {
			t.Errorf("%s: an embedding model has no capabilities and no output to price", m.ID)
		}
		if m.Created <= 0 {
			t.Errorf("%s: created %d; the default catalog knows every release date", m.ID, m.Created)
		}
		// A cache hit never costs more than fresh input; a catalog saying so
		// has its columns swapped.
		in := decimal.RequireFromString(m.Pricing.InputPerMTok)
		if cr := decimal.RequireFromString(m.Pricing.CacheReadPerMTok); cr.GreaterThan(in) {
			t.Errorf("%s: cache read %s costs more than input %s", m.ID, cr, in)
		}
		// A category's tokens cost exactly their list price, which ties
		// CostNanoUSD to ParseNanoUSD for every real price: 100,000 tokens
		// (under every long-context threshold) a tenth of it, and, past the
		// threshold, a million the long-context tier's.
		checkListPrices(t, m, Tokens{}, 100_000, m.Pricing.fields())
		if lc := m.Pricing.LongContext; lc != nil {
			checkListPrices(t, m, Tokens{Input: lc.AboveInputTokens + 1}, 1_000_000, lc.fields())
			if in := decimal.RequireFromString(lc.InputPerMTok); in.LessThan(decimal.RequireFromString(m.Pricing.InputPerMTok)) {
				t.Errorf("%s: the long-context tier is cheaper than the standard one", m.ID)
			}
		}
		// Claude, wherever it is served (Anthropic, Vertex AI, Bedrock),
		// bills one-hour cache writes apart; no other model does.
		claude := m.Provider == "anthropic" || strings.HasPrefix(m.ID, "vertex/claude-") || strings.Contains(m.ID, ".anthropic.claude-")
		if (m.Pricing.CacheWrite1hPerMTok != "") != claude && m.Type != "embedding" {
			t.Errorf("%s: one-hour cache write price %q; Claude models have one, others none", m.ID, m.Pricing.CacheWrite1hPerMTok)
		}
	}
}

func TestDefaultLookups(t *testing.T) {
	c := mustDefault(t)
	m, ok := c.Model("groq/meta-llama/llama-4-scout-17b-16e-instruct")
	if !ok {
		t.Fatal("groq/meta-llama/llama-4-scout-17b-16e-instruct not found")
	}
	if m.Provider != "groq" || m.UpstreamModel() != "meta-llama/llama-4-scout-17b-16e-instruct" {
		t.Errorf("got provider %q upstream %q", m.Provider, m.UpstreamModel())
	}
	for _, id := range []string{"openai/gpt-4o", "openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5-20250929", "google/gemini-2.5-pro", "deepseek/deepseek-reasoner"} {
		if _, ok := c.Model(id); !ok {
			t.Errorf("%s not found", id)
		}
	}
	for _, id := range []string{"", "openai", "openai/", "gpt-4o", "openai/gpt-4o ", "OPENAI/gpt-4o", "openai/gpt-4o/extra"} {
		if _, ok := c.Model(id); ok {
			t.Errorf("Model(%q) found something", id)
		}
	}
	if _, ok := c.Provider("azure"); ok {
		t.Error("Provider(azure) found something")
	}

	total := 0
	for _, p := range c.Providers {
		ms := c.ModelsByProvider(p.ID)
		total += len(ms)
		for _, m := range ms {
			if m.Provider != p.ID {
				t.Errorf("ModelsByProvider(%q) returned %s", p.ID, m.ID)
			}
		}
	}
	if total != len(c.Models) {
		t.Errorf("ModelsByProvider covers %d models, catalog has %d", total, len(c.Models))
	}
	if ms := c.ModelsByProvider("nobody"); ms != nil {
		t.Errorf("ModelsByProvider(nobody) = %v", ms)
	}
	// "openai" must not pick up "openai-compatible/…" models, whose ids
	// share the prefix up to the slash.
	withSelfHosted, err := New(c.Providers, append(c.Models, Model{
		ID: "openai-compatible/llama3.1:8b", Provider: "openai-compatible", Name: "Llama", ContextWindow: 8192, MaxOutputTokens: 8192,
		Pricing: prices("0", "0", "0", "0"), Modalities: []Modality{ModalityText},
	}))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range withSelfHosted.ModelsByProvider("openai") {
		if m.Provider != "openai" {
			t.Errorf("ModelsByProvider(openai) returned %s", m.ID)
		}
	}
	if got := withSelfHosted.ModelsByProvider("openai-compatible"); len(got) != 1 {
		t.Errorf("ModelsByProvider(openai-compatible) = %v", got)
	}
}

func TestDefaultReturnsIndependentCopies(t *testing.T) {
	a := mustDefault(t)
	a.Models[0].Name = "changed"
	a.Models[0].Capabilities[0] = "changed"
	a.Providers[0].BaseURL = "changed"
	b := mustDefault(t)
	if b.Models[0].Name == "changed" || b.Models[0].Capabilities[0] == "changed" || b.Providers[0].BaseURL == "changed" {
		t.Error("editing one Default() result changed the next")
	}
	ms := b.ModelsByProvider("openai")
	ms[0].Modalities[0] = "changed"
	if m, _ := b.Model(ms[0].ID); m.Modalities[0] == "changed" {
		t.Error("ModelsByProvider result shares slices with the catalog")
	}
}

func TestDefaultRoundTrips(t *testing.T) {
	c := mustDefault(t)
	fromFile, err := Parse(DefaultYAML())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, fromFile) {
		t.Error("DefaultYAML does not parse to Default")
	}
	js, err := json.MarshalIndent(c, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(js), "null") {
		t.Error("JSON encoding has null where an empty list belongs")
	}
	fromJSON, err := Parse(js)
	if err != nil {
		t.Fatalf("re-parsing the JSON encoding: %v", err)
	}
	if !reflect.DeepEqual(c, fromJSON) {
		t.Error("JSON round trip changed the catalog")
	}
	ym, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	fromYAML, err := Parse(ym)
	if err != nil {
		t.Fatalf("re-parsing the YAML encoding: %v", err)
	}
	if !reflect.DeepEqual(c, fromYAML) {
		t.Error("YAML round trip changed the catalog")
	}
}

// checkListPrices checks that n tokens of each category cost n millionths
// of its list price in fields, with base added to every request (the
// input that selects a tier, priced apart and subtracted).
func checkListPrices(t *testing.T, m Model, base Tokens, n int64, fields [4]priceField) {
	t.Helper()
	pp, err := m.Pricing.Parse()
	if err != nil {
		t.Fatalf("%s: %v", m.ID, err)
	}
	baseCost, err := pp.CostNanoUSD(base)
	if err != nil {
		t.Fatalf("%s: %v", m.ID, err)
	}
	for k, f := range fields {
		counts := [4]int64{base.Input, base.Output, base.CacheRead, base.CacheWrite}
		counts[k] += n
		tok := Tokens{Input: counts[0], Output: counts[1], CacheRead: counts[2], CacheWrite: counts[3]}
		if k == 1 && base.Input > 0 {
			// Output alone does not pass the threshold; with base it does,
			// and base is priced at the same tier.
			tok = Tokens{Input: base.Input, Output: n}
		}
		got, err := pp.CostNanoUSD(tok)
		if err != nil {
			t.Fatalf("%s: %v", m.ID, err)
		}
		want, err := ParseNanoUSD(f.value)
		if err != nil {
			t.Fatalf("%s: %v", m.ID, err)
		}
		if want = want * n / 1_000_000; got-baseCost != want {
			t.Errorf("%s: %d %s tokens cost %d nano, want %d", m.ID, n, f.name, got-baseCost, want)
		}
	}
}
