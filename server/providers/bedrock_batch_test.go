package providers

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/server/catalog"
)

// A job's name is gw's batch and group, in the characters and length
// Bedrock takes, the same every time (a lost create is found by it).
func TestBedrockBatchJobName(t *testing.T) {
	pattern := regexp.MustCompile(`^[a-zA-Z0-9]{1,63}(-*[a-zA-Z0-9\+\-\.]){0,63}$`)
	for _, id := range []string{"batch_0123456789abcdef0123456789abcdef", "msgbatch_0123456789abcdef0123456789abcdef",
		"msgbatch_" + strings.Repeat("f", 80)} {
		name := BedrockBatchJobName(id, 12)
		if len(name) > 63 || !pattern.MatchString(name) || name != BedrockBatchJobName(id, 12) || name == BedrockBatchJobName(id, 13) {
			t.Errorf("%s: job name %q", id, name)
		}
	}
	if got := BedrockBatchJobName("batch_abc", 1); got != "gw-batch-abc-g1" {
		t.Errorf("job name %q", got)
	}
}

// The batch settings of a bedrock credential: the S3 prefix and role in
// their forms, each needing the other, the endpoint needing the bucket.
func TestBedrockBatchSettings(t *testing.T) {
	good := Settings{Region: "us-east-1", BatchS3URI: "s3://gw-batches/jobs/", BatchRoleARN: "arn:aws:iam::123456789012:role/gw-batch"}
	if p := CheckSettings(catalog.KindBedrock, good); len(p) != 0 {
		t.Fatalf("good settings: %v", p)
	}
	with := func(f func(*Settings)) Settings { s := good; f(&s); return s }
	for _, c := range []struct {
		name     string
		s        Settings
		field    string
		problem  string
		settings catalog.Kind
	}{
		{"no prefix", with(func(s *Settings) { s.BatchS3URI = "s3://gw-batches" }), "settings.batch_s3_uri", "string_pattern_mismatch", catalog.KindBedrock},
		{"prefix without slash", with(func(s *Settings) { s.BatchS3URI = "s3://gw-batches/jobs" }), "settings.batch_s3_uri", "string_pattern_mismatch", catalog.KindBedrock},
		{"uppercase bucket", with(func(s *Settings) { s.BatchS3URI = "s3://GW/" }), "settings.batch_s3_uri", "string_pattern_mismatch", catalog.KindBedrock},
		{"https uri", with(func(s *Settings) { s.BatchS3URI = "https://gw-batches.s3.amazonaws.com/" }), "settings.batch_s3_uri", "string_pattern_mismatch", catalog.KindBedrock},
		{"bad role", with(func(s *Settings) { s.BatchRoleARN = "arn:aws:iam::1234:user/x" }), "settings.batch_role_arn", "string_pattern_mismatch", catalog.KindBedrock},
		{"bucket without role", with(func(s *Settings) { s.BatchRoleARN = "" }), "settings.batch_role_arn", "missing", catalog.KindBedrock},
		{"role without bucket", with(func(s *Settings) { s.BatchS3URI = "" }), "settings.batch_s3_uri", "missing", catalog.KindBedrock},
		{"endpoint alone", Settings{Region: "us-east-1", BatchS3Endpoint: "https://s3.example.com"}, "settings.batch_s3_uri", "missing", catalog.KindBedrock},
		{"endpoint with credentials", with(func(s *Settings) { s.BatchS3Endpoint = "https://u:p@s3.example.com" }), "settings.batch_s3_endpoint", "string_pattern_mismatch", catalog.KindBedrock},
		{"on another kind", Settings{BatchS3URI: "s3://gw-batches/"}, "settings.batch_s3_uri", "extra_forbidden", catalog.KindOpenAI},
	} {
		p := CheckSettings(c.settings, c.s)
		if len(p) != 1 || p[0].Field != c.field || p[0].Type != c.problem {
			t.Errorf("%s: %+v, want %s %s", c.name, p, c.field, c.problem)
		}
	}
	if p := CheckSettings(catalog.KindBedrock, with(func(s *Settings) { s.BatchS3Endpoint = "http://127.0.0.1:9000"; s.Batches = BatchesGateway })); len(p) != 0 {
		t.Errorf("with an endpoint and batches gateway: %v", p)
	}
	bucket, prefix, ok := ParseS3Prefix("s3://gw-batches/a/b/")
	if !ok || bucket != "gw-batches" || prefix != "a/b/" {
		t.Errorf("ParseS3Prefix: %q %q %v", bucket, prefix, ok)
	}
}

