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
		// Bedrock's job output: a record's modelOutput is Claude's
		// InvokeModel answer, its error Bedrock's {errorCode, errorMessage}.
		{"bedrock succeeded", `{"recordId":"gw-11","modelInput":{"max_tokens":5},"modelOutput":{"id":"msg","type":"message","content":[],"usage":{"input_tokens":40,"output_tokens":3,"cache_read_input_tokens":9}}}`,
			BatchSucceeded, "", 200, 40, 3, 9},
		{"bedrock errored", `{"recordId":"gw-12","modelInput":{},"error":{"errorCode":400,"errorMessage":"messages: Field required"}}`,
			BatchErrored, "messages: Field required", 400, 0, 0, 0},
		{"bedrock errored, server", `{"recordId":"gw-13","modelInput":{},"error":{"errorCode":500,"errorMessage":""}}`,
			BatchErrored, "Bedrock reports the record failed", 500, 0, 0, 0},
		{"bedrock no output", `{"recordId":"gw-14","modelInput":{}}`, BatchErrored, "Bedrock reports the record failed", 400, 0, 0, 0},
	} {
		read := readAnthropicResult
		if c.name[:6] == "openai" {
			read = func(l []byte) (BatchResult, error) { return readOpenAIResult("/v1/chat/completions", l) }
		}
		if c.name[:7] == "bedrock" {
			read = func(l []byte) (BatchResult, error) { return readBedrockRecord(&Call{}, "/v1/messages", l) }
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
		model    string
		want     bool
	}{
		{catalog.KindOpenAI, "/v1/chat/completions", "gpt-4o-mini", true},
		{catalog.KindOpenAI, "/v1/responses", "gpt-4o-mini", true},
		{catalog.KindOpenAI, "/v1/embeddings", "text-embedding-3-small", true},
		{catalog.KindOpenAI, "/v1/messages", "gpt-4o-mini", false},
		{catalog.KindAzureOpenAI, "/v1/chat/completions", "gpt-4o-mini", true},
		{catalog.KindAzureOpenAI, "/v1/responses", "gpt-4o-mini", false},
		{catalog.KindAnthropic, "/v1/messages", "claude-haiku-4-5", true},
		{catalog.KindAnthropic, "/v1/chat/completions", "claude-haiku-4-5", false},
		// Bedrock's jobs take a model's InvokeModel body (the Messages
		// request is Claude's) or, for chat completions, Converse.
		{catalog.KindBedrock, "/v1/messages", "global.anthropic.claude-haiku-4-5-20251001-v1:0", true},
		{catalog.KindBedrock, "/v1/messages", "anthropic.claude-3-haiku-20240307-v1:0", true},
		{catalog.KindBedrock, "/v1/messages", "us.amazon.nova-lite-v1:0", false},
		{catalog.KindBedrock, "/v1/chat/completions", "global.anthropic.claude-haiku-4-5-20251001-v1:0", true},
		{catalog.KindBedrock, "/v1/chat/completions", "us.amazon.nova-lite-v1:0", true},
		{catalog.KindBedrock, "/v1/embeddings", "amazon.titan-embed-text-v2:0", false},
		{catalog.KindBedrock, "/v1/responses", "us.amazon.nova-lite-v1:0", false},
		{catalog.KindOpenAICompatible, "/v1/chat/completions", "m", false},
	} {
		if got := NativeBatches(c.kind, c.endpoint, c.model); got != c.want {
			t.Errorf("%s %s %s: %v, want %v", c.kind, c.endpoint, c.model, got, c.want)
		}
	}
}
