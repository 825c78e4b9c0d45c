package usage_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/cputest"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/server/telemetry"
	"github.com/gw-gateway/gw/server/usage"
	"github.com/gw-gateway/gw/wire"
)

// BenchmarkUsageLoader is the usage path of an all-in-one gw alone, per
// event: an event as the data plane records it (attempts, provenance with
// the harness's policies and budget), handed to the sink gw runs with its
// default options, until it is in the database and queued for the
// rollups. It reports the process's CPU µs per event (user + system,
// every goroutine: the sink's flushes, the conversion, the driver, and on
// SQLite the database itself) and, on PostgreSQL, the CPU of the server's
// processes on this machine beside it (pg-cpu-µs/event; other users of the
// server add to it):
//
//	go test -run '^$' -bench UsageLoader -benchtime 50000x ./server/usage
func BenchmarkUsageLoader(b *testing.B) {
	for _, d := range storetest.Dialects(b) {
		for _, v := range []struct {
			name string
			opts usage.StoreSinkOptions
			v7   bool
			// randomRequestIDs: see loaderEvents.
			randomRequestIDs bool
			// steady flushes each time a batch waits, as a gw whose
			// database keeps up does; otherwise the events come as fast
			// as the benchmark makes them, and the sink's flushes take
			// what has waited meanwhile (up to 10,000 a transaction).
			steady bool
		}{{"default", usage.StoreSinkOptions{}, true, false, false}, {"steady", usage.StoreSinkOptions{}, true, false, true},
			{"batch100", usage.StoreSinkOptions{BatchSize: 100}, true, false, false},
			{"default-v4ids", usage.StoreSinkOptions{}, false, true, false}, {"default-random-request-ids", usage.StoreSinkOptions{}, true, true, false}} {
			b.Run(string(d)+"/"+v.name, func(b *testing.B) {
				st := store.New(storetest.Open(b, d))
				sink := usage.NewStoreSink(st, v.opts)
				src := newLoaderEvents()
				src.v7, src.randomRequestIDs = v.v7, v.randomRequestIDs
				ctx := context.Background()
				// Warm: the first flush prepares what every later one reuses.
				for range 1000 {
					sink.Record(src.next())
				}
				if err := sink.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				pg := d != storetest.SQLite
				cpu0, pg0 := cputest.Process(), postgresCPU(pg)
				b.ResetTimer()
				n := 0
				for b.Loop() {
					sink.Record(src.next())
					if n++; v.steady && n%1000 == 0 {
						if err := sink.Flush(ctx); err != nil {
							b.Fatal(err)
						}
					}
				}
				if err := sink.Close(ctx); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				b.ReportMetric(float64(cputest.Process()-cpu0)/1e3/float64(b.N), "cpu-µs/event")
				if pg {
					b.ReportMetric(float64(postgresCPU(pg)-pg0)/1e3/float64(b.N), "pg-cpu-µs/event")
				}
			})
		}
	}
}

// loaderEvents makes events shaped like the harness's requests.
type loaderEvents struct {
	org, ws, key, owner, cred, policy uuid.UUID
	now                               time.Time
	endpoint                          string
	// v7: event ids ordered by time (UUIDv7, what the data plane mints)
	// rather than random (v4: what it minted before, and what an older
	// remote data plane still ships).
	v7 bool
	// randomRequestIDs: request ids a caller sent, random (a UUIDv4 per
	// request), rather than the time-ordered ones gw makes for a request
	// that comes without one (telemetry.NewRequestID); random is also
	// what gw made before issue 33's eighth round.
	randomRequestIDs bool
	// The provenance's parts a data plane shares between the events of
	// one key's cached decision on one model (dataplane.provenance): each
	// event has a provenance of its own naming them.
	prices   *wire.UsagePrices
	policies []wire.UsagePolicy
	budgets  []wire.UsageBudget
	// v7base and seq make time-ordered ids without crypto/rand: the data
	// plane's request path mints them (uuid.NewV7), so their cost is the
	// request's, not the usage path's, and was a tenth of this
	// benchmark's figure.
	v7base uuid.UUID
	seq    uint64
}

func newLoaderEvents() *loaderEvents {
	policy := uuid.New()
	return &loaderEvents{org: uuid.New(), ws: uuid.New(), key: uuid.New(), owner: uuid.New(), cred: uuid.New(), policy: policy,
		now: time.Now().UTC(), endpoint: "chat.completions", v7: true, v7base: uuid.Must(uuid.NewV7()),
		prices: &wire.UsagePrices{InputPerMTok: "0.15", OutputPerMTok: "0.6", CacheReadPerMTok: "0.075", CacheWritePerMTok: "0", CacheWrite1hPerMTok: "0"},
		policies: []wire.UsagePolicy{{PolicyID: policy, PolicyName: "allowlist", Action: "allow", Effect: "allow"},
			{PolicyID: policy, PolicyName: "limits", Action: "limit", Effect: "limit"}},
		budgets: []wire.UsageBudget{{PolicyID: policy, PolicyName: "budget", Counter: "budget:shared", Period: "day", Aggregation: "shared", AmountUSD: "1000000"}}}
}

func (s *loaderEvents) next() wire.UsageEventIn {
	model := "openai/gpt-4o-mini"
	id := uuid.New()
	if s.v7 {
		// The base's time and version, its counter bits counting: unique
		// and in order.
		s.seq++
		id = s.v7base
		binary.BigEndian.PutUint64(id[8:], binary.BigEndian.Uint64(id[8:])&^(1<<48-1)|s.seq)
	}
	rid := telemetry.NewRequestID() // a caller that sends no X-Request-Id
	if s.randomRequestIDs {
		rid = uuid.NewString()
	}
	return wire.UsageEventIn{ID: id, OrgID: s.org, WorkspaceID: s.ws, InferenceKeyID: &s.key, OwnerID: &s.owner,
		Model: model, Provider: "openai", ProviderCredentialID: &s.cred, InputTokens: 19, OutputTokens: 10,
		CostUSD: "0.00000885", Status: "ok", LatencyMS: 1, OccurredAt: s.now, RequestID: &rid, Endpoint: &s.endpoint,
		RequestedModel: model, Attempts: []wire.UsageAttempt{{Model: model, Provider: "openai", LatencyMS: 1}},
		Provenance: &wire.UsageProvenance{BundleVersion: 7, Prices: s.prices, Policies: s.policies, Budgets: s.budgets}}
}

// postgresCPU is the CPU time so far of this machine's processes named
// postgres (the server the tests use runs here), from /proc.
func postgresCPU(pg bool) time.Duration {
	if !pg {
		return 0
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var total time.Duration
	for _, p := range stats {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		line := string(raw)
		open, closing := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
		if open < 0 || closing < open || !strings.HasPrefix(line[open+1:closing], "postgres") {
			continue
		}
		f := strings.Fields(line[closing+1:])
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		k, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(u+k) * 10 * time.Millisecond
	}
	return total
}

// BenchmarkSpoolLine is what the remote data plane's spool costs an event
// that an all-in-one gw does without (docs/decisions.md, issue 33): its
// JSON line written, and read back to be loaded.
func BenchmarkSpoolLine(b *testing.B) {
	e := newLoaderEvents().next()
	var back wire.UsageEventIn
	for b.Loop() {
		line, err := json.Marshal(e)
		if err != nil {
			b.Fatal(err)
		}
		back = wire.UsageEventIn{}
		if err := json.Unmarshal(line, &back); err != nil {
			b.Fatal(err)
		}
	}
}
