package dataplane

import "encoding/json"

// The dialects' bodies and answers as the data plane's document shows
// them: the members gw reads of a request, and those every answer has,
// whether gw translated it or passed a provider's on. Each provider's
// reference has more, which the document admits (its objects are open);
// what the data plane really answers is held to these by its tests
// (TestMain, server/openapitest).

// chatCompletionRequest is a Chat Completions request.
type chatCompletionRequest struct {
	Model               string            `json:"model"`
	Messages            []chatMessage     `json:"messages" jsonschema:"minItems=1"`
	Stream              bool              `json:"stream,omitempty"`
	StreamOptions       *streamOptions    `json:"stream_options,omitempty"`
	MaxCompletionTokens int64             `json:"max_completion_tokens,omitempty" jsonschema:"minimum=1"`
	MaxTokens           int64             `json:"max_tokens,omitempty" jsonschema:"minimum=1"`
	Tools               []json.RawMessage `json:"tools,omitempty"`
	ToolChoice          any               `json:"tool_choice,omitempty"`
	ResponseFormat      json.RawMessage   `json:"response_format,omitempty"`
	ReasoningEffort     string            `json:"reasoning_effort,omitempty"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage,omitempty"`
}

// chatCompletion is a Chat Completions answer.
type chatCompletion struct {
	ID      string        `json:"id"`
	Object  string        `json:"object" jsonschema:"enum=chat.completion"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []chatChoice  `json:"choices"`
	Usage   providerUsage `json:"usage,omitempty"`
}

type chatChoice struct {
	Index        int               `json:"index"`
	Message      chatAnswerMessage `json:"message"`
	FinishReason *string           `json:"finish_reason"`
}

type chatAnswerMessage struct {
	Role    string  `json:"role" jsonschema:"enum=assistant"`
	Content *string `json:"content"`
}

// providerUsage is an answer's token counts as its provider reported
// them (gw reads them, and counts itself what is missing or unreadable:
// docs/metering.md); a provider's own answer is passed on with them as
// they came, so the document promises no more of them than the provider.
type providerUsage = json.RawMessage

// responseRequest is a Responses request.
type responseRequest struct {
	Model           string            `json:"model"`
	Input           any               `json:"input"`
	Instructions    string            `json:"instructions,omitempty"`
	Stream          bool              `json:"stream,omitempty"`
	MaxOutputTokens int64             `json:"max_output_tokens,omitempty" jsonschema:"minimum=1"`
	Tools           []json.RawMessage `json:"tools,omitempty"`
	Reasoning       json.RawMessage   `json:"reasoning,omitempty"`
}

// responseObject is a Responses answer.
type responseObject struct {
	ID        string            `json:"id"`
	Object    string            `json:"object" jsonschema:"enum=response"`
	CreatedAt int64             `json:"created_at"`
	Model     string            `json:"model"`
	Status    string            `json:"status"`
	Output    []json.RawMessage `json:"output"`
	Usage     providerUsage     `json:"usage,omitempty"`
}

// messageRequest is a Messages request.
type messageRequest struct {
	Model     string               `json:"model"`
	MaxTokens int64                `json:"max_tokens" jsonschema:"minimum=1"`
	Messages  []anthropicMessageIn `json:"messages"`
	System    any                  `json:"system,omitempty"`
	Stream    bool                 `json:"stream,omitempty"`
	Tools     []json.RawMessage    `json:"tools,omitempty"`
}

type anthropicMessageIn struct {
	Role    string `json:"role" jsonschema:"enum=user,enum=assistant"`
	Content any    `json:"content"`
}

// messageObject is a Messages answer.
type messageObject struct {
	ID         string            `json:"id"`
	Type       string            `json:"type" jsonschema:"enum=message"`
	Role       string            `json:"role" jsonschema:"enum=assistant"`
	Content    []json.RawMessage `json:"content"`
	Model      string            `json:"model"`
	StopReason *string           `json:"stop_reason"`
	Usage      providerUsage     `json:"usage,omitempty"`
}

// countTokensRequest is a count_tokens request: a Messages request
// without max_tokens.
type countTokensRequest struct {
	Model    string               `json:"model"`
	Messages []anthropicMessageIn `json:"messages"`
	System   any                  `json:"system,omitempty"`
	Tools    []json.RawMessage    `json:"tools,omitempty"`
}

// tokenCount is count_tokens' answer, gw's estimate or the provider's.
type tokenCount struct {
	InputTokens int64 `json:"input_tokens" jsonschema:"minimum=0"`
}

// embeddingRequest is an embeddings request.
type embeddingRequest struct {
	Model          string `json:"model"`
	Input          any    `json:"input"`
	EncodingFormat string `json:"encoding_format,omitempty" jsonschema:"enum=float,enum=base64"`
	Dimensions     int64  `json:"dimensions,omitempty" jsonschema:"minimum=1"`
}

// embeddingList is an embeddings answer.
type embeddingList struct {
	Object string        `json:"object" jsonschema:"enum=list"`
	Data   []embedding   `json:"data"`
	Model  string        `json:"model"`
	Usage  providerUsage `json:"usage,omitempty"`
}

type embedding struct {
	Object    string `json:"object" jsonschema:"enum=embedding"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"`
}

// anthropicErrorBody is every refusal in Anthropic's shape
// (anthropicError), on /messages and /messages/count_tokens.
type anthropicErrorBody struct {
	Type  string               `json:"type" jsonschema:"enum=error"`
	Error anthropicErrorObject `json:"error"`
}

type anthropicErrorObject struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}
