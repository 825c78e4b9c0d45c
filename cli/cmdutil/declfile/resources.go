package declfile

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/server/validate"
)

// The files of gw tool-policies apply and gw guardrails apply declare
// named JSON resources: a list under one member (tool_policies:,
// guardrails:) or a bare list, each item an object with a name. Each
// item is decoded strictly by its command (with the server's own rules
// where the CLI can apply them), and the plan compares, by name, the
// file's item with the level's resource as indented JSON of the same
// shape: a change is shown as a unified diff.

// Item is one item of a resource file: its name (when it has one), its
// 1-based index, where it is in the document, and its generic value.
type Item struct {
	Name  string
	Index int
	Loc   validate.Loc
	Value any
}

// ResourceItems finds the items of a resource file (tree as DecodeDocument
// made it): the list under member, or the document itself when it is a
// list. kind names one item in messages ("tool policy"). Each item must
// be an object with a unique name: the problems of the items are
// returned for the command to add its own to (all are reported at once);
// err is a problem of the file as a whole.
func ResourceItems(name string, tree any, lines Lines, member, kind string) (items []Item, problems []string, err error) {
	var list []any
	var prefix validate.Loc
	switch v := tree.(type) {
	case []any:
		list = v
	case nil:
		return nil, nil, Problem(name, "no %s: the file is empty (a file that lists none is \"%s: []\")", member, member)
	case map[string]any:
		var errs validate.Errors
		o := validate.ReadObject(v, nil, &errs)
		raw, _ := o.Require(member)
		o.Close()
		got, isList := raw.([]any)
		if raw != nil && !isList {
			errs.Add(validate.Loc{member}, "list_type", "Input should be a valid list", raw, nil)
		}
		if err := errs.Err(); err != nil {
			ve, _ := validate.AsError(err)
			for _, is := range ve.Issues {
				problems = append(problems, lines.At(name, is.Loc)+": "+FormatIssue(is))
			}
			return nil, nil, &FileError{File: name, Problems: problems, PerItem: true}
		}
		list, prefix = got, validate.Loc{member}
	default:
		return nil, nil, Problem(name, "expected a mapping with a %s list, not %s", member, DescribeValue(tree))
	}
	first := map[string]int{}
	out := make([]Item, 0, len(list))
	for i, v := range list {
		it := Item{Index: i + 1, Loc: append(prefix[:len(prefix):len(prefix)], i), Value: v}
		obj, _ := v.(map[string]any)
		switch n, ok := obj["name"].(string); {
		case obj == nil:
			problems = append(problems, fmt.Sprintf("%s: expected an object, not %s", ItemLabel(lines.At(name, it.Loc), kind, "", it.Index), DescribeValue(v)))
		case !ok || n == "":
			problems = append(problems, ItemLabel(lines.At(name, it.Loc), kind, "", it.Index)+": name: Field required (items are matched by name)")
		default:
			it.Name = n
			if f, dup := first[n]; dup {
				problems = append(problems, fmt.Sprintf("%s: name: duplicate of %s #%d; names identify %s, so each may appear once",
					ItemLabel(lines.At(name, it.Loc.With("name")), kind, n, it.Index), kind, f, member))
			} else {
				first[n] = it.Index
			}
		}
		out = append(out, it)
	}
	return out, problems, nil
}

// DecodeStrict decodes an item's generic value into dst as JSON, refusing
// members dst does not have; the problem names the item and its line.
func DecodeStrict(name string, lines Lines, kind string, it Item, dst any) error {
	raw, err := json.Marshal(it.Value)
	if err == nil {
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.DisallowUnknownFields()
		err = dec.Decode(dst)
	}
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "json: ")
		return fmt.Errorf("%s: %s", ItemLabel(lines.At(name, it.Loc), kind, it.Name, it.Index), msg)
	}
	return nil
}

// Resource is one resource as a plan compares it: its name and the JSON
// of what is compared. Force, when set, makes an equal resource an
// update anyway, and says why (a write-only secret the server cannot
// show, given in the file).
type Resource struct {
	Name  string
	Doc   any
	Force string
}

// ResourceStep is one change of a resource plan. Desired indexes the
// file's resources (create, update), Current the level's (update,
// delete); -1 when there is none.
type ResourceStep struct {
	Kind             StepKind
	Name             string
	Desired, Current int
	Diff             string
	Note             string
}

// ResourcePlan is what apply would change: creates and updates in the
// file's order, then deletes.
type ResourcePlan struct {
	Kind, Member, File, Level string
	Steps                     []ResourceStep
	// Unmanaged are the level's resources the file does not list, kept
	// because prune was not asked for.
	Unmanaged []string
	Unchanged int
	desired   []Resource
	current   []Resource
}