// Bedrock's statuses read as gw's: ended, cancelled; the output object
// where Bedrock writes it; the control plane beside the runtime.
func TestBedrockJobStatus(t *testing.T) {
	for status, want := range map[string][2]bool{"Submitted": {}, "Validating": {}, "Scheduled": {}, "InProgress": {},
		"Stopping": {false, true}, "Stopped": {true, true}, "Completed": {true, false}, "PartiallyCompleted": {true, false},
		"Failed": {true, false}, "Expired": {true, false}} {
		var j bedrockJob
		j.JobArn, j.Status = "arn:aws:bedrock:us-east-1:123456789012:model-invocation-job/abc123", status
		j.InputDataConfig.S3.URI = "s3://b/p/gw-batch-input/gw-batch-x-g1.jsonl"
		j.OutputDataConfig.S3.URI = "s3://b/p/gw-batch-output/"
		got := j.job()
		if got.Ended != want[0] || got.Cancelled != want[1] {
			t.Errorf("%s: ended %v cancelled %v, want %v", status, got.Ended, got.Cancelled, want)
		}
		if got.OutputFileID != "s3://b/p/gw-batch-output/abc123/gw-batch-x-g1.jsonl.out" || got.ErrorFileID != "s3://b/p/gw-batch-output/abc123/manifest.json.out" {
			t.Errorf("output %s, manifest %s", got.OutputFileID, got.ErrorFileID)
		}
	}
	for base, want := range map[string]string{
		"https://bedrock-runtime.us-east-1.amazonaws.com":      "https://bedrock.eu-west-1.amazonaws.com",
		"https://bedrock-runtime-fips.us-east-1.amazonaws.com": "https://bedrock-fips.eu-west-1.amazonaws.com",
		"https://vpce-1.bedrock.example.internal":              "https://vpce-1.bedrock.example.internal",
	} {
		if got := bedrockControlBase(&Call{BaseURL: base, Settings: Settings{Region: "eu-west-1"}}); got != want {
			t.Errorf("%s: control plane %s, want %s", base, got, want)
		}
	}
}

// A chat completions line becomes a Converse job's record as a
// synchronous request's Converse body; one with tools, structured output
// or a stream stays on gw's runner. A Converse record's output reads as
// the chat.completion a synchronous answer is, with Bedrock's usage.
func TestBedrockConverseRecords(t *testing.T) {
	const nova = "us.amazon.nova-lite-v1:0"
	in, err := bedrockConverseRecord(nova, []byte(`{"model":"bedrock/x","max_tokens":7,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]}`))
	if err != nil || string(in) != `{"messages":[{"role":"user","content":[{"text":"hi"}]}],"system":[{"text":"be brief"}],"inferenceConfig":{"maxTokens":7}}` {
		t.Fatalf("record: %s %v", in, err)
	}
	for body, want := range map[string]bool{
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`:                                                       true,
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`:                                         false,
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}]}`: false,
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"}}`:              false,
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"n":2}`:                                                 false,
	} {
		if got := BedrockBatchLine("/v1/chat/completions", nova, []byte(body)); got != want {
			t.Errorf("%s: batchable %v, want %v", body, got, want)
		}
	}
	if !BedrockBatchLine("/v1/messages", "anthropic.claude-3-haiku-20240307-v1:0", []byte(`{}`)) {
		t.Error("a Messages line is taken as it is")
	}
	call := &Call{ResponseModel: "bedrock/us.amazon.nova-lite-v1:0", UpstreamModel: nova}
	r, err := readBedrockRecord(call, "/v1/chat/completions", []byte(`{"recordId":"gw-1","modelInput":{},"modelOutput":{"output":{"message":{"role":"assistant","content":[{"text":"hello"}]}},"stopReason":"end_turn","usage":{"inputTokens":12,"outputTokens":3,"cacheReadInputTokens":4}}}`))
	if err != nil || r.Outcome != BatchSucceeded || r.Usage.InputTokens != 12 || r.Usage.OutputTokens != 3 || r.Usage.CacheReadTokens != 4 {
		t.Fatalf("converse record: %+v %v", r, err)
	}
	var out struct {
		Object, Model string
		Choices       []struct {
			Message      struct{ Content string }
			FinishReason string `json:"finish_reason"`
		}
	}
	if err := json.Unmarshal(r.Body, &out); err != nil || out.Object != "chat.completion" || out.Model != call.ResponseModel ||
		len(out.Choices) != 1 || out.Choices[0].Message.Content != "hello" || out.Choices[0].FinishReason != "stop" {
		t.Fatalf("converse record's answer: %s", r.Body)
	}
}
