// Package dataplane serves /inf/v1 from admitted bundles (DESIGN §8).
//
// A Plane holds the verified bundle of every organization together with a
// runtime index built once at admission: inference keys by token hash, and
// for each key the models it may see, already encoded as the bytes a
// response carries. A discovery request therefore reads only memory: no
// database, no secret, no provider (spec 4.9 rule 5). A chat completion
// (inference.go) reads memory too; it opens a credential's secret, once
// per bundle, and calls the provider.
package dataplane

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"github.com/gw-gateway/gw/server/archive"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/egress"
	"github.com/gw-gateway/gw/server/mcpgw"
	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/server/ratelimit"
	"github.com/gw-gateway/gw/server/respcache"
	"github.com/gw-gateway/gw/server/spend"
	"github.com/gw-gateway/gw/server/telemetry"
)

// Options configure a Plane.
type Options struct {
	// Now is the clock key expiry is checked against; time.Now when nil.
	Now func() time.Time

	// Keyring opens provider credential secrets (the master keyring in
	// process; a remote data plane's own key, to which its bundles' secrets
	// are sealed), and Usage receives one event per chat completion.
	// Inference needs both: without them the plane serves discovery only
	// and chat completions answer 503.
	Keyring SecretOpener
	Usage   UsageSink
	// Upstreams are the provider adapters; when nil, the adapters on a
	// client that holds every connection to the egress policy.
	Upstreams *providers.Set
	// Egress is this process's part of the egress policy
	// (--egress-deny-private, and a resolver for tests); the instance's
	// deny and allow lists arrive in bundles.
	Egress egress.Policy
	// UpstreamTimeout bounds an upstream call that no fallback rule times
	// (DefaultUpstreamTimeout when 0): a non-streaming call whole, a
	// streaming one until its first chunk.
	UpstreamTimeout time.Duration
	// MCPTimeout cuts an MCP upstream that does not answer
	// (mcpgw.DefaultTimeout when 0).
	MCPTimeout time.Duration
	// MaxStreamDuration ends any stream that lasts longer, billed for what
	// it relayed (DefaultMaxStreamDuration when 0).
	MaxStreamDuration time.Duration
	// MaxSocketDuration closes a Responses WebSocket that has been open
	// longer (DefaultMaxSocketDuration, OpenAI's 60 minutes, when 0).
	MaxSocketDuration time.Duration
	// MaxRequestBytes bounds a chat completion's body
	// (DefaultMaxRequestBytes when 0).
	MaxRequestBytes int64
	// ArchiveDir is where payloads wait for their workspace's archive
	// (issue 32); "" archives nothing.
	ArchiveDir string
	// BodyReadTimeout bounds how long a body may take to arrive
	// (DefaultBodyReadTimeout when 0).
	BodyReadTimeout time.Duration
	// BodyBytesInFlight bounds the inference body bytes held at once,
	// across requests (DefaultBodyBytesInFlight when 0), and
	// KeyBodyBytesInFlight one key's share of them
	// (DefaultKeyBodyBytesInFlight when 0); a body over either is refused,
	// 503 overloaded (bodybudget.go).
	BodyBytesInFlight    int64
	KeyBodyBytesInFlight int64
	// KeyTagSetsPerMinute bounds the tag sets new to a key it may bring
	// in a minute (DefaultKeyTagSetsPerMinute when 0, none when
	// negative); past it, 429 too_many_tag_sets (tagsets.go).
	KeyTagSetsPerMinute int
	// Logger receives upstream failures and fallbacks; never a secret.
	Logger *slog.Logger
	// Budgets grants budget leases; without it a request that a budget
	// rule matches is refused (no spend can be proven to fit).
	Budgets BudgetSource
	// BudgetJournal keeps the budget ledger across restarts; the plane
	// leases under its holder and starts from what it kept. Without one,
	// BudgetHolder names this process to the lease source, and a
	// restarted process must use a new name (DESIGN §6): it does not know
	// what its predecessor spent.
	BudgetJournal *BudgetJournal
	BudgetHolder  string
	// RequestJournal keeps the requests in flight on disk, so that a
	// process killed mid-request bills them at its next start (crash.go):
	// NewPlane records the events of what the last process left to Usage,
	// and settles their reservations in the budget journal's counters.
	RequestJournal *RequestJournal
	// BudgetWait bounds how long a request waits for room that requests
	// in flight hold (DefaultBudgetWait when 0; negative: not at all).
	BudgetWait time.Duration
	// RateLimits grants this plane its share of each key's per-minute
	// limits (ratelimit.Local, the whole limit, when nil). With several
	// data planes, a lease source must slice the limits between them.
	RateLimits ratelimit.Source
	// Metrics counts requests, attempts, tokens and cost; nil counts
	// nothing.
	Metrics *telemetry.Metrics
	// ForgetFailures turns off routing's memory of upstream failures
	// (health.go): every request calls its target whatever the last one
	// met. For tests that script one failure after another on a target.
	ForgetFailures bool
	// OAuthIssuer is the OAuth authorization server the MCP endpoint's
	// protected resource metadata names: the control plane's public URL;
	// "" names the origin the request reached (a plane in process).
	OAuthIssuer string
	// ResponseCacheBytes bounds the response cache (cache.go) held in
	// memory: DefaultResponseCacheBytes when 0, none when negative.
	ResponseCacheBytes int
	// Batches is the control plane's store of files and batches (the
	// all-in-one gw's); nil: /inf/v1/files and /inf/v1/batches answer 501
	// (docs/batches.md). BatchPace is how often RunBatches sends a line
	// (DefaultBatchPace when 0).
	Batches   BatchStore
	BatchPace time.Duration
}

