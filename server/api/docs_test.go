package api_test

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/server/store/storetest"
)

var update = flag.Bool("update", false, "rewrite docs/api.md's endpoint table from the route table")

// docs/api.md's endpoint table is generated from the route table; this test
// fails when they drift (go test ./server/api -run DocsAPI -update).
func TestDocsAPIMatchesRoutes(t *testing.T) {
	const path = "../../docs/api.md"
	const begin, end = "<!-- endpoints:begin -->\n", "<!-- endpoints:end -->"
	e := newEnv(t, storetest.Open(t, storetest.SQLite), api.Options{})
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the endpoint markers", path)
	}
	want := doc[:i+len(begin)] + e.api.EndpointTableMarkdown() + doc[j:]
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if doc != want {
		t.Fatalf("%s is out of date; run: go test ./server/api -run DocsAPI -update", path)
	}
}
