package main

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// attributeDir attributes the requests above p99 of every traced run in
// dir (-trace-dir) to their causes, from gw's runtime/trace as
// `go tool trace -d=parsed` prints it and the harness's request times:
// for each slow request, what ran in gw's process during its window.
func attributeDir(w io.Writer, dir string) error {
	traces, err := filepath.Glob(filepath.Join(dir, "*.trace"))
	if err != nil || len(traces) == 0 {
		return fmt.Errorf("no traces in %s (%v)", dir, err)
	}
	for _, tr := range traces {
		reqs := strings.TrimSuffix(tr, ".trace") + ".requests"
		fmt.Fprintf(w, "\n#### %s\n\n", filepath.Base(tr))
		if err := attribute(w, tr, reqs); err != nil {
			return fmt.Errorf("%s: %w", tr, err)
		}
	}
	return nil
}

type interval struct{ start, end int64 }

func overlap(ivs []interval, a, b int64) int64 {
	var sum int64
	for _, iv := range ivs {
		if iv.start < b && iv.end > a {
			sum += min(iv.end, b) - max(iv.start, a)
		}
	}
	return sum
}

// goroutineTags name the goroutines of gw's background work by a frame of
// their stacks. The request goroutines are not tagged: at one connection
// one goroutine serves every request of the connection.
var goroutineTags = []struct{ frame, tag string }{
	{"usage.(*StoreSink).loop", "usage writer"}, {"usage.(*StoreSink).Flush", "usage writer"},
	{"usage.RunRoller", "usage writer"}, {"spool.(*Spool).Run", "spool shipper"}, {"spool.(*Spool).Ship", "spool shipper"},
	{"telemetry.(*LogWriter).loop", "log writer"}, {"runtime.gcBgMarkWorker", "gc worker"},
}

var (
	traceHeader = regexp.MustCompile(`^M=-?\d+ P=-?\d+ G=(-?\d+) (\w+) Time=(\d+)(.*)$`)
	syncClock   = regexp.MustCompile(`Trace=(\d+) Mono=\d+ Wall=(\S+)`)
	rangeName   = regexp.MustCompile(`Name="([^"]*)"(?: Scope=(\S+))?`)
	transition  = regexp.MustCompile(`GoID=(-?\d+) (\w+)->(\w+)`)
)

// traceFacts is what attribution needs of a trace.
type traceFacts struct {
	syncTrace, syncWall int64 // one instant on the trace clock and the wall clock
	last                int64
	ranges              map[string][]interval // runtime ranges: GC phases, STW, assists
	running             map[int64][]interval  // per goroutine, when it ran
	tags                map[int64]string
	schedWaits          []interval // a goroutine runnable for more than 100 µs
}

func readTrace(file string) (*traceFacts, error) {
	cmd := exec.Command("go", "tool", "trace", "-d=parsed", file)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	r := newTraceReader()
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		r.line(sc.Text())
	}
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("go tool trace: %w", err)
	}
	if r.f.syncWall == 0 {
		return nil, fmt.Errorf("no clock snapshot in the trace (Go 1.25 or later writes one)")
	}
	return r.f, nil
}

// traceReader gathers traceFacts line by line: an event's interval ends on
// a later line than it began, and a goroutine's tag is on the stack lines
// after its transition.
type traceReader struct {
	f                       *traceFacts
	open                    map[string]int64 // begun ranges, by name and scope
	runSince, runnableSince map[int64]int64
	// The stack lines after a transition: "Stack=" is the stack of the
	// goroutine that made it (the event's G), "TransitionStack=" that of
	// the goroutine it moved (GoID). Tags go by the moved goroutine's own.
	current int64
	self    bool
	section string
}

func newTraceReader() *traceReader {
	return &traceReader{
		f:    &traceFacts{ranges: map[string][]interval{}, running: map[int64][]interval{}, tags: map[int64]string{}},
		open: map[string]int64{}, runSince: map[int64]int64{}, runnableSince: map[int64]int64{}, current: -1,
	}
}

func (r *traceReader) line(line string) {
	if strings.HasPrefix(line, "M=") {
		r.event(line)
		return
	}
	switch strings.TrimSpace(line) {
	case "Stack=":
		r.section = "stack"
		return
	case "TransitionStack=":
		r.section = "transition"
		return
	}
	if r.current >= 0 && ((r.self && r.section == "stack") || r.section == "transition") {
		r.tag(line)
	}
}

// tag names the current goroutine by the first frame of goroutineTags
// its stack shows; a goroutine keeps the first name it gets.
func (r *traceReader) tag(frame string) {
	for _, t := range goroutineTags {
		if strings.Contains(frame, t.frame) {
			if _, ok := r.f.tags[r.current]; !ok {
				r.f.tags[r.current] = t.tag
			}
		}
	}
}

