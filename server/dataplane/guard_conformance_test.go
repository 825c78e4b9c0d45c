package dataplane_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/guardrails"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// The guardrail conformance table (issue 32): each cell a request through
// the real data plane against the providerstest fakes, on both databases.
// docs/guardrails.md holds the table these cells make
// (TestGuardConformanceDoc checks it; GW_UPDATE_DOCS=1 rewrites it).

// gRoute is a dialect and the upstream that answers it.
type gRoute struct {
	name, path, model string
	anthropic         bool // the Anthropic fake answers (else OpenAI's)
	embeddings        bool
}

var gRoutes = []gRoute{
	{name: "chat", path: "/inf/v1/chat/completions", model: gptMini},
	{name: "chat→anthropic", path: "/inf/v1/chat/completions", model: haiku, anthropic: true},
	{name: "responses", path: "/inf/v1/responses", model: gptMini},
	{name: "responses→anthropic", path: "/inf/v1/responses", model: haiku, anthropic: true},
	{name: "messages", path: "/inf/v1/messages", model: haiku, anthropic: true},
	{name: "messages→openai", path: "/inf/v1/messages", model: gptMini},
	{name: "embeddings", path: "/inf/v1/embeddings", model: "openai/text-embedding-3-small", embeddings: true},
}

// gSample is what each detector kind finds: the text placed in the
// request (input) or the answer (output), and the type it is redacted as.
var gSample = map[string]struct{ text, typ string }{
	guardrails.KindPII:      {"bob.smith@example.org", "email"},
	guardrails.KindSecrets:  {guardAWSKey, "aws_access_key"},
	guardrails.KindRegex:    {"PRJ-7731", "regex"},
	guardrails.KindKeywords: {guardWord, "keyword"},
	guardrails.KindWebhook:  {"Zorblax", "codename"},
}

var gKinds = []string{guardrails.KindPII, guardrails.KindSecrets, guardrails.KindRegex, guardrails.KindKeywords, guardrails.KindWebhook}

// Webhook failure modes: the webhook's path says how it answers.
const (
	gFailNone    = ""
	gFailTimeout = "timeout"
	gFail500     = "status 500"
	gFailGarbage = "garbage"
	gFailSlow    = "slow"
)

type gCell struct {
	Kind    string
	Stage   guardrails.Stage
	Route   gRoute
	Stream  bool
	Action  guardrails.Action
	Failure string
	OnError guardrails.OnError
}

// gCells is the table: every detector kind per dialect and stage (redact,
// streamed and not); every action per dialect, stage and stream (the
// secrets detector); every webhook failure mode under each on_error per
// dialect and stage, streamed and not at output (redact). Embeddings have
// no output stage and no stream.
func gCells() []gCell {
	var cells []gCell
	seen := map[string]bool{}
	add := func(c gCell) {
		if c.Route.embeddings && (c.Stage == guardrails.StageOutput || c.Stream) {
			return
		}
		k := fmt.Sprintf("%+v", c)
		if !seen[k] {
			seen[k] = true
			cells = append(cells, c)
		}
	}
	stages := []guardrails.Stage{guardrails.StageInput, guardrails.StageOutput}
	for _, rt := range gRoutes {
		for _, st := range stages {
			for _, stream := range []bool{false, true} {
				for _, k := range gKinds {
					add(gCell{Kind: k, Stage: st, Route: rt, Stream: stream, Action: guardrails.ActionRedact, OnError: guardrails.FailClosed})
				}
				for _, a := range []guardrails.Action{guardrails.ActionBlock, guardrails.ActionRedact, guardrails.ActionFlag} {
					add(gCell{Kind: guardrails.KindSecrets, Stage: st, Route: rt, Stream: stream, Action: a, OnError: guardrails.FailClosed})
				}
			}
		}
		for _, f := range []string{gFailTimeout, gFail500, gFailGarbage, gFailSlow} {
			for _, oe := range []guardrails.OnError{guardrails.FailClosed, guardrails.FailOpen} {
				add(gCell{Kind: guardrails.KindWebhook, Stage: guardrails.StageInput, Route: rt, Action: guardrails.ActionRedact, Failure: f, OnError: oe})
				for _, stream := range []bool{false, true} {
					add(gCell{Kind: guardrails.KindWebhook, Stage: guardrails.StageOutput, Route: rt, Stream: stream, Action: guardrails.ActionRedact, Failure: f, OnError: oe})
				}
			}
		}
	}
	return cells
}

