package providers

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/server/egress"
	"github.com/gw-gateway/gw/server/providers/providerstest"
)

// A line of a Vertex AI job's predictions reads into gw's outcome by its
// custom_id — a Gemini line's from the request's labels, a Claude line's
// passed through — never by its place: an answer with its usage (Gemini's
// usageMetadata, Claude's Messages usage), a status as the request's
// error, a line naming no request as unreadable.
func TestVertexPredictions(t *testing.T) {
	gemini := &Call{UpstreamModel: "gemini-2.5-flash", ResponseModel: "vertex/gemini-2.5-flash"}
	claude := &Call{UpstreamModel: "claude-haiku-4-5@20251001", ResponseModel: "vertex/claude-haiku-4-5@20251001"}
	for _, c := range []struct {
		name                     string
		call                     *Call
		line, id, outcome, err   string
		input, output, cacheRead int64
	}{
		{"gemini answer", gemini, `{"status":"","processed_time":"2026-11-29T06:00:00Z","request":{"contents":[],"labels":{"gw_custom_id":"gw-7"}},` +
			`"response":{"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]},"finishReason":"STOP"}],` +
			`"usageMetadata":{"promptTokenCount":1300,"candidatesTokenCount":90,"cachedContentTokenCount":300,"thoughtsTokenCount":10}}}`,
			"gw-7", BatchSucceeded, "", 1000, 100, 300},
		{"gemini answer without usage", gemini, `{"status":"","request":{"contents":[{"role":"user","parts":[{"text":"` + strings.Repeat("hello there ", 40) +
			`"}]}],"labels":{"gw_custom_id":"gw-13"}},"response":{"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]},"finishReason":"STOP"}]}}`,
			"gw-13", BatchSucceeded, "", -1, -1, 0},
		{"gemini error", gemini, `{"status":"Bad Request: {\"error\": {\"code\": 400, \"message\": \"contents is not specified\"}}","request":{"labels":{"gw_custom_id":"gw-8"}}}`,
			"gw-8", BatchErrored, `Bad Request: {"error": {"code": 400, "message": "contents is not specified"}}`, 0, 0, 0},
		{"gemini blocked", gemini, `{"status":"","request":{"labels":{"gw_custom_id":"gw-9"}},"response":{"promptFeedback":{"blockReason":"SAFETY"}}}`,
			"gw-9", BatchErrored, "", 0, 0, 0},
		{"gemini no response", gemini, `{"status":"","request":{"labels":{"gw_custom_id":"gw-10"}}}`,
			"gw-10", BatchErrored, "Vertex AI reports no answer for this request", 0, 0, 0},
		{"claude answer", claude, `{"custom_id":"gw-11","status":"","request":{"messages":[]},"response":{"id":"msg_1","type":"message","role":"assistant",` +
			`"content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":40,"output_tokens":3,"cache_read_input_tokens":9}}}`,
			"gw-11", BatchSucceeded, "", 40, 3, 9},
		{"claude error", claude, `{"custom_id":"gw-12","status":"Internal error","request":{}}`, "gw-12", BatchErrored, "Internal error", 0, 0, 0},
	} {
		r, err := readVertexPrediction(c.call, []byte(c.line))
		if c.input < 0 {
			// Estimated: the input counted from the request written back,
			// the output from the answer.
			if err != nil || r.CustomID != c.id || r.Outcome != c.outcome || !r.Usage.Estimated || r.Usage.InputTokens < 40 || r.Usage.OutputTokens < 1 {
				t.Errorf("%s: %+v %v", c.name, r, err)
			}
			continue
		}
		if err != nil || r.CustomID != c.id || r.Outcome != c.outcome || (c.err != "" && r.Error != c.err) || (c.outcome == BatchErrored && r.Error == "") ||
			r.Usage.InputTokens != c.input || r.Usage.OutputTokens != c.output || r.Usage.CacheReadTokens != c.cacheRead {
			t.Errorf("%s: %+v %v", c.name, r, err)
		}
		if c.outcome == BatchSucceeded {
			var body struct {
				Model string `json:"model"`
			}
			_ = json.Unmarshal(r.Body, &body)
			if c.call == gemini && body.Model != "vertex/gemini-2.5-flash" {
				t.Errorf("%s: the answer is not a chat.completion of gw's model: %s", c.name, r.Body)
			}
		}
	}
	for _, line := range []string{`{"status":"","request":{}}`, `{"status":"","request":{"labels":{"other":"x"}}}`, `not json`} {
		if _, err := readVertexPrediction(gemini, []byte(line)); err == nil {
			t.Errorf("%s: read, want refused", line)
		}
	}
	if _, err := readVertexPrediction(claude, []byte(`{"status":"","response":{}}`)); err == nil {
		t.Error("a Claude line with no custom_id read")
	}
}

