package dataplane_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/spend"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// TestBudgetRefusalIsFinal: a budget with no room refuses on every
// inference endpoint with x-should-retry: false and Retry-After the
// seconds until the period resets, and 402 (issue 35: the AI SDK and
// LangChain retry a 429 whatever x-should-retry says): in OpenAI's shape
// insufficient_quota/budget_exceeded, on /messages Anthropic's
// billing_error. The official Go SDKs, with their default retries, send
// such a request once: one usage event, and the upstream never called.
func TestBudgetRefusalIsFinal(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.policy(t, budgetRule("0.0001", "month", "shared"))
		e.sync(t)
		_, end := spend.Bounds(spend.Month, time.Now())
		// A thousand tokens on every tokenizer: a bound above the amount.
		prompt := strings.Repeat("x ", 1000)
		for _, tc := range []struct {
			path, body, header string
			status             int
			typ                string
		}{
			{"/inf/v1/chat/completions", `{"model":"` + gptMini + `","max_tokens":10,"messages":[{"role":"user","content":"` + prompt + `"}]}`,
				"Authorization", 402, "insufficient_quota"},
			{"/inf/v1/responses", `{"model":"` + gptMini + `","max_output_tokens":10,"input":"` + prompt + `"}`, "Authorization", 402, "insufficient_quota"},
			{"/inf/v1/embeddings", `{"model":"openai/text-embedding-3-small","input":"` + strings.Repeat("y", 700_000) + `"}`,
				"Authorization", 402, "insufficient_quota"},
			{"/inf/v1/messages", `{"model":"` + haiku + `","max_tokens":10,"messages":[{"role":"user","content":"` + prompt + `"}]}`,
				"X-Api-Key", 402, "billing_error"},
		} {
			req, _ := http.NewRequest(http.MethodPost, e.srv.URL+tc.path, strings.NewReader(tc.body))
			if tc.header == "Authorization" {
				req.Header.Set("Authorization", "Bearer "+e.token)
			} else {
				req.Header.Set("X-Api-Key", e.token)
				req.Header.Set("Anthropic-Version", "2023-06-01")
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var body struct {
				Type  string `json:"type"`
				Error struct {
					Type string  `json:"type"`
					Code *string `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(raw, &body); err != nil || resp.StatusCode != tc.status || body.Error.Type != tc.typ {
				t.Fatalf("%s: %d %s", tc.path, resp.StatusCode, raw)
			}
			if tc.header == "Authorization" && (body.Error.Code == nil || *body.Error.Code != "budget_exceeded") {
				t.Fatalf("%s: %s", tc.path, raw)
			}
			if tc.header == "X-Api-Key" && body.Type != "error" {
				t.Fatalf("%s: not Anthropic's error shape: %s", tc.path, raw)
			}
			after, err := strconv.Atoi(resp.Header.Get("Retry-After"))
			if resp.Header.Get("X-Should-Retry") != "false" || err != nil || after < 1 || after > int(time.Until(end).Seconds())+2 {
				t.Fatalf("%s: headers %v", tc.path, resp.Header)
			}
		}
		if n := len(e.openai.Requests()) + len(e.anthropic.Requests()); n != 0 {
			t.Fatalf("%d upstream calls for refused requests", n)
		}

		// The SDKs as shipped: two retries on 408, 409, 429 and 5xx.
		events := len(e.usage.wait(t, 4))
		ctx := context.Background()
		oc := openai.NewClient(option.WithBaseURL(e.srv.URL+"/inf/v1/"), option.WithAPIKey(e.token))
		_, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: gptMini, MaxTokens: openai.Int(10),
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}})
		var oerr *openai.Error
		if !errors.As(err, &oerr) || oerr.StatusCode != 402 || oerr.Code != "budget_exceeded" {
			t.Fatalf("openai-go: %v", err)
		}
		ac := anthropic.NewClient(anthropicoption.WithBaseURL(e.srv.URL+"/inf/"), anthropicoption.WithAPIKey(e.token))
		_, err = ac.Messages.New(ctx, anthropic.MessageNewParams{Model: anthropic.Model(haiku), MaxTokens: 10,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))}})
		var aerr *anthropic.Error
		if !errors.As(err, &aerr) || aerr.StatusCode != 402 || !strings.Contains(aerr.Error(), "billing_error") {
			t.Fatalf("anthropic-sdk-go: %v", err)
		}
		// One attempt each: a retry would be another denied event.
		time.Sleep(100 * time.Millisecond)
		if got := len(e.usage.snapshot()); got != events+2 {
			t.Fatalf("%d requests reached the gateway for 2 SDK calls", got-events)
		}
		if n := len(e.openai.Requests()) + len(e.anthropic.Requests()); n != 0 {
			t.Fatalf("%d upstream calls for refused requests", n)
		}
	})
}
