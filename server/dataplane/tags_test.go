package dataplane_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// tagsRequest sends a chat completion (or a Messages request) with an
// X-Gw-Tags header (none when header is "-") and returns status and body.
func tagsRequest(t *testing.T, e *infEnv, path, header string) (int, string) {
	t.Helper()
	return tagsRequestAs(t, e, e.token, path, header)
}

// tagsRequestAs is tagsRequest with the inference key token.
func tagsRequestAs(t *testing.T, e *infEnv, token, path, header string) (int, string) {
	t.Helper()
	body := `{"model":"` + gptMini + `","messages":[{"role":"user","content":"hi"}]}`
	if path == "/inf/v1/messages" {
		body = `{"model":"` + gptMini + `","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`
	}
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	if header != "-" {
		req.Header.Set("X-Gw-Tags", header)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// Request tags (issue 21): the header adds tags, the key's own win, a
// malformed header is a 400 in the dialect's shape naming the header, and
// a workspace can require tag keys.
func TestRequestTags(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		ctx := context.Background()
		k, err := e.st.GetInferenceKey(ctx, e.ws, e.keyID)
		if err != nil {
			t.Fatal(err)
		}
		k.Tags = store.Tags{"team": "search"}
		if err := e.st.UpdateInferenceKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		e.sync(t)

		// The key's tag wins over the header's for the same key.
		if st, raw := tagsRequest(t, e, "/inf/v1/chat/completions", "team=ads, feature=chat ,env=prod"); st != 200 {
			t.Fatalf("tagged request: %d %s", st, raw)
		}
		ev := e.usage.last(t, 1)
		if len(ev.Tags) != 3 || ev.Tags["team"] != "search" || ev.Tags["feature"] != "chat" || ev.Tags["env"] != "prod" {
			t.Fatalf("event tags %v", ev.Tags)
		}
		e.usage.reset()
		if st, raw := tagsRequest(t, e, "/inf/v1/chat/completions", "-"); st != 200 {
			t.Fatalf("untagged request: %d %s", st, raw)
		}
		if ev := e.usage.last(t, 1); len(ev.Tags) != 1 || ev.Tags["team"] != "search" {
			t.Fatalf("the key's tags alone: %v", ev.Tags)
		}

		// Malformed headers: 400, the dialect's shape, naming the header;
		// no event (no model was asked for yet).
		e.usage.reset()
		for _, h := range []string{"", "team", "Team=x", "a=1,a=2", "a=", "=x", "a=1,,b=2", "a=" + strings.Repeat("v", 129), "a=b\tc"} {
			st, raw := tagsRequest(t, e, "/inf/v1/chat/completions", h)
			var body struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Param   *string `json:"param"`
					Code    *string `json:"code"`
				} `json:"error"`
			}
			if st != 400 || json.Unmarshal([]byte(raw), &body) != nil || body.Error.Param == nil || *body.Error.Param != "X-Gw-Tags" ||
				*body.Error.Code != "invalid_tags" || !strings.Contains(body.Error.Message, "X-Gw-Tags") {
				t.Errorf("header %q: %d %s", h, st, raw)
			}
		}
		st, raw := tagsRequest(t, e, "/inf/v1/messages", "nope")
		var anth struct {
			Type  string `json:"type"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if st != 400 || json.Unmarshal([]byte(raw), &anth) != nil || anth.Type != "error" || anth.Error.Type != "invalid_request_error" ||
			!strings.Contains(anth.Error.Message, "X-Gw-Tags") {
			t.Fatalf("Messages dialect: %d %s", st, raw)
		}
		// 21 tags in all (the key's one and 20 of the header's) are too many.
		var many []string
		for i := range 20 {
			many = append(many, string(rune('a'+i))+"=v")
		}
		if st, raw := tagsRequest(t, e, "/inf/v1/chat/completions", strings.Join(many, ",")); st != 400 || !strings.Contains(raw, "at most 20") {
			t.Fatalf("21 tags: %d %s", st, raw)
		}
		if got := len(e.usage.snapshot()); got != 0 {
			t.Fatalf("refused requests left %d events", got)
		}

		// A workspace requiring feature and team: the key's team counts.
		ws, err := e.st.GetWorkspace(ctx, e.ws)
		if err != nil {
			t.Fatal(err)
		}
		ws.RequiredTags = store.Strings{"team", "feature"}
		if err := e.st.UpdateWorkspace(ctx, ws); err != nil {
			t.Fatal(err)
		}
		e.sync(t)
		if st, raw := tagsRequest(t, e, "/inf/v1/chat/completions", "-"); st != 400 || !strings.Contains(raw, "missing_required_tags") ||
			!strings.Contains(raw, "feature") || strings.Contains(raw, "team,") {
			t.Fatalf("missing a required tag: %d %s", st, raw)
		}
		if st, raw := tagsRequest(t, e, "/inf/v1/chat/completions", "feature=chat"); st != 200 {
			t.Fatalf("required tags present: %d %s", st, raw)
		}
	})
}

// Cost centres that hold (issue 28): a tag a tag budget governs is set by
// inference keys only — a header naming it is refused unless its key
// carries the same value —, tag_values restricts what a header may say,
// and the budget counts the requests whose tags carry its tag, whatever
// the policy's stored key list says.
func TestTagRules(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		ctx := context.Background()
		k, err := e.st.GetInferenceKey(ctx, e.ws, e.keyID)
		if err != nil {
			t.Fatal(err)
		}
		k.Tags = store.Tags{"team": "ads"}
		if err := e.st.UpdateInferenceKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		untagged, _ := e.org.Key(e.ws, e.owner, nil)
		ws, err := e.st.GetWorkspace(ctx, e.ws)
		if err != nil {
			t.Fatal(err)
		}
		ws.TagValues = store.TagValues{"env": {"prod", "staging"}}
		if err := e.st.UpdateWorkspace(ctx, ws); err != nil {
			t.Fatal(err)
		}
		// The tag budget's stored key list names no key (as after a hand
		// edit): the data plane follows the tag itself.
		policyID := e.org.Policy(e.ws, "budget-team-ads", true,
			`{"target":{"kind":"selected_keys","key_ids":["tag:team=ads"]},"rules":[`+budgetRule("100", "day", "shared")+`]}`)
		if err := e.st.CreateTagBudget(ctx, &store.TagBudget{PolicyID: policyID, OrgID: e.org.ID, WorkspaceID: e.ws,
			TagKey: "team", TagValue: "ads", CreatedAt: store.Now()}); err != nil {
			t.Fatal(err)
		}
		e.sync(t)

		refused := func(token, path, header, tag string) {
			t.Helper()
			st, raw := tagsRequestAs(t, e, token, path, header)
			if st != 400 || !strings.Contains(raw, "X-Gw-Tags") || !strings.Contains(raw, tag) {
				t.Fatalf("%s with %q: %d %s", path, header, st, raw)
			}
			if path == "/inf/v1/messages" {
				if !strings.Contains(raw, `"type":"error"`) || !strings.Contains(raw, "invalid_request_error") {
					t.Fatalf("Messages refusal not in Anthropic's shape: %s", raw)
				}
			} else if !strings.Contains(raw, `"code":"tag_not_allowed"`) || !strings.Contains(raw, `"param":"X-Gw-Tags"`) {
				t.Fatalf("refusal not in OpenAI's shape: %s", raw)
			}
		}
		// An untagged key names the governed tag: refused, whatever the
		// value, in each dialect's shape, before any upstream call.
		calls := len(e.openai.Requests())
		refused(untagged, "/inf/v1/chat/completions", "team=ads", "team")
		refused(untagged, "/inf/v1/chat/completions", "team=finance", "team")
		refused(untagged, "/inf/v1/messages", "team=search", "team")
		refused(untagged, "/inf/v1/responses", "team=ads", "team")
		// The tagged key may repeat its own value, not name another.
		refused(e.token, "/inf/v1/chat/completions", "team=search", "team=ads")
		// tag_values: a value not listed is refused, also with another tag.
		refused(untagged, "/inf/v1/chat/completions", "feature=chat, env=dev", "env")
		if n := len(e.openai.Requests()); n != calls {
			t.Fatalf("refused requests reached the upstream: %d calls", n-calls)
		}
		if got := len(e.usage.snapshot()); got != 0 {
			t.Fatalf("refused requests left %d events", got)
		}

		budgetOf := func(ev wire.UsageEventIn) bool {
			for _, b := range ev.Provenance.Budgets {
				if b.PolicyID == policyID {
					return true
				}
			}
			return false
		}
		if st, raw := tagsRequestAs(t, e, untagged, "/inf/v1/chat/completions", "env=prod, feature=chat"); st != 200 {
			t.Fatalf("allowed tags: %d %s", st, raw)
		}
		if ev := e.usage.last(t, 1); ev.Tags["env"] != "prod" || ev.Tags["team"] != "" || budgetOf(ev) {
			t.Fatalf("an untagged key's request: tags %v, charged to the tag budget %v", ev.Tags, budgetOf(ev))
		}
		if st, raw := tagsRequestAs(t, e, e.token, "/inf/v1/chat/completions", "team=ads"); st != 200 {
			t.Fatalf("the key's own tag: %d %s", st, raw)
		}
		if ev := e.usage.last(t, 2); ev.Tags["team"] != "ads" || !budgetOf(ev) {
			t.Fatalf("a team=ads request: tags %v, charged to the tag budget %v", ev.Tags, budgetOf(ev))
		}
	})
}
