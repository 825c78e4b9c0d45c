package dataplane_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/cputest"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/guardrails"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/secrets"
)

// guardBenchAnswer is the upstream's answer text (about 1 kB of prose):
// whole, or streamed in 16-byte pieces.
var guardBenchAnswer = strings.Repeat("The plan ships in two releases; the second adds the reports. ", 17)

// guardBenchUpstream answers chat completions as OpenAI does, streamed
// when asked.
func guardBenchUpstream(b *testing.B) string {
	whole, _ := json.Marshal(map[string]any{"id": "chatcmpl-bench", "object": "chat.completion", "created": 1700000000, "model": "gpt-4o-mini",
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": guardBenchAnswer}, "finish_reason": "stop"}},
		"usage":   map[string]any{"prompt_tokens": 1000, "completion_tokens": 250, "total_tokens": 1250}})
	var stream bytes.Buffer
	chunk := func(delta map[string]any, finish any, usage any) {
		c := map[string]any{"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1700000000, "model": "gpt-4o-mini",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if usage != nil {
			c["choices"], c["usage"] = []any{}, usage
		}
		b, _ := json.Marshal(c)
		fmt.Fprintf(&stream, "data: %s\n\n", b)
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	for i := 0; i < len(guardBenchAnswer); i += 16 {
		chunk(map[string]any{"content": guardBenchAnswer[i:min(i+16, len(guardBenchAnswer))]}, nil, nil)
	}
	chunk(map[string]any{}, "stop", nil)
	chunk(nil, nil, map[string]any{"prompt_tokens": 1000, "completion_tokens": 250, "total_tokens": 1250})
	stream.WriteString("data: [DONE]\n\n")
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"stream":true`)) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write(stream.Bytes())
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(whole)
	}))
	b.Cleanup(up.Close)
	return up.URL
}

// BenchmarkGuardOverhead measures what guardrails (issue 32) add to a
// request through the whole data plane: a chat completion with a 4 kB and
// a 64 kB prompt, streamed and not, through a plane with no guardrail
// ("none") and one whose key has a guardrail of three detectors (secrets,
// every pii type, three keywords; redact; input and output: "three").
// The machine is shared, so the two are measured in the same run and
// interleaved: each iteration sends a block of requests to each plane in
// turn, timing and counting the process's CPU (getrusage) for each block,
// so both see the same load. It reports each plane's latency and CPU per
// request, the added latency and CPU, and their ratios. The fake upstream
// is in process (its CPU is the same in both). The answer is about 1 kB,
// streamed in 16-byte pieces.
//
//	go test -run '^$' -bench GuardOverhead ./server/dataplane
func BenchmarkGuardOverhead(b *testing.B) {
	upstream := guardBenchUpstream(b)
	plane := func(guarded bool) (http.Handler, string) {
		edit := func(body *bundle.Body, _ *secrets.Keyring) {
			if !guarded {
				return
			}
			body.Guardrails = []bundle.Guardrail{{ID: uuid.New(), Name: "three", Target: policy.Target{Kind: policy.TargetWorkspace},
				Stages: []guardrails.Stage{guardrails.StageInput, guardrails.StageOutput}, Action: guardrails.ActionRedact, OnError: guardrails.FailClosed,
				Detectors: []bundle.GuardrailDetector{
					{DetectorSpec: guardrails.DetectorSpec{Kind: guardrails.KindSecrets}},
					{DetectorSpec: guardrails.DetectorSpec{Kind: guardrails.KindPII, Types: guardrails.PIITypes}},
					{DetectorSpec: guardrails.DetectorSpec{Kind: guardrails.KindKeywords, Words: []string{"falcon", "project x", "codename"}}},
				}}}
		}
		token, signed, pub, kr := benchBundleEdit(b, upstream+"/v1", "", nil, edit)
		p := dataplane.NewPlane(pub, dataplane.Options{Keyring: kr, Usage: &countingSink{}})
		if err := p.Admit(signed); err != nil {
			b.Fatal(err)
		}
		p.MarkReady()
		return p, token
	}
	noneH, noneToken := plane(false)
	threeH, threeToken := plane(true)
	const block = 8
	for _, size := range []struct {
		name string
		n    int
	}{{"4kB", 4 << 10}, {"64kB", 64 << 10}} {
		for _, stream := range []bool{false, true} {
			body := guardBenchPrompt(size.n, stream)
			name := size.name
			if stream {
				name += "-stream"
			}
			b.Run(name, func(b *testing.B) {
				send := func(h http.Handler, token string) (wall, cpu time.Duration) {
					before, start := cputest.Process(), time.Now()
					for range block {
						req := httptest.NewRequest(http.MethodPost, "/inf/v1/chat/completions", bytes.NewReader(body))
						req.Header.Set("Authorization", "Bearer "+token)
						req.Header.Set("Content-Type", "application/json")
						w := httptest.NewRecorder()
						h.ServeHTTP(w, req)
						if w.Code != http.StatusOK || stream && !bytes.Contains(w.Body.Bytes(), []byte("[DONE]")) {
							b.Fatalf("status %d: %s", w.Code, w.Body)
						}
					}
					return time.Since(start), cputest.Process() - before
				}
				var noneWall, noneCPU, threeWall, threeCPU time.Duration
				n := 0
				for b.Loop() {
					w, c := send(noneH, noneToken)
					noneWall, noneCPU = noneWall+w, noneCPU+c
					w, c = send(threeH, threeToken)
					threeWall, threeCPU = threeWall+w, threeCPU+c
					n += block
				}
				per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(n) / 1e3 }
				b.ReportMetric(per(noneWall), "none-µs/req")
				b.ReportMetric(per(threeWall), "three-µs/req")
				b.ReportMetric(per(noneCPU), "none-cpu-µs/req")
				b.ReportMetric(per(threeCPU), "three-cpu-µs/req")
				b.ReportMetric(per(threeWall-noneWall), "added-µs/req")
				b.ReportMetric(per(threeCPU-noneCPU), "added-cpu-µs/req")
				b.ReportMetric(float64(threeWall)/float64(noneWall), "latency-ratio")
				b.ReportMetric(float64(threeCPU)/float64(noneCPU), "cpu-ratio")
			})
		}
	}
}

// guardBenchPrompt is a chat request of about n bytes of ordinary prose
// (no match), in user messages of about 1 kB.
func guardBenchPrompt(n int, stream bool) []byte {
	line := "The quarterly report covers revenue, churn and the roadmap for the next two releases. "
	var msgs []map[string]string
	for size := 0; size < n; {
		text := strings.Repeat(line, 12)
		msgs = append(msgs, map[string]string{"role": "user", "content": text})
		size += len(text) + 30
	}
	b, _ := json.Marshal(map[string]any{"model": "openai/gpt-4o-mini", "stream": stream, "messages": msgs})
	return b
}
