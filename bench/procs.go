package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// child is a process the harness started; each system runs in its own
// process so that none shares a Go runtime (heap, GC, scheduler) with the
// load generator or with another system.
type child struct {
	cmd  *exec.Cmd
	addr string
	logs strings.Builder
	done chan error
}

// start runs the command and waits for a line matching ready, whose first
// group is the address it listens on.
func start(cmd *exec.Cmd, ready *regexp.Regexp, fromStderr bool) (*child, error) {
	c := &child{cmd: cmd, done: make(chan error, 1)}
	var r io.Reader
	var err error
	if fromStderr {
		r, err = cmd.StderrPipe()
	} else {
		cmd.Stderr = os.Stderr
		r, err = cmd.StdoutPipe()
	}
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			c.logs.WriteString(line + "\n")
			if m := ready.FindStringSubmatch(line); m != nil {
				found <- m[1]
				// gw logs a line per request; past start-up the harness
				// only drains them, to spend as little CPU as it can.
				_, _ = io.Copy(io.Discard, r)
				break
			}
		}
		c.done <- cmd.Wait()
	}()
	select {
	case c.addr = <-found:
		return c, nil
	case err := <-c.done:
		return nil, fmt.Errorf("%s exited before listening: %v\n%s", cmd.Path, err, c.logs.String())
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("%s did not start within 60s\n%s", cmd.Path, c.logs.String())
	}
}

