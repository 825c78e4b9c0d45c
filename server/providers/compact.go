package providers

import (
	"context"
	"net/http"
)

// OpenAIResponsesCompact passes POST /responses/compact (OpenAI's
// compaction of a conversation into an encrypted compaction item) to
// api.openai.com. No other upstream kind has it and it cannot be
// translated: its output is opaque to every other vendor. It never
// streams.
type OpenAIResponsesCompact struct {
	Client *http.Client
}

// Check accepts every request: the upstream speaks the client's dialect.
func (a *OpenAIResponsesCompact) Check(*Call, bool) error { return nil }

// Complete implements Adapter; the body is OpenAI's compacted response.
func (a *OpenAIResponsesCompact) Complete(ctx context.Context, call *Call) (*Completion, error) {
	// Sent as the caller wrote it but for the model's upstream id: the
	// endpoint takes neither stream nor store.
	body, err := nativeBody(call, "", nil)
	if err != nil {
		return nil, err
	}
	resp, err := post(ctx, a.Client, trimBase(call.BaseURL)+"/responses/compact", body, call, false,
		func(h http.Header) { h.Set("Authorization", "Bearer "+call.Secret) }, openAIRefusal)
	if err != nil {
		return nil, err
	}
	m, raw, err := readObject(resp, call.ResponseModel)
	if err != nil {
		return nil, err
	}
	return &Completion{Body: mustMarshal(m), Usage: estimate(decodeResponsesUsage(m["usage"]), call, answerTokens(raw))}, nil
}

// Stream implements Adapter: compaction has no stream (the data plane
// refuses stream: true before any upstream is chosen).
func (a *OpenAIResponsesCompact) Stream(context.Context, *Call) (ChunkStream, error) {
	return nil, invalid("stream", "unsupported_parameter", "responses/compact does not stream.")
}
