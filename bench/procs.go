package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
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
func serveRole(role, upstreamURL string, chunks int, withPprof bool) error {
	var h http.Handler
	switch role {
	case "upstream":
		h = upstream{chunks: chunks}
	case "mcp-upstream":
		h = mcpUpstreamHandler()
	case "proxy":
		p, err := newProxy(upstreamURL)
		if err != nil {
			return err
		}
		h = p
	default:
		return fmt.Errorf("unknown role %q", role)
	}
	if withPprof {
		// A listener of its own: the proxied requests go through no mux.
		addr, err := servePprof()
		if err != nil {
			return err
		}
		// Printed before the listening line, which the parent waits for.
		fmt.Printf("pprof %s\n", addr)
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

// servePprof serves net/http/pprof's handlers on a listener of their own,
// returning its address.
func servePprof() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	go func() { _ = http.Serve(ln, mux) }()
	return ln.Addr().String(), nil
}

var pprofLine = regexp.MustCompile(`(?m)^pprof (\S+)$`)

// pprofAddr is where a role started with -pprof serves pprof ("" when it
// was not).
func pprofAddr(c *child) string {
	if m := pprofLine.FindStringSubmatch(c.logs.String()); m != nil {
		return m[1]
	}
	return ""
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

var (
	servingLine = regexp.MustCompile(`msg="gw serving" addr=(\S+)`)
	metricsLine = regexp.MustCompile(`msg="metrics serving" addr=(\S+)`)
)

// gwSetup is a configured gw: one inference key per upstream pacing.
type gwSetup struct {
	proc    *child
	url     string
	metrics string // the metrics listener's address (pprof too, with -pprof)
	owner   *client.Client
	keys    map[string]string // workspace slug → inference key
	orgRef  string
}

// gwFlags are the flags every gw process of the harness runs with: the
// metrics listener is part of gw's work (every request is observed), and
// pprof is served on it when asked for, to profile or trace a run.
func gwFlags(pprof bool) []string {
	args := []string{"serve", "--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0"}
	if pprof {
		args = append(args, "--pprof")
	}
	return args
}

// startGW runs gw serve on a fresh data dir (SQLite) or databaseURL, and
// configures it as an operator would, through the management API: the
// bootstrap, per workspace (one per upstream pacing) an OpenAI credential
// whose base URL is the fake upstream, an inference key with rate limits,
// and five policies (an allowlist, request limits, a fallback rule, price
// ceilings and a budget) that every request evaluates.
func startGW(bin, dataDir, databaseURL, upstreamURL string, paced map[string]int, pprof bool, env []string) (*gwSetup, error) {
	cmd := exec.Command(bin, gwFlags(pprof)...)
	cmd.Env = append(append(os.Environ(), env...), "GW_DATA_DIR="+dataDir, "GW_BOOTSTRAP_TOKEN=setup_bench")
	if databaseURL != "" {
		cmd.Env = append(cmd.Env, "GW_DATABASE_URL="+databaseURL)
	}
	proc, err := start(cmd, servingLine, true)
	if err != nil {
		return nil, err
	}
	g := &gwSetup{proc: proc, url: "http://" + proc.addr, keys: map[string]string{}, orgRef: "default", metrics: metricsAddr(proc)}
	if err := g.configure(upstreamURL, paced); err != nil {
		proc.stop()
		return nil, err
	}
	return g, nil
}

func metricsAddr(c *child) string {
	if m := metricsLine.FindStringSubmatch(c.logs.String()); m != nil {
		return m[1]
	}
	return ""
}

// dataPlane is a remote data plane (gw serve --role data-plane) of gw's
// control plane, enrolled for its organization: the configuration that
// scales out, whose hot path reads no database and spools usage to the
// control plane.
type dataPlane struct {
	proc    *child
	url     string
	metrics string
}

func startDataPlane(bin, dataDir string, g *gwSetup, pprof bool, env []string) (*dataPlane, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	key, err := g.owner.CreateManagementKey(ctx, client.InstanceScope(), wire.ManagementKeyCreate{
		Permissions: []string{"bundles.read", "usage.ingest", "data-planes.heartbeat", "policy-state.sync"}, Label: "bench-data-plane"})
	if err != nil {
		return nil, fmt.Errorf("data-plane key: %w", err)
	}
	const id = "bench-dp"
	cmd := exec.Command(bin, append(gwFlags(pprof), "--role", "data-plane")...)
	cmd.Env = append(append(os.Environ(), env...), "GW_DATA_DIR="+dataDir, "GW_CONTROL_PLANE_URL="+g.url, "GW_TOKEN="+key.Token,
		"GW_DATA_PLANE_ID="+id, "GW_POLL_INTERVAL=1s", "GW_HEARTBEAT_INTERVAL=1s", "GW_SECRET_KEY=", "GW_DATABASE_URL=")
	proc, err := start(cmd, servingLine, true)
	if err != nil {
		return nil, err
	}
	dp := &dataPlane{proc: proc, url: "http://" + proc.addr, metrics: metricsAddr(proc)}
	fail := func(err error) (*dataPlane, error) { proc.stop(); return nil, err }
	var asked wire.DataPlaneEnrollment
	for deadline := time.Now().Add(30 * time.Second); ; {
		if asked, err = g.owner.GetEnrollment(ctx, id); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fail(fmt.Errorf("the data plane never asked to be enrolled: %w", err))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := g.owner.ApproveEnrollment(ctx, id, wire.DataPlaneEnrollmentApprove{Organizations: []string{g.orgRef}, Fingerprint: &asked.Fingerprint}); err != nil {
		return fail(fmt.Errorf("enroll the data plane: %w", err))
	}
	if err := warm(ctx, dp.url, g.keys); err != nil {
		return fail(fmt.Errorf("data plane: %w", err))
	}
	return dp, nil
}

// warm sends one request per workspace until it goes through, so the
// measured runs start with the bundle admitted and connections open.
func warm(ctx context.Context, base string, keys map[string]string) error {
	c := newClient(1)
	sink := make([]byte, 32<<10)
	for ws, key := range keys {
		t := target{url: base + "/inf/v1/chat/completions", token: key, body: chatBody("openai/gpt-4o-mini", false)}
		deadline := time.Now().Add(30 * time.Second)
		for {
			err := do(ctx, c, t, sink)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("never served workspace %s: %w", ws, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

const benchPolicies = `[
 {"name":"allow","definition":{"target":{"kind":"workspace"},"rules":[{"match":{"kind":"all_requests"},"action":{"kind":"models","names":["openai/gpt-4o-mini","openai/gpt-4o"]}}]}},
 {"name":"limits","definition":{"target":{"kind":"workspace"},"rules":[{"match":{"kind":"all_requests"},"action":{"kind":"request_limits","max_output_tokens":4096}}]}},
 {"name":"fallback","definition":{"target":{"kind":"workspace"},"rules":[{"match":{"kind":"all_requests"},"action":{"kind":"fallback","models":["openai/gpt-4o"],"on":["rate_limited"],"max_attempts":2,"timeout_ms":30000}}]}},
 {"name":"prices","definition":{"target":{"kind":"workspace"},"rules":[{"match":{"kind":"all_requests"},"action":{"kind":"price_limit","max_input_price_per_mtok":"5.00","max_output_price_per_mtok":"20.00"}}]}},
 {"name":"budget","definition":{"target":{"kind":"workspace"},"rules":[{"match":{"kind":"all_requests"},"action":{"kind":"budget","amount_usd":"1000000.00","period":"day","aggregation":"shared"}}]}}
]`

// benchLimits are every key's rate limits: high enough never to refuse
// a request of the harness, so every request is counted against them.
var benchLimits = &wire.RateLimits{RequestsPerMinute: ptr[int64](100_000_000), TokensPerMinute: ptr[int64](1_000_000_000_000)}

func (g *gwSetup) configure(upstreamURL string, paced map[string]int) error {
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
	var policies []wire.PolicyCreate
	if err := jsonUnmarshal([]byte(benchPolicies), &policies); err != nil {
		return err
	}
	for ws, ms := range paced {
		if ws != "default" {
			if _, err := g.owner.CreateWorkspace(ctx, g.orgRef, wire.WorkspaceCreate{Name: ws}); err != nil {
				return fmt.Errorf("workspace: %w", err)
			}
		}
		base := upstreamURL + "/v1"
		if ms > 0 {
			base = fmt.Sprintf("%s/p%d/v1", upstreamURL, ms)
		}
		if _, err := g.owner.CreateCredential(ctx, client.WorkspaceScope(g.orgRef, ws), wire.ProviderCredentialCreate{
			Provider: "openai", Label: "fake", Secret: "sk-upstream-bench", BaseURL: base}); err != nil {
			return fmt.Errorf("credential: %w", err)
		}
		for _, p := range policies {
			if _, err := g.owner.CreatePolicy(ctx, g.orgRef, ws, p); err != nil {
				return fmt.Errorf("policy %s: %w", p.Name, err)
			}
		}
		k, err := g.owner.CreateInferenceKey(ctx, g.orgRef, ws, wire.InferenceKeyCreate{Name: "bench-" + ws, RateLimits: benchLimits})
		if err != nil {
			return fmt.Errorf("inference key: %w", err)
		}
		g.keys[ws] = k.Token
	}
	// The data plane serves from its compiled bundle; wait until one
	// request per workspace goes through, so the measured runs start warm.
	if err := warm(ctx, g.url, g.keys); err != nil {
		return fmt.Errorf("gw: %w", err)
	}
	// The warm-up requests are metered too; wait until the report counts
	// them, so the harness's own count starts from a settled figure.
	return g.waitUsage(int64(len(g.keys)), 30*time.Second)
}

// waitUsage waits until the usage report counts n requests.
func (g *gwSetup) waitUsage(n int64, within time.Duration) error {
	for deadline := time.Now().Add(within); ; {
		got, err := g.usageRequests()
		if err == nil && got == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the usage report counts %d requests, not %d (%v)", got, n, err)
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
	return chatBodyWith(model, stream, "Hello!")
}

func chatBodyWith(model string, stream bool, user string) []byte {
	s := ""
	if stream {
		s = `,"stream":true`
	}
	return []byte(`{"model":"` + model + `","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"` + user + `"}],"temperature":0.7` + s + `}`)
}

// uniquePrompt makes chat bodies whose user message is prose unique to
// each request (a counter leads it): a gateway sees each conversation's
// messages once, while the fixed "Hello!" is a text whose count gw
// remembers, which hides what counting a prompt costs.
type uniquePrompt struct {
	template []byte
	at       int // where the counter's digits are
	n        atomic.Uint64
}

const (
	promptCounter = "000000000000"
	promptProse   = "Summarize the following notes for the quarterly review, keeping every figure and name. " +
		"The team shipped the billing export in March; latency fell from 240 ms to 95 ms after the cache moved " +
		"next to the database. Open questions: who owns the on-call rota in Q3, and whether the EU region needs " +
		"its own key store. "
)

func newUniquePrompt(model string, stream bool, size int) *uniquePrompt {
	prose := strings.Repeat(promptProse, max(1, size/len(promptProse)))
	body := chatBodyWith(model, stream, promptCounter+" "+prose)
	return &uniquePrompt{template: body, at: bytes.Index(body, []byte(promptCounter))}
}

// next is a new body, its counter one more than the last.
func (u *uniquePrompt) next() []byte {
	b := bytes.Clone(u.template)
	digits := strconv.AppendUint(nil, u.n.Add(1), 10)
	copy(b[u.at+len(promptCounter)-len(digits):], digits)
	return b
}
