package server_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/server/telemetry"
	"github.com/gw-gateway/gw/wire"
)

// running is a gw serve assembled in process on 127.0.0.1.
type running struct {
	URL        string
	MetricsURL string
	Handler    http.Handler
	Owner      *client.Client
	token      string
	logs       *syncBuffer
	stop       func()
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var testSecretKey = strings.Repeat("ab", 32)

func keyring(t *testing.T) *secrets.Keyring {
	t.Helper()
	kr, err := secrets.LoadKeyring(testSecretKey, secrets.KeyFiles{})
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

// startServer runs cfg (a database and a bootstrap owner for the control
// plane roles) with a metrics listener, until the test ends or stop.
func startServer(t *testing.T, cfg server.Config) *running {
	t.Helper()
	ctx := context.Background()
	logs := &syncBuffer{}
	var key bytes.Buffer
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	cfg.Version = "test"
	if cfg.Role != server.RoleDataPlane {
		cfg.Bootstrap = &backend.BootstrapInput{Email: "ops@example.com", Password: "a long passphrase"}
		cfg.PrintBootstrapKey, cfg.BootstrapKeyOut = true, &key
		cfg.BundleRefreshInterval = time.Hour
	}
	cfg.ShutdownTimeout = 5 * time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MetricsListener, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	r := &running{URL: "http://" + ln.Addr().String(), MetricsURL: "http://" + cfg.MetricsListener.Addr().String(), logs: logs}
	cfg.PublicURL = r.URL
	srv, err := server.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.Handler = srv.Handler()
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Run(runCtx, ln) }()
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("run: %v", err)
			}
		})
	}
	t.Cleanup(r.stop)
	if m := regexp.MustCompile(`sk-cp-\S+`).FindString(key.String()); m != "" {
		r.Owner, _ = client.New(client.Options{Server: r.URL, Token: m})
		r.token = m
	}
	return r
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// chat posts a chat completion with token and extra headers.
func chat(t *testing.T, base, token, body string, header ...string) *http.Response {
	t.Helper()
	return infer(t, base+"/inf/v1/chat/completions", token, body, header...)
}

// infer posts body to one inference endpoint and drains the answer.
func infer(t *testing.T, url, token, body string, header ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// scrape reads the metrics listener's /metrics into families.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := get(t, url+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// value is the value of the series of family name whose labels include
// labels (a counter's count, a gauge's value, a histogram's sample count);
// -1 when there is none.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
	var sum float64
	found := false
next:
	for _, m := range f.Metric {
		for i := 0; i+1 < len(labels); i += 2 {
			ok := false
			for _, lp := range m.Label {
				if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
					ok = true
				}
			}
			if !ok {
				continue next
			}
		}
		found = true
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	if !found {
		return -1
	}
	return sum
}

