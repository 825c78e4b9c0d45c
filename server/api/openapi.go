package api

import (
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/gw-gateway/gw/server/apidoc"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/wire"
)

// APIVersion is the version of the management interface (spec §9).
const APIVersion = "0.1.0"

// Tags are the endpoint groups of spec §1, in its order. Every route's tag
// must be one of them.
var Tags = []string{
	"Auth", "Enrollment", "Instance Organizations", "Instance Users", "Instance Management Keys",
	"Instance Model Catalog", "Instance Provider Credentials", "Data Plane Instances", "Instance Activity",
	"OSS self-hosting bootstrap", "Organization Settings", "Members", "Service Accounts", "Invitations",
	"Workspaces", "Management Keys", "Provider Credentials", "Usage Events", "Reports", "Activity",
	"Model Catalog", "Workspace Settings", "Workspace Policies", "Workspace Members",
	"Workspace Management Keys", "Workspace Playground", "Workspace Inference Keys",
	"Workspace Provider Credentials", "Workspace Usage Events", "Workspace Batches", "Workspace Model Catalog", "Data Plane API",
	"Instance Identity Providers",
	"Instance OAuth Clients", "Workspace OAuth Grants",
}

// pathParam matches a path parameter of a route's Path; the second group
// is ServeMux's "..." of a wildcard that takes the rest of the path.
var pathParam = regexp.MustCompile(`\{([a-z_]+)(\.\.\.)?\}`)

var pathParamDocs = map[string]string{
	"org_id":        "Organization UUID or slug.",
	"workspace_ref": "Workspace UUID or slug.",
	"model_id":      "Model id, e.g. openai/gpt-4o-mini.",
	"provider_id":   "Provider id, e.g. openai.",
	"user_code":     "The code the CLI showed, e.g. BCDF-GHJK.",
	"data_plane_id": "A data plane's id, as in its heartbeats.",
	"server_name":   "An MCP server's name, e.g. github.",
	"name":          "A model alias's name, e.g. claude-opus-4-8 (percent-encode [ and ]); or an identity provider's name, e.g. okta.",
	"guardrail_id":  "A guardrail's UUID.",
	"client_id":     "A registered OAuth client's id, e.g. gwc_….",
	"grant_id":      "An OAuth grant's UUID.",
	"op":            "A batch-store op: " + strings.Join(wire.BatchStoreOps, ", ") + ".",
}

func (s *Server) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	// The route table is fixed once the server is built, so the document is
	// rendered on first request and reused.
	s.openapiOnce.Do(func() {
		s.openapiBody, _ = json.Marshal(s.OpenAPI())
	})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(s.openapiBody)
}

