// Package tags holds the rules of cost-centre tags (issue 21), the one
// place the management API, the data plane and usage ingest check them:
// keys of inference keys carry tags, a request adds its own with the
// X-Gw-Tags header, and every usage event records the merged set.
package tags

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Bounds of a tag set.
const (
	// MaxPairs bounds a key's tags, a header's, and the merged set a
	// request records.
	MaxPairs    = 20
	MaxKeyLen   = 64
	MaxValueLen = 128
)

// Header is the request header that adds tags to one request.
const Header = "X-Gw-Tags"

// KeyPattern is what a tag key matches.
var KeyPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)

// CheckKey says what is wrong with a tag key, "" when nothing.
func CheckKey(k string) string {
	switch {
	case k == "":
		return "a tag key has at least 1 character"
	case len(k) > MaxKeyLen:
		return fmt.Sprintf("a tag key has at most %d characters", MaxKeyLen)
	case !KeyPattern.MatchString(k):
		// Said in words: people read this, not a regular expression.
		return "a tag key is lowercase letters, digits, _ . and -, starting with a letter or digit"
	}
	return ""
}

// CheckValue says what is wrong with a tag value, "" when nothing.
// Printable means no control character and valid UTF-8; spaces inside a
// value are kept, though the header trims them at its ends.
func CheckValue(v string) string {
	n := utf8.RuneCountInString(v)
	switch {
	case n == 0:
		return "a tag value has at least 1 character"
	case n > MaxValueLen:
		return fmt.Sprintf("a tag value has at most %d characters", MaxValueLen)
	case !utf8.ValidString(v):
		return "a tag value is valid UTF-8"
	case strings.IndexFunc(v, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) >= 0:
		return "a tag value has only printable characters"
	}
	return ""
}

// Problem is one thing wrong with a tag set: the tag's key ("" for the
// set as a whole) and what.
type Problem struct {
	Key, Msg string
}

// Check lists what is wrong with a set, sorted by key.
func Check(t map[string]string) []Problem {
	var out []Problem
	if len(t) > MaxPairs {
		out = append(out, Problem{Msg: fmt.Sprintf("at most %d tags", MaxPairs)})
	}
	for _, k := range slices.Sorted(maps.Keys(t)) {
		if m := CheckKey(k); m != "" {
			out = append(out, Problem{Key: k, Msg: m})
		} else if m := CheckValue(t[k]); m != "" {
			out = append(out, Problem{Key: k, Msg: m})
		}
	}
	return out
}

