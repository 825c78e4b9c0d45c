package dataplane_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// postCompact sends a responses/compact request as the openai SDKs do.
func (e *infEnv) postCompact(t *testing.T, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.srv.URL+"/inf/v1/responses/compact", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%d %s: %v", resp.StatusCode, raw, err)
	}
	return resp.StatusCode, out
}

// responses/compact goes to an OpenAI-kind upstream as sent (its upstream
// model id, no stream, no store), its answer comes back as is, and it is
// metered as one event of its own endpoint; a model of another kind, which
// has no compaction, is a 400 in OpenAI's shape, as is stream.
func TestResponsesCompactPassesThrough(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.openai.SetDefault(providerstest.Reply{Text: "summary", Usage: providerstest.Usage{Input: 120, Output: 30}})
		e.sync(t)

		status, out := e.postCompact(t, `{"model":"`+gptMini+`","input":[{"role":"user","content":"a long conversation"}],"instructions":"be brief"}`)
		if status != http.StatusOK || out["object"] != "response.compaction" || !strings.Contains(mustMarshal(t, out["output"]), `"encrypted_content":"enc:summary"`) {
			t.Fatalf("compact: %d %v", status, out)
		}
		sent := e.openai.Last(t)
		if sent.Path != "/v1/responses/compact" || sent.Body["model"] != "gpt-4o-mini" || sent.Body["instructions"] != "be brief" {
			t.Fatalf("upstream got %s %v", sent.Path, sent.Body)
		}
		for _, m := range []string{"stream", "store"} {
			if _, ok := sent.Body[m]; ok {
				t.Fatalf("upstream was sent %s: %v", m, sent.Body)
			}
		}
		ev := e.usage.wait(t, 1)[0]
		if ev.Status != "ok" || *ev.Endpoint != "responses.compact" || ev.InputTokens != 120 || ev.OutputTokens != 30 ||
			ev.WorkspaceID != e.ws || *ev.InferenceKeyID != e.keyID || ev.CostUSD == "0" {
			t.Fatalf("compact metered as %+v", ev)
		}

		status, out = e.postCompact(t, `{"model":"`+haiku+`","input":"x"}`)
		errObj, _ := out["error"].(map[string]any)
		if status != http.StatusBadRequest || errObj["code"] != "unsupported_model" || !strings.Contains(errObj["message"].(string), "compact") {
			t.Fatalf("compact on an Anthropic model: %d %v", status, out)
		}
		status, out = e.postCompact(t, `{"model":"`+gptMini+`","input":"x","stream":true}`)
		errObj, _ = out["error"].(map[string]any)
		if status != http.StatusBadRequest || errObj["param"] != "stream" {
			t.Fatalf("compact with stream: %d %v", status, out)
		}
		if n := len(e.openai.Requests()); n != 1 {
			t.Fatalf("%d upstream calls, want 1", n)
		}
		if got := e.usage.wait(t, 2); got[1].Status == "ok" || got[1].OutputTokens != 0 {
			t.Fatalf("the refused compact metered as %+v", got[1])
		}
	})
}