// setupInference gives the default workspace an OpenAI credential on a
// fake upstream, a policy (deny tool use; fall back from gpt-4o-mini to
// gpt-4.1-mini when the upstream is unavailable) and two inference keys,
// the second limited to one request a minute.
func setupInference(t *testing.T, owner *client.Client) (up *providerstest.OpenAI, token, limited string) {
	t.Helper()
	ctx := context.Background()
	up = providerstest.NewOpenAI(t, "sk-upstream-telemetry")
	if _, err := owner.CreateCredential(ctx, client.WorkspaceScope("default", "default"), wire.ProviderCredentialCreate{
		Provider: "openai", Label: "fake", Secret: up.Key, BaseURL: up.BaseURL()}); err != nil {
		t.Fatal(err)
	}
	def := `{"target":{"kind":"workspace"},"rules":[` +
		`{"match":{"kind":"request","models":[],"stream":null,"capabilities":["tools"]},"action":{"kind":"deny","message":"no tools"}},` +
		`{"match":{"kind":"all_requests"},"action":{"kind":"fallback","models":["openai/gpt-4.1-mini"],"on":["upstream_unavailable"],"max_attempts":2,"timeout_ms":10000}}]}`
	if _, err := owner.CreatePolicy(ctx, "default", "default", wire.PolicyCreate{Name: "ops", Definition: wire.PolicyDefinition(def)}); err != nil {
		t.Fatal(err)
	}
	ik, err := owner.CreateInferenceKey(ctx, "default", "default", wire.InferenceKeyCreate{Name: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	one := int64(1)
	lk, err := owner.CreateInferenceKey(ctx, "default", "default", wire.InferenceKeyCreate{Name: "limited",
		RateLimits: &wire.RateLimits{RequestsPerMinute: &one}})
	if err != nil {
		t.Fatal(err)
	}
	return up, ik.Token, lk.Token
}

const mini = `{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`

// TestMetricsAfterTraffic sends real traffic through gw serve (role all)
// to a fake upstream and checks every metric family the issue names, by
// value, on the metrics listener.
func TestMetricsAfterTraffic(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			srv := startServer(t, server.Config{Role: server.RoleAll, DB: storetest.Open(t, d), Keyring: keyring(t)})
			up, token, limited := setupInference(t, srv.Owner)

			// ok: 100 in, 20 out.
			up.Enqueue(providerstest.Reply{Text: "hello", Usage: providerstest.Usage{Input: 100, Output: 20}})
			if resp := chat(t, srv.URL, token, mini, "X-Request-Id", "caller-id-1"); resp.StatusCode != 200 || resp.Header.Get("X-Request-Id") != "caller-id-1" {
				t.Fatalf("ok request: %d, request id %q", resp.StatusCode, resp.Header.Get("X-Request-Id"))
			}
			// a fallback: gpt-4o-mini's upstream is unavailable, gpt-4.1-mini answers.
			up.Enqueue(providerstest.Reply{Status: 503, Message: "down"}, providerstest.Reply{Text: "from 4.1", Usage: providerstest.Usage{Input: 10, Output: 5}})
			if resp := chat(t, srv.URL, token, mini); resp.StatusCode != 200 || resp.Header.Get("X-Gw-Model") != "openai/gpt-4.1-mini" {
				t.Fatalf("fallback request: %d %q", resp.StatusCode, resp.Header.Get("X-Gw-Model"))
			}
			// an upstream error: both attempts fail.
			up.Enqueue(providerstest.Reply{Status: 503, Message: "down"}, providerstest.Reply{Status: 503, Message: "down"})
			if resp := chat(t, srv.URL, token, mini); resp.StatusCode != 502 {
				t.Fatalf("upstream error: %d", resp.StatusCode)
			}
			// denied by policy, an unknown model (never a label), refused
			// by the rate limit, a bad key.
			if resp := chat(t, srv.URL, token, `{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}],`+
				`"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`); resp.StatusCode != 403 {
				t.Fatalf("policy denial: %d", resp.StatusCode)
			}
			if resp := chat(t, srv.URL, token, `{"model":"made-up/model-`+t.Name()+`","messages":[{"role":"user","content":"hi"}]}`); resp.StatusCode != 404 {
				t.Fatalf("unknown model: %d", resp.StatusCode)
			}
			up.Enqueue(providerstest.Reply{Text: "x", Usage: providerstest.Usage{Input: 1, Output: 1}})
			if resp := chat(t, srv.URL, limited, mini); resp.StatusCode != 200 {
				t.Fatalf("limited key, first request: %d", resp.StatusCode)
			}
			if resp := chat(t, srv.URL, limited, mini); resp.StatusCode != 429 {
				t.Fatalf("limited key, second request: %d", resp.StatusCode)
			}
			if resp := chat(t, srv.URL, "sk-gw-nope", mini); resp.StatusCode != 401 {
				t.Fatalf("bad key: %d", resp.StatusCode)
			}
			// a stream, for time to first token.
			// Two deltas of 8 bytes: an honest 3 output tokens, at or over the
			// floor gw proves (a token a delta; the text's o200k count).
			up.Enqueue(providerstest.Reply{Text: "streamed answer", ChunkSize: 8, Usage: providerstest.Usage{Input: 7, Output: 3}})
			if resp := chat(t, srv.URL, token, `{"model":"openai/gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`); resp.StatusCode != 200 {
				t.Fatalf("stream: %d", resp.StatusCode)
			}

			fams := scrape(t, srv.MetricsURL)
			const ep = "chat.completions"
			for _, c := range []struct {
				name   string
				labels []string
				want   float64
			}{
				{"gw_inference_requests_total", []string{"endpoint", ep, "model", "openai/gpt-4o-mini", "status", "200", "outcome", "ok"}, 3},
				{"gw_inference_requests_total", []string{"model", "openai/gpt-4.1-mini", "provider", "openai", "status", "200", "outcome", "ok"}, 1},
				{"gw_inference_requests_total", []string{"status", "502", "outcome", "upstream_error"}, 1},
				{"gw_inference_requests_total", []string{"model", "openai/gpt-4o-mini", "status", "403", "outcome", "denied_policy"}, 1},
				{"gw_inference_requests_total", []string{"model", "", "status", "404", "outcome", "invalid_request"}, 1},
				{"gw_inference_requests_total", []string{"model", "", "status", "429", "outcome", "denied_rate_limit"}, 1},
				{"gw_inference_requests_total", []string{"status", "401", "outcome", "unauthorized"}, 1},
				{"gw_inference_request_duration_seconds", []string{"endpoint", ep}, 9},
				{"gw_inference_overhead_seconds", []string{"endpoint", ep}, 6},
				{"gw_inference_time_to_first_token_seconds", []string{"model", "openai/gpt-4o-mini"}, 1},
				// 2 + 2 failed attempts, 4 answered.
				{"gw_upstream_request_duration_seconds", []string{"outcome", "upstream_unavailable"}, 3},
				{"gw_upstream_request_duration_seconds", []string{"outcome", "ok"}, 4},
				{"gw_inference_tokens_total", []string{"model", "openai/gpt-4o-mini", "type", "input"}, 108},
				{"gw_inference_tokens_total", []string{"model", "openai/gpt-4o-mini", "type", "output"}, 24},
				{"gw_inference_tokens_total", []string{"model", "openai/gpt-4.1-mini", "type", "input"}, 10},
				{"gw_inference_fallbacks_total", []string{"trigger", "upstream_unavailable"}, 2},
				{"gw_rate_limit_refusals_total", []string{"limit", "requests"}, 1},
				{"gw_usage_sink_queue_depth", nil, -2},
				{"gw_bundle_version", nil, -2},
				{"gw_bundle_age_seconds", nil, -2},
				{"gw_api_requests_total", []string{"method", "POST", "route", "/api/v1/organizations/{org_id}/workspaces/{workspace_ref}/inference-keys", "status", "200"}, 2},
				{"gw_api_request_duration_seconds", []string{"method", "POST", "route", "/api/v1/organizations/{org_id}/workspaces/{workspace_ref}/inference-keys"}, 2},
				{"go_sql_open_connections", []string{"db_name", "gw"}, -2},
				{"gw_build_info", []string{"version", "test", "role", "all"}, 1},
			} {
				got := value(fams, c.name, c.labels...)
				if c.want == -2 { // present, any value
					if got < 0 {
						t.Errorf("%s%v missing", c.name, c.labels)
					}
					continue
				}
				if got != c.want {
					t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
				}
			}
			// Every family gw documents is exported by role all (but the
			// spool's, a remote data plane's; TestHealthAndReadiness).
			for _, name := range telemetry.Families {
				if _, ok := fams[name]; !ok && name != "gw_usage_spool_depth" {
					t.Errorf("family %s not exported", name)
				}
			}
			// Cost: 108 in and 24 out on gpt-4o-mini at $0.15 and $0.60 per
			// million tokens, plus the fallback model's and the limited
			// key's; gpt-4o-mini's alone is exact.
			if got := value(fams, "gw_inference_cost_usd_total", "model", "openai/gpt-4o-mini"); got < 0.0000305 || got > 0.0000307 {
				t.Errorf("gpt-4o-mini cost %v", got)
			}
			if v := value(fams, "gw_bundle_version"); v < 1 {
				t.Errorf("bundle version %v", v)
			}
			// The access log line of the first request carries its fields,
			// with the caller's request id.
			var line string
			for _, l := range strings.Split(srv.logs.String(), "\n") {
				if strings.Contains(l, "request_id=caller-id-1") {
					line = l
				}
			}
			for _, want := range []string{"status=200", "model_requested=openai/gpt-4o-mini", "model=openai/gpt-4o-mini", "provider=openai",
				"input_tokens=100", "output_tokens=20", "cost_usd=", "attempts=1", "org_id=", "workspace_id=", "key_id=", "total_ms=", "upstream_ms="} {
				if !strings.Contains(line, want) {
					t.Errorf("access log line lacks %q: %s", want, line)
				}
			}
			if strings.Contains(srv.logs.String(), token) {
				t.Error("an inference key reached the log")
			}
			// The usage event carries the same request id.
			waitUntil(t, "the usage event with the caller's request id", func() bool {
				req, _ := http.NewRequest("GET", srv.URL+"/api/v1/organizations/default/usage-events", nil)
				req.Header.Set("Authorization", "Bearer "+srv.token)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return false
				}
				defer resp.Body.Close()
				var page wire.Page[wire.UsageEvent]
				if json.NewDecoder(resp.Body).Decode(&page) != nil {
					return false
				}
				for _, e := range page.Data {
					if e.RequestID != nil && *e.RequestID == "caller-id-1" {
						// The access line names the event's organization
						// and workspace (made once per bundle).
						for _, want := range []string{"org_id=" + e.OrgID.String(), "workspace_id=" + e.WorkspaceID.String()} {
							if !strings.Contains(line, want) {
								t.Errorf("access log line lacks %q: %s", want, line)
							}
						}
						return true
					}
				}
				return false
			})
			// Metrics stay off the public port.
			if code, _ := get(t, srv.URL+"/metrics"); code == 200 {
				t.Error("/metrics is served on the public port")
			}
		})
	}
}

