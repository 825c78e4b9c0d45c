package dataplane_test

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/server/tokens"
	"github.com/gw-gateway/gw/wire"
)

// The metering conformance table (docs/metering.md, generated from
// meteringModes by TestMeteringDocIsTheTable): every ingress dialect ×
// upstream kind × stream or not × the way an exchange can go, and the
// usage event each leaves. Whatever happens, the tokens are never fewer
// than what was sent and relayed, the cost is exactly those tokens at the
// model's prices, and usage_source says who counted.

// meteringPrompt is the text every cell sends; meteringAnswer what every
// upstream answers, in pieces of meteringPiece bytes.
const (
	meteringPrompt = "Write three lines about the sea, the wind and a lighthouse keeper who counts the waves."
	meteringAnswer = "The sea rolls in; the wind keeps count; the keeper lights the lamp and waits for dawn."
	meteringPiece  = 16
)

// meteringMode is a row of the table: how the exchange goes, and what its
// usage event must say.
type meteringMode struct {
	name string
	// stream lists the stream values the mode applies to; onlyKind, when
	// set, the one upstream kind (a stream_options refusal is OpenAI's).
	stream   []bool
	onlyKind catalog.Kind
	// reply is what the upstream of model answers; refuseStreamOptions
	// makes it refuse stream_options first.
	reply               func(model string) providerstest.Reply
	refuseStreamOptions bool
	// act is what the caller (or the gateway) does once the answer
	// starts: read it whole, leave after its first piece, shut down.
	act meteringAct
	// fallback: the asked-for model answers 429 and a fallback rule takes
	// the request to the other kind's model.
	fallback bool
	// isolated modes run on a plane of their own (a shutdown ends the
	// plane; a refusal is remembered).
	isolated bool

	status, reason, source string
	// relayed is how much of meteringAnswer the caller was sent before the
	// end: all of it, its first piece, or nothing.
	relayed string
	// answer is the HTTP status the caller gets: 200 when 0, any 5xx when
	// 502; none when the caller leaves before it.
	answer int
	// underReport: the upstream reports fewer tokens than gw can prove it
	// was sent and relayed.
	underReport bool
	// doc describes the row's tokens and cost in docs/metering.md.
	doc string
}

type meteringAct int

const (
	readWhole meteringAct = iota
	leaveAfterFirst
	shutdownAfterFirst
	// crashAfterFirst kills the plane (its usage goes nowhere from then
	// on) and starts another from its request journal as the file holds
	// it at that instant.
	crashAfterFirst
	// leaveBeforeFirst: the caller leaves once the upstream has the
	// request, before the first byte of its (slow) answer.
	leaveBeforeFirst
)

// underReported is what an under-reporting upstream says of every
// request: 3 input tokens and 1 output, whatever it was sent and sent
// back (meteringAnswer in pieces of 2 bytes: 44 deltas).
var underReported = providerstest.Usage{Input: 3, Output: 1}

// underReportPiece is the size of an under-reporting stream's pieces.
const underReportPiece = 2

// reported are the counts an upstream reports in the reported modes:
// Anthropic-kind with cache writes, a part of them for an hour; OpenAI-kind
// with reasoning.
func reported(model string) providerstest.Usage {
	switch model {
	case haiku, vertexClaude, bedrockClaude:
		// Converse reports the writes by TTL in cacheDetails.
		return providerstest.Usage{Input: 1000, Output: 100, CacheRead: 300, CacheWrite: 200, CacheWrite1h: 150}
	}
	return providerstest.Usage{Input: 1000, Output: 100, CacheRead: 300, Reasoning: 40}
}

var both = []bool{false, true}

