package dataplane_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/budgets"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/publish"
	"github.com/gw-gateway/gw/server/reseal"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/fixture"
	"github.com/gw-gateway/gw/wire"
)

// The models the inference tests use, one per fake upstream.
const (
	gptMini = "openai/gpt-4o-mini"
	haiku   = "anthropic/claude-haiku-4-5-20251001"
)

// infEnv is a control plane and a data plane with inference: one
// organization whose workspace has org-scope credentials for openai and
// anthropic pointing at fake upstreams, a key, a capturing usage sink, and
// the plane behind an HTTP server. Every test fails if a provider secret
// shows up in the plane's log.
type infEnv struct {
	db      *bun.DB
	st      *store.Store
	kr      *secrets.Keyring
	plane   *dataplane.Plane
	refresh *publish.Refresher
	signer  ed25519.PrivateKey
	opts    dataplane.Options
	usage   *captureSink
	log     *syncBuffer
	srv     *httptest.Server

	org       *fixture.Org
	ws, owner uuid.UUID
	token     string
	keyID     uuid.UUID

	openai     *providerstest.OpenAI
	anthropic  *providerstest.Anthropic
	openaiCred uuid.UUID
	// clouds are the cloud providers' fakes, for the tests that ask for
	// them (withClouds).
	clouds *cloudFakes
	// secrets are the provider secrets in use, which must never leak.
	secrets []string
}

// infOptions adjusts the plane an infEnv builds.
type infOptions func(*dataplane.Options)

// learning turns routing's memory of upstream failures on.
func learning(o *dataplane.Options) { o.ForgetFailures = false }