// TestMetricsNameEachEndpoint: every dialect counts under its own
// endpoint label, answered or refused before admission (issue 22, row 13).
func TestMetricsNameEachEndpoint(t *testing.T) {
	srv := startServer(t, server.Config{Role: server.RoleAll, DB: storetest.Open(t, storetest.SQLite), Keyring: keyring(t)})
	up, token, _ := setupInference(t, srv.Owner)
	for _, c := range []struct{ path, endpoint, body string }{
		{"responses", "responses", `{"model":"openai/gpt-4o-mini","input":"hi"}`},
		{"messages", "messages", `{"model":"openai/gpt-4o-mini","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`},
		{"embeddings", "embeddings", `{"model":"openai/text-embedding-3-small","input":"hi"}`},
		{"chat/completions", "chat.completions", mini},
	} {
		up.Enqueue(providerstest.Reply{Text: "hello", Usage: providerstest.Usage{Input: 3, Output: 2}})
		if resp := infer(t, srv.URL+"/inf/v1/"+c.path, token, c.body); resp.StatusCode != 200 {
			t.Fatalf("%s: %d", c.path, resp.StatusCode)
		}
		if resp := infer(t, srv.URL+"/inf/v1/"+c.path, "sk-gw-nope", c.body); resp.StatusCode != 401 {
			t.Fatalf("%s with a bad key: %d", c.path, resp.StatusCode)
		}
	}
	// count_tokens calls no upstream here (an OpenAI model's count is
	// gw's estimate), and is counted as an endpoint of its own (issue 26,
	// row 14).
	const count = `{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`
	if resp := infer(t, srv.URL+"/inf/v1/messages/count_tokens", token, count); resp.StatusCode != 200 {
		t.Fatalf("count_tokens: %d", resp.StatusCode)
	}
	if resp := infer(t, srv.URL+"/inf/v1/messages/count_tokens", "sk-gw-nope", count); resp.StatusCode != 401 {
		t.Fatalf("count_tokens with a bad key: %d", resp.StatusCode)
	}
	fams := scrape(t, srv.MetricsURL)
	if got := value(fams, "gw_inference_requests_total", "endpoint", "messages.count_tokens", "model", "openai/gpt-4o-mini",
		"status", "200", "outcome", "ok"); got != 1 {
		t.Errorf("count_tokens answered: %v requests counted, want 1", got)
	}
	for _, ep := range []string{"responses", "messages", "embeddings", "chat.completions", "messages.count_tokens"} {
		if got := value(fams, "gw_inference_requests_total", "endpoint", ep, "status", "200", "outcome", "ok"); got != 1 {
			t.Errorf("endpoint %s answered: %v requests counted, want 1", ep, got)
		}
		if got := value(fams, "gw_inference_requests_total", "endpoint", ep, "status", "401"); got != 1 {
			t.Errorf("endpoint %s refused: %v requests counted, want 1", ep, got)
		}
	}
}

