// Package deploy holds gw's deployment files: the Dockerfile, an example
// compose file, Prometheus' scrape configuration and a Grafana dashboard.
// No container runtime runs where these tests do, so they check what can be
// checked without one: the dashboard queries metrics gw exports, the
// compose file parses and passes gw serve flags that exist, and the release
// configuration passes goreleaser check.
package deploy_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/gw-gateway/gw/cli"
	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/serve"
	"github.com/gw-gateway/gw/server/telemetry"
)

var metricName = regexp.MustCompile(`\b(?:gw|go_sql)_[a-z0-9_]+\b`)

// TestDashboardQueriesNameExistingMetrics reads every query of the Grafana
// dashboard and checks each gw metric it names is one gw exports (a
// histogram's _bucket, _sum and _count series included).
func TestDashboardQueriesNameExistingMetrics(t *testing.T) {
	raw, err := os.ReadFile("grafana/gw-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	queried := map[string]bool{}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			names := metricName.FindAllString(tg.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q: query names no gw metric: %s", p.Title, tg.Expr)
			}
			for _, n := range names {
				base := n
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if b, ok := strings.CutSuffix(n, suffix); ok && slices.Contains(telemetry.Families, b) {
						base = b
					}
				}
				if !slices.Contains(telemetry.Families, base) {
					t.Errorf("panel %q queries %s, which gw does not export", p.Title, n)
				}
				queried[base] = true
			}
		}
	}
	// The metrics the issue asks the dashboard to show are all on it.
	for _, n := range telemetry.Families {
		if strings.HasPrefix(n, "gw_") && !queried[n] {
			t.Errorf("no panel shows %s", n)
		}
	}
}

// TestComposeUsesRealFlags parses the compose file and checks that every
// gw service passes flags and GW_ variables that gw serve has, and that
// Prometheus scrapes each of them on its --metrics-addr port.
func TestComposeUsesRealFlags(t *testing.T) {
	raw, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Services map[string]struct {
			Image       string
			Command     []string
			Environment map[string]string
		}
	}
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	serve := serve.NewCmd(&cmdutil.Factory{IO: &cmdutil.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}}, nil)
	flag := func(name string) bool { return serve.Flags().Lookup(name) != nil }
	root := cli.NewRootCmd(&cmdutil.Factory{IO: &cmdutil.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}})
	roles := map[string]int{}
	var metricsTargets []string
	tokens := map[string]string{}
	for name, s := range c.Services {
		if s.Image != "gw:latest" {
			continue
		}
		if len(s.Command) > 0 && s.Command[0] != "serve" {
			// A one-shot CLI step (enrollment): a real command and flags.
			cmd, args, err := root.Find(s.Command)
			if err != nil || cmd == root || cmd.ParseFlags(args) != nil {
				t.Errorf("%s: %v is no gw command: %v", name, s.Command, err)
			}
			continue
		}
		if len(s.Command) == 0 {
			t.Errorf("%s: no command", name)
			continue
		}
		for _, arg := range s.Command[1:] {
			f, value, _ := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
			if !strings.HasPrefix(arg, "--") || !flag(f) {
				t.Errorf("%s: gw serve has no flag %s", name, arg)
			}
			switch f {
			case "role":
				roles[value]++
				if value == "data-plane" {
					// Issue 22, row 14: a data plane gets its own key and
					// never the control plane's secret key.
					if _, ok := s.Environment["GW_SECRET_KEY"]; ok {
						t.Errorf("%s: a data plane is given GW_SECRET_KEY", name)
					}
					if other, dup := tokens[s.Environment["GW_TOKEN"]]; dup || s.Environment["GW_TOKEN"] == "" {
						t.Errorf("%s: GW_TOKEN %q is not its own (also %s's)", name, s.Environment["GW_TOKEN"], other)
					}
					tokens[s.Environment["GW_TOKEN"]] = name
				}
			case "metrics-addr":
				_, port, _ := strings.Cut(value, ":")
				metricsTargets = append(metricsTargets, name+":"+port)
			}
		}
		for k := range s.Environment {
			f := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(k, "GW_")), "_", "-")
			// The keys themselves have no flag: a flag would show them in ps.
			if !strings.HasPrefix(k, "GW_") || (k != "GW_SECRET_KEY" && k != "GW_DATA_PLANE_KEY" && !flag(f)) {
				t.Errorf("%s: %s names no gw serve flag", name, k)
			}
		}
	}
	if roles["control-plane"] != 1 || roles["data-plane"] != 2 {
		t.Errorf("roles %v: want one control plane and two data planes", roles)
	}
	if c.Services["postgres"].Image == "" || c.Services["prometheus"].Image == "" {
		t.Error("compose needs postgres and prometheus")
	}
	prom, err := os.ReadFile("prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		ScrapeConfigs []struct {
			StaticConfigs []struct{ Targets []string } `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(prom, &p); err != nil {
		t.Fatalf("prometheus.yml: %v", err)
	}
	var scraped []string
	for _, sc := range p.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			scraped = append(scraped, st.Targets...)
		}
	}
	slices.Sort(scraped)
	slices.Sort(metricsTargets)
	if !slices.Equal(scraped, metricsTargets) || len(scraped) != 3 {
		t.Errorf("Prometheus scrapes %v; the gw services' metrics listeners are %v", scraped, metricsTargets)
	}
}

// TestGoreleaserCheck runs goreleaser check on the release configuration
// (go install github.com/goreleaser/goreleaser/v2@v2.16.0). goreleaser
// wants a git repository with a remote, so the check runs in a temporary
// one holding the configuration.
func TestGoreleaserCheck(t *testing.T) {
	bin, err := exec.LookPath("goreleaser")
	if err != nil {
		gopath, _ := exec.Command("go", "env", "GOPATH").Output()
		bin = filepath.Join(strings.TrimSpace(string(gopath)), "bin", "goreleaser")
		if _, err := os.Stat(bin); err != nil {
			if os.Getenv("GW_TEST_REQUIRE_GORELEASER") != "" {
				t.Fatal("goreleaser is required (GW_TEST_REQUIRE_GORELEASER) and not installed")
			}
			t.Skip("goreleaser is not installed (go install github.com/goreleaser/goreleaser/v2@v2.16.0)")
		}
	}
	cfg, err := os.ReadFile("../goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "goreleaser.yaml"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) string {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	run("git", "init", "-q")
	run("git", "remote", "add", "origin", "https://github.com/gw-gateway/gw.git")
	run("git", "add", ".")
	run("git", "commit", "-qm", "release configuration")
	out := run(bin, "check")
	if !strings.Contains(out, "1 configuration file(s) validated") {
		t.Fatalf("goreleaser check:\n%s", out)
	}
}

// TestOperationsDocNamesEveryFamily keeps docs/operations.md's metrics
// table in step with what gw exports.
func TestOperationsDocNamesEveryFamily(t *testing.T) {
	doc, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range telemetry.Families {
		if strings.HasPrefix(n, "gw_") && !strings.Contains(string(doc), "`"+n+"`") {
			t.Errorf("docs/operations.md does not describe %s", n)
		}
	}
}
