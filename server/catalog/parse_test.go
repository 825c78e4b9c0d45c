package catalog

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// validDoc is the smallest catalog exercising every field; each case below
// breaks one thing in a fresh copy of it.
func validDoc() Catalog {
	return Catalog{
		Providers: []Provider{
			{ID: "openai", Name: "OpenAI", Kind: KindOpenAI, BaseURL: "https://api.openai.com/v1"},
			{ID: "local", Name: "vLLM", Kind: KindOpenAICompatible},
		},
		Models: []Model{
			{
				ID: "openai/gpt-4o", Provider: "openai", Name: "GPT-4o", ContextWindow: 128000, MaxOutputTokens: 16384,
				Pricing:      Pricing{InputPerMTok: "2.50", OutputPerMTok: "10", CacheReadPerMTok: "1.25", CacheWritePerMTok: "0"},
				Capabilities: []Capability{CapabilityStreaming, CapabilityTools},
				Modalities:   []Modality{ModalityText, ModalityImage},
				Created:      1715558400,
			},
			{
				ID: "local/Qwen/Qwen2.5-7B-Instruct", Provider: "local", Name: "Qwen 2.5 7B", ContextWindow: 32768, MaxOutputTokens: 32768,
				Pricing:    Pricing{InputPerMTok: "0", OutputPerMTok: "0", CacheReadPerMTok: "0", CacheWritePerMTok: "0"},
				Modalities: []Modality{ModalityText},
			},
		},
	}
}