// The input lines as Vertex AI's batch takes them: a Gemini chat request
// translated to generateContent with its custom_id in the labels, a Claude
// Messages request as sent with Vertex's version and no model or stream;
// a request a synchronous call would refuse refuses the group (Rejected,
// naming the request), nothing written.
func TestVertexInputLines(t *testing.T) {
	line, err := vertexLine(&Call{UpstreamModel: "gemini-2.5-flash"}, BatchRequest{CustomID: "gw-1",
		Body: json.RawMessage(`{"model":"vertex/gemini-2.5-flash","max_tokens":20,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hello"}]}`)})
	var g struct {
		Request map[string]json.RawMessage `json:"request"`
	}
	if err != nil || json.Unmarshal(line, &g) != nil || string(g.Request["labels"]) != `{"gw_custom_id":"gw-1"}` ||
		g.Request["contents"] == nil || g.Request["systemInstruction"] == nil || g.Request["model"] != nil ||
		!strings.Contains(string(g.Request["generationConfig"]), `"maxOutputTokens":20`) {
		t.Fatalf("gemini line: %s %v", line, err)
	}
	line, err = vertexLine(&Call{UpstreamModel: "claude-haiku-4-5@20251001"}, BatchRequest{CustomID: "gw-2",
		Body: json.RawMessage(`{"model":"vertex/claude-haiku-4-5@20251001","max_tokens":20,"stream":false,"messages":[{"role":"user","content":"hello"}]}`)})
	var a struct {
		CustomID string                     `json:"custom_id"`
		Request  map[string]json.RawMessage `json:"request"`
	}
	if err != nil || json.Unmarshal(line, &a) != nil || a.CustomID != "gw-2" || string(a.Request["anthropic_version"]) != `"vertex-2023-10-16"` ||
		a.Request["model"] != nil || a.Request["stream"] != nil || a.Request["messages"] == nil {
		t.Fatalf("claude line: %s %v", line, err)
	}
	if !VertexBatchTakes("gemini-2.5-flash", []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)) ||
		VertexBatchTakes("gemini-2.5-flash", []byte(`{"model":"m","n":2,"messages":[{"role":"user","content":"hi"}]}`)) ||
		!VertexBatchTakes("claude-haiku-4-5@20251001", []byte(`{"model":"m","max_tokens":5,"messages":[]}`)) {
		t.Fatal("VertexBatchTakes")
	}
	b := &BatchAPI{}
	_, err = b.vertexUpload(context.Background(), &Call{UpstreamModel: "gemini-2.5-flash", Settings: Settings{BatchGCSURI: "gs://gw-b/"}}, "gw-x-g1",
		[]BatchRequest{{CustomID: "gw-3", Body: json.RawMessage(`{"model":"m","n":2,"messages":[{"role":"user","content":"hi"}]}`)}})
	var pe *Error
	if !errors.As(err, &pe) || pe.Kind != Rejected || !strings.Contains(pe.Message, "request gw-3") {
		t.Fatalf("an untranslatable line: %v", err)
	}
}

// The gs:// prefixes a credential may name, and the job names gw gives.
func TestGCSPrefixAndJobName(t *testing.T) {
	for s, want := range map[string][2]string{
		"gs://gw-batches/":            {"gw-batches", ""},
		"gs://gw-batches/jobs/":       {"gw-batches", "jobs/"},
		"gs://gw.batches_1/a/b/":      {"gw.batches_1", "a/b/"},
		"gs://gw-batches/jobs":        {},
		"gs://gw-batches":             {},
		"gs://GW/":                    {},
		"gs://googlebucket/":          {},
		"s3://gw-batches/":            {},
		"gs://gw-batches//":           {},
		"gs://gw-batches/a?b/":        {},
		"gs://gw..batches/":           {},
		"gs://gw-batches/jobs/\n/":    {},
		"https://storage/gw-batches/": {},
	} {
		b, p, ok := ParseGCSPrefix(s)
		if ok != (want[0] != "") || b != want[0] || p != want[1] {
			t.Errorf("%q: %q %q %v, want %q", s, b, p, ok, want)
		}
	}
	if n := VertexBatchJobName("batch_0192", 3); n != "gw-batch-0192-g3" {
		t.Errorf("job name %q", n)
	}
	long := VertexBatchJobName("batch_"+strings.Repeat("x", 80), 12)
	if len(long) > 63 || !strings.HasSuffix(long, "-g12") || long != VertexBatchJobName("batch_"+strings.Repeat("x", 80), 12) {
		t.Errorf("long job name %q", long)
	}
}

// Cloud Storage is reached through the adapters' client and send, so the
// egress policy holds it: a batch_gcs_endpoint at the metadata service is
// refused before a byte leaves, the credential's token notwithstanding.
func TestVertexBatchStorageHeldToEgress(t *testing.T) {
	v := providerstest.NewVertex(t, "gw-test-project", "us-east5")
	b := &BatchAPI{Client: NewGuardedHTTPClient(func() egress.Policy { return egress.Policy{} })}
	call := &Call{UpstreamModel: "gemini-2.5-flash", BaseURL: v.BaseURL(), Secret: v.ServiceAccount(), CredentialID: "cred-v",
		Settings: Settings{Location: "us-east5", BatchGCSURI: "gs://gw-batches/", BatchGCSEndpoint: "http://169.254.169.254/storage"}}
	_, err := b.vertexUpload(context.Background(), call, "gw-b-g1",
		[]BatchRequest{{CustomID: "gw-1", Body: json.RawMessage(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)}})
	var refused *egress.Refusal
	if !errors.As(err, &refused) || refused.Class != egress.Metadata {
		t.Fatalf("an upload to the metadata service: %v", err)
	}
	if v.TokensIssued() != 1 {
		t.Fatalf("%d tokens issued, want the one the upload was refused with", v.TokensIssued())
	}
}