func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestHealthAndReadiness: a control plane is ready while its database
// answers; a data plane only once a bundle is admitted, and alive before.
// TestPprofBehindItsFlag: net/http/pprof is served on the metrics
// listener only with Pprof (gw serve --pprof), and never on the public one.
func TestPprofBehindItsFlag(t *testing.T) {
	off := startServer(t, server.Config{Role: server.RoleAll, DB: storetest.Open(t, storetest.SQLite), Keyring: keyring(t)})
	for _, u := range []string{off.MetricsURL, off.URL} {
		if code, _ := get(t, u+"/debug/pprof/"); code == 200 {
			t.Fatalf("%s/debug/pprof/ without the flag: %d", u, code)
		}
	}
	if code, _ := get(t, off.MetricsURL+"/metrics"); code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	on := startServer(t, server.Config{Role: server.RoleAll, DB: storetest.Open(t, storetest.SQLite), Keyring: keyring(t), Pprof: true})
	if code, body := get(t, on.MetricsURL+"/debug/pprof/"); code != 200 || !strings.Contains(body, "goroutine") {
		t.Fatalf("/debug/pprof/ with the flag: %d %.200s", code, body)
	}
	if code, body := get(t, on.MetricsURL+"/debug/pprof/heap?debug=1"); code != 200 || !strings.Contains(body, "heap profile") {
		t.Fatalf("heap profile: %d %.200s", code, body)
	}
	if code, _ := get(t, on.URL+"/debug/pprof/"); code == 200 {
		t.Fatalf("pprof on the public listener: %d", code)
	}
}