// OpenAPI returns the OpenAPI 3.1 document of the management API.
func (s *Server) OpenAPI() map[string]any {
	schemas := map[string]any{}
	ref, reflector := schemaRefs(schemas)

	paths := map[string]map[string]any{}
	for _, rt := range s.routes {
		op := map[string]any{
			"tags":        []string{rt.Tag},
			"summary":     rt.Summary,
			"operationId": operationID(rt),
			"responses":   responses(rt, ref),
		}
		if perms := permissionNote(rt); perms != "" {
			op["description"] = perms
			op["x-gw-permissions"] = rt.Perms
		}
		switch rt.Access {
		case Public:
			op["security"] = []any{}
		case BrowserSession:
			op["security"] = []any{map[string]any{"session": []any{}}}
		}
		var params []any
		for _, m := range pathParam.FindAllStringSubmatch(rt.Path, -1) {
			desc := pathParamDocs[m[1]]
			if desc == "" {
				desc = "UUID."
			}
			if m[2] != "" {
				// Sent raw (a/b) or escaped (a%2Fb); both are read alike.
				desc += " It may contain slashes, sent as they are or escaped as %2F."
			}
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "description": desc,
				"schema": map[string]any{"type": "string"}})
		}
		for _, q := range rt.Query {
			sch := map[string]any{"type": "string"}
			switch {
			case q.Integer:
				sch = map[string]any{"type": "integer", "minimum": 1, "maximum": 200, "default": 50}
			case q.Enum != nil:
				sch["enum"] = q.Enum
			case q.Format != "":
				sch["format"] = q.Format
			case q.Pattern != "":
				sch["pattern"] = q.Pattern
			}
			param := map[string]any{"name": q.Name, "in": "query", "required": q.Required, "description": q.Description, "schema": sch}
			if q.Repeated {
				param["schema"] = map[string]any{"type": "array", "items": sch, "maxItems": 20}
				param["style"], param["explode"] = "form", true
			}
			params = append(params, param)
		}
		if params != nil {
			op["parameters"] = params
		}
		if rt.Body != nil {
			op["requestBody"] = map[string]any{"required": true, "content": map[string]any{
				"application/json": map[string]any{"schema": ref(rt.Body)}}}
		}
		path := rt.DocPath()
		if paths[path] == nil {
			paths[path] = map[string]any{}
		}
		paths[path][strings.ToLower(rt.Method)] = op
	}
	paths["/api/v1/openapi.json"] = map[string]any{"get": map[string]any{
		"tags": []string{"Auth"}, "summary": "This document", "operationId": "get_openapi", "security": []any{},
		"responses": map[string]any{"200": map[string]any{"description": "The OpenAPI document.",
			"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"type": "object"}}}}},
	}}

	ref(wire.ErrorDetail{})
	ref(wire.ValidationError{})
	if unused := reflector.Unused(); len(unused) > 0 {
		panic("api: enums for members no wire type has: " + strings.Join(unused, ", ")) // TestOpenAPIDocumentsEveryRoute
	}
	for _, sch := range schemas {
		apidoc.OpenBooleanSchemas(sch)
	}
	tags := make([]any, len(Tags))
	for i, t := range Tags {
		tags[i] = map[string]any{"name": t}
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       "gw control plane",
			"version":     APIVersion,
			"description": "Management API of the gw LLM gateway. Successful responses are {data: …}; errors are {detail: …}.",
		},
		"servers": []any{map[string]any{"url": "/"}},
		"tags":    tags,
		"paths":   paths,
		"components": map[string]any{
			"schemas": schemas,
			"securitySchemes": map[string]any{
				"managementKey": map[string]any{"type": "http", "scheme": "bearer", "description": "A management key, sk-cp-…"},
				"session": map[string]any{"type": "apiKey", "in": "cookie", "name": SessionCookie,
					"description": "Browser session; requests must also send X-Requested-With: XMLHttpRequest."},
			},
		},
		"security": []any{map[string]any{"managementKey": []any{}}, map[string]any{"session": []any{}}},
	}
}

func permissionNote(rt *Route) string {
	if len(rt.Perms) == 0 {
		return ""
	}
	names := make([]string, len(rt.Perms))
	for i, p := range rt.Perms {
		names[i] = "`" + string(p) + "`"
	}
	if rt.AnyPerm {
		return "Permission: one of " + strings.Join(names, ", ") + "."
	}
	return "Permission: " + strings.Join(names, " and ") + "."
}

func operationID(rt *Route) string {
	p := strings.TrimPrefix(rt.Path, "/api/v1/")
	p = pathParam.ReplaceAllString(p, "by_$1")
	p = strings.NewReplacer("/", "_", "-", "_").Replace(p)
	return strings.ToLower(rt.Method) + "_" + p
}

