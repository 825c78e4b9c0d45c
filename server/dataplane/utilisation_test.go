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
// sending realistic requests one after another — 1 to 4k tokens of
// prompt, max_tokens 1,024, 100 to 300 tokens produced — until the first
// refusal anyone gets; then the spend is read. The callers use Chat
// Completions on gpt-4o-mini (whose tokenizer gw has), or Chat Completions
// or Messages on Claude Haiku 4.5 (whose tokenizer gw lacks), on one data
// plane or spread over three.
const (
	utilisationCallers   = 50
	utilisationMaxTokens = 1024
)

// billed is what a billing upstream makes of a request: its prompt at
// bytesPerToken bytes a token plus 7 tokens of framing, and as output the
// number of tokens the prompt asks for ("produce N;" at its start),
// answered after a delay as long as producing them takes (here 20 µs a
// token, so a run takes seconds, not minutes).
func billed(w http.ResponseWriter, r *http.Request, bytesPerToken float64) (model string, prompt, produce int, ok bool) {
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return "", 0, 0, false
	}
	// A string, or (translated to Messages) one text block.
	var content string
	if json.Unmarshal(req.Messages[0].Content, &content) != nil {
		var blocks []struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(req.Messages[0].Content, &blocks) != nil || len(blocks) == 0 {
			http.Error(w, "bad content", http.StatusBadRequest)
			return "", 0, 0, false
		}
		content = blocks[0].Text
	}
	produce, _ = strconv.Atoi(strings.TrimPrefix(strings.SplitN(content, ";", 2)[0], "produce "))
	prompt = int(float64(len(content))/bytesPerToken+0.999) + 7
	time.Sleep(time.Duration(produce) * utilisationTokenTime)
	w.Header().Set("Content-Type", "application/json")
	return req.Model, prompt, produce, true
}

// billingUpstream is an OpenAI Chat Completions upstream that bills a
// prompt as GPT-4o's tokenizer does English prose (~4 bytes a token).
func billingUpstream(tb testing.TB) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		model, prompt, produce, ok := billed(w, r, 4)
		if !ok {
			return
		}
		fmt.Fprintf(w, `{"id":"chatcmpl-u","object":"chat.completion","created":1700000000,"model":%q,`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, model, prompt, produce, prompt+produce)
	}))
	tb.Cleanup(srv.Close)
	return srv
}

// billingAnthropic is an Anthropic Messages upstream that bills a prompt
// as Claude's tokenizer does English prose (~3.5 bytes a token, by
// Anthropic's own rule of thumb: more tokens than GPT-4o's).
func billingAnthropic(tb testing.TB) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		model, prompt, produce, ok := billed(w, r, 3.5)
		if !ok {
			return
		}
		fmt.Fprintf(w, `{"id":"msg_u","type":"message","role":"assistant","model":%q,"content":[{"type":"text","text":"ok"}],`+
			`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":%d,"output_tokens":%d}}`, model, prompt, produce)
	}))
	tb.Cleanup(srv.Close)
	return srv
}

// utilisationEnv is an infEnv whose OpenAI and Anthropic credentials point
// at billing upstreams.
func utilisationEnv(tb testing.TB, db *bun.DB) *infEnv {
	e := newInfEnv(tb, db)
	ctx := context.Background()
	for provider, url := range map[string]string{"openai": billingUpstream(tb).URL + "/v1", "anthropic": billingAnthropic(tb).URL} {
		if _, err := e.st.DB().NewUpdate().Model((*store.ProviderCredential)(nil)).Set("base_url = ?", url).
			Where("org_id = ? AND provider = ?", e.org.ID, provider).Exec(ctx); err != nil {
			tb.Fatal(err)
		}
	}
	return e
}

// utilisationCase is one run of the scenario: the budget, the endpoint
// and model, how many data planes share the callers, and whether the
// planes admit as the previous release did ("before": the input bound at
// a token a body byte, no tail admissions).
type utilisationCase struct {
	amount   string
	messages bool
	model    string
	planes   int
	before   bool
	seed     uint64
}

