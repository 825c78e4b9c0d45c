package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// TestOpenAPIClients proves the OpenAPI document with the clients people
// generate from it (issue 22, row 12): oapi-codegen (Go, the nested module
// e2e/openapi/goclient, its version pinned there) and openapi-typescript
// with openapi-fetch (TypeScript, e2e/node), each generated from a running
// gw serve's /api/v1/openapi.json, compiled, and run against that server:
// create a workspace, an inference key in it, read the usage report with
// a typed period. The TypeScript half needs e2e/node's packages (npm ci);
// without them it is skipped unless GW_TEST_REQUIRE_NODE is set, as in CI.
func TestOpenAPIClients(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and compiles two clients")
	}
	ctx := context.Background()
	srv := startServe(t, "GW_DATA_DIR="+t.TempDir(), "GW_BOOTSTRAP_TOKEN=setup_openapi")
	anon, _ := client.New(client.Options{Server: srv.URL})
	boot, err := anon.Bootstrap(ctx, wire.Bootstrap{Token: "setup_openapi", Email: "ops@example.com", Password: "a long passphrase"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(srv.URL + "/api/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	spec := filepath.Join(t.TempDir(), "openapi.json")
	if err := os.WriteFile(spec, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "GW_SERVER="+srv.URL, "GW_TOKEN="+boot.ManagementKey.Token, "GW_ORG="+boot.Organization.Slug)
	run := func(dir, what string, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, env
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v\n%s%s", what, err, out, stderr.String())
		}
		return string(out)
	}
	check := func(what, out, workspace, keyName string) {
		t.Helper()
		var got struct {
			Workspace string `json:"workspace"`
			KeyName   string `json:"key_name"`
			Days      int    `json:"days"`
			CostUSD   string `json:"cost_usd"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil || got.Workspace != workspace || got.KeyName != keyName || got.Days != 7 || got.CostUSD == "" {
			t.Fatalf("%s printed %q (%v)", what, out, err)
		}
	}

	t.Run("go", func(t *testing.T) {
		dir, _ := filepath.Abs(filepath.Join("openapi", "goclient"))
		run(dir, "oapi-codegen", "go", "tool", "oapi-codegen", "-config", "oapi-codegen.yaml", spec)
		check("the generated Go client", run(dir, "go run", "go", "run", "."), "typed-go", "typed-go")
	})
	t.Run("typescript", func(t *testing.T) {
		dir, _ := filepath.Abs("node")
		node, err := exec.LookPath("node")
		if err == nil {
			_, err = os.Stat(filepath.Join(dir, "node_modules", "openapi-typescript", "package.json"))
		}
		if err != nil {
			if os.Getenv("GW_TEST_REQUIRE_NODE") != "" {
				t.Fatalf("node or openapi-typescript missing (npm ci in e2e/node), and GW_TEST_REQUIRE_NODE is set: %v", err)
			}
			t.Skipf("node or openapi-typescript missing: %v", err)
		}
		run(dir, "openapi-typescript", node, "node_modules/openapi-typescript/bin/cli.js", spec, "-o", "generated/gw.d.ts")
		run(dir, "tsc", node, "node_modules/typescript/bin/tsc", "-p", "tsconfig.json")
		check("the generated TypeScript client", run(dir, "node", node, "build/openapi-client.js"), "typed-ts", "typed-ts")
	})
}
