package server

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/gw-gateway/gw/server/batchstore"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/server/budgets"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/dataplane/spool"
	"github.com/gw-gateway/gw/server/publish"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/usage"
	"github.com/gw-gateway/gw/server/web"
)

// A server is assembled in named steps, each small, each adding what it
// opens to the shutdown in the right place (s.flush: buffered usage
// first, then the database) and what runs in the background to s.loops.
// A step reads only what an earlier step set.
type step[T any] struct {
	name string
	run  func(context.Context, *T) error
}

// runSteps runs the steps in order; an error names the step it stopped
// at, so a start-up failure says what gw was doing.
func runSteps[T any](ctx context.Context, parts *T, steps []step[T]) error {
	for _, st := range steps {
		if err := st.run(ctx, parts); err != nil {
			return fmt.Errorf("%s: %w", st.name, err)
		}
	}
	return nil
}

// flushFirst runs fn before everything already set to run at shutdown:
// what a step holds goes out before the database it writes to closes.
func (s *Server) flushFirst(fn func(context.Context) error) {
	s.flush = append([]func(context.Context) error{fn}, s.flush...)
}

// controlPlane is what the control plane's steps build.
type controlPlane struct {
	st       *store.Store
	signer   ed25519.PrivateKey
	compiler *publish.Compiler
	// bundles refreshes bundles after a change: published for polling
	// data planes, and admitted in process when plane is set.
	bundles api.BundleRefresher
	plane   *dataplane.Plane
	api     *api.Server
}

func (s *Server) assembleControlPlane(ctx context.Context) error {
	return runSteps(ctx, &controlPlane{}, []step[controlPlane]{
		{"open the store", s.openStore},
		{"load the bundle signing key", s.loadSigningKey},
		{"run the data plane in process", s.inProcessDataPlane},
		{"listen to other replicas", s.listenToReplicas},
		{"serve the management API", s.managementAPI},
		{"bootstrap", func(ctx context.Context, cp *controlPlane) error { return s.bootstrap(ctx, cp.st, cp.api) }},
		{"refresh every bundle", s.refreshBundles},
		{"keep the usage rollups and leases", s.usageLoops},
		{"sweep archived payloads past retention", s.sweepArchives},
		{"end the batch lines of lost data planes", s.endLostBatchLines},
		{"route HTTP", s.controlRoutes},
	})
}

// openStore migrates the database and opens the store on it; the database
// closes last at shutdown.
func (s *Server) openStore(ctx context.Context, cp *controlPlane) error {
	db := s.cfg.DB
	if db == nil {
		return errors.New("the control plane needs a database")
	}
	s.flush = append(s.flush, func(context.Context) error {
		if cp.st != nil {
			// The writers' connection goes back before the pool closes.
			if err := cp.st.Close(); err != nil {
				s.log.Warn("closing the database's writer connection", "error", err)
			}
		}
		return db.Close()
	})
	s.metrics.DB(db.DB)
	s.ready = func(ctx context.Context) error {
		if err := db.PingContext(ctx); err != nil {
			return fmt.Errorf("database unreachable: %w", err)
		}
		return nil
	}
	applied, err := store.Migrate(ctx, db)
	if err != nil {
		return err
	}
	if len(applied) > 0 {
		s.log.Info("database migrated", "applied", applied)
	}
	cp.st = store.New(db)
	return nil
}

// loadSigningKey reads (or, on a new instance, makes) the key bundles are
// signed with, and the publisher that compiles and stores them.
func (s *Server) loadSigningKey(ctx context.Context, cp *controlPlane) error {
	signer, err := publish.SigningKey(ctx, cp.st, s.cfg.Keyring)
	if err != nil {
		return fmt.Errorf("bundle signing key: %w", err)
	}
	cp.signer = signer
	cp.compiler = &publish.Compiler{Store: cp.st, Signer: signer}
	cp.bundles = &publish.Publisher{Compiler: cp.compiler, Store: cp.st}
	return nil
}

