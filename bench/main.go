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
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// config is one harness run.
type config struct {
	Duration time.Duration // per system, per scenario, per round
	Rounds   int
	Conns    int
	Rate     float64 // open loop, requests per second
	PacedMS  int     // upstream delay of the open-loop scenario
	Chunks   int     // content chunks per streamed answer
	// PromptBytes, when set, makes each chat request's user message
	// prose of about that many bytes, unique to the request (uniquePrompt).
	PromptBytes int
	MaxRequests int // bounds every run, whatever the duration
	Scenarios   []string
	// Systems are the gw configurations measured beside the baselines:
	// gw (all-in-one) and dataplane (a remote data plane of that gw).
	Systems    []string
	SweepConns []int // the latency sweep's connection counts
	SweepMS    int   // the sweep's fixed upstream latency
	// SweepDuration is the length of each sweep run: at one connection and
	// 50 ms a run of d has d/50ms requests, and a p99 needs hundreds.
	SweepDuration time.Duration
	// CPUSettle is how long after a gw system's run its processes' CPU
	// time is read, so that the run is charged the usage it wrote.
	CPUSettle time.Duration
	Pprof     bool // gw processes serve pprof on their metrics address
	TraceDir  string
	// CPUProfiles, when set, is the directory each process's CPU profile
	// of each run goes to (cpuprofile.go).
	CPUProfiles string
	GWEnv       []string // extra environment of the gw processes (GOGC=…)
	GWBinary    string
	DatabaseURL string
	Usage       usageConfig // the usage scenario, when named
	Out         io.Writer
}

func main() {
	if len(os.Args) > 2 && os.Args[1] == "-role" {
		os.Exit(childMain(os.Args[1:]))
	}
	os.Exit(benchMain())
}

