package dataplane_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/guardrails"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

const (
	guardAWSKey = "AKIAIOSFODNN7EXAMPLE"
	guardWord   = "falconproject"
)

// guardrail stores an enabled guardrail of the organization (ws false) or
// the workspace and returns its id.
func (e *infEnv) guardrail(t *testing.T, ws bool, action guardrails.Action, onErr guardrails.OnError, secret string, ds ...guardrails.DetectorSpec) uuid.UUID {
	t.Helper()
	sc := store.AliasScope{OrgID: e.org.ID}
	if ws {
		sc.WorkspaceID = &e.ws
	}
	name := "g-" + uuid.NewString()[:8]
	act, oe := action, onErr
	in := backend.GuardrailInput{Name: &name, Target: &policy.Target{Kind: policy.TargetWorkspace},
		Stages: []guardrails.Stage{guardrails.StageInput, guardrails.StageOutput}, Detectors: ds, Action: &act, OnError: &oe,
		HasStages: true, HasDetectors: true, Secrets: map[int]string{}}
	for i, d := range ds {
		if d.Kind == guardrails.KindWebhook && secret != "" {
			in.Secrets[i] = secret
		}
	}
	g, err := backend.CreateGuardrail(context.Background(), e.st, backend.System("test"), backend.GuardrailCreate{Scope: sc, In: in,
		Seal: func(s []byte, id uuid.UUID, url string) (string, error) {
			return e.kr.Seal(s, secrets.GuardrailWebhookAAD(id, url))
		}})
	if err != nil {
		t.Fatal(err)
	}
	e.sync(t)
	return g.ID
}

func (e *infEnv) dropGuardrail(t *testing.T, ws bool, id uuid.UUID) {
	t.Helper()
	sc := store.AliasScope{OrgID: e.org.ID}
	if ws {
		sc.WorkspaceID = &e.ws
	}
	if _, err := backend.DeleteGuardrail(context.Background(), e.st, backend.System("test"), sc, id); err != nil {
		t.Fatal(err)
	}
	e.sync(t)
}

