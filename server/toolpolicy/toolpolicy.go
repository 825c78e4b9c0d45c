// Package toolpolicy is the pure core of gw's MCP gateway (issue 30): the
// rules of an MCP server's settings (its name, its server-wide tool
// filter, its prices, its auth kinds) and the tool policies, with Decide,
// the one function that says whether a key may see (list) or call a tool.
// The management API validates with it, the data plane and `gw policies
// explain` decide with it, so they cannot disagree.
//
// The package does no I/O and reads no clock.
package toolpolicy

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/validate"
)

// Limits of a server's settings and of a tool policy (docs/mcp.md).
const (
	MaxGlobs        = 200
	MaxGlobLength   = 255
	MaxPrices       = 200
	MaxRules        = 100
	MaxRuleServers  = 100
	MaxArguments    = 20
	MaxPointerLen   = 255
	MaxArgValueLen  = 1024
	MaxDenyMessage  = 200
	MaxScopes       = 20
	MaxHeaderSecret = 8192
)

// NamePattern is an MCP server's name: it prefixes the tools of the
// aggregated endpoint (<server>__<tool>), so it has no "__"-like freedom.
var NamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// The auth kinds of an MCP server.
const (
	AuthNone              = "none"
	AuthHeader            = "header"
	AuthOAuthClientCreds  = "oauth_client_credentials"
	PhaseList             = "list"
	PhaseCall             = "call"
	ActionAllow           = "allow"
	ActionDeny            = "deny"
	DefaultDeny           = "deny"
	DefaultAllow          = "allow"
	OpEquals, OpPrefix    = "equals", "prefix"
	OpRegex               = "regex"
	defaultDenyToolReason = "no tool policy allows this tool for this key (the workspace's mcp_default is \"deny\")"
)

// AuthKinds, Phases, ActionKinds and Defaults are the closed lists.
var (
	AuthKinds   = []string{AuthNone, AuthHeader, AuthOAuthClientCreds}
	Phases      = []string{PhaseList, PhaseCall}
	ActionKinds = []string{ActionAllow, ActionDeny}
	Defaults    = []string{DefaultDeny, DefaultAllow}
	ArgOps      = []string{OpEquals, OpPrefix, OpRegex}
)

// CheckServerURL says what is wrong with an MCP server's or a token
// endpoint's URL ("" when nothing is): it must be absolute http(s),
// without credentials (they belong in the sealed secret) or fragment. The
// egress policy is the API's check, after this one.
func CheckServerURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Fragment != "" {
		return "Input should be an absolute http(s) URL without credentials or fragment"
	}
	return ""
}

// Filter is a server-wide list-time filter: a tool is served when it
// matches an allow glob (no allow list: every tool) and no deny glob.
type Filter struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// Admits reports whether the filter lets tool through.
func (f Filter) Admits(tool string) bool {
	if len(f.Allow) > 0 && !anyGlob(f.Allow, tool) {
		return false
	}
	return !anyGlob(f.Deny, tool)
}

// Glob reports whether tool matches the glob (path.Match syntax: *, ?,
// [classes]; a tool name has no '/' in practice, and '*' stops at one).
func Glob(glob, tool string) bool {
	ok, err := path.Match(glob, tool)
	return err == nil && ok
}

func anyGlob(globs []string, tool string) bool {
	for _, g := range globs {
		if Glob(g, tool) {
			return true
		}
	}
	return false
}

// CheckGlob reports the problem of a glob that does not compile.
func CheckGlob(g string) error {
	if _, err := path.Match(g, ""); err != nil {
		return fmt.Errorf("tool glob %q does not compile: %v", g, err)
	}
	return nil
}

// ParseFilter reads a server's tools member.
func ParseFilter(v any, loc validate.Loc, errs *validate.Errors) Filter {
	var f Filter
	o := validate.ReadObject(v, loc, errs)
	if o == nil {
		return f
	}
	if v, ok := o.Raw("allow"); ok {
		f.Allow = globs(v, loc.With("allow"), errs)
	}
	if v, ok := o.Raw("deny"); ok {
		f.Deny = globs(v, loc.With("deny"), errs)
	}
	o.Close()
	return f
}

