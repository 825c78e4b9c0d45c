package providers

import (
	"context"
	"net/http"
	"strings"
)

// BedrockMessages forwards Messages requests for Anthropic models on
// Bedrock through InvokeModel, as sent, rather than through Converse:
// Converse has no counterpart for several Messages features a caller of
// the Messages dialect asks for (cache_control with a TTL, thinking blocks
// kept across turns, documents with citations, server tools, betas), and
// InvokeModel takes the Messages body itself. The stream is the Messages
// events, each in an event-stream chunk.
type BedrockMessages struct {
	Bedrock *Bedrock
}

// bedrockAnthropicVersion is the Messages API version Bedrock takes in
// the body.
const bedrockAnthropicVersion = "bedrock-2023-05-31"

// isBedrockAnthropic tells Anthropic's models on Bedrock (model ids and
// inference profiles: anthropic.…, us.anthropic.…, global.anthropic.…).
func isBedrockAnthropic(model string) bool {
	return strings.HasPrefix(model, "anthropic.") || strings.Contains(model, ".anthropic.") || strings.Contains(model, "/anthropic.")
}

// Check accepts every request: the upstream speaks the client's dialect.
func (a *BedrockMessages) Check(*Call, bool) error { return nil }

func (a *BedrockMessages) send(ctx context.Context, call *Call, stream bool) (*http.Response, error) {
	body, err := bedrockMessagesBody(call)
	if err != nil {
		return nil, err
	}
	action := "/invoke"
	if stream {
		action = "/invoke-with-response-stream"
	}
	return a.Bedrock.post(ctx, call, action, body)
}

// bedrockMessagesBody is the client's Messages request as InvokeModel
// takes it: no model or stream member (the URL says both), Bedrock's
// anthropic_version, and the client's anthropic-beta flags in the body.
func bedrockMessagesBody(call *Call) ([]byte, error) {
	extra := []Edit{removed("stream")}
	if betas := call.Header.Values("Anthropic-Beta"); len(betas) > 0 {
		var list []string
		for _, b := range betas {
			for _, f := range strings.Split(b, ",") {
				if f = strings.TrimSpace(f); f != "" {
					list = append(list, f)
				}
			}
		}
		extra = append(extra, setTo("anthropic_beta", mustMarshal(list)))
	}
	body, err := anthropicPlatformBody(call, false, bedrockAnthropicVersion, extra...)
	if err != nil {
		return nil, err
	}
	// One copy: the request is signed over its bytes.
	return body.bytes(), nil
}

// Complete implements Adapter; the body is a Messages answer.
func (a *BedrockMessages) Complete(ctx context.Context, call *Call) (*Completion, error) {
	resp, err := a.send(ctx, call, false)
	if err != nil {
		return nil, err
	}
	return anthropicNativeCompletion(resp, call)
}

// Stream implements Adapter; each item is a Messages event's data.
func (a *BedrockMessages) Stream(ctx context.Context, call *Call) (ChunkStream, error) {
	resp, err := a.send(ctx, call, true)
	if err != nil {
		return nil, err
	}
	return &anthropicNativeStream{body: resp.Body, sse: newBedrockEvents(resp.Body, call), call: call}, nil
}
