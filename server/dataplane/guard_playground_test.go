package dataplane_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/guardrails"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// TestGuardPlayground: the playground is no way around the guardrails. A
// workspace guardrail that redacts secrets redacts them from a person's
// playground request before the upstream sees it, one that blocks
// answers 400 guardrail_blocked without naming the text, and the usage
// event records what each did, as for an inference key.
func TestGuardPlayground(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		id := e.guardrail(t, true, guardrails.ActionRedact, guardrails.FailClosed, "", guardrails.DetectorSpec{Kind: guardrails.KindSecrets})
		e.sync(t)
		caller := dataplane.Caller{UserID: e.owner}
		pg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			e.plane.ServePlayground(w, r, e.org.ID, e.ws, caller)
		}))
		t.Cleanup(pg.Close)
		post := func() (int, string) {
			t.Helper()
			resp, err := http.Post(pg.URL, "application/json", strings.NewReader(
				`{"model":"`+gptMini+`","messages":[{"role":"user","content":"my key is `+guardAWSKey+`"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}

		e.openai.Enqueue(providerstest.Reply{Text: "ok", Usage: providerstest.Usage{Input: 5, Output: 1}})
		e.usage.reset()
		if status, body := post(); status != 200 {
			t.Fatalf("redact: %d %s", status, body)
		}
		reqs := e.openai.Requests()
		if sent := string(reqs[len(reqs)-1].Raw); strings.Contains(sent, guardAWSKey) || !strings.Contains(sent, "[REDACTED:aws_access_key]") {
			t.Fatalf("the upstream saw %s", sent)
		}
		if ev := e.usage.snapshot(); len(ev) != 1 || len(ev[0].Guardrails) == 0 || ev[0].Guardrails[0].ID != id.String() || ev[0].Guardrails[0].Outcome != "redacted" {
			t.Fatalf("usage %+v", ev)
		}
		e.dropGuardrail(t, true, id)

		e.guardrail(t, true, guardrails.ActionBlock, guardrails.FailClosed, "", guardrails.DetectorSpec{Kind: guardrails.KindSecrets})
		e.sync(t)
		before := len(e.openai.Requests())
		e.usage.reset()
		status, body := post()
		if status != http.StatusBadRequest || !strings.Contains(body, "guardrail_blocked") || strings.Contains(body, guardAWSKey) {
			t.Fatalf("block: %d %s", status, body)
		}
		if len(e.openai.Requests()) != before {
			t.Fatal("a blocked playground request reached the upstream")
		}
		if ev := e.usage.snapshot(); len(ev) != 1 || len(ev[0].Guardrails) == 0 || ev[0].Guardrails[0].Outcome != "blocked" {
			t.Fatalf("usage %+v", ev)
		}
	})
}