func newInfEnv(t testing.TB, db *bun.DB, opts ...infOptions) *infEnv {
	t.Helper()
	ctx := context.Background()
	st := store.New(db)
	fixture.SeedCatalog(t, st)
	kr := fixture.Keyring(t)
	key, err := publish.SigningKey(ctx, st, kr)
	if err != nil {
		t.Fatal(err)
	}
	e := &infEnv{db: db, st: st, kr: kr, usage: &captureSink{}, log: &syncBuffer{}}
	o := dataplane.Options{
		Keyring: kr, Usage: e.usage, UpstreamTimeout: 10 * time.Second, Budgets: &budgets.Leases{Store: st},
		Logger: slog.New(slog.NewTextHandler(e.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		// Most tests script failures one after another on one target;
		// those of routing's memory of failures turn it on (learning).
		ForgetFailures: true,
	}
	for _, f := range opts {
		f(&o)
	}
	e.plane = dataplane.NewPlane(key.Public().(ed25519.PublicKey), o)
	e.signer, e.opts = key, o
	e.refresh = &publish.Refresher{Compiler: &publish.Compiler{Store: st, Signer: key}, Plane: e.plane, Store: st}

	e.org = fixture.NewOrg(t, st, kr, "acme")
	e.ws = e.org.Workspace("main")
	e.owner = e.org.Member(auth.MembershipActive)
	e.token, e.keyID = e.org.Key(e.ws, e.owner, nil)
	e.openai = providerstest.NewOpenAI(t, "sk-openai-"+uuid.NewString())
	e.anthropic = providerstest.NewAnthropic(t, "sk-ant-"+uuid.NewString())
	e.openaiCred = e.credential(t, &e.org.ID, nil, "openai", e.openai.Key, e.openai.BaseURL())
	e.credential(t, &e.org.ID, nil, "anthropic", e.anthropic.Key, e.anthropic.BaseURL())

	e.srv = httptest.NewServer(answers.Wrap(e.plane))
	t.Cleanup(e.srv.Close)
	syncLoop(t, e.plane)
	t.Cleanup(func() {
		for _, s := range e.secrets {
			if strings.Contains(e.log.String(), s) {
				t.Errorf("a provider secret is in the log:\n%s", e.log.String())
			}
		}
	})
	return e
}

// anotherPlane is a second data plane with the same options and lease
// source (the same control plane), serving the same bundles: another
// process of the deployment.
func (e *infEnv) anotherPlane(t *testing.T) *httptest.Server {
	t.Helper()
	o := e.opts
	o.BudgetHolder = "second-" + uuid.NewString()[:8]
	p := dataplane.NewPlane(e.signer.Public().(ed25519.PublicKey), o)
	r := &publish.Refresher{Compiler: e.refresh.Compiler, Plane: p, Store: e.st}
	if err := r.RefreshAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	syncLoop(t, p)
	return srv
}

// syncLoop reports the plane's budget spend and gives back what it holds
// beyond its keep, as gw serve does every 2 s, until the test ends or the
// returned func is called.
func syncLoop(t testing.TB, p *dataplane.Plane) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_ = p.SyncBudgets(ctx)
			}
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// credential stores a provider credential with its own base URL, sealed
// as the management API seals it.
func (e *infEnv) credential(t testing.TB, org, ws *uuid.UUID, provider, secret, baseURL string) uuid.UUID {
	t.Helper()
	id := uuid.New()
	sealed, err := e.kr.Seal([]byte(secret), reseal.CredentialAAD(id))
	if err != nil {
		t.Fatal(err)
	}
	now := store.Now()
	c := &store.ProviderCredential{ID: id, OrgID: org, WorkspaceID: ws, Provider: provider, Label: provider,
		BaseURL: &baseURL, SecretSealed: sealed, SecretHint: "…" + secret[len(secret)-4:], CreatedAt: now, UpdatedAt: now}
	if err := e.st.CreateProviderCredential(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	e.secrets = append(e.secrets, secret)
	return id
}

// policy adds a workspace policy of the given rules.
func (e *infEnv) policy(t *testing.T, rules ...string) {
	t.Helper()
	e.org.Policy(e.ws, "p-"+uuid.NewString()[:8], true, `{"target":{"kind":"workspace"},"rules":[`+strings.Join(rules, ",")+`]}`)
}

func (e *infEnv) sync(t *testing.T) {
	t.Helper()
	if err := e.refresh.RefreshAll(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// client is the official OpenAI SDK pointed at the gateway.
func (e *infEnv) client() openai.Client {
	return openai.NewClient(option.WithBaseURL(e.srv.URL+"/inf/v1/"), option.WithAPIKey(e.token), option.WithMaxRetries(0))
}

// sdk is client, addressable.
func (e *infEnv) sdk() *openai.Client {
	c := e.client()
	return &c
}

// post sends a raw chat completion request.
func (e *infEnv) post(t *testing.T, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.srv.URL+"/inf/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// postError sends a request that must fail with status and returns the
// OpenAI error, failing if the body has another shape or leaks a secret.
func (e *infEnv) postError(t *testing.T, body string, status int) openAIError {
	t.Helper()
	resp := e.post(t, body)
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d: %s", resp.StatusCode, status, buf.String())
	}
	for _, s := range e.secrets {
		if strings.Contains(buf.String(), s) {
			t.Fatalf("error body leaks a secret: %s", buf.String())
		}
	}
	var out openAIError
	dec := json.NewDecoder(&buf)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("error body is not the OpenAI shape: %v", err)
	}
	return out
}

func code(e openAIError) string {
	if e.Error.Code == nil {
		return ""
	}
	return *e.Error.Code
}

func param(e openAIError) string {
	if e.Error.Param == nil {
		return ""
	}
	return *e.Error.Param
}

// captureSink keeps the usage events it is given, and passes them on to
// forward when set.
type captureSink struct {
	mu      sync.Mutex
	events  []wire.UsageEventIn
	forward dataplane.UsageSink
}

func (c *captureSink) Record(e wire.UsageEventIn) {
	// Passed on before it is seen: a test that finds the event and then
	// reads the store must find it there (passed on after the unlock, a
	// loaded machine let the store's flush come first).
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.forward != nil {
		c.forward.Record(e)
	}
	c.events = append(c.events, e)
}

// reset forgets the events so far.
func (c *captureSink) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = nil
}

func (c *captureSink) snapshot() []wire.UsageEventIn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]wire.UsageEventIn(nil), c.events...)
}

// wait returns the events once there are n: the handler records after the
// answer is written, so the client may read it first.
func (c *captureSink) wait(t testing.TB, n int) []wire.UsageEventIn {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.mu.Lock()
		got := append([]wire.UsageEventIn(nil), c.events...)
		c.mu.Unlock()
		if len(got) >= n {
			if len(got) > n {
				t.Fatalf("%d usage events, want %d: %+v", len(got), n, got)
			}
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d usage events after 5s, want %d", len(got), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// last waits for the n-th event and returns it.
func (c *captureSink) last(t *testing.T, n int) wire.UsageEventIn {
	t.Helper()
	events := c.wait(t, n)
	return events[n-1]
}

// syncBuffer is a log destination several goroutines write to.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