// benchMain is main for the measuring run, returning the exit status:
// 2 for flags that do not parse, 1 for a run that fails.
func benchMain() int {
	cfg := config{Out: os.Stdout}
	var raw textFlags
	defineFlags(&cfg, &raw)
	flag.Parse()
	if raw.attributeOf != "" {
		if err := attributeDir(os.Stdout, raw.attributeOf); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		return 0
	}
	if err := raw.apply(&cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	return 0
}

// textFlags are the flags given as text that config holds parsed, so
// they can only be read once flag.Parse has run.
type textFlags struct {
	scenarios, checkpoints, systems, sweep, gwEnv, attributeOf string
}

// defineFlags registers the harness's flags on the command line's flag set.
func defineFlags(cfg *config, raw *textFlags) {
	flag.DurationVar(&cfg.Duration, "duration", 5*time.Second, "length of each measured run (one system, one scenario, one round)")
	flag.IntVar(&cfg.Rounds, "rounds", 3, "rounds; each runs every scenario on every system, alternating their order")
	flag.IntVar(&cfg.Conns, "conns", 50, "connections of the closed-loop throughput scenarios")
	flag.Float64Var(&cfg.Rate, "rate", 2000, "requests per second of the open-loop scenario")
	flag.IntVar(&cfg.PacedMS, "paced-ms", 20, "upstream delay (ms) in the open-loop scenario")
	flag.IntVar(&cfg.Chunks, "chunks", 20, "content chunks per streamed answer")
	flag.IntVar(&cfg.PromptBytes, "prompt-bytes", 0, "make each chat request's user message unique prose of about this many bytes (default: the same short message every time)")
	flag.IntVar(&cfg.MaxRequests, "max-requests", 1_000_000, "upper bound on the requests of one run")
	flag.StringVar(&raw.scenarios, "scenarios", "nonstream,stream,latency,open", "scenarios to run, comma-separated (also: sweep, usage)")
	flag.StringVar(&raw.systems, "systems", "gw", "gw systems to measure beside the baselines, comma-separated: gw (all-in-one), dataplane (a remote data plane of that gw)")
	flag.StringVar(&raw.sweep, "sweep-conns", "1,4,16,64", "sweep scenario: connection counts")
	flag.IntVar(&cfg.SweepMS, "sweep-ms", 50, "sweep scenario: the upstream's fixed latency (ms)")
	flag.DurationVar(&cfg.SweepDuration, "sweep-duration", 10*time.Second, "sweep scenario: length of each run (1 connection at 50 ms makes 20 requests a second)")
	flag.DurationVar(&cfg.CPUSettle, "cpu-settle", 1500*time.Millisecond, "after each gw system's run, wait this long before reading its processes' CPU time (its usage is written within a second)")
	flag.BoolVar(&cfg.Pprof, "pprof", false, "run gw with --pprof (on its metrics address, printed at start)")
	flag.StringVar(&raw.gwEnv, "gw-env", "", "extra environment of the gw processes, comma-separated K=V (e.g. GOGC=200,GOMEMLIMIT=512MiB)")
	flag.StringVar(&raw.attributeOf, "attribute", "", "measure nothing: attribute the requests above p99 of each trace in this -trace-dir to their causes")
	flag.StringVar(&cfg.CPUProfiles, "cpu-profiles", "", "CPU-profile every process of each run (the proxy, gw, a data plane and its control plane) into this directory, and report where each system's µs a request go beside the proxy's (implies -pprof; profiling costs each process a little)")
	flag.StringVar(&cfg.TraceDir, "trace-dir", "", "write a runtime/trace of each gw system's latency (1-connection) run, and its requests' times, to this directory (implies -pprof)")
	flag.IntVar(&cfg.Usage.Events, "events", 200_000, "usage scenario: events to ingest")
	flag.StringVar(&raw.checkpoints, "report-at", "", "usage scenario: event counts at which to time reports, comma-separated (and at the end)")
	flag.IntVar(&cfg.Usage.Conns, "ingest-conns", 4, "usage scenario: concurrent senders")
	flag.IntVar(&cfg.Usage.Batch, "ingest-batch", 1000, "usage scenario: events per POST (at most 1,000)")
	flag.IntVar(&cfg.Usage.Reps, "report-reps", 10, "usage scenario: calls per report and checkpoint")
	flag.DurationVar(&cfg.Usage.Settle, "settle", 0, "usage scenario: after each checkpoint, time the reports again after this wait (for the roller)")
	flag.DurationVar(&cfg.Usage.Spread, "spread", 35*24*time.Hour, "usage scenario: events occur at random over this span before now")
	flag.StringVar(&cfg.GWBinary, "gw", "", "gw binary to measure (default: build ./cmd/gw)")
	flag.StringVar(&cfg.DatabaseURL, "database-url", "", "PostgreSQL URL for gw (default: SQLite in a temporary directory)")
}

// apply parses the text flags into cfg; the usage checkpoints need
// cfg.Usage.Events, so cfg must hold the other flags already.
func (raw textFlags) apply(cfg *config) error {
	cfg.Scenarios = strings.Split(raw.scenarios, ",")
	cfg.Systems = strings.Split(raw.systems, ",")
	if raw.gwEnv != "" {
		cfg.GWEnv = strings.Split(raw.gwEnv, ",")
	}
	var err error
	if cfg.SweepConns, err = parseInts(raw.sweep); err != nil {
		return fmt.Errorf("-sweep-conns: %w", err)
	}
	if cfg.Usage.Checkpoint, err = parseCheckpoints(raw.checkpoints, cfg.Usage.Events); err != nil {
		return err
	}
	return nil
}

// childMain runs this program as the upstream or the proxy.
func childMain(args []string) int {
	fs := flag.NewFlagSet("role", flag.ExitOnError)
	role := fs.String("role", "", "upstream or proxy")
	target := fs.String("target", "", "proxy: the upstream URL")
	chunks := fs.Int("chunks", 20, "upstream: content chunks per streamed answer")
	pprof := fs.Bool("pprof", false, "proxy: serve pprof on a listener of its own")
	_ = fs.Parse(args)
	if err := serveRole(*role, *target, *chunks, *pprof); err != nil {
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
	added       bool    // report added latency over the baseline, not req/s
}

// run starts the systems, measures the chosen scenarios round by round,
// reports them and checks that gw metered every request it answered.
func run(cfg config) error {
	h := &harness{cfg: cfg}
	defer h.close()
	if err := h.start(); err != nil {
		return err
	}
	before, err := h.g.usageRequests()
	if err != nil {
		return fmt.Errorf("usage report: %w", err)
	}
	chosen, usage, err := h.choose()
	if err != nil {
		return err
	}
	m := newMeasurement(chosen)
	printMachine(h.cfg)
	for round := range h.cfg.Rounds {
		if err := h.runRound(m, chosen, round); err != nil {
			return err
		}
	}
	if len(chosen) > 0 {
		reportAll(h.cfg.Out, chosen, m.results, h.procsOf)
		if err := reportCPUParts(h.cfg.Out, chosen, m.results); err != nil {
			return err
		}
	}
	if h.mcp != nil {
		mcpResults := map[int]map[string]*sample{}
		sent, err := h.runMCP(mcpResults)
		if err != nil {
			return err
		}
		m.sent += sent
		h.reportMCP(h.cfg.Out, mcpResults)
	}
	if err := h.checkUsage(before, m.sent); err != nil {
		return err
	}
	if usage {
		return runUsage(h.cfg.Out, h.g, h.cfg.Usage)
	}
	return nil
}

// harness is one run's processes: the upstream, the baseline proxy and
// the gw systems, and what stops them.
type harness struct {
	cfg             config
	dir, bin        string // the temporary directory, the gw binary
	upURL, proxyURL string
	g               *gwSetup
	gws, metricsOf  map[string]string // gw system → its base URL, its metrics address
	// procsOf is, per system, the processes its runs are charged the CPU
	// time of: the proxy's; gw's; a remote data plane's and its control
	// plane's (which ingests what it ships).
	procsOf map[string][]proc
	stops   []func()
	// mcp is the MCP scenario's setup, when -scenarios names mcp.
	mcp *mcpSetup
}

// close stops the processes in the reverse order of their start, as a
// chain of defers would, and removes the temporary directory last.
func (h *harness) close() {
	for i := len(h.stops) - 1; i >= 0; i-- {
		h.stops[i]()
	}
}

func (h *harness) start() error {
	dir, err := os.MkdirTemp("", "gw-bench-")
	if err != nil {
		return err
	}
	h.dir = dir
	h.stops = append(h.stops, func() { os.RemoveAll(dir) })
	if err := h.startBaselines(); err != nil {
		return err
	}
	if err := h.startGW(); err != nil {
		return err
	}
	if err := h.startSystems(); err != nil {
		return err
	}
	if slices.ContainsFunc(h.cfg.Scenarios, func(s string) bool { return strings.TrimSpace(s) == "mcp" }) {
		if err := h.startMCP(); err != nil {
			return err
		}
	}
	return h.warmedUp()
}

// startBaselines starts the fake upstream and the bare proxy in front of it.
func (h *harness) startBaselines() error {
	up, err := startRole("upstream", "-chunks", fmt.Sprint(h.cfg.Chunks))
	if err != nil {
		return err
	}
	h.stops = append(h.stops, up.stop)
	h.upURL = "http://" + up.addr
	args := []string{"-target", h.upURL}
	if h.cfg.CPUProfiles != "" {
		args = append(args, "-pprof")
	}
	px, err := startRole("proxy", args...)
	if err != nil {
		return err
	}
	h.stops = append(h.stops, px.stop)
	h.proxyURL = "http://" + px.addr
	h.procsOf = map[string][]proc{"proxy": {{label: "proxy", pid: px.cmd.Process.Pid, pprof: pprofAddr(px)}}}
	return nil
}

// startGW builds gw unless given a binary, and starts and configures it.
func (h *harness) startGW() error {
	bin := h.cfg.GWBinary
	if bin == "" {
		fmt.Fprintln(os.Stderr, "building gw…")
		var err error
		if bin, err = buildGW(h.dir); err != nil {
			return err
		}
	}
	h.bin = bin
	// A trace and a profile are fetched through gw's pprof endpoint.
	for _, dir := range []string{h.cfg.TraceDir, h.cfg.CPUProfiles} {
		if dir != "" {
			h.cfg.Pprof = true
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
	}
	paced := map[string]int{"default": 0, "paced": h.cfg.PacedMS, "sweep": h.cfg.SweepMS}
	g, err := startGW(bin, filepath.Join(h.dir, "gw-data"), h.cfg.DatabaseURL, h.upURL, paced, h.cfg.Pprof, h.cfg.GWEnv)
	if err != nil {
		return err
	}
	h.stops = append(h.stops, g.proc.stop)
	h.g = g
	return nil
}

// startSystems makes the gw systems named in -systems measurable,
// starting a data plane of gw when asked for one.
func (h *harness) startSystems() error {
	h.gws, h.metricsOf = map[string]string{}, map[string]string{}
	for _, name := range h.cfg.Systems {
		switch strings.TrimSpace(name) {
		case "gw":
			h.gws["gw"], h.metricsOf["gw"] = h.g.url, h.g.metrics
			h.procsOf["gw"] = []proc{h.gwProc("gw", h.g.proc, h.g.metrics)}
		case "dataplane":
			dp, err := startDataPlane(h.bin, filepath.Join(h.dir, "dataplane-data"), h.g, h.cfg.Pprof, h.cfg.GWEnv)
			if err != nil {
				return err
			}
			h.stops = append(h.stops, dp.proc.stop)
			h.gws["dataplane"], h.metricsOf["dataplane"] = dp.url, dp.metrics
			h.procsOf["dataplane"] = []proc{h.gwProc("dataplane", dp.proc, dp.metrics), h.gwProc("control plane", h.g.proc, h.g.metrics)}
		default:
			return fmt.Errorf("unknown system %q (gw, dataplane)", name)
		}
	}
	return nil
}

// gwProc is a gw process as a system's: profiled through its metrics
// listener when -cpu-profiles asks.
func (h *harness) gwProc(label string, c *child, metrics string) proc {
	p := proc{label: label, pid: c.cmd.Process.Pid}
	if h.cfg.CPUProfiles != "" {
		p.pprof = metrics
	}
	return p
}

// warmedUp waits for the warm-up requests of every gw system to be
// metered (a data plane's through its spool), so that counting starts
// after them.
func (h *harness) warmedUp() error {
	warmed := int64(len(h.g.keys))
	if _, ok := h.gws["dataplane"]; ok {
		warmed *= 2
	}
	if h.mcp != nil {
		warmed += h.mcp.warmed
	}
	if err := h.g.waitUsage(warmed, time.Minute); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	if h.cfg.Pprof {
		for name, addr := range h.metricsOf {
			fmt.Fprintf(os.Stderr, "%s: pprof on http://%s/debug/pprof/\n", name, addr)
		}
	}
	return nil
}

func newTarget(name, base, path, token, model string, stream bool, promptBytes int) target {
	t := target{name: name, url: base + path, token: token, body: chatBody(model, stream)}
	if promptBytes > 0 {
		t.unique = newUniquePrompt(model, stream, promptBytes)
	}
	return t
}

// baseline is a target that bypasses gw: direct (the upstream itself) or
// proxy, under the upstream's pacing prefix.
func (h *harness) baseline(name, prefix string, stream bool) target {
	base := h.upURL
	if name == "proxy" {
		base = h.proxyURL
	}
	return newTarget(name, base, prefix+"/v1/chat/completions", "sk-upstream-bench", "gpt-4o-mini", stream, h.cfg.PromptBytes)
}

// withGW is the baselines and then every gw system, on workspace ws.
func (h *harness) withGW(ws string, stream bool, base ...target) []target {
	for _, name := range []string{"gw", "dataplane"} {
		if u, ok := h.gws[name]; ok {
			base = append(base, newTarget(name, u, "/inf/v1/chat/completions", h.g.keys[ws], "openai/gpt-4o-mini", stream, h.cfg.PromptBytes))
		}
	}
	return base
}

// scenarios is every scenario by name, and the names of the sweep's in
// the order of -sweep-conns.
func (h *harness) scenarios() (map[string]scenario, []string) {
	cfg := h.cfg
	paced := fmt.Sprintf("/p%d", cfg.PacedMS)
	all := map[string]scenario{
		"nonstream": {name: "nonstream", title: fmt.Sprintf("non-streaming, closed loop, %d connections, instant upstream", cfg.Conns),
			conns: cfg.Conns, baseline: "proxy", systems: h.withGW("default", false, h.baseline("proxy", "", false))},
		"stream": {name: "stream", title: fmt.Sprintf("streaming (%d chunks), closed loop, %d connections, instant upstream", cfg.Chunks, cfg.Conns),
			conns: cfg.Conns, baseline: "proxy", systems: h.withGW("default", true, h.baseline("proxy", "", true))},
		"latency": {name: "latency", title: "non-streaming, closed loop, 1 connection, instant upstream",
			conns: 1, baseline: "direct", systems: h.withGW("default", false, h.baseline("direct", "", false), h.baseline("proxy", "", false))},
		"open": {name: "open", title: fmt.Sprintf("non-streaming, open loop at %.0f req/s, upstream answers after %d ms", cfg.Rate, cfg.PacedMS),
			rate: cfg.Rate, baseline: "direct", systems: h.withGW("paced", false, h.baseline("direct", paced, false), h.baseline("proxy", paced, false))},
	}
	swept := fmt.Sprintf("/p%d", cfg.SweepMS)
	var sweepNames []string
	for _, n := range cfg.SweepConns {
		name := fmt.Sprintf("sweep-%d", n)
		sweepNames = append(sweepNames, name)
		all[name] = scenario{name: name, title: fmt.Sprintf("latency sweep: non-streaming, closed loop, %d connections, upstream answers after %d ms", n, cfg.SweepMS),
			conns: n, baseline: "direct", added: true, systems: h.withGW("sweep", false, h.baseline("direct", swept, false), h.baseline("proxy", swept, false))}
	}
	return all, sweepNames
}

// choose is the scenarios -scenarios names, in its order; usage is not
// measured round by round, so it comes back apart.
func (h *harness) choose() (chosen []scenario, usage bool, err error) {
	all, sweepNames := h.scenarios()
	for _, name := range h.cfg.Scenarios {
		switch strings.TrimSpace(name) {
		case "usage":
			usage = true
		case "mcp":
			// Measured after the rounds (runMCP), on its own targets.
		case "sweep":
			for _, n := range sweepNames {
				chosen = append(chosen, all[n])
			}
		default:
			s, ok := all[strings.TrimSpace(name)]
			if !ok {
				return nil, false, fmt.Errorf("unknown scenario %q (nonstream, stream, latency, open, sweep, usage, mcp)", name)
			}
			chosen = append(chosen, s)
		}
	}
	return chosen, usage, nil
}

// measurement is what the rounds add up: per scenario and system, the
// merged samples, and the requests sent to gw systems (to find them all in
// its usage report).
type measurement struct {
	clients map[string]*clientSet // one connection pool per system, reused across rounds
	results map[string]map[string]*sample
	sent    int
}

func newMeasurement(chosen []scenario) *measurement {
	m := &measurement{clients: map[string]*clientSet{}, results: map[string]map[string]*sample{}}
	for _, s := range chosen {
		m.results[s.name] = map[string]*sample{}
		for _, t := range s.systems {
			m.results[s.name][t.name] = &sample{}
			if m.clients[t.name] == nil {
				m.clients[t.name] = &clientSet{}
			}
		}
	}
	return m
}

// runRound runs every scenario on every system; odd rounds reverse the
// order of the systems so that neither always runs first.
func (h *harness) runRound(m *measurement, chosen []scenario, round int) error {
	for _, s := range chosen {
		order := slices.Clone(s.systems)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, t := range order {
			r, err := h.measure(m.clients[t.name].get(s), s, t, round)
			if err != nil {
				return err
			}
			if _, isGW := h.gws[t.name]; isGW {
				m.sent += r.ok + r.failed
			}
			logRun(round, s, t, r)
			m.results[s.name][t.name].add(r)
		}
	}
	return nil
}

// measure runs one scenario on one system, traced when -trace-dir asks
// for the gw systems' 1-connection runs.
func (h *harness) measure(c *http.Client, s scenario, t target, round int) (sample, error) {
	var traced chan error
	if _, isGW := h.gws[t.name]; isGW && h.cfg.TraceDir != "" && s.name == "latency" {
		t.timed = true
		traced = make(chan error, 1)
		go func() {
			traced <- fetchTrace(h.metricsOf[t.name], h.cfg.Duration, h.traceFile(t, round, "trace"))
		}()
	}
	procs := h.procsOf[t.name]
	_, isGW := h.gws[t.name]
	var profiled func() (map[string]string, error)
	if h.cfg.CPUProfiles != "" {
		// Over the run and, for gw, the settling after it, as the CPU
		// time is read.
		d := h.runDuration(s)
		if isGW {
			d += h.cfg.CPUSettle
		}
		profiled = h.startProfiles(s, t, round, d)
	}
	before := cpuOf(procs)
	r := h.load(c, s, t)
	if isGW && h.cfg.CPUSettle > 0 {
		// Usage is written after the answers (gw's sink flushes every
		// second, a data plane ships every second): the run is charged
		// the writing of its own events.
		time.Sleep(h.cfg.CPUSettle)
	}
	r.cpu = cpuSpent(before, cpuOf(procs))
	if profiled != nil {
		files, err := profiled()
		if err != nil {
			return r, err
		}
		r.profiles = map[string][]string{}
		for label, f := range files {
			r.profiles[label] = []string{f}
		}
	}
	if traced == nil {
		return r, nil
	}
	if err := <-traced; err != nil {
		return r, err
	}
	return r, writeTimed(h.traceFile(t, round, "requests"), r.timed)
}

func (h *harness) traceFile(t target, round int, ext string) string {
	return filepath.Join(h.cfg.TraceDir, fmt.Sprintf("%s-round%d.%s", t.name, round+1, ext))
}

// load applies the scenario's load to t: closed loop for a number of
// connections, or open loop at a rate.
func (h *harness) load(c *http.Client, s scenario, t target) sample {
	if s.conns == 0 {
		return openLoop(c, t, s.rate, h.runDuration(s), 4096)
	}
	return closedLoop(c, t, s.conns, h.runDuration(s), h.cfg.MaxRequests)
}

// runDuration is how long one run of s lasts.
func (h *harness) runDuration(s scenario) time.Duration {
	if s.added && h.cfg.SweepDuration > 0 {
		return h.cfg.SweepDuration
	}
	return h.cfg.Duration
}

// logRun shows progress on stderr, so that a long run can be watched.
func logRun(round int, s scenario, t target, r sample) {
	fmt.Fprintf(os.Stderr, "round %d %-9s %-6s %8.0f req/s  p50 %s  p99 %s  (%d failed)\n",
		round+1, s.name, t.name, r.rps(), ms(r.quantile(0.50)), ms(r.quantile(0.99)), r.failed)
	if r.firstErr != nil {
		fmt.Fprintf(os.Stderr, "  first failure: %v\n", r.firstErr)
	}
}

// reportAll prints every scenario, then the sweep's runs as one table.
func reportAll(w io.Writer, chosen []scenario, results map[string]map[string]*sample, procsOf map[string][]proc) {
	reportCPU(w, chosen, results, procsOf)
	var sweeps []scenario
	for _, s := range chosen {
		report(w, s, results[s.name])
		if s.added {
			sweeps = append(sweeps, s)
		}
	}
	if len(sweeps) > 0 {
		reportSweep(w, sweeps, results)
	}
}

// checkUsage holds usage to be part of the work: every request gw
// answered must be in the report once the sink has flushed (it does every
// second) and the data plane's spool has reached the control plane.
func (h *harness) checkUsage(before int64, sent int) error {
	werr := h.g.waitUsage(before+int64(sent), time.Minute)
	after, err := h.g.usageRequests()
	if err != nil {
		return fmt.Errorf("usage report: %w", err)
	}
	fmt.Fprintf(h.cfg.Out, "\nusage: gw's report counts %d requests of the %d the harness sent to it\n", after-before, sent)
	if werr != nil {
		return fmt.Errorf("usage events missing: %d requests, %d counted", sent, after-before)
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
	base := res[s.baseline]
	fmt.Fprintln(w)
	if s.added {
		for _, t := range s.systems {
			if t.name == s.baseline {
				continue
			}
			r := res[t.name]
			fmt.Fprintf(w, "%s adds over %s: p50 %+.3f ms, p99 %+.3f ms, p99.9 %+.3f ms\n", t.name, s.baseline,
				added(r, base, 0.50), added(r, base, 0.99), added(r, base, 0.999))
		}
		return
	}
	if s.conns > 1 {
		for _, t := range s.systems {
			if t.name != s.baseline {
				fmt.Fprintf(w, "%s / %s req/s: **%.2f×**\n", t.name, s.baseline, res[t.name].rps()/base.rps())
			}
		}
		return
	}
	for _, t := range s.systems {
		if t.name == s.baseline {
			continue
		}
		r := res[t.name]
		fmt.Fprintf(w, "%s adds over %s: p50 %+.3f ms, p99 %+.3f ms\n", t.name, s.baseline, added(r, base, 0.50), added(r, base, 0.99))
	}
	if px := res["proxy"]; px != nil {
		for _, t := range s.systems {
			if t.name != s.baseline && t.name != "proxy" {
				r := res[t.name]
				fmt.Fprintf(w, "%s adds over proxy: p50 %+.3f ms, p99 %+.3f ms\n", t.name, added(r, px, 0.50), added(r, px, 0.99))
			}
		}
	}
}

// reportCPU prints the first figure: per scenario and system, each
// process's CPU µs per request, and the system's total as a multiple of
// the proxy's in the same run, beside req/s (and its ratio to the proxy)
// and p50 / p99.
func reportCPU(w io.Writer, chosen []scenario, results map[string]map[string]*sample, procsOf map[string][]proc) {
	fmt.Fprintf(w, "\n### CPU per request (each process's utime + stime over its runs ÷ requests served)\n\n")
	fmt.Fprintln(w, "| scenario | system | CPU µs / request | CPU × proxy | req/s | req/s × proxy | p50 | p99 |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|")
	for _, s := range chosen {
		res := results[s.name]
		px := res["proxy"]
		for _, t := range s.systems {
			procs := procsOf[t.name]
			if len(procs) == 0 {
				continue // direct: the upstream is every system's, not this one's
			}
			r := res[t.name]
			cpu, cpuRatio, rpsRatio := cpuCell(r, procs), "—", "—"
			if px != nil {
				if base := px.cpuTotalPerRequest(procsOf["proxy"]); base > 0 {
					cpuRatio = fmt.Sprintf("**%.2f×**", r.cpuTotalPerRequest(procs)/base)
				}
				if px.rps() > 0 {
					rpsRatio = fmt.Sprintf("%.2f×", r.rps()/px.rps())
				}
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %.0f | %s | %s | %s |\n", s.name, t.name, cpu, cpuRatio, r.rps(), rpsRatio,
				ms(r.quantile(0.50)), ms(r.quantile(0.99)))
		}
	}
}

// cpuCell is a system's CPU µs per request, with each process's share
// when it has more than one.
func cpuCell(r *sample, procs []proc) string {
	out := fmt.Sprintf("%.1f", r.cpuTotalPerRequest(procs))
	if len(procs) > 1 {
		parts := make([]string, len(procs))
		for i, p := range procs {
			parts[i] = fmt.Sprintf("%s %.1f", p.label, r.cpuPerRequest(p.label))
		}
		out += " (" + strings.Join(parts, " + ") + ")"
	}
	return out
}

// added is what r adds over base at quantile q, in ms.
func added(r, base *sample, q float64) float64 {
	return float64(r.quantile(q)-base.quantile(q)) / 1e6
}

// reportSweep prints the latency sweep as one table: per connection count
// and system, the latency added over direct at p50, p99 and p99.9, and the
// gw systems' added p99 as a multiple of the bare proxy's.
func reportSweep(w io.Writer, sweeps []scenario, results map[string]map[string]*sample) {
	fmt.Fprintf(w, "\n### latency sweep: added over direct (ms)\n\n")
	fmt.Fprintln(w, "| connections | system | requests | added p50 | added p99 | added p99.9 | added p99 / proxy's |")
	fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|---:|")
	for _, s := range sweeps {
		res := results[s.name]
		base, px := res[s.baseline], res["proxy"]
		for _, t := range s.systems {
			if t.name == s.baseline {
				continue
			}
			r := res[t.name]
			ratio := "1"
			if t.name != "proxy" && px != nil {
				// A noisy baseline can make the proxy's added p99 nothing or
				// less; a multiple of it means nothing then.
				ratio = "—"
				if pa := added(px, base, 0.99); pa > 0 {
					ratio = fmt.Sprintf("%.1f×", added(r, base, 0.99)/pa)
				}
			}
			fmt.Fprintf(w, "| %d | %s | %d | %+.3f | %+.3f | %+.3f | %s |\n", s.conns, t.name, r.ok,
				added(r, base, 0.50), added(r, base, 0.99), added(r, base, 0.999), ratio)
		}
	}
}

// fetchTrace records a runtime/trace of a gw process for d through its
// pprof endpoint into file.
func fetchTrace(metricsAddr string, d time.Duration, file string) error {
	if err := fetchPprof(fmt.Sprintf("http://%s/debug/pprof/trace?seconds=%g", metricsAddr, d.Seconds()), file); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	return nil
}

// fetchPprof writes what a pprof endpoint answers at url into file.
func fetchPprof(url, file string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeTimed writes a timed run's requests, one "start_unix_ns latency_ns"
// line each, for a trace's attribution.
func writeTimed(file string, reqs []timedRequest) error {
	var b strings.Builder
	for _, r := range reqs {
		fmt.Fprintf(&b, "%d %d\n", r.Start, r.Latency.Nanoseconds())
	}
	return os.WriteFile(file, []byte(b.String()), 0o644)
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive count", f)
		}
		out = append(out, n)
	}
	return out, nil
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
