package inferencekeys

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gw-gateway/gw/cli/cmdutil"
)

// parseTagFlags reads repeated KEY=VALUE flags into a tag set; the
// server checks the rules (a bad tag is its 422, naming the tag).
func parseTagFlags(pairs []string) (map[string]string, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(pairs))
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, cmdutil.UsageError{Err: fmt.Errorf("--tag %q: want KEY=VALUE, e.g. team=search", p)}
		}
		if _, dup := out[k]; dup {
			return nil, cmdutil.UsageError{Err: fmt.Errorf("--tag %s is given twice", k)}
		}
		out[k] = v
	}
	return out, nil
}

// tagsCell shows a tag set in a table: key=value pairs sorted by key.
func tagsCell(t map[string]string) string {
	if len(t) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(t))
	for _, k := range slices.Sorted(maps.Keys(t)) {
		parts = append(parts, k+"="+t[k])
	}
	return strings.Join(parts, ",")
}
