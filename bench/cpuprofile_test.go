package main

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/gw-gateway/gw/server/dataplane/spool"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/usage"
)

// TestCPUPartsNameFunctionsThatExist holds the split's rules to gw's code:
// a renamed function would otherwise move its time to another part
// silently.
func TestCPUPartsNameFunctionsThatExist(t *testing.T) {
	have := map[string]bool{
		runtime.FuncForPC(reflect.ValueOf((*usage.StoreSink).Flush).Pointer()).Name():         true,
		runtime.FuncForPC(reflect.ValueOf((*store.Store).InsertUsageEvents).Pointer()).Name(): true,
	}
	if got := reflect.TypeFor[spool.Spool]().PkgPath(); got != spoolPackage {
		t.Errorf("the spool's package is %s, the split names %s", got, spoolPackage)
	}
	for _, p := range cpuParts {
		for _, f := range p.frames {
			if strings.HasPrefix(f, "github.com/gw-gateway/gw/") && !strings.HasSuffix(f, ".") && !have[f] {
				t.Errorf("part %q names %s, which is not a function of gw's", p.name, f)
			}
		}
	}
}

func TestPartOf(t *testing.T) {
	serve := []string{"net/http.serverHandler.ServeHTTP", "net/http.(*conn).serve"}
	for _, c := range []struct {
		label string
		stack []string // leaf first
		want  string
	}{
		{"proxy", append([]string{"runtime.mallocgc", "net/http/httputil.(*ReverseProxy).ServeHTTP"}, serve...), "handler"},
		{"proxy", append([]string{"syscall.write", "net/http.(*Transport).roundTrip", "net/http/httputil.(*ReverseProxy).ServeHTTP"}, serve...), "the upstream call"},
		{"gw", []string{"syscall.read", "net/http.(*persistConn).readLoop"}, "the upstream call"},
		{"gw", []string{"syscall.write", "bufio.(*Writer).Flush", "net/http.(*response).finishRequest", "net/http.(*conn).serve"}, "HTTP server"},
		{"gw", []string{"modernc.org/sqlite/lib._sqlite3VdbeExec", "github.com/gw-gateway/gw/server/store.(*Store).InsertUsageEvents",
			"github.com/gw-gateway/gw/server/usage.(*StoreSink).Flush"}, "usage writer"},
		{"dataplane", append([]string{"github.com/gw-gateway/gw/server/dataplane/spool.(*Spool).Record", "github.com/gw-gateway/gw/server/dataplane.(*Plane).ServeHTTP"}, serve...),
			"data plane's spool"},
		{"dataplane", []string{"runtime.scanobject", "runtime.gcBgMarkWorker"}, "GC in the background"},
		{"gw", []string{"runtime.futex", "runtime.mcall"}, "other goroutines"},
		{"control plane", append([]string{"github.com/gw-gateway/gw/server/api.(*Server).ServeHTTP"}, serve...), "control plane"},
	} {
		if got := cpuParts[partOf(c.label, c.stack)].name; !strings.HasPrefix(got, c.want) {
			t.Errorf("%s %v: charged to %q, want %q", c.label, c.stack, got, c.want)
		}
	}
}

// TestCPUPartsTable writes two processes' profiles as pprof writes them
// and reads the table back: µs a request by part, differences from the
// proxy's, allocation across the parts.
func TestCPUPartsTable(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, samples map[string]time.Duration, alloc time.Duration) string {
		p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
			PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 10_000_000}
		fn := map[string]*profile.Function{}
		loc := func(name string) *profile.Location {
			f := fn[name]
			if f == nil {
				f = &profile.Function{ID: uint64(len(fn) + 1), Name: name}
				fn[name] = f
				p.Function = append(p.Function, f)
			}
			l := &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: f}}}
			p.Location = append(p.Location, l)
			return l
		}
		for frame, d := range samples {
			p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc("work"), loc(frame)}, Value: []int64{1, int64(d)}})
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc(allocFrame), loc("net/http.serverHandler.ServeHTTP")},
			Value: []int64{1, int64(alloc)}})
		file := filepath.Join(dir, name)
		f, err := os.Create(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Write(f); err != nil {
			t.Fatal(err)
		}
		f.Close()
		return file
	}
	px := write("proxy", map[string]time.Duration{"net/http.(*Transport).roundTrip": 30 * time.Millisecond, "net/http.(*conn).serve": 20 * time.Millisecond}, 10*time.Millisecond)
	gw := write("gw", map[string]time.Duration{"net/http.(*Transport).roundTrip": 40 * time.Millisecond, "net/http.(*conn).serve": 20 * time.Millisecond,
		"github.com/gw-gateway/gw/server/usage.(*StoreSink).Flush": 15 * time.Millisecond}, 50*time.Millisecond)
	splits := map[string]cpuSplit{}
	for name, files := range map[string]map[string][]string{"proxy": {"proxy": {px}}, "gw": {"gw": {gw}}} {
		c, err := splitOf(files)
		if err != nil {
			t.Fatal(err)
		}
		splits[name] = c
	}
	var out strings.Builder
	// 1,000 requests each: 1 ms of CPU is 1 µs a request.
	writeCPUParts(&out, "nonstream", []string{"proxy", "gw"}, splits, func(string) int { return 1000 })
	for _, want := range []string{
		"| part | proxy | gw | gw − proxy |",
		"| usage writer (events into the database, in process) | 0.0 | 15.0 | +15.0 |",
		"| the upstream call (transport: request written, answer read) | 30.0 | 40.0 | +10.0 |",
		"| handler (all else a request's handler does) | 10.0 | 50.0 | +40.0 |",
		"| HTTP server (request read, answer flushed) | 20.0 | 20.0 | +0.0 |",
		"| total profiled | **60.0** | **125.0** | +65.0 |",
		"| of which allocating (runtime.mallocgc, within the parts above) | 10.0 | 50.0 | +40.0 |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "control plane") {
		t.Errorf("a part no system spent in is shown:\n%s", out.String())
	}
	if _, err := splitOf(map[string][]string{"gw": {filepath.Join(dir, "missing")}}); err == nil {
		t.Error("a missing profile is read without an error")
	}
}

// TestHarnessCPUProfiles runs one short round with -cpu-profiles: every
// process of every system is profiled through its pprof (the proxy's own
// listener, gw's and the data plane's metrics listeners), the files are
// written, and the split is reported beside the proxy's.
func TestHarnessCPUProfiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts gw")
	}
	var out strings.Builder
	dir := t.TempDir()
	err := run(config{Duration: 300 * time.Millisecond, Rounds: 1, Conns: 2, Chunks: 3, MaxRequests: 100,
		Scenarios: []string{"nonstream"}, Systems: []string{"gw", "dataplane"}, CPUProfiles: dir, Out: &out, GWBinary: testGW(t)})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	// A run this short takes few samples: which parts get any is chance,
	// so only the table's frame is held here (TestCPUPartsTable holds its
	// rows), and the profiles themselves.
	for _, want := range []string{"### Where the CPU goes: nonstream, profiled µs a request", "| part | proxy | gw | gw − proxy | dataplane | dataplane − proxy |",
		"| total profiled |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
	for _, f := range []string{"nonstream-proxy-proxy-round1.pprof", "nonstream-gw-gw-round1.pprof",
		"nonstream-dataplane-dataplane-round1.pprof", "nonstream-dataplane-control-plane-round1.pprof"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("profile %s: %v", f, err)
		}
	}
}