// gExpect is what a cell must show: the caller, the upstream, the event.
type gExpect struct {
	Caller, Upstream, Usage string
}

// errs reports whether the cell's webhook fails (slow answers in time).
func (c gCell) errs() bool { return c.Failure != gFailNone && c.Failure != gFailSlow }

func (c gCell) expect() gExpect {
	s := gSample[c.Kind]
	outcome := map[guardrails.Action]string{guardrails.ActionBlock: "blocked", guardrails.ActionRedact: "redacted", guardrails.ActionFlag: "flagged"}[c.Action]
	effect := c.Action
	if c.errs() {
		outcome = "errored"
		effect = guardrails.ActionFlag // passes unchanged
		if c.OnError == guardrails.FailClosed {
			effect = guardrails.ActionBlock
		}
	}
	usage := fmt.Sprintf("%s %s [%s]", c.Stage, outcome, c.Kind)
	var e gExpect
	switch {
	case c.Stage == guardrails.StageInput && effect == guardrails.ActionBlock:
		e = gExpect{"400 `guardrail_blocked`", "nothing", "denied, " + usage}
	case c.Stage == guardrails.StageInput && effect == guardrails.ActionRedact:
		e = gExpect{"200", "`[REDACTED:" + s.typ + "]`", "ok, " + usage}
	case c.Stage == guardrails.StageInput:
		e = gExpect{"200", "the text as sent", "ok, " + usage}
	case effect == guardrails.ActionBlock && c.Stream:
		e = gExpect{"the error event `guardrail_blocked`, none of the text", "the request (its call ended at the block)", "ok, " + usage + ", tokens metered"}
	case effect == guardrails.ActionBlock:
		e = gExpect{"400 `guardrail_blocked`", "the request", "ok, " + usage + ", tokens metered"}
	case effect == guardrails.ActionRedact:
		e = gExpect{"`[REDACTED:" + s.typ + "]`", "the request", "ok, " + usage}
	default:
		e = gExpect{"the answer as generated", "the request", "ok, " + usage}
	}
	return e
}

// gWebhook is a webhook detector's service: it finds the webhook sample
// (code-point offsets) and fails as its path says.
func gWebhook(t testing.TB) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Text string }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			w.WriteHeader(400)
			return
		}
		switch r.URL.Path {
		case "/timeout":
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return
		case "/500":
			w.WriteHeader(500)
			return
		case "/garbage":
			w.Write([]byte(`{"verdict": "fine"`))
			return
		case "/slow":
			time.Sleep(50 * time.Millisecond)
		}
		word := gSample[guardrails.KindWebhook].text
		var reds []map[string]any
		for at := 0; ; {
			i := strings.Index(in.Text[at:], word)
			if i < 0 {
				break
			}
			start := utf8.RuneCountInString(in.Text[:at+i])
			reds = append(reds, map[string]any{"start": start, "end": start + utf8.RuneCountInString(word), "type": "codename"})
			at += i + len(word)
		}
		if len(reds) == 0 {
			w.Write([]byte(`{"action":"pass"}`))
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"action": "redact", "redactions": reds})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// detector is the cell's detector spec.
func (c gCell) detector(hookURL string) guardrails.DetectorSpec {
	switch c.Kind {
	case guardrails.KindPII:
		return guardrails.DetectorSpec{Kind: c.Kind, Types: []string{"email"}}
	case guardrails.KindRegex:
		return guardrails.DetectorSpec{Kind: c.Kind, Patterns: []string{`PRJ-[0-9]{4}`}}
	case guardrails.KindKeywords:
		return guardrails.DetectorSpec{Kind: c.Kind, Words: []string{guardWord}}
	case guardrails.KindWebhook:
		path, timeout := "/ok", 2000
		switch c.Failure {
		case gFailTimeout:
			path, timeout = "/timeout", 100
		case gFail500:
			path = "/500"
		case gFailGarbage:
			path = "/garbage"
		case gFailSlow:
			path = "/slow"
		}
		return guardrails.DetectorSpec{Kind: c.Kind, URL: hookURL + path, TimeoutMS: timeout}
	}
	return guardrails.DetectorSpec{Kind: c.Kind}
}