func (r *traceReader) event(line string) {
	r.current, r.section = -1, ""
	m := traceHeader.FindStringSubmatch(line)
	if m == nil {
		return
	}
	by, _ := strconv.ParseInt(m[1], 10, 64)
	kind, args := m[2], m[4]
	t, _ := strconv.ParseInt(m[3], 10, 64)
	r.f.last = t
	switch kind {
	case "Sync":
		r.sync(args)
	case "RangeBegin", "RangeEnd":
		r.rangeEvent(kind == "RangeBegin", args, t)
	case "StateTransition":
		r.transition(by, args, t)
	}
}

// sync keeps the trace's first clock snapshot, which maps the trace's
// clock to the wall clock of the harness's request times.
func (r *traceReader) sync(args string) {
	c := syncClock.FindStringSubmatch(args)
	if c == nil || r.f.syncWall != 0 {
		return
	}
	wall, err := time.Parse(time.RFC3339Nano, c[2])
	if err == nil {
		r.f.syncTrace, _ = strconv.ParseInt(c[1], 10, 64)
		r.f.syncWall = wall.UnixNano()
	}
}

func (r *traceReader) rangeEvent(begin bool, args string, t int64) {
	m := rangeName.FindStringSubmatch(args)
	if m == nil {
		return
	}
	key := m[1] + "|" + m[2]
	if begin {
		r.open[key] = t
	} else if s, ok := r.open[key]; ok {
		r.f.ranges[m[1]] = append(r.f.ranges[m[1]], interval{s, t})
		delete(r.open, key)
	}
}

// transition records when goroutine g runs, and the waits of more than
// 100 µs between its becoming runnable and running.
func (r *traceReader) transition(by int64, args string, t int64) {
	tr := transition.FindStringSubmatch(args)
	if tr == nil {
		return
	}
	g, _ := strconv.ParseInt(tr[1], 10, 64)
	r.current, r.self = g, g == by
	from, to := tr[2], tr[3]
	if to == "Running" {
		r.runSince[g] = t
		if s, ok := r.runnableSince[g]; ok {
			if t-s > 100_000 {
				r.f.schedWaits = append(r.f.schedWaits, interval{s, t})
			}
			delete(r.runnableSince, g)
		}
	} else if from == "Running" {
		if s, ok := r.runSince[g]; ok {
			r.f.running[g] = append(r.f.running[g], interval{s, t})
			delete(r.runSince, g)
		}
	}
	if to == "Runnable" {
		r.runnableSince[g] = t
	}
}

func attribute(w io.Writer, traceFile, reqFile string) error {
	f, err := readTrace(traceFile)
	if err != nil {
		return err
	}
	reqs, err := readRequests(reqFile)
	if err != nil {
		return err
	}
	p50, p99 := latencyQuantiles(reqs)
	act := newActivity(f)
	slow := act.slowRequests(f, reqs, p50, p99)
	act.printSummary(w, f, len(reqs), p50, p99, len(slow))
	printCauses(w, slow)
	printSlowest(w, slow)
	return nil
}

// readRequests reads a run's requests as writeTimed wrote them, skipping
// lines that do not parse.
func readRequests(file string) ([]timedRequest, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var reqs []timedRequest
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r timedRequest
		var lat int64
		if _, err := fmt.Sscan(line, &r.Start, &lat); err == nil {
			r.Latency = time.Duration(lat)
			reqs = append(reqs, r)
		}
	}
	if len(reqs) == 0 {
		return nil, fmt.Errorf("no requests in %s", file)
	}
	return reqs, nil
}

func latencyQuantiles(reqs []timedRequest) (p50, p99 time.Duration) {
	lats := make([]time.Duration, len(reqs))
	for i, r := range reqs {
		lats[i] = r.Latency
	}
	slices.Sort(lats)
	q := func(p float64) time.Duration { return lats[max(0, min(len(lats)-1, int(p*float64(len(lats))+0.5)-1))] }
	return q(0.50), q(0.99)
}

// activity is the trace's intervals grouped by the causes a slow request
// is attributed to.
type activity struct {
	stw, mark, assists []interval
	all                []interval // every goroutine's running
	byTag              map[string][]interval
	waits              []interval
}

func newActivity(f *traceFacts) *activity {
	a := &activity{byTag: map[string][]interval{}, waits: f.schedWaits,
		stw:  append(slices.Clone(f.ranges["stop-the-world (GC sweep termination)"]), f.ranges["stop-the-world (GC mark termination)"]...),
		mark: f.ranges["GC concurrent mark phase"], assists: f.ranges["GC mark assist"]}
	for g, ivs := range f.running {
		a.all = append(a.all, ivs...)
		if tag, ok := f.tags[g]; ok {
			a.byTag[tag] = append(a.byTag[tag], ivs...)
		}
	}
	return a
}

