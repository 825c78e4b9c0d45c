// Package declfile reads the declarative files of gw policies apply and gw
// aliases apply (YAML or JSON, problems named by file and line) and shows
// plans as unified diffs.
package declfile

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

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/server/validate"
)

// The declarative files of gw policies apply|diff and gw aliases apply
// are read by one machinery, so that both report alike: YAML or JSON
// decoded to the generic tree validate.ParseJSON makes, each value's line
// kept, every problem of the file at once, each on its own line starting
// FILE:LINE; and their plans shown alike (+ create, ~ update with a
// unified diff, - delete).

// ReadFile reads the file at path ("-" is stdin) and returns what
// messages call it and its content. A file that cannot be read is a
// usage error: the command was given a bad file.
func ReadFile(what, path string, stdin io.Reader) (string, []byte, error) {
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
		return name, nil, cmdutil.UsageError{Err: fmt.Errorf("read %s file: %w", what, err)}
	}
	return name, data, nil
}

// Problem is a problem of the file as a whole (not valid YAML, the
// wrong shape), on one line.
func Problem(name, format string, args ...any) error {
	return &FileError{File: name, Problems: []string{name + ": " + fmt.Sprintf(format, args...)}}
}

// ItemLabel names an item of a file in messages: FILE: KIND "NAME" (#N),
// or FILE: KIND #N before its name is known.
func ItemLabel(file, kind, name string, index int) string {
	if name == "" {
		return fmt.Sprintf("%s: %s #%d", file, kind, index)
	}
	return fmt.Sprintf("%s: %s %q (#%d)", file, kind, name, index)
}

// ItemProblems turns the validation issues of one item (the index-th, at
// prefix in the document) into problem lines, each starting with the
// file and the line the issue's value is written on.
func ItemProblems(file string, lines Lines, prefix validate.Loc, kind, name string, index int, issues []validate.Issue) []string {
	out := make([]string, 0, len(issues))
	for _, is := range issues {
		out = append(out, ItemLabel(lines.At(file, append(prefix[:len(prefix):len(prefix)], is.Loc...)), kind, name, index)+": "+FormatIssue(is))
	}
	return out
}

// At is FILE:LINE for the value at loc, or FILE when no line is known
// (JSON, or nothing written there).
func (l Lines) At(file string, loc validate.Loc) string {
	if line := l.find(loc); line > 0 {
		return fmt.Sprintf("%s:%d", file, line)
	}
	return file
}

// FileError lists every problem of a declarative file, one line each,
// every line starting with the file name so editors and people can find it.
type FileError struct {
	File     string
	Problems []string
	// PerItem: the problems are the items' own (policies, aliases), listed under a
	// summary line even when there is one, so that each problem line starts
	// with the file name rather than with the "error: " gw puts first. A
	// problem of the file as a whole is one line.
	PerItem bool
}

func (e *FileError) Error() string {
	if !e.PerItem {
		return strings.Join(e.Problems, "\n")
	}
	return fmt.Sprintf("%s is not valid (%d %s):\n%s", e.File, len(e.Problems),
		Plural(len(e.Problems), "problem", "problems"), strings.Join(e.Problems, "\n"))
}

// FormatIssue renders a validation issue as loc: message. A number where
// the schema wants a string is nearly always an unquoted price in YAML, so
// the message says how to write it.
func FormatIssue(is validate.Issue) string {
	msg := is.Msg
	if n, ok := is.Input.(json.Number); ok && is.Type == "string_type" {
		msg += fmt.Sprintf(" (quote it: %q)", n.String())
	}
	if len(is.Loc) == 0 {
		return msg
	}
	return validate.FormatLoc(is.Loc) + ": " + msg
}

