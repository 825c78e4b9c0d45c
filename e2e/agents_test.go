package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/wire"
)

// agentMarker is what the agent's shell prints: the shell computes it, so
// an answer holding it shows the tool ran.
var agentMarker = regexp.MustCompile(`gw-e2e-42`)

// agentFake stands in front of a providerstest fake and scripts it from
// each request: a second turn is answered with what it carries of the
// first; a request carrying a tool result with the marker the tool
// printed; one asking to run the command with a call of the agent's shell
// tool; anything else with "pong".
func agentFake(t *testing.T, fake interface{ Enqueue(...providerstest.Reply) }, base string, shell func(body string) (string, string)) string {
	t.Helper()
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	base = target.Path
	target.Path = ""
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		reply := providerstest.Reply{Text: "pong", Usage: providerstest.Usage{Input: 20, Output: 2}}
		text := string(body)
		switch {
		case strings.Contains(text, "SECOND_TURN"):
			// The second turn carries the first: the answer says what it
			// remembers of it.
			reply.Text = "pong, after " + agentMarker.FindString(text)
		case (strings.Contains(text, `"tool_result"`) || strings.Contains(text, `"role":"tool"`)) && agentMarker.MatchString(text):
			reply.Text = "The command printed " + agentMarker.FindString(text) + "."
		case strings.Contains(text, "RUN_THE_COMMAND"):
			if name, args := shell(text); name != "" {
				reply = providerstest.Reply{ToolCalls: []providerstest.ToolCall{{ID: "toolu_e2e1", Name: name, Arguments: args}},
					Usage: providerstest.Usage{Input: 20, Output: 5}}
			}
		}
		fake.Enqueue(reply)
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + base
}

// TestClaudeCode runs the real @anthropic-ai/claude-code (installed in
// e2e/node) through gw serve, non-interactively, on a model of each
// upstream kind reached through an alias: a one-shot prompt, a prompt
// whose answer needs its Bash tool's output, and a second turn. Without
// the package it is skipped, unless GW_TEST_REQUIRE_AGENTS is set.
func TestClaudeCode(t *testing.T) {
	dir, err := filepath.Abs("node")
	if err != nil {
		t.Fatal(err)
	}
	claude := filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-code", "bin", "claude.exe")
	if out, err := exec.Command(claude, "--version").CombinedOutput(); err != nil || !strings.Contains(string(out), "Claude Code") {
		if os.Getenv("GW_TEST_REQUIRE_AGENTS") != "" {
			t.Fatalf("@anthropic-ai/claude-code is not installed in e2e/node (npm ci there), and GW_TEST_REQUIRE_AGENTS is set: %v %s", err, out)
		}
		t.Skip("@anthropic-ai/claude-code is not installed in e2e/node")
	}

	ctx := context.Background()
	srv := startServe(t, "GW_DATA_DIR="+t.TempDir(), "GW_BOOTSTRAP_TOKEN=setup_agents")
	anon, _ := client.New(client.Options{Server: srv.URL})
	boot, err := anon.Bootstrap(ctx, wire.Bootstrap{Token: "setup_agents", Email: "ops@example.com", Password: "a long passphrase"})
	if err != nil {
		t.Fatal(err)
	}
	owner, _ := client.New(client.Options{Server: srv.URL, Token: boot.ManagementKey.Token})
	bash := func(string) (string, string) {
		return "Bash", `{"command":"echo gw-e2e-$((6*7))","description":"Print the marker"}`
	}
	oai := providerstest.NewOpenAI(t, "sk-upstream-agents-openai")
	ant := providerstest.NewAnthropic(t, "sk-upstream-agents-anthropic")
	for _, c := range []wire.ProviderCredentialCreate{
		{Provider: "openai", Label: "fake", Secret: oai.Key, BaseURL: agentFake(t, oai, oai.BaseURL(), bash)},
		{Provider: "anthropic", Label: "fake", Secret: ant.Key, BaseURL: agentFake(t, ant, ant.BaseURL(), bash)},
	} {
		if _, err := owner.CreateCredential(ctx, client.WorkspaceScope("default", "default"), c); err != nil {
			t.Fatalf("credential %s: %v", c.Provider, err)
		}
	}
	ik, err := owner.CreateInferenceKey(ctx, "default", "default", wire.InferenceKeyCreate{Name: "claude-code"})
	if err != nil {
		t.Fatal(err)
	}
	// Claude Code asks for its own default model, unknown to gw until an
	// alias maps it (issue 19's first row). It shows the name with its
	// context window ("claude-opus-4-8[1m]") and sends it with and without.
	shown := claudeDefaultModel(t, claude, t.TempDir(), t.TempDir(), srv.URL, ik.Token)
	sent, _, _ := strings.Cut(shown, "[")
	for _, target := range []string{"openai/gpt-4o", "anthropic/claude-haiku-4-5-20251001"} {
		t.Run(target, func(t *testing.T) {
			home, work := t.TempDir(), t.TempDir()
			run := func(args ...string) string {
				t.Helper()
				runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
				defer cancel()
				cmd := exec.CommandContext(runCtx, claude, args...)
				cmd.Dir = work
				cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "ANTHROPIC_BASE_URL=" + srv.URL + "/inf",
					"ANTHROPIC_API_KEY=" + ik.Token, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1"}
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("claude %s: %v\n%s\ngw serve:\n%s", strings.Join(args, " "), err, out, srv.logs)
				}
				return string(out)
			}
			one := []wire.ModelAliasTargetIn{{Model: target}}
			for _, name := range []string{shown, sent} {
				if _, err := owner.UpdateModelAlias(ctx, "default", "", name, wire.ModelAliasUpdate{Targets: one}); err != nil {
					if _, err := owner.CreateModelAlias(ctx, "default", "", wire.ModelAliasCreate{Name: name, Targets: one}); err != nil {
						t.Fatal(err)
					}
				}
			}
			if out := run("-p", "Say pong."); !strings.Contains(out, "pong") {
				t.Fatalf("one-shot: %s", out)
			}
			if out := run("-p", "RUN_THE_COMMAND: run the marker command with Bash and tell me what it printed.", "--allowedTools", "Bash"); !agentMarker.MatchString(out) {
				t.Fatalf("tool use: %s", out)
			}
			if out := run("-p", "--continue", "SECOND_TURN: and now say pong."); !strings.Contains(out, "pong, after gw-e2e-42") {
				t.Fatalf("second turn: %s", out)
			}
		})
	}
}

