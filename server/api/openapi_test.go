package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	e := newEnv(t, storetest.Open(t, storetest.SQLite), api.Options{})
	raw := e.must("GET", "/api/v1/openapi.json", "", nil)
	var doc struct {
		OpenAPI string `json:"openapi"`
		Info    struct {
			Version string `json:"version"`
		} `json:"info"`
		Paths      map[string]map[string]map[string]any `json:"paths"`
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" || doc.Info.Version != "0.1.0" {
		t.Fatalf("openapi %q version %q", doc.OpenAPI, doc.Info.Version)
	}

	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	for _, rt := range e.api.Routes() {
		key := rt.Method + " " + rt.DocPath()
		op, ok := doc.Paths[rt.DocPath()][strings.ToLower(rt.Method)]
		if !ok {
			t.Errorf("route %s has no documented operation", key)
			continue
		}
		delete(documented, key)
		tags, _ := op["tags"].([]any)
		if len(tags) != 1 || !slices.Contains(api.Tags, tags[0].(string)) {
			t.Errorf("%s: tag %v is not one of the spec's groups", key, tags)
		}
		if s, _ := op["summary"].(string); s == "" {
			t.Errorf("%s: no summary", key)
		}
		resp, _ := op["responses"].(map[string]any)
		// A single sign-on's start and callback answer a redirect, no body.
		redirect := rt.Raw && rt.Result == nil && (slices.Contains(rt.Statuses, http.StatusFound) || slices.Contains(rt.Statuses, http.StatusSeeOther))
		if _, ok := resp["200"]; !ok && !redirect {
			t.Errorf("%s: no 200 response", key)
		}
		if redirect && resp["302"] == nil && resp["303"] == nil {
			t.Errorf("%s: no redirect response", key)
		}
		if rt.Body != nil && op["requestBody"] == nil {
			t.Errorf("%s: request body not documented", key)
		}
		if rt.Result == nil && !redirect {
			t.Errorf("%s: result type not declared", key)
		}
	}
	delete(documented, "GET /api/v1/openapi.json")
	for key := range documented {
		t.Errorf("documented operation %s has no route", key)
	}

	// Every $ref resolves.
	for _, ref := range findRefs(raw) {
		name := strings.TrimPrefix(ref, "#/components/schemas/")
		if _, ok := doc.Components.Schemas[name]; !ok {
			t.Errorf("dangling $ref %s", ref)
		}
	}
}

func findRefs(raw []byte) []string {
	var refs []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				if s, ok := c.(string); ok && k == "$ref" {
					refs = append(refs, s)
				}
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	var v any
	_ = json.Unmarshal(raw, &v)
	walk(v)
	return refs
}

// TestWireNullableFieldsAreDocumented keeps the schema honest: a pointer
// field that is always present (no omitempty) can be null on the wire, so it
// must say so.
func TestWireNullableFieldsAreDocumented(t *testing.T) {
	types := []any{wire.ManagementKey{}, wire.User{}, wire.Invitation{}, wire.AuditEvent{}, wire.AuditActor{},
		wire.AuditScope{}, wire.KeyScope{}, wire.PageRef{}, wire.Me{}}
	for _, v := range types {
		rt := reflect.TypeOf(v)
		for i := 0; i < rt.NumField(); i++ {
			f := rt.Field(i)
			if f.Type.Kind() != reflect.Pointer || strings.Contains(f.Tag.Get("json"), "omitempty") {
				continue
			}
			if !strings.Contains(f.Tag.Get("jsonschema"), "nullable") {
				t.Errorf("%s.%s can be null but its schema does not say nullable", rt.Name(), f.Name)
			}
		}
	}
}

// The policy definition is described by the policy package's own schema
// (held to the parser there), not by reflecting Go fields.
func TestOpenAPIPolicyDefinition(t *testing.T) {
	e := newEnv(t, storetest.Open(t, storetest.SQLite), api.Options{})
	raw := e.must("GET", "/api/v1/openapi.json", "", nil)
	policyOut := jsonPath(t, raw, "components.schemas.Policy.properties.definition.$ref")
	if policyOut != "#/components/schemas/PolicyDefinition" {
		t.Fatalf("Policy.definition: %v", policyOut)
	}
	if jsonPath(t, raw, "components.schemas.PolicyDefinition.properties.rules.maxItems") != float64(100) {
		t.Fatalf("PolicyDefinition lacks its rules bound: %v", jsonPath(t, raw, "components.schemas.PolicyDefinition"))
	}
}

// What client generators need (issue 22, row 12): no boolean schemas
// (oapi-codegen reads only schema objects), request bodies without the
// members the server sets (a catalog model's retired_at), and query words
// typed as enums.
func TestOpenAPIServesClientGenerators(t *testing.T) {
	e := newEnv(t, storetest.Open(t, storetest.SQLite), api.Options{})
	var doc map[string]any
	if err := json.Unmarshal(e.must("GET", "/api/v1/openapi.json", "", nil), &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, c := range v {
				if b, ok := c.(bool); ok && b && (k == "items" || k == "additionalProperties") {
					t.Errorf("%s/%s is the boolean schema true", path, k)
				}
				walk(path+"/"+k, c)
			}
		case []any:
			for i, c := range v {
				walk(fmt.Sprintf("%s/%d", path, i), c)
			}
		}
	}
	walk("", doc)

	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	for _, name := range []string{"CatalogModelInput", "CatalogProviderInput"} {
		req, _ := schemas[name].(map[string]any)["required"].([]any)
		for _, r := range req {
			if r == "retired_at" || r == "available" {
				t.Errorf("%s requires %s, which the server refuses in a body", name, r)
			}
		}
	}
	report := doc["paths"].(map[string]any)["/api/v1/organizations/{org_id}/reports/usage"].(map[string]any)["get"].(map[string]any)
	enums := map[string]any{}
	for _, p := range report["parameters"].([]any) {
		p := p.(map[string]any)
		enums[p["name"].(string)] = p["schema"].(map[string]any)["enum"]
	}
	if fmt.Sprint(enums["period"]) != fmt.Sprint(wire.UsagePeriods) {
		t.Errorf("period's enum: %v", enums["period"])
	}
}

// The document's vocabularies are the code's own lists (issue 26, row
// 13): every provider kind the catalog takes, bedrock and vertex
// included; and a member the server writes as null says it may be.
func TestOpenAPIEnumsAreTheCodes(t *testing.T) {
	e := newEnv(t, storetest.Open(t, storetest.SQLite), api.Options{})
	raw := e.must("GET", "/api/v1/openapi.json", "", nil)
	for _, schema := range []string{"CatalogProvider", "CatalogProviderInput"} {
		got := fmt.Sprint(jsonPath(t, raw, "components.schemas."+schema+".properties.kind.enum"))
		if want := fmt.Sprint(catalog.Kinds()); got != want {
			t.Errorf("%s.kind enum %s, want %s", schema, got, want)
		}
	}
	if got := fmt.Sprint(jsonPath(t, raw, "components.schemas.UsageEvent.properties.status.enum")); got != fmt.Sprint(wire.UsageStatuses) {
		t.Errorf("UsageEvent.status enum %s", got)
	}
	alt, _ := jsonPath(t, raw, "components.schemas.ModelAlias.properties.workspace_id.oneOf").([]any)
	if len(alt) != 2 || jsonPath(t, raw, "components.schemas.ModelAlias.properties.workspace_id.oneOf.1.type") != "null" {
		t.Errorf("ModelAlias.workspace_id: %v", jsonPath(t, raw, "components.schemas.ModelAlias.properties.workspace_id"))
	}
}