// SecretOpener opens a sealed provider secret bound to aad:
// *secrets.Keyring or *secrets.DataPlaneKey.
type SecretOpener interface {
	Open(sealed, aad string) ([]byte, error)
}

// Plane is the data plane's state: what it has admitted and whether it may
// serve. Requests read it without locks: admissions build a new snapshot and
// swap it in atomically, so a request sees one bundle per organization,
// never half of one.
type Plane struct {
	// sockets are the Responses WebSockets open (responses_ws.go).
	sockets socketRegistry
	// respCache is the response cache (cache.go), nil when off.
	respCache *respcache.Cache
	// pub verifies bundles; a remote data plane may learn it after start
	// (SetSigningKey), and admits nothing until then.
	pub   atomic.Pointer[ed25519.PublicKey]
	now   func() time.Time
	ready atomic.Bool
	state atomic.Pointer[snapshot]
	// writeMu orders admissions so none is lost between load and swap.
	writeMu sync.Mutex
	// inference holds what chat completions need beyond the bundles.
	inference inferenceConfig
	// mcp is the MCP gateway (mcp.go), made on first use.
	mcpOnce    sync.Once
	mcp        *mcpgw.Gateway
	mcpTimeout time.Duration
	// budgets admits requests within the budget leases held.
	budgets budgetState
	// bodies bounds the request-body bytes held in flight.
	bodies *bodyBudget

	// calls holds the upstream calls in flight, each cancelled with
	// errShuttingDown when in-flight chat completions must end
	// (EndInFlight); flights counts the requests.
	calls   callRegistry
	flights atomic.Int64
	// limiter counts each rate-limited key's requests and tokens; it
	// outlives admissions, so a new bundle does not reset a minute.
	limiter *ratelimit.Limiter
	// rateLeases tops up the limiter's grants from the control plane.
	rateLeases *rateLeases
	// health is what routing learned of upstream targets' failures.
	health *healthBook
	// tagSets bounds the tag sets new to each key per minute.
	tagSets *tagSetBound
	// journal records the requests at an upstream, for a crash (nil: none).
	journal *RequestJournal
	// egress is the policy upstream connections are held to: the
	// process's, with the lists of the newest egress setting admitted.
	egress atomic.Pointer[egressInForce]
	// archive writes the payloads of the workspaces that archive them
	// (archive.go; nil: none), until archiveDone.
	archive     *archive.Writer
	archiveDone chan struct{}
	archiveStop context.CancelFunc
	// oauthIssuer is Options.OAuthIssuer; oauthTokens the access tokens
	// verified (oauth.go).
	oauthIssuer string
	oauthTokens tokenCache
	// batches is Options.Batches (nil: none); runner RunBatches' state.
	batches BatchStore
	runner  batchRunner
	uploads chan struct{}
}

// egressInForce is an egress policy and the revision of the instance's
// setting it carries (0: none yet).
type egressInForce struct {
	revision int64
	policy   egress.Policy
}

// ErrStale and ErrForgotten are the admission refusals that leave the
// plane as it was (package bundle, which admitters share).
var (
	ErrStale     = bundle.ErrStale
	ErrForgotten = bundle.ErrForgotten
)

