package wire

import "encoding/json"

// PlaygroundModel is a model the caller may try in the Workspace
// Playground: the data plane's discovery object of the model (GET
// /inf/v1/models), OpenAI's members first.
type PlaygroundModel struct {
	ID              string   `json:"id"`
	Object          string   `json:"object" jsonschema:"enum=model"`
	Created         int64    `json:"created"`
	OwnedBy         string   `json:"owned_by"`
	Name            string   `json:"name"`
	Provider        string   `json:"provider"`
	ContextWindow   int64    `json:"context_window"`
	MaxOutputTokens int64    `json:"max_output_tokens"`
	Pricing         Pricing  `json:"pricing"`
	Capabilities    []string `json:"capabilities"`
	Modalities      []string `json:"modalities"`
	Type            string   `json:"type" jsonschema:"enum=chat"`
	Endpoints       []string `json:"endpoints"`
}

// PlaygroundChatRequest documents the playground's request: a Chat
// Completions body, as POST /inf/v1/chat/completions takes it. The
// members named here are the common ones; every member the data plane
// accepts is accepted (tools, response_format, reasoning_effort, …).
type PlaygroundChatRequest struct {
	Model               string            `json:"model"`
	Messages            []json.RawMessage `json:"messages" jsonschema:"minItems=1"`
	Stream              bool              `json:"stream,omitempty"`
	StreamOptions       json.RawMessage   `json:"stream_options,omitempty"`
	MaxCompletionTokens int64             `json:"max_completion_tokens,omitempty"`
	MaxTokens           int64             `json:"max_tokens,omitempty"`
	Temperature         float64           `json:"temperature,omitempty"`
}

// PlaygroundChatCompletion documents the playground's answer: the data
// plane's Chat Completions answer as it is, not enveloped (it is the
// model's answer). A streamed answer is a text/event-stream of
// chat.completion.chunk objects ending with [DONE].
type PlaygroundChatCompletion struct {
	ID      string            `json:"id"`
	Object  string            `json:"object" jsonschema:"enum=chat.completion"`
	Created int64             `json:"created"`
	Model   string            `json:"model"`
	Choices []json.RawMessage `json:"choices"`
	Usage   json.RawMessage   `json:"usage,omitempty"`
}
