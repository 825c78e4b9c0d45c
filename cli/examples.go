package cli

import (
	"strings"

	"github.com/spf13/cobra"
)

// commandExamples are the --help examples of the commands whose
// constructors do not set one, by command path below the root: one table,
// as for completion, because several of those commands are built by
// shared helpers. TestEveryCommandHasExamples parses each line with the
// command's own flags, so an example cannot name a flag that is gone.
var commandExamples = map[string]string{
	"activity list":             "gw activity list --limit 20\ngw activity list --scope instance --all -o json",
	"admin create-key":          "gw admin create-key --label recovery\ngw admin create-key --label ci --permissions workspaces.read --database-url postgres://gw@db/gw",
	"admin rotate-secret-key":   "gw admin rotate-secret-key --data-dir /var/lib/gw\ngw admin rotate-secret-key --new-key-file new.key --database-url postgres://gw@db/gw",
	"catalog import":            "gw catalog import -f catalog.yaml --dry-run\ngw catalog import -f catalog.yaml",
	"catalog list":              "gw catalog list\ngw catalog list --providers\ngw catalog list --scope workspace --workspace search -o json",
	"catalog retire":            "gw catalog retire openai/gpt-4o-mini --yes\ngw catalog retire --provider mistral --yes",
	"context delete":            "gw context delete staging",
	"context list":              "gw context list\ngw context list -o json",
	"context use":               "gw context use admin",
	"credentials delete":        "gw credentials delete 0b9c5f5e-1111-4222-8333-444455556666 --yes\ngw credentials delete 0b9c5f5e-1111-4222-8333-444455556666 --scope workspace --workspace search --yes",
	"credentials get":           "gw credentials get 0b9c5f5e-1111-4222-8333-444455556666\ngw credentials get 0b9c5f5e-1111-4222-8333-444455556666 --scope platform -o yaml",
	"tool-policies list":        "gw tool-policies list --workspace search",
	"tool-policies apply":       "gw tool-policies apply -f tool-policies.json --workspace search",
	"oauth clients list":        "gw oauth clients list",
	"oauth clients add":         "gw oauth clients add \"Team CLI\" --redirect-uri http://127.0.0.1:8123/callback",
	"oauth clients delete":      "gw oauth clients delete gwc_0123456789abcdef --yes",
	"oauth grants list":         "gw oauth grants list --workspace search",
	"oauth grants revoke":       "gw oauth grants revoke 0b6c2c1e-8f35-4b53-9a57-3c2a2d7c9f10 --workspace search --yes",
	"mcp servers delete":        "gw mcp servers delete github --yes\ngw mcp servers delete github --scope workspace --workspace search --yes",
	"mcp servers list":          "gw mcp servers list\ngw mcp servers list --scope workspace --workspace search -o json",
	"mcp servers update":        "gw mcp servers update github --disable\ngw mcp servers update github --url https://mcp.example.com/v2 --auth header --header Authorization --secret-stdin",
	"batches get":               "gw batches get batch_0b9c5f5e111142228333444455556666 --workspace search\ngw batches get batch_0b9c5f5e111142228333444455556666 -o json",
	"batches cancel":            "gw batches cancel batch_0b9c5f5e111142228333444455556666 --workspace search --yes",
	"credentials list":          "gw credentials list\ngw credentials list --scope workspace --workspace search",
	"credentials update":        "gw credentials update 0b9c5f5e-1111-4222-8333-444455556666 --label main\ngw credentials update 0b9c5f5e-1111-4222-8333-444455556666 --secret-stdin",
	"data-planes enrollments":   "gw data-planes enrollments\ngw data-planes enrollments -o json",
	"data-planes get":           "gw data-planes get dp-eu-1",
	"data-planes list":          "gw data-planes list\ngw data-planes list -o wide\ngw data-planes list -o json",
	"data-planes revoke":        "gw data-planes revoke dp-eu-1 --yes",
	"db migrate":                "gw db migrate\ngw db migrate --database-url postgres://gw@db/gw",
	"db status":                 "gw db status\ngw db status --data-dir /var/lib/gw -o json",
	"inference-keys get":        "gw inference-keys get my-app --workspace search",
	"inference-keys list":       "gw inference-keys list --workspace search\ngw inference-keys list -o wide",
	"inference-keys revoke":     "gw inference-keys revoke my-app --workspace search --yes",
	"invitations create":        "gw invitations create --email ana@example.com\ngw invitations create --email ana@example.com --role admin",
	"invitations list":          "gw invitations list",
	"invitations reissue":       "gw invitations reissue 0b9c5f5e-1111-4222-8333-444455556666",
	"invitations revoke":        "gw invitations revoke 0b9c5f5e-1111-4222-8333-444455556666 --yes",
	"keys create":               "gw keys create --label ci --permissions workspaces.read,usage.read --expires-in 90d\ngw keys create --scope instance --label dp-eu-1 --permissions bundles.read,usage.ingest,data-planes.heartbeat,policy-state.sync",
	"keys get":                  "gw keys get ci",
	"keys list":                 "gw keys list\ngw keys list --scope instance --user ana@example.com",
	"keys revoke":               "gw keys revoke ci --yes",
	"logout":                    "gw logout\ngw logout --context admin",
	"members add":               "gw members add ana@example.com --role admin",
	"members list":              "gw members list\ngw members list -o json",
	"members remove":            "gw members remove ana@example.com --yes",
	"members update":            "gw members update ana@example.com --role viewer\ngw members update ana@example.com --status suspended",
	"models get":                "gw models get openai/gpt-4o-mini --key sk-gw-…",
	"models list":               "gw models list --key sk-gw-…\nGW_INFERENCE_KEY=sk-gw-… gw models list -o json",
	"orgs create":               "gw orgs create --name Acme\ngw orgs create --name \"Globex Corporation\" --slug globex",
	"orgs delete":               "gw orgs delete globex --yes",
	"orgs get":                  "gw orgs get acme",
	"orgs list":                 "gw orgs list\ngw orgs list --all -o json",
	"orgs update":               "gw orgs update acme --name \"Acme Inc\"",
	"policies delete":           "gw policies delete cheap-models-only --workspace search --yes",
	"policies get":              "gw policies get cheap-models-only --workspace search\ngw policies get cheap-models-only -o yaml",
	"policies list":             "gw policies list --workspace search",
	"serve":                     "gw serve\ngw serve --addr 0.0.0.0:8080 --database-url postgres://gw@db/gw --public-url https://gw.example.com\ngw serve --role data-plane --control-plane-url https://gw.example.com --data-plane-id dp-eu-1",
	"service-accounts create":   "gw service-accounts create --name ci-bot --permissions workspaces.read,usage.read --expires-in 90d",
	"service-accounts delete":   "gw service-accounts delete ci-bot --yes",
	"service-accounts get":      "gw service-accounts get ci-bot",
	"service-accounts list":     "gw service-accounts list",
	"status":                    "gw status\ngw status -o json",
	"version":                   "gw version\ngw version -o json",
	"whoami":                    "gw whoami\ngw whoami --context admin",
	"workspaces create":         "gw workspaces create --name Search --slug search",
	"workspaces delete":         "gw workspaces delete search --yes",
	"workspaces get":            "gw workspaces get search",
	"workspaces list":           "gw workspaces list\ngw workspaces list --org acme -o json",
	"workspaces members add":    "gw workspaces members add ana@example.com --workspace search --role admin",
	"workspaces members list":   "gw workspaces members list --workspace search",
	"workspaces members remove": "gw workspaces members remove ana@example.com --workspace search",
	"workspaces members update": "gw workspaces members update ana@example.com --workspace search --role viewer",
	"workspaces update":         "gw workspaces update search --name \"Search (prod)\"\ngw workspaces update search --rpm 600 --tpm 200000",
}

// addExamples sets the table's examples, indented as cobra prints its own.
func addExamples(root *cobra.Command) {
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		path := strings.TrimPrefix(cmd.CommandPath(), root.Name()+" ")
		if ex, ok := commandExamples[path]; ok && cmd.Example == "" {
			cmd.Example = "  " + strings.ReplaceAll(ex, "\n", "\n  ")
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
