package providers

import (
	"testing"

	"github.com/gw-gateway/gw/server/catalog"
)

// A provider batch's result lines read into gw's outcomes, with usage
// only for a succeeded request: OpenAI's output and error files (a non-200
// answer, an expired or cancelled request), Anthropic's results (both
// shapes of an errored one, canceled, expired, a type gw does not know).
func TestBatchResults(t *testing.T) {
	for _, c := range []struct {
		name, line, outcome, err string
		status                   int
		input, output, cacheRead int64
	}{
		{"openai succeeded", `{"id":"r","custom_id":"gw-1","response":{"status_code":200,"body":{"usage":{"prompt_tokens":1300,"completion_tokens":100,"prompt_tokens_details":{"cached_tokens":300}}}},"error":null}`,
			BatchSucceeded, "", 200, 1000, 100, 300},
		{"openai refused", `{"id":"r","custom_id":"gw-2","response":{"status_code":400,"body":{"error":{"message":"bad request"}}},"error":null}`,
			BatchErrored, "bad request", 400, 0, 0, 0},
		{"openai expired", `{"id":"r","custom_id":"gw-3","response":null,"error":{"code":"batch_expired","message":"This request could not be executed before the completion window expired."}}`,
			BatchExpired, "This request could not be executed before the completion window expired.", 0, 0, 0, 0},
		{"openai cancelled", `{"id":"r","custom_id":"gw-4","response":null,"error":{"code":"batch_cancelled","message":"cancelled"}}`,
			BatchCanceled, "cancelled", 0, 0, 0, 0},
		{"anthropic succeeded", `{"custom_id":"gw-5","result":{"type":"succeeded","message":{"id":"msg","content":[],"usage":{"input_tokens":10,"output_tokens":2,"cache_read_input_tokens":7}}}}`,
			BatchSucceeded, "", 200, 10, 2, 7},
		{"anthropic errored", `{"custom_id":"gw-6","result":{"type":"errored","error":{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}}}`,
			BatchErrored, "max_tokens: Field required", 400, 0, 0, 0},
		{"anthropic errored, inner shape", `{"custom_id":"gw-7","result":{"type":"errored","error":{"type":"invalid_request","message":"nope"}}}`,
			BatchErrored, "nope", 400, 0, 0, 0},
		{"anthropic canceled", `{"custom_id":"gw-8","result":{"type":"canceled"}}`, BatchCanceled, "the provider's batch request was canceled", 0, 0, 0, 0},
		{"anthropic expired", `{"custom_id":"gw-9","result":{"type":"expired"}}`, BatchExpired, "the provider's batch request was expired", 0, 0, 0, 0},
		{"anthropic unknown", `{"custom_id":"gw-10","result":{"type":"later"}}`, BatchErrored, `the provider reports the outcome "later"`, 0, 0, 0, 0},
	} {
		read := readAnthropicResult
		if c.name[:6] == "openai" {
			read = func(l []byte) (BatchResult, error) { return readOpenAIResult("/v1/chat/completions", l) }
		}
		r, err := read([]byte(c.line))
		if err != nil || r.Outcome != c.outcome || r.Error != c.err || r.StatusCode != c.status ||
			r.Usage.InputTokens != c.input || r.Usage.OutputTokens != c.output || r.Usage.CacheReadTokens != c.cacheRead {
			t.Errorf("%s: %+v %v", c.name, r, err)
		}
	}
	if _, err := readOpenAIResult("/v1/chat/completions", []byte(`{"custom_id":""}`)); err == nil {
		t.Error("a line without custom_id was read")
	}
}

// Which kinds and endpoints run on a provider's batch API.
func TestNativeBatches(t *testing.T) {
	for _, c := range []struct {
		kind     catalog.Kind
		endpoint string
		want     bool
	}{
		{catalog.KindOpenAI, "/v1/chat/completions", true},
		{catalog.KindOpenAI, "/v1/responses", true},
		{catalog.KindOpenAI, "/v1/embeddings", true},
		{catalog.KindOpenAI, "/v1/messages", false},
		{catalog.KindAzureOpenAI, "/v1/chat/completions", true},
		{catalog.KindAzureOpenAI, "/v1/responses", false},
		{catalog.KindAnthropic, "/v1/messages", true},
		{catalog.KindAnthropic, "/v1/chat/completions", false},
		{catalog.KindBedrock, "/v1/messages", false},
		{catalog.KindOpenAICompatible, "/v1/chat/completions", false},
	} {
		if got := NativeBatches(c.kind, c.endpoint); got != c.want {
			t.Errorf("%s %s: %v, want %v", c.kind, c.endpoint, got, c.want)
		}
	}
}
