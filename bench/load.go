package main

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// target is one system under load: where to send and what.
type target struct {
	name  string
	url   string
	token string
	body  []byte
	// unique, when set, gives each request a body of its own instead.
	unique *uniquePrompt
	// headers are sent besides Content-Type and Authorization.
	headers map[string]string
	// expect, when set, must be in the answer's body (a JSON-RPC error
	// comes with a 200 too).
	expect []byte
	// timed keeps each request's start and latency (for a trace's
	// attribution), in the order they were sent.
	timed bool
}

// timedRequest is one request of a timed run: when it started (Unix ns)
// and how long it took.
type timedRequest struct {
	Start   int64
	Latency time.Duration
}

// sample is what one load run measured.
type sample struct {
	ok, failed int
	firstErr   error
	elapsed    time.Duration
	latencies  []time.Duration
	timed      []timedRequest
	// cpu is each of the system's processes' CPU time over its runs (see
	// harness.procsOf), by process label.
	cpu map[string]time.Duration
	// profiles are each process's CPU profiles of its runs, by label,
	// with -cpu-profiles.
	profiles map[string][]string
}

func (s *sample) add(o sample) {
	if s.firstErr == nil {
		s.firstErr = o.firstErr
	}
	s.ok += o.ok
	s.failed += o.failed
	s.elapsed += o.elapsed
	s.latencies = append(s.latencies, o.latencies...)
	s.timed = append(s.timed, o.timed...)
	for label, t := range o.cpu {
		if s.cpu == nil {
			s.cpu = map[string]time.Duration{}
		}
		s.cpu[label] += t
	}
	for label, files := range o.profiles {
		if s.profiles == nil {
			s.profiles = map[string][]string{}
		}
		s.profiles[label] = append(s.profiles[label], files...)
	}
}

func (s *sample) rps() float64 {
	if s.elapsed <= 0 {
		return 0
	}
	return float64(s.ok) / s.elapsed.Seconds()
}

// quantile is the q-quantile of the latencies (nearest rank); the slice is
// sorted on first use.
func (s *sample) quantile(q float64) time.Duration {
	if len(s.latencies) == 0 {
		return 0
	}
	if !slices.IsSorted(s.latencies) {
		slices.Sort(s.latencies)
	}
	i := int(q*float64(len(s.latencies))+0.5) - 1
	return s.latencies[max(0, min(i, len(s.latencies)-1))]
}

func newClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, MaxIdleConns: conns,
		DisableCompression: true, IdleConnTimeout: 90 * time.Second,
	}, Timeout: 30 * time.Second}
}

// do sends one request and reads the whole answer; a request counts as
// done when its last byte has arrived.
func do(ctx context.Context, c *http.Client, t target, sink []byte) error {
	body := t.body
	if t.unique != nil {
		body = t.unique.next()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if t.token != "" {
		req.Header.Set("Authorization", "Bearer "+t.token)
	}
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if t.expect != nil {
		body, err := io.ReadAll(io.LimitReader(resp.Body, int64(len(sink))))
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d: %.300s", resp.StatusCode, body)
		}
		if !bytes.Contains(body, t.expect) {
			return fmt.Errorf("the answer lacks %q: %.200s", t.expect, body)
		}
		return nil
	}
	// A failure's first bytes say why (gw's error message); an answer's
	// are not kept.
	var failure []byte
	for {
		n, err := resp.Body.Read(sink)
		if resp.StatusCode != http.StatusOK && len(failure) < 300 {
			failure = append(failure, sink[:n]...)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %.300s", resp.StatusCode, failure)
	}
	return nil
}

// closedLoop keeps conns requests in flight until d has passed or max
// requests were sent: throughput at a fixed concurrency.
func closedLoop(c *http.Client, t target, conns int, d time.Duration, maxReqs int) sample {
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	var (
		mu  sync.Mutex
		out sample
		wg  sync.WaitGroup
	)
	per := (maxReqs + conns - 1) / conns
	start := time.Now()
	deadline := start.Add(d)
	for range conns {
		wg.Go(func() {
			var s sample
			s.latencies = make([]time.Duration, 0, 1024)
			sink := make([]byte, 32<<10)
			for i := 0; i < per && time.Now().Before(deadline); i++ {
				t0 := time.Now()
				if s.record(do(ctx, c, t, sink), t0) && t.timed {
					s.timed = append(s.timed, timedRequest{t0.UnixNano(), s.latencies[len(s.latencies)-1]})
				}
			}
			mu.Lock()
			out.add(s)
			mu.Unlock()
		})
	}
	wg.Wait()
	out.elapsed = time.Since(start)
	return out
}

// openLoop sends rate requests a second for d, each at its scheduled time
// whatever the answers do. Latency runs from the scheduled time, not from
// the send, so a stalled system is charged for the requests it delayed
// (no coordinated omission). workers bounds the requests in flight.
func openLoop(c *http.Client, t target, rate float64, d time.Duration, workers int) sample {
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	n := int(rate * d.Seconds())
	due := make(chan time.Time, workers)
	var (
		mu  sync.Mutex
		out sample
		wg  sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			var s sample
			sink := make([]byte, 32<<10)
			for at := range due {
				s.record(do(ctx, c, t, sink), at)
			}
			mu.Lock()
			out.add(s)
			mu.Unlock()
		})
	}
	start := time.Now()
	interval := time.Duration(float64(time.Second) / rate)
	for i := range n {
		at := start.Add(time.Duration(i) * interval)
		if wait := time.Until(at); wait > 0 {
			time.Sleep(wait)
		}
		due <- at
	}
	close(due)
	wg.Wait()
	out.elapsed = time.Since(start)
	return out
}

// record counts one request, timed from since, and says whether it
// succeeded.
func (s *sample) record(err error, since time.Time) bool {
	if err != nil {
		s.failed++
		s.firstErr = cmp.Or(s.firstErr, err)
		return false
	}
	s.ok++
	s.latencies = append(s.latencies, time.Since(since))
	return true
}
