package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// The crash run's numbers: a slow upstream streams crashPieces pieces of
// text, one every crashPace, then reports crashIn input and crashPieces
// output tokens; a non-streaming answer comes after crashPieces×crashPace.
const (
	crashAmount      = "0.02"
	crashCallerCount = 8
	crashPieces      = 40
	crashPace        = 25 * time.Millisecond
	crashIn          = 60
	crashKills       = 3
)

var crashBody = `{"model":"openai/gpt-4o-mini","max_tokens":200,"messages":[{"role":"user","content":"` +
	strings.Repeat("Tell me a long story. ", 10) + `"}]`

// TestCrashBillsTheRequestsInFlight: gw serve (both roles) and a remote
// data plane, each SIGKILLed (and once stopped with SIGTERM) while
// streams are under way, and restarted on the same data dir: every
// request that reached the upstream has exactly one usage event (those
// cut, reason crashed), and the budget counts what the events cost, to
// within 1% of its amount (the goal; here exactly).
func TestCrashBillsTheRequestsInFlight(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			t.Run("all", func(t *testing.T) { crashRun(t, d, false) })
			t.Run("data-plane", func(t *testing.T) { crashRun(t, d, true) })
		})
	}
}

func crashRun(t *testing.T, d storetest.Dialect, remote bool) {
	ctx := context.Background()
	up := newSlowUpstream(t)
	env := []string{"GW_DATA_DIR=" + t.TempDir(), "GW_BOOTSTRAP_TOKEN=setup_crash", "GW_SECRET_KEY=" + strings.Repeat("ab", 32)}
	if d == storetest.Postgres {
		u, err := storetest.URL(t, d)
		if err != nil {
			t.Fatal(err)
		}
		env = append(env, "GW_DATABASE_URL="+u)
	}
	if remote {
		env = append(env, "GW_ROLE=control-plane")
	}
	// A fixed address: role all comes back where its callers look.
	addr := freeAddr(t)
	cp := startServeAt(t, addr, env...)
	anon, _ := client.New(client.Options{Server: cp.URL})
	boot, err := anon.Bootstrap(ctx, wire.Bootstrap{Token: "setup_crash", Email: "ops@example.com", Password: "a long passphrase"})
	if err != nil {
		t.Fatal(err)
	}
	owner, _ := client.New(client.Options{Server: cp.URL, Token: boot.ManagementKey.Token})
	if _, err := owner.CreateCredential(ctx, client.OrgScope("default"), wire.ProviderCredentialCreate{
		Provider: "openai", Label: "slow", Secret: "sk-slow", BaseURL: up.URL + "/v1"}); err != nil {
		t.Fatal(err)
	}
	def := `{"target":{"kind":"workspace"},"rules":[{"match":{"kind":"all_requests"},` +
		`"action":{"kind":"budget","amount_usd":"` + crashAmount + `","period":"day","aggregation":"shared"}}]}`
	if _, err := owner.CreatePolicy(ctx, "default", "default", wire.PolicyCreate{Name: "spend-cap", Definition: wire.PolicyDefinition(def)}); err != nil {
		t.Fatal(err)
	}
	ik, err := owner.CreateInferenceKey(ctx, "default", "default", wire.InferenceKeyCreate{Name: "callers"})
	if err != nil {
		t.Fatal(err)
	}

	// The process that is killed: role all itself, or a data plane.
	var planeEnv []string
	plane := cp
	if remote {
		dpKey, err := owner.CreateManagementKey(ctx, client.InstanceScope(), wire.ManagementKeyCreate{
			Permissions: []string{"bundles.read", "usage.ingest", "data-planes.heartbeat", "policy-state.sync"}, Label: "data-plane"})
		if err != nil {
			t.Fatal(err)
		}
		planeEnv = []string{"GW_ROLE=data-plane", "GW_CONTROL_PLANE_URL=" + cp.URL, "GW_TOKEN=" + dpKey.Token, "GW_DATA_DIR=" + t.TempDir(),
			"GW_POLL_INTERVAL=200ms", "GW_HEARTBEAT_INTERVAL=200ms", "GW_DATA_PLANE_ID=dp-crash"}
		plane = startServeAt(t, freeAddr(t), planeEnv...)
		enrollDataPlane(t, owner, "dp-crash", "default")
	}
	restart := func() {
		if remote {
			plane = startServeAt(t, strings.TrimPrefix(plane.URL, "http://"), planeEnv...)
		} else {
			plane = startServeAt(t, addr, env...)
			cp = plane
		}
	}
	waitFor(t, "the plane to serve", func() bool {
		status, _ := crashPost(plane.URL, ik.Token, "warm-up", false)
		return status == http.StatusOK
	})

	// Kill it with streams under way, crashKills times, then once with
	// SIGTERM; callers go on sending through every restart.
	callers := startCrashCallers(plane.URL, ik.Token)
	for i := range crashKills + 1 {
		time.Sleep(700 * time.Millisecond)
		if n := up.inFlight.Load(); n == 0 {
			t.Logf("kill %d: no stream in flight at the upstream", i)
		}
		if i < crashKills {
			_ = plane.cmd.Process.Kill()
			<-plane.done
		} else {
			plane.stop(t)
		}
		restart()
	}
	callers.stop()

	// Every request the upstream saw has one event; those cut by a kill
	// say so. Role all writes them at start; a data plane ships them.
	reached := up.seen()
	var events map[string][]wire.UsageEvent
	waitFor(t, "an event for every request the upstream saw", func() bool {
		var err error
		events, err = crashEvents(cp.URL, boot.ManagementKey.Token)
		if err != nil {
			return false
		}
		for _, id := range reached {
			if len(events[id]) == 0 {
				return false
			}
		}
		return true
	})
	var crashed, ok int
	var total int64
	for id, evs := range events {
		if len(evs) != 1 {
			t.Errorf("request %s has %d events: %+v", id, len(evs), evs)
		}
		e := evs[0]
		n, err := catalog.ParseNanoUSD(e.CostUSD)
		if err != nil {
			t.Fatal(err)
		}
		total += n
		switch {
		case e.Status == "ok":
			ok++
		case e.Reason != nil && *e.Reason == "crashed":
			crashed++
			if e.UsageSource != "estimated" || e.InputTokens == 0 || n == 0 {
				t.Errorf("crashed event %+v", e)
			}
		}
	}
	if crashed == 0 {
		t.Errorf("no event says crashed: %d kills with streams under way", crashKills)
	}
	// The budget counts what the events cost: reported by the data plane
	// every 2 s.
	amount, _ := catalog.ParseNanoUSD(crashAmount)
	var spent int64
	waitFor(t, "the budget to count the events' cost", func() bool {
		states, err := owner.ListBudgets(ctx, "default", "default")
		if err != nil || len(states) != 1 {
			return false
		}
		spent, _ = catalog.ParseNanoUSD(states[0].SpentUSD)
		return spent >= total && spent-total < amount/100
	})
	t.Logf("%d kills and a SIGTERM: %d requests reached the upstream, %d events (%d ok, %d crashed); budget spent $%s, events $%s (%.3f%% of $%s apart)",
		crashKills, len(reached), len(events), ok, crashed, catalog.FormatNanoUSD(spent), catalog.FormatNanoUSD(total),
		100*float64(spent-total)/float64(amount), crashAmount)
	plane.stop(t)
	if remote {
		cp.stop(t)
	}
}