var meteringModes = []meteringMode{
	{name: "usage reported", stream: both, reply: func(m string) providerstest.Reply {
		return providerstest.Reply{Text: meteringAnswer, ChunkSize: meteringPiece, Usage: reported(m)}
	}, status: "ok", source: "upstream", relayed: meteringAnswer,
		doc: "the upstream's counts, reasoning and 1-hour cache writes included, at the model's prices"},
	{name: "no usage", stream: both, reply: func(m string) providerstest.Reply {
		return providerstest.Reply{Text: meteringAnswer, ChunkSize: meteringPiece, NoUsage: true}
	}, status: "ok", source: "estimated", relayed: meteringAnswer,
		doc: "input counted from the request, output from the answer"},
	{name: "malformed usage", stream: both, reply: func(m string) providerstest.Reply {
		return providerstest.Reply{Text: meteringAnswer, ChunkSize: meteringPiece, GarbleUsage: true, Usage: reported(m)}
	}, status: "ok", source: "estimated", relayed: meteringAnswer,
		doc: "as no usage: a usage object that does not read is counted by gw, never a 500 and never $0"},
	{name: "stream_options refused", stream: []bool{true}, onlyKind: catalog.KindOpenAI, refuseStreamOptions: true, isolated: true,
		reply: func(m string) providerstest.Reply {
			return providerstest.Reply{Text: meteringAnswer, ChunkSize: meteringPiece, Usage: reported(m)}
		}, status: "ok", source: "estimated", relayed: meteringAnswer,
		doc: "sent again without stream_options, counted by gw (only that credential and model, until the next bundle)"},
	{name: "stream cut", stream: []bool{true}, reply: func(m string) providerstest.Reply {
		return providerstest.Reply{Text: meteringAnswer, ChunkSize: meteringPiece, TruncateStream: true, Usage: reported(m)}
	}, status: "error", reason: "stream_truncated", source: "estimated", relayed: meteringAnswer[:meteringPiece],
		doc: "input as the upstream reported it, or counted; output counted from what was relayed"},
	{name: "error event", stream: []bool{true}, reply: func(m string) providerstest.Reply {
		return providerstest.Reply{Text: meteringAnswer, ChunkSize: meteringPiece, BreakStream: true, Usage: reported(m)}
	}, status: "error", reason: "upstream_unavailable", source: "estimated", relayed: meteringAnswer[:meteringPiece],
		doc: "as a cut stream"},
	{name: "garbled stream", stream: []bool{true}, reply: func(m string) providerstest.Reply {
		return providerstest.Reply{Text: meteringAnswer, ChunkSize: meteringPiece, GarbleStream: true, Usage: reported(m)}
	}, status: "error", reason: "upstream_unavailable", source: "estimated", relayed: meteringAnswer[:meteringPiece],
		doc: "as a cut stream"},
	{name: "client gone", stream: []bool{true}, act: leaveAfterFirst, reply: func(m string) providerstest.Reply {
		return providerstest.Reply{Text: meteringAnswer, ChunkSize: meteringPiece, Usage: reported(m)}
	}, status: "error", reason: "client_gone", source: "estimated", relayed: meteringAnswer[:meteringPiece],
		doc: "the upstream call is ended at once; billed as a cut stream"},
	{name: "shutdown", stream: []bool{true}, act: shutdownAfterFirst, isolated: true, reply: func(m string) providerstest.Reply {
		return providerstest.Reply{Text: meteringAnswer, ChunkSize: meteringPiece, Usage: reported(m)}
	}, status: "error", reason: "shutdown", source: "estimated", relayed: meteringAnswer[:meteringPiece],
		doc: "ended at the shutdown deadline; billed as a cut stream"},
	{name: "crash", stream: []bool{true}, act: crashAfterFirst, isolated: true, reply: func(m string) providerstest.Reply {
		return providerstest.Reply{Text: meteringAnswer, ChunkSize: meteringPiece, Usage: reported(m)}
	}, status: "error", reason: "crashed", source: "estimated", relayed: meteringAnswer[:meteringPiece],
		doc: "the process is killed mid-stream; its next start records the event from its request journal: input as the upstream reported it, or a token per two bytes of the body; output a token per two bytes relayed (never fewer than the deltas)"},
	{name: "under-reported", stream: []bool{true}, reply: func(m string) providerstest.Reply {
		return providerstest.Reply{Text: meteringAnswer, ChunkSize: underReportPiece, Usage: underReported}
	}, status: "ok", source: "estimated", relayed: meteringAnswer, underReport: true,
		doc: "3 input and 1 output reported for 44 deltas relayed: raised to the floor gw can prove (a token a delta; for OpenAI's " +
			"models the exact count of the prompt and the text); the upstream's counts kept in `provenance.upstream_usage`"},
	{name: "early leave", stream: both, act: leaveBeforeFirst, reply: func(m string) providerstest.Reply {
		return providerstest.Reply{Text: meteringAnswer, ChunkSize: meteringPiece, Usage: reported(m), Delay: time.Minute}
	}, status: "error", reason: "client_gone", source: "estimated", relayed: "",
		doc: "the caller left before the first byte of a slow answer; the upstream had the whole request: its input counted from the request, no output"},
	{name: "truncated body", stream: []bool{false}, reply: func(m string) providerstest.Reply {
		return providerstest.Reply{Text: meteringAnswer, Usage: reported(m), TruncateBody: true}
	}, status: "error", reason: "upstream_unavailable", source: "estimated", relayed: "", answer: http.StatusBadGateway,
		doc: "a 200 whose JSON answer is cut off: a 5xx to the caller; its input counted from the request, no output"},
	{name: "fallback", stream: both, fallback: true, reply: func(m string) providerstest.Reply {
		return providerstest.Reply{Text: meteringAnswer, ChunkSize: meteringPiece, Usage: reported(m)}
	}, status: "ok", source: "upstream", relayed: meteringAnswer,
		doc: "the answering model's counts at its prices; the refused attempt (429) is not billed by the provider, nor by gw"},
}