var globRule = validate.StringRule{Min: 1, Max: MaxGlobLength, NoControl: true}

func globs(v any, loc validate.Loc, errs *validate.Errors) []string {
	out := []string{}
	validate.List(v, loc, validate.ListRule{Max: MaxGlobs}, errs, func(v any, loc validate.Loc) {
		if g, ok := readGlob(v, loc, errs); ok {
			out = append(out, g)
		}
	})
	return out
}

func readGlob(v any, loc validate.Loc, errs *validate.Errors) (string, bool) {
	g, ok := validate.String(v, loc, globRule, errs)
	if !ok {
		return "", false
	}
	if err := CheckGlob(g); err != nil {
		errs.Add(loc, "value_error", "Value error, "+err.Error(), g, nil)
		return "", false
	}
	return g, true
}

// Prices are a server's tool prices: a tool name or glob → USD per call.
type Prices map[string]string

// ParsePrices reads a server's prices member: each key a glob that
// compiles, each value a decimal USD amount (validate.ToolCallUSD).
func ParsePrices(v any, loc validate.Loc, errs *validate.Errors) Prices {
	m, ok := v.(map[string]any)
	if !ok {
		errs.Add(loc, "dict_type", "Input should be a valid dictionary", v, nil)
		return nil
	}
	if len(m) > MaxPrices {
		errs.Add(loc, "too_long", fmt.Sprintf("Dictionary should have at most %d items after validation, not %d", MaxPrices, len(m)), nil,
			map[string]any{"field_type": "Dictionary", "max_length": MaxPrices, "actual_length": len(m)})
		return nil
	}
	out := Prices{}
	for _, k := range sortedKeys(m) {
		kl := loc.With(k)
		if _, ok := readGlob(k, kl, errs); !ok {
			continue
		}
		s, ok := m[k].(string)
		if !ok {
			errs.Add(kl, "string_type", "Input should be a valid string: a decimal USD amount per call, like \"0.002\"", m[k], nil)
			continue
		}
		if validate.ToolCallUSD.Check(s, kl, errs) {
			out[k] = s
		}
	}
	return out
}

// NanoUSD is the price of one call of tool, in nano-dollars: an exact key
// wins; else the longest matching glob (ties: the first in byte order);
// none is 0.
func (p Prices) NanoUSD(tool string) int64 {
	if s, ok := p[tool]; ok {
		return nano(s)
	}
	best := ""
	found := false
	for _, g := range sortedKeys(p) {
		if Glob(g, tool) && (!found || len(g) > len(best)) {
			best, found = g, true
		}
	}
	if !found {
		return 0
	}
	return nano(p[best])
}