// TestGuardInput: the input stage in the data plane. A redaction is what
// the upstream sees; a block answers 400 guardrail_blocked in the
// dialect's shape, names the guardrail and detector and never the matched
// text, and calls no upstream; a webhook's failure follows on_error; an
// image-only part is recorded skipped; each usage event says what every
// guardrail did.
func TestGuardInput(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		ctx := context.Background()
		_ = ctx

		// Redact at the organization: the upstream sees [REDACTED:…].
		id := e.guardrail(t, false, guardrails.ActionRedact, guardrails.FailClosed, "", guardrails.DetectorSpec{Kind: guardrails.KindSecrets})
		e.openai.Enqueue(providerstest.Reply{Text: "ok", Usage: providerstest.Usage{Input: 5, Output: 1}})
		e.usage.reset()
		resp := e.post(t, `{"model":"`+gptMini+`","messages":[{"role":"user","content":"my key is `+guardAWSKey+`"}]}`)
		if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 {
			t.Fatalf("redact: %d %s", resp.StatusCode, b)
		}
		reqs := e.openai.Requests()
		sent := string(reqs[len(reqs)-1].Raw)
		if strings.Contains(sent, guardAWSKey) || !strings.Contains(sent, "[REDACTED:aws_access_key]") {
			t.Fatalf("the upstream saw %s", sent)
		}
		ev := e.usage.snapshot()
		if len(ev) != 1 || len(ev[0].Guardrails) != 2 || ev[0].Guardrails[0].Outcome != "redacted" || ev[0].Guardrails[1].Outcome != "passed" || ev[0].Guardrails[0].ID != id.String() ||
			ev[0].Guardrails[0].Detectors[0] != "secrets" || ev[0].Guardrails[0].Stage != "input" {
			t.Fatalf("usage %+v", ev)
		}
		// An image-only request: nothing to read, recorded skipped.
		e.openai.Enqueue(providerstest.Reply{Text: "ok", Usage: providerstest.Usage{Input: 5, Output: 1}})
		e.usage.reset()
		resp = e.post(t, `{"model":"`+gptMini+`","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]}`)
		io.ReadAll(resp.Body)
		if ev := e.usage.snapshot(); len(ev) != 1 || ev[0].Guardrails[0].Outcome != "skipped" {
			t.Fatalf("image only: %d %+v", resp.StatusCode, ev)
		}
		e.dropGuardrail(t, false, id)

		// The output stage: a whole answer is redacted before the caller
		// reads it; a streamed one as it goes (hold-back window).
		id = e.guardrail(t, false, guardrails.ActionRedact, guardrails.FailClosed, "", guardrails.DetectorSpec{Kind: guardrails.KindPII, Types: []string{"email"}})
		e.openai.Enqueue(providerstest.Reply{Text: "write to bob@example.org", Usage: providerstest.Usage{Input: 5, Output: 3}})
		e.usage.reset()
		resp = e.post(t, `{"model":"`+gptMini+`","messages":[{"role":"user","content":"who?"}]}`)
		if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || strings.Contains(string(b), "bob@") || !strings.Contains(string(b), "[REDACTED:email]") {
			t.Fatalf("output redact: %d %s", resp.StatusCode, b)
		}
		if ev := e.usage.snapshot(); len(ev) != 1 || len(ev[0].Guardrails) != 2 || ev[0].Guardrails[1].Stage != "output" || ev[0].Guardrails[1].Outcome != "redacted" {
			t.Fatalf("output usage %+v", ev)
		}
		// A stream: the address arrives in 4-byte pieces and is still
		// redacted, in the chat dialect and the Messages dialect (a
		// translated route).
		for _, c := range []struct{ path, body string }{
			{"/inf/v1/chat/completions", `{"model":"` + gptMini + `","stream":true,"messages":[{"role":"user","content":"who?"}]}`},
			{"/inf/v1/messages", `{"model":"` + gptMini + `","stream":true,"max_tokens":50,"messages":[{"role":"user","content":"who?"}]}`},
			// The native Anthropic route: its own text deltas.
			{"/inf/v1/messages", `{"model":"` + haiku + `","stream":true,"max_tokens":50,"messages":[{"role":"user","content":"who?"}]}`},
		} {
			reply := providerstest.Reply{Text: "ask bob@example.org or alice@example.net, they know", Usage: providerstest.Usage{Input: 5, Output: 9}}
			if strings.Contains(c.body, haiku) {
				e.anthropic.Enqueue(reply)
			} else {
				e.openai.Enqueue(reply)
			}
			e.usage.reset()
			resp = e.postTo(t, c.path, c.body)
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || strings.Contains(string(b), "example.org") || strings.Contains(string(b), "alice") ||
				strings.Count(string(b), "[REDACTED:email]") != 2 || !strings.Contains(string(b), "they know") {
				t.Fatalf("%s stream: %d %s", c.path, resp.StatusCode, b)
			}
			if ev := e.usage.snapshot(); len(ev) != 1 || len(ev[0].Guardrails) != 2 || ev[0].Guardrails[1].Outcome != "redacted" {
				t.Fatalf("stream output usage %+v", ev)
			}
		}
		e.dropGuardrail(t, false, id)

		// A stream blocked at output ends with the dialect's error event,
		// naming the guardrail and never the matched text.
		id = e.guardrail(t, false, guardrails.ActionBlock, guardrails.FailClosed, "", guardrails.DetectorSpec{Kind: guardrails.KindSecrets})
		e.openai.Enqueue(providerstest.Reply{Text: "here: " + guardAWSKey + " done", Usage: providerstest.Usage{Input: 5, Output: 9}})
		e.usage.reset()
		resp = e.postTo(t, "/inf/v1/chat/completions", `{"model":"`+gptMini+`","stream":true,"messages":[{"role":"user","content":"key?"}]}`)
		b, _ := io.ReadAll(resp.Body)
		if strings.Contains(string(b), guardAWSKey[:8]) || !strings.Contains(string(b), "guardrail_blocked") || strings.Contains(string(b), "[DONE]") {
			t.Fatalf("stream block: %s", b)
		}
		if ev := e.usage.snapshot(); len(ev) != 1 || ev[0].Guardrails[1].Outcome != "blocked" || ev[0].OutputTokens == 0 {
			t.Fatalf("stream block usage %+v", ev)
		}
		e.dropGuardrail(t, false, id)

		// Block at the workspace, in each dialect; nothing goes upstream.
		id = e.guardrail(t, true, guardrails.ActionBlock, guardrails.FailClosed, "", guardrails.DetectorSpec{Kind: guardrails.KindKeywords, Words: []string{guardWord}})
		before := len(e.openai.Requests()) + len(e.anthropic.Requests())
		e.usage.reset()
		got := e.postError(t, `{"model":"`+gptMini+`","messages":[{"role":"user","content":"about `+guardWord+` today"}]}`, 400)
		if code(got) != "guardrail_blocked" || strings.Contains(got.Error.Message, guardWord) || !strings.Contains(got.Error.Message, "detector keywords") {
			t.Fatalf("block: %+v", got)
		}
		for _, c := range []struct{ path, body string }{
			{"/inf/v1/messages", `{"model":"` + haiku + `","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"` + guardWord + `"}]}]}`},
			{"/inf/v1/responses", `{"model":"` + gptMini + `","input":"` + guardWord + `"}`},
		} {
			resp := e.postTo(t, c.path, c.body)
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 400 || !strings.Contains(string(b), "guardrail") || strings.Contains(string(b), guardWord) {
				t.Fatalf("%s: %d %s", c.path, resp.StatusCode, b)
			}
		}
		if after := len(e.openai.Requests()) + len(e.anthropic.Requests()); after != before {
			t.Fatalf("a blocked request reached an upstream (%d → %d)", before, after)
		}
		ev = e.usage.snapshot()
		if len(ev) != 3 || ev[0].Status != "denied" || *ev[0].Reason != "guardrail_blocked" || ev[0].Guardrails[0].Outcome != "blocked" {
			t.Fatalf("usage of blocks %+v", ev)
		}
		if logged := e.log.String(); strings.Contains(logged, guardWord) {
			t.Fatalf("a log line carries the matched text")
		}
		e.dropGuardrail(t, true, id)

		// A webhook: answered, signed; failing, on_error decides and the
		// event says errored either way.
		var signed bool
		hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			signed = r.Header.Get("X-Gw-Signature") != ""
			b, _ := io.ReadAll(r.Body)
			if strings.Contains(string(b), "fail") {
				w.WriteHeader(500)
				return
			}
			w.Write([]byte(`{"action":"pass"}`))
		}))
		defer hook.Close()
		for _, mode := range []guardrails.OnError{guardrails.FailClosed, guardrails.FailOpen} {
			id := e.guardrail(t, false, guardrails.ActionBlock, mode, "whsec-0123456789abcdef", guardrails.DetectorSpec{Kind: guardrails.KindWebhook, URL: hook.URL, TimeoutMS: 2000})
			e.openai.Enqueue(providerstest.Reply{Text: "ok", Usage: providerstest.Usage{Input: 5, Output: 1}})
			e.usage.reset()
			resp := e.post(t, `{"model":"`+gptMini+`","messages":[{"role":"user","content":"please fail"}]}`)
			b, _ := io.ReadAll(resp.Body)
			want := 400
			if mode == guardrails.FailOpen {
				want = 200
			}
			ev := e.usage.snapshot()
			if resp.StatusCode != want || len(ev) != 1 || ev[0].Guardrails[0].Outcome != "errored" || !signed {
				t.Fatalf("%s: %d %s %+v signed=%v", mode, resp.StatusCode, b, ev, signed)
			}
			e.dropGuardrail(t, false, id)
		}
	})
}
