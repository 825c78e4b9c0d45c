package apidoc_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/gw-gateway/gw/server/apidoc"
)

type kind string

type inner struct {
	Name string `json:"name"`
}

type sample struct {
	Kind     string   `json:"kind"`
	Tags     []string `json:"tags"`
	Always   *string  `json:"always"`
	Optional *string  `json:"optional,omitempty"`
	Tagged   *string  `json:"tagged" jsonschema:"nullable"`
	Inner    *inner   `json:"inner"`
	embedded
}

type embedded struct {
	Level string `json:"level"`
}

// The two rules every reflected type follows: a pointer always written is
// nullable (once, whatever its tag says), and enums come from the lists
// given, on array items too, on embedded members too.
func TestReflectorRules(t *testing.T) {
	schemas := map[string]any{}
	r := apidoc.New(schemas, apidoc.Enums{reflect.TypeOf(sample{}): {
		"kind": apidoc.Strings([]kind{"a", "b"}), "tags": {"x"}, "level": {"l"}}}, nil, false)
	if ref := r.Ref(sample{}); ref["$ref"] != "#/components/schemas/Sample" {
		t.Fatalf("ref %v", ref)
	}
	raw, _ := json.Marshal(schemas["Sample"])
	var s struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	p := s.Properties
	nullable := func(name string) bool {
		alt, _ := p[name]["oneOf"].([]any)
		n := 0
		for _, a := range alt {
			if a.(map[string]any)["type"] == "null" {
				n++
			}
		}
		return n == 1
	}
	for name, want := range map[string]bool{"always": true, "tagged": true, "inner": true, "optional": false, "kind": false} {
		if nullable(name) != want {
			t.Errorf("%s nullable: %v, want %v (%v)", name, !want, want, p[name])
		}
	}
	if got := p["kind"]["enum"]; !slices.Equal(toStrings(got), []string{"a", "b"}) {
		t.Errorf("kind enum %v", got)
	}
	if got := p["tags"]["items"].(map[string]any)["enum"]; !slices.Equal(toStrings(got), []string{"x"}) {
		t.Errorf("tags items enum %v", got)
	}
	if got := p["level"]["enum"]; !slices.Equal(toStrings(got), []string{"l"}) {
		t.Errorf("embedded level enum %v", got)
	}
	if u := r.Unused(); len(u) != 0 {
		t.Errorf("unused %v", u)
	}
	bad := apidoc.New(map[string]any{}, apidoc.Enums{reflect.TypeOf(sample{}): {"nope": {"x"}}}, nil, false)
	bad.Ref(sample{})
	if u := bad.Unused(); !slices.Equal(u, []string{"sample.nope"}) {
		t.Errorf("an enum for a member that is not there: %v", u)
	}
}

func toStrings(v any) []string {
	var out []string
	switch v := v.(type) {
	case []any:
		for _, s := range v {
			out = append(out, s.(string))
		}
	case []string:
		out = v
	}
	return out
}