// slowUpstream is an OpenAI-style upstream that streams slowly and records
// the X-Request-Id of each request it receives.
type slowUpstream struct {
	*httptest.Server
	mu       sync.Mutex
	ids      []string
	inFlight atomic.Int64
}

func newSlowUpstream(t *testing.T) *slowUpstream {
	u := &slowUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.Close)
	return u
}

func (u *slowUpstream) seen() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.ids...)
}

func (u *slowUpstream) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Stream bool `json:"stream"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	u.mu.Lock()
	u.ids = append(u.ids, r.Header.Get("X-Request-Id"))
	u.mu.Unlock()
	u.inFlight.Add(1)
	defer u.inFlight.Add(-1)
	usage := map[string]any{"prompt_tokens": crashIn, "completion_tokens": crashPieces, "total_tokens": crashIn + crashPieces}
	if !req.Stream {
		select {
		case <-time.After(crashPieces * crashPace):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-slow", "object": "chat.completion", "created": time.Now().Unix(),
			"model": "gpt-4o-mini", "choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": strings.Repeat("word ", crashPieces)}}}, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	flusher := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		flusher.Flush()
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": "chatcmpl-slow", "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": "gpt-4o-mini",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}, "usage": nil}
	}
	send(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for range crashPieces {
		select {
		case <-time.After(crashPace):
		case <-r.Context().Done():
			return
		}
		send(chunk(map[string]any{"content": "word "}, nil))
	}
	send(chunk(map[string]any{}, "stop"))
	send(map[string]any{"id": "chatcmpl-slow", "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": "gpt-4o-mini",
		"choices": []any{}, "usage": usage})
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	flusher.Flush()
}

// crashCallers keep sending requests, each with an id of its own, three
// streams to one non-streaming call, through every kill and restart.
type crashCallers struct {
	done atomic.Bool
	wg   sync.WaitGroup
}

func startCrashCallers(url, token string) *crashCallers {
	c := &crashCallers{}
	var n atomic.Int64
	for i := range crashCallerCount {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			for !c.done.Load() {
				id := fmt.Sprintf("crash-%d-%d", i, n.Add(1))
				if status, _ := crashPost(url, token, id, i%4 != 3); status != http.StatusOK {
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
	}
	return c
}

func (c *crashCallers) stop() {
	c.done.Store(true)
	c.wg.Wait()
}

// crashPost sends one request and reads its answer to the end (or until
// the connection breaks).
func crashPost(url, token, id string, stream bool) (int, string) {
	body := crashBody + "}"
	if stream {
		body = crashBody + `,"stream":true}`
	}
	req, _ := http.NewRequest(http.MethodPost, url+"/inf/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		b.WriteString(sc.Text())
	}
	return resp.StatusCode, b.String()
}

// crashEvents reads the default workspace's usage events by request id.
func crashEvents(cpURL, token string) (map[string][]wire.UsageEvent, error) {
	out := map[string][]wire.UsageEvent{}
	cursor := ""
	for range 100 {
		q := url.Values{"limit": {"200"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page wire.Page[wire.UsageEvent]
		if err := getJSON(cpURL, token, "/api/v1/organizations/default/workspaces/default/usage-events?"+q.Encode(), &page); err != nil {
			return nil, err
		}
		for _, e := range page.Data {
			if e.RequestID != nil {
				out[*e.RequestID] = append(out[*e.RequestID], e)
			}
		}
		if page.Page.NextCursor == nil {
			return out, nil
		}
		cursor = *page.Page.NextCursor
	}
	return nil, fmt.Errorf("more than 100 pages of events")
}
