package cli

import (
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// gw inference-keys sets, changes and shows a key's tags (issue 21).
func TestInferenceKeyTagsCLI(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newResEnvOn(t, db)
		e.ok("inference-keys", "create", "--name", "search-api", "--tag", "team=search", "--tag", "env=prod")
		out := e.ok("inference-keys", "list")
		if !strings.Contains(out, "\tenv=prod,team=search\t") {
			t.Fatalf("list shows no tags:\n%s", out)
		}
		k := decodeJSONOut[wire.InferenceKey](t, e.ok("inference-keys", "update", "search-api", "--tag", "team=ads", "--untag", "env", "--tag", "feature=chat", "-o", "json"))
		if len(k.Tags) != 2 || k.Tags["team"] != "ads" || k.Tags["feature"] != "chat" {
			t.Fatalf("update: %+v", k.Tags)
		}
		if out := e.ok("inference-keys", "get", "search-api"); !strings.Contains(out, "feature=chat,team=ads") {
			t.Fatalf("get:\n%s", out)
		}
		k = decodeJSONOut[wire.InferenceKey](t, e.ok("inference-keys", "update", "search-api", "--no-tags", "-o", "json"))
		if len(k.Tags) != 0 {
			t.Fatalf("--no-tags: %+v", k.Tags)
		}
		// The server's rules are the CLI's: a bad key is its 422, named.
		r := e.code(ExitError, "", "inference-keys", "update", "search-api", "--tag", "Team=x")
		if !strings.Contains(r.errOut, "tags.Team") {
			t.Fatalf("a bad tag: %s", r.errOut)
		}
		e.code(ExitUsage, "", "inference-keys", "create", "--name", "x", "--tag", "novalue")
	})
}