// slowRequest is a request above p99 and, in ns, how much of each cause
// overlapped its window.
type slowRequest struct {
	lat                                                   time.Duration
	cause                                                 string
	stw, mark, assist, gcw, sink, ship, log, cpu, waiting int64
}

// slowRequests are the requests above p99 whose window lies inside the
// trace, explained.
func (act *activity) slowRequests(f *traceFacts, reqs []timedRequest, p50, p99 time.Duration) []slowRequest {
	var rows []slowRequest
	for _, r := range reqs {
		if r.Latency <= p99 {
			continue
		}
		a := r.Start - f.syncWall + f.syncTrace
		z := a + int64(r.Latency)
		if a < f.syncTrace || z > f.last {
			continue
		}
		x := slowRequest{lat: r.Latency, stw: overlap(act.stw, a, z), mark: overlap(act.mark, a, z), assist: overlap(act.assists, a, z),
			gcw: overlap(act.byTag["gc worker"], a, z), sink: overlap(act.byTag["usage writer"], a, z), ship: overlap(act.byTag["spool shipper"], a, z),
			log: overlap(act.byTag["log writer"], a, z), cpu: overlap(act.all, a, z), waiting: overlap(act.waits, a, z)}
		x.cause = x.classify(int64(r.Latency - p50))
		rows = append(rows, x)
	}
	return rows
}

// classify names the likeliest cause of the request's extra latency over
// p50, GC first: its assists and stops hit the request's goroutine itself.
func (x slowRequest) classify(extra int64) string {
	switch {
	case float64(x.stw+x.assist+x.gcw) > 0.3*float64(extra) || float64(x.mark) > 0.5*float64(x.lat):
		return "garbage collection (a mark phase, assists or a stop in the window)"
	case float64(x.sink) > 0.2*float64(extra):
		return "the usage writer (store insert, roller) running in the window"
	case float64(x.ship) > 0.2*float64(extra):
		return "the spool shipper running in the window"
	case float64(x.waiting) > 0.3*float64(extra):
		return "gw's goroutines runnable, waiting for a CPU"
	case float64(x.cpu) < 0.5*float64(extra):
		return "outside gw: gw mostly idle in the window (other processes on the cores, the network, the load generator)"
	default:
		return "gw busy with other work in the window"
	}
}

func (act *activity) printSummary(w io.Writer, f *traceFacts, requests int, p50, p99 time.Duration, inside int) {
	span := float64(f.last-f.syncTrace) / 1e9
	var stwTotal, markTotal int64
	for _, iv := range act.stw {
		stwTotal += iv.end - iv.start
	}
	for _, iv := range act.mark {
		markTotal += iv.end - iv.start
	}
	fmt.Fprintf(w, "requests %d, p50 %s, p99 %s; %d above p99 inside the trace\n", requests, ms(p50), ms(p99), inside)
	fmt.Fprintf(w, "trace %.1f s: %d GC cycles, mark phases %.1f ms in all (%.1f %% of the time), stops %.2f ms\n\n",
		span, len(act.mark), float64(markTotal)/1e6, 100*float64(markTotal)/float64(f.last-f.syncTrace), float64(stwTotal)/1e6)
}

// printCauses prints the causes, the most frequent first.
func printCauses(w io.Writer, slow []slowRequest) {
	causes := map[string]int{}
	for _, x := range slow {
		causes[x.cause]++
	}
	fmt.Fprintln(w, "| requests above p99 | cause |")
	fmt.Fprintln(w, "|---:|---|")
	type kv struct {
		k string
		v int
	}
	var list []kv
	for k, v := range causes {
		list = append(list, kv{k, v})
	}
	slices.SortFunc(list, func(a, b kv) int { return cmp.Compare(b.v, a.v) })
	for _, c := range list {
		fmt.Fprintf(w, "| %d (%.0f %%) | %s |\n", c.v, 100*float64(c.v)/float64(max(1, len(slow))), c.k)
	}
}

// printSlowest prints the eight slowest requests with their overlaps, to
// check a cause against the figures it was drawn from.
func printSlowest(w io.Writer, slow []slowRequest) {
	slices.SortFunc(slow, func(a, b slowRequest) int { return cmp.Compare(b.lat, a.lat) })
	fmt.Fprintln(w, "\nslowest (ms in the window: stop, mark phase, assists, GC workers, usage writer, shipper, log writer, gw's CPU, runnable waits):")
	for _, x := range slow[:min(len(slow), 8)] {
		fmt.Fprintf(w, "  %7.2f ms  %.2f %.2f %.2f %.2f %.2f %.2f %.2f %.2f %.2f  %s\n", float64(x.lat)/1e6,
			float64(x.stw)/1e6, float64(x.mark)/1e6, float64(x.assist)/1e6, float64(x.gcw)/1e6, float64(x.sink)/1e6,
			float64(x.ship)/1e6, float64(x.log)/1e6, float64(x.cpu)/1e6, float64(x.waiting)/1e6, x.cause)
	}
}
