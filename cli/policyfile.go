package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

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

// policyFileError lists every problem of a policy file, one line each,
// every line starting with the file name so editors and people can find it.
type policyFileError struct {
	File     string
	Problems []string
	// InPolicies: the problems are the policies' own, listed under a
	// summary line even when there is one, so that each problem line starts
	// with the file name rather than with the "error: " gw puts first. A
	// problem of the file as a whole is one line.
	InPolicies bool
}

func (e *policyFileError) Error() string {
	if !e.InPolicies {
		return strings.Join(e.Problems, "\n")
	}
	return fmt.Sprintf("%s is not valid (%d %s):\n%s", e.File, len(e.Problems),
		policyPlural(len(e.Problems), "problem", "problems"), strings.Join(e.Problems, "\n"))
}

// readPolicyFile reads and checks the file at path ("-" is stdin). The
// errors are usage errors: the command was given a bad file, which `diff`
// must tell apart from "there are changes" (exit 1).
func readPolicyFile(path string, stdin io.Reader) (string, []policySpec, error) {
	name := path
	var data []byte
	var err error
	if path == "-" {
		name = "<stdin>"
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return name, nil, usageError{fmt.Errorf("read policy file: %w", err)}
	}
	specs, err := parsePolicyFile(name, data)
	if err != nil {
		return name, nil, usageError{err}
	}
	return name, specs, nil
}

// parsePolicyFile decodes and validates a policy file's content; name is
// what messages call the file.
func parsePolicyFile(name string, data []byte) ([]policySpec, error) {
	fail := func(format string, args ...any) error {
		return &policyFileError{File: name, Problems: []string{name + ": " + fmt.Sprintf(format, args...)}}
	}
	doc, lines, err := decodePolicyDocument(name, data)
	if err != nil {
		return nil, fail("%v", err)
	}
	var items []any
	switch v := doc.(type) {
	case map[string]any:
		items = []any{v}
	case []any:
		items = v
	case nil:
		return nil, fail("no policies: the file is empty")
	default:
		return nil, fail("expected a policy (a mapping with name and definition) or a list of policies, not %s", describePolicyValue(v))
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
		for _, is := range issues {
			file := name
			if line := lines.find(append(prefix[:len(prefix):len(prefix)], is.Loc...)); line > 0 {
				file = fmt.Sprintf("%s:%d", name, line)
			}
			problems = append(problems, policyLabel(file, spec.Name, i+1)+": "+formatPolicyIssue(is))
		}
		where := policyLabel(name, spec.Name, i+1)
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
		return nil, &policyFileError{File: name, Problems: problems, InPolicies: true}
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

// formatPolicyIssue renders a validation issue as loc: message. A number where
// the schema wants a string is nearly always an unquoted price in YAML, so
// the message says how to write it.
func formatPolicyIssue(is validate.Issue) string {
	msg := is.Msg
	if n, ok := is.Input.(json.Number); ok && is.Type == "string_type" {
		msg += fmt.Sprintf(" (quote it: %q)", n.String())
	}
	if len(is.Loc) == 0 {
		return msg
	}
	return validate.FormatLoc(is.Loc) + ": " + msg
}

func describePolicyValue(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}

// decodePolicyDocument turns the file into the generic tree
// validate.ParseJSON makes (objects as map[string]any, numbers as
// json.Number), which is what policy.ParseDefinition reads. JSON is read
// by validate.ParseJSON itself; anything else as YAML, converted node by
// node so that number text such as 1.50 arrives unchanged rather than
// through float64.
func decodePolicyDocument(name string, data []byte) (any, yamlLines, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, nil, nil
	}
	isJSONName := strings.EqualFold(filepath.Ext(name), ".json")
	if isJSONName || trimmed[0] == '{' || trimmed[0] == '[' {
		v, err := validate.ParseJSON(data, nil)
		if err == nil {
			return v, nil, nil
		}
		// YAML flow style also starts with { or [; only a .json file is
		// held to JSON.
		if isJSONName {
			if ve, ok := validate.AsError(err); ok && len(ve.Issues) == 1 && len(ve.Issues[0].Loc) == 1 {
				return nil, nil, fmt.Errorf("invalid JSON at byte %v: %v", ve.Issues[0].Loc[0], ve.Issues[0].Ctx["error"])
			}
			return nil, nil, err
		}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil, nil
		}
		return nil, nil, yamlSyntaxError(data, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, nil, yamlSyntaxError(data, err)
		}
		return nil, nil, fmt.Errorf("line %d: a second YAML document; put every policy in one list instead", extra.Line)
	}
	lines := yamlLines{}
	tree, err := policyYAMLTree(&doc, "", lines)
	return tree, lines, err
}

