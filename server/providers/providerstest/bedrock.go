package providerstest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Bedrock is a fake Amazon Bedrock runtime: POST /model/{modelId}/converse,
// /converse-stream, /invoke and /invoke-with-response-stream, each signed
// with AWS Signature Version 4, which the fake recomputes with the AWS
// SDK's signer from the request it received and the access key it knows;
// streams in AWS's event-stream framing, encoded by the SDK's eventstream
// package; errors with x-amzn-ErrorType.
type Bedrock struct {
	*fake
	Region                       string
	AccessKeyID, SecretAccessKey string
	SessionToken                 string
	// jobs is the fake's batch inference (bedrock_batch.go).
	jobs bedrockJobs
}

// NewBedrock starts a fake for an access key in a region.
func NewBedrock(t testing.TB, region string) *Bedrock {
	b := &Bedrock{Region: region, AccessKeyID: "AKIAFAKE" + strings.ToUpper(randomHex()[:12]), SecretAccessKey: "fake/" + randomHex() + randomHex()}
	b.fake = newFake(t, b.SecretAccessKey, func(f *fake) http.Handler { return http.HandlerFunc(b.serve) })
	return b
}

// BaseURL is the API root to configure, as for
// https://bedrock-runtime.us-east-1.amazonaws.com.
func (b *Bedrock) BaseURL() string { return b.URL }

// Secret is the credential's secret: the access key as JSON.
func (b *Bedrock) Secret() string {
	s, _ := json.Marshal(map[string]string{"access_key_id": b.AccessKeyID, "secret_access_key": b.SecretAccessKey})
	return string(s)
}

func (b *Bedrock) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if reason := b.verify(r, body); reason != "" {
		awsError(w, http.StatusForbidden, "InvalidSignatureException", reason)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if strings.HasPrefix(r.URL.Path, "/model-invocation-job") {
		b.serveJobs(w, r, body)
		return
	}
	b.serveModel(w, r)
}

// serveModel answers a runtime request whose signature was checked (or
// a batch job's record).
func (b *Bedrock) serveModel(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/model/")
	i := strings.LastIndexByte(rest, '/')
	if !ok || i < 0 || r.Method != http.MethodPost {
		awsError(w, http.StatusNotFound, "UnknownOperationException", "")
		return
	}
	model, action := rest[:i], rest[i+1:]
	req, reply, err := b.receive(r)
	if err != nil {
		awsError(w, http.StatusBadRequest, "ValidationException", "Malformed input request, please reformat your input and try again.")
		return
	}
	if !wait(r, reply.Delay) {
		return
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		if reply.RetryAfter != "" {
			w.Header().Set("Retry-After", reply.RetryAfter)
		}
		awsError(w, reply.Status, awsErrorType(reply.Status), reply.Message)
		return
	}
	switch action {
	case "converse":
		writeAnswer(w, reply, converseAnswer(reply))
	case "converse-stream":
		converseStream(w, r, reply)
	case "invoke", "invoke-with-response-stream":
		b.invoke(w, r, req, model, action, reply)
	default:
		awsError(w, http.StatusNotFound, "UnknownOperationException", "")
	}
}

// verify recomputes the request's signature: the signed headers as
// received, the body's hash, the time it was signed at.
func (b *Bedrock) verify(r *http.Request, body []byte) string {
	auth := r.Header.Get("Authorization")
	scope := "Credential=" + b.AccessKeyID + "/"
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 ") || !strings.Contains(auth, scope) ||
		!strings.Contains(auth, "/"+b.Region+"/bedrock/aws4_request") {
		return "The security token included in the request is invalid."
	}
	signedAt, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return "Missing X-Amz-Date."
	}
	_, signed, _ := strings.Cut(auth, "SignedHeaders=")
	signed, _, _ = strings.Cut(signed, ",")
	u := &url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}
	again, _ := http.NewRequest(r.Method, u.String(), bytes.NewReader(body))
	for _, name := range strings.Split(signed, ";") {
		if name != "host" && name != "content-length" {
			again.Header[http.CanonicalHeaderKey(name)] = r.Header.Values(name)
		}
	}
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: b.AccessKeyID, SecretAccessKey: b.SecretAccessKey, SessionToken: b.SessionToken}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, again, hex.EncodeToString(sum[:]), "bedrock", b.Region, signedAt); err != nil {
		return err.Error()
	}
	if again.Header.Get("Authorization") != auth {
		return "The request signature we calculated does not match the signature you provided."
	}
	return ""
}