func (c gCell) body(marker, prompt string) string {
	stream := ""
	if c.Stream {
		stream = `"stream":true,`
	}
	text := marker + " " + prompt
	switch {
	case c.Route.embeddings:
		return `{"model":"` + c.Route.model + `","input":` + jsonStr(text) + `}`
	case strings.HasSuffix(c.Route.path, "/responses"):
		return `{"model":"` + c.Route.model + `",` + stream + `"input":` + jsonStr(text) + `}`
	case strings.HasSuffix(c.Route.path, "/messages"):
		return `{"model":"` + c.Route.model + `",` + stream + `"max_tokens":200,"messages":[{"role":"user","content":` + jsonStr(text) + `}]}`
	}
	return `{"model":"` + c.Route.model + `",` + stream + `"messages":[{"role":"user","content":` + jsonStr(text) + `}]}`
}

func jsonStr(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func (c gCell) name() string {
	s := fmt.Sprintf("%s/%s/%s/%s", c.Kind, c.Stage, c.Route.name, c.Action)
	if c.Stream {
		s += "/stream"
	}
	if c.Failure != "" {
		s += "/" + strings.ReplaceAll(c.Failure, " ", "_") + "/" + string(c.OnError)
	}
	return s
}

// TestGuardConformance runs the table. Every cell has its own key and a
// guardrail that targets only that key, so the cells share one plane and
// one pair of fakes and run in parallel; each request carries a marker
// the fakes answer by and an X-Request-Id its usage event is found by.
// Besides its row, every cell checks that no refusal, no event the caller
// read and no log line holds the matched text where the guardrail did not
// let it through.
func TestGuardConformance(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		hook := gWebhook(t)
		cells := gCells()
		type prepared struct {
			gCell
			token, marker string
			guardID       uuid.UUID
		}
		var ps []prepared
		for i, c := range cells {
			token, keyID := e.org.Key(e.ws, e.owner, nil)
			name := fmt.Sprintf("conf-%03d", i)
			act, oe := c.Action, c.OnError
			in := backend.GuardrailInput{Name: &name, Target: &policy.Target{Kind: policy.TargetSelectedKeys, KeyIDs: []string{keyID.String()}},
				Stages: []guardrails.Stage{c.Stage}, Detectors: []guardrails.DetectorSpec{c.detector(hook.URL)}, Action: &act, OnError: &oe,
				HasStages: true, HasDetectors: true, Secrets: map[int]string{}}
			if c.Kind == guardrails.KindWebhook {
				in.Secrets[0] = "whsec-conformance-0123456789"
			}
			g, err := backend.CreateGuardrail(context.Background(), e.st, backend.System("test"), backend.GuardrailCreate{
				Scope: store.AliasScope{OrgID: e.org.ID, WorkspaceID: &e.ws}, In: in,
				Seal: func(s []byte, id uuid.UUID, url string) (string, error) {
					return e.kr.Seal(s, secrets.GuardrailWebhookAAD(id, url))
				}})
			if err != nil {
				t.Fatal(err)
			}
			p := prepared{gCell: c, token: token, marker: fmt.Sprintf("gcell-%03d-x", i), guardID: g.ID}
			sample := gSample[c.Kind].text
			reply := providerstest.Reply{Text: "fine, " + p.marker, Usage: providerstest.Usage{Input: 5, Output: 9}}
			if c.Stage == guardrails.StageOutput {
				reply.Text = "answer " + p.marker + ": " + sample + " end of the answer"
			}
			if c.Route.anthropic {
				e.anthropic.ReplyWhen(p.marker, reply)
			} else {
				e.openai.ReplyWhen(p.marker, reply)
			}
			ps = append(ps, p)
		}
		e.sync(t)
		// Most of a cell's time is a webhook's wait (slow, timeout), so
		// the cells run many at a time, beyond -parallel (which is the
		// number of cores): t.Run from goroutines, bounded.
		t.Run("cells", func(t *testing.T) {
			var wg sync.WaitGroup
			sem := make(chan struct{}, 24)
			for _, p := range ps {
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer func() { <-sem; wg.Done() }()
					t.Run(p.name(), func(t *testing.T) { gRunCell(t, e, p.gCell, p.token, p.marker, p.guardID) })
				}()
			}
			wg.Wait()
		})
		logged := e.log.String()
		for _, k := range gKinds {
			if strings.Contains(logged, gSample[k].text) {
				t.Errorf("a log line holds the matched text of %s", k)
			}
		}
	})
}

