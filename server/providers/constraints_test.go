package providers_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/providers"
)

func constrained(sampling, forced bool) catalog.Model {
	return catalog.Model{ID: "anthropic/m", Constraints: &catalog.Constraints{SamplingParams: &sampling, ForcedToolChoice: &forced}}
}

// Adapt's decision per shape and constraint: what is left out, what tool
// choice goes instead of a forced one, and what is left alone.
func TestAdapt(t *testing.T) {
	refusesAll, refusesSampling, refusesForced := constrained(false, false), constrained(false, true), constrained(true, false)
	for _, tc := range []struct {
		name    string
		model   catalog.Model
		shape   string
		body    string
		dropped []string
		choice  string // "" for none
	}{
		{"unconstrained model", catalog.Model{ID: "x/y"}, providers.ShapeChat, `{"temperature":0,"top_p":1,"tool_choice":"required"}`, nil, ""},
		{"chat sampling", refusesSampling, providers.ShapeChat, `{"top_p":0.9,"temperature":0.2,"top_k":4,"tool_choice":"required"}`, []string{"temperature", "top_p", "top_k"}, ""},
		{"null is absent", refusesAll, providers.ShapeChat, `{"temperature":null,"tool_choice":null}`, nil, ""},
		{"chat required", refusesForced, providers.ShapeChat, `{"temperature":1,"tool_choice":"required"}`, nil, `"auto"`},
		{"chat auto and none stay", refusesForced, providers.ShapeChat, `{"tool_choice":"auto"}`, nil, ""},
		{"chat none stays", refusesForced, providers.ShapeChat, `{"tool_choice":"none"}`, nil, ""},
		{"chat named function", refusesForced, providers.ShapeChat, `{"tool_choice":{"type":"function","function":{"name":"f"}}}`, nil, `"auto"`},
		{"chat allowed_tools required", refusesForced, providers.ShapeChat,
			`{"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[{"type":"function","function":{"name":"f"}}]}}}`,
			nil, `{"allowed_tools":{"mode":"auto","tools":[{"type":"function","function":{"name":"f"}}]},"type":"allowed_tools"}`},
		{"chat allowed_tools auto stays", refusesForced, providers.ShapeChat,
			`{"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[]}}}`, nil, ""},
		{"responses named function", refusesForced, providers.ShapeResponses, `{"tool_choice":{"type":"function","name":"f"}}`, nil, `"auto"`},
		{"responses hosted tool", refusesForced, providers.ShapeResponses, `{"tool_choice":{"type":"web_search_preview"}}`, nil, `"auto"`},
		{"responses allowed_tools required", refusesForced, providers.ShapeResponses,
			`{"tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"f"}]}}`,
			nil, `{"mode":"auto","tools":[{"type":"function","name":"f"}],"type":"allowed_tools"}`},
		{"messages any", refusesAll, providers.ShapeMessages, `{"temperature":0.5,"top_k":3,"tool_choice":{"type":"any"}}`, []string{"temperature", "top_k"}, `{"type":"auto"}`},
		{"messages tool keeps parallel flag", refusesForced, providers.ShapeMessages,
			`{"tool_choice":{"type":"tool","name":"f","disable_parallel_tool_use":true}}`, nil, `{"disable_parallel_tool_use":true,"type":"auto"}`},
		{"messages auto stays", refusesForced, providers.ShapeMessages, `{"tool_choice":{"type":"auto"}}`, nil, ""},
		{"messages none stays", refusesForced, providers.ShapeMessages, `{"tool_choice":{"type":"none"}}`, nil, ""},
		{"messages has no required string", refusesForced, providers.ShapeMessages, `{"tool_choice":"required"}`, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var members providers.Members
			if err := json.Unmarshal([]byte(tc.body), &members); err != nil {
				t.Fatal(err)
			}
			a := providers.Adapt(members, tc.shape, tc.model)
			if !slices.Equal(a.Dropped, tc.dropped) || string(a.ToolChoice) != tc.choice {
				t.Fatalf("dropped %q choice %s; want %q %s", a.Dropped, a.ToolChoice, tc.dropped, tc.choice)
			}
			want := append([]string(nil), tc.dropped...)
			if tc.choice != "" {
				want = append(want, "tool_choice")
			}
			if !slices.Equal(a.Params(), want) || a.Empty() != (len(want) == 0) {
				t.Fatalf("params %q empty %v", a.Params(), a.Empty())
			}
		})
	}
}

// A chat request adapted: the refused members gone from what an adapter
// writes, tool_choice auto in both the members and the typed field, the
// original untouched (another route may send it as it is).
func TestChatRequestAdapted(t *testing.T) {
	req, err := providers.ParseChatRequest([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],` +
		`"temperature":0.3,"top_p":0.5,"tools":[{"type":"function","function":{"name":"f","parameters":{}}}],` +
		`"tool_choice":{"type":"function","function":{"name":"f"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	a := providers.Adapt(req.Members, providers.ShapeChat, constrained(false, false))
	out := req.Adapted(a)
	if _, ok := out.Members.Get("temperature"); ok || out.Members.Value("top_p") != nil {
		t.Fatalf("sampling kept: %v", out.Members)
	}
	if string(out.Members.Value("tool_choice")) != `"auto"` || out.ToolChoice == nil || out.ToolChoice.Mode != "auto" || out.ToolChoice.Function != "" {
		t.Fatalf("tool choice %s %+v", out.Members.Value("tool_choice"), out.ToolChoice)
	}
	if req.Members.Value("temperature") == nil || req.ToolChoice.Mode != "function" {
		t.Fatal("the original request changed")
	}
	if req.Adapted(providers.Adaptation{}) != req {
		t.Fatal("an empty adaptation copies the request")
	}
}
