package wire

import "encoding/json"

// ModelObject is a model as the data plane's discovery (GET
// /inf/v1/models) and the Workspace Playground list it: OpenAI's members
// first, then gw's. The data plane encodes this type, so both documents
// describe what it sends.
type ModelObject struct {
	ID              string       `json:"id"`
	Object          string       `json:"object" jsonschema:"enum=model"`
	Created         int64        `json:"created"`
	OwnedBy         string       `json:"owned_by"`
	Name            string       `json:"name"`
	Provider        string       `json:"provider"`
	ContextWindow   int64        `json:"context_window"`
	MaxOutputTokens int64        `json:"max_output_tokens"`
	Pricing         ModelPricing `json:"pricing"`
	Capabilities    []string     `json:"capabilities"`
	Modalities      []string     `json:"modalities"`
	// Type is chat or embedding; Endpoints the /inf/v1 paths that serve
	// the model, so a client can tell which models to use where.
	Type      string   `json:"type"`
	Endpoints []string `json:"endpoints"`
	// AliasOf lists the visible targets of a model alias; absent for a
	// catalog model.
	AliasOf []string `json:"alias_of,omitempty"`
}

// ModelPricing is a model's pricing as discovery shows it: per million
// tokens, decimal strings (USD); the one-hour cache write price and the
// long-context tier are left out when the model has none.
type ModelPricing struct {
	InputPerMTok        string              `json:"input_per_mtok"`
	OutputPerMTok       string              `json:"output_per_mtok"`
	CacheReadPerMTok    string              `json:"cache_read_per_mtok"`
	CacheWritePerMTok   string              `json:"cache_write_per_mtok"`
	CacheWrite1hPerMTok string              `json:"cache_write_1h_per_mtok,omitempty"`
	LongContext         *LongContextPricing `json:"long_context,omitempty"`
}

// PlaygroundModel is a model the caller may try in the Workspace
// Playground: the data plane's discovery object of the model.
type PlaygroundModel = ModelObject

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