// inProcessDataPlane runs the data plane in the same process (role all):
// bundles are compiled and admitted directly after every change, without
// HTTP; usage goes to the database through a buffering sink; budget leases
// come from the same database.
func (s *Server) inProcessDataPlane(_ context.Context, cp *controlPlane) error {
	if s.cfg.Role != RoleAll {
		return nil
	}
	// Opened before the sink, which tells it when events are stored;
	// closed after it (flushFirst runs the last added first).
	requests, err := s.openRequestJournal(true)
	if err != nil {
		return err
	}
	sinkOpts := usage.StoreSinkOptions{Logger: s.log}
	if requests != nil {
		sinkOpts.Stored = requests.Stored
		s.flushFirst(func(context.Context) error { return requests.Close() })
	}
	sink := usage.NewStoreSink(cp.st, sinkOpts)
	s.flushFirst(func(ctx context.Context) error {
		if err := sink.Close(ctx); err != nil {
			return fmt.Errorf("flushing usage events: %w", err)
		}
		return nil
	})
	journal, err := s.openBudgetJournal("local")
	if err != nil {
		return err
	}
	// The plane records the events of the requests a crash left in the
	// journal, and settles their reservations, as it is made.
	plane := dataplane.NewPlane(cp.signer.Public().(ed25519.PublicKey), s.planeOptions(dataplane.Options{Keyring: s.cfg.Keyring, Usage: sink,
		Budgets: &budgets.Leases{Store: cp.st}, BudgetJournal: journal, BudgetHolder: "local-" + uuid.NewString(), RequestJournal: requests,
		OAuthIssuer: s.cfg.PublicURL, Batches: batchstore.Store{St: cp.st}, BatchPace: s.cfg.BatchPace}))
	// Before the sink and the database close: what the plane holds of the
	// budgets goes back.
	s.flushFirst(s.releaseBudgets(plane, journal))
	s.metrics.GaugeFunc("gw_usage_sink_queue_depth", "Usage events buffered in memory, not yet written to the database.",
		func() float64 { return float64(sink.Pending()) })
	s.metrics.Bundles(plane.BundleInfo)
	s.loops = append(s.loops, func(ctx context.Context) { syncBudgets(ctx, plane, s.log) })
	// Batches run off the request path, resumed at every start.
	s.loops = append(s.loops, plane.RunBatches)
	s.plane, cp.plane = plane, plane
	cp.bundles = &publish.Refresher{Compiler: cp.compiler, Plane: plane, Store: cp.st}
	return nil
}

// planeOptions completes a data plane's options with what every data
// plane of this server shares.
func (s *Server) planeOptions(o dataplane.Options) dataplane.Options {
	o.Logger, o.Metrics = s.log, s.metrics
	o.MaxStreamDuration = s.cfg.MaxStreamDuration
	o.MCPTimeout = s.cfg.MCPTimeout
	o.BodyBytesInFlight, o.KeyBodyBytesInFlight = s.cfg.BodyBytesInFlight, s.cfg.KeyBodyBytesInFlight
	o.Egress = s.cfg.Egress
	o.KeyTagSetsPerMinute = s.cfg.KeyTagSetsPerMinute
	if s.cfg.StateDir != "" {
		// Payloads wait here for their workspace's archive (issue 32).
		o.ArchiveDir = filepath.Join(s.cfg.StateDir, "archive-spool")
	}
	return o
}

// listenToReplicas refreshes the in-process data plane when another
// replica sharing PostgreSQL announces a change (the periodic refresh
// stays as the safety net).
func (s *Server) listenToReplicas(_ context.Context, cp *controlPlane) error {
	if cp.plane == nil || !strings.HasPrefix(s.cfg.DatabaseURL, "postgres") {
		return nil
	}
	bundles := cp.bundles
	s.loops = append(s.loops, func(ctx context.Context) {
		store.ListenBundleChanges(ctx, s.cfg.DatabaseURL, s.log, func(org uuid.UUID) {
			var err error
			if org == uuid.Nil {
				err = bundles.RefreshAll(ctx)
			} else {
				err = bundles.Refresh(ctx, org)
			}
			if err != nil && ctx.Err() == nil {
				s.log.Warn("bundle refresh on notification", "error", err)
			}
		})
	})
	return nil
}

