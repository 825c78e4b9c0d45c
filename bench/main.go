// Command bench is gw's load harness: it starts a fake OpenAI upstream, a
// bare Go reverse proxy (the baseline) and the real gw binary configured
// with keys, policies and usage metering, each in its own process, then
// drives them from a Go load generator on 127.0.0.1 and prints req/s and
// latency quantiles per system and gw's ratios to the baseline. Systems
// are interleaved round by round so that the noise of a shared machine
// hits all of them.
//
//	go run ./bench                       # the full run (about 3 minutes)
//	go run ./bench -duration 2s -rounds 1 # a quick look
//
// See docs/performance.md for what each figure means.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// config is one harness run.
type config struct {
	Duration    time.Duration // per system, per scenario, per round
	Rounds      int
	Conns       int
	Rate        float64 // open loop, requests per second
	PacedMS     int     // upstream delay of the open-loop scenario
	Chunks      int     // content chunks per streamed answer
	MaxRequests int     // bounds every run, whatever the duration
	Scenarios   []string
	GWBinary    string
	DatabaseURL string
	Usage       usageConfig // the usage scenario, when named
	Out         io.Writer
}

func main() {
	if len(os.Args) > 2 && os.Args[1] == "-role" {
		os.Exit(childMain(os.Args[1:]))
	}
	cfg := config{Out: os.Stdout}
	scenarios, checkpoints := "", ""
	flag.DurationVar(&cfg.Duration, "duration", 5*time.Second, "length of each measured run (one system, one scenario, one round)")
	flag.IntVar(&cfg.Rounds, "rounds", 3, "rounds; each runs every scenario on every system, alternating their order")
	flag.IntVar(&cfg.Conns, "conns", 50, "connections of the closed-loop throughput scenarios")
	flag.Float64Var(&cfg.Rate, "rate", 2000, "requests per second of the open-loop scenario")
	flag.IntVar(&cfg.PacedMS, "paced-ms", 20, "upstream delay (ms) in the open-loop scenario")
	flag.IntVar(&cfg.Chunks, "chunks", 20, "content chunks per streamed answer")
	flag.IntVar(&cfg.MaxRequests, "max-requests", 1_000_000, "upper bound on the requests of one run")
	flag.StringVar(&scenarios, "scenarios", "nonstream,stream,latency,open", "scenarios to run, comma-separated (also: usage)")
	flag.IntVar(&cfg.Usage.Events, "events", 200_000, "usage scenario: events to ingest")
	flag.StringVar(&checkpoints, "report-at", "", "usage scenario: event counts at which to time reports, comma-separated (and at the end)")
	flag.IntVar(&cfg.Usage.Conns, "ingest-conns", 4, "usage scenario: concurrent senders")
	flag.IntVar(&cfg.Usage.Batch, "ingest-batch", 1000, "usage scenario: events per POST (at most 1,000)")
	flag.IntVar(&cfg.Usage.Reps, "report-reps", 10, "usage scenario: calls per report and checkpoint")
	flag.DurationVar(&cfg.Usage.Settle, "settle", 0, "usage scenario: after each checkpoint, time the reports again after this wait (for the roller)")
	flag.DurationVar(&cfg.Usage.Spread, "spread", 35*24*time.Hour, "usage scenario: events occur at random over this span before now")
	flag.StringVar(&cfg.GWBinary, "gw", "", "gw binary to measure (default: build ./cmd/gw)")
	flag.StringVar(&cfg.DatabaseURL, "database-url", "", "PostgreSQL URL for gw (default: SQLite in a temporary directory)")
	flag.Parse()
	cfg.Scenarios = strings.Split(scenarios, ",")
	var err error
	if cfg.Usage.Checkpoint, err = parseCheckpoints(checkpoints, cfg.Usage.Events); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// childMain runs this program as the upstream or the proxy.
func childMain(args []string) int {
	fs := flag.NewFlagSet("role", flag.ExitOnError)
	role := fs.String("role", "", "upstream or proxy")
	target := fs.String("target", "", "proxy: the upstream URL")
	chunks := fs.Int("chunks", 20, "upstream: content chunks per streamed answer")
	_ = fs.Parse(args)
	if err := serveRole(*role, *target, *chunks); err != nil {
		fmt.Fprintln(os.Stderr, "bench", *role+":", err)
		return 1
	}
	return 0
}

func signalNotify(c chan os.Signal) { signal.Notify(c, syscall.SIGTERM, os.Interrupt) }

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// scenario is one measured situation: how load is applied and, per
// system, where it goes.
type scenario struct {
	name, title string
	systems     []target
	conns       int     // closed loop; 0 means open loop
	rate        float64 // open loop
	baseline    string  // the system gw is compared to
}

func run(cfg config) error {
	dir, err := os.MkdirTemp("", "gw-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	up, err := startRole("upstream", "-chunks", fmt.Sprint(cfg.Chunks))
	if err != nil {
		return err
	}
	defer up.stop()
	upURL := "http://" + up.addr
	px, err := startRole("proxy", "-target", upURL)
	if err != nil {
		return err
	}
	defer px.stop()
	proxyURL := "http://" + px.addr

	bin := cfg.GWBinary
	if bin == "" {
		fmt.Fprintln(os.Stderr, "building gw…")
		if bin, err = buildGW(dir); err != nil {
			return err
		}
	}
	g, err := startGW(bin, dir, cfg.DatabaseURL, upURL, cfg.PacedMS)
	if err != nil {
		return err
	}
	defer g.proc.stop()
	before, err := g.usageRequests()
	if err != nil {
		return fmt.Errorf("usage report: %w", err)
	}

	paced := fmt.Sprintf("/p%d", cfg.PacedMS)
	sys := func(name, base, path, token, model string, stream bool) target {
		return target{name: name, url: base + path, token: token, body: chatBody(model, stream)}
	}
	all := map[string]scenario{
		"nonstream": {name: "nonstream", title: fmt.Sprintf("non-streaming, closed loop, %d connections, instant upstream", cfg.Conns),
			conns: cfg.Conns, baseline: "proxy", systems: []target{
				sys("proxy", proxyURL, "/v1/chat/completions", "sk-upstream-bench", "gpt-4o-mini", false),
				sys("gw", g.url, "/inf/v1/chat/completions", g.keys["default"], "openai/gpt-4o-mini", false)}},
		"stream": {name: "stream", title: fmt.Sprintf("streaming (%d chunks), closed loop, %d connections, instant upstream", cfg.Chunks, cfg.Conns),
			conns: cfg.Conns, baseline: "proxy", systems: []target{
				sys("proxy", proxyURL, "/v1/chat/completions", "sk-upstream-bench", "gpt-4o-mini", true),
				sys("gw", g.url, "/inf/v1/chat/completions", g.keys["default"], "openai/gpt-4o-mini", true)}},
		"latency": {name: "latency", title: "non-streaming, closed loop, 1 connection, instant upstream",
			conns: 1, baseline: "direct", systems: []target{
				sys("direct", upURL, "/v1/chat/completions", "sk-upstream-bench", "gpt-4o-mini", false),
				sys("proxy", proxyURL, "/v1/chat/completions", "sk-upstream-bench", "gpt-4o-mini", false),
				sys("gw", g.url, "/inf/v1/chat/completions", g.keys["default"], "openai/gpt-4o-mini", false)}},
		"open": {name: "open", title: fmt.Sprintf("non-streaming, open loop at %.0f req/s, upstream answers after %d ms", cfg.Rate, cfg.PacedMS),
			rate: cfg.Rate, baseline: "direct", systems: []target{
				sys("direct", upURL, paced+"/v1/chat/completions", "sk-upstream-bench", "gpt-4o-mini", false),
				sys("proxy", proxyURL, paced+"/v1/chat/completions", "sk-upstream-bench", "gpt-4o-mini", false),
				sys("gw", g.url, "/inf/v1/chat/completions", g.keys["paced"], "openai/gpt-4o-mini", false)}},
	}
	var chosen []scenario
	usage := false
	for _, name := range cfg.Scenarios {
		if strings.TrimSpace(name) == "usage" {
			usage = true
			continue
		}
		s, ok := all[strings.TrimSpace(name)]
		if !ok {
			return fmt.Errorf("unknown scenario %q (nonstream, stream, latency, open, usage)", name)
		}
		chosen = append(chosen, s)
	}

	// One client (connection pool) per system, reused across rounds.
	clients := map[string]*clientSet{}
	results := map[string]map[string]*sample{}
	sent := 0
	for _, s := range chosen {
		results[s.name] = map[string]*sample{}
		for _, t := range s.systems {
			results[s.name][t.name] = &sample{}
			if clients[t.name] == nil {
				clients[t.name] = &clientSet{}
			}
		}
	}
	printMachine(cfg)
	for round := range cfg.Rounds {
		for _, s := range chosen {
			order := append([]target(nil), s.systems...)
			if round%2 == 1 {
				for i, j := 0, len(order)-1; i < j; i, j = i+1, j-1 {
					order[i], order[j] = order[j], order[i]
				}
			}
			for _, t := range order {
				c := clients[t.name].get(s)
				var r sample
				if s.conns > 0 {
					r = closedLoop(c, t, s.conns, cfg.Duration, cfg.MaxRequests)
				} else {
					r = openLoop(c, t, s.rate, cfg.Duration, 4096)
				}
				if t.name == "gw" {
					sent += r.ok + r.failed
				}
				fmt.Fprintf(os.Stderr, "round %d %-9s %-6s %8.0f req/s  p50 %s  p99 %s  (%d failed)\n",
					round+1, s.name, t.name, r.rps(), ms(r.quantile(0.50)), ms(r.quantile(0.99)), r.failed)
				if r.firstErr != nil {
					fmt.Fprintf(os.Stderr, "  first failure: %v\n", r.firstErr)
				}
				results[s.name][t.name].add(r)
			}
		}
	}
	for _, s := range chosen {
		report(cfg.Out, s, results[s.name])
	}
	// Usage is part of the work: every request gw answered must be in
	// the report once the sink has flushed (it does every second).
	time.Sleep(2 * time.Second)
	after, err := g.usageRequests()
	if err != nil {
		return fmt.Errorf("usage report: %w", err)
	}
	fmt.Fprintf(cfg.Out, "\nusage: gw's report counts %d requests of the %d the harness sent to it\n", after-before, sent)
	if int(after-before) != sent {
		return fmt.Errorf("usage events missing: %d requests, %d counted", sent, after-before)
	}
	if usage {
		return runUsage(cfg.Out, g, cfg.Usage)
	}
	return nil
}

// clientSet keeps a client per concurrency, so every scenario opens its
// connections once.
type clientSet struct{ m map[int]*clientEntry }

type clientEntry struct{ c *http.Client }

func (cs *clientSet) get(s scenario) *http.Client {
	n := s.conns
	if n == 0 {
		n = 4096
	}
	if cs.m == nil {
		cs.m = map[int]*clientEntry{}
	}
	if e, ok := cs.m[n]; ok {
		return e.c
	}
	c := newClient(n)
	cs.m[n] = &clientEntry{c: c}
	return c
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/1e6) }

// report prints one scenario as a Markdown table and gw's ratios.
func report(w io.Writer, s scenario, res map[string]*sample) {
	fmt.Fprintf(w, "\n### %s\n\n", s.title)
	fmt.Fprintln(w, "| system | requests | failed | req/s | p50 | p99 | p99.9 |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|")
	for _, t := range s.systems {
		r := res[t.name]
		fmt.Fprintf(w, "| %s | %d | %d | %.0f | %s | %s | %s |\n", t.name, r.ok, r.failed, r.rps(),
			ms(r.quantile(0.50)), ms(r.quantile(0.99)), ms(r.quantile(0.999)))
	}
	gw, base := res["gw"], res[s.baseline]
	fmt.Fprintln(w)
	if s.conns > 1 {
		fmt.Fprintf(w, "gw / %s req/s: **%.2f×**\n", s.baseline, gw.rps()/base.rps())
		return
	}
	for _, t := range s.systems {
		if t.name == s.baseline {
			continue
		}
		r := res[t.name]
		fmt.Fprintf(w, "%s adds over %s: p50 %+.3f ms, p99 %+.3f ms\n", t.name, s.baseline,
			float64(r.quantile(0.50)-base.quantile(0.50))/1e6, float64(r.quantile(0.99)-base.quantile(0.99))/1e6)
	}
	if px := res["proxy"]; px != nil {
		fmt.Fprintf(w, "gw adds over proxy: p50 %+.3f ms, p99 %+.3f ms\n",
			float64(gw.quantile(0.50)-px.quantile(0.50))/1e6, float64(gw.quantile(0.99)-px.quantile(0.99))/1e6)
	}
}

func printMachine(cfg config) {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "model name") {
				_, model, _ = strings.Cut(line, ": ")
				break
			}
		}
	}
	db := "SQLite"
	if cfg.DatabaseURL != "" {
		db = "PostgreSQL"
	}
	fmt.Fprintf(cfg.Out, "machine: %s, %d CPUs, %s/%s, %s; gw on %s; %d rounds of %s per system and scenario\n",
		model, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), db, cfg.Rounds, cfg.Duration)
}
