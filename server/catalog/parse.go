package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Problem is one thing wrong with a catalog document.
type Problem struct {
	// Loc is the path from the document root, e.g. "models", 3, "pricing",
	// "input_per_mtok". It is empty for problems found while decoding, where
	// the decoder knows only a line, which Msg then carries.
	Loc []any
	// ID is the id of the provider or model Loc points into, when it has
	// one: "models[37]" alone sends the reader counting entries.
	ID string
	// Type is the pydantic word for the problem (missing, literal_error,
	// string_pattern_mismatch, extra_forbidden, …), so the API can report it
	// as a validation item (DESIGN §5) without parsing Msg.
	Type string
	// Msg reads as the continuation of the field path: `pricing.input_per_mtok`
	// + ` "1e3" is not a decimal string …`.
	Msg string
}

// Error renders the problem as `models[3] (openai/gpt-4o): pricing.input_per_mtok "1e3" is not …`.
func (p Problem) Error() string {
	if len(p.Loc) == 0 {
		return p.Msg
	}
	where, rest := formatPath(p.Loc[:1]), p.Loc[1:]
	if len(rest) > 0 {
		if _, ok := rest[0].(int); ok {
			where, rest = formatPath(p.Loc[:2]), p.Loc[2:]
		}
	}
	if p.ID != "" {
		where += " (" + p.ID + ")"
	}
	if len(rest) == 0 {
		return where + ": " + p.Msg
	}
	return where + ": " + formatPath(rest) + " " + p.Msg
}

func formatPath(loc []any) string {
	var b strings.Builder
	for _, part := range loc {
		switch v := part.(type) {
		case int:
			b.WriteString("[" + strconv.Itoa(v) + "]")
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, v)
		}
	}
	return b.String()
}

// ValidationError is every problem found in one catalog document; Parse and
// New report them all at once so an operator fixes a file in one pass.
type ValidationError struct {
	Problems []Problem
}

func (e *ValidationError) Error() string {
	if len(e.Problems) == 1 {
		return "invalid catalog: " + e.Problems[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "invalid catalog: %d problems", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.Error())
	}
	return b.String()
}

// Unwrap exposes the problems to errors.Is and errors.As.
func (e *ValidationError) Unwrap() []error {
	errs := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		errs[i] = p
	}
	return errs
}

// Parse reads a catalog document, YAML or JSON, and validates it.
//
// A document whose first non-blank character is '{' or '[' is JSON and is
// decoded as such: in JSON, prices must be strings, because a JSON number
// has usually passed through somebody's float64 and 0.1+0.2 would arrive
// as 0.30000000000000004. Anything else is YAML, where an unquoted price
// such as `2.50` is taken by its literal text, never as a float.
//
// Decoding is strict: unknown fields, repeated keys, type mismatches,
// trailing data and a second YAML document are errors. The result is sorted by ID. Every error
// is a *ValidationError.
func Parse(data []byte) (*Catalog, error) {
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, single(Problem{Type: "missing", Msg: "the catalog document is empty"})
	}
	var doc Catalog
	var err error
	if trimmed[0] == '{' || trimmed[0] == '[' {
		err = decodeJSON(data, &doc)
	} else {
		err = decodeYAML(data, &doc)
	}
	if err != nil {
		return nil, err
	}
	return New(doc.Providers, doc.Models)
}

// New validates providers and models as a catalog and returns it sorted by
// ID, with a nil capability list or model list made empty so it encodes
// as [] rather than null. The inputs are copied, never retained. Problem
// locations index the slices as given.
func New(providers []Provider, models []Model) (*Catalog, error) {
	c := &Catalog{Providers: slices.Clone(providers), Models: cloneModels(models)}
	if ps := c.problems(); len(ps) > 0 {
		return nil, &ValidationError{Problems: ps}
	}
	for i := range c.Models {
		m := &c.Models[i]
		if m.Capabilities == nil {
			m.Capabilities = []Capability{}
		}
		if m.Type == ModelTypeChat {
			// One spelling of a chat model, so equal catalogs encode alike.
			m.Type = ""
		}
		if m.Constraints != nil && *m.Constraints == (Constraints{}) {
			// constraints: {} constrains nothing; one spelling again.
			m.Constraints = nil
		}
	}
	if c.Models == nil {
		c.Models = []Model{}
	}
	slices.SortFunc(c.Providers, func(a, b Provider) int { return strings.Compare(a.ID, b.ID) })
	slices.SortFunc(c.Models, func(a, b Model) int { return strings.Compare(a.ID, b.ID) })
	return c, nil
}