// managementAPI builds /api/v1. The Workspace Playground runs on the data
// plane in process; role control-plane answers its routes 503.
func (s *Server) managementAPI(ctx context.Context, cp *controlPlane) error {
	opts := api.Options{PublicURL: s.cfg.PublicURL, SignupDisabled: s.cfg.DisableSignup, Logger: s.log,
		Version: s.cfg.Version, Keyring: s.cfg.Keyring, Bundles: cp.bundles, Egress: s.cfg.Egress, OAuthSigner: cp.signer}
	if cp.plane != nil {
		opts.Playground = cp.plane
	}
	var err error
	cp.api, err = api.New(ctx, cp.st, opts)
	return err
}

// refreshBundles compiles (and, in process, admits) every organization's
// bundle before serving, then keeps them fresh: changes refresh bundles at
// once, and this loop catches what that missed (a refresh that failed, a
// change made on another replica). Compiling unchanged content is cheap
// and keeps the version. One organization that fails keeps the others
// going, and is logged.
func (s *Server) refreshBundles(ctx context.Context, cp *controlPlane) error {
	if err := cp.bundles.RefreshAll(ctx); err != nil {
		s.log.Error("initial bundle refresh", "error", err)
	}
	bundles := cp.bundles
	s.loops = append(s.loops, func(ctx context.Context) {
		every(ctx, s.cfg.BundleRefreshInterval, func() {
			if err := bundles.RefreshAll(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("periodic bundle refresh", "error", err)
			}
		})
	})
	return nil
}

// usageLoops move stored usage events into the report rollups through
// their queue, and prune the lease state of ended periods (rate-limit
// minutes above all), on every replica: deleting twice is harmless.
func (s *Server) usageLoops(_ context.Context, cp *controlPlane) error {
	st := cp.st
	s.loops = append(s.loops, func(ctx context.Context) {
		every(ctx, usage.RollInterval, func() {
			if _, err := usage.Roll(ctx, st); err != nil && ctx.Err() == nil {
				s.log.Warn("rolling up usage", "error", err)
			}
		})
	}, func(ctx context.Context) {
		every(ctx, 10*time.Minute, func() {
			if _, err := st.PruneBudgetLeases(ctx, time.Now().Add(-time.Hour)); err != nil && ctx.Err() == nil {
				s.log.Warn("pruning budget leases", "error", err)
			}
		})
	})
	return nil
}

// controlRoutes serves the API, the in-process data plane, the browser
// pages (setup, sign-in, CLI approval) and the health probes.
func (s *Server) controlRoutes(_ context.Context, cp *controlPlane) error {
	mux := http.NewServeMux()
	mux.Handle("/api/v1/", cp.api)
	mux.Handle("/scim/v2/", cp.api.SCIM())
	var plane http.Handler
	if cp.plane != nil {
		cp.plane.MarkReady()
		plane = dataplane.NewCORS(s.cfg.CORSOrigins, cp.plane)
		mux.Handle(inferencePattern, plane)
		mux.Handle(dataplane.MCPResourceMetadataPath, plane)
	}
	// gw's OAuth authorization server (issue 31): its metadata and
	// endpoints are the API's. A browser-based MCP client of a listed
	// origin may read the metadata and call the token and revocation
	// endpoints (no cookie is involved); the authorization endpoint is a
	// page, navigated to.
	oauthCORS := dataplane.NewCORS(s.cfg.CORSOrigins, cp.api.OAuthHandler())
	mux.Handle("/oauth/", cp.api.OAuthHandler())
	mux.Handle("/oauth/token", oauthCORS)
	mux.Handle("/oauth/revoke", oauthCORS)
	mux.Handle(api.OAuthMetadataPath, oauthCORS)
	mux.Handle("/", web.HandlerWithSSO(s.log, cp.api.SetupDone, cp.api.SignInProviders))
	s.handleHealth(mux)
	s.handler = inferenceFirst{mux: mux, plane: plane}
	return nil
}