// meteringEndpoints are the ingress dialects, each with its path and body.
var meteringEndpoints = []struct {
	name, path string
	body       func(model string, stream bool) string
}{
	{"chat.completions", "/inf/v1/chat/completions", func(m string, s bool) string {
		return fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":%q}]}`, m, s, meteringPrompt)
	}},
	{"responses", "/inf/v1/responses", func(m string, s bool) string {
		return fmt.Sprintf(`{"model":%q,"stream":%v,"input":%q}`, m, s, meteringPrompt)
	}},
	{"messages", "/inf/v1/messages", func(m string, s bool) string {
		return fmt.Sprintf(`{"model":%q,"stream":%v,"max_tokens":300,"messages":[{"role":"user","content":%q}]}`, m, s, meteringPrompt)
	}},
}

// meteringModels are the upstream kinds, by a model of each.
var meteringModels = []struct {
	model string
	kind  catalog.Kind
}{{gptMini, catalog.KindOpenAI}, {haiku, catalog.KindAnthropic}, {bedrockClaude, catalog.KindBedrock},
	{vertexGemini, catalog.KindVertex}, {vertexClaude, catalog.KindVertex}, {geminiFlash, catalog.KindGemini}, {azureMini, catalog.KindAzureOpenAI}}

func TestMeteringConformance(t *testing.T) {
	defaults, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range storetest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			shared := newMeteringEnv(t, d)
			for _, mode := range meteringModes {
				for _, ep := range meteringEndpoints {
					for _, m := range meteringModels {
						if mode.onlyKind != "" && mode.onlyKind != m.kind || mode.onlyKind != "" && ep.name == "responses" {
							// Responses go to an OpenAI-kind upstream natively,
							// without stream_options.
							continue
						}
						for _, stream := range mode.stream {
							name := fmt.Sprintf("%s/%s/%s/stream=%v", mode.name, ep.name, m.model, stream)
							t.Run(name, func(t *testing.T) {
								env := shared
								switch {
								case mode.act == crashAfterFirst:
									env = newCrashingEnv(t, d)
								case mode.isolated:
									env = newMeteringEnv(t, d)
								}
								env.cell(t, defaults, mode, ep.name, ep.path, ep.body, m.model, stream)
							})
						}
					}
				}
			}
		})
	}
}

// meteringEnv is an infEnv whose events also reach the database, with a
// fallback rule between the two kinds' models.
type meteringEnv struct {
	*infEnv
	stored func() []store.UsageEvent
	n      int
	// journal is the plane's request journal, when it is to crash.
	journal string
}

func newMeteringEnv(t *testing.T, d storetest.Dialect, opts ...infOptions) *meteringEnv {
	e, stored := meteredEnv(t, storetest.Open(t, d), opts...)
	e.withClouds(t)
	for _, m := range meteringModels {
		m := m.model
		e.policy(t, rule(`{"kind":"request","models":["`+m+`"],"stream":null,"capabilities":[]}`,
			`{"kind":"fallback","models":["`+other(m)+`"],"on":["rate_limited"],"max_attempts":2,"timeout_ms":5000}`))
	}
	e.sync(t)
	return &meteringEnv{infEnv: e, stored: stored}
}

// newCrashingEnv is a metering env whose plane journals its requests and
// records its events nowhere: the process that dies (crash).
func newCrashingEnv(t *testing.T, d storetest.Dialect) *meteringEnv {
	path := filepath.Join(t.TempDir(), "requests.journal")
	j, err := dataplane.OpenRequestJournal(path, dataplane.RequestJournalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = j.Close() })
	e := newMeteringEnv(t, d, func(o *dataplane.Options) { o.RequestJournal, o.Usage = j, &captureSink{} })
	e.journal = path
	return e
}