func single(p Problem) *ValidationError { return &ValidationError{Problems: []Problem{p}} }

func decodeJSON(data []byte, doc *Catalog) error {
	if p := duplicateJSONKey(data); p != nil {
		return single(*p)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(doc); err != nil {
		return single(jsonProblem(data, dec.InputOffset(), err))
	}
	if _, err := dec.Token(); err != io.EOF {
		line, col := position(data, dec.InputOffset())
		return single(Problem{Type: "json_invalid", Msg: fmt.Sprintf("line %d col %d: unexpected data after the catalog object", line, col)})
	}
	return nil
}

func jsonProblem(data []byte, offset int64, err error) Problem {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		line, col := position(data, syntax.Offset)
		return Problem{Type: "json_invalid", Msg: fmt.Sprintf("line %d col %d: invalid JSON: %s", line, col, syntax.Error())}
	case errors.As(err, &typ):
		line, col := position(data, typ.Offset)
		what := "the document"
		if typ.Field != "" {
			what = typ.Field
		}
		return Problem{Type: typeWord(typ.Type), Msg: fmt.Sprintf("line %d col %d: %s: want %s, got JSON %s", line, col, what, describeType(typ.Type), typ.Value)}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return Problem{Type: "json_invalid", Msg: "invalid JSON: the document ends early"}
	}
	line, col := position(data, offset)
	if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return Problem{Type: "extra_forbidden", Msg: fmt.Sprintf("line %d col %d: unknown field %s", line, col, field)}
	}
	return Problem{Type: "json_invalid", Msg: fmt.Sprintf("line %d col %d: %v", line, col, err)}
}

// duplicateJSONKey finds an object key given twice. encoding/json would
// keep the last one silently, and a second "input_per_mtok" further down an
// entry is exactly the edit that goes unnoticed in review; YAML refuses the
// same thing, so JSON does too. Malformed JSON is left to the real decode,
// which explains it better.
func duplicateJSONKey(data []byte) *Problem {
	type frame struct {
		keys      map[string]bool // nil for an array
		expectKey bool
	}
	var stack []*frame
	// valueDone records that the enclosing object's current member has its
	// value, so the next string there is a key again.
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].keys != nil {
			stack[n-1].expectKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, &frame{keys: map[string]bool{}, expectKey: true})
			case '[':
				stack = append(stack, &frame{})
			default:
				stack = stack[:len(stack)-1]
				valueDone()
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1].keys != nil && stack[n-1].expectKey {
				top := stack[n-1]
				if top.keys[v] {
					line, col := position(data, dec.InputOffset())
					return &Problem{Type: "value_error", Msg: fmt.Sprintf("line %d col %d: key %q appears twice in one object", line, col, v)}
				}
				top.keys[v], top.expectKey = true, false
				continue
			}
			valueDone()
		default:
			valueDone()
		}
	}
}

// position turns a byte offset into a 1-based line and column for messages.
func position(data []byte, offset int64) (line, col int) {
	offset = min(max(offset, 0), int64(len(data)))
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:]) + 1
	return line, col
}

var (
	yamlUnknownField = regexp.MustCompile(`^line (\d+): field (.+) not found in type \S+$`)
	yamlWrongType    = regexp.MustCompile("^line (\\d+): cannot unmarshal (!!\\w+)(?: `(.*)`)? into (.+)$")
	yamlDuplicateKey = regexp.MustCompile(`^line (\d+): mapping key (.+) already defined at line (\d+)$`)
)