// remotePlane is what a remote data plane's steps build.
type remotePlane struct {
	client    *client.Client
	transport *http.Transport
	signing   ed25519.PublicKey
	key       *secrets.DataPlaneKey
	id        string
	spool     *spool.Spool
	plane     *dataplane.Plane
}

// assembleDataPlane runs a data plane apart from the control plane: no
// database, bundles polled over the management API with one instance key,
// the last admitted set kept in the state dir (unless --bundle-cache off).
// It holds its own key pair (created on first start) and is enrolled for
// chosen organizations; their secrets arrive sealed to it, so the master
// key is never needed here. It serves at once: 503 bundle_not_ready until a
// bundle is admitted.
func (s *Server) assembleDataPlane(ctx context.Context) error {
	return runSteps(ctx, &remotePlane{}, []step[remotePlane]{
		{"reach the control plane", s.controlPlaneClient},
		{"load the keys", s.dataPlaneKeys},
		{"open the usage spool", s.openSpool},
		{"make the data plane", s.remoteDataPlane},
		{"poll bundles", s.pollBundles},
		{"route HTTP", func(_ context.Context, rp *remotePlane) error {
			mux := http.NewServeMux()
			plane := dataplane.NewCORS(s.cfg.CORSOrigins, rp.plane)
			mux.Handle(inferencePattern, plane)
			mux.Handle(dataplane.MCPResourceMetadataPath, plane)
			s.handleHealth(mux)
			s.handler = inferenceFirst{mux: mux, plane: plane}
			return nil
		}},
	})
}

// controlPlaneClient is the management API client, on a transport of its
// own whose connections close with the data plane: one left open (a spare
// a concurrent call dialed) would hold the control plane's graceful
// shutdown for seconds.
func (s *Server) controlPlaneClient(_ context.Context, rp *remotePlane) error {
	rp.transport = http.DefaultTransport.(*http.Transport).Clone()
	c, err := client.New(client.Options{Server: s.cfg.ControlPlaneURL, Token: s.cfg.Token, Version: s.cfg.Version,
		HTTPClient: &http.Client{Timeout: 60 * time.Second, Transport: rp.transport}})
	if err != nil {
		return fmt.Errorf("--control-plane-url: %w", err)
	}
	rp.client = c
	return nil
}

// dataPlaneKeys loads the pinned bundle signing key, the data plane's own
// key pair and its id.
func (s *Server) dataPlaneKeys(_ context.Context, rp *remotePlane) error {
	var err error
	if rp.signing, err = dataplane.PinnedSigningKey(s.cfg.StateDir, s.cfg.BundlePublicKey); err != nil {
		return err
	}
	if rp.key, err = s.dataPlaneKey(s.cfg.StateDir); err != nil {
		return err
	}
	if rp.id = s.cfg.DataPlaneID; rp.id == "" {
		rp.id, err = dataPlaneID(s.cfg.StateDir)
	}
	return err
}

// openSpool opens the local usage spool that events go to first and are
// shipped from.
func (s *Server) openSpool(_ context.Context, rp *remotePlane) error {
	// The state dir may not exist yet (a key and id from the environment or
	// a key file elsewhere write nothing there): spool.Open creates it.
	c := rp.client
	sp, err := spool.Open(filepath.Join(s.cfg.StateDir, "usage.spool"), func(ctx context.Context, evs []json.RawMessage) error {
		_, err := c.IngestUsageLines(ctx, evs)
		return err
	}, s.log)
	if err != nil {
		return err
	}
	transport := rp.transport
	s.flush = append(s.flush, sp.Close, func(context.Context) error {
		// The spool has shipped what it could; nothing else calls out.
		transport.CloseIdleConnections()
		return nil
	})
	s.loops = append(s.loops, func(ctx context.Context) { sp.Run(ctx, s.cfg.PollInterval) })
	s.metrics.GaugeFunc("gw_usage_spool_depth", "Usage events spooled on disk, not yet shipped to the control plane.",
		func() float64 { return float64(sp.Depth()) })
	rp.spool = sp
	return nil
}