// crash is kill -9 of the env's plane: another process starts from its
// request journal as the file holds it now, and records the events of the
// requests it finds there.
func (e *meteringEnv) crash(t *testing.T) {
	t.Helper()
	raw, err := os.ReadFile(e.journal)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "requests.journal")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	j, err := dataplane.OpenRequestJournal(path, dataplane.RequestJournalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = j.Close() })
	dataplane.NewPlane(e.signer.Public().(ed25519.PublicKey), dataplane.Options{Usage: e.usage, RequestJournal: j})
}

func (e *meteringEnv) fake(model string) upstream { return e.fakeOf(model) }

// other is the model of another kind a model falls back to (Bedrock to
// Vertex AI, and so on round).
func other(model string) string {
	return map[string]string{gptMini: haiku, haiku: gptMini, bedrockClaude: vertexGemini, vertexGemini: bedrockClaude,
		vertexClaude: azureMini, azureMini: geminiFlash, geminiFlash: vertexClaude}[model]
}

// cell runs one request of the table and checks its usage event, as
// recorded and as stored.
func (e *meteringEnv) cell(t *testing.T, defaults *catalog.Catalog, mode meteringMode, endpoint, path string,
	body func(string, bool) string, model string, stream bool) {
	answering := model
	if mode.fallback {
		e.fake(model).Enqueue(providerstest.Reply{Status: http.StatusTooManyRequests, Message: "Rate limit reached"})
		answering = other(model)
	}
	reply := mode.reply(answering)
	if mode.act != readWhole {
		// The answer waits after its first piece until the caller or the
		// gateway has acted.
		hold := make(chan struct{})
		defer close(hold)
		reply.Hold = hold
	}
	if mode.refuseStreamOptions {
		e.fake(answering).RefuseStreamOptions(strings.TrimPrefix(answering, "openai/"))
	}
	e.fake(answering).Enqueue(reply)

	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+path, strings.NewReader(body(model, stream)))
	if endpoint == "messages" {
		req.Header.Set("X-Api-Key", e.token)
		req.Header.Set("Anthropic-Version", "2023-06-01")
	} else {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	if mode.act == leaveBeforeFirst {
		e.leaveBeforeTheAnswer(t, req, answering)
	} else {
		e.read(t, req, mode)
	}
	e.n++
	ev := e.usage.last(t, e.n)

	if ev.Status != mode.status || deref(ev.Reason) != cmpOr(mode.reason, "<nil>") || ev.UsageSource != mode.source ||
		ev.Model != answering || deref(ev.Endpoint) != endpoint {
		t.Fatalf("event: status %s reason %s source %s model %s endpoint %s; want %s %s %s %s",
			ev.Status, deref(ev.Reason), ev.UsageSource, ev.Model, deref(ev.Endpoint), mode.status, mode.reason, mode.source, answering)
	}
	m, _ := defaults.Model(answering)
	switch {
	case mode.underReport:
		// Raised to the floor, never below the upstream's figures, which
		// the provenance keeps.
		if up := ev.Provenance.UpstreamUsage; up == nil || *up != (wire.UsageCounts{InputTokens: underReported.Input, OutputTokens: underReported.Output}) {
			t.Fatalf("upstream_usage %+v, want the upstream's 3 and 1", up)
		}
		if deltas := int64((len(meteringAnswer) + underReportPiece - 1) / underReportPiece); ev.OutputTokens < deltas || ev.InputTokens < underReported.Input {
			t.Fatalf("tokens %d in, %d out: below the upstream's or the %d deltas relayed", ev.InputTokens, ev.OutputTokens, deltas)
		}
		exact := tokens.ForModel("gpt-4o-mini")
		if (answering == gptMini || answering == azureMini) &&
			(ev.InputTokens < exact.Count(meteringPrompt)-2 || ev.OutputTokens < exact.Count(meteringAnswer)-2) {
			t.Fatalf("tokens %d in, %d out: below the exact count of the prompt and the answer", ev.InputTokens, ev.OutputTokens)
		}
	case mode.source == "upstream":
		u := reported(answering)
		want := wire.UsageEventIn{InputTokens: u.Input, OutputTokens: u.Output, CacheReadTokens: u.CacheRead, CacheWriteTokens: u.CacheWrite,
			CacheWrite1hTokens: u.CacheWrite1h, ReasoningTokens: u.Reasoning}
		if ev.InputTokens != want.InputTokens || ev.OutputTokens != want.OutputTokens || ev.CacheReadTokens != want.CacheReadTokens ||
			ev.CacheWriteTokens != want.CacheWriteTokens || ev.CacheWrite1hTokens != want.CacheWrite1hTokens || ev.ReasoningTokens != want.ReasoningTokens {
			t.Fatalf("tokens %+v, want the upstream's %+v", ev, u)
		}
	default:
		// Never fewer than a real tokenizer counts in what was sent and
		// relayed (gpt-4o-mini's own; for others gw's estimate is higher).
		exact := tokens.ForModel("gpt-4o-mini")
		if in := exact.Count(meteringPrompt); ev.InputTokens+ev.CacheReadTokens+ev.CacheWriteTokens < in {
			t.Fatalf("input %d below the prompt's %d tokens", ev.InputTokens, in)
		}
		if out := exact.Count(mode.relayed); ev.OutputTokens < out {
			t.Fatalf("output %d below the %d tokens relayed", ev.OutputTokens, out)
		}
	}
	tok := catalog.Tokens{Input: ev.InputTokens, Output: ev.OutputTokens, CacheRead: ev.CacheReadTokens, CacheWrite: ev.CacheWriteTokens,
		CacheWrite1h: ev.CacheWrite1hTokens}
	nano, err := m.Pricing.CostNanoUSD(tok)
	if err != nil || ev.CostUSD != catalog.FormatNanoUSD(nano) || nano == 0 {
		t.Fatalf("cost %s, want %s (%v): tokens × the model's prices, never 0", ev.CostUSD, catalog.FormatNanoUSD(nano), err)
	}
	if p := ev.Provenance; p == nil || p.Prices == nil || p.Prices.InputPerMTok != m.Pricing.InputPerMTok || p.BundleVersion < 1 {
		t.Fatalf("provenance %+v", ev.Provenance)
	}
	rows := e.stored()
	var row *store.UsageEvent
	for i := range rows {
		if rows[i].ID == ev.ID {
			row = &rows[i]
		}
	}
	if row == nil || row.InputTokens != ev.InputTokens || row.OutputTokens != ev.OutputTokens || row.CostNanoUSD != nano ||
		row.UsageSource != ev.UsageSource || row.ReasoningTokens != ev.ReasoningTokens || row.CacheWrite1hTokens != ev.CacheWrite1hTokens ||
		row.Provenance == nil {
		t.Fatalf("stored %+v, recorded %+v", row, ev)
	}
}