func responses(rt *Route, ref func(any) map[string]any) map[string]any {
	var data map[string]any
	if rt.Result != nil {
		data = ref(rt.Result)
	}
	var body map[string]any
	if rt.Paginated {
		body = map[string]any{"type": "object", "additionalProperties": false, "required": []string{"data", "page"},
			"properties": map[string]any{
				"data": map[string]any{"type": "array", "items": data},
				"page": ref(wire.PageRef{}),
			}}
	} else if rt.Raw {
		body = data
	} else {
		body = map[string]any{"type": "object", "additionalProperties": false, "required": []string{"data"},
			"properties": map[string]any{"data": data}}
	}
	errBody := func(desc string) map[string]any {
		return map[string]any{"description": desc, "content": map[string]any{"application/json": map[string]any{
			"schema": map[string]any{"$ref": "#/components/schemas/ErrorDetail"}}}}
	}
	out := map[string]any{
		"200": map[string]any{"description": "Success.", "content": map[string]any{"application/json": map[string]any{"schema": body}}},
		"422": map[string]any{"description": "Validation error, or an invalid cursor ({detail: \"invalid cursor\"}).",
			"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"oneOf": []any{
				map[string]any{"$ref": "#/components/schemas/ValidationError"},
				map[string]any{"$ref": "#/components/schemas/ErrorDetail"},
			}}}}},
	}
	// What every route of its shape may answer, besides what its handler
	// adds (rt.Statuses).
	if rt.Access != Public {
		out["401"] = errBody("Authentication failed.")
		// A browser session must also send X-Requested-With (CSRF).
		out["403"] = errBody("A session without the X-Requested-With header; " + map[Access]string{
			Scoped:         "or the credential lacks the permission, or its scope does not cover the URL.",
			Authenticated:  "or the caller may not do this.",
			BrowserSession: "or a management key: this acts for the account holder, from their browser session only.",
		}[rt.Access])
	}
	if strings.Contains(rt.Path, "{") {
		out["404"] = errBody("Not found.")
	}
	if rt.Body != nil {
		out["400"] = errBody("The body could not be read.")
		out["408"] = errBody("The body did not arrive in time.")
		out["413"] = errBody("The body is larger than this endpoint takes.")
		if rt.Access == Public {
			out["415"] = errBody("A form's content type (JSON only: a cross-site form cannot post here).")
		}
	}
	if rt.Method != "GET" && !rt.Raw {
		out["409"] = errBody("Conflicts with the current state.")
	}
	for _, code := range rt.Statuses {
		switch code {
		case http.StatusNotModified:
			out["304"] = map[string]any{"description": "Nothing changed since the ETag sent in If-None-Match; no body."}
		case http.StatusFound, http.StatusSeeOther:
			out[strconv.Itoa(code)] = map[string]any{"description": "A redirect for the browser to follow; no body.",
				"headers": map[string]any{"Location": map[string]any{"description": "Where to go.", "schema": map[string]any{"type": "string"}}}}
		case http.StatusTooManyRequests, http.StatusServiceUnavailable:
			r := errBody(statusDescriptions[code])
			r["headers"] = map[string]any{"Retry-After": map[string]any{"description": "Seconds to wait before trying again.",
				"schema": map[string]any{"type": "integer"}}}
			out[strconv.Itoa(code)] = r
		default:
			desc := statusDescriptions[code]
			if desc == "" {
				desc = http.StatusText(code) + "."
			}
			out[strconv.Itoa(code)] = errBody(desc)
		}
	}
	if rt.Raw {
		// The data plane answers: its errors are in OpenAI's shape, and a
		// streamed answer is an event stream.
		out["200"] = map[string]any{"description": "The model's answer, not enveloped: a chat.completion, or with stream true a text/event-stream of chat.completion.chunk events ending with [DONE]. Errors after admission (policy 403, a budget spent for the period 402, rate limit 429, upstream 502…) are the data plane's, in OpenAI's error shape.",
			"content": map[string]any{"application/json": map[string]any{"schema": body},
				"text/event-stream": map[string]any{"schema": map[string]any{"type": "string"}}}}
	}
	if rt.CSV {
		out["200"].(map[string]any)["content"].(map[string]any)["text/csv"] = map[string]any{"schema": map[string]any{"type": "string"}}
	}
	if rt.Binary {
		out["200"].(map[string]any)["content"].(map[string]any)["application/octet-stream"] = map[string]any{"schema": map[string]any{
			"type": "string", "description": "The {data} answer as one JSON line, then the bytes of the file it names."}}
	}
	if rt.Raw && rt.Result == nil {
		// A redirect (single sign-on): no answer of its own.
		delete(out, "200")
	}
	if rt.DataPlane {
		out["503"] = errBody("No data plane runs in this process (role control-plane), or it has not loaded the workspace's configuration yet.")
	}
	return out
}

// statusDescriptions describe the statuses routes add (Route.Statuses).
var statusDescriptions = map[int]string{
	http.StatusBadRequest:         "The request cannot be done as sent.",
	http.StatusUnauthorized:       "Wrong credentials.",
	http.StatusForbidden:          "Refused: the detail says why.",
	http.StatusNotFound:           "Something the request names does not exist (or is not the caller's to see).",
	http.StatusTooManyRequests:    "Too many failed attempts; retry after Retry-After.",
	http.StatusServiceUnavailable: "Busy (password checks are bounded); retry after Retry-After.",
}