func decodeYAML(data []byte, doc *Catalog) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err := dec.Decode(doc)
	if err == io.EOF {
		return single(Problem{Type: "missing", Msg: "the catalog document is empty"})
	}
	var typ *yaml.TypeError
	if errors.As(err, &typ) {
		ve := &ValidationError{}
		for _, msg := range typ.Errors {
			ve.Problems = append(ve.Problems, yamlProblem(msg))
		}
		return ve
	}
	if err != nil {
		return single(Problem{Type: "yaml_invalid", Msg: "invalid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")})
	}
	var next yaml.Node
	if err := dec.Decode(&next); err != io.EOF {
		return single(Problem{Type: "yaml_invalid", Msg: fmt.Sprintf("line %d: a catalog file holds one YAML document; found another", next.Line)})
	}
	return nil
}

// yamlProblem rewrites the decoder's messages, which name Go types
// ("field foo not found in type catalog.Model"), into the file's terms.
func yamlProblem(msg string) Problem {
	if m := yamlUnknownField.FindStringSubmatch(msg); m != nil {
		return Problem{Type: "extra_forbidden", Msg: fmt.Sprintf("line %s: unknown field %q", m[1], m[2])}
	}
	if m := yamlWrongType.FindStringSubmatch(msg); m != nil {
		got := yamlTagWords[m[2]]
		if got == "" {
			got = m[2]
		}
		if m[3] != "" {
			got += " " + strconv.Quote(m[3])
		}
		want, typ := "a value of Go type "+m[4], "type_error"
		if w, ok := goTypeWords[m[4]]; ok {
			want, typ = w.desc, w.typ
		}
		return Problem{Type: typ, Msg: fmt.Sprintf("line %s: want %s, got %s", m[1], want, got)}
	}
	if m := yamlDuplicateKey.FindStringSubmatch(msg); m != nil {
		return Problem{Type: "value_error", Msg: fmt.Sprintf("line %s: key %s is already defined at line %s", m[1], m[2], m[3])}
	}
	return Problem{Type: "type_error", Msg: strings.TrimPrefix(msg, "yaml: ")}
}

var yamlTagWords = map[string]string{
	"!!str": "a string", "!!int": "an integer", "!!float": "a number", "!!bool": "a boolean",
	"!!null": "null", "!!map": "a mapping", "!!seq": "a list", "!!timestamp": "a timestamp",
}

type typeWords struct{ desc, typ string }

// goTypeWords covers the Go types a catalog document decodes into.
var goTypeWords = map[string]typeWords{
	"string":               {"a string", "string_type"},
	"catalog.Kind":         {"a string", "string_type"},
	"catalog.Capability":   {"a string", "string_type"},
	"catalog.Modality":     {"a string", "string_type"},
	"int64":                {"an integer", "int_type"},
	"[]catalog.Provider":   {"a list", "list_type"},
	"[]catalog.Model":      {"a list", "list_type"},
	"[]catalog.Capability": {"a list", "list_type"},
	"[]catalog.Modality":   {"a list", "list_type"},
	"catalog.Catalog":      {"a mapping", "model_type"},
	"catalog.Provider":     {"a mapping", "model_type"},
	"catalog.Model":        {"a mapping", "model_type"},
	"catalog.Pricing":      {"a mapping", "model_type"},
	"catalog.Constraints":  {"a mapping", "model_type"},
	"bool":                 {"a boolean", "bool_type"},
}

func typeWord(t reflect.Type) string {
	if t == nil {
		return "type_error"
	}
	switch t.Kind() {
	case reflect.String:
		return "string_type"
	case reflect.Bool:
		return "bool_type"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "int_type"
	case reflect.Slice:
		return "list_type"
	case reflect.Struct, reflect.Map:
		return "model_type"
	}
	return "type_error"
}

func describeType(t reflect.Type) string {
	switch typeWord(t) {
	case "string_type":
		return "a string"
	case "int_type":
		return "an integer"
	case "list_type":
		return "an array"
	case "bool_type":
		return "a boolean"
	case "model_type":
		return "an object"
	}
	return "a value of Go type " + t.String()
}