// DescribeValue names the kind of a decoded value (a string, a number…)
// for messages about a value of the wrong kind.
func DescribeValue(v any) string {
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

// DecodeDocument turns the file into the generic tree
// validate.ParseJSON makes (objects as map[string]any, numbers as
// json.Number), which is what policy.ParseDefinition reads. JSON is read
// by validate.ParseJSON itself; anything else as YAML, converted node by
// node so that number text such as 1.50 arrives unchanged rather than
// through float64.
func DecodeDocument(name string, data []byte) (any, Lines, error) {
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
	lines := Lines{}
	tree, err := yamlTree(&doc, "", lines)
	return tree, lines, err
}

// Lines maps a value's place in the document (yamlPath) to the
// line it is written on, so that a field's problem names its line.
type Lines map[string]int

func yamlPath(parent string, step any) string { return fmt.Sprintf("%s/%v", parent, step) }

// find is the line of loc, or of the nearest enclosing value written in
// the file (a missing member's mapping, say); 0 when none is known.
func (l Lines) find(loc validate.Loc) int {
	for n := len(loc); n >= 0; n-- {
		path := ""
		for _, step := range loc[:n] {
			path = yamlPath(path, step)
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

// yamlTree converts a YAML node to the generic JSON tree, noting in
// lines where each value is written.
func yamlTree(n *yaml.Node, path string, lines Lines) (any, error) {
	lines[path] = n.Line
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return yamlTree(n.Content[0], path, lines)
	case yaml.AliasNode:
		return yamlTree(n.Alias, path, lines)
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
			val, err := yamlTree(v, yamlPath(path, k.Value), lines)
			if err != nil {
				return nil, err
			}
			// A member is where its key is written.
			lines[yamlPath(path, k.Value)] = k.Line
			m[k.Value] = val
		}
		return m, nil
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for i, c := range n.Content {
			val, err := yamlTree(c, yamlPath(path, i), lines)
			if err != nil {
				return nil, err
			}
			out = append(out, val)
		}
		return out, nil
	case yaml.ScalarNode:
		return yamlScalar(n)
	}
	return nil, fmt.Errorf("line %d: unsupported YAML node", n.Line)
}

func yamlScalar(n *yaml.Node) (any, error) {
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

// Plural is one when n is 1, else many.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// WriteIndented writes each line of text to b, indented by four spaces.
func WriteIndented(b *strings.Builder, text string) {
	for _, line := range TextLines(text) {
		b.WriteString("    ")
		b.WriteString(line)
		b.WriteByte('\n')
	}
}

// PrefixLines puts prefix before each line of text.
func PrefixLines(prefix, text string) string {
	lines := TextLines(text)
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}

// TextLines splits text into lines without their newlines; a trailing
// newline does not make an empty last line.
func TextLines(text string) []string {
	text = strings.TrimSuffix(text, "\n")
	if text == "" {
		return nil
	}
	return strings.Split(text, "\n")
}

// diffContext is how many unchanged lines surround each hunk, as diff -u.
const diffContext = 3

// maxDiffCells bounds the longest-common-subsequence table. Definitions are
// at most 100 rules, so this is rarely reached; past it the changed middle
// is shown as one replaced block, still correct, only less precise.
const maxDiffCells = 1 << 22

type diffOp struct {
	kind byte // ' ', '-', '+'
	text string
}

// lineDiff returns the edit script from a to b: the common prefix and
// suffix are kept as they are, and the middle is diffed by longest common
// subsequence.
func lineDiff(a, b []string) []diffOp {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var ops []diffOp
	for _, l := range a[:pre] {
		ops = append(ops, diffOp{' ', l})
	}
	ops = middleDiff(ops, a[pre:len(a)-suf], b[pre:len(b)-suf])
	for _, l := range a[len(a)-suf:] {
		ops = append(ops, diffOp{' ', l})
	}
	return ops
}

// lcsTable is the table of longest common subsequences: [i][j] is the
// length of ma[i:] and mb[j:]'s.
func lcsTable(ma, mb []string) [][]int32 {
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

// middleDiff appends the edits from ma to mb, by their longest
// common subsequence; past maxDiffCells, as one replaced block.
func middleDiff(ops []diffOp, ma, mb []string) []diffOp {
	n, m := len(ma), len(mb)
	if n*m > maxDiffCells {
		for _, l := range ma {
			ops = append(ops, diffOp{'-', l})
		}
		for _, l := range mb {
			ops = append(ops, diffOp{'+', l})
		}
		return ops
	}
	lcs := lcsTable(ma, mb)
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && ma[i] == mb[j]:
			ops = append(ops, diffOp{' ', ma[i]})
			i++
			j++
		case j < m && (i == n || lcs[i][j+1] > lcs[i+1][j]):
			ops = append(ops, diffOp{'+', mb[j]})
			j++
		default:
			ops = append(ops, diffOp{'-', ma[i]})
			i++
		}
	}
	return ops
}

// UnifiedDiff renders the change from a to b in diff -u form; empty when
// they are equal.
func UnifiedDiff(aName, bName string, a, b []string) string {
	ops := lineDiff(a, b)
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
		start, end := max(0, i-diffContext), hunkEnd(ops, i)
		writeHunk(&out, ops, start, end)
		i = end
	}
	return out.String()
}

// hunkEnd is where the hunk of changes starting at i ends: runs of
// changes are joined when fewer than 2*context unchanged lines separate
// them, and the hunk keeps context lines after its last change.
func hunkEnd(ops []diffOp, i int) int {
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
		if run == len(ops) || run-end > 2*diffContext {
			return min(end+diffContext, len(ops))
		}
		end = run
	}
	return end
}

// writeHunk writes ops[start:end] with its @@ header, whose line
// numbers count the lines of a and b before it.
func writeHunk(out *strings.Builder, ops []diffOp, start, end int) {
	count := func(ops []diffOp) (inA, inB int) {
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
	fmt.Fprintf(out, "@@ -%s +%s @@\n", hunkRange(aBefore+1, aCount), hunkRange(bBefore+1, bCount))
	for _, op := range ops[start:end] {
		out.WriteByte(op.kind)
		out.WriteString(op.text)
		out.WriteByte('\n')
	}
}

// hunkRange writes a hunk's start,count as diff -u does: an empty range
// names the line before it.
func hunkRange(start, count int) string {
	if count == 0 {
		start--
	}
	if count == 1 {
		return strconv.Itoa(start)
	}
	return strconv.Itoa(start) + "," + strconv.Itoa(count)
}

// StepKind is what apply does to one item (a policy, an alias).
type StepKind string

const (
	StepCreate  StepKind = "create"
	StepUpdate  StepKind = "update"
	StepEnable  StepKind = "enable"
	StepDisable StepKind = "disable"
	StepDelete  StepKind = "delete"
)
