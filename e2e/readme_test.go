//go:build unix

// The README's day one runs as bash scripts in a process group: unix only.

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/wire"
)

// readmeDayOne is the README's newcomer path: its sh blocks, in order,
// without the ones marked <!-- docs-test: skip … -->.
func readmeDayOne(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	begin, end := strings.Index(text, "<!-- day-one:begin -->"), strings.Index(text, "<!-- day-one:end -->")
	if begin < 0 || end < begin {
		t.Fatal("README.md has no day-one section")
	}
	var blocks []string
	lines := strings.Split(text[begin:end], "\n")
	for i := 0; i < len(lines); i++ {
		if lines[i] != "```sh" {
			continue
		}
		skip := i > 0 && strings.HasPrefix(lines[i-1], "<!-- docs-test: skip")
		var block []string
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			block = append(block, lines[i])
		}
		if !skip {
			blocks = append(blocks, strings.Join(block, "\n"))
		}
	}
	return blocks
}

// TestReadmeDayOne runs the README's day-one commands in one bash, as
// someone pasting them would (issue 22, row 5 and "the README as a path a
// newcomer can walk"): against a real gw serve that the test started and
// set up as the setup page does (organization "Acme"), approving each gw
// login as the approval page does, with an OpenAI credential that reaches
// a fake upstream. Its addresses 127.0.0.1:8080 and :9090 are the test's.
func TestReadmeDayOne(t *testing.T) {
	if testing.Short() {
		t.Skip("walks the whole README")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("curl is not installed (.ci/run installs it)")
		}
		t.Skip("curl is not installed")
	}
	blocks := readmeDayOne(t)
	if len(blocks) < 8 {
		t.Fatalf("only %d runnable blocks in the README's day-one section", len(blocks))
	}
	ctx := context.Background()
	const email, password = "owner@example.com", "a long passphrase"
	srv := startServe(t, "GW_DATA_DIR="+t.TempDir(), "GW_BOOTSTRAP_TOKEN=setup_readme")
	anon, _ := client.New(client.Options{Server: srv.URL})
	boot, err := anon.Bootstrap(ctx, wire.Bootstrap{Token: "setup_readme", Email: email, Password: password, OrganizationName: "Acme"})
	if err != nil {
		t.Fatal(err)
	}
	// The catalog's OpenAI, pointed at a fake: the README's credential
	// then reaches it and nothing beyond 127.0.0.1.
	up := providerstest.NewOpenAI(t, "sk-upstream-readme")
	up.SetDefault(providerstest.Reply{Text: "hello from upstream", Usage: providerstest.Usage{Input: 9, Output: 3}})
	putProvider(t, srv.URL, boot.ManagementKey.Token, wire.CatalogProviderInput{ID: "openai", Name: "OpenAI", Kind: "openai", BaseURL: up.BaseURL()})

	dpAddr := freeAddr(t)
	script := "set -euo pipefail\n" + strings.Join(blocks, "\n")
	script = strings.NewReplacer("127.0.0.1:8080", strings.TrimPrefix(srv.URL, "http://"), "127.0.0.1:9090", dpAddr).Replace(script)

	dir := t.TempDir()
	if err := os.Symlink(gwBin, filepath.Join(dir, "gw")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GW_") && !strings.HasPrefix(kv, "DISPLAY=") && !strings.HasPrefix(kv, "WAYLAND_DISPLAY=") && !strings.HasPrefix(kv, "HOME=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, ".config"), "OPENAI_API_KEY="+up.Key)
	// Its own process group: the data plane it starts in the background
	// goes with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A file, not a pipe: the data plane left running in the background
	// must not keep the test waiting for the end of its output.
	stdout, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	cmd.Stdout = stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) })

	var mu sync.Mutex
	var errText strings.Builder
	approvals := make(chan error, 4)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			errText.WriteString(line + "\n")
			mu.Unlock()
			if m := verificationLine.FindStringSubmatch(line); m != nil {
				go func(u string) { approvals <- approveAsThePage(ctx, srv.URL, email, password, u) }(m[1])
			}
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(4 * time.Minute):
		err = fmt.Errorf("did not finish in 4 minutes")
	}
	mu.Lock()
	log := errText.String()
	mu.Unlock()
	outBytes, _ := os.ReadFile(stdout.Name())
	out := string(outBytes)
	if err != nil {
		t.Fatalf("the README's commands failed: %v\nstdout:\n%s\nstderr:\n%s", err, out, log)
	}
	close(approvals)
	n := 0
	for err := range approvals {
		if err != nil {
			t.Fatalf("approving a gw login: %v", err)
		}
		n++
	}
	// A refusal retried by curl is not glued before the answer (issue 26,
	// row 12: --fail-with-body printed each 503's body).
	if strings.Contains(out, "bundle_not_ready") {
		t.Errorf("the README's run printed a 503's body:\n%s", out)
	}
	for _, want := range []string{"hello from upstream", "openai/gpt-4o-mini", "cheap-models-only", "dp-eu-1"} {
		if !strings.Contains(out+log, want) {
			t.Errorf("the README's run never printed %q\nstdout:\n%s\nstderr:\n%s", want, out, log)
		}
	}
	if n != 2 {
		t.Errorf("%d logins approved, want the organization's and the instance's", n)
	}
}

// approveAsThePage signs in and approves a sign-in as the approval page
// does: the organization or the whole instance the URL preselects.
func approveAsThePage(ctx context.Context, server, email, password, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	c, err := client.New(client.Options{Server: server})
	if err != nil {
		return err
	}
	if _, err := c.Login(ctx, wire.Credentials{Email: email, Password: password}); err != nil {
		return err
	}
	q := u.Query()
	in := wire.CLIApprove{UserCode: q.Get("code"), OrgID: q.Get("org")}
	if q.Get("scope") == "instance" {
		in = wire.CLIApprove{UserCode: q.Get("code"), Scope: wire.ScopeInstance}
	}
	_, err = c.CLIApprove(ctx, in)
	return err
}

func putProvider(t *testing.T, server, token string, p wire.CatalogProviderInput) {
	t.Helper()
	body, _ := json.Marshal(p)
	req, _ := http.NewRequest("POST", server+"/api/v1/instance/catalog/providers", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		t.Fatalf("put provider: %d %s", resp.StatusCode, b.String())
	}
}