// nano reads an amount validate.ToolCallUSD admitted (digits, at most 9
// decimals, at most 1000): exact, no float.
func nano(s string) int64 {
	whole, frac, _ := strings.Cut(s, ".")
	w, err := strconv.ParseInt(strings.TrimLeft(whole, "0")+"0", 10, 64)
	if err != nil {
		return 0
	}
	w /= 10
	frac = (frac + "000000000")[:9]
	f, _ := strconv.ParseInt(frac, 10, 64)
	return w*1_000_000_000 + f
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Definition is a tool policy's definition: whom it targets (exactly a
// policy's target) and its rules.
type Definition struct {
	Target policy.Target `json:"target"`
	Rules  []Rule        `json:"rules"`
}

// Rule applies its action to the tools its match selects, in its phase.
type Rule struct {
	Match  Match  `json:"match"`
	Phase  string `json:"phase"`
	Action Action `json:"action"`
}

// Match selects tools: every member given must hold (an absent or empty
// one places no condition).
type Match struct {
	Servers   []string           `json:"servers,omitempty"`
	Tools     []string           `json:"tools,omitempty"`
	Arguments map[string]ArgTest `json:"arguments,omitempty"`
}

// ArgTest tests the argument a JSON pointer names: equal to a JSON value,
// a string with a prefix, or a string a regular expression matches.
type ArgTest struct {
	Equals any     `json:"equals,omitempty"`
	Prefix *string `json:"prefix,omitempty"`
	Regex  *string `json:"regex,omitempty"`
	re     *regexp.Regexp
}

// Action is allow, or deny with the message the caller is given.
type Action struct {
	Kind    string `json:"kind"`
	Message string `json:"message,omitempty"`
}

var (
	messageRule = validate.StringRule{Min: 1, Max: MaxDenyMessage}
	serverRule  = validate.StringRule{Min: 1, Max: 63, Pattern: NamePattern}
	pointerRule = validate.StringRule{Max: MaxPointerLen, NoControl: true}
	argRule     = validate.StringRule{Max: MaxArgValueLen}
)

// UnmarshalJSON reads a definition as strictly as the API does, so a
// bundle cannot carry one the API would have refused.
func (d *Definition) UnmarshalJSON(data []byte) error {
	parsed, err := ParseDefinitionJSON(data)
	if err != nil {
		return err
	}
	*d = parsed
	return nil
}

// ParseDefinitionJSON reads a definition from its JSON text.
func ParseDefinitionJSON(data []byte) (Definition, error) {
	root := validate.Loc{"body", "definition"}
	v, err := validate.ParseJSON(data, root)
	if err != nil {
		return Definition{}, err
	}
	var errs validate.Errors
	d := ParseDefinition(v, root, &errs)
	return d, errs.Err()
}

var _ json.Unmarshaler = (*Definition)(nil)

// ParseDefinition reads a definition from a generic JSON tree, strictly
// (unknown members are extra_forbidden), reporting every problem to errs.
func ParseDefinition(v any, loc validate.Loc, errs *validate.Errors) Definition {
	var d Definition
	o := validate.ReadObject(v, loc, errs)
	if o == nil {
		return d
	}
	if v, ok := o.Require("target"); ok {
		d.Target = policy.ParseTarget(v, loc.With("target"), errs)
	}
	if v, ok := o.Require("rules"); ok {
		d.Rules = []Rule{}
		validate.List(v, loc.With("rules"), validate.ListRule{Min: 1, Max: MaxRules}, errs, func(v any, loc validate.Loc) {
			d.Rules = append(d.Rules, parseRule(v, loc, errs))
		})
	}
	o.Close()
	return d
}

func parseRule(v any, loc validate.Loc, errs *validate.Errors) Rule {
	var r Rule
	o := validate.ReadObject(v, loc, errs)
	if o == nil {
		return r
	}
	if v, ok := o.Require("match"); ok {
		r.Match = parseMatch(v, loc.With("match"), errs)
	}
	if v, ok := o.Require("phase"); ok {
		r.Phase, _ = validate.Literal(v, loc.With("phase"), Phases, errs)
	}
	if v, ok := o.Require("action"); ok {
		r.Action = parseAction(v, loc.With("action"), errs)
	}
	if r.Phase == PhaseList && len(r.Match.Arguments) > 0 {
		errs.Add(loc.With("match", "arguments"), "value_error",
			"Value error, a list rule cannot test arguments: tools/list has none (use phase \"call\")", nil, nil)
	}
	o.Close()
	return r
}

func parseMatch(v any, loc validate.Loc, errs *validate.Errors) Match {
	var m Match
	o := validate.ReadObject(v, loc, errs)
	if o == nil {
		return m
	}
	if v, ok := o.Raw("servers"); ok {
		m.Servers = []string{}
		validate.List(v, loc.With("servers"), validate.ListRule{Max: MaxRuleServers}, errs, func(v any, loc validate.Loc) {
			if s, ok := validate.String(v, loc, serverRule, errs); ok {
				m.Servers = append(m.Servers, s)
			}
		})
	}
	if v, ok := o.Raw("tools"); ok {
		m.Tools = globs(v, loc.With("tools"), errs)
	}
	if v, ok := o.Raw("arguments"); ok {
		m.Arguments = parseArguments(v, loc.With("arguments"), errs)
	}
	o.Close()
	return m
}

func parseArguments(v any, loc validate.Loc, errs *validate.Errors) map[string]ArgTest {
	mm, ok := v.(map[string]any)
	if !ok {
		errs.Add(loc, "dict_type", "Input should be a valid dictionary", v, nil)
		return nil
	}
	if len(mm) > MaxArguments {
		errs.Add(loc, "too_long", fmt.Sprintf("Dictionary should have at most %d items after validation, not %d", MaxArguments, len(mm)), nil,
			map[string]any{"field_type": "Dictionary", "max_length": MaxArguments, "actual_length": len(mm)})
		return nil
	}
	out := map[string]ArgTest{}
	for _, ptr := range sortedKeys(mm) {
		kl := loc.With(ptr)
		if _, ok := validate.String(ptr, kl, pointerRule, errs); !ok {
			continue
		}
		if _, err := splitPointer(ptr); err != nil {
			errs.Add(kl, "value_error", "Value error, "+err.Error(), ptr, nil)
			continue
		}
		if t, ok := parseArgTest(mm[ptr], kl, errs); ok {
			out[ptr] = t
		}
	}
	return out
}

func parseArgTest(v any, loc validate.Loc, errs *validate.Errors) (ArgTest, bool) {
	var t ArgTest
	o := validate.ReadObject(v, loc, errs)
	if o == nil {
		return t, false
	}
	before := errs.Len()
	given := 0
	if v, ok := o.Raw(OpEquals); ok {
		given++
		t.Equals = v
		if v == nil {
			t.Equals = jsonNull{}
		}
	}
	if v, ok := o.Raw(OpPrefix); ok {
		given++
		if s, ok := validate.String(v, loc.With(OpPrefix), argRule, errs); ok {
			t.Prefix = &s
		}
	}
	if v, ok := o.Raw(OpRegex); ok {
		given++
		if s, ok := validate.String(v, loc.With(OpRegex), argRule, errs); ok {
			re, err := regexp.Compile(s)
			if err != nil {
				errs.Add(loc.With(OpRegex), "value_error", "Value error, the regular expression does not compile: "+err.Error(), s, nil)
			} else {
				t.Regex, t.re = &s, re
			}
		}
	}
	o.Close()
	if given != 1 {
		errs.Add(loc, "value_error", "Value error, give exactly one of equals, prefix or regex", nil, nil)
	}
	return t, errs.Len() == before
}

// jsonNull stands for an equals: null test (nil is "absent").
type jsonNull struct{}

// MarshalJSON writes null.
func (jsonNull) MarshalJSON() ([]byte, error) { return []byte("null"), nil }

func parseAction(v any, loc validate.Loc, errs *validate.Errors) Action {
	var a Action
	o := validate.ReadObject(v, loc, errs)
	if o == nil {
		return a
	}
	kind, ok := validate.Discriminator(o, "kind", ActionKinds)
	if !ok {
		return a
	}
	a.Kind = kind
	if kind == ActionDeny {
		if v, ok := o.Raw("message"); ok {
			a.Message, _ = validate.String(v, loc.With("message"), messageRule, errs)
		}
	}
	o.Close()
	return a
}

// splitPointer reads an RFC 6901 JSON pointer into its reference tokens.
func splitPointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("%q is not a JSON pointer: it must be empty or start with '/'", p)
	}
	parts := strings.Split(p[1:], "/")
	for i, t := range parts {
		for j := 0; j < len(t); j++ {
			if t[j] == '~' && (j+1 == len(t) || (t[j+1] != '0' && t[j+1] != '1')) {
				return nil, fmt.Errorf("%q is not a JSON pointer: '~' must be followed by 0 or 1", p)
			}
		}
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return parts, nil
}

