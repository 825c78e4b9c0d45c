package dataplane_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/publish"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// The utilisation scenario (docs/budgets.md): 50 callers at once, each
// sending realistic chat completions to gpt-4o-mini one after another —
// 1 to 4k tokens of prompt, max_tokens 1,024, 100 to 300 tokens produced —
// until the first refusal anyone gets; then the spend is read.
const (
	utilisationCallers   = 50
	utilisationMaxTokens = 1024
)

// billingUpstream is an OpenAI Chat Completions upstream that bills each
// request as a provider would: its prompt at ~4 bytes a token (English
// prose to the GPT-4o tokenizer) plus 7 tokens of framing, and as output
// the number of tokens the prompt asks for ("produce N;" at its start),
// answered after a delay as long as producing them takes (here 20 µs a
// token, so a run takes seconds, not minutes).
func billingUpstream(tb testing.TB) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		content := req.Messages[0].Content
		produce, _ := strconv.Atoi(strings.TrimPrefix(strings.SplitN(content, ";", 2)[0], "produce "))
		prompt := (len(content)+3)/4 + 7
		time.Sleep(time.Duration(produce) * 20 * time.Microsecond)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-u","object":"chat.completion","created":1700000000,"model":%q,`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, req.Model, prompt, produce, prompt+produce)
	}))
	tb.Cleanup(srv.Close)
	return srv
}

// utilisationEnv is an infEnv whose OpenAI credential points at a billing
// upstream.
func utilisationEnv(tb testing.TB, db *bun.DB) *infEnv {
	e := newInfEnv(tb, db)
	up := billingUpstream(tb)
	ctx := context.Background()
	if _, err := e.st.DB().NewUpdate().Model((*store.ProviderCredential)(nil)).Set("base_url = ?", up.URL+"/v1").
		Where("id = ?", e.openaiCred).Exec(ctx); err != nil {
		tb.Fatal(err)
	}
	return e
}

// utilisationRun is what one run of the scenario measured.
type utilisationRun struct {
	amount, spent int64
	ok, refused   int
	// final: the first refusal said so (x-should-retry: false).
	final bool
}

func (r utilisationRun) share() float64 { return 100 * float64(r.spent) / float64(r.amount) }

func (r utilisationRun) overshoot() int64 { return max(0, r.spent-r.amount) }

// runUtilisation runs the scenario against a new plane on a new shared
// day budget of amount; legacy makes the plane admit as earlier releases
// did (the flat 2,000-token bound at the dearest input price, no waiting).
func runUtilisation(tb testing.TB, e *infEnv, amount string, legacy bool, seed uint64) utilisationRun {
	ctx := context.Background()
	// A budget of its own, off once the run is over.
	id := e.org.Policy(e.ws, "cap-"+uuid.NewString()[:8], true, `{"target":{"kind":"workspace"},"rules":[`+budgetRule(amount, "day", "shared")+`]}`)
	defer e.org.SetPolicyEnabled(e.ws, id, false)
	o := e.opts
	if legacy {
		o.BudgetWait = -1
	}
	p := dataplane.NewPlane(e.signer.Public().(ed25519.PublicKey), o)
	if legacy {
		dataplane.UseLegacyBound(p)
	}
	if err := (&publish.Refresher{Compiler: e.refresh.Compiler, Plane: p, Store: e.st}).RefreshAll(ctx); err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	stopSync := syncLoop(tb, p)
	defer stopSync()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: utilisationCallers}}
	defer hc.CloseIdleConnections()

	e.usage.reset()
	prose := strings.Repeat("The committee reviewed the quarterly figures and agreed to revisit the budget next month. ", 200)
	run := utilisationRun{}
	run.amount, _ = catalog.ParseNanoUSD(amount)
	var stop atomic.Bool
	var mu sync.Mutex
	var firstRefusal sync.Once
	var wg sync.WaitGroup
	for c := range utilisationCallers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(c)))
			for !stop.Load() {
				tokens, produce := 1000+rng.IntN(3001), 100+rng.IntN(201)
				prefix := fmt.Sprintf("produce %d;", produce)
				start := rng.IntN(len(prose) - tokens*4)
				content := prefix + prose[start:start+tokens*4-len(prefix)]
				body := fmt.Sprintf(`{"model":%q,"max_tokens":%d,"messages":[{"role":"user","content":%q}]}`, gptMini, utilisationMaxTokens, content)
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/inf/v1/chat/completions", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+e.token)
				req.Header.Set("Content-Type", "application/json")
				resp, err := hc.Do(req)
				if err != nil {
					tb.Error(err)
					return
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				mu.Lock()
				switch resp.StatusCode {
				case http.StatusOK:
					run.ok++
				case http.StatusTooManyRequests:
					run.refused++
					firstRefusal.Do(func() { run.final = resp.Header.Get("X-Should-Retry") == "false" })
					stop.Store(true)
				default:
					tb.Errorf("answer %d %s", resp.StatusCode, raw)
					stop.Store(true)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	// Every ok request's cost, as its usage event has it.
	var spent int64
	for _, ev := range e.usage.wait(tb, run.ok+run.refused) {
		if ev.Status != "ok" {
			continue
		}
		n, err := catalog.ParseNanoUSD(ev.CostUSD)
		if err != nil {
			tb.Fatal(err)
		}
		spent += n
	}
	run.spent = spent
	return run
}

// TestBudgetUtilisation holds the utilisation figures (docs/budgets.md) on
// SQLite and PostgreSQL: under 50 concurrent callers with realistic
// requests, at least 95% of a $0.10 and a $0.50 budget is spent before the
// first refusal, which is final, and the spend never passes the amount.
// The admission of earlier releases runs in the same test, for the ratio.
func TestBudgetUtilisation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := utilisationEnv(t, db)
		for _, amount := range []string{"0.1", "0.5"} {
			before := runUtilisation(t, e, amount, true, 1)
			after := runUtilisation(t, e, amount, false, 1)
			t.Logf("$%s: before %.1f%% spent before the first refusal (%d ok, overshoot %d), after %.1f%% (%d ok, overshoot %d): %.2fx",
				amount, before.share(), before.ok, before.overshoot(), after.share(), after.ok, after.overshoot(), after.share()/before.share())
			if after.overshoot() != 0 || before.overshoot() != 0 {
				t.Errorf("$%s: overshoot before %d, after %d", amount, before.overshoot(), after.overshoot())
			}
			if after.share() < 95 || !after.final {
				t.Errorf("$%s: %.1f%% spent before the first refusal (final %v)", amount, after.share(), after.final)
			}
		}
	})
}

