package dataplane_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// withRemoteBatches gives the plane the control plane's store over the
// sync API at url, as a remote data plane has it.
func withRemoteBatches(t *testing.T, url string) infOptions {
	c, err := client.New(client.Options{Server: url, Token: "sk-cp-test"})
	if err != nil {
		t.Fatal(err)
	}
	return func(o *dataplane.Options) { o.Batches = dataplane.NewRemoteBatches(c, "dp-test") }
}

// A remote data plane whose control plane cannot be reached, or refuses
// for now, answers every Files and Batches endpoint 503
// batches_unavailable in the endpoint's dialect (OpenAI's error shape, or
// Anthropic's at /inf/v1/messages/batches), never a 500; a control plane's
// "no such" is the endpoint's 404 naming the id.
func TestRemoteBatchesControlPlaneFailures(t *testing.T) {
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"detail":"too many file bodies in transit on the control plane; retry shortly"}`))
	}))
	defer busy.Close()
	for _, cp := range []struct{ name, url string }{{"unreachable", gone.URL}, {"busy", busy.URL}} {
		t.Run(cp.name, func(t *testing.T) {
			e := newInfEnv(t, storetest.Open(t, storetest.SQLite), withRemoteBatches(t, cp.url))
			e.sync(t)
			for _, c := range []struct{ method, path, body, shape string }{
				{http.MethodGet, "/inf/v1/files", "", `"error":{"message"`},
				{http.MethodGet, "/inf/v1/files/file-x/content", "", `"error":{"message"`},
				{http.MethodGet, "/inf/v1/batches/batch_x", "", `"error":{"message"`},
				{http.MethodPost, "/inf/v1/batches/batch_x/cancel", "", `"error":{"message"`},
				{http.MethodPost, "/inf/v1/batches", `{"input_file_id":"file-x","endpoint":"/v1/chat/completions","completion_window":"24h"}`, `"error":{"message"`},
				{http.MethodGet, "/inf/v1/messages/batches", "", `"type":"error"`},
				{http.MethodGet, "/inf/v1/messages/batches/msgbatch_x", "", `"type":"error"`},
			} {
				status, body := call(t, c.method, e.srv.URL+c.path, e.token, c.body)
				said := strings.Contains(string(body), "batches_unavailable") || strings.Contains(string(body), "not available")
				if status != http.StatusServiceUnavailable || !said || !strings.Contains(string(body), c.shape) {
					t.Errorf("%s %s: %d %s", c.method, c.path, status, body)
				}
			}
			if status, body := upload(t, e.srv.URL, e.token, batchLine("a", "openai/gpt-4o-mini")+"\n"); status != http.StatusServiceUnavailable {
				t.Errorf("upload: %d %s", status, body)
			}
		})
	}

	none := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"detail":"no such batch: \"batch_x\""}`))
	}))
	defer none.Close()
	e := newInfEnv(t, storetest.Open(t, storetest.SQLite), withRemoteBatches(t, none.URL))
	e.sync(t)
	status, body := call(t, http.MethodGet, e.srv.URL+"/inf/v1/batches/batch_x", e.token, "")
	if status != http.StatusNotFound || !strings.Contains(string(body), `batch_x`) {
		t.Errorf("a batch the control plane does not have: %d %s", status, body)
	}
}

// An end the control plane did not take (it was away) is owed: sent again,
// the same, before the runner's next pass lists the batches, so the line
// does not stay running until the plane restarts; while the control plane
// still refuses, the pass does not go on.
func TestRemoteBatchesOweEnds(t *testing.T) {
	var mu sync.Mutex
	var ends []string
	var actives int
	down := true
	cp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/end-line") {
			ends = append(ends, string(raw))
		} else {
			actives++
		}
		w.Header().Set("Content-Type", "application/json")
		if down {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"detail":"down"}`))
			return
		}
		_, _ = w.Write([]byte(`{"data":{"ok":true,"n":0}}` + "\n"))
	}))
	defer cp.Close()
	c, err := client.New(client.Options{Server: cp.URL, Token: "sk-cp-test"})
	if err != nil {
		t.Fatal(err)
	}
	s := dataplane.NewRemoteBatches(c, "dp-test")
	ctx := context.Background()
	line := dataplane.BatchLine{BatchID: "batch_x", Line: 4, CustomID: "d", Status: "completed", RequestID: "req-4", StatusCode: 200, Response: "{}"}
	if _, err := s.EndLine(ctx, line, time.Now()); err == nil {
		t.Fatal("an end the control plane refused reported success")
	}
	if _, err := s.Active(ctx); err == nil || actives != 0 {
		t.Fatalf("a pass went on with an end owed: %v, %d listings", err, actives)
	}
	mu.Lock()
	down = false
	mu.Unlock()
	if _, err := s.Active(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Active(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ends) != 3 || ends[1] != ends[0] || ends[2] != ends[0] || actives != 2 || !strings.Contains(ends[0], `"request_id":"req-4"`) {
		t.Fatalf("%d ends (%v), %d listings: want the same end three times, then two listings", len(ends), ends, actives)
	}
}

// A take that got no answer may have taken a line the plane will never
// send: it is given back by its request id before the next pass.
func TestRemoteBatchesGiveBackUnansweredTakes(t *testing.T) {
	var mu sync.Mutex
	var calls []string
	var cut bool
	cp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		mu.Lock()
		calls = append(calls, r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]+" "+strings.TrimSpace(string(raw)))
		c := cut
		mu.Unlock()
		if c {
			// The take is made, its answer lost: the connection drops.
			hj, _ := w.(http.Hijacker)
			conn, _, _ := hj.Hijack()
			_ = conn.Close()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data":{"ok":true,"n":0}}` + "\n"))
	}))
	defer cp.Close()
	c, _ := client.New(client.Options{Server: cp.URL, Token: "sk-cp-test"})
	s := dataplane.NewRemoteBatches(c, "dp-test")
	ctx := context.Background()
	cut = true
	if _, ok, err := s.StartLine(ctx, "batch_x", "req-9", time.Now()); err == nil || ok {
		t.Fatalf("a take with no answer: %v %v", ok, err)
	}
	mu.Lock()
	cut = false
	mu.Unlock()
	if _, err := s.Active(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	// Three tries of the take (two repeats), then the give-back, then the listing.
	if len(calls) != 5 || !strings.HasPrefix(calls[3], "requeue ") || !strings.Contains(calls[3], `"request_id":"req-9"`) ||
		strings.Contains(calls[3], `"line"`) || !strings.HasPrefix(calls[4], "active ") {
		t.Fatalf("calls: %q", calls)
	}
}