func TestHealthAndReadiness(t *testing.T) {
	cp := startServer(t, server.Config{Role: server.RoleControlPlane, DB: storetest.Open(t, storetest.SQLite), Keyring: keyring(t)})
	for _, u := range []string{cp.URL, cp.MetricsURL} {
		if code, body := get(t, u+"/healthz"); code != 200 {
			t.Fatalf("control plane /healthz: %d %s", code, body)
		}
		if code, body := get(t, u+"/readyz"); code != 200 || !strings.Contains(body, "ready") {
			t.Fatalf("control plane /readyz: %d %s", code, body)
		}
	}
	ctx := context.Background()
	dpKey, err := cp.Owner.CreateManagementKey(ctx, client.InstanceScope(), wire.ManagementKeyCreate{
		Permissions: []string{"bundles.read", "usage.ingest", "data-planes.heartbeat"}, Label: "dp"})
	if err != nil {
		t.Fatal(err)
	}
	// The data plane reaches the control plane through a gate that holds
	// its bundles back until the test opens it.
	var open atomic.Bool
	target := cp.URL
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/data-plane/bundles" && !open.Load() {
			http.Error(w, "held back", http.StatusServiceUnavailable)
			return
		}
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, target+r.URL.RequestURI(), r.Body)
		req.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(gate.Close)
	dp := startServer(t, server.Config{Role: server.RoleDataPlane, ControlPlaneURL: gate.URL, Token: dpKey.Token,
		DataPlaneID: "dp-ready", StateDir: t.TempDir(),
		PollInterval: 50 * time.Millisecond, HeartbeatInterval: time.Second})
	time.Sleep(200 * time.Millisecond)
	if code, _ := get(t, dp.URL+"/healthz"); code != 200 {
		t.Fatalf("data plane not alive before its first bundle: %d", code)
	}
	if code, body := get(t, dp.URL+"/readyz"); code != 503 || !strings.Contains(body, "waiting for bundles") {
		t.Fatalf("data plane ready before its first bundle: %d %s", code, body)
	}
	// Enrolled for the default organization, then let through.
	waitUntil(t, "the data plane to ask to be enrolled", func() bool { _, err := cp.Owner.GetEnrollment(ctx, "dp-ready"); return err == nil })
	if _, err := cp.Owner.ApproveEnrollment(ctx, "dp-ready", wire.DataPlaneEnrollmentApprove{Organizations: []string{"default"}}); err != nil {
		t.Fatal(err)
	}
	open.Store(true)
	waitUntil(t, "the data plane to be ready", func() bool { code, _ := get(t, dp.URL+"/readyz"); return code == 200 })
	if code, _ := get(t, dp.MetricsURL+"/readyz"); code != 200 {
		t.Fatalf("metrics listener /readyz: %d", code)
	}
	fams := scrape(t, dp.MetricsURL)
	var latest map[string]int64
	waitUntil(t, "the data plane's heartbeat", func() bool {
		list, err := cp.Owner.ListDataPlanes(ctx)
		if err != nil || len(list) != 1 {
			return false
		}
		latest = list[0].LatestBundleVersions
		return len(latest) == 1
	})
	for org, version := range latest {
		if v := value(fams, "gw_bundle_version", "org_id", org); v != float64(version) {
			t.Errorf("gw_bundle_version{org_id=%s} = %v, want %d", org, v, version)
		}
	}
	if v := value(fams, "gw_usage_spool_depth"); v != 0 {
		t.Errorf("gw_usage_spool_depth = %v", v)
	}
	if v := value(fams, "gw_build_info", "role", "data-plane"); v != 1 {
		t.Errorf("gw_build_info = %v", v)
	}
}