func encode(t *testing.T, c Catalog) []byte {
	t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseAcceptsValid(t *testing.T) {
	c, err := Parse(encode(t, validDoc()))
	if err != nil {
		t.Fatalf("valid document rejected: %v", err)
	}
	if c.Providers[0].ID != "local" || c.Models[0].ID != "local/Qwen/Qwen2.5-7B-Instruct" {
		t.Errorf("not sorted by id: %s, %s", c.Providers[0].ID, c.Models[0].ID)
	}
	if c.Models[0].Capabilities == nil {
		t.Error("a missing capability list should come back empty, not nil")
	}
	if got := c.Models[0].UpstreamModel(); got != "Qwen/Qwen2.5-7B-Instruct" {
		t.Errorf("UpstreamModel = %q", got)
	}
}

func TestParseYAMLAndJSONAgree(t *testing.T) {
	yamlDoc := "\uFEFF" + `# a comment
providers:
  - id: openai
    name: OpenAI
    kind: openai
    base_url: https://api.openai.com/v1
models:
  - id: openai/gpt-4o
    provider: openai
    name: GPT-4o
    context_window: 128000
    max_output_tokens: 16384
    pricing:
      input_per_mtok: 2.50   # unquoted: taken by its text, never as a float
      output_per_mtok: "10"
      cache_read_per_mtok: 1.25
      cache_write_per_mtok: 0
    capabilities: [streaming, tools]
    modalities: [text, image]
    created: 1715558400
`
	// Tab-indented JSON, as json.MarshalIndent and jq --tab write it, which
	// YAML parsers refuse.
	jsonDoc := "{\n\t\"providers\": [{\"id\": \"openai\", \"name\": \"OpenAI\", \"kind\": \"openai\", \"base_url\": \"https://api.openai.com/v1\"}],\n" +
		"\t\"models\": [{\"id\": \"openai/gpt-4o\", \"provider\": \"openai\", \"name\": \"GPT-4o\", \"context_window\": 128000, \"max_output_tokens\": 16384,\n" +
		"\t\t\"pricing\": {\"input_per_mtok\": \"2.50\", \"output_per_mtok\": \"10\", \"cache_read_per_mtok\": \"1.25\", \"cache_write_per_mtok\": \"0\"},\n" +
		"\t\t\"capabilities\": [\"streaming\", \"tools\"], \"modalities\": [\"text\", \"image\"], \"created\": 1715558400}]\n}\n"
	fromYAML, err := Parse([]byte(yamlDoc))
	if err != nil {
		t.Fatalf("YAML: %v", err)
	}
	fromJSON, err := Parse([]byte(jsonDoc))
	if err != nil {
		t.Fatalf("JSON: %v", err)
	}
	if !reflect.DeepEqual(fromYAML, fromJSON) {
		t.Errorf("YAML and JSON differ:\n%+v\n%+v", fromYAML, fromJSON)
	}
	if got := fromYAML.Models[0].Pricing.InputPerMTok; got != "2.50" {
		t.Errorf("unquoted YAML price became %q, want the literal 2.50", got)
	}
}

func TestParseRejectsBadCatalogs(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(c *Catalog)
		want   string // the whole rendering of the one expected problem
		typ    string
		loc    []any
		nProbs int // 0 means 1
	}{
		{"no providers", func(c *Catalog) { c.Providers = nil; c.Models = nil },
			`providers: must list at least one provider`, "too_short", []any{"providers"}, 0},
		{"provider id missing", func(c *Catalog) { c.Providers[0].ID = ""; c.Models = c.Models[1:] },
			`providers[0]: id is required`, "missing", []any{"providers", 0, "id"}, 0},
		{"provider id with slash", func(c *Catalog) { c.Providers[1].ID = "my/vllm"; c.Models = c.Models[:1] },
			`providers[1] (my/vllm): id "my/vllm" is not a provider id: use 1 to 64 lower-case letters, digits, ".", "_" or "-", starting and ending with a letter or digit`, "string_pattern_mismatch", []any{"providers", 1, "id"}, 0},
		{"provider id upper case", func(c *Catalog) { c.Providers[1].ID = "Local"; c.Models = c.Models[:1] },
			`providers[1] (Local): id "Local" is not a provider id`, "string_pattern_mismatch", nil, 0},
		{"duplicate provider", func(c *Catalog) { c.Providers[1] = c.Providers[0]; c.Models = c.Models[:1] },
			`providers[1] (openai): id "openai" is also the id of providers[0]`, "value_error", []any{"providers", 1, "id"}, 0},
		{"blank provider name", func(c *Catalog) { c.Providers[0].Name = "  " },
			`providers[0] (openai): name is required`, "missing", []any{"providers", 0, "name"}, 0},
		{"unknown kind", func(c *Catalog) { c.Providers[0].Kind = "azure" },
			`providers[0] (openai): kind "azure" is not a provider kind; want one of openai, anthropic, google, openai-compatible, bedrock, vertex, gemini, azure-openai`, "literal_error", nil, 0},
		{"missing kind", func(c *Catalog) { c.Providers[0].Kind = "" },
			`providers[0] (openai): kind is required`, "missing", nil, 0},
		{"base_url missing for openai", func(c *Catalog) { c.Providers[0].BaseURL = "" },
			`providers[0] (openai): base_url is required for kind "openai"; only openai-compatible and azure-openai providers leave it to the credential`, "missing", nil, 0},
		{"base_url not a URL", func(c *Catalog) { c.Providers[0].BaseURL = "api.openai.com/v1" },
			`providers[0] (openai): base_url "api.openai.com/v1" is not an absolute http or https URL`, "url_parsing", nil, 0},
		{"base_url ftp", func(c *Catalog) { c.Providers[0].BaseURL = "ftp://x/v1" },
			`base_url "ftp://x/v1" is not an absolute http or https URL`, "url_parsing", nil, 0},
		{"base_url trailing slash", func(c *Catalog) { c.Providers[0].BaseURL = "https://api.openai.com/v1/" },
			`base_url "https://api.openai.com/v1/" must not end with "/"; resource paths are appended to it`, "value_error", nil, 0},
		{"base_url query", func(c *Catalog) { c.Providers[0].BaseURL = "https://api.openai.com/v1?x=1" },
			`must not have a query or fragment`, "value_error", nil, 0},
		{"base_url credentials", func(c *Catalog) { c.Providers[0].BaseURL = "https://k:s@api.openai.com/v1" },
			`base_url must not carry credentials; they belong in a provider credential`, "value_error", nil, 0},

		{"model id missing", func(c *Catalog) { c.Models[0].ID = "" },
			`models[0]: id is required`, "missing", []any{"models", 0, "id"}, 0},
		{"model id without provider", func(c *Catalog) { c.Models[0].ID = "gpt-4o" },
			`models[0] (gpt-4o): id "gpt-4o" is not of the form "<provider>/<model>"`, "string_pattern_mismatch", nil, 0},
		{"model id with empty model part", func(c *Catalog) { c.Models[0].ID = "openai/" },
			`models[0] (openai/): id model part "" must be "/"-separated non-empty segments`, "string_pattern_mismatch", nil, 0},
		{"model id with empty segment", func(c *Catalog) { c.Models[1].ID = "local/Qwen//x" },
			`models[1] (local/Qwen//x): id model part "Qwen//x" must be`, "string_pattern_mismatch", nil, 0},
		{"model id with space", func(c *Catalog) { c.Models[0].ID = "openai/gpt 4o" },
			`model part "gpt 4o"`, "string_pattern_mismatch", nil, 0},
		{"model id too long", func(c *Catalog) { c.Models[0].ID = "openai/" + strings.Repeat("x", 250) },
			`id is longer than 255 characters`, "string_too_long", nil, 0},
		{"duplicate model", func(c *Catalog) { c.Models = append(c.Models, c.Models[0]) },
			`models[2] (openai/gpt-4o): id "openai/gpt-4o" is also the id of models[0]`, "value_error", []any{"models", 2, "id"}, 0},
		{"unknown provider", func(c *Catalog) { c.Models[0].ID = "azure/gpt-4o"; c.Models[0].Provider = "azure" },
			`models[0] (azure/gpt-4o): provider "azure" is not the id of any provider in this catalog`, "value_error", []any{"models", 0, "provider"}, 0},
		{"model provider missing", func(c *Catalog) { c.Models[0].Provider = "" },
			`models[0] (openai/gpt-4o): provider is required`, "missing", nil, 0},
		{"id of another provider", func(c *Catalog) { c.Models[0].Provider = "local" },
			`models[0] (openai/gpt-4o): id "openai/gpt-4o" must start with "local/", its provider`, "value_error", []any{"models", 0, "id"}, 0},
		{"blank model name", func(c *Catalog) { c.Models[0].Name = "" },
			`models[0] (openai/gpt-4o): name is required`, "missing", nil, 0},
		{"long model name", func(c *Catalog) { c.Models[0].Name = strings.Repeat("é", 201) },
			`name is longer than 200 characters`, "string_too_long", nil, 0},
		{"zero context window", func(c *Catalog) { c.Models[0].ContextWindow = 0 },
			`models[0] (openai/gpt-4o): context_window must be greater than 0, got 0`, "greater_than", nil, 0},
		{"negative max output", func(c *Catalog) { c.Models[0].MaxOutputTokens = -1 },
			`models[0] (openai/gpt-4o): max_output_tokens must be greater than 0, got -1`, "greater_than", nil, 0},
		{"max output beyond context", func(c *Catalog) { c.Models[0].MaxOutputTokens = 200000 },
			`models[0] (openai/gpt-4o): max_output_tokens 200000 exceeds context_window 128000, which output shares with input`, "less_than_equal", nil, 0},
		{"exponent price", func(c *Catalog) { c.Models[0].Pricing.InputPerMTok = "1e3" },
			`models[0] (openai/gpt-4o): pricing.input_per_mtok "1e3" is not a decimal string (digits with an optional fraction, like "2.50")`, "string_pattern_mismatch", []any{"models", 0, "pricing", "input_per_mtok"}, 0},
		{"negative price", func(c *Catalog) { c.Models[0].Pricing.OutputPerMTok = "-1" },
			`pricing.output_per_mtok "-1" is not a decimal string`, "string_pattern_mismatch", nil, 0},
		{"price without integer part", func(c *Catalog) { c.Models[0].Pricing.CacheReadPerMTok = ".5" },
			`pricing.cache_read_per_mtok ".5" is not a decimal string`, "string_pattern_mismatch", nil, 0},
		{"price with bare point", func(c *Catalog) { c.Models[0].Pricing.CacheWritePerMTok = "1." },
			`pricing.cache_write_per_mtok "1." is not a decimal string`, "string_pattern_mismatch", nil, 0},
		{"price with comma", func(c *Catalog) { c.Models[0].Pricing.InputPerMTok = "2,50" },
			`pricing.input_per_mtok "2,50" is not a decimal string`, "string_pattern_mismatch", nil, 0},
		{"price with space", func(c *Catalog) { c.Models[0].Pricing.InputPerMTok = " 2.50" },
			`pricing.input_per_mtok " 2.50" is not a decimal string`, "string_pattern_mismatch", nil, 0},
		{"price with unicode digit", func(c *Catalog) { c.Models[0].Pricing.InputPerMTok = "٢" },
			`pricing.input_per_mtok "٢" is not a decimal string`, "string_pattern_mismatch", nil, 0},
		{"price missing", func(c *Catalog) { c.Models[0].Pricing.OutputPerMTok = "" },
			`models[0] (openai/gpt-4o): pricing.output_per_mtok is required`, "missing", nil, 0},
		{"price too long", func(c *Catalog) { c.Models[0].Pricing.InputPerMTok = "0." + strings.Repeat("1", 40) },
			`pricing.input_per_mtok is longer than 32 characters`, "string_too_long", nil, 0},
		{"bad 1h write price", func(c *Catalog) { c.Models[0].Pricing.CacheWrite1hPerMTok = "x" },
			`models[0] (openai/gpt-4o): pricing.cache_write_1h_per_mtok "x" is not a decimal string`, "string_pattern_mismatch", []any{"models", 0, "pricing", "cache_write_1h_per_mtok"}, 0},
		{"long context without a threshold", func(c *Catalog) {
			c.Models[0].Pricing.LongContext = &LongContextPricing{InputPerMTok: "5", OutputPerMTok: "20", CacheReadPerMTok: "2.5", CacheWritePerMTok: "5"}
		}, `models[0] (openai/gpt-4o): pricing.long_context.above_input_tokens must be greater than 0, got 0`, "greater_than", []any{"models", 0, "pricing", "long_context", "above_input_tokens"}, 0},
		{"long context price missing", func(c *Catalog) {
			c.Models[0].Pricing.LongContext = &LongContextPricing{AboveInputTokens: 100_000, InputPerMTok: "5", OutputPerMTok: "20", CacheReadPerMTok: "2.5"}
		}, `models[0] (openai/gpt-4o): pricing.long_context.cache_write_per_mtok is required`, "missing", []any{"models", 0, "pricing", "long_context", "cache_write_per_mtok"}, 0},
		{"long context bad 1h price", func(c *Catalog) {
			c.Models[0].Pricing.LongContext = &LongContextPricing{AboveInputTokens: 100_000, InputPerMTok: "5", OutputPerMTok: "20", CacheReadPerMTok: "2.5", CacheWritePerMTok: "5", CacheWrite1hPerMTok: "-1"}
		}, `pricing.long_context.cache_write_1h_per_mtok "-1" is not a decimal string`, "string_pattern_mismatch", nil, 0},
		{"unknown capability", func(c *Catalog) { c.Models[0].Capabilities = append(c.Models[0].Capabilities, "vision") },
			`models[0] (openai/gpt-4o): capabilities[2] "vision" is not a capability; want one of streaming, tools, reasoning, structured_output`, "literal_error", []any{"models", 0, "capabilities", 2}, 0},
		{"repeated capability", func(c *Catalog) { c.Models[0].Capabilities = append(c.Models[0].Capabilities, "tools") },
			`models[0] (openai/gpt-4o): capabilities[2] "tools" is listed twice`, "value_error", nil, 0},
		{"unknown modality", func(c *Catalog) { c.Models[0].Modalities = []Modality{"text", "speech"} },
			`models[0] (openai/gpt-4o): modalities[1] "speech" is not a modality; want one of text, image, audio, video, pdf`, "literal_error", nil, 0},
		{"repeated modality", func(c *Catalog) { c.Models[0].Modalities = []Modality{"text", "text"} },
			`modalities[1] "text" is listed twice`, "value_error", nil, 0},
		{"no modalities", func(c *Catalog) { c.Models[0].Modalities = nil },
			`models[0] (openai/gpt-4o): modalities must list at least one modality`, "too_short", nil, 0},
		{"negative created", func(c *Catalog) { c.Models[0].Created = -1 },
			`models[0] (openai/gpt-4o): created must not be negative, got -1`, "greater_than_equal", nil, 0},
		{"everything at once", func(c *Catalog) {
			c.Models[0].Pricing.InputPerMTok = "1e3"
			c.Models[0].Capabilities = []Capability{"vision"}
			c.Models[1].ContextWindow = 0
			c.Providers[0].Kind = "azure"
		}, `models[1] (local/Qwen/Qwen2.5-7B-Instruct): context_window must be greater than 0, got 0`, "", nil, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := validDoc()
			tt.edit(&doc)
			_, err := Parse(encode(t, doc))
			if err == nil {
				t.Fatal("accepted")
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error is %T, want *ValidationError: %v", err, err)
			}
			n := max(tt.nProbs, 1)
			if len(ve.Problems) != n {
				t.Fatalf("%d problems, want %d:\n%v", len(ve.Problems), n, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error\n  %v\ndoes not contain\n  %s", err, tt.want)
			}
			if n > 1 {
				return
			}
			p := ve.Problems[0]
			if p.Type != tt.typ {
				t.Errorf("type %q, want %q", p.Type, tt.typ)
			}
			if tt.loc != nil && !reflect.DeepEqual(p.Loc, tt.loc) {
				t.Errorf("loc %#v, want %#v", p.Loc, tt.loc)
			}
			var asProblem Problem
			if !errors.As(err, &asProblem) || asProblem.Msg != p.Msg {
				t.Error("errors.As does not reach the Problem")
			}
		})
	}
}