// stop ends the process gracefully, then by force.
func (c *child) stop() {
	if c == nil || c.cmd.Process == nil {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(20 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

var listeningLine = regexp.MustCompile(`^listening (\S+)$`)

// startRole re-executes this program as the upstream or the proxy.
func startRole(role string, args ...string) (*child, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return start(exec.Command(self, append([]string{"-role", role}, args...)...), listeningLine, false)
}

// serveRole is the child side of startRole.
func serveRole(role, upstreamURL string, chunks int) error {
	var h http.Handler
	switch role {
	case "upstream":
		h = upstream{chunks: chunks}
	case "proxy":
		p, err := newProxy(upstreamURL)
		if err != nil {
			return err
		}
		h = p
	default:
		return fmt.Errorf("unknown role %q", role)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Printf("listening %s\n", ln.Addr())
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		// The parent's SIGTERM ends the process; nothing is worth a
		// graceful shutdown here.
		sig := make(chan os.Signal, 1)
		signalNotify(sig)
		<-sig
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}

// buildGW builds the real binary, the one operators run, into dir.
func buildGW(dir string) (string, error) {
	bin := filepath.Join(dir, "gw")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/gw-gateway/gw/cmd/gw")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build gw (run the harness inside the gw module): %v\n%s", err, out)
	}
	return bin, nil
}

var servingLine = regexp.MustCompile(`msg="gw serving" addr=(\S+)`)

// gwSetup is a configured gw: one inference key per upstream pacing.
type gwSetup struct {
	proc   *child
	url    string
	owner  *client.Client
	keys   map[string]string // workspace slug → inference key
	orgRef string
}

// startGW runs gw serve on a fresh data dir (SQLite) or databaseURL, and
// configures it as an operator would, through the management API: the
// bootstrap, per workspace an OpenAI credential whose base URL is the fake
// upstream, an inference key and four policies (an allowlist, request
// limits, a fallback rule and price ceilings) that every request evaluates.
func startGW(bin, dataDir, databaseURL, upstreamURL string, pacedMS int) (*gwSetup, error) {
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "GW_DATA_DIR="+dataDir, "GW_BOOTSTRAP_TOKEN=setup_bench")
	if databaseURL != "" {
		cmd.Env = append(cmd.Env, "GW_DATABASE_URL="+databaseURL)
	}
	proc, err := start(cmd, servingLine, true)
	if err != nil {
		return nil, err
	}
	g := &gwSetup{proc: proc, url: "http://" + proc.addr, keys: map[string]string{}, orgRef: "default"}
	if err := g.configure(upstreamURL, pacedMS); err != nil {
		proc.stop()
		return nil, err
	}
	return g, nil
}

const benchPolicies = `[
 {"name":"allow","definition":{"target":{"kind":"workspace"},"rules":[{"match":{"kind":"all_requests"},"action":{"kind":"models","names":["openai/gpt-4o-mini","openai/gpt-4o"]}}]}},
 {"name":"limits","definition":{"target":{"kind":"workspace"},"rules":[{"match":{"kind":"all_requests"},"action":{"kind":"request_limits","max_output_tokens":4096}}]}},
 {"name":"fallback","definition":{"target":{"kind":"workspace"},"rules":[{"match":{"kind":"all_requests"},"action":{"kind":"fallback","models":["openai/gpt-4o"],"on":["rate_limited"],"max_attempts":2,"timeout_ms":30000}}]}},
 {"name":"prices","definition":{"target":{"kind":"workspace"},"rules":[{"match":{"kind":"all_requests"},"action":{"kind":"price_limit","max_input_price_per_mtok":"5.00","max_output_price_per_mtok":"20.00"}}]}}
]`

func (g *gwSetup) configure(upstreamURL string, pacedMS int) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	anon, err := client.New(client.Options{Server: g.url})
	if err != nil {
		return err
	}
	boot, err := anon.Bootstrap(ctx, wire.Bootstrap{Token: "setup_bench", Email: "bench@example.com", Password: "a long bench passphrase"})
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	g.owner, _ = client.New(client.Options{Server: g.url, Token: boot.ManagementKey.Token})
	if _, err := g.owner.CreateWorkspace(ctx, g.orgRef, wire.WorkspaceCreate{Name: "paced"}); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	var policies []wire.PolicyCreate
	if err := jsonUnmarshal([]byte(benchPolicies), &policies); err != nil {
		return err
	}
	for ws, base := range map[string]string{"default": upstreamURL + "/v1", "paced": fmt.Sprintf("%s/p%d/v1", upstreamURL, pacedMS)} {
		if _, err := g.owner.CreateCredential(ctx, client.WorkspaceScope(g.orgRef, ws), wire.ProviderCredentialCreate{
			Provider: "openai", Label: "fake", Secret: "sk-upstream-bench", BaseURL: base}); err != nil {
			return fmt.Errorf("credential: %w", err)
		}
		for _, p := range policies {
			if _, err := g.owner.CreatePolicy(ctx, g.orgRef, ws, p); err != nil {
				return fmt.Errorf("policy %s: %w", p.Name, err)
			}
		}
		k, err := g.owner.CreateInferenceKey(ctx, g.orgRef, ws, wire.InferenceKeyCreate{Name: "bench-" + ws})
		if err != nil {
			return fmt.Errorf("inference key: %w", err)
		}
		g.keys[ws] = k.Token
	}
	// The data plane serves from its compiled bundle; wait until one
	// request per workspace goes through, so the measured runs start warm.
	c := newClient(1)
	sink := make([]byte, 32<<10)
	for ws, key := range g.keys {
		t := target{url: g.url + "/inf/v1/chat/completions", token: key, body: chatBody("openai/gpt-4o-mini", false)}
		deadline := time.Now().Add(30 * time.Second)
		for {
			err := do(ctx, c, t, sink)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("gw never served workspace %s: %w", ws, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// The warm-up requests are metered too; wait until the report counts
	// them, so the harness's own count starts from a settled figure.
	for deadline := time.Now().Add(30 * time.Second); ; {
		n, err := g.usageRequests()
		if err == nil && n == int64(len(g.keys)) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the warm-up requests never reached the usage report (%d, %v)", n, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// usageRequests is the number of requests the organization's usage report
// counts today: every request the harness sent must be there.
func (g *gwSetup) usageRequests() (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := g.owner.UsageReport(ctx, g.orgRef, client.UsageQuery{Period: "today"})
	return r.Totals.Requests, err
}

func chatBody(model string, stream bool) []byte {
	s := ""
	if stream {
		s = `,"stream":true`
	}
	return []byte(`{"model":"` + model + `","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Hello!"}],"temperature":0.7` + s + `}`)
}
