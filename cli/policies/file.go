package policies

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/cmdutil/declfile"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

// The policy file of `gw policies apply|diff -f FILE` is YAML or JSON and
// holds either one policy or a list of them:
//
//	name: cap-costs        # required; identifies the policy in the workspace
//	enabled: true          # optional, default true
//	definition:            # required; spec 2.3, exactly as the API takes it
//	  target: {kind: workspace}
//	  rules: [...]
//
// Each policy is checked with server/policy's own parser before anything is
// sent, so a file that passes here passes the server, and its problems are
// reported all at once with the file, the policy and the location.

// policyNameRule is the API's rule for policy names (wire.PolicyCreate's
// schema: 1 to 100 characters); the server checks it again.
var policyNameRule = validate.StringRule{Min: 1, Max: 100, NoControl: true}

// policySpec is one policy as the file declares it.
type policySpec struct {
	Name       string
	Enabled    bool
	Definition policy.Definition
	// Index is the policy's 1-based position in the file, for messages.
	Index int
}

// readPolicyFile reads and checks the file at path ("-" is stdin). The
// errors are usage errors: the command was given a bad file, which `diff`
// must tell apart from "there are changes" (exit 1).
func readPolicyFile(path string, stdin io.Reader) (string, []policySpec, error) {
	name, data, err := declfile.ReadFile("policy", path, stdin)
	if err != nil {
		return name, nil, err
	}
	specs, err := parsePolicyFile(name, data)
	if err != nil {
		return name, nil, cmdutil.UsageError{Err: err}
	}
	return name, specs, nil
}

// parsePolicyFile decodes and validates a policy file's content; name is
// what messages call the file.
func parsePolicyFile(name string, data []byte) ([]policySpec, error) {
	doc, lines, err := declfile.DecodeDocument(name, data)
	if err != nil {
		return nil, declfile.Problem(name, "%v", err)
	}
	var items []any
	switch v := doc.(type) {
	case map[string]any:
		items = []any{v}
	case []any:
		items = v
	case nil:
		return nil, declfile.Problem(name, "no policies: the file is empty")
	default:
		return nil, declfile.Problem(name, "expected a policy (a mapping with name and definition) or a list of policies, not %s", declfile.DescribeValue(v))
	}

	specs := make([]policySpec, 0, len(items))
	var problems []string
	firstByName := map[string]int{}
	_, single := doc.(map[string]any)
	for i, item := range items {
		spec, issues := parsePolicySpec(item, i+1)
		var prefix validate.Loc
		if !single {
			prefix = validate.Loc{i}
		}
		problems = append(problems, declfile.ItemProblems(name, lines, prefix, "policy", spec.Name, i+1, issues)...)
		where := declfile.ItemLabel(name, "policy", spec.Name, i+1)
		if spec.Name != "" {
			if first, dup := firstByName[spec.Name]; dup {
				problems = append(problems, fmt.Sprintf("%s: name: duplicate of policy #%d; names identify policies in the workspace, so each may appear once", where, first))
			} else {
				firstByName[spec.Name] = i + 1
			}
		}
		specs = append(specs, spec)
	}
	if len(problems) > 0 {
		return nil, &declfile.FileError{File: name, Problems: problems, PerItem: true}
	}
	return specs, nil
}

// parsePolicySpec reads one entry. The name is returned even when the rest
// is invalid so that messages can say which policy they are about.
func parsePolicySpec(v any, index int) (policySpec, []validate.Issue) {
	var errs validate.Errors
	spec := policySpec{Enabled: true, Index: index}
	o := validate.ReadObject(v, nil, &errs)
	if o != nil {
		if raw, ok := o.Require("name"); ok {
			if s, ok := validate.String(raw, validate.Loc{"name"}, policyNameRule, &errs); ok {
				spec.Name = s
			}
		}
		if raw, ok := o.Raw("enabled"); ok {
			spec.Enabled, _ = validate.Bool(raw, validate.Loc{"enabled"}, &errs)
		}
		if raw, ok := o.Require("definition"); ok {
			before := errs.Len()
			spec.Definition = policy.ParseDefinition(raw, validate.Loc{"definition"}, &errs)
			if errs.Len() == before {
				// What the server would refuse on apply, found before it.
				policy.CheckStorable(spec.Definition, validate.Loc{"definition"}, &errs)
			}
		}
		o.Close()
	}
	if err := errs.Err(); err != nil {
		ve, _ := validate.AsError(err)
		return spec, ve.Issues
	}
	return spec, nil
}