// NewPlane returns a plane that admits bundles signed by pub (nil: none
// until SetSigningKey). It answers 503 to every request until MarkReady.
func NewPlane(pub ed25519.PublicKey, opts Options) *Plane {
	p := &Plane{now: opts.Now}
	p.egress.Store(&egressInForce{policy: opts.Egress})
	p.inference = newInferenceConfig(opts, p.egressPolicy)
	p.mcpTimeout = opts.MCPTimeout
	p.oauthIssuer = strings.TrimSuffix(opts.OAuthIssuer, "/")
	p.batches = opts.Batches
	p.runner = newBatchRunner(opts.BatchPace)
	p.uploads = make(chan struct{}, maxUploads)
	p.health = newHealthBook(opts.Metrics.SetTargetState)
	p.health.off = opts.ForgetFailures
	p.bodies = newBodyBudget(opts.BodyBytesInFlight, opts.KeyBodyBytesInFlight, p.inference.maxBody)
	p.tagSets = newTagSetBound(opts.KeyTagSetsPerMinute)
	p.respCache = newResponseCache(opts, func() time.Time { return p.now() })
	if pub != nil {
		p.SetSigningKey(pub)
	}
	if p.now == nil {
		p.now = time.Now
	}
	holder := opts.BudgetHolder
	if holder == "" {
		holder = "dp-" + uuid.NewString()
	}
	// A rate limit's minute is gone by the time a restarted process
	// serves: its leases are per process, also under a kept holder.
	rateHolder := holder
	ledger := spend.NewLedger()
	if j := opts.BudgetJournal; j != nil {
		holder = j.Holder()
		rateHolder = holder + "~" + uuid.NewString()[:8]
		states := j.States()
		if rj := opts.RequestJournal; rj != nil {
			// Before the ledger counts them: what the requests a crash cut
			// short held beyond their cost goes back.
			states = rj.settleBudgets(states, j.Record)
		}
		ledger.Restore(states)
		ledger.SetJournal(j)
	}
	wait := opts.BudgetWait
	if wait == 0 {
		wait = DefaultBudgetWait
	}
	p.budgets = budgetState{ledger: ledger, source: opts.Budgets, holder: holder, now: p.now, wait: max(wait, 0),
		fetching: map[spend.Counter]chan struct{}{}, asked: map[spend.Counter]time.Time{}}
	rates := opts.RateLimits
	if rates == nil && opts.Budgets != nil {
		// Rate limits hold across data planes through the same leases.
		p.rateLeases = newRateLeases(opts.Budgets, rateHolder, p.inference.log)
		rates = p.rateLeases
	}
	p.limiter = ratelimit.New(rates, p.now)
	p.state.Store(emptySnapshot())
	if opts.ArchiveDir != "" {
		if err := p.startArchiveWriter(opts.ArchiveDir); err != nil {
			p.inference.log.Error("archive: the spool cannot be opened; payloads are not archived", "error", err)
		}
	}
	if rj := opts.RequestJournal; rj != nil {
		p.journal = rj
		if opts.Usage != nil {
			rj.recoverRemnants(opts.Usage, p.inference.log)
		}
	}
	return p
}

// EndInFlight ends the chat completions in flight, for a server whose
// shutdown deadline has come: each ends at once (a stream with an error
// event, a call not yet answered with a 503) and records its usage event.
// It returns when all have, or with ctx's error if ctx ends first. Call it
// before cutting the connections (http.Server.Close), so the callers read
// how their requests ended and nothing already served goes unmetered.
// Requests that arrive afterwards end the same way.
func (p *Plane) EndInFlight(ctx context.Context) error {
	p.calls.end()
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for p.flights.Load() > 0 {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d chat completions still in flight: %w", p.flights.Load(), ctx.Err())
		case <-t.C:
		}
	}
	return nil
}

// callRegistry holds the cancel of every upstream call in flight, so
// that EndInFlight can end them all with errShuttingDown. It replaces a
// context and a context.AfterFunc per request, linked to one plane-wide
// context (issue 33): a call registers the cancel it already has, which
// costs a map entry under a lock and no allocation once the map has
// grown to the calls in flight.
type callRegistry struct {
	mu    sync.Mutex
	ended bool
	calls map[*exchange]context.CancelCauseFunc
}

// add registers x's call; once the plane has ended its calls, a new one
// is cancelled at once, as a context derived from an ended one would be.
func (c *callRegistry) add(x *exchange, cancel context.CancelCauseFunc) {
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		cancel(errShuttingDown)
		return
	}
	if c.calls == nil {
		c.calls = make(map[*exchange]context.CancelCauseFunc)
	}
	c.calls[x] = cancel
	c.mu.Unlock()
}

// remove forgets x's call once it is over.
func (c *callRegistry) remove(x *exchange) {
	c.mu.Lock()
	delete(c.calls, x)
	c.mu.Unlock()
}

// end cancels every call in flight, and every call registered from now
// on, with errShuttingDown.
func (c *callRegistry) end() {
	c.mu.Lock()
	c.ended = true
	cancels := make([]context.CancelCauseFunc, 0, len(c.calls))
	for _, cancel := range c.calls {
		cancels = append(cancels, cancel)
	}
	c.mu.Unlock()
	for _, cancel := range cancels {
		cancel(errShuttingDown)
	}
}

// SetSigningKey sets the key bundles must be signed with.
func (p *Plane) SetSigningKey(pub ed25519.PublicKey) {
	p.pub.Store(&pub)
	p.oauthTokens.reset()
}

