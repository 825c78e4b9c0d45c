// Package e2e drives the real gw binary: it builds it, starts gw serve on a
// free port and talks to it over HTTP, as a user would.
package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

var gwBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gw-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	gwBin = filepath.Join(dir, "gw")
	build := exec.Command("go", "build", "-o", gwBin, "../cmd/gw")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build gw: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// server is a running gw serve process.
type server struct {
	cmd  *exec.Cmd
	URL  string
	logs *strings.Builder
	done chan error
}

// servingLine finds the listening address in gw serve's log, text or
// JSON (--log-format json).
var servingLine = regexp.MustCompile(`msg="gw serving" addr=(\S+)|"msg":"gw serving".*?"addr":"([^"]+)"`)

// startServe runs gw serve on a free port with extra environment and waits
// until it is listening.
func startServe(tb testing.TB, env ...string) *server {
	tb.Helper()
	return startServeAt(tb, "127.0.0.1:0", env...)
}

// startServeAt is startServe on a given address, for a process that must
// come back where its peers expect it.
func startServeAt(tb testing.TB, addr string, env ...string) *server {
	tb.Helper()
	return startGW(tb, []string{"serve", "--addr", addr}, append(os.Environ(), env...))
}

// startGW starts gw with args and exactly env, and waits until it serves.
func startGW(tb testing.TB, args, env []string) *server {
	tb.Helper()
	cmd := exec.Command(gwBin, args...)
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	s := &server{cmd: cmd, logs: &strings.Builder{}, done: make(chan error, 1)}
	serving := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			s.logs.WriteString(line + "\n")
			if m := servingLine.FindStringSubmatch(line); m != nil {
				serving <- m[1] + m[2]
			}
		}
		s.done <- cmd.Wait()
	}()
	select {
	case a := <-serving:
		s.URL = "http://" + a
	case err := <-s.done:
		tb.Fatalf("gw serve exited early: %v\n%s", err, s.logs)
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		tb.Fatalf("gw serve did not start\n%s", s.logs)
	}
	tb.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-s.done
		}
	})
	return s
}

// logNotable logs, as name's, for a failed test: each line of the
// process's log at level ERROR or that tells of a panic (the first 50),
// then how many lines each WARN message had (a refusal's warnings come by
// the hundred and would bury them).
func (s *server) logNotable(tb testing.TB, name string) {
	tb.Helper()
	shown := 0
	warns := map[string]int{}
	var order []string
	for line := range strings.Lines(s.logs.String()) {
		line = strings.TrimSpace(line)
		switch {
		case strings.Contains(line, "level=ERROR") || strings.Contains(line, "panic"):
			if shown++; shown <= 50 {
				tb.Logf("%s: %s", name, line)
			}
		case strings.Contains(line, "level=WARN"):
			msg := line
			if m := warnMessage.FindStringSubmatch(line); m != nil {
				msg = m[1]
			}
			if warns[msg]++; warns[msg] == 1 {
				order = append(order, msg)
			}
		}
	}
	if shown > 50 {
		tb.Logf("%s: %d more such lines not shown", name, shown-50)
	}
	for _, msg := range order {
		tb.Logf("%s: %d× WARN %s", name, warns[msg], msg)
	}
}

// warnMessage is a text log line's message.
var warnMessage = regexp.MustCompile(`msg=("(?:[^"\\]|\\.)*"|\S+)`)

// stop sends SIGTERM and waits for a clean exit.
func (s *server) stop(tb testing.TB) {
	tb.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		if err != nil {
			tb.Fatalf("gw serve exited with %v\n%s", err, s.logs)
		}
	case <-time.After(30 * time.Second):
		tb.Fatalf("gw serve did not shut down\n%s", s.logs)
	}
}

func runGW(t *testing.T, env []string, args ...string) (string, string) {
	t.Helper()
	cmd := exec.Command(gwBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("gw %v: %v\n%s%s", args, err, out.String(), errOut.String())
	}
	return out.String(), errOut.String()
}