// JSONLines is a value as indented JSON, a line each.
func JSONLines(v any) []string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return []string{fmt.Sprint(v)}
	}
	return TextLines(string(b))
}

// PlanResources compares the file's resources with the level's, by name.
func PlanResources(kind, member, file, level string, desired, current []Resource, prune bool) *ResourcePlan {
	p := &ResourcePlan{Kind: kind, Member: member, File: file, Level: level, desired: desired, current: current}
	byName := make(map[string]int, len(current))
	for i, c := range current {
		byName[c.Name] = i
	}
	inFile := map[string]bool{}
	for i, d := range desired {
		inFile[d.Name] = true
		ci, ok := byName[d.Name]
		if !ok {
			p.Steps = append(p.Steps, ResourceStep{Kind: StepCreate, Name: d.Name, Desired: i, Current: -1})
			continue
		}
		diff := UnifiedDiff(level, file, JSONLines(current[ci].Doc), JSONLines(d.Doc))
		switch {
		case diff != "" || d.Force != "":
			p.Steps = append(p.Steps, ResourceStep{Kind: StepUpdate, Name: d.Name, Desired: i, Current: ci, Diff: diff, Note: d.Force})
		default:
			p.Unchanged++
		}
	}
	for i, c := range current {
		switch {
		case inFile[c.Name]:
		case prune:
			p.Steps = append(p.Steps, ResourceStep{Kind: StepDelete, Name: c.Name, Desired: -1, Current: i})
		default:
			p.Unmanaged = append(p.Unmanaged, strconv.Quote(c.Name))
		}
	}
	return p
}

// Count is the number of steps of a kind.
func (p *ResourcePlan) Count(kind StepKind) int {
	n := 0
	for _, s := range p.Steps {
		if s.Kind == kind {
			n++
		}
	}
	return n
}

// Render writes the plan: a line per change, what is created, changed (a
// unified diff) or deleted under it, then a summary.
func (p *ResourcePlan) Render(w io.Writer) error {
	var b strings.Builder
	for _, s := range p.Steps {
		switch s.Kind {
		case StepCreate:
			fmt.Fprintf(&b, "+ create %s %q\n", p.Kind, s.Name)
			WriteIndented(&b, PrefixLines("+ ", strings.Join(JSONLines(p.desired[s.Desired].Doc), "\n")))
		case StepUpdate:
			fmt.Fprintf(&b, "~ update %s %q", p.Kind, s.Name)
			if s.Note != "" {
				fmt.Fprintf(&b, " (%s)", s.Note)
			}
			b.WriteString("\n")
			WriteIndented(&b, s.Diff)
		case StepDelete:
			fmt.Fprintf(&b, "- delete %s %q: not in %s\n", p.Kind, s.Name, p.File)
			WriteIndented(&b, PrefixLines("- ", strings.Join(JSONLines(p.current[s.Current].Doc), "\n")))
		}
	}
	if len(p.Steps) == 0 {
		fmt.Fprintf(&b, "no changes: %s matches %s (%d %s)\n", p.Level, p.File, p.Unchanged, Plural(p.Unchanged, p.Kind, p.Member))
	} else {
		fmt.Fprintf(&b, "plan: %d to create, %d to update, %d to delete; %d unchanged\n",
			p.Count(StepCreate), p.Count(StepUpdate), p.Count(StepDelete), p.Unchanged)
	}
	if n := len(p.Unmanaged); n > 0 {
		fmt.Fprintf(&b, "note: %d %s of %s not in %s %s kept (--prune deletes %s): %s\n", n, Plural(n, p.Kind, p.Member), p.Level,
			p.File, Plural(n, "is", "are"), Plural(n, "it", "them"), strings.Join(p.Unmanaged, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ReadResources reads a file of resources of one kind (the list under
// member): its display name, its items, its line table (for the items'
// own problems) and the problems found so far. A file that cannot be read
// or decoded, or holds no such list, is a usage error.
func ReadResources(path string, stdin io.Reader, member, kind string) (string, []Item, Lines, []string, error) {
	name, data, err := ReadFile(kind, path, stdin)
	if err != nil {
		return name, nil, nil, nil, err
	}
	tree, lines, err := DecodeDocument(name, data)
	if err != nil {
		return name, nil, nil, nil, cmdutil.UsageError{Err: Problem(name, "%v", err)}
	}
	items, problems, err := ResourceItems(name, tree, lines, member, kind)
	if err != nil {
		return name, nil, nil, nil, cmdutil.UsageError{Err: err}
	}
	return name, items, lines, problems, nil
}
