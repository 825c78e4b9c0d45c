package cli

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/wire"
)

var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// wideWorld is budgetsEnv with what makes tables wide: a long model name
// with counts in the hundreds of millions, long key names with tags, a
// tag budget with a long name, and two data planes, one pending.
func wideWorld(t *testing.T) *budgetsEnv {
	t.Helper()
	e := newBudgetsEnv(t)
	ctx := context.Background()
	e.ok("inference-keys", "create", "--name", "nightly-batch-summaries-for-search", "--tag", "team=search-and-retrieval",
		"--tag", "env=production", "--tag", "feature=weekly-digest")
	e.ok("budgets", "create-for-tag", "team=search-and-retrieval", "--amount", "1234.56", "--period", "month")
	at := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	ev := map[string]any{"id": uuid.NewString(), "org_id": e.boot.Organization.ID, "workspace_id": e.boot.Workspace.ID, "owner_id": e.boot.User.ID,
		"inference_key_id": e.key.ID, "model": "anthropic/claude-sonnet-4-5-20250929", "provider": "anthropic", "input_tokens": 123456789,
		"output_tokens": 12345678, "cache_read_tokens": 98765432, "cache_write_tokens": 1234567, "cost_usd": "12345.678901234",
		"status": "ok", "latency_ms": 5, "occurred_at": at}
	body, _ := json.Marshal(map[string]any{"events": []any{ev}})
	e.postAsOwner(t, "/api/v1/data-plane/usage-events", body)

	c, err := client.New(client.Options{Server: e.url, Token: e.boot.ManagementKey.Token})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"dp-eu-west-1-prod-7f3a", "dp-us-east-2"} {
		dp, err := secrets.GenerateDataPlaneKey()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.RequestEnrollment(ctx, wire.DataPlaneEnrollmentRequest{ID: id, PublicKey: dp.Public().String()}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Heartbeat(ctx, wire.Heartbeat{ID: id, Version: "v0.9.1-14-g3f2a9c1d", BundleVersions: map[string]int64{}}); err != nil {
			t.Fatal(err)
		}
	}
	e.ok("data-planes", "enroll", "dp-us-east-2", "--org", "default")
	return e
}

// TestTablesFitTheTerminal: the tables people read most fit 80 and 120
// columns, name things instead of showing UUIDs, and give the rest to -o
// wide and to pipes (issue 26, row 9).
func TestTablesFitTheTerminal(t *testing.T) {
	e := wideWorld(t)
	commands := [][]string{
		{"usage", "report", "--by", "model"},
		{"usage", "report", "--by", "inference_key"},
		{"usage", "report", "--period", "7d"},
		{"budgets"},
		{"data-planes", "list"},
		{"inference-keys", "list"},
	}
	for _, width := range []int{80, 120} {
		for _, args := range commands {
			r := e.gwIO(&cmdutil.IOStreams{In: strings.NewReader(""), ForceTerminal: true, Width: width}, args...)
			if r.code != ExitOK {
				t.Fatalf("gw %v: exit %d: %s", args, r.code, r.errOut)
			}
			for _, line := range strings.Split(r.out, "\n") {
				if n := len([]rune(line)); n > width {
					t.Errorf("gw %v at %d columns: a line of %d:\n%s", args, width, n, r.out)
					break
				}
			}
			if id := uuidRE.FindString(r.out); id != "" {
				t.Errorf("gw %v shows the UUID %s:\n%s", args, id, r.out)
			}
		}
	}

	// What was cut on the terminal is whole in a pipe, and so are the
	// wide columns; -o wide shows them under a header.
	r := e.gwIO(&cmdutil.IOStreams{In: strings.NewReader(""), ForceTerminal: true, Width: 80}, "inference-keys", "list")
	mustContain(t, "inference-keys list at 80 columns", r.out, "NAME", "PREFIX", "OWNER", "owner@example.com", "nightly-batch-s…", "env=produ…")
	piped := e.ok("inference-keys", "list")
	mustContain(t, "inference-keys list piped", piped, "nightly-batch-summaries-for-search\t", "env=production,feature=weekly-digest,team=search-and-retrieval")
	for _, row := range tableRows(piped) {
		if uuid.Validate(row[0]) != nil || len(row) != 8 {
			t.Errorf("piped row %q: want the id first and 8 columns", row)
		}
	}
	wide := e.ok("inference-keys", "list", "-o", "wide")
	mustContain(t, "inference-keys list -o wide", wide, "ID", "CREATED", e.key.ID.String())

	mustContain(t, "usage report --by model", e.ok("usage", "report", "--by", "model", "-o", "table"),
		"anthropic/claude-sonnet-4-5-20250929", "123456789", "12345.678901234")
	mustContain(t, "usage report --by model -o wide", e.ok("usage", "report", "--by", "model", "-o", "wide"), "CACHE READ", "98765432")
	mustContain(t, "data-planes list", e.ok("data-planes", "list", "-o", "table"), "dp-eu-west-1-prod-7f3a  pending", "dp-us-east-2            healthy")
}
