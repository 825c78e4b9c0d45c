package providers_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/server/providers"
)

// BenchmarkOpenAIStreamRelay relays a 20-chunk stream (role, content,
// finish, the usage chunk gw asks for) through the OpenAI adapter, and,
// as the baseline in the same run, does what the adapter did before: decode
// each chunk into a map, set model, encode it again. ns/op is per stream.
//
//	go test -run '^$' -bench OpenAIStreamRelay -benchmem ./server/providers
func BenchmarkOpenAIStreamRelay(b *testing.B) {
	chunk := `data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","system_fingerprint":"fp_bench","choices":[{"index":0,"delta":{"content":"token "},"logprobs":null,"finish_reason":null}]}` + "\n\n"
	var body strings.Builder
	for range 20 {
		body.WriteString(chunk)
	}
	body.WriteString(`data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}` + "\n\n")
	body.WriteString(`data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":19,"completion_tokens":20,"total_tokens":39}}` + "\n\n")
	body.WriteString("data: [DONE]\n\n")
	stream := body.String()
	base := newServer(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, stream)
	}))
	a := openAI(providers.DialectOpenAI)
	c := call(b, base, `{"model":"openai/gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	b.Run("baseline-map-reencode", func(b *testing.B) {
		b.ReportAllocs()
		client := &http.Client{}
		for b.Loop() {
			resp, err := client.Post(base+"/chat/completions", "application/json", strings.NewReader(`{}`))
			if err != nil {
				b.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, ev := range strings.Split(string(raw), "\n\n") {
				data, ok := strings.CutPrefix(ev, "data: ")
				if !ok || data == "[DONE]" {
					continue
				}
				var m map[string]json.RawMessage
				if err := json.Unmarshal([]byte(data), &m); err != nil {
					b.Fatal(err)
				}
				m["model"] = json.RawMessage(`"openai/gpt-4o-mini"`)
				if _, err := json.Marshal(m); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("gw", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s, err := a.Stream(context.Background(), c)
			if err != nil {
				b.Fatal(err)
			}
			for {
				if _, err := s.Recv(); err == io.EOF {
					break
				} else if err != nil {
					b.Fatal(err)
				}
			}
			s.Close()
		}
	})
}
