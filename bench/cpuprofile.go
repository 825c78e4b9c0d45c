package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

// With -cpu-profiles, every process a run is charged (procsOf: the proxy,
// gw, a data plane and its control plane) is CPU-profiled over the run, and
// the report splits each system's CPU a request into parts beside the
// proxy's, from the same runs: where a gw system spends what the proxy does
// not is read off one table rather than two profiles taken apart.

// cpuPart is one row of the split. A sample is charged to the first part
// whose rule matches one of its frames; parts are tried in this order, so
// the upstream call made inside a handler is the upstream call's, and what
// matches none is the runtime's.
type cpuPart struct {
	name string
	// frames are function names (as pprof prints them) whose presence in
	// a sample's stack charges it here; one ending in "." names every
	// function of that package.
	frames []string
	// process charges every sample of a process with this label here
	// (a remote data plane's control plane).
	process string
}

var cpuParts = []cpuPart{
	{name: "control plane (a data plane's ingest, leases, bundles)", process: "control plane"},
	{name: "usage writer (events into the database, in process)", frames: []string{
		"github.com/gw-gateway/gw/server/usage.(*StoreSink).Flush", "github.com/gw-gateway/gw/server/store.(*Store).InsertUsageEvents"}},
	{name: "data plane's spool (events written and shipped)", frames: []string{spoolPackage + "."}},
	{name: "the upstream call (transport: request written, answer read)", frames: []string{
		"net/http.(*Transport).roundTrip", "net/http.(*persistConn).readLoop", "net/http.(*persistConn).writeLoop"}},
	{name: "handler (all else a request's handler does)", frames: []string{"net/http.serverHandler.ServeHTTP"}},
	{name: "HTTP server (request read, answer flushed)", frames: []string{"net/http.(*conn).serve"}},
	{name: "GC in the background (mark, sweep, scavenge)", frames: []string{
		"runtime.gcBgMarkWorker", "runtime.bgsweep", "runtime.bgscavenge"}},
	{name: "other goroutines and the runtime (scheduler, timers, system monitor)"},
}

const spoolPackage = "github.com/gw-gateway/gw/server/dataplane/spool"

// allocFrame marks a sample spent allocating: shown as its own row, across
// the parts above.
const allocFrame = "runtime.mallocgc"

// cpuSplit is a system's profiled CPU over its runs: the time charged to
// each part (cpuParts' order), and to allocation across them.
type cpuSplit struct {
	parts []time.Duration
	alloc time.Duration
}

func (c *cpuSplit) total() time.Duration {
	var t time.Duration
	for _, d := range c.parts {
		t += d
	}
	return t
}

// partOf is the index in cpuParts of the part a sample of process label
// with the given stack (leaf first, as pprof stores it) is charged to.
func partOf(label string, stack []string) int {
	for i, p := range cpuParts {
		if p.process != "" {
			if p.process == label {
				return i
			}
			continue
		}
		for _, f := range stack {
			for _, want := range p.frames {
				if f == want || strings.HasSuffix(want, ".") && strings.HasPrefix(f, want) {
					return i
				}
			}
		}
	}
	return len(cpuParts) - 1 // the last part names no frame: the rest
}

// addProfile charges the samples of one process's profile.
func (c *cpuSplit) addProfile(label string, p *profile.Profile) error {
	if len(c.parts) == 0 {
		c.parts = make([]time.Duration, len(cpuParts))
	}
	value := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			value = i
		}
	}
	if value < 0 {
		return fmt.Errorf("not a CPU profile (no cpu/nanoseconds sample type)")
	}
	var stack []string
	for _, s := range p.Sample {
		stack = stack[:0]
		alloc := false
		for _, loc := range s.Location {
			for _, line := range loc.Line {
				if line.Function == nil {
					continue
				}
				stack = append(stack, line.Function.Name)
				alloc = alloc || line.Function.Name == allocFrame
			}
		}
		d := time.Duration(s.Value[value])
		c.parts[partOf(label, stack)] += d
		if alloc {
			c.alloc += d
		}
	}
	return nil
}

// profileFile is where one process's profile of one run goes.
func (h *harness) profileFile(s scenario, t target, p proc, round int) string {
	name := fmt.Sprintf("%s-%s-%s-round%d.pprof", s.name, t.name, strings.ReplaceAll(p.label, " ", "-"), round+1)
	return filepath.Join(h.cfg.CPUProfiles, name)
}