func TestParseRejectsBadDocuments(t *testing.T) {
	const provider = `{"id":"x","name":"X","kind":"openai","base_url":"https://x.example/v1"}`
	tests := []struct {
		name, doc string
		want      []string
		typ       string
	}{
		{"empty", "", []string{"the catalog document is empty"}, "missing"},
		{"blank", " \n\t\n", []string{"the catalog document is empty"}, "missing"},
		{"only a YAML comment", "# nothing here\n", []string{"the catalog document is empty"}, "missing"},
		{"JSON unknown field", `{"providers":[` + provider + `],"models":[],"version":2}`,
			[]string{`line 1 col `, `unknown field "version"`}, "extra_forbidden"},
		{"JSON unknown nested field", `{"providers":[{"id":"x","name":"X","kind":"openai","base_url":"https://x.example/v1","api_key":"k"}]}`,
			[]string{`unknown field "api_key"`}, "extra_forbidden"},
		{"JSON number price", "{\"providers\":[" + provider + "],\n\"models\":[{\"id\":\"x/a\",\"pricing\":{\"input_per_mtok\":0.30000000000000004}}]}",
			[]string{"line 2 col ", "models.pricing.input_per_mtok: want a string, got JSON number"}, "string_type"},
		{"JSON string integer", `{"providers":[` + provider + `],"models":[{"id":"x/a","context_window":"128000"}]}`,
			[]string{"models.context_window: want an integer, got JSON string"}, "int_type"},
		{"JSON fractional integer", `{"providers":[` + provider + `],"models":[{"id":"x/a","created":1.5}]}`,
			[]string{"models.created: want an integer, got JSON number 1.5"}, "int_type"},
		{"JSON array at top", `[` + provider + `]`,
			[]string{"the document: want an object, got JSON array"}, "model_type"},
		{"JSON duplicate key", "{\"providers\":[" + provider + "],\n\"models\":[{\"id\":\"x/a\",\"pricing\":{\"input_per_mtok\":\"1\",\"output_per_mtok\":\"2\",\"input_per_mtok\":\"0\"}}]}",
			[]string{`line 2 col `, `key "input_per_mtok" appears twice in one object`}, "value_error"},
		{"JSON duplicate top-level key", `{"providers":[],"models":[],"providers":[]}`,
			[]string{`key "providers" appears twice in one object`}, "value_error"},
		{"JSON trailing data", `{"providers":[` + provider + `]} {"providers":[]}`,
			[]string{"unexpected data after the catalog object"}, "json_invalid"},
		{"JSON syntax", `{"providers":[` + provider + `,]}`,
			[]string{"line 1 col ", "invalid JSON: invalid character ']'"}, "json_invalid"},
		{"JSON truncated", `{"providers":[` + provider,
			[]string{"invalid JSON: the document ends early"}, "json_invalid"},
		{"YAML unknown field", "providers:\n  - id: x\n    name: X\n    kind: openai\n    base_url: https://x.example/v1\n    region: eu\n",
			[]string{`line 6: unknown field "region"`}, "extra_forbidden"},
		{"YAML wrong type", "providers:\n  - id: x\n    name: X\n    kind: openai\n    base_url: https://x.example/v1\nmodels:\n  - id: x/a\n    context_window: 128k\n",
			[]string{`line 8: want an integer, got a string "128k"`}, "int_type"},
		{"YAML list for a string", "providers:\n  - id: [x]\n",
			[]string{`line 2: want a string, got a list`}, "string_type"},
		{"YAML scalar document", "just text\n",
			[]string{`line 1: want a mapping, got a string "just text"`}, "model_type"},
		{"YAML syntax", "providers: [\n",
			[]string{"invalid YAML: line 1: did not find expected node content"}, "yaml_invalid"},
		{"YAML duplicate key", "providers: []\nproviders: []\n",
			[]string{`line 2: key "providers" is already defined at line 1`}, "value_error"},
		{"two YAML documents", "providers: []\n---\nmodels: []\n",
			[]string{"line 2: a catalog file holds one YAML document; found another"}, "yaml_invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc))
			if err == nil {
				t.Fatal("accepted")
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error is %T, want *ValidationError: %v", err, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n  %v\ndoes not contain\n  %s", err, w)
				}
			}
			if got := ve.Problems[0].Type; got != tt.typ {
				t.Errorf("type %q, want %q", got, tt.typ)
			}
		})
	}
}

