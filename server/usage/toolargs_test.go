package usage

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/wire"
)

// An event's tool arguments (mcp_audit_arguments) are checked at ingest:
// only a tool call's event carries them, as a JSON object within
// wire.MaxToolArgumentsBytes, their size stated; Row hands them on.
func TestCheckToolArguments(t *testing.T) {
	mcpEP, chat := "mcp", "chat.completions"
	big := `{"x":"` + strings.Repeat("y", wire.MaxToolArgumentsBytes) + `"}`
	for _, c := range []struct {
		name     string
		endpoint *string
		args     string
		n        int64
		field    string
	}{
		{"none", &mcpEP, "", 0, ""},
		{"only the size", &mcpEP, "", 100000, ""},
		{"an object", &mcpEP, `{"q":1}`, 7, ""},
		{"not a tool call", &chat, `{"q":1}`, 7, "tool_arguments"},
		{"no endpoint", nil, `{"q":1}`, 7, "tool_arguments"},
		{"not an object", &mcpEP, `[1]`, 3, "tool_arguments"},
		{"not JSON", &mcpEP, `{q`, 2, "tool_arguments"},
		{"too large", &mcpEP, big, int64(len(big)), "tool_arguments"},
		{"negative size", &mcpEP, "", -1, "tool_arguments_bytes"},
	} {
		var ps problems
		e := wire.UsageEventIn{Endpoint: c.endpoint, ToolArguments: json.RawMessage(c.args), ToolArgumentsBytes: c.n}
		if c.args == "" {
			e.ToolArguments = nil
		}
		checkToolArguments(&e, &ps)
		switch {
		case c.field == "" && len(ps.out) != 0:
			t.Errorf("%s: refused %+v", c.name, ps.out)
		case c.field != "" && (len(ps.out) != 1 || ps.out[0].Field != c.field):
			t.Errorf("%s: want one problem in %s, got %+v", c.name, c.field, ps.out)
		}
	}
}