func gRunCell(t *testing.T, e *infEnv, c gCell, token, marker string, guardID uuid.UUID) {
	sample := gSample[c.Kind].text
	prompt := "hello"
	if c.Stage == guardrails.StageInput {
		prompt = "please keep " + sample + " safe"
	}
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+c.Route.path, strings.NewReader(c.body(marker, prompt)))
	req.Header.Set("X-Api-Key", token)
	req.Header.Set("Anthropic-Version", "2023-06-01")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", marker)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	got := string(raw)
	want := c.expect()

	// The caller.
	redacted := "[REDACTED:" + gSample[c.Kind].typ + "]"
	switch {
	case strings.HasPrefix(want.Caller, "400"):
		if resp.StatusCode != 400 || !strings.Contains(got, "guardrail_blocked") && !strings.Contains(got, "guardrail") {
			t.Fatalf("caller: %d %s", resp.StatusCode, got)
		}
		if !strings.Contains(got, "conf-") {
			t.Fatalf("the refusal does not name the guardrail: %s", got)
		}
	case strings.HasPrefix(want.Caller, "the error event"):
		// OpenAI's shapes carry the code; Anthropic's error event only a
		// type and the message, which names the guardrail.
		if resp.StatusCode != 200 || !strings.Contains(got, `guardrail \"conf-`) || !strings.Contains(got, "error") {
			t.Fatalf("caller: %d %s", resp.StatusCode, got)
		}
		if strings.Contains(got, "[DONE]") || strings.Contains(got, "end of the answer") {
			t.Fatalf("a blocked stream went on: %s", got)
		}
	default:
		if resp.StatusCode != 200 {
			t.Fatalf("caller: %d %s", resp.StatusCode, got)
		}
	}
	if strings.Contains(want.Caller, "guardrail_blocked") && !strings.Contains(got, "detector "+c.Kind) {
		t.Fatalf("the refusal does not name the detector: %s", got)
	}
	if c.Stage == guardrails.StageOutput {
		switch want.Caller {
		case "`" + redacted + "`":
			if !strings.Contains(got, redacted) || !strings.Contains(got, "end of the answer") {
				t.Fatalf("caller did not read the redacted answer: %s", got)
			}
		case "the answer as generated":
			if !strings.Contains(got, "end of the answer") || !c.Stream && !strings.Contains(got, sample) {
				t.Fatalf("caller did not read the answer: %s", got)
			}
			if c.Stream && !strings.Contains(strings.Join(streamTexts(got), ""), sample) {
				t.Fatalf("caller did not read the flagged text: %s", got)
			}
		}
	}
	// The matched text is never in what the caller read unless the
	// guardrail let it through (flag, fail_open at output).
	letThrough := c.Stage == guardrails.StageOutput && (c.Action == guardrails.ActionFlag || c.errs() && c.OnError == guardrails.FailOpen)
	if !letThrough && strings.Contains(strings.Join(streamTexts(got), ""), sample) {
		t.Fatalf("the caller read the matched text: %s", got)
	}
	if !letThrough && strings.Contains(got, sample) {
		t.Fatalf("the matched text is in the answer: %s", got)
	}

	// The upstream.
	fake := e.openai.Requests()
	if c.Route.anthropic {
		fake = e.anthropic.Requests()
	}
	var sent []string
	for _, r := range fake {
		if strings.Contains(string(r.Raw), marker) {
			sent = append(sent, string(r.Raw))
		}
	}
	switch want.Upstream {
	case "nothing":
		if len(sent) != 0 {
			t.Fatalf("the upstream was called: %v", sent)
		}
	default:
		if len(sent) != 1 {
			t.Fatalf("the upstream saw %d requests", len(sent))
		}
		if strings.HasPrefix(want.Upstream, "`[REDACTED") && (!strings.Contains(sent[0], redacted) || strings.Contains(sent[0], sample)) {
			t.Fatalf("the upstream saw %s", sent[0])
		}
		if want.Upstream == "the text as sent" && !strings.Contains(sent[0], sample) {
			t.Fatalf("the upstream saw %s", sent[0])
		}
	}

	// The usage event.
	ev := gEvent(t, e, marker)
	status := strings.SplitN(want.Usage, ",", 2)[0]
	if ev.Status != status || len(ev.Guardrails) != 1 {
		t.Fatalf("usage: %s %+v, want %s", ev.Status, ev.Guardrails, want.Usage)
	}
	rec := ev.Guardrails[0]
	wantRec := strings.Fields(strings.SplitN(want.Usage, ",", 3)[1])
	if rec.ID != guardID.String() || rec.Stage != wantRec[0] || rec.Outcome != wantRec[1] || !slices.Equal(rec.Detectors, []string{c.Kind}) {
		t.Fatalf("usage record %+v, want %s", rec, want.Usage)
	}
	if status == "denied" && (ev.Reason == nil || *ev.Reason != "guardrail_blocked") {
		t.Fatalf("usage reason %v", ev.Reason)
	}
	if b, _ := json.Marshal(ev); strings.Contains(string(b), sample) {
		t.Fatalf("the usage event holds the matched text: %s", b)
	}
	if strings.HasSuffix(want.Usage, "tokens metered") && ev.OutputTokens == 0 {
		t.Fatalf("a blocked answer's tokens were not metered: %+v", ev)
	}
}

