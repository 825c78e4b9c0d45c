package providers

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// BenchmarkBedrockSigning measures what SigV4 by the AWS SDK's signer
// costs a Bedrock request beyond what every other kind pays for its
// request: "bearer" builds the request and sets a bearer header (the
// openai kind's authentication), "sigv4" builds the same request and
// signs it (body hash included).
//
//	go test -run '^$' -bench BedrockSigning -benchmem ./server/providers
func BenchmarkBedrockSigning(b *testing.B) {
	body := bytes.Repeat([]byte(`{"messages":[{"role":"user","content":[{"text":"Hello!"}]}]}`), 4)
	const u = "https://bedrock-runtime.us-east-1.amazonaws.com/model/us.amazon.nova-lite-v1%3A0/converse"
	creds := aws.Credentials{AccessKeyID: "AKIABENCH", SecretAccessKey: "bench/secret"}
	var bearerNs float64
	b.Run("bearer", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, u, bytes.NewReader(body))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Authorization", "Bearer sk-bench")
		}
		bearerNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("sigv4", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, u, bytes.NewReader(body))
			r.Header.Set("Content-Type", "application/json")
			sum := sha256.Sum256(body)
			if err := bedrockSigner.SignHTTP(context.Background(), creds, r, hex.EncodeToString(sum[:]), "bedrock", "us-east-1", time.Now()); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/bearerNs, "ratio-to-bearer")
	})
}

// BenchmarkStreamDecoding translates a 20-delta answer into chat chunks
// from each framing: "sse" Gemini's server-sent events (the framing every
// other kind streams in), "eventstream" Bedrock's binary event stream
// decoded by the AWS SDK's eventstream package. ns/op is per stream.
func BenchmarkStreamDecoding(b *testing.B) {
	call := &Call{Request: &ChatRequest{Stream: true}, UpstreamModel: "m", ResponseModel: "x/m"}
	var sse strings.Builder
	for range 20 {
		sse.WriteString(`data: {"candidates":[{"content":{"role":"model","parts":[{"text":"token "}]},"index":0}],"usageMetadata":{"promptTokenCount":19}}` + "\n\n")
	}
	sse.WriteString(`data: {"candidates":[{"content":{"role":"model","parts":[]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":19,"candidatesTokenCount":20}}` + "\n\n")
	events := [][2]string{{"messageStart", `{"role":"assistant"}`}}
	for range 20 {
		events = append(events, [2]string{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"token "}}`})
	}
	events = append(events, [2]string{"messageStop", `{"stopReason":"end_turn"}`},
		[2]string{"metadata", `{"usage":{"inputTokens":19,"outputTokens":20,"totalTokens":39},"metrics":{"latencyMs":1}}`})
	framed, _ := io.ReadAll(eventStream(b, events...))
	drain := func(b *testing.B, s ChunkStream) {
		for {
			if _, err := s.Recv(); err == io.EOF {
				return
			} else if err != nil {
				b.Fatal(err)
			}
		}
	}
	var sseNs float64
	b.Run("sse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			drain(b, newGeminiStream(io.NopCloser(strings.NewReader(sse.String())), call))
		}
		sseNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("eventstream", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			drain(b, newConverseStream(io.NopCloser(bytes.NewReader(framed)), call))
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/sseNs, "ratio-to-sse")
	})
}