// remoteDataPlane makes the data plane, its budget journal and its budget
// sync. It is ready once a bundle is admitted (from the control plane or
// the cache): a load balancer must not send traffic that would only get
// 503s or 401s.
func (s *Server) remoteDataPlane(_ context.Context, rp *remotePlane) error {
	journal, err := s.openBudgetJournal(rp.id)
	if err != nil {
		return err
	}
	// The spool writes the events of a few milliseconds together, and
	// says when they are on disk: a request's journal slot is freed then.
	// The plane spools the events of the requests a crash left, which
	// ship with the rest. (Without a journal the spool writes each event
	// before Record returns.)
	requests, err := s.openRequestJournal(true)
	if err != nil {
		return err
	}
	if requests != nil {
		rp.spool.GroupWrites(requests.Stored)
	}
	// Files and batches are the control plane's, reached as this enrolled
	// plane; a file body (up to 200 MiB) gets longer than a poll.
	batchClient, err := client.New(client.Options{Server: s.cfg.ControlPlaneURL, Token: s.cfg.Token, Version: s.cfg.Version,
		HTTPClient: &http.Client{Timeout: 10 * time.Minute, Transport: rp.transport}})
	if err != nil {
		return fmt.Errorf("--control-plane-url: %w", err)
	}
	plane := dataplane.NewPlane(rp.signing, s.planeOptions(dataplane.Options{Keyring: rp.key, Usage: rp.spool,
		Budgets: budgetClient{c: rp.client, id: rp.id}, BudgetJournal: journal, BudgetHolder: rp.id + "#" + uuid.NewString()[:8],
		RequestJournal: requests, OAuthIssuer: s.cfg.ControlPlaneURL,
		Batches: dataplane.NewRemoteBatches(batchClient, rp.id), BatchPace: s.cfg.BatchPace}))
	s.flush = append(s.flush, s.releaseBudgets(plane, journal))
	if requests != nil {
		s.flush = append(s.flush, func(context.Context) error { return requests.Close() })
	}
	s.metrics.Bundles(plane.BundleInfo)
	s.ready = func(context.Context) error {
		if !plane.Ready() || len(plane.Versions()) == 0 {
			return errors.New("waiting for bundles")
		}
		return nil
	}
	s.loops = append(s.loops, func(ctx context.Context) { syncBudgets(ctx, plane, s.log) })
	// Any enrolled plane runs its organizations' batches: each line is
	// taken once, by one plane (docs/batches.md).
	s.loops = append(s.loops, plane.RunBatches)
	s.plane, rp.plane = plane, plane
	return nil
}

// pollBundles serves the cached bundles at once and keeps polling for
// newer ones, with heartbeats.
func (s *Server) pollBundles(_ context.Context, rp *remotePlane) error {
	remote := &dataplane.Remote{Client: rp.client, Plane: rp.plane, ID: rp.id, Version: s.cfg.Version, StateDir: s.cfg.StateDir,
		PollInterval: s.cfg.PollInterval, HeartbeatInterval: s.cfg.HeartbeatInterval, Log: s.log, SpoolDepth: rp.spool.Depth, Key: rp.key,
		NoCache: s.cfg.BundleCacheOff}
	if err := remote.LoadCached(); err != nil {
		s.log.Warn("cached bundles", "error", err)
	}
	s.loops = append(s.loops, remote.Run)
	s.log.Info("data plane", "id", rp.id, "control_plane", s.cfg.ControlPlaneURL)
	return nil
}