// schemaRefs returns a function that reflects a wire type into the
// components (once per type) and returns a schema referring to it; a slice
// yields an array of references. Enums come from the code's lists
// (documentEnums), and a pointer member that is always written is
// nullable (server/apidoc).
func schemaRefs(components map[string]any) (func(any) map[string]any, *apidoc.Reflector) {
	r := apidoc.New(components, documentEnums(), func(t reflect.Type) *jsonschema.Schema {
		if t == reflect.TypeOf(wire.PolicyDefinition{}) {
			addPolicySchema(components)
			return &jsonschema.Schema{Ref: "#/components/schemas/PolicyDefinition"}
		}
		if t == reflect.TypeOf(wire.PolicyTarget{}) {
			addPolicySchema(components)
			return &jsonschema.Schema{Ref: "#/components/schemas/PolicyTarget"}
		}
		return nil
	}, false)
	return r.Ref, r
}

// documentEnums are the closed vocabularies of the wire types, each from
// the list the code checks values against, so the document cannot say
// other than the server does.
func documentEnums() apidoc.Enums {
	kinds := apidoc.Strings(catalog.Kinds())
	caps, mods := apidoc.Strings(catalog.Capabilities()), apidoc.Strings(catalog.Modalities())
	catalogVocabulary := map[string][]string{"capabilities": caps, "modalities": mods}
	guardrailEnums := map[string][]string{"stages": wire.GuardrailStages, "action": wire.GuardrailActions, "on_error": wire.GuardrailOnErrors}
	detectorEnums := map[string][]string{"kind": wire.GuardrailKinds, "types": wire.GuardrailPIITypes}
	return apidoc.Enums{
		reflect.TypeOf(wire.CatalogProvider{}):      {"kind": kinds},
		reflect.TypeOf(wire.CatalogProviderInput{}): {"kind": kinds},
		reflect.TypeOf(wire.CatalogModel{}):         catalogVocabulary,
		reflect.TypeOf(wire.CatalogModelInput{}):    catalogVocabulary,
		reflect.TypeOf(wire.ModelObject{}): {"capabilities": caps, "modalities": mods,
			"type": {string(catalog.ModelTypeChat), string(catalog.ModelTypeEmbedding)}},
		reflect.TypeOf(wire.UsageEvent{}):          {"status": wire.UsageStatuses, "usage_source": wire.UsageSources},
		reflect.TypeOf(wire.UsageEventIn{}):        {"status": wire.UsageStatuses, "usage_source": wire.UsageSources},
		reflect.TypeOf(wire.UsageAttempt{}):        {"failure": wire.UsageAttemptFailures},
		reflect.TypeOf(wire.Guardrail{}):           guardrailEnums,
		reflect.TypeOf(wire.GuardrailCreate{}):     guardrailEnums,
		reflect.TypeOf(wire.GuardrailUpdate{}):     guardrailEnums,
		reflect.TypeOf(wire.GuardrailDetector{}):   detectorEnums,
		reflect.TypeOf(wire.GuardrailDetectorIn{}): detectorEnums,
		reflect.TypeOf(wire.GuardrailRecord{}):     {"stage": wire.GuardrailStages, "outcome": wire.GuardrailOutcomes},
		reflect.TypeOf(wire.DataPlaneBundles{}): {"enrollment": {store.EnrollmentPending, store.EnrollmentApproved,
			store.EnrollmentRevoked}},
	}
}

// addPolicySchema adds the policy package's own JSON Schema of
// PolicyDefinition (checked against its parser there), its $defs renamed
// Policy<Name> so they cannot collide with wire types.
func addPolicySchema(components map[string]any) {
	if _, ok := components["PolicyDefinition"]; ok {
		return
	}
	text := strings.ReplaceAll(string(policy.JSONSchema()), "#/$defs/", "#/components/schemas/Policy")
	var doc map[string]any
	if err := json.Unmarshal([]byte(text), &doc); err != nil {
		panic("policy.JSONSchema is not JSON: " + err.Error()) // the policy package's tests parse it
	}
	defs, _ := doc["$defs"].(map[string]any)
	for name, def := range defs {
		components["Policy"+name] = def
	}
	delete(doc, "$defs")
	delete(doc, "$schema")
	delete(doc, "$id")
	components["PolicyDefinition"] = doc
}