// yamlLines maps a value's place in the document (policyYAMLPath) to the
// line it is written on, so that a field's problem names its line.
type yamlLines map[string]int

func policyYAMLPath(parent string, step any) string { return fmt.Sprintf("%s/%v", parent, step) }

// find is the line of loc, or of the nearest enclosing value written in
// the file (a missing member's mapping, say); 0 when none is known.
func (l yamlLines) find(loc validate.Loc) int {
	for n := len(loc); n >= 0; n-- {
		path := ""
		for _, step := range loc[:n] {
			path = policyYAMLPath(path, step)
		}
		if line, ok := l[path]; ok {
			return line
		}
	}
	return 0
}

var yamlErrLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlSyntaxError says on which line a file stops being YAML. The parser
// names the line where the enclosing block started (a list opened four
// lines up, for a misindented key), so the first line whose prefix no
// longer parses is found by bisection and named, with the block's start.
func yamlSyntaxError(data []byte, err error) error {
	m := yamlErrLine.FindStringSubmatch(err.Error())
	if m == nil {
		return fmt.Errorf("not valid YAML: %w", err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	parses := func(n int) bool {
		var v yaml.Node
		err := yaml.Unmarshal(bytes.Join(lines[:n], nil), &v)
		return err == nil
	}
	// lines[:lo] parses and lines[:hi] does not.
	lo, hi := 0, len(lines)
	if start, _ := strconv.Atoi(m[1]); start > 0 && start <= len(lines) && parses(start-1) {
		lo = start - 1
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if parses(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	msg := fmt.Sprintf("line %d: not valid YAML: %s", hi, m[2])
	if m[1] != strconv.Itoa(hi) {
		msg += fmt.Sprintf(" (in the block that starts on line %s); check this line's indentation", m[1])
	}
	return errors.New(msg)
}

// policyYAMLTree converts a YAML node to the generic JSON tree, noting in
// lines where each value is written.
func policyYAMLTree(n *yaml.Node, path string, lines yamlLines) (any, error) {
	lines[path] = n.Line
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return policyYAMLTree(n.Content[0], path, lines)
	case yaml.AliasNode:
		return policyYAMLTree(n.Alias, path, lines)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: a mapping key must be a plain string", k.Line)
			}
			if _, dup := m[k.Value]; dup {
				return nil, fmt.Errorf("line %d: key %q appears twice in one mapping", k.Line, k.Value)
			}
			val, err := policyYAMLTree(v, policyYAMLPath(path, k.Value), lines)
			if err != nil {
				return nil, err
			}
			// A member is where its key is written.
			lines[policyYAMLPath(path, k.Value)] = k.Line
			m[k.Value] = val
		}
		return m, nil
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for i, c := range n.Content {
			val, err := policyYAMLTree(c, policyYAMLPath(path, i), lines)
			if err != nil {
				return nil, err
			}
			out = append(out, val)
		}
		return out, nil
	case yaml.ScalarNode:
		return policyYAMLScalar(n)
	}
	return nil, fmt.Errorf("line %d: unsupported YAML node", n.Line)
}

func policyYAMLScalar(n *yaml.Node) (any, error) {
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		return b, nil
	case "!!int":
		// YAML spells integers in ways JSON does not (0x1f, 0o17, 1_000);
		// big.Int reads them all with base 0 and writes plain decimal.
		i, ok := new(big.Int).SetString(strings.TrimPrefix(n.Value, "+"), 0)
		if !ok {
			return nil, fmt.Errorf("line %d: %q is not an integer", n.Line, n.Value)
		}
		return json.Number(i.String()), nil
	case "!!float":
		if json.Valid([]byte(n.Value)) {
			return json.Number(n.Value), nil
		}
		f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("line %d: %q is not a number JSON can carry", n.Line, n.Value)
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
	}
	// Strings, and the tags JSON has no type for (timestamps, binary), are
	// read as the text written: the schema has no such members anyway.
	return n.Value, nil
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

// planStepKind is what apply does to one policy.
type planStepKind string

const (
	stepCreate  planStepKind = "create"
	stepUpdate  planStepKind = "update"
	stepEnable  planStepKind = "enable"
	stepDisable planStepKind = "disable"
	stepDelete  planStepKind = "delete"
)

// planStep is one change. An update carries the definition change and, if
// the enabled flag changes too, that as well, in one PATCH.
type planStep struct {
	Kind    planStepKind
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
			plan.Steps = append(plan.Steps, planStep{Kind: stepCreate, Name: spec.Name, Spec: spec, After: after})
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
			plan.Steps = append(plan.Steps, planStep{Kind: stepUpdate, Name: spec.Name, Spec: spec, Current: cur,
				EnabledChanged: enabledChanged, Before: before, After: after})
		case enabledChanged && spec.Enabled:
			plan.Steps = append(plan.Steps, planStep{Kind: stepEnable, Name: spec.Name, Spec: spec, Current: cur})
		case enabledChanged:
			plan.Steps = append(plan.Steps, planStep{Kind: stepDisable, Name: spec.Name, Spec: spec, Current: cur})
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
		deletes = append(deletes, planStep{Kind: stepDelete, Name: cur.Name, Current: cur, Before: before})
	}
	plan.Steps = append(plan.Steps, deletes...)
	return plan, nil
}

