package api

import (
	"fmt"
	"strings"
)

// EndpointTableMarkdown renders the route table for docs/api.md: every
// endpoint with its tag, credential and permission.
func (s *Server) EndpointTableMarkdown() string {
	var b strings.Builder
	b.WriteString("| method | path | group | needs |\n|---|---|---|---|\n")
	for _, rt := range s.routes {
		needs := "a credential covering the scope"
		switch rt.Access {
		case Public:
			needs = "nothing"
		case Authenticated:
			needs = "any valid credential"
		case BrowserSession:
			needs = "the account holder's browser session (a management key gets 403)"
		}
		if p := permissionNote(rt); p != "" {
			needs = strings.TrimSuffix(strings.TrimPrefix(p, "Permission: "), ".")
		}
		if rt.Paginated {
			needs += " (paginated)"
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s |\n", rt.Method, rt.DocPath(), rt.Tag, needs)
	}
	return b.String()
}