// startProfiles starts a CPU profile of every profiled process of t for d,
// each written to its file; wait returns the files by process label once
// all are written.
func (h *harness) startProfiles(s scenario, t target, round int, d time.Duration) (wait func() (map[string]string, error)) {
	type done struct {
		label, file string
		err         error
	}
	procs := h.procsOf[t.name]
	ch := make(chan done, len(procs))
	n := 0
	for _, p := range procs {
		if p.pprof == "" {
			continue
		}
		n++
		file := h.profileFile(s, t, p, round)
		go func() { ch <- done{p.label, file, fetchProfile(p.pprof, d, file)} }()
	}
	return func() (map[string]string, error) {
		out := map[string]string{}
		var first error
		for range n {
			r := <-ch
			if r.err != nil && first == nil {
				first = fmt.Errorf("%s's CPU profile: %w", r.label, r.err)
			}
			out[r.label] = r.file
		}
		return out, first
	}
}

// fetchProfile records a CPU profile of the process serving pprof at addr
// for d (whole seconds, at least one: pprof's unit) into file.
func fetchProfile(addr string, d time.Duration, file string) error {
	secs := max(1, int(math.Ceil(d.Seconds())))
	return fetchPprof(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, secs), file)
}

// splitOf reads a system's profiles (by process label, each a list over
// its runs) into one split.
func splitOf(files map[string][]string) (cpuSplit, error) {
	var c cpuSplit
	for label, list := range files {
		for _, file := range list {
			f, err := os.Open(file)
			if err != nil {
				return c, err
			}
			p, err := profile.Parse(f)
			f.Close()
			if err != nil {
				return c, fmt.Errorf("%s: %w", file, err)
			}
			if err := c.addProfile(label, p); err != nil {
				return c, fmt.Errorf("%s: %w", file, err)
			}
		}
	}
	return c, nil
}

// reportCPUParts prints, per scenario, each system's profiled CPU µs a
// request by part, and each gw system's difference from the proxy's.
func reportCPUParts(w io.Writer, chosen []scenario, results map[string]map[string]*sample) error {
	for _, s := range chosen {
		res := results[s.name]
		var names []string
		splits := map[string]cpuSplit{}
		for _, t := range s.systems {
			r := res[t.name]
			if len(r.profiles) == 0 {
				continue
			}
			c, err := splitOf(r.profiles)
			if err != nil {
				return fmt.Errorf("%s, %s: %w", s.name, t.name, err)
			}
			names, splits[t.name] = append(names, t.name), c
		}
		if len(names) == 0 {
			continue
		}
		writeCPUParts(w, s.name, names, splits, func(name string) int { return res[name].ok + res[name].failed })
	}
	return nil
}

// writeCPUParts is one scenario's table: a column per system, µs a
// request, and for each system but the proxy its difference from the
// proxy's when the proxy was profiled.
func writeCPUParts(w io.Writer, scenario string, names []string, splits map[string]cpuSplit, requests func(string) int) {
	px, hasProxy := splits["proxy"]
	perRequest := func(d time.Duration, name string) float64 {
		if n := requests(name); n > 0 {
			return float64(d) / 1e3 / float64(n)
		}
		return 0
	}
	fmt.Fprintf(w, "\n### Where the CPU goes: %s, profiled µs a request\n\n", scenario)
	header, rule := "| part |", "|---|"
	for _, n := range names {
		header += " " + n + " |"
		rule += "---:|"
		if hasProxy && n != "proxy" {
			header += " " + n + " − proxy |"
			rule += "---:|"
		}
	}
	fmt.Fprintln(w, header)
	fmt.Fprintln(w, rule)
	row := func(label string, of func(cpuSplit) time.Duration, bold bool) {
		line := "| " + label + " |"
		for _, n := range names {
			v := perRequest(of(splits[n]), n)
			cell := fmt.Sprintf("%.1f", v)
			if bold {
				cell = "**" + cell + "**"
			}
			line += " " + cell + " |"
			if hasProxy && n != "proxy" {
				line += fmt.Sprintf(" %+.1f |", v-perRequest(of(px), "proxy"))
			}
		}
		fmt.Fprintln(w, line)
	}
	for i, p := range cpuParts {
		used := false
		for _, n := range names {
			used = used || splits[n].parts[i] > 0
		}
		if used {
			row(p.name, func(c cpuSplit) time.Duration { return c.parts[i] }, false)
		}
	}
	row("total profiled", func(c cpuSplit) time.Duration { return c.total() }, true)
	row("of which allocating (runtime.mallocgc, within the parts above)", func(c cpuSplit) time.Duration { return c.alloc }, false)
}