func (c utilisationCase) String() string {
	endpoint := "chat"
	if c.messages {
		endpoint = "messages"
	}
	return fmt.Sprintf("$%s %s %s, %d plane(s)", c.amount, endpoint, c.model, c.planes)
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

// runUtilisation runs the scenario against new planes on a new shared day
// budget.
func runUtilisation(tb testing.TB, e *infEnv, c utilisationCase) utilisationRun {
	ctx := context.Background()
	// A budget of its own, off once the run is over.
	id := e.org.Policy(e.ws, "cap-"+uuid.NewString()[:8], true, `{"target":{"kind":"workspace"},"rules":[`+budgetRule(c.amount, "day", "shared")+`]}`)
	defer e.org.SetPolicyEnabled(e.ws, id, false)
	urls := make([]string, max(c.planes, 1))
	for i := range urls {
		o := e.opts
		o.BudgetHolder = "util-" + uuid.NewString()[:8]
		p := dataplane.NewPlane(e.signer.Public().(ed25519.PublicKey), o)
		if c.before {
			dataplane.UsePreviousAdmission(p)
		}
		if err := (&publish.Refresher{Compiler: e.refresh.Compiler, Plane: p, Store: e.st}).RefreshAll(ctx); err != nil {
			tb.Fatal(err)
		}
		srv := httptest.NewServer(p)
		defer srv.Close()
		stopSync := syncLoop(tb, p)
		defer stopSync()
		urls[i] = srv.URL
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: utilisationCallers}}
	defer hc.CloseIdleConnections()

	e.usage.reset()
	prose := strings.Repeat("The committee reviewed the quarterly figures and agreed to revisit the budget next month. ", 200)
	run := utilisationRun{}
	run.amount, _ = catalog.ParseNanoUSD(c.amount)
	var stop atomic.Bool
	var mu sync.Mutex
	var firstRefusal sync.Once
	var wg sync.WaitGroup
	for caller := range utilisationCallers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(c.seed, uint64(caller)))
			base := urls[caller%len(urls)]
			for !stop.Load() {
				tokens, produce := 1000+rng.IntN(3001), 100+rng.IntN(201)
				prefix := fmt.Sprintf("produce %d;", produce)
				start := rng.IntN(len(prose) - tokens*4)
				content := prefix + prose[start:start+tokens*4-len(prefix)]
				body := fmt.Sprintf(`{"model":%q,"max_tokens":%d,"messages":[{"role":"user","content":%q}]}`, c.model, utilisationMaxTokens, content)
				path := "/inf/v1/chat/completions"
				if c.messages {
					path = "/inf/v1/messages"
				}
				req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
				if c.messages {
					req.Header.Set("X-Api-Key", e.token)
					req.Header.Set("Anthropic-Version", "2023-06-01")
				} else {
					req.Header.Set("Authorization", "Bearer "+e.token)
				}
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
				case http.StatusTooManyRequests, http.StatusPaymentRequired:
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

// utilisationCases are the scenario's runs: both budgets, each endpoint
// and tokenizer family, one plane and three.
func utilisationCases() []utilisationCase {
	var out []utilisationCase
	for _, amount := range []string{"0.1", "0.5"} {
		for _, ep := range []struct {
			messages bool
			model    string
		}{{false, gptMini}, {false, haiku}, {true, haiku}} {
			for _, planes := range []int{1, 3} {
				out = append(out, utilisationCase{amount: amount, messages: ep.messages, model: ep.model, planes: planes, seed: 1})
			}
		}
	}
	return out
}

// TestBudgetUtilisation holds the utilisation figures (docs/budgets.md) on
// SQLite and PostgreSQL: under 50 concurrent callers with realistic
// requests, at least 95% of a $0.10 and a $0.50 budget is spent before the
// first refusal, which is final, and the spend never passes the amount,
// for each endpoint and model, on one plane and three. The previous
// release's admission runs in the same test, for the ratio.
func TestBudgetUtilisation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := utilisationEnv(t, db)
		for _, c := range utilisationCases() {
			before := c
			before.before = true
			old, cur := runUtilisation(t, e, before), runUtilisation(t, e, c)
			t.Logf("%s: before %.1f%% spent before the first refusal (%d ok, overshoot %d), after %.1f%% (%d ok, overshoot %d): %.2fx",
				c, old.share(), old.ok, old.overshoot(), cur.share(), cur.ok, cur.overshoot(), cur.share()/old.share())
			if cur.overshoot() != 0 || old.overshoot() != 0 {
				t.Errorf("%s: overshoot before %d, after %d", c, old.overshoot(), cur.overshoot())
			}
			if cur.share() < 95 || !cur.final {
				t.Errorf("%s: %.1f%% spent before the first refusal (final %v)", c, cur.share(), cur.final)
			}
		}
	})
}

// BenchmarkBudgetUtilisation runs the utilisation scenario on SQLite for a
// $0.10 budget, the previous release's admission ("before") and this
// one's ("after") in turn each iteration, and reports for Chat Completions
// on gpt-4o-mini and Messages on Claude Haiku 4.5 (one plane) the share
// spent before the first refusal, the overshoot, and after's share over
// before's:
//
//	go test -run '^$' -bench BudgetUtilisation ./server/dataplane
func BenchmarkBudgetUtilisation(b *testing.B) {
	e := utilisationEnv(b, storetest.Open(b, storetest.SQLite))
	for _, c := range []utilisationCase{{amount: "0.1", model: gptMini, planes: 1}, {amount: "0.1", messages: true, model: haiku, planes: 1}} {
		b.Run(strings.ReplaceAll(c.String(), " ", "_"), func(b *testing.B) {
			var before, after, overshoot float64
			n := 0
			for b.Loop() {
				c.seed = uint64(n)
				old := c
				old.before = true
				prev, cur := runUtilisation(b, e, old), runUtilisation(b, e, c)
				before, after = before+prev.share(), after+cur.share()
				overshoot += float64(prev.overshoot() + cur.overshoot())
				n++
			}
			b.ReportMetric(before/float64(n), "before-spent-%")
			b.ReportMetric(after/float64(n), "after-spent-%")
			b.ReportMetric(after/before, "ratio")
			b.ReportMetric(overshoot/float64(n), "overshoot-nano-usd")
		})
	}
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

// utilisationTokenTime is how long a billing upstream takes per token
// produced.
var utilisationTokenTime = 20 * time.Microsecond
