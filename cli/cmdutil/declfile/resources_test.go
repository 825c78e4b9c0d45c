package declfile

import (
	"strings"
	"testing"
)

// A resource plan compares by name: a create, an update (a diff, or a
// forced one that says why), an unchanged one, and the level's others
// deleted under prune or kept and named.
func TestPlanResources(t *testing.T) {
	desired := []Resource{
		{Name: "new", Doc: map[string]any{"a": 1}},
		{Name: "changed", Doc: map[string]any{"a": 2}},
		{Name: "same", Doc: map[string]any{"a": 3}},
		{Name: "secret", Doc: map[string]any{"a": 4}, Force: "a secret is given"},
	}
	current := []Resource{
		{Name: "changed", Doc: map[string]any{"a": 1}},
		{Name: "same", Doc: map[string]any{"a": 3}},
		{Name: "secret", Doc: map[string]any{"a": 4}},
		{Name: "extra", Doc: map[string]any{"a": 5}},
	}
	var b strings.Builder
	p := PlanResources("thing", "things", "f.yaml", "workspace w", desired, current, false)
	if err := p.Render(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`+ create thing "new"`, `~ update thing "changed"`, `-  "a": 1`, `+  "a": 2`,
		`~ update thing "secret" (a secret is given)`, "plan: 1 to create, 2 to update, 0 to delete; 1 unchanged",
		`note: 1 thing of workspace w not in f.yaml is kept (--prune deletes it): "extra"`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("plan lacks %q:\n%s", want, b.String())
		}
	}
	if p.Count(StepCreate) != 1 || p.Count(StepUpdate) != 2 || p.Unchanged != 1 {
		t.Errorf("steps: %+v", p.Steps)
	}
	p = PlanResources("thing", "things", "f.yaml", "workspace w", desired, current, true)
	if p.Count(StepDelete) != 1 || len(p.Unmanaged) != 0 || p.Steps[len(p.Steps)-1].Name != "extra" {
		t.Errorf("prune: %+v", p.Steps)
	}
	b.Reset()
	same := PlanResources("thing", "things", "f.yaml", "workspace w", desired[2:3], current[1:2], false)
	if err := same.Render(&b); err != nil || b.String() != "no changes: workspace w matches f.yaml (1 thing)\n" {
		t.Errorf("no changes: %q %v", b.String(), err)
	}
}

// The items of a resource file: a member's list or a bare list, each
// named once; every item's problem at once.
func TestResourceItems(t *testing.T) {
	tree, lines, err := DecodeDocument("f.yaml", []byte("things:\n  - name: a\n  - name: a\n  - {x: 1}\n  - 7\n"))
	if err != nil {
		t.Fatal(err)
	}
	items, problems, err := ResourceItems("f.yaml", tree, lines, "things", "thing")
	if err != nil || len(items) != 4 || len(problems) != 3 {
		t.Fatalf("%+v %q %v", items, problems, err)
	}
	for i, want := range []string{`f.yaml:3: thing "a" (#2): name: duplicate of thing #1`, "f.yaml:4: thing #3: name: Field required",
		"f.yaml:5: thing #4: expected an object"} {
		if !strings.HasPrefix(problems[i], want) {
			t.Errorf("problem %d: %q, want %q", i, problems[i], want)
		}
	}
	if _, _, err := ResourceItems("f.yaml", nil, lines, "things", "thing"); err == nil || !strings.Contains(err.Error(), `"things: []"`) {
		t.Errorf("an empty file: %v", err)
	}
	tree, lines, _ = DecodeDocument("f.json", []byte(`[{"name":"b"}]`))
	if items, problems, err := ResourceItems("f.json", tree, lines, "things", "thing"); err != nil || len(problems) != 0 || items[0].Name != "b" {
		t.Errorf("a bare list: %+v %q %v", items, problems, err)
	}
}
