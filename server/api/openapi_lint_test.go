package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi/datamodel"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// The document served at /api/v1/openapi.json is valid OpenAPI 3.1, as a
// client generator or a linter such as redocly reads it: it conforms to
// the official OpenAPI 3.1 JSON Schema (libopenapi-validator embeds it),
// its component schemas are valid JSON Schema 2020-12, and it keeps the
// rules the official schema cannot express (path templates against their
// parameters, unique operation ids, declared tags and security schemes).
func TestOpenAPIDocumentLints(t *testing.T) {
	e := newEnv(t, storetest.Open(t, storetest.SQLite), api.Options{})
	raw := e.must("GET", "/api/v1/openapi.json", "", nil)
	for _, problem := range lintOpenAPI(raw) {
		t.Error(problem)
	}
	// A model id, a ServeMux wildcard that takes the rest of the path, is
	// a plain parameter that says it may hold slashes.
	param := jsonPath(t, raw, "paths./api/v1/instance/catalog/models/{model_id}.delete.parameters")
	list, _ := param.([]any)
	if len(list) != 1 {
		t.Fatalf("model_id parameters: %v", param)
	}
	p, _ := list[0].(map[string]any)
	if desc, _ := p["description"].(string); p["name"] != "model_id" || !strings.Contains(desc, "slashes") {
		t.Fatalf("model_id parameter: %v", p)
	}
}

// The linter itself catches what it must: a ServeMux wildcard in a path
// template, an undeclared or misnamed path parameter, and a structural
// error of the document.
func TestOpenAPILintCatchesBrokenDocuments(t *testing.T) {
	op := func(params string) string {
		return `{"operationId":"op","responses":{"200":{"description":"ok"}},"parameters":[` + params + `]}`
	}
	param := func(name string) string {
		return `{"name":"` + name + `","in":"path","required":true,"schema":{"type":"string"}}`
	}
	doc := func(path, operation string) []byte {
		return []byte(`{"openapi":"3.1.0","info":{"title":"t","version":"1"},"paths":{"` + path + `":{"get":` + operation + `}}}`)
	}
	if problems := lintOpenAPI(doc("/models/{model_id}", op(param("model_id")))); len(problems) != 0 {
		t.Fatalf("a valid document fails: %v", problems)
	}
	for name, d := range map[string][]byte{
		"wildcard syntax":        doc("/models/{model_id...}", op(param("model_id..."))),
		"wildcard, name trimmed": doc("/models/{model_id...}", op(param("model_id"))),
		"undeclared parameter":   doc("/models/{model_id}", op("")),
		"parameter not in path":  doc("/models", op(param("model_id"))),
		"responses not a map":    doc("/models", `{"operationId":"op","responses":[]}`),
		"no leading slash":       doc("models", op("")),
		"unknown member":         doc("/models", `{"operationId":"op","responses":{"200":{"description":"ok"}},"nonsense":1}`),
		"parameter without in":   doc("/models/{id}", op(`{"name":"id","required":true,"schema":{"type":"string"}}`)),
		"bad schema":             doc("/models", `{"operationId":"op","responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"type":7}}}}}}`),
	} {
		if problems := lintOpenAPI(d); len(problems) == 0 {
			t.Errorf("%s: no problem found in %s", name, d)
		}
	}
}

// lintParamName is what redocly and client generators accept as a path
// parameter name.
var lintParamName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

var lintTemplateParam = regexp.MustCompile(`\{([^{}]*)\}`)

type lintParam struct {
	Name     string `json:"name"`
	In       string `json:"in"`
	Required bool   `json:"required"`
}

type lintOperation struct {
	OperationID string                `json:"operationId"`
	Tags        []string              `json:"tags"`
	Parameters  []lintParam           `json:"parameters"`
	Security    []map[string][]string `json:"security"`
}