// Resolve finds the value a JSON pointer names in a decoded JSON tree.
func Resolve(doc any, p string) (any, bool) {
	parts, err := splitPointer(p)
	if err != nil {
		return nil, false
	}
	cur := doc
	for _, t := range parts {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[t]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(c) || (len(t) > 1 && t[0] == '0') {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// holds reports whether the argument test holds of the arguments.
func (t ArgTest) holds(args any, ptr string) bool {
	v, ok := Resolve(args, ptr)
	if !ok {
		return false
	}
	switch {
	case t.Equals != nil:
		return jsonEqual(t.Equals, v)
	case t.Prefix != nil:
		s, ok := v.(string)
		return ok && strings.HasPrefix(s, *t.Prefix)
	case t.Regex != nil:
		s, ok := v.(string)
		re := t.re
		if re == nil {
			var err error
			if re, err = regexp.Compile(*t.Regex); err != nil {
				return false
			}
		}
		return ok && re.MatchString(s)
	}
	return false
}

// jsonEqual compares two decoded JSON values (numbers as the decoder
// gave them: float64 or json.Number, compared by their text).
func jsonEqual(a, b any) bool {
	if _, ok := a.(jsonNull); ok {
		return b == nil
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !jsonEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case string, bool:
		return a == b
	case nil:
		return b == nil
	}
	na, okA := number(a)
	nb, okB := number(b)
	return okA && okB && na == nb
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case interface{ Float64() (float64, error) }:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// Policy is an enabled tool policy as the data plane holds it.
type Policy struct {
	ID         string
	Name       string
	Definition Definition
}

// Request is one question: may this key see (list) or call this tool?
// Arguments are the call's decoded arguments (nil at list time).
type Request struct {
	KeyID       string
	OwnerUserID uuid.UUID
	Phase       string
	Server      string
	Tool        string
	Arguments   any
}

// Decision is the answer, with the rule that made it.
type Decision struct {
	Allowed bool
	// Message is the refusal shown to the caller (a deny rule's message,
	// or why nothing allowed the tool).
	Message string
	// Rule names the deciding rule ("policy-name#2"); empty for the
	// workspace default.
	Rule string
}

// Decide applies the policies that target the key to one tool, in one
// phase: any matching deny denies; else a matching allow allows; else
// the workspace default (defaultAllow: mcp_default "allow"). Rules of the
// other phase take no part.
func Decide(policies []Policy, req Request, defaultAllow bool) Decision {
	var allow *Decision
	for _, p := range policies {
		if !p.Definition.Target.CoversKey(req.KeyID, req.OwnerUserID) {
			continue
		}
		for i, r := range p.Definition.Rules {
			if r.Phase != req.Phase || !r.Match.matches(req) {
				continue
			}
			ref := fmt.Sprintf("%s#%d", p.Name, i+1)
			if r.Action.Kind == ActionDeny {
				msg := r.Action.Message
				if msg == "" {
					msg = fmt.Sprintf("tool %s of server %s is denied by tool policy %q", req.Tool, req.Server, p.Name)
				}
				return Decision{Allowed: false, Message: msg, Rule: ref}
			}
			if r.Action.Kind == ActionAllow && allow == nil {
				allow = &Decision{Allowed: true, Rule: ref}
			}
		}
	}
	if allow != nil {
		return *allow
	}
	if defaultAllow {
		return Decision{Allowed: true}
	}
	return Decision{Allowed: false, Message: defaultDenyToolReason}
}

func (m Match) matches(req Request) bool {
	if len(m.Servers) > 0 && !contains(m.Servers, req.Server) {
		return false
	}
	if len(m.Tools) > 0 && !anyGlob(m.Tools, req.Tool) {
		return false
	}
	for ptr, t := range m.Arguments {
		if !t.holds(req.Arguments, ptr) {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