// gEvent waits for the usage event of a request id.
func gEvent(t *testing.T, e *infEnv, id string) wire.UsageEventIn {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		for _, ev := range e.usage.snapshot() {
			if ev.RequestID != nil && *ev.RequestID == id {
				return ev
			}
		}
	}
	t.Fatalf("no usage event for %s", id)
	return wire.UsageEventIn{}
}

// streamTexts is what the text deltas of an event stream say, in order,
// for any dialect (chat content, Messages text, Responses output text).
func streamTexts(body string) []string {
	var out []string
	for _, line := range strings.Split(body, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type    string `json:"type"`
			Delta   json.RawMessage
			Choices []struct {
				Delta struct{ Content string }
			}
		}
		if json.Unmarshal([]byte(data), &ev) != nil {
			continue
		}
		for _, ch := range ev.Choices {
			out = append(out, ch.Delta.Content)
		}
		var s string
		var d struct{ Text, Thinking string }
		switch {
		case json.Unmarshal(ev.Delta, &s) == nil && ev.Type == "response.output_text.delta":
			out = append(out, s)
		case json.Unmarshal(ev.Delta, &d) == nil:
			out = append(out, d.Text+d.Thinking)
		}
	}
	return out
}

// gTable renders the cells as docs/guardrails.md's conformance table:
// cells that differ only by dialect are one row.
func gTable() string {
	type row struct {
		key    string
		routes []string
	}
	var rows []*row
	byKey := map[string]*row{}
	for _, c := range gCells() {
		w := c.expect()
		stream := "no"
		if c.Stream {
			stream = "yes"
		}
		failure := "—"
		if c.Failure != "" {
			failure = c.Failure + " (`" + string(c.OnError) + "`)"
		}
		k := fmt.Sprintf("| %s | %s | %s | %s | %s | %%s | %s | %s | %s |", c.Kind, c.Stage, stream, c.Action, failure, w.Caller, w.Upstream, w.Usage)
		r := byKey[k]
		if r == nil {
			r = &row{key: k}
			byKey[k] = r
			rows = append(rows, r)
		}
		r.routes = append(r.routes, c.Route.name)
	}
	var b strings.Builder
	b.WriteString("| detector | stage | stream | action | webhook failure (on_error) | dialects | caller sees | upstream sees | usage event |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, r.key+"\n", strings.Join(r.routes, ", "))
	}
	return b.String()
}

const (
	gDocBegin = "<!-- conformance table: generated from server/dataplane/guard_conformance_test.go (GW_UPDATE_DOCS=1) -->\n"
	gDocEnd   = "<!-- end of the conformance table -->\n"
)

// TestGuardConformanceDoc: docs/guardrails.md's conformance table is the
// table TestGuardConformance runs.
func TestGuardConformanceDoc(t *testing.T) {
	const path = "../../docs/guardrails.md"
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i, j := strings.Index(s, gDocBegin), strings.Index(s, gDocEnd)
	if i < 0 || j < i {
		t.Fatalf("docs/guardrails.md has no generated conformance table")
	}
	want := s[:i+len(gDocBegin)] + gTable() + s[j:]
	if want == s {
		return
	}
	if os.Getenv("GW_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("docs/guardrails.md's conformance table is not the test's (GW_UPDATE_DOCS=1 go test ./server/dataplane -run TestGuardConformanceDoc rewrites it)")
}