// TestTracesExported receives gw's OTLP export in an in-process collector:
// one server span per request, joined to the caller's traceparent, with
// children for admission, each upstream attempt and the usage recording,
// GenAI attributes, and the trace context forwarded to the upstream.
func TestTracesExported(t *testing.T) {
	var mu sync.Mutex
	var spans []*tracepb.Span
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Errorf("collector: %v", err)
		}
		mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				spans = append(spans, ss.Spans...)
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		_, _ = w.Write(b)
	}))
	t.Cleanup(collector.Close)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", collector.URL+"/v1/traces")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")

	srv := startServer(t, server.Config{Role: server.RoleAll, DB: storetest.Open(t, storetest.SQLite), Keyring: keyring(t)})
	up, token, _ := setupInference(t, srv.Owner)
	up.Enqueue(providerstest.Reply{Status: 503, Message: "down"}, providerstest.Reply{Text: "from 4.1", Usage: providerstest.Usage{Input: 10, Output: 5}})
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	if resp := chat(t, srv.URL, token, mini, "Traceparent", "00-"+traceID+"-"+parentID+"-01"); resp.StatusCode != 200 {
		t.Fatalf("chat: %d", resp.StatusCode)
	}
	// An embedding is no chat: its spans say so (issue 22, row 13).
	const embedTraceID = "5cf92f3577b34da6a3ce929d0e0e4737"
	up.Enqueue(providerstest.Reply{Usage: providerstest.Usage{Input: 2}})
	if resp := infer(t, srv.URL+"/inf/v1/embeddings", token, `{"model":"openai/text-embedding-3-small","input":"hi"}`,
		"Traceparent", "00-"+embedTraceID+"-"+parentID+"-01"); resp.StatusCode != 200 {
		t.Fatalf("embeddings: %d", resp.StatusCode)
	}
	// count_tokens is named after its route like every endpoint (issue
	// 26, row 14), not after the mux's /inf/v1/.
	const countTraceID = "6df92f3577b34da6a3ce929d0e0e4738"
	if resp := infer(t, srv.URL+"/inf/v1/messages/count_tokens", token, `{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`,
		"Traceparent", "00-"+countTraceID+"-"+parentID+"-01"); resp.StatusCode != 200 {
		t.Fatalf("count_tokens: %d", resp.StatusCode)
	}
	// The native calls (Responses to OpenAI, Messages to Anthropic) carry
	// gw's attempt span upstream too, never the caller's (issue 29).
	const responsesTraceID, messagesTraceID = "7ef92f3577b34da6a3ce929d0e0e4739", "8ff92f3577b34da6a3ce929d0e0e473a"
	up.Enqueue(providerstest.Reply{Text: "r", Usage: providerstest.Usage{Input: 2, Output: 1}})
	if resp := infer(t, srv.URL+"/inf/v1/responses", token, `{"model":"openai/gpt-4o-mini","input":"hi"}`,
		"Traceparent", "00-"+responsesTraceID+"-"+parentID+"-01"); resp.StatusCode != 200 {
		t.Fatalf("responses: %d", resp.StatusCode)
	}
	ant := providerstest.NewAnthropic(t, "sk-ant-telemetry")
	if _, err := srv.Owner.CreateCredential(context.Background(), client.WorkspaceScope("default", "default"), wire.ProviderCredentialCreate{
		Provider: "anthropic", Label: "fake", Secret: ant.Key, BaseURL: ant.BaseURL()}); err != nil {
		t.Fatal(err)
	}
	if resp := infer(t, srv.URL+"/inf/v1/messages", token, `{"model":"anthropic/claude-haiku-4-5-20251001","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`,
		"Traceparent", "00-"+messagesTraceID+"-"+parentID+"-01"); resp.StatusCode != 200 {
		t.Fatalf("messages: %d", resp.StatusCode)
	}
	srv.stop() // flushes the exporter

	mu.Lock()
	defer mu.Unlock()
	hexID := hex.EncodeToString
	// attemptSpan is the id of the one client span (the upstream attempt)
	// of a trace.
	attemptSpan := func(traceID string) string {
		var ids []string
		for _, s := range spans {
			if hexID(s.TraceId) == traceID && s.Kind == tracepb.Span_SPAN_KIND_CLIENT {
				ids = append(ids, hexID(s.SpanId))
			}
		}
		if len(ids) != 1 {
			t.Fatalf("trace %s has %d attempt spans", traceID, len(ids))
		}
		return ids[0]
	}
	for _, native := range []struct {
		name, traceID string
		reqs          []providerstest.Request
	}{
		{"embeddings", embedTraceID, up.Requests()[2:3]},
		{"responses", responsesTraceID, up.Requests()[3:4]},
		{"messages", messagesTraceID, ant.Requests()},
	} {
		if len(native.reqs) != 1 {
			t.Fatalf("%s: %d upstream requests", native.name, len(native.reqs))
		}
		want := "00-" + native.traceID + "-" + attemptSpan(native.traceID) + "-01"
		if tp := native.reqs[0].Header.Get("Traceparent"); tp != want {
			t.Errorf("%s upstream traceparent %q, want gw's attempt span %q", native.name, tp, want)
		}
	}
	var root *tracepb.Span
	embedOps := map[string]string{}
	for _, s := range spans {
		if hexID(s.TraceId) == traceID && hexID(s.ParentSpanId) == parentID {
			root = s
		}
		if hexID(s.TraceId) == embedTraceID {
			for _, a := range s.Attributes {
				if a.Key == "gen_ai.operation.name" {
					embedOps[s.Name] = a.Value.GetStringValue()
				}
			}
		}
	}
	var countSpans []string
	for _, s := range spans {
		if hexID(s.TraceId) == countTraceID && hexID(s.ParentSpanId) == parentID {
			route := ""
			for _, a := range s.Attributes {
				if a.Key == "http.route" {
					route = a.Value.GetStringValue()
				}
			}
			countSpans = append(countSpans, s.Name+" route="+route)
		}
	}
	if len(countSpans) != 1 || countSpans[0] != "POST /inf/v1/messages/count_tokens route=/inf/v1/messages/count_tokens" {
		t.Errorf("count_tokens server spans: %v", countSpans)
	}
	if embedOps["POST /inf/v1/embeddings"] != "embeddings" || embedOps["embeddings openai/text-embedding-3-small"] != "embeddings" {
		t.Errorf("embeddings spans' gen_ai.operation.name: %v", embedOps)
	}
	if root == nil {
		t.Fatalf("no server span joined to the caller's trace among %d spans", len(spans))
	}
	if root.Kind != tracepb.Span_SPAN_KIND_SERVER || root.Name != "POST /inf/v1/chat/completions" {
		t.Errorf("root span %q kind %v", root.Name, root.Kind)
	}
	attrs := func(s *tracepb.Span) map[string]string {
		out := map[string]string{}
		for _, a := range s.Attributes {
			if _, ok := a.Value.Value.(*commonpb.AnyValue_IntValue); ok {
				out[a.Key] = strconv.FormatInt(a.Value.GetIntValue(), 10)
			} else {
				out[a.Key] = a.Value.GetStringValue()
			}
		}
		return out
	}
	ra := attrs(root)
	for k, want := range map[string]string{"gen_ai.operation.name": "chat", "gen_ai.request.model": "openai/gpt-4o-mini",
		"gen_ai.response.model": "openai/gpt-4.1-mini", "gen_ai.provider.name": "openai", "gen_ai.usage.input_tokens": "10",
		"gen_ai.usage.output_tokens": "5", "http.response.status_code": "200"} {
		if ra[k] != want {
			t.Errorf("root span %s = %q, want %q", k, ra[k], want)
		}
	}
	var children []*tracepb.Span
	for _, s := range spans {
		if bytes.Equal(s.ParentSpanId, root.SpanId) {
			children = append(children, s)
		}
	}
	// Spans are exported as they end; order them by start.
	sort.Slice(children, func(i, j int) bool { return children[i].StartTimeUnixNano < children[j].StartTimeUnixNano })
	var names []string
	for _, c := range children {
		names = append(names, c.Name)
	}
	want := []string{"gw.admission", "chat openai/gpt-4o-mini", "chat openai/gpt-4.1-mini", "gw.usage.record"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("children %v, want %v", names, want)
	}
	first, second := children[1], children[2]
	if first.Kind != tracepb.Span_SPAN_KIND_CLIENT || attrs(first)["error.type"] != "upstream_unavailable" ||
		attrs(first)["gen_ai.request.model"] != "openai/gpt-4o-mini" || attrs(first)["gen_ai.provider.name"] != "openai" {
		t.Errorf("first attempt span: %v %v", first.Kind, attrs(first))
	}
	if a := attrs(second); a["gen_ai.response.model"] != "openai/gpt-4.1-mini" || a["gen_ai.usage.output_tokens"] != "5" || a["error.type"] != "" {
		t.Errorf("second attempt span: %v", a)
	}
	// Each upstream call carried its attempt span as the parent.
	reqs := up.Requests()[:2] // the others are the native calls'
	if len(reqs) != 2 {
		t.Fatalf("%d upstream requests", len(reqs))
	}
	for i, r := range reqs {
		tp := r.Header.Get("Traceparent")
		if tp != "00-"+traceID+"-"+hexID(children[1+i].SpanId)+"-01" {
			t.Errorf("upstream request %d traceparent %q, attempt span %s", i, tp, hexID(children[1+i].SpanId))
		}
	}
}