func policyLabel(file, name string, index int) string {
	if name == "" {
		return fmt.Sprintf("%s: policy #%d", file, index)
	}
	return fmt.Sprintf("%s: policy %q (#%d)", file, name, index)
}

// canonicalDefinition is the definition as the API stores and returns it;
// two definitions are the same policy exactly when these bytes are equal.
func canonicalDefinition(d policy.Definition) (string, error) {
	b, err := json.Marshal(d)
	return string(b), err
}

// definitionYAML renders a definition for people: the canonical JSON's
// members in its order (kind first), as block YAML, one list item a line so
// that diffs point at the changed item.
func definitionYAML(d policy.Definition) (string, error) {
	raw, err := json.Marshal(d)
	if err != nil {
		return "", err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	node, err := policyJSONNode(dec)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(node); err != nil {
		return "", err
	}
	if err := enc.Close(); err != nil {
		return "", err
	}
	return b.String(), nil
}

// policyJSONNode reads one JSON value from dec as a YAML node, keeping the
// members' order (a map would sort them).
func policyJSONNode(dec *json.Decoder) (*yaml.Node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := policyJSONNode(dec)
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k.(string)}, v)
			}
			_, err := dec.Token() // }
			return n, err
		}
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for dec.More() {
			v, err := policyJSONNode(dec)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, v)
		}
		_, err := dec.Token() // ]
		return n, err
	case string:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: t}, nil
	case json.Number:
		tag := "!!int"
		if strings.ContainsAny(t.String(), ".eE") {
			tag = "!!float"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: t.String()}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(t)}, nil
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}

// planStep is one change. An update carries the definition change and, if
// the enabled flag changes too, that as well, in one PATCH.
type planStep struct {
	Kind    declfile.StepKind
	Name    string
	Spec    *policySpec  // create, update, enable, disable
	Current *wire.Policy // update, enable, disable, delete
	// EnabledChanged: an update also flips the enabled flag.
	EnabledChanged bool
	// Before and After are the definition YAML (update: both; create: After).
	Before, After string
}

// policyPlan is what apply would change, in the order it does it: creates
// and updates before deletes, so that the workspace is never left with
// fewer rules than either the old or the new set while apply runs.
type policyPlan struct {
	File  string
	Steps []planStep
	// Unmanaged are workspace policies the file does not name, kept
	// because --prune was not given.
	Unmanaged []wire.Policy
	// Unchanged counts the file's policies that already match.
	Unchanged int
}