// ParseHeader reads X-Gw-Tags: comma-separated key=value pairs, blanks
// around each trimmed. A key twice, an empty pair, a pair without "=" or
// one breaking the rules is an error naming the header.
func ParseHeader(h string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(h) == "" {
		return nil, fmt.Errorf("%s is empty; send key=value pairs separated by commas, or leave the header out", Header)
	}
	for _, pair := range strings.Split(h, ",") {
		k, v, ok := strings.Cut(pair, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok {
			return nil, fmt.Errorf("%s: %q is not key=value", Header, strings.TrimSpace(pair))
		}
		if m := CheckKey(k); m != "" {
			return nil, fmt.Errorf("%s: %s (got %q)", Header, m, k)
		}
		if m := CheckValue(v); m != "" {
			return nil, fmt.Errorf("%s: tag %s: %s", Header, k, m)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%s: tag %s is given twice", Header, k)
		}
		out[k] = v
	}
	if len(out) > MaxPairs {
		return nil, fmt.Errorf("%s: at most %d tags, got %d", Header, MaxPairs, len(out))
	}
	return out, nil
}

// LiteLLMHeader is LiteLLM's request header for tags (comma-separated),
// read like a request's metadata.tags (issue 35).
const LiteLLMHeader = "X-Litellm-Tags"

// ParseList reads LiteLLM's tags (its x-litellm-tags header split at
// commas, or a request body's metadata.tags) as gw's pairs: "key=value",
// "key:value" (LiteLLM's own examples write "jobID:…"), split at the
// first separator, "=" before ":"; a bare tag "prod" is prod=true, so a
// switcher's tags are reportable (by=tag:prod) without a rename. Each
// key and value by the rules of X-Gw-Tags; a key twice with two values
// is an error, the same pair twice is one. source names where the list
// came from in the errors.
func ParseList(list []string, source string) (map[string]string, error) {
	out := make(map[string]string, len(list))
	for _, raw := range list {
		tag := strings.TrimSpace(raw)
		if tag == "" {
			return nil, fmt.Errorf("%s: an empty tag; send key=value, key:value or a bare word", source)
		}
		k, v, ok := strings.Cut(tag, "=")
		if !ok {
			k, v, ok = strings.Cut(tag, ":")
		}
		if !ok {
			v = "true"
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if m := CheckKey(k); m != "" {
			return nil, fmt.Errorf("%s: %s (got %q)", source, m, k)
		}
		if m := CheckValue(v); m != "" {
			return nil, fmt.Errorf("%s: tag %s: %s", source, k, m)
		}
		if prev, dup := out[k]; dup && prev != v {
			return nil, fmt.Errorf("%s: tag %s is given twice, as %s and %s", source, k, prev, v)
		}
		out[k] = v
	}
	if len(out) > MaxPairs {
		return nil, fmt.Errorf("%s: at most %d tags, got %d", source, MaxPairs, len(out))
	}
	return out, nil
}

// Merge is a request's tags: the header's, then the key's over them, so a
// caller cannot move its spend to another team by naming it. Nil when
// both are empty.
func Merge(key, header map[string]string) map[string]string {
	if len(key) == 0 && len(header) == 0 {
		return nil
	}
	out := make(map[string]string, len(key)+len(header))
	maps.Copy(out, header)
	maps.Copy(out, key)
	return out
}

// Missing are the required keys t lacks, in the order required.
func Missing(t map[string]string, required []string) []string {
	var out []string
	for _, k := range required {
		if _, ok := t[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// Canonical is t as one JSON object with sorted keys (encoding/json
// sorts map keys), the bytes a tag set is named by.
func Canonical(t map[string]string) string {
	b, _ := json.Marshal(t)
	return string(b)
}

// SetID names an organization's tag set: equal sets of one organization
// always get the same id, so usage events, rollups and the registry of
// sets agree without a lookup on the request path. Nil for no tags.
func SetID(org uuid.UUID, t map[string]string) uuid.UUID {
	if len(t) == 0 {
		return uuid.Nil
	}
	h := sha256.New()
	h.Write(org[:])
	h.Write([]byte(Canonical(t)))
	var id uuid.UUID
	copy(id[:], h.Sum(nil))
	id[6] = (id[6] & 0x0f) | 0x80 // version 8: custom
	id[8] = (id[8] & 0x3f) | 0x80 // RFC 4122 variant
	return id
}

// MaxAllowedValues bounds the values a workspace's tag_values allows for
// one tag key.
const MaxAllowedValues = 100

// Rules are what a workspace holds a request's X-Gw-Tags header to
// beyond the format (issue 28), so a caller cannot charge a cost centre
// its key does not belong to:
//   - Governed are the tag keys a tag budget of the workspace follows: a
//     header may name one only with the value its key carries, since the
//     budget counts the key's tag and the reports the request's.
//   - Values are the values a header may give a tag key (tag_values); a
//     key not listed takes any value.
type Rules struct {
	Governed map[string]bool
	Values   map[string][]string
}

// Refusal is a header tag the rules refuse: the tag and why.
type Refusal struct {
	Key, Value, Msg string
}

// Allowed checks a header's tags against the rules, given the key's own
// tags, and returns the first tag refused (in key order), nil when none.
// A header tag equal to the key's own is always allowed: it changes
// nothing.
func (r Rules) Allowed(header, key map[string]string) *Refusal {
	for _, k := range slices.Sorted(maps.Keys(header)) {
		v := header[k]
		own, has := key[k]
		if has && own == v {
			continue
		}
		if r.Governed[k] {
			msg := fmt.Sprintf("tag %s is governed by a tag budget: only an inference key's own tags set it", k)
			if has {
				msg += fmt.Sprintf(" (this key's is %s=%s)", k, own)
			} else {
				msg += " (this key has none)"
			}
			return &Refusal{Key: k, Value: v, Msg: msg}
		}
		if allowed, ok := r.Values[k]; ok && !slices.Contains(allowed, v) {
			return &Refusal{Key: k, Value: v, Msg: fmt.Sprintf("%s=%s is not allowed: the workspace's tag_values allow %s only %s",
				k, v, k, strings.Join(allowed, ", "))}
		}
	}
	return nil
}

// CheckValues lists what is wrong with a workspace's tag_values: at most
// MaxPairs tag keys, each with 1 to MaxAllowedValues distinct values, each
// key and value by the rules of tags. Problems of a value name the key.
func CheckValues(values map[string][]string) []Problem {
	var out []Problem
	if len(values) > MaxPairs {
		out = append(out, Problem{Msg: fmt.Sprintf("at most %d tag keys", MaxPairs)})
	}
	for _, k := range slices.Sorted(maps.Keys(values)) {
		vs := values[k]
		switch m := CheckKey(k); {
		case m != "":
			out = append(out, Problem{Key: k, Msg: m})
			continue
		case len(vs) == 0:
			out = append(out, Problem{Key: k, Msg: "list at least 1 value (leave the key out to allow any)"})
			continue
		case len(vs) > MaxAllowedValues:
			out = append(out, Problem{Key: k, Msg: fmt.Sprintf("at most %d values", MaxAllowedValues)})
			continue
		}
		seen := make(map[string]bool, len(vs))
		for _, v := range vs {
			if m := CheckValue(v); m != "" {
				out = append(out, Problem{Key: k, Msg: m})
				break
			}
			if seen[v] {
				out = append(out, Problem{Key: k, Msg: fmt.Sprintf("%q is listed twice", v)})
				break
			}
			seen[v] = true
		}
	}
	return out
}