// count returns how many steps are of the given kinds.
func (p *policyPlan) count(kinds ...planStepKind) int {
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
		case stepCreate:
			state := "enabled"
			if !s.Spec.Enabled {
				state = "disabled"
			}
			fmt.Fprintf(&b, "+ create policy %q (%s)\n", s.Name, state)
			writePolicyIndented(&b, prefixPolicyLines("+ ", s.After))
		case stepUpdate:
			extra := ""
			if s.EnabledChanged {
				extra = " and disable it"
				if s.Spec.Enabled {
					extra = " and enable it"
				}
			}
			fmt.Fprintf(&b, "~ update policy %q (%s): definition%s\n", s.Name, s.Current.ID, extra)
			writePolicyIndented(&b, policyUnifiedDiff("workspace", p.File, policyLines(s.Before), policyLines(s.After)))
		case stepEnable, stepDisable:
			fmt.Fprintf(&b, "~ %s policy %q (%s)\n", s.Kind, s.Name, s.Current.ID)
		case stepDelete:
			fmt.Fprintf(&b, "- delete policy %q (%s): not in %s\n", s.Name, s.Current.ID, p.File)
			writePolicyIndented(&b, prefixPolicyLines("- ", s.Before))
		}
	}
	if len(p.Steps) == 0 {
		fmt.Fprintf(&b, "no changes: the workspace matches %s (%d %s)\n", p.File, p.Unchanged, policyPlural(p.Unchanged, "policy", "policies"))
	} else {
		fmt.Fprintf(&b, "plan: %d to create, %d to update, %d to enable or disable, %d to delete; %d unchanged\n",
			p.count(stepCreate), p.count(stepUpdate), p.count(stepEnable, stepDisable), p.count(stepDelete), p.Unchanged)
	}
	if len(p.Unmanaged) > 0 {
		names := make([]string, len(p.Unmanaged))
		for i, u := range p.Unmanaged {
			names[i] = strconv.Quote(u.Name)
		}
		fmt.Fprintf(&b, "note: %d workspace %s not in %s %s kept (--prune deletes them): %s\n", len(p.Unmanaged),
			policyPlural(len(p.Unmanaged), "policy", "policies"), p.File, policyPlural(len(p.Unmanaged), "is", "are"), strings.Join(names, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func policyPlural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func writePolicyIndented(b *strings.Builder, text string) {
	for _, line := range policyLines(text) {
		b.WriteString("    ")
		b.WriteString(line)
		b.WriteByte('\n')
	}
}

func prefixPolicyLines(prefix, text string) string {
	lines := policyLines(text)
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}

// policyLines splits text into lines without their newlines; a trailing
// newline does not make an empty last line.
func policyLines(text string) []string {
	text = strings.TrimSuffix(text, "\n")
	if text == "" {
		return nil
	}
	return strings.Split(text, "\n")
}

// policyDiffContext is how many unchanged lines surround each hunk, as diff -u.
const policyDiffContext = 3

// policyMaxDiffCells bounds the longest-common-subsequence table. Definitions are
// at most 100 rules, so this is rarely reached; past it the changed middle
// is shown as one replaced block, still correct, only less precise.
const policyMaxDiffCells = 1 << 22

type policyDiffOp struct {
	kind byte // ' ', '-', '+'
	text string
}

// policyLineDiff returns the edit script from a to b: the common prefix and
// suffix are kept as they are, and the middle is diffed by longest common
// subsequence.
func policyLineDiff(a, b []string) []policyDiffOp {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var ops []policyDiffOp
	for _, l := range a[:pre] {
		ops = append(ops, policyDiffOp{' ', l})
	}
	ops = policyMiddleDiff(ops, a[pre:len(a)-suf], b[pre:len(b)-suf])
	for _, l := range a[len(a)-suf:] {
		ops = append(ops, policyDiffOp{' ', l})
	}
	return ops
}

// policyLCS is the table of longest common subsequences: [i][j] is the
// length of ma[i:] and mb[j:]'s.
func policyLCS(ma, mb []string) [][]int32 {
	n, m := len(ma), len(mb)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if ma[i] == mb[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	return lcs
}

// policyMiddleDiff appends the edits from ma to mb, by their longest
// common subsequence; past policyMaxDiffCells, as one replaced block.
func policyMiddleDiff(ops []policyDiffOp, ma, mb []string) []policyDiffOp {
	n, m := len(ma), len(mb)
	if n*m > policyMaxDiffCells {
		for _, l := range ma {
			ops = append(ops, policyDiffOp{'-', l})
		}
		for _, l := range mb {
			ops = append(ops, policyDiffOp{'+', l})
		}
		return ops
	}
	lcs := policyLCS(ma, mb)
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && ma[i] == mb[j]:
			ops = append(ops, policyDiffOp{' ', ma[i]})
			i++
			j++
		case j < m && (i == n || lcs[i][j+1] > lcs[i+1][j]):
			ops = append(ops, policyDiffOp{'+', mb[j]})
			j++
		default:
			ops = append(ops, policyDiffOp{'-', ma[i]})
			i++
		}
	}
	return ops
}

// policyUnifiedDiff renders the change from a to b in diff -u form; empty when
// they are equal.
func policyUnifiedDiff(aName, bName string, a, b []string) string {
	ops := policyLineDiff(a, b)
	var out strings.Builder
	for i := 0; i < len(ops); {
		for i < len(ops) && ops[i].kind == ' ' {
			i++
		}
		if i == len(ops) {
			break
		}
		if out.Len() == 0 {
			fmt.Fprintf(&out, "--- %s\n+++ %s\n", aName, bName)
		}
		start, end := max(0, i-policyDiffContext), policyHunkEnd(ops, i)
		writePolicyHunk(&out, ops, start, end)
		i = end
	}
	return out.String()
}

// policyHunkEnd is where the hunk of changes starting at i ends: runs of
// changes are joined when fewer than 2*context unchanged lines separate
// them, and the hunk keeps context lines after its last change.
func policyHunkEnd(ops []policyDiffOp, i int) int {
	end := i
	for end < len(ops) {
		if ops[end].kind != ' ' {
			end++
			continue
		}
		run := end
		for run < len(ops) && ops[run].kind == ' ' {
			run++
		}
		if run == len(ops) || run-end > 2*policyDiffContext {
			return min(end+policyDiffContext, len(ops))
		}
		end = run
	}
	return end
}

// writePolicyHunk writes ops[start:end] with its @@ header, whose line
// numbers count the lines of a and b before it.
func writePolicyHunk(out *strings.Builder, ops []policyDiffOp, start, end int) {
	count := func(ops []policyDiffOp) (inA, inB int) {
		for _, op := range ops {
			if op.kind != '+' {
				inA++
			}
			if op.kind != '-' {
				inB++
			}
		}
		return inA, inB
	}
	aBefore, bBefore := count(ops[:start])
	aCount, bCount := count(ops[start:end])
	fmt.Fprintf(out, "@@ -%s +%s @@\n", policyHunkRange(aBefore+1, aCount), policyHunkRange(bBefore+1, bCount))
	for _, op := range ops[start:end] {
		out.WriteByte(op.kind)
		out.WriteString(op.text)
		out.WriteByte('\n')
	}
}

// policyHunkRange writes a hunk's start,count as diff -u does: an empty range
// names the line before it.
func policyHunkRange(start, count int) string {
	if count == 0 {
		start--
	}
	if count == 1 {
		return strconv.Itoa(start)
	}
	return strconv.Itoa(start) + "," + strconv.Itoa(count)
}