// planPolicies compares the file with the workspace's policies. Policies are
// matched by name; a policy is unchanged when its canonical definition and
// its enabled flag are equal to the file's.
func planPolicies(file string, specs []policySpec, current []wire.Policy, prune bool) (*policyPlan, error) {
	plan := &policyPlan{File: file}
	byName := make(map[string]*wire.Policy, len(current))
	for i := range current {
		byName[current[i].Name] = &current[i]
	}
	inFile := make(map[string]bool, len(specs))
	var deletes []planStep
	for i := range specs {
		spec := &specs[i]
		inFile[spec.Name] = true
		after, err := definitionYAML(spec.Definition)
		if err != nil {
			return nil, err
		}
		cur := byName[spec.Name]
		if cur == nil {
			plan.Steps = append(plan.Steps, planStep{Kind: declfile.StepCreate, Name: spec.Name, Spec: spec, After: after})
			continue
		}
		want, err := canonicalDefinition(spec.Definition)
		if err != nil {
			return nil, err
		}
		have, err := canonicalDefinition(policyDef(*cur))
		if err != nil {
			return nil, err
		}
		enabledChanged := cur.Enabled != spec.Enabled
		switch {
		case want != have:
			before, err := definitionYAML(policyDef(*cur))
			if err != nil {
				return nil, err
			}
			plan.Steps = append(plan.Steps, planStep{Kind: declfile.StepUpdate, Name: spec.Name, Spec: spec, Current: cur,
				EnabledChanged: enabledChanged, Before: before, After: after})
		case enabledChanged && spec.Enabled:
			plan.Steps = append(plan.Steps, planStep{Kind: declfile.StepEnable, Name: spec.Name, Spec: spec, Current: cur})
		case enabledChanged:
			plan.Steps = append(plan.Steps, planStep{Kind: declfile.StepDisable, Name: spec.Name, Spec: spec, Current: cur})
		default:
			plan.Unchanged++
		}
	}
	for i := range current {
		cur := &current[i]
		if inFile[cur.Name] {
			continue
		}
		if !prune {
			plan.Unmanaged = append(plan.Unmanaged, *cur)
			continue
		}
		before, err := definitionYAML(policyDef(*cur))
		if err != nil {
			return nil, err
		}
		deletes = append(deletes, planStep{Kind: declfile.StepDelete, Name: cur.Name, Current: cur, Before: before})
	}
	plan.Steps = append(plan.Steps, deletes...)
	return plan, nil
}

// count returns how many steps are of the given kinds.
func (p *policyPlan) count(kinds ...declfile.StepKind) int {
	n := 0
	for _, s := range p.Steps {
		for _, k := range kinds {
			if s.Kind == k {
				n++
			}
		}
	}
	return n
}

// render writes the plan for people: one header line per change, then the
// created definition, the unified diff of an updated one, or the deleted
// one, indented under it.
func (p *policyPlan) render(w io.Writer) error {
	var b strings.Builder
	for _, s := range p.Steps {
		switch s.Kind {
		case declfile.StepCreate:
			state := "enabled"
			if !s.Spec.Enabled {
				state = "disabled"
			}
			fmt.Fprintf(&b, "+ create policy %q (%s)\n", s.Name, state)
			declfile.WriteIndented(&b, declfile.PrefixLines("+ ", s.After))
		case declfile.StepUpdate:
			extra := ""
			if s.EnabledChanged {
				extra = " and disable it"
				if s.Spec.Enabled {
					extra = " and enable it"
				}
			}
			fmt.Fprintf(&b, "~ update policy %q (%s): definition%s\n", s.Name, s.Current.ID, extra)
			declfile.WriteIndented(&b, declfile.UnifiedDiff("workspace", p.File, declfile.TextLines(s.Before), declfile.TextLines(s.After)))
		case declfile.StepEnable, declfile.StepDisable:
			fmt.Fprintf(&b, "~ %s policy %q (%s)\n", s.Kind, s.Name, s.Current.ID)
		case declfile.StepDelete:
			fmt.Fprintf(&b, "- delete policy %q (%s): not in %s\n", s.Name, s.Current.ID, p.File)
			declfile.WriteIndented(&b, declfile.PrefixLines("- ", s.Before))
		}
	}
	if len(p.Steps) == 0 {
		fmt.Fprintf(&b, "no changes: the workspace matches %s (%d %s)\n", p.File, p.Unchanged, declfile.Plural(p.Unchanged, "policy", "policies"))
	} else {
		fmt.Fprintf(&b, "plan: %d to create, %d to update, %d to enable or disable, %d to delete; %d unchanged\n",
			p.count(declfile.StepCreate), p.count(declfile.StepUpdate), p.count(declfile.StepEnable, declfile.StepDisable), p.count(declfile.StepDelete), p.Unchanged)
	}
	if len(p.Unmanaged) > 0 {
		names := make([]string, len(p.Unmanaged))
		for i, u := range p.Unmanaged {
			names[i] = strconv.Quote(u.Name)
		}
		fmt.Fprintf(&b, "note: %d workspace %s not in %s %s kept (--prune deletes them): %s\n", len(p.Unmanaged),
			declfile.Plural(len(p.Unmanaged), "policy", "policies"), p.File, declfile.Plural(len(p.Unmanaged), "is", "are"), strings.Join(names, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
