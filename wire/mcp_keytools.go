package wire

import "github.com/google/uuid"

// KeyMCPTools is what an inference key would see of the MCP servers its
// workspace reaches (gw mcp tools --key-name): each enabled server's
// tools as the control plane listed them from the upstream, each marked
// listed or not for the key, with what decided it.
type KeyMCPTools struct {
	KeyID uuid.UUID `json:"key_id"`
	// MCPDefault is the workspace's mcp_default: deny or allow.
	MCPDefault string         `json:"mcp_default" jsonschema:"enum=deny,enum=allow"`
	Servers    []KeyMCPServer `json:"servers"`
}

// KeyMCPServer is one server the key's workspace reaches: a workspace's
// own, or the organization's (scope), and its tools; error says why its
// tools could not be listed (the upstream down, its auth refused).
type KeyMCPServer struct {
	Server string       `json:"server"`
	Scope  string       `json:"scope" jsonschema:"enum=org,enum=workspace"`
	Error  string       `json:"error,omitempty"`
	Tools  []KeyMCPTool `json:"tools"`
}

// KeyMCPTool is one tool of a server and whether tools/list shows it to
// the key. Rule names what decided: "server filter" (the server's own
// tools filter hid it), a tool policy's rule ("policy-name#2"), or
// "mcp_default" (no rule matched). Message is a deny's message.
type KeyMCPTool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Listed      bool   `json:"listed"`
	Rule        string `json:"rule"`
	Message     string `json:"message,omitempty"`
}