// BenchmarkBudgetUtilisation runs the utilisation scenario on SQLite,
// earlier releases' admission ("before") and this one's ("after") in turn
// each iteration, and reports the share of a $0.10 budget spent before the
// first refusal, the overshoot, and after's share over before's:
//
//	go test -run '^$' -bench BudgetUtilisation ./server/dataplane
func BenchmarkBudgetUtilisation(b *testing.B) {
	e := utilisationEnv(b, storetest.Open(b, storetest.SQLite))
	var before, after, overshoot float64
	n := 0
	for b.Loop() {
		old := runUtilisation(b, e, "0.1", true, uint64(n))
		cur := runUtilisation(b, e, "0.1", false, uint64(n))
		before, after = before+old.share(), after+cur.share()
		overshoot += float64(old.overshoot() + cur.overshoot())
		n++
	}
	b.ReportMetric(before/float64(n), "before-spent-%")
	b.ReportMetric(after/float64(n), "after-spent-%")
	b.ReportMetric(after/before, "ratio")
	b.ReportMetric(overshoot/float64(n), "overshoot-nano-usd")
}

// TestBudgetAdmitsShortRequests: a budget that fits 30 short requests at
// their real cost (14 tokens in, 20 out, max_tokens 20) admits at least a
// quarter of them one after another, the first always, on an OpenAI and an
// Anthropic model; earlier releases' bound, in the same run, for the
// ratio.
func TestBudgetAdmitsShortRequests(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		const n = 30
		e := newInfEnv(t, db)
		reply := providerstest.Reply{Text: "Hi there, nice to meet!", Usage: providerstest.Usage{Input: 14, Output: 20}}
		e.openai.SetDefault(reply)
		e.anthropic.SetDefault(reply)
		for _, m := range []struct {
			model         string
			input, output int64 // nano-dollars a token
		}{{gptMini, 150, 600}, {haiku, 1000, 5000}} {
			cost := reply.Usage.Input*m.input + reply.Usage.Output*m.output
			admitted := map[bool]int{}
			for _, legacy := range []bool{true, false} {
				id := e.org.Policy(e.ws, "cap-"+uuid.NewString()[:8], true,
					`{"target":{"kind":"workspace"},"rules":[`+budgetRule(catalog.FormatNanoUSD(n*cost), "day", "shared")+`]}`)
				o := e.opts
				o.BudgetWait = -1 // one after another: nothing in flight to wait for
				p := dataplane.NewPlane(e.signer.Public().(ed25519.PublicKey), o)
				if legacy {
					dataplane.UseLegacyBound(p)
				}
				if err := (&publish.Refresher{Compiler: e.refresh.Compiler, Plane: p, Store: e.st}).RefreshAll(context.Background()); err != nil {
					t.Fatal(err)
				}
				srv := httptest.NewServer(p)
				body := `{"model":"` + m.model + `","max_tokens":20,"messages":[{"role":"user","content":"Say hi in five words."}]}`
				for range 2 * n {
					status, _ := postTo(t, srv.URL, e.token, body)
					if status != http.StatusOK {
						break
					}
					admitted[legacy]++
				}
				srv.Close()
				e.org.SetPolicyEnabled(e.ws, id, false)
			}
			t.Logf("%s, a budget of %d requests' real cost: %d admitted in sequence before, %d after", m.model, n, admitted[true], admitted[false])
			if admitted[false] < n/4 || admitted[false] == 0 {
				t.Errorf("%s: %d of %d admitted", m.model, admitted[false], n)
			}
			if admitted[false] > n {
				t.Errorf("%s: %d admitted, more than the budget's %d", m.model, admitted[false], n)
			}
		}
	})
}
