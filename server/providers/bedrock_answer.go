package providers

import (
	"encoding/json"
	"net/http"
)

// converseResponse is a Converse answer.
type converseResponse struct {
	Output struct {
		Message *struct {
			Content []converseBlock `json:"content"`
		} `json:"message"`
	} `json:"output"`
	StopReason string                `json:"stopReason"`
	Usage      *lenientConverseUsage `json:"usage"`
}

// converseUsage is Converse's usage: its input count leaves out the
// tokens read from and written to the prompt cache, as gw's does;
// cacheDetails splits the writes by TTL (5m, 1h).
type converseUsage struct {
	InputTokens           int64           `json:"inputTokens"`
	OutputTokens          int64           `json:"outputTokens"`
	CacheReadInputTokens  int64           `json:"cacheReadInputTokens"`
	CacheWriteInputTokens int64           `json:"cacheWriteInputTokens"`
	CacheDetails          json.RawMessage `json:"cacheDetails"`
}

func (u converseUsage) usage() Usage {
	return Usage{InputTokens: clampCount(u.InputTokens), OutputTokens: clampCount(u.OutputTokens),
		CacheReadTokens: clampCount(u.CacheReadInputTokens), CacheWriteTokens: clampCount(u.CacheWriteInputTokens),
		CacheWrite1hTokens: converseHourWrites(u.CacheDetails)}
}

// converseHourWrites is the part of the cache writes cacheDetails says
// were written for an hour, priced at the one-hour write price. Details
// that do not read leave every write at the five-minute price, as before
// Converse reported them.
func converseHourWrites(raw json.RawMessage) int64 {
	var details []struct {
		TTL         string `json:"ttl"`
		InputTokens int64  `json:"inputTokens"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &details) != nil {
		return 0
	}
	var n int64
	for _, d := range details {
		if d.TTL == "1h" {
			n += clampCount(d.InputTokens)
		}
	}
	return n
}

// lenientConverseUsage is a usage object that does not read taken for
// none.
type lenientConverseUsage struct {
	converseUsage
	ok bool
}

func (u *lenientConverseUsage) UnmarshalJSON(b []byte) error {
	var v converseUsage
	if err := json.Unmarshal(b, &v); err == nil && !isNull(b) {
		u.converseUsage, u.ok = v, true
	}
	return nil
}

// converseFinish maps a stopReason to OpenAI's finish reasons.
func converseFinish(stop string) string {
	switch stop {
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "guardrail_intervened", "content_filtered":
		return "content_filter"
	}
	return "stop"
}

// converseCompletion reads a Converse answer into a chat.completion.
func converseCompletion(resp *http.Response, call *Call) (*Completion, error) {
	defer resp.Body.Close()
	raw, err := readAnswer(resp.Body, resp.ContentLength)
	if err != nil {
		return nil, transportError(err)
	}
	var r converseResponse
	if err := json.Unmarshal(raw, &r); err != nil || r.Output.Message == nil {
		return nil, &Error{Kind: Unavailable, Status: resp.StatusCode, Message: "the upstream's answer is not a Converse response"}
	}
	a, text := converseAnswer(r)
	var u Usage
	if r.Usage != nil && r.Usage.ok {
		u = withReasoning(r.Usage.usage().reported(), text)
	}
	u = estimate(u, call, answerTokens(raw))
	body, err := newChatOut("", call.ResponseModel).completion(a, u)
	if err != nil {
		return nil, err
	}
	return &Completion{Body: body, Usage: u}, nil
}

// converseBatchCompletion reads a Converse job's modelOutput into a
// chat.completion: the answer as converseCompletion reads it, its usage
// as Bedrock reported it (a batch record has no request of gw's in
// memory to floor it against; Bedrock bills what it reports).
func converseBatchCompletion(raw []byte, call *Call) (*Completion, error) {
	var r converseResponse
	if err := json.Unmarshal(raw, &r); err != nil || r.Output.Message == nil {
		return nil, errNotObject
	}
	a, text := converseAnswer(r)
	var u Usage
	if r.Usage != nil && r.Usage.ok {
		u = withReasoning(r.Usage.usage().reported(), text)
	}
	body, err := newChatOut("", call.ResponseModel).completion(a, u)
	if err != nil {
		return nil, err
	}
	return &Completion{Body: body, Usage: u}, nil
}

// converseAnswer is a Converse answer's content and finish, and its text
// (reasoning apart) for the reasoning share of the output.
func converseAnswer(r converseResponse) (answer, *relayed) {
	var a answer
	text := &relayed{}
	for _, b := range r.Output.Message.Content {
		addConverseBlock(&a, text, b)
	}
	a.finish = converseFinish(r.StopReason)
	if a.finish == "tool_calls" && len(a.calls) == 0 {
		// The forced structured-output call became the answer's text.
		a.finish = "stop"
	}
	return a, text
}

// addConverseBlock adds a content block to an answer; text keeps the
// answer's text, reasoning apart, for the reasoning share of the output.
func addConverseBlock(a *answer, text *relayed, b converseBlock) {
	switch {
	case b.Text != nil:
		a.addText(*b.Text)
		text.add(*b.Text, false)
	case b.ToolUse != nil && b.ToolUse.Name == structuredTool:
		out := compactJSON(b.ToolUse.Input)
		a.addText(out)
		text.add(out, false)
	case b.ToolUse != nil:
		args := compactJSON(b.ToolUse.Input)
		a.addCall(b.ToolUse.ToolUseID, b.ToolUse.Name, args)
		text.add(b.ToolUse.Name+args, false)
	case b.ReasoningContent != nil && b.ReasoningContent.ReasoningText != nil:
		// Reasoning has no place in a chat.completion; it is output,
		// counted in the usage.
		text.add(b.ReasoningContent.ReasoningText.Text, true)
	}
}

// withReasoning sets the reasoning share of a reported output: Converse
// reports output whole, so the share is the reasoning text's share of the
// answer's text.
func withReasoning(u Usage, text *relayed) Usage {
	total := text.text.Len() + text.rest
	if total > 0 && text.reasoning > 0 {
		u.ReasoningTokens = min(u.OutputTokens, u.OutputTokens*int64(text.reasoning)/int64(total))
	}
	return u
}