// DecimalPattern is the form of every price: digits with an optional
// fraction. No sign, exponent or separators, so that the text an operator
// wrote is the exact value charged.
const DecimalPattern = `^\d+(?:\.\d+)?$`

var decimalRE = regexp.MustCompile(DecimalPattern)

// isDecimal is decimalRE.MatchString without the regular expression (a
// usage event's five prices are checked per event; issue 33):
// TestIsDecimalIsThePattern holds it to the pattern.
func isDecimal(s string) bool {
	whole, frac, dot := strings.Cut(s, ".")
	return allDigits(whole) && (!dot || allDigits(frac))
}

// allDigits: s is one or more ASCII digits (the pattern's \d).
func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// maxPriceLen bounds a price's text; no real price needs more, and it keeps
// the decimal arithmetic on a request path cheap.
const maxPriceLen = 32

const maxNameLen = 200

// MaxModelIDLen bounds a model id: policies name models in strings of at
// most 255 characters (spec §8), so no longer id could ever be governed.
// Usage ingestion uses the same bound.
const MaxModelIDLen = 255

var (
	// A provider ID is the first segment of a model ID, so it must not
	// contain "/"; lower case keeps "OpenAI/x" and "openai/x" from being two
	// models.
	providerIDRE = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9._-]{0,62}[a-z0-9])?$`)
	// The upstream part is whatever the provider calls the model: Hugging
	// Face repositories (Qwen/Qwen2.5-7B-Instruct), Ollama tags
	// (llama3.1:8b), dated snapshots. Empty segments are refused because
	// "a//b" or a trailing "/" is always a typo.
	upstreamModelRE = regexp.MustCompile(`^[A-Za-z0-9._:@+-]+(?:/[A-Za-z0-9._:@+-]+)*$`)
)

type problemList []Problem

func (ps *problemList) add(id, typ, msg string, loc ...any) {
	*ps = append(*ps, Problem{Loc: loc, ID: id, Type: typ, Msg: msg})
}

func (c *Catalog) problems() []Problem {
	var ps problemList
	if len(c.Providers) == 0 {
		ps.add("", "too_short", "must list at least one provider", "providers")
	}
	providerAt := make(map[string]int, len(c.Providers))
	for i, p := range c.Providers {
		checkProvider(&ps, i, p, providerAt)
	}
	modelAt := make(map[string]int, len(c.Models))
	for i, m := range c.Models {
		checkModel(&ps, i, m, providerAt, modelAt)
		if j, ok := providerAt[m.Provider]; ok {
			checkConstraints(&ps, i, m, c.Providers[j].Kind)
		}
	}
	return ps
}

func checkProvider(ps *problemList, i int, p Provider, seen map[string]int) {
	at := func(field string) []any { return []any{"providers", i, field} }
	switch {
	case p.ID == "":
		ps.add("", "missing", "is required", at("id")...)
	case !providerIDRE.MatchString(p.ID):
		ps.add(p.ID, "string_pattern_mismatch", fmt.Sprintf(`%q is not a provider id: use 1 to 64 lower-case letters, digits, ".", "_" or "-", starting and ending with a letter or digit`, p.ID), at("id")...)
	default:
		if j, dup := seen[p.ID]; dup {
			ps.add(p.ID, "value_error", fmt.Sprintf("%q is also the id of providers[%d]", p.ID, j), at("id")...)
		} else {
			seen[p.ID] = i
		}
	}
	checkName(ps, p.ID, p.Name, at("name"))
	switch {
	case p.Kind == "":
		ps.add(p.ID, "missing", "is required", at("kind")...)
	case !ValidKind(string(p.Kind)):
		ps.add(p.ID, "literal_error", fmt.Sprintf("%q is not a provider kind; want one of %s", p.Kind, join(kinds)), at("kind")...)
	}
	checkBaseURL(ps, p, at("base_url"))
}

func checkBaseURL(ps *problemList, p Provider, loc []any) {
	if p.BaseURL == "" {
		if p.Kind != KindOpenAICompatible && p.Kind != KindAzureOpenAI && ValidKind(string(p.Kind)) {
			ps.add(p.ID, "missing", fmt.Sprintf("is required for kind %q; only openai-compatible and azure-openai providers leave it to the credential", p.Kind), loc...)
		}
		return
	}
	u, err := url.Parse(p.BaseURL)
	switch {
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		ps.add(p.ID, "url_parsing", fmt.Sprintf("%q is not an absolute http or https URL", p.BaseURL), loc...)
	case u.User != nil:
		ps.add(p.ID, "value_error", "must not carry credentials; they belong in a provider credential", loc...)
	case u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(p.BaseURL, "?#"):
		ps.add(p.ID, "value_error", fmt.Sprintf("%q must not have a query or fragment", p.BaseURL), loc...)
	case strings.HasSuffix(p.BaseURL, "/"):
		ps.add(p.ID, "value_error", fmt.Sprintf(`%q must not end with "/"; resource paths are appended to it`, p.BaseURL), loc...)
	}
}

func checkModel(ps *problemList, i int, m Model, providers, seen map[string]int) {
	at := func(field ...any) []any { return append([]any{"models", i}, field...) }
	id := m.ID
	idOK := checkModelID(ps, i, m.ID, seen, at)
	switch _, known := providers[m.Provider]; {
	case m.Provider == "":
		ps.add(id, "missing", "is required", at("provider")...)
	case !known:
		ps.add(id, "value_error", fmt.Sprintf("%q is not the id of any provider in this catalog", m.Provider), at("provider")...)
	case idOK && !strings.HasPrefix(m.ID, m.Provider+"/"):
		ps.add(id, "value_error", fmt.Sprintf("%q must start with %q, its provider", m.ID, m.Provider+"/"), at("id")...)
	}
	checkName(ps, id, m.Name, at("name"))
	checkModelLimits(ps, m, at)
	checkPricing(ps, id, m.Pricing, at)
	checkModelLists(ps, m, at)
	switch m.Type {
	case "", ModelTypeChat, ModelTypeEmbedding:
	default:
		ps.add(id, "literal_error", fmt.Sprintf("%q is not a model type; want chat or embedding", m.Type), at("type")...)
	}
	if m.Created < 0 {
		ps.add(id, "greater_than_equal", fmt.Sprintf("must not be negative, got %d", m.Created), at("created")...)
	}
}

// anthropicVersionRE is an anthropic-version: the date of an API version.
var anthropicVersionRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// checkConstraints: an anthropic_version is a date, on a model of kind
// anthropic (the only upstream that takes the header); an embedding model
// has no sampling or tools to constrain.
func checkConstraints(ps *problemList, i int, m Model, kind Kind) {
	c := m.Constraints
	if c == nil {
		return
	}
	at := []any{"models", i, "constraints"}
	if m.Type == ModelTypeEmbedding && *c != (Constraints{}) {
		ps.add(m.ID, "value_error", "an embedding model takes no request constraints", at...)
		return
	}
	if v := c.AnthropicVersion; v != "" {
		switch {
		case !anthropicVersionRE.MatchString(v):
			ps.add(m.ID, "string_pattern_mismatch", fmt.Sprintf(`%q is not an API version date (YYYY-MM-DD, like "2026-10-21")`, v), append(at, "anthropic_version")...)
		case kind != KindAnthropic:
			ps.add(m.ID, "value_error", fmt.Sprintf("is for models of kind anthropic; a %s provider's upstream takes no anthropic-version header", kind), append(at, "anthropic_version")...)
		}
	}
}

// checkModelID checks a model id's form ("<provider>/<model>") and that
// no other model has it; it reports whether the form is right.
func checkModelID(ps *problemList, i int, id string, seen map[string]int, at func(...any) []any) bool {
	switch {
	case id == "":
		ps.add("", "missing", "is required", at("id")...)
		return false
	case len(id) > MaxModelIDLen:
		ps.add(id, "string_too_long", fmt.Sprintf("is longer than %d characters", MaxModelIDLen), at("id")...)
		return false
	}
	idOK := false
	prefix, upstream, found := strings.Cut(id, "/")
	switch {
	case !found || prefix == "":
		ps.add(id, "string_pattern_mismatch", fmt.Sprintf(`%q is not of the form "<provider>/<model>"`, id), at("id")...)
	case !upstreamModelRE.MatchString(upstream):
		ps.add(id, "string_pattern_mismatch", fmt.Sprintf(`model part %q must be "/"-separated non-empty segments of letters, digits, ".", "_", "-", ":", "@" or "+"`, upstream), at("id")...)
	default:
		idOK = true
	}
	if j, dup := seen[id]; dup {
		ps.add(id, "value_error", fmt.Sprintf("%q is also the id of models[%d]", id, j), at("id")...)
	} else {
		seen[id] = i
	}
	return idOK
}

// checkModelLimits: a context window, and a maximum output within it
// (output shares the window with input).
func checkModelLimits(ps *problemList, m Model, at func(...any) []any) {
	if m.ContextWindow <= 0 {
		ps.add(m.ID, "greater_than", fmt.Sprintf("must be greater than 0, got %d", m.ContextWindow), at("context_window")...)
	}
	switch {
	case m.MaxOutputTokens <= 0:
		ps.add(m.ID, "greater_than", fmt.Sprintf("must be greater than 0, got %d", m.MaxOutputTokens), at("max_output_tokens")...)
	case m.ContextWindow > 0 && m.MaxOutputTokens > m.ContextWindow:
		ps.add(m.ID, "less_than_equal", fmt.Sprintf("%d exceeds context_window %d, which output shares with input", m.MaxOutputTokens, m.ContextWindow), at("max_output_tokens")...)
	}
}

// checkModelLists: known capabilities and modalities, each once, and at
// least one modality.
func checkModelLists(ps *problemList, m Model, at func(...any) []any) {
	for j, c := range m.Capabilities {
		switch {
		case !ValidCapability(string(c)):
			ps.add(m.ID, "literal_error", fmt.Sprintf("%q is not a capability; want one of %s", c, join(capabilities)), at("capabilities", j)...)
		case slices.Contains(m.Capabilities[:j], c):
			ps.add(m.ID, "value_error", fmt.Sprintf("%q is listed twice", c), at("capabilities", j)...)
		}
	}
	if len(m.Modalities) == 0 {
		ps.add(m.ID, "too_short", "must list at least one modality", at("modalities")...)
	}
	for j, md := range m.Modalities {
		switch {
		case !ValidModality(string(md)):
			ps.add(m.ID, "literal_error", fmt.Sprintf("%q is not a modality; want one of %s", md, join(modalities)), at("modalities", j)...)
		case slices.Contains(m.Modalities[:j], md):
			ps.add(m.ID, "value_error", fmt.Sprintf("%q is listed twice", md), at("modalities", j)...)
		}
	}
}

func checkName(ps *problemList, id, name string, loc []any) {
	switch {
	case strings.TrimSpace(name) == "":
		ps.add(id, "missing", "is required", loc...)
	case utf8.RuneCountInString(name) > maxNameLen:
		ps.add(id, "string_too_long", fmt.Sprintf("is longer than %d characters", maxNameLen), loc...)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		// NUL cannot be stored at all, and other control characters
		// forge or hide text where names are shown.
		ps.add(id, "string_pattern_mismatch", "must not contain control characters", loc...)
	}
}

// ValidPrice reports whether s is a price as the catalog writes one.
func ValidPrice(s string) bool {
	msg, _ := priceProblem(s)
	return msg == ""
}

// priceProblem returns what is wrong with a price's text, or "".
func priceProblem(s string) (msg, typ string) {
	switch {
	case s == "":
		return "is required", "missing"
	case len(s) > maxPriceLen:
		return fmt.Sprintf("is longer than %d characters", maxPriceLen), "string_too_long"
	case !isDecimal(s):
		return fmt.Sprintf(`%q is not a decimal string (digits with an optional fraction, like "2.50")`, s), "string_pattern_mismatch"
	}
	return "", ""
}

// checkPricing checks the four required prices, the optional one-hour
// cache-write price and the optional long-context tier.
func checkPricing(ps *problemList, id string, p Pricing, at func(...any) []any) {
	for _, f := range p.fields() {
		if msg, typ := priceProblem(f.value); msg != "" {
			ps.add(id, typ, msg, at("pricing", f.name)...)
		}
	}
	if p.CacheWrite1hPerMTok != "" {
		if msg, typ := priceProblem(p.CacheWrite1hPerMTok); msg != "" {
			ps.add(id, typ, msg, at("pricing", "cache_write_1h_per_mtok")...)
		}
	}
	for _, name := range sortedTierNames(p.ServiceTiers) {
		tierAt := func(field ...any) []any {
			if len(field) > 0 && field[0] == "pricing" {
				field = append([]any{"pricing", "service_tiers", name}, field[1:]...)
			}
			return at(field...)
		}
		if !slices.Contains(serviceTierNames, name) {
			ps.add(id, "literal_error", fmt.Sprintf("%q is not a service tier; expected one of %s (the base pricing is the default tier's)",
				name, strings.Join(serviceTierNames, ", ")), at("pricing", "service_tiers", name)...)
			continue
		}
		checkPricing(ps, id, p.ServiceTiers[name].pricing(), tierAt)
	}
	if b := p.Batch; b != nil {
		for _, f := range [...]priceField{{"input_per_mtok", b.InputPerMTok}, {"output_per_mtok", b.OutputPerMTok}, {"cache_read_per_mtok", b.CacheReadPerMTok}} {
			if msg, typ := priceProblem(f.value); msg != "" {
				ps.add(id, typ, msg, at("pricing", "batch", f.name)...)
			}
		}
	}
	lc := p.LongContext
	if lc == nil {
		return
	}
	if lc.AboveInputTokens <= 0 {
		ps.add(id, "greater_than", fmt.Sprintf("must be greater than 0, got %d", lc.AboveInputTokens), at("pricing", "long_context", "above_input_tokens")...)
	}
	for _, f := range lc.fields() {
		if msg, typ := priceProblem(f.value); msg != "" {
			ps.add(id, typ, msg, at("pricing", "long_context", f.name)...)
		}
	}
	if lc.CacheWrite1hPerMTok != "" {
		if msg, typ := priceProblem(lc.CacheWrite1hPerMTok); msg != "" {
			ps.add(id, typ, msg, at("pricing", "long_context", "cache_write_1h_per_mtok")...)
		}
	}
}

// sortedTierNames are the tier names in order, so problems and
// parsed tiers come out the same every time.
func sortedTierNames(tiers map[string]ServiceTierPricing) []string {
	names := make([]string, 0, len(tiers))
	for name := range tiers {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

type priceField struct{ name, value string }

// fields lists the required prices with their document names, in one
// place for the validator and the cost calculation.
func (p Pricing) fields() [4]priceField {
	return [4]priceField{
		{"input_per_mtok", p.InputPerMTok},
		{"output_per_mtok", p.OutputPerMTok},
		{"cache_read_per_mtok", p.CacheReadPerMTok},
		{"cache_write_per_mtok", p.CacheWritePerMTok},
	}
}

// fields lists the tier's required prices, as Pricing.fields does.
func (lc LongContextPricing) fields() [4]priceField {
	return Pricing{InputPerMTok: lc.InputPerMTok, OutputPerMTok: lc.OutputPerMTok,
		CacheReadPerMTok: lc.CacheReadPerMTok, CacheWritePerMTok: lc.CacheWritePerMTok}.fields()
}

func join[T ~string](vocab []T) string {
	parts := make([]string, len(vocab))
	for i, v := range vocab {
		parts[i] = string(v)
	}
	return strings.Join(parts, ", ")
}