// read sends req and reads the answer as mode says: whole, or its first
// piece before the caller leaves or the gateway shuts down.
func (e *meteringEnv) read(t *testing.T, req *http.Request, mode meteringMode) {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if want := cmpOr(mode.answer, http.StatusOK); resp.StatusCode != want && !(want >= 500 && resp.StatusCode >= 500) {
		raw, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d, want %d: %s", resp.StatusCode, want, raw)
	}
	switch mode.act {
	case readWhole:
		_, _ = io.Copy(io.Discard, resp.Body)
	case crashAfterFirst:
		readUntil(t, resp.Body, meteringAnswer[:meteringPiece])
		e.crash(t)
	case leaveAfterFirst, shutdownAfterFirst:
		readUntil(t, resp.Body, meteringAnswer[:meteringPiece])
		if mode.act == shutdownAfterFirst {
			ctx, cancel := context.WithTimeout(context.Background(), 0)
			defer cancel()
			_ = e.plane.EndInFlight(ctx) // ends the stream; the wait is the event's
			_, _ = io.Copy(io.Discard, resp.Body)
		}
	}
}

// leaveBeforeTheAnswer sends req and leaves once the upstream of model has
// it, before any byte of the answer.
func (e *meteringEnv) leaveBeforeTheAnswer(t *testing.T, req *http.Request, model string) {
	before := len(e.fake(model).Requests())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err == nil {
			resp.Body.Close()
			err = fmt.Errorf("answered %d before the caller left", resp.StatusCode)
		}
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for len(e.fake(model).Requests()) == before {
		if time.Now().After(deadline) {
			t.Fatal("the upstream never received the request")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the caller did not leave before the answer: %v", err)
	}
}

// readUntil reads a stream until it has seen text.
func readUntil(t *testing.T, body io.Reader, text string) {
	t.Helper()
	rd := bufio.NewReader(body)
	for {
		line, err := rd.ReadString('\n')
		if strings.Contains(line, text) {
			return
		}
		if err != nil {
			t.Fatalf("the stream ended before %q: %v", text, err)
		}
	}
}

func cmpOr[T comparable](s, fallback T) T {
	var zero T
	if s == zero {
		return fallback
	}
	return s
}

// embeddingModes are the embeddings endpoint's rows: an OpenAI-kind
// upstream, no stream, no output; the input is all there is to count.
var embeddingModes = []struct {
	name   string
	reply  providerstest.Reply
	source string
	doc    string
}{
	{"usage reported", providerstest.Reply{Usage: providerstest.Usage{Input: 5000}}, "upstream", "the upstream's input count at the model's price"},
	{"no usage", providerstest.Reply{NoUsage: true}, "estimated", "input counted from the request"},
	{"malformed usage", providerstest.Reply{GarbleUsage: true}, "estimated", "input counted from the request"},
}

// embeddingModels are the embeddings rows' upstream kinds, by a model of
// each (Azure's served by a deployment of another name).
var embeddingModels = []string{"openai/text-embedding-3-small", azureEmbed}

func TestEmbeddingsMetering(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e, stored := meteredEnv(t, db)
		e.withClouds(t)
		i := -1
		for _, mode := range embeddingModes {
			for _, small := range embeddingModels {
				i++
				t.Run(mode.name+"/"+small, func(t *testing.T) {
					e.fakeOf(small).Enqueue(mode.reply)
					req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/inf/v1/embeddings",
						strings.NewReader(fmt.Sprintf(`{"model":%q,"input":[%q,"a second line to embed"]}`, small, meteringPrompt)))
					req.Header.Set("Authorization", "Bearer "+e.token)
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					ev := e.usage.last(t, i+1)
					in := tokens.ForModel("text-embedding-3-small").Count(meteringPrompt + " a second line to embed")
					switch {
					case ev.Status != "ok" || ev.UsageSource != mode.source || ev.OutputTokens != 0:
						t.Fatalf("event %+v", ev)
					case mode.source == "upstream" && ev.InputTokens != 5000:
						t.Fatalf("input %d, want the upstream's 5000", ev.InputTokens)
					case ev.InputTokens < in:
						t.Fatalf("input %d below the %d tokens sent", ev.InputTokens, in)
					}
					want := catalog.FormatNanoUSD(ev.InputTokens * 20) // $0.02 per million tokens
					if ev.CostUSD != want {
						t.Fatalf("cost %s, want %s", ev.CostUSD, want)
					}
					if rows := stored(); len(rows) != i+1 || rows[0].UsageSource != mode.source {
						t.Fatalf("stored %+v", rows)
					}
					if up := e.fakeOf(small).Last(t); small == azureEmbed && up.Path != "/openai/deployments/embeddings-small/embeddings" {
						t.Fatalf("Azure was asked at %s, not the deployment's URL", up.Path)
					}
				})
			}
		}
	})
}