// lintOpenAPI returns every problem found in an OpenAPI 3.1 document.
func lintOpenAPI(raw []byte) []string {
	var problems []string
	add := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }

	// Structure: the official OpenAPI 3.1 schema, then libopenapi's model,
	// which resolves every reference.
	// What libopenapi logs as an error while it reads is a problem too.
	var logged bytes.Buffer
	cfg := datamodel.NewDocumentConfiguration()
	cfg.Logger = slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelError}))
	doc, err := libopenapi.NewDocumentWithConfiguration(raw, cfg)
	if err != nil {
		return []string{"libopenapi cannot read the document: " + err.Error()}
	}
	v, errs := validator.NewValidator(doc)
	for _, err := range errs {
		add("validator: %v", err)
	}
	if v != nil {
		if ok, verrs := v.ValidateDocument(); !ok || len(verrs) != 0 {
			for _, ve := range verrs {
				add("OpenAPI 3.1 schema: %s: %s", ve.Message, ve.Reason)
				for _, se := range ve.SchemaValidationErrors {
					add("OpenAPI 3.1 schema: at /%s: %s", strings.Join(se.InstancePath, "/"), se.Reason)
				}
			}
			if len(verrs) == 0 {
				add("OpenAPI 3.1 schema: invalid, without a reason")
			}
		}
	}
	if _, err := doc.BuildV3Model(); err != nil {
		add("libopenapi model: %v", err)
	}
	if logged.Len() > 0 {
		add("libopenapi: %s", logged.String())
	}

	var d struct {
		Tags       []struct{ Name string }               `json:"tags"`
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Security   []map[string][]string                 `json:"security"`
		Components struct {
			SecuritySchemes map[string]json.RawMessage `json:"securitySchemes"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return append(problems, "not JSON: "+err.Error())
	}
	problems = append(problems, lintSchemas(raw)...)

	tags := map[string]bool{}
	for _, t := range d.Tags {
		tags[t.Name] = true
	}
	security := func(where string, reqs []map[string][]string) {
		for _, req := range reqs {
			for name := range req {
				if _, ok := d.Components.SecuritySchemes[name]; !ok {
					add("%s: security scheme %q is not declared", where, name)
				}
			}
		}
	}
	security("document", d.Security)

	opIDs := map[string]string{}
	shapes := map[string]string{}
	paths := make([]string, 0, len(d.Paths))
	for p := range d.Paths {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, path := range paths {
		var inPath []string
		for _, m := range lintTemplateParam.FindAllStringSubmatch(path, -1) {
			if !lintParamName.MatchString(m[1]) {
				add("%s: path parameter {%s} is not a plain name", path, m[1])
			}
			inPath = append(inPath, m[1])
		}
		if strings.Count(path, "{") != len(inPath) || strings.Count(path, "}") != len(inPath) {
			add("%s: unbalanced braces", path)
		}
		shape := lintTemplateParam.ReplaceAllString(path, "{}")
		if other, ok := shapes[shape]; ok {
			add("%s and %s are the same path", path, other)
		}
		shapes[shape] = path

		var shared []lintParam
		if rawShared, ok := d.Paths[path]["parameters"]; ok {
			if err := json.Unmarshal(rawShared, &shared); err != nil {
				add("%s: parameters: %v", path, err)
			}
		}
		for method, rawOp := range d.Paths[path] {
			if !slices.Contains([]string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}, method) {
				continue
			}
			where := strings.ToUpper(method) + " " + path
			var op lintOperation
			dec := json.NewDecoder(bytes.NewReader(rawOp))
			if err := dec.Decode(&op); err != nil {
				add("%s: %v", where, err)
				continue
			}
			if op.OperationID == "" {
				add("%s: no operationId", where)
			} else if other, ok := opIDs[op.OperationID]; ok {
				add("%s: operationId %q is also %s's", where, op.OperationID, other)
			}
			opIDs[op.OperationID] = where
			for _, tag := range op.Tags {
				if len(d.Tags) > 0 && !tags[tag] {
					add("%s: tag %q is not declared", where, tag)
				}
			}
			security(where, op.Security)

			declared := map[string]bool{}
			for _, p := range append(slices.Clone(shared), op.Parameters...) {
				if p.In != "path" {
					continue
				}
				if declared[p.Name] {
					add("%s: path parameter %q declared twice", where, p.Name)
				}
				declared[p.Name] = true
				if !slices.Contains(inPath, p.Name) {
					add("%s: path parameter %q is not in the path", where, p.Name)
				}
				if !p.Required {
					add("%s: path parameter %q is not required", where, p.Name)
				}
			}
			for _, name := range inPath {
				if !declared[name] {
					add("%s: {%s} is not a declared path parameter", where, name)
				}
			}
		}
	}
	return problems
}

// lintSchemas compiles every schema of the document, the components' and
// those inline in operations, as JSON Schema 2020-12 (OpenAPI 3.1's
// default dialect): each is checked against the meta-schema, and its
// references are resolved in the document as a client would.
func lintSchemas(raw []byte) []string {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return []string{"schemas: " + err.Error()}
	}
	root, _ := doc.(map[string]any)
	var pointers []string
	var walk func(v any, ptr string)
	walk = func(v any, ptr string) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				if k == "schema" {
					pointers = append(pointers, ptr+"/schema")
					continue
				}
				walk(c, ptr+"/"+escapePointer(k))
			}
		case []any:
			for i, c := range x {
				walk(c, fmt.Sprintf("%s/%d", ptr, i))
			}
		}
	}
	walk(root["paths"], "/paths")
	components, _ := root["components"].(map[string]any)
	schemas, _ := components["schemas"].(map[string]any)
	for name := range schemas {
		pointers = append(pointers, "/components/schemas/"+escapePointer(name))
	}
	sort.Strings(pointers)

	const url = "urn:gw:openapi"
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(url, doc); err != nil {
		return []string{"schemas: " + err.Error()}
	}
	var problems []string
	for _, ptr := range pointers {
		if _, err := c.Compile(url + "#" + ptr); err != nil {
			problems = append(problems, "schema "+ptr+": "+err.Error())
		}
	}
	return problems
}

func escapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// The data plane's document (/inf/v1/openapi.json, issue 22) lints as the
// management API's does, needs no key, and names every /inf/v1 endpoint.
func TestDataPlaneOpenAPILints(t *testing.T) {
	plane := dataplane.NewPlane(nil, dataplane.Options{})
	rec := httptest.NewRecorder()
	plane.ServeHTTP(rec, httptest.NewRequest("GET", "/inf/v1/openapi.json", nil))
	if rec.Code != 200 {
		t.Fatalf("GET /inf/v1/openapi.json before any bundle: %d %s", rec.Code, rec.Body)
	}
	raw := rec.Body.Bytes()
	for _, problem := range lintOpenAPI(raw) {
		t.Error(problem)
	}
	for _, path := range []string{"/inf/v1/models", "/inf/v1/models/{model_id}", "/inf/v1/chat/completions", "/inf/v1/responses",
		"/inf/v1/messages", "/inf/v1/messages/count_tokens", "/inf/v1/embeddings"} {
		if jsonPath(t, raw, "paths."+path) == nil {
			t.Errorf("no %s", path)
		}
	}
}