// converseAnswer is a Converse answer.
func converseAnswer(reply Reply) map[string]any {
	var content []any
	if reply.Text != "" {
		content = append(content, map[string]any{"text": reply.Text})
	}
	for _, tc := range reply.ToolCalls {
		content = append(content, map[string]any{"toolUse": map[string]any{"toolUseId": tc.ID, "name": tc.Name, "input": rawJSON(tc.Arguments)}})
	}
	out := map[string]any{
		"output":     map[string]any{"message": map[string]any{"role": "assistant", "content": content}},
		"stopReason": converseStop(reply), "usage": converseUsage(reply), "metrics": map[string]any{"latencyMs": 42},
	}
	if reply.NoUsage {
		delete(out, "usage")
	}
	return out
}

func converseStop(reply Reply) string {
	return map[string]string{"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "content_filter": "content_filtered"}[finish(reply)]
}

func converseUsage(reply Reply) any {
	if reply.GarbleUsage {
		return map[string]any{"inputTokens": "many", "outputTokens": "some"}
	}
	u := reply.Usage
	out := map[string]any{"inputTokens": u.Input, "outputTokens": u.Output, "totalTokens": u.Input + u.CacheRead + u.CacheWrite + u.Output,
		"cacheReadInputTokens": u.CacheRead, "cacheWriteInputTokens": u.CacheWrite}
	// The writes by TTL, the hour's first, as the API sorts them.
	var details []map[string]any
	if u.CacheWrite1h > 0 {
		details = append(details, map[string]any{"ttl": "1h", "inputTokens": u.CacheWrite1h})
	}
	if u.CacheWrite > u.CacheWrite1h {
		details = append(details, map[string]any{"ttl": "5m", "inputTokens": u.CacheWrite - u.CacheWrite1h})
	}
	if details != nil {
		out["cacheDetails"] = details
	}
	return out
}

// eventWriter writes event-stream messages, flushing each.
type eventWriter struct {
	w   http.ResponseWriter
	enc *eventstream.Encoder
}

func newEventWriter(w http.ResponseWriter) *eventWriter {
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.WriteHeader(http.StatusOK)
	return &eventWriter{w: w, enc: eventstream.NewEncoder()}
}

func (e *eventWriter) event(typ string, payload any) {
	b, _ := json.Marshal(payload)
	e.message(eventstream.Headers{
		{Name: ":message-type", Value: eventstream.StringValue("event")},
		{Name: ":event-type", Value: eventstream.StringValue(typ)},
		{Name: ":content-type", Value: eventstream.StringValue("application/json")},
	}, b)
}

func (e *eventWriter) exception(typ, message string) {
	b, _ := json.Marshal(map[string]string{"message": message})
	e.message(eventstream.Headers{
		{Name: ":message-type", Value: eventstream.StringValue("exception")},
		{Name: ":exception-type", Value: eventstream.StringValue(typ)},
		{Name: ":content-type", Value: eventstream.StringValue("application/json")},
	}, b)
}

func (e *eventWriter) message(h eventstream.Headers, payload []byte) {
	_ = e.enc.Encode(e.w, eventstream.Message{Headers: h, Payload: payload})
	if f, ok := e.w.(http.Flusher); ok {
		f.Flush()
	}
}

// garble writes bytes that are no event-stream message (a prelude whose
// checksum fails).
func (e *eventWriter) garble() {
	_, _ = e.w.Write([]byte{0, 0, 0, 40, 0, 0, 0, 8, 1, 2, 3, 4, 'g', 'a', 'r', 'b', 'l', 'e', 'd', '!'})
}

// converseStream answers ConverseStream's event sequence.
func converseStream(w http.ResponseWriter, r *http.Request, reply Reply) {
	ew := newEventWriter(w)
	ew.event("messageStart", map[string]any{"role": "assistant"})
	block := 0
	if reply.Text != "" {
		for i, p := range pieces(reply.Text, reply.ChunkSize) {
			ew.event("contentBlockDelta", map[string]any{"contentBlockIndex": block, "delta": map[string]any{"text": p}})
			if stop := streamFault(i, reply, r, ew.garble, func() { ew.exception("modelStreamErrorException", "The model stream failed.") }); stop {
				return
			}
		}
		ew.event("contentBlockStop", map[string]any{"contentBlockIndex": block})
		block++
	}
	for _, tc := range reply.ToolCalls {
		ew.event("contentBlockStart", map[string]any{"contentBlockIndex": block,
			"start": map[string]any{"toolUse": map[string]any{"toolUseId": tc.ID, "name": tc.Name}}})
		for _, p := range pieces(tc.Arguments, 8) {
			ew.event("contentBlockDelta", map[string]any{"contentBlockIndex": block, "delta": map[string]any{"toolUse": map[string]any{"input": p}}})
		}
		ew.event("contentBlockStop", map[string]any{"contentBlockIndex": block})
		block++
	}
	ew.event("messageStop", map[string]any{"stopReason": converseStop(reply)})
	meta := map[string]any{"usage": converseUsage(reply), "metrics": map[string]any{"latencyMs": 42}}
	if reply.NoUsage {
		delete(meta, "usage")
	}
	ew.event("metadata", meta)
}

// streamFault acts out a reply's fault after a stream's first piece; it
// reports whether the stream ends there.
func streamFault(i int, reply Reply, r *http.Request, garble, breakStream func()) bool {
	switch {
	case i != 0:
		return false
	case reply.BreakStream:
		breakStream()
		return true
	case reply.TruncateStream:
		return true
	case reply.GarbleStream:
		garble()
		return true
	}
	return !hold(r, reply.Hold)
}

// invoke answers InvokeModel for an Anthropic model: the Messages body
// without model or stream, Bedrock's anthropic_version; the stream's
// events are the Messages events, each in a chunk.
func (b *Bedrock) invoke(w http.ResponseWriter, r *http.Request, req Request, model, action string, reply Reply) {
	if strings.HasPrefix(model, "amazon.titan-embed") {
		titanEmbedding(w, req, reply)
		return
	}
	switch {
	case req.Body["anthropic_version"] != "bedrock-2023-05-31":
		awsError(w, http.StatusBadRequest, "ValidationException", "anthropic_version: bedrock-2023-05-31 is required")
		return
	case req.Body["model"] != nil || req.Body["stream"] != nil:
		awsError(w, http.StatusBadRequest, "ValidationException", "extraneous key [model] is not permitted")
		return
	}
	if action == "invoke" {
		writeAnswer(w, reply, anthropicAnswer(model, reply))
		return
	}
	ew := newEventWriter(w)
	anthropicStream(r, model, reply, func(event string, v any) {
		if event == "error" {
			ew.exception("modelStreamErrorException", "Overloaded")
			return
		}
		data, _ := json.Marshal(v)
		ew.event("chunk", map[string]any{"bytes": data})
	}, func(string) { ew.garble() })
}

func awsError(w http.ResponseWriter, status int, typ, message string) {
	w.Header().Set("X-Amzn-Errortype", typ+":http://internal.amazon.com/coral/com.amazon.bedrock/")
	writeJSON(w, status, map[string]string{"message": message})
}

func awsErrorType(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "ThrottlingException"
	case status == http.StatusForbidden:
		return "AccessDeniedException"
	case status == http.StatusServiceUnavailable:
		return "ServiceUnavailableException"
	case status >= 500:
		return "InternalServerException"
	}
	return "ValidationException"
}

// titanEmbedding answers Titan Text Embeddings V2: one text, a vector of
// its dimensions (3 when not set), the input count (Usage.Input).
func titanEmbedding(w http.ResponseWriter, req Request, reply Reply) {
	text, _ := req.Body["inputText"].(string)
	if text == "" {
		awsError(w, http.StatusBadRequest, "ValidationException", "Malformed input request: required key [inputText] not found")
		return
	}
	dims := 3
	if d, ok := req.Body["dimensions"].(float64); ok {
		dims = int(d)
	}
	vec := make([]float64, dims)
	for j := range vec {
		vec[j] = float64(len(text)) / float64(j+2)
	}
	answer := map[string]any{"embedding": vec, "inputTextTokenCount": reply.Usage.Input}
	if reply.NoUsage {
		delete(answer, "inputTextTokenCount")
	}
	writeJSON(w, http.StatusOK, answer)
}