func TestParseYAMLReportsEveryDecodeProblem(t *testing.T) {
	doc := "providers:\n  - id: x\n    nmae: X\n    kind: [openai]\nmodels:\n  - id: x/a\n    context_window: lots\n"
	_, err := Parse([]byte(doc))
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("got %v", err)
	}
	want := []string{`line 3: unknown field "nmae"`, `line 4: want a string, got a list`, `line 7: want an integer, got a string "lots"`}
	var got []string
	for _, p := range ve.Problems {
		got = append(got, p.Error())
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems\n  %q\nwant\n  %q", got, want)
	}
}

func TestValidationErrorRendering(t *testing.T) {
	one := &ValidationError{Problems: []Problem{{Loc: []any{"models", 3, "pricing", "input_per_mtok"}, ID: "openai/gpt-4o", Msg: `"1e3" is not a decimal string`}}}
	if got, want := one.Error(), `invalid catalog: models[3] (openai/gpt-4o): pricing.input_per_mtok "1e3" is not a decimal string`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	two := &ValidationError{Problems: []Problem{
		{Loc: []any{"providers"}, Msg: "must list at least one provider"},
		{Msg: `line 3: unknown field "x"`},
	}}
	if got, want := two.Error(), "invalid catalog: 2 problems\n  providers: must list at least one provider\n  line 3: unknown field \"x\""; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestNewCopiesItsInput(t *testing.T) {
	doc := validDoc()
	c, err := New(doc.Providers, doc.Models)
	if err != nil {
		t.Fatal(err)
	}
	doc.Models[0].Capabilities[0] = "changed"
	doc.Providers[0].Name = "changed"
	if m, _ := c.Model("openai/gpt-4o"); m.Capabilities[0] != CapabilityStreaming {
		t.Error("New kept the caller's capability slice")
	}
	if p, _ := c.Provider("openai"); p.Name != "OpenAI" {
		t.Error("New kept the caller's provider slice")
	}
}

func TestVocabulary(t *testing.T) {
	for _, s := range []string{"streaming", "tools", "reasoning", "structured_output"} {
		if !ValidCapability(s) {
			t.Errorf("ValidCapability(%q) = false", s)
		}
	}
	for _, s := range []string{"text", "image", "audio", "video", "pdf"} {
		if !ValidModality(s) {
			t.Errorf("ValidModality(%q) = false", s)
		}
	}
	for _, s := range []string{"", "Streaming", "vision", "json", "text "} {
		if ValidCapability(s) || ValidModality(s) {
			t.Errorf("%q accepted", s)
		}
	}
	if !ValidKind("openai-compatible") || ValidKind("azure") {
		t.Error("ValidKind wrong")
	}
	caps := Capabilities()
	caps[0] = "changed"
	if Capabilities()[0] != CapabilityStreaming {
		t.Error("Capabilities exposes the vocabulary for writing")
	}
	if len(Modalities()) != 5 || len(Kinds()) != 8 {
		t.Error("vocabulary sizes changed")
	}
}
