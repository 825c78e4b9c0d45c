package mcpgw

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// fakeUpstream answers server/discover as a 2026-07-28 server (stateless
// true) or refuses it as a session-ful one, and initialize with a new
// session each time; it counts both.
type fakeUpstream struct {
	mu                    sync.Mutex
	stateless             bool
	discovers, initialize int
}

func (f *fakeUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var m message
	_ = json.NewDecoder(r.Body).Decode(&m)
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch m.Method {
	case "server/discover":
		f.discovers++
		if !f.stateless {
			http.Error(w, "Bad Request: no session", http.StatusBadRequest)
			return
		}
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28"],"capabilities":{}}}`))
	case "initialize":
		f.initialize++
		w.Header().Set("Mcp-Session-Id", "s"+time.Now().Format("150405.000000000"))
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"f","version":"1"}}}`))
	default:
		w.WriteHeader(http.StatusAccepted)
	}
}

func testClient(now *time.Time) *client {
	return &client{http: &http.Client{}, maxMessage: DefaultMaxMessage, tokens: map[string]oauth2.TokenSource{},
		versions: map[string]speaks{}, probing: map[string]chan struct{}{}, pool: map[string]pooledSession{}, now: func() time.Time { return *now }}
}

// What an upstream speaks is asked once and kept for versionTTL, then
// asked again (an upstream upgraded to 2026-07-28 is found); a server
// moved to another URL or given another secret is asked afresh.
func TestDetectKeepsTheAnswerUntilItExpires(t *testing.T) {
	f := &fakeUpstream{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	now := time.Unix(1_800_000_000, 0)
	c := testClient(&now)
	up := &Upstream{ID: "1", Name: "f", URL: srv.URL}
	ctx := context.Background()
	for range 3 {
		if st, err := c.detect(ctx, up); err != nil || st {
			t.Fatalf("a session-ful upstream: %v %v", st, err)
		}
	}
	if f.discovers != 1 {
		t.Fatalf("asked %d times within the TTL", f.discovers)
	}
	f.mu.Lock()
	f.stateless = true
	f.mu.Unlock()
	now = now.Add(versionTTL - time.Second)
	if st, _ := c.detect(ctx, up); st || f.discovers != 1 {
		t.Fatalf("before expiry: %v, %d asks", st, f.discovers)
	}
	now = now.Add(2 * time.Second)
	if st, err := c.detect(ctx, up); err != nil || !st || f.discovers != 2 {
		t.Fatalf("after expiry: %v %v, %d asks", st, err, f.discovers)
	}
	moved := *up
	moved.Auth = Auth{Kind: "header", Header: "X-Key", Secret: "another"}
	if _, err := c.detect(ctx, &moved); err != nil || f.discovers != 3 {
		t.Fatalf("new credentials: %v, %d asks", err, f.discovers)
	}
	// An upstream that cannot be reached is an error, and nothing is kept.
	gone := &Upstream{ID: "2", Name: "gone", URL: "http://127.0.0.1:1/mcp"}
	if _, err := c.detect(ctx, gone); err == nil {
		t.Fatal("an unreachable upstream was classified")
	}
	if _, ok := c.versions[upstreamKey(gone)]; ok {
		t.Fatal("an unreachable upstream's version was kept")
	}
}

// A kept session is per key and upstream, refreshed by use, forgotten
// after poolIdle unused, and the pool stays within maxPool.
func TestPooledSessions(t *testing.T) {
	f := &fakeUpstream{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	now := time.Unix(1_800_000_000, 0)
	c := testClient(&now)
	up := &Upstream{ID: "1", Name: "f", URL: srv.URL}
	ctx := context.Background()
	a, fresh, err := c.pooled(ctx, up, "key-a")
	if err != nil || !fresh || a.ID == "" {
		t.Fatalf("first: %+v %v %v", a, fresh, err)
	}
	now = now.Add(poolIdle - time.Second)
	if again, fresh, _ := c.pooled(ctx, up, "key-a"); fresh || again != a {
		t.Fatalf("reused: %+v %v", again, fresh)
	}
	b, _, _ := c.pooled(ctx, up, "key-b")
	if b == a || f.initialize != 2 {
		t.Fatalf("another key shares a session: %+v %+v (%d opened)", a, b, f.initialize)
	}
	now = now.Add(poolIdle - time.Second) // a was used poolIdle-1s ago
	if again, fresh, _ := c.pooled(ctx, up, "key-a"); fresh || again != a {
		t.Fatal("a session used within poolIdle was forgotten")
	}
	now = now.Add(poolIdle)
	if again, fresh, _ := c.pooled(ctx, up, "key-a"); !fresh || again == a {
		t.Fatal("a session unused for poolIdle was kept")
	}
	for k := range c.pool {
		if len(k) != 64 {
			t.Fatalf("a pool key is not a digest: %q", k)
		}
	}
	c.unpool(up, "key-a", a) // not the kept one any more: nothing happens
	if len(c.pool) != 2 {
		t.Fatalf("%d kept", len(c.pool))
	}
	for i := range maxPool + 10 {
		c.pool[string(rune(i))+"x"] = pooledSession{until: now.Add(-time.Second)}
	}
	if _, _, err := c.pooled(ctx, &Upstream{ID: "3", Name: "g", URL: srv.URL}, "key-c"); err != nil {
		t.Fatal(err)
	}
	if len(c.pool) > 3 {
		t.Fatalf("the expired sessions were not dropped: %d kept", len(c.pool))
	}
}

// Requests that need an upstream's version at once ask it once: the
// others wait for that answer.
func TestDetectAsksOnceAtATime(t *testing.T) {
	f := &fakeUpstream{stateless: true}
	srv := httptest.NewServer(f)
	defer srv.Close()
	now := time.Unix(1_800_000_000, 0)
	c := testClient(&now)
	up := &Upstream{ID: "1", Name: "f", URL: srv.URL}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if st, err := c.detect(context.Background(), up); err != nil || !st {
				t.Errorf("%v %v", st, err)
			}
		})
	}
	wg.Wait()
	if f.discovers != 1 {
		t.Fatalf("20 requests at once asked %d times", f.discovers)
	}
}