func TestServeEndToEnd(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			env := []string{"GW_DATA_DIR=" + t.TempDir(), "GW_BOOTSTRAP_TOKEN=setup_e2e"}
			if d == storetest.Postgres {
				url, err := storetest.URL(t, d)
				if err != nil {
					t.Fatal(err)
				}
				env = append(env, "GW_DATABASE_URL="+url)
			}
			srv := startServe(t, env...)
			if !strings.Contains(srv.logs.String(), "/setup?token=setup_e2e") {
				t.Errorf("serve did not log the setup URL:\n%s", srv.logs)
			}

			anon, err := client.New(client.Options{Server: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			boot, err := anon.Bootstrap(ctx, wire.Bootstrap{Token: "setup_e2e", Email: "ops@example.com", Password: "a long passphrase"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := anon.Bootstrap(ctx, wire.Bootstrap{Token: "setup_e2e", Email: "x@example.com", Password: "a long passphrase"}); !client.IsStatus(err, 409) {
				t.Fatalf("second bootstrap: %v", err)
			}

			owner, _ := client.New(client.Options{Server: srv.URL, Token: boot.ManagementKey.Token})
			me, err := owner.Me(ctx)
			if err != nil || me.User.Email != "ops@example.com" || me.Credential != "management_key" {
				t.Fatalf("me: %+v %v", me, err)
			}
			ws, err := owner.CreateWorkspace(ctx, "default", wire.WorkspaceCreate{Name: "Research"})
			if err != nil || ws.Slug != "research" {
				t.Fatalf("create workspace: %+v %v", ws, err)
			}
			list, err := owner.ListWorkspaces(ctx, boot.Organization.ID.String())
			if err != nil || len(list) != 2 {
				t.Fatalf("list workspaces: %+v %v", list, err)
			}
			ciKey, err := owner.CreateOrgKey(ctx, "default", wire.ManagementKeyCreate{Permissions: []string{"workspaces.read"}, Label: "ci"})
			if err != nil || !strings.HasPrefix(ciKey.Token, "sk-cp-") {
				t.Fatalf("create key: %+v %v", ciKey, err)
			}
			ci, _ := client.New(client.Options{Server: srv.URL, Token: ciKey.Token})
			if _, err := ci.ListWorkspaces(ctx, "default"); err != nil {
				t.Fatalf("ci key: %v", err)
			}
			if _, err := ci.CreateWorkspace(ctx, "default", wire.WorkspaceCreate{Name: "nope"}); !client.IsStatus(err, 403) {
				t.Fatalf("ci key creating a workspace: %v", err)
			}
			if _, err := owner.RevokeManagementKey(ctx, client.OrgScope("default"), ciKey.ID.String()); err != nil {
				t.Fatal(err)
			}
			if _, err := ci.ListWorkspaces(ctx, "default"); !client.IsStatus(err, 401) {
				t.Fatalf("revoked key: %v", err)
			}

			// Discovery on the data plane of the same process, through the
			// official OpenAI SDK: only models with a credential, in id order.
			if _, err := owner.CreateCredential(ctx, client.Scope{Org: "default"}, wire.ProviderCredentialCreate{
				Provider: "anthropic", Label: "main", Secret: "sk-ant-e2e-secret-value"}); err != nil {
				t.Fatalf("credential: %v", err)
			}
			ik, err := owner.CreateInferenceKey(ctx, "default", "default", wire.InferenceKeyCreate{Name: "e2e"})
			if err != nil {
				t.Fatalf("inference key: %v", err)
			}
			sdk := openai.NewClient(option.WithBaseURL(srv.URL+"/inf/v1/"), option.WithAPIKey(ik.Token), option.WithMaxRetries(0))
			models, err := sdk.Models.List(ctx)
			if err != nil || len(models.Data) == 0 {
				t.Fatalf("discovery: %v", err)
			}
			for i, m := range models.Data {
				if !strings.HasPrefix(m.ID, "anthropic/") || (i > 0 && models.Data[i-1].ID >= m.ID) {
					t.Fatalf("discovery list out of rule: %v", models.Data)
				}
			}
			if m, err := sdk.Models.Get(ctx, models.Data[0].ID); err != nil || m.ID != models.Data[0].ID {
				t.Fatalf("discovery get %s: %v", models.Data[0].ID, err)
			}

			// A chat completion through the same SDK, to a fake OpenAI
			// upstream; its usage reaches the report with its exact cost.
			chatThroughGateway(t, owner, sdk, func() {})
			// Its cost, explained from the event's provenance by the CLI.
			explain, _ := runGW(t, append(env, "GW_SERVER="+srv.URL, "GW_TOKEN="+boot.ManagementKey.Token, "GW_ORG=default"),
				"usage", "explain", "req-e2e-chat")
			for _, want := range []string{"req-e2e-chat", "asked openai/gpt-4o-mini, answered by openai/gpt-4o-mini (openai)",
				"counted by upstream", "1234", "× 0.15", "= 0.0001851", "567", "× 0.60", "= 0.0003402", "= 0.0005253 USD", "e2e (sk-gw-", "owned by ops@example.com"} {
				if !strings.Contains(explain, want) {
					t.Fatalf("gw usage explain lacks %q:\n%s", want, explain)
				}
			}

			// Recovery works beside a running server.
			token, _ := runGW(t, env, "admin", "create-key", "--label", "recovery", "--permissions", "organizations.read")
			rec, _ := client.New(client.Options{Server: srv.URL, Token: strings.TrimSpace(token)})
			if page, err := rec.ListOrganizations(ctx, 10, ""); err != nil || len(page.Data) != 1 {
				t.Fatalf("recovery key: %+v %v", page, err)
			}
			out, _ := runGW(t, env, "db", "status")
			if !strings.Contains(out, "applied") || strings.Contains(out, "pending") {
				t.Fatalf("db status:\n%s", out)
			}

			srv.stop(t)
			if strings.Contains(srv.logs.String(), boot.ManagementKey.Token) || strings.Contains(srv.logs.String(), "a long passphrase") {
				t.Fatal("a secret reached the server log")
			}

			// A restart keeps everything and asks for no setup.
			srv = startServe(t, env...)
			if strings.Contains(srv.logs.String(), "setup_url") {
				t.Fatalf("restart asked for setup again:\n%s", srv.logs)
			}
			owner, _ = client.New(client.Options{Server: srv.URL, Token: boot.ManagementKey.Token})
			if list, err := owner.ListWorkspaces(ctx, "default"); err != nil || len(list) != 2 {
				t.Fatalf("after restart: %+v %v", list, err)
			}
			srv.stop(t)
		})
	}
}

// chatThroughGateway configures an OpenAI credential pointing at a fake
// upstream, sends one chat completion through the gateway with sdk, and
// waits for its usage event in the organization's report. synced returns
// once the gateway has the credential (at once in process).
func chatThroughGateway(t *testing.T, owner *client.Client, sdk openai.Client, synced func()) {
	t.Helper()
	ctx := context.Background()
	up := providerstest.NewOpenAI(t, "sk-upstream-e2e")
	up.Enqueue(providerstest.Reply{Text: "hello from upstream", Usage: providerstest.Usage{Input: 1234, Output: 567}})
	base := up.BaseURL()
	if _, err := owner.CreateCredential(ctx, client.WorkspaceScope("default", "default"), wire.ProviderCredentialCreate{
		Provider: "openai", Label: "fake", Secret: up.Key, BaseURL: base}); err != nil {
		t.Fatalf("credential: %v", err)
	}
	synced()
	resp, err := sdk.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "openai/gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	}, option.WithHeader("X-Request-Id", "req-e2e-chat"))
	if err != nil || len(resp.Choices) != 1 || resp.Choices[0].Message.Content != "hello from upstream" {
		t.Fatalf("chat completion: %+v %v", resp, err)
	}
	waitFor(t, "the usage event in the report", func() bool {
		r, err := owner.UsageReport(ctx, "default", client.UsageQuery{Period: "today", ModelID: "openai/gpt-4o-mini"})
		// 1234 × $0.15 + 567 × $0.60 per million tokens, exactly.
		return err == nil && r.Totals.Requests == 1 && r.Totals.CostUSD == "0.0005253"
	})
}

func TestServeBootstrapFromFlags(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("automation secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, "GW_DATA_DIR="+dir, "GW_BOOTSTRAP_EMAIL=robot@example.com", "GW_BOOTSTRAP_PASSWORD_FILE="+pw)
	resp, err := http.Post(srv.URL+"/api/v1/auth/login", "application/json",
		strings.NewReader(`{"email":"robot@example.com","password":"automation secret"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("login after flag bootstrap: %d %s", resp.StatusCode, body)
	}
	srv.stop(t)
}

// BenchmarkColdStart measures gw serve on a fresh SQLite data dir from
// exec to the first 200, against the baseline of exec'ing `gw version`.
func BenchmarkColdStart(b *testing.B) {
	b.Run("baseline_gw_version", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := exec.Command(gwBin, "version").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("serve_to_first_200", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			start := time.Now()
			srv := startServe(b, "GW_DATA_DIR="+b.TempDir())
			for {
				resp, err := http.Get(srv.URL + "/api/v1/bootstrap")
				if err == nil {
					resp.Body.Close()
					if resp.StatusCode == 200 {
						break
					}
				}
				if time.Since(start) > 30*time.Second {
					b.Fatal("no 200 within 30s")
				}
			}
			b.StopTimer()
			srv.stop(b)
			b.StartTimer()
		}
	})
}
