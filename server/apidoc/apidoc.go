// Package apidoc is what gw's two OpenAPI documents (the management API's
// and the data plane's) share: component schemas reflected from the Go
// types the servers encode, so that a document says what the code sends.
// Two rules the reflection alone gets wrong are applied to every type:
//   - a pointer member written even when nil (no omitempty) can be null,
//     so its schema says so;
//   - a member whose values are a closed vocabulary takes them from the
//     code's own list (catalog.Kinds(), wire.UsageStatuses, …) rather
//     than from a copy in a struct tag, which drifts (issue 26, row 13).
package apidoc

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/google/uuid"
	"github.com/invopop/jsonschema"
)

// Enums are the values members take, from the code's own lists: by Go
// type, then JSON member name. An array member's items take them.
type Enums map[reflect.Type]map[string][]string

// Strings converts a list of string-kinded values (catalog.Kind, …).
func Strings[S ~string](list []S) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = string(s)
	}
	return out
}

// Reflector turns Go types into schemas in a document's components.
type Reflector struct {
	components map[string]any
	enums      Enums
	r          *jsonschema.Reflector
	applied    map[reflect.Type]bool
	used       map[reflect.Type]map[string]bool
}

// New returns a reflector writing into components. mapper, if not nil,
// replaces the reflection of the types it returns a schema for (uuid.UUID
// is always a string of format uuid). With open, objects admit members
// their type does not name (a provider's answer passed on as it is).
func New(components map[string]any, enums Enums, mapper func(reflect.Type) *jsonschema.Schema, open bool) *Reflector {
	return &Reflector{components: components, enums: enums, applied: map[reflect.Type]bool{}, used: map[reflect.Type]map[string]bool{},
		r: &jsonschema.Reflector{
			Anonymous:                 true,
			Namer:                     name,
			AllowAdditionalProperties: open,
			Mapper: func(t reflect.Type) *jsonschema.Schema {
				if t == reflect.TypeOf(uuid.UUID{}) {
					return &jsonschema.Schema{Type: "string", Format: "uuid"}
				}
				if mapper != nil {
					return mapper(t)
				}
				return nil
			},
		}}
}

// Ref reflects v's type into the components (once per type) and returns
// a schema referring to it; a slice yields an array of references.
func (r *Reflector) Ref(v any) map[string]any {
	t := reflect.TypeOf(v)
	if t.Kind() == reflect.Slice {
		return map[string]any{"type": "array", "items": r.one(t.Elem())}
	}
	return r.one(t)
}

func (r *Reflector) one(t reflect.Type) map[string]any {
	s := r.r.ReflectFromType(t)
	raw, _ := json.Marshal(s)
	text := strings.ReplaceAll(string(raw), "#/$defs/", "#/components/schemas/")
	var doc map[string]any
	_ = json.Unmarshal([]byte(text), &doc)
	defs, _ := doc["$defs"].(map[string]any)
	names := make([]string, 0, len(defs))
	for name := range defs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, ok := r.components[name]; !ok {
			r.components[name] = defs[name]
		}
	}
	r.apply(t)
	if ref, ok := doc["$ref"].(string); ok {
		return map[string]any{"$ref": ref}
	}
	delete(doc, "$schema")
	delete(doc, "$id")
	delete(doc, "$defs")
	return doc
}

// apply makes the schemas of t, and of every struct type its members
// reach, follow the two rules.
func (r *Reflector) apply(t reflect.Type) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || r.applied[t] {
		return
	}
	r.applied[t] = true
	schema, _ := r.components[name(t)].(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	r.fields(t, t, props)
}

func (r *Reflector) fields(owner, t reflect.Type, props map[string]any) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		member, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && member == "" {
			// An embedded struct's members are its parent's.
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				r.fields(owner, ft, props)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if member == "" {
			member = f.Name
		}
		r.apply(f.Type)
		p, ok := props[member].(map[string]any)
		if !ok {
			continue
		}
		if values, ok := r.enums[owner][member]; ok {
			target := p
			if alt, ok := p["oneOf"].([]any); ok && len(alt) > 0 {
				target, _ = alt[0].(map[string]any)
			}
			if items, ok := target["items"].(map[string]any); ok {
				target = items
			}
			target["enum"] = values
			if r.used[owner] == nil {
				r.used[owner] = map[string]bool{}
			}
			r.used[owner][member] = true
		}
		if f.Type.Kind() == reflect.Pointer && !strings.Contains(","+opts+",", ",omitempty,") && !nullable(p) {
			props[member] = map[string]any{"oneOf": []any{p, map[string]any{"type": "null"}}}
		}
	}
}

// name is a type's component name: its Go name, capitalized (a package's
// own documentation types are unexported).
func name(t reflect.Type) string {
	n := t.Name()
	if n == "" {
		return n
	}
	return strings.ToUpper(n[:1]) + n[1:]
}

func nullable(p map[string]any) bool {
	alt, _ := p["oneOf"].([]any)
	for _, a := range alt {
		if m, ok := a.(map[string]any); ok && m["type"] == "null" {
			return true
		}
	}
	return false
}

// Unused returns the enums given that no reflected type's member took:
// a table entry that names a type or member that is not there.
func (r *Reflector) Unused() []string {
	var out []string
	for t, members := range r.enums {
		for member := range members {
			if !r.used[t][member] {
				out = append(out, fmt.Sprintf("%s.%s", t.Name(), member))
			}
		}
	}
	sort.Strings(out)
	return out
}

// OpenBooleanSchemas replaces the boolean schema true (what the reflector
// makes of an element of type any) by the empty schema {}, which means the
// same: OpenAPI 3.1 allows both, but client generators such as
// oapi-codegen read only schema objects.
func OpenBooleanSchemas(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			if b, ok := child.(bool); ok && b && k != "nullable" && k != "default" && k != "const" {
				v[k] = map[string]any{}
				continue
			}
			OpenBooleanSchemas(child)
		}
	case []any:
		for _, child := range v {
			OpenBooleanSchemas(child)
		}
	}
}