// claudeDefaultModel is the model Claude Code asks for when none is
// configured, as it names it when gw answers 404 for it.
func claudeDefaultModel(t *testing.T, claude, work, home, base, key string) string {
	t.Helper()
	cmd := exec.Command(claude, "-p", "Say pong.")
	cmd.Dir = work
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "ANTHROPIC_BASE_URL=" + base + "/inf", "ANTHROPIC_API_KEY=" + key,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1"}
	out, _ := cmd.CombinedOutput()
	m := regexp.MustCompile(`selected model \(([^)]+)\)`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("Claude Code did not name its default model:\n%s", out)
	}
	return m[1]
}

// TestCodex is TestClaudeCode for the real @openai/codex: codex exec with
// a gw model provider, its default model mapped by an alias, a one-shot
// prompt, a prompt whose answer needs the output of a command, and a
// second turn (codex exec resume), on an OpenAI-, an Anthropic- and an
// openai-compatible-kind model. Codex 0.169 offers a model it does not
// know its shell only through a JavaScript "exec" custom tool inside the
// namespaces of an additional_tools input item: gw sends it on as a
// function of one string argument and its call back as a custom_tool_call
// (issue 35), so the fake's call runs the command.
func TestCodex(t *testing.T) {
	dir, err := filepath.Abs("node")
	if err != nil {
		t.Fatal(err)
	}
	codex := filepath.Join(dir, "node_modules", "@openai", "codex", "bin", "codex.js")
	node, _ := exec.LookPath("node")
	if out, err := exec.Command(node, codex, "--version").CombinedOutput(); err != nil || !strings.Contains(string(out), "codex-cli") {
		if os.Getenv("GW_TEST_REQUIRE_AGENTS") != "" {
			t.Fatalf("@openai/codex is not installed in e2e/node (npm ci there), and GW_TEST_REQUIRE_AGENTS is set: %v %s", err, out)
		}
		t.Skip("@openai/codex is not installed in e2e/node")
	}
	ctx := context.Background()
	srv := startServe(t, "GW_DATA_DIR="+t.TempDir(), "GW_BOOTSTRAP_TOKEN=setup_codex")
	anon, _ := client.New(client.Options{Server: srv.URL})
	boot, err := anon.Bootstrap(ctx, wire.Bootstrap{Token: "setup_codex", Email: "ops@example.com", Password: "a long passphrase"})
	if err != nil {
		t.Fatal(err)
	}
	owner, _ := client.New(client.Options{Server: srv.URL, Token: boot.ManagementKey.Token})
	oai := providerstest.NewOpenAI(t, "sk-upstream-codex-openai")
	ant := providerstest.NewAnthropic(t, "sk-upstream-codex-anthropic")
	compat := providerstest.NewOpenAI(t, "sk-upstream-codex-compatible")
	for _, c := range []wire.ProviderCredentialCreate{
		{Provider: "openai", Label: "fake", Secret: oai.Key, BaseURL: agentFake(t, oai, oai.BaseURL(), noShell)},
		{Provider: "anthropic", Label: "fake", Secret: ant.Key, BaseURL: agentFake(t, ant, ant.BaseURL(), codexShell)},
		// groq is of the openai-compatible kind (Chat Completions only);
		// the credential's URL points it at a second OpenAI fake.
		{Provider: "groq", Label: "fake", Secret: compat.Key, BaseURL: agentFake(t, compat, compat.BaseURL(), codexShell)},
	} {
		if _, err := owner.CreateCredential(ctx, client.WorkspaceScope("default", "default"), c); err != nil {
			t.Fatalf("credential %s: %v", c.Provider, err)
		}
	}
	ik, err := owner.CreateInferenceKey(ctx, "default", "default", wire.InferenceKeyCreate{Name: "codex"})
	if err != nil {
		t.Fatal(err)
	}
	config := `model_provider = "gw"
[model_providers.gw]
name = "gw"
base_url = "` + srv.URL + `/inf/v1"
env_key = "GW_INFERENCE_KEY"
wire_api = "responses"
`
	newHome := func(t *testing.T) string {
		home := t.TempDir()
		if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
		return home
	}
	run := func(t *testing.T, home, work string, mustPass bool, args ...string) string {
		t.Helper()
		runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(runCtx, node, append([]string{codex, "exec", "--skip-git-repo-check",
			"--dangerously-bypass-approvals-and-sandbox"}, args...)...)
		cmd.Dir = work
		cmd.Env = []string{"HOME=" + work, "CODEX_HOME=" + home, "PATH=" + os.Getenv("PATH"), "GW_INFERENCE_KEY=" + ik.Token}
		out, err := cmd.CombinedOutput()
		if err != nil && mustPass {
			t.Fatalf("codex %s: %v\n%s\ngw serve:\n%s", strings.Join(args, " "), err, out, srv.logs)
		}
		return string(out)
	}
	// Codex's default model, unknown to gw until an alias maps it.
	out := run(t, newHome(t), t.TempDir(), false, "Say pong.")
	m := regexp.MustCompile(`model: ([^\s]+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("codex did not name its model:\n%s", out)
	}
	name := m[1]
	// Codex asks for reasoning: the targets must reason (gpt-oss-120b has
	// the reasoning capability in the catalog).
	for _, target := range []string{"openai/gpt-5-mini", "anthropic/claude-haiku-4-5-20251001", "groq/openai/gpt-oss-120b"} {
		t.Run(target, func(t *testing.T) {
			one := []wire.ModelAliasTargetIn{{Model: target}}
			if _, err := owner.UpdateModelAlias(ctx, "default", "", name, wire.ModelAliasUpdate{Targets: one}); err != nil {
				if _, err := owner.CreateModelAlias(ctx, "default", "", wire.ModelAliasCreate{Name: name, Targets: one}); err != nil {
					t.Fatal(err)
				}
			}
			home, work := newHome(t), t.TempDir()
			if out := run(t, home, work, true, "Say pong."); !strings.Contains(out, "pong") {
				t.Fatalf("one-shot: %s", out)
			}
			if out := run(t, home, work, true, "resume", "--last", "SECOND_TURN: and now say pong."); !strings.Contains(out, "pong, after") {
				t.Fatalf("second turn: %s", out)
			}
			if !strings.HasPrefix(target, "openai/") {
				// Its shell, through the exec custom tool, on models
				// that cannot take namespaces (Anthropic's Messages, an
				// openai-compatible Chat Completions): gw sends the
				// tools on as plain functions.
				if out := run(t, newHome(t), t.TempDir(), true, "RUN_THE_COMMAND: run the marker command and tell me what it printed."); !strings.Contains(out, "The command printed gw-e2e-42") {
					t.Fatalf("command: %s\ngw serve:\n%s", out, srv.logs)
				}
			}
		})
	}
}

func noShell(string) (string, string) { return "", "" }

// codexShell calls Codex's exec custom tool (sent on as a function of one
// string argument, input) with JavaScript running the marker command
// through its nested exec_command tool.
func codexShell(body string) (string, string) {
	if !strings.Contains(body, `"exec"`) {
		return "", ""
	}
	js := `const r = await tools.exec_command({cmd: "echo gw-e2e-$((6*7))"}); text(JSON.stringify(r));`
	args, _ := json.Marshal(map[string]string{"input": js})
	return "exec", string(args)
}

// TestClaudeCodeMCP runs the real Claude Code with gw as its MCP server
// (--mcp-config: an http server at /inf/v1/mcp with the inference key in
// the Authorization header), its model calls through gw too, against a
// TypeScript SDK upstream MCP server (e2e/node/mcp-upstream.mjs). The
// fake Anthropic upstream answers the prompt with a tool_use of gw's
// tools__echo, as Claude Code names it, and the tool's result with text
// quoting it: the answer holds the tool's output only if the call went
// through gw to the upstream and back. One usage event of endpoint mcp,
// one audit row.
func TestClaudeCodeMCP(t *testing.T) {
	node, dir := nodeWith(t, "@modelcontextprotocol/sdk")
	claude := filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-code", "bin", "claude.exe")
	if out, err := exec.Command(claude, "--version").CombinedOutput(); err != nil || !strings.Contains(string(out), "Claude Code") {
		if os.Getenv("GW_TEST_REQUIRE_AGENTS") != "" {
			t.Fatalf("@anthropic-ai/claude-code is not installed in e2e/node (npm ci there), and GW_TEST_REQUIRE_AGENTS is set: %v %s", err, out)
		}
		t.Skip("@anthropic-ai/claude-code is not installed in e2e/node")
	}
	eachDatabase(t, func(t *testing.T, env []string) { claudeCodeMCP(t, node, dir, claude, env) })
}

func claudeCodeMCP(t *testing.T, node, dir, claude string, env []string) {
	ctx := context.Background()
	upstream := startMCPUpstream(t, node, dir, "tools")
	srv := startServe(t, append(env, "GW_BOOTSTRAP_TOKEN=setup_claude_mcp")...)
	anon, _ := client.New(client.Options{Server: srv.URL})
	boot, err := anon.Bootstrap(ctx, wire.Bootstrap{Token: "setup_claude_mcp", Email: "ops@example.com", Password: "a long passphrase"})
	if err != nil {
		t.Fatal(err)
	}
	owner, _ := client.New(client.Options{Server: srv.URL, Token: boot.ManagementKey.Token})
	ws := client.WorkspaceScope("default", "default")
	if _, err := owner.CreateMCPServer(ctx, ws, wire.MCPServerCreate{Name: "tools", URL: upstream.URL,
		Prices: map[string]string{"echo": "0.004"}}); err != nil {
		t.Fatal(err)
	}
	allowAllTools(t, owner)

	// Claude Code names gw's tools__echo mcp__gw__tools__echo. The tool's
	// output ("echo: <text>") appears in no request before its result.
	const tool, output = "mcp__gw__tools__echo", "echo: mcp-marker-7"
	ant := providerstest.NewAnthropic(t, "sk-upstream-claude-mcp")
	sawTool := make(chan bool, 16)
	target, _ := url.Parse(ant.BaseURL())
	base := target.Path
	target.Path = ""
	proxy := httputil.NewSingleHostReverseProxy(target)
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		text := string(body)
		reply := providerstest.Reply{Text: "pong", Usage: providerstest.Usage{Input: 20, Output: 2}}
		switch {
		case strings.Contains(text, output):
			reply.Text = "The MCP tool answered: " + output + "."
		case strings.Contains(text, "CALL_THE_MCP_TOOL"):
			offered := strings.Contains(text, `"name":"`+tool+`"`)
			sawTool <- offered
			if offered {
				reply = providerstest.Reply{ToolCalls: []providerstest.ToolCall{{ID: "toolu_mcp1", Name: tool,
					Arguments: `{"text":"mcp-marker-7"}`}}, Usage: providerstest.Usage{Input: 20, Output: 5}}
			}
		}
		ant.Enqueue(reply)
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(fake.Close)
	if _, err := owner.CreateCredential(ctx, ws, wire.ProviderCredentialCreate{Provider: "anthropic", Label: "fake",
		Secret: ant.Key, BaseURL: fake.URL + base}); err != nil {
		t.Fatal(err)
	}
	ik, err := owner.CreateInferenceKey(ctx, "default", "default", wire.InferenceKeyCreate{Name: "claude-code-mcp"})
	if err != nil {
		t.Fatal(err)
	}
	shown := claudeDefaultModel(t, claude, t.TempDir(), t.TempDir(), srv.URL, ik.Token)
	sent, _, _ := strings.Cut(shown, "[")
	one := []wire.ModelAliasTargetIn{{Model: "anthropic/claude-haiku-4-5-20251001"}}
	for _, name := range []string{shown, sent} {
		if _, err := owner.CreateModelAlias(ctx, "default", "", wire.ModelAliasCreate{Name: name, Targets: one}); err != nil {
			t.Fatal(err)
		}
	}

	config, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"gw": map[string]any{
		"type": "http", "url": srv.URL + "/inf/v1/mcp", "headers": map[string]string{"Authorization": "Bearer " + ik.Token}}}})
	runCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(runCtx, claude, "-p", "CALL_THE_MCP_TOOL: echo mcp-marker-7 with the gw tools__echo tool and tell me what it answered.",
		"--mcp-config", string(config), "--strict-mcp-config", "--allowedTools", tool)
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"), "ANTHROPIC_BASE_URL=" + srv.URL + "/inf",
		"ANTHROPIC_API_KEY=" + ik.Token, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("claude: %v\n%s\ngw serve:\n%s", err, out, srv.logs)
	}
	select {
	case offered := <-sawTool:
		if !offered {
			t.Fatalf("Claude Code did not offer the model %s: it did not list gw's tools\n%s", tool, out)
		}
	default:
		t.Fatalf("the prompt never reached the model\n%s", out)
	}
	if !strings.Contains(string(out), "The MCP tool answered: "+output) {
		t.Fatalf("the answer does not hold the tool's output:\n%s", out)
	}
	if calls, leaks := upstream.calls(); calls["echo"] != 1 || len(calls) != 1 || leaks != 0 {
		t.Fatalf("the upstream ran %v (%d requests with the gw key)", calls, leaks)
	}
	var events []wire.UsageEvent
	waitFor(t, "the tool call's usage event", func() bool {
		events = mcpUsage(t, srv.URL, boot.ManagementKey.Token)
		return len(events) >= 1
	})
	if len(events) != 1 || events[0].Model != "mcp/tools/echo" || events[0].Status != "ok" || events[0].Provider != "mcp" {
		t.Fatalf("usage events of endpoint mcp: %+v", events)
	}
	if n, _ := catalog.ParseNanoUSD(events[0].CostUSD); n != 4_000_000 {
		t.Fatalf("cost %s, want the price 0.004", events[0].CostUSD)
	}
	waitFor(t, "the tool call's audit row", func() bool { return len(mcpAudit(t, owner)) == 1 })
}