// HasSigningKey reports whether the plane knows the bundle signing key.
func (p *Plane) HasSigningKey() bool { return p.pub.Load() != nil }

// MarkReady lets the plane serve. Call it once the initial bundles are
// admitted, so no key is refused merely because its bundle has not arrived.
func (p *Plane) MarkReady() { p.ready.Store(true) }

// Ready reports whether the plane serves requests.
func (p *Plane) Ready() bool { return p.ready.Load() }

// Admit verifies s and, if it is newer than the organization's admitted
// bundle, makes it the one in force. Re-admitting the bundle in force is a
// no-op. A bundle that fails verification (bundle.ErrInvalid), is stale
// (ErrStale) or belongs to a deleted organization (ErrForgotten) changes
// nothing.
func (p *Plane) Admit(s bundle.Signed) error {
	return p.AdmitAll([]bundle.Signed{s})
}

// AdmitAll admits several bundles with one swap, which is what a start-up
// or a full resync wants: the key index is copied once, not once per
// organization. Bundles that fail are skipped and their errors joined; the
// others are admitted.
func (p *Plane) AdmitAll(bundles []bundle.Signed) error {
	var errs []error
	prepared := make([]*admitted, 0, len(bundles))
	for _, s := range bundles {
		a, err := p.prepare(s)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("organization %s, version %d: %w", s.OrgID, s.Version, err))
		case a != nil:
			prepared = append(prepared, a)
		}
	}
	if len(prepared) > 0 {
		p.writeMu.Lock()
		next, refused := p.state.Load().with(prepared)
		p.state.Store(next)
		p.adoptEgress(prepared)
		p.writeMu.Unlock()
		errs = append(errs, refused...)
	}
	return errors.Join(errs...)
}

// prepare verifies a bundle and builds its index, outside the write lock:
// that is the expensive part, and admissions of different organizations
// need not wait for each other's. It returns nil, nil for the bundle
// already in force.
func (p *Plane) prepare(s bundle.Signed) (*admitted, error) {
	// A cheap check first, on the unverified envelope: it only avoids work,
	// the decision is taken again under the lock.
	cur := p.state.Load()
	if err := cur.admissible(s.OrgID, s.Version, s.Hash); err != nil || cur.inForce(s.OrgID, s.Version, s.Hash) {
		return nil, err
	}
	pub := p.pub.Load()
	if pub == nil {
		return nil, errors.New("the bundle signing key is not known yet")
	}
	body, err := bundle.Verify(s, *pub)
	if err != nil {
		return nil, err
	}
	return buildAdmitted(body, s.Hash)
}

// egressPolicy is the egress policy in force, for the upstreams' dialer.
func (p *Plane) egressPolicy() egress.Policy { return p.egress.Load().policy }

// adoptEgress puts in force the newest egress setting the bundles carry
// (every bundle carries the instance's; a newer revision is a later
// change), and closes the idle upstream connections, so that the next
// calls dial under it. Called under writeMu.
func (p *Plane) adoptEgress(prepared []*admitted) {
	cur := p.egress.Load()
	next := cur
	for _, a := range prepared {
		if e := a.egress; e != nil && e.Revision > next.revision {
			next = &egressInForce{revision: e.Revision,
				policy: cur.policy.WithInstance(egress.ParseRanges(e.Deny), egress.ParseRanges(e.Allow))}
		}
	}
	if next == cur {
		return
	}
	p.egress.Store(next)
	p.inference.upstreams.CloseIdleConnections()
	p.inference.log.Info("egress policy in force", "revision", next.revision, "deny", next.policy.Deny, "allow", next.policy.Allow,
		"deny_private", next.policy.DenyPrivate)
}

// Forget drops a deleted organization's bundle and refuses its bundles from
// then on: organization ids are never reused, and a compile that raced the
// deletion must not bring the organization back.
func (p *Plane) Forget(orgID uuid.UUID) {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	p.state.Store(p.state.Load().without(orgID))
}

// Withdraw drops an organization's bundle without refusing its later
// ones: a remote data plane no longer enrolled for the organization may be
// enrolled for it again.
func (p *Plane) Withdraw(orgID uuid.UUID) {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	cur := p.state.Load()
	next := cur.without(orgID)
	if !cur.forgotten[orgID] {
		delete(next.forgotten, orgID)
	}
	p.state.Store(next)
}

// Versions returns the admitted bundle version of each organization, for
// heartbeats and status pages.
func (p *Plane) Versions() map[uuid.UUID]int64 {
	orgs := p.state.Load().orgs
	out := make(map[uuid.UUID]int64, len(orgs))
	for id, a := range orgs {
		out[id] = a.version
	}
	return out
}