// TestMeteringDocIsTheTable holds docs/metering.md's conformance table to
// meteringModes, the cells TestMeteringConformance runs.
func TestMeteringDocIsTheTable(t *testing.T) {
	doc, err := os.ReadFile("../../docs/metering.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- table: generated from server/dataplane/metering_matrix_test.go -->", "<!-- end of table -->"
	_, rest, ok := strings.Cut(string(doc), begin)
	got, _, ok2 := strings.Cut(rest, end)
	if !ok || !ok2 {
		t.Fatalf("docs/metering.md has no table between %q and %q", begin, end)
	}
	if want := meteringTable(); strings.TrimSpace(got) != strings.TrimSpace(want) {
		t.Fatalf("docs/metering.md's table is not the tests'; it should read:\n\n%s", want)
	}
}

// meteringTable renders meteringModes as docs/metering.md shows them.
func meteringTable() string {
	var b strings.Builder
	b.WriteString("| what happens | stream | dialects × upstream kinds | status, reason | usage_source | tokens and cost |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, m := range meteringModes {
		streams := "no, yes"
		if len(m.stream) == 1 {
			streams = map[bool]string{false: "no", true: "yes"}[m.stream[0]]
		}
		cells := fmt.Sprintf("all 3 × %d", len(meteringModels))
		if m.onlyKind != "" {
			cells = "chat.completions, messages × " + string(m.onlyKind)
		}
		status := m.status
		if m.reason != "" {
			status += ", `" + m.reason + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | `%s` | %s |\n", m.name, streams, cells, status, m.source, m.doc)
	}
	for _, m := range embeddingModes {
		fmt.Fprintf(&b, "| %s | no | embeddings × openai, azure-openai | ok | `%s` | %s |\n", m.name, m.source, m.doc)
	}
	b.WriteString(priceClassRows())
	b.WriteString(promptCacheRows())
	b.WriteString(batchRows())
	return b.String()
}
