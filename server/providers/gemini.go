package providers

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Gemini calls the Gemini API's own generateContent with an API key (the
// gemini kind): unlike Google's OpenAI-compatible endpoint (the google
// kind), it takes thinking budgets, cached content and safety settings,
// and reports cached and thought tokens, so gw prices them exactly.
type Gemini struct {
	Client *http.Client
}

// Check translates the request and discards the result.
func (a *Gemini) Check(call *Call, strict bool) error { return checkGemini(call, strict) }

// checkGemini translates the request, keeping the result for the route's
// attempts.
func checkGemini(call *Call, strict bool) error {
	out, err := translateGemini(call, strict)
	if err == nil && call.Prepared != nil {
		call.Prepared.gemini = out
		call.Prepared.translations++
	}
	return err
}

// Complete implements Adapter.
func (a *Gemini) Complete(ctx context.Context, call *Call) (*Completion, error) {
	resp, err := a.send(ctx, call, false)
	if err != nil {
		return nil, err
	}
	return geminiCompletion(resp, call)
}

// Stream implements Adapter.
func (a *Gemini) Stream(ctx context.Context, call *Call) (ChunkStream, error) {
	resp, err := a.send(ctx, call, true)
	if err != nil {
		return nil, err
	}
	return newGeminiStream(resp.Body, call), nil
}

func (a *Gemini) send(ctx context.Context, call *Call, stream bool) (*http.Response, error) {
	u := trimBase(call.BaseURL) + "/models/" + url.PathEscape(call.UpstreamModel) + geminiMethod(stream)
	return sendGemini(ctx, a.Client, u, call, googleKey)
}

// geminiMethod is the custom method a generateContent URL ends with.
func geminiMethod(stream bool) string {
	if stream {
		return ":streamGenerateContent?alt=sse"
	}
	return ":generateContent"
}

// sendGemini translates the call and posts it to u with auth.
func sendGemini(ctx context.Context, client *http.Client, u string, call *Call,
	authorize func(*http.Request, *Call, rope) error) (*http.Response, error) {
	req, kept, err := preparedGemini(call)
	if err != nil {
		return nil, err
	}
	body, err := encodeOnce(call, kept, req)
	if err != nil {
		return nil, invalid("", "invalid_json", "The request could not be translated for a Gemini model.")
	}
	return send(ctx, client, call, upstreamPost{url: u, body: rope{body}, authorize: authorize,
		refusal: googleStatusError})
}

// geminiResponse is a GenerateContentResponse, whole or one of a stream's.
type geminiResponse struct {
	Candidates []struct {
		Content *struct {
			Parts []geminiPart `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata *lenientGeminiUsage `json:"usageMetadata"`
	ResponseID    string              `json:"responseId"`
	Error         *googleErrorObject  `json:"error"`
}

// geminiUsage is usageMetadata: the prompt count includes the cached
// tokens, and the thoughts are output billed beside the candidates.
type geminiUsage struct {
	PromptTokenCount        int64 `json:"promptTokenCount"`
	CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
	CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
	ThoughtsTokenCount      int64 `json:"thoughtsTokenCount"`
	ToolUsePromptTokenCount int64 `json:"toolUsePromptTokenCount"`
}

// usage converts to gw's disjoint categories; a tool-use prompt (the
// results of Google's own tools) is input too.
func (u geminiUsage) usage() Usage {
	prompt := clampCount(clampCount(u.PromptTokenCount) + clampCount(u.ToolUsePromptTokenCount))
	cached := max(0, min(u.CachedContentTokenCount, prompt))
	thoughts := clampCount(u.ThoughtsTokenCount)
	return Usage{InputTokens: prompt - cached, CacheReadTokens: cached,
		OutputTokens: clampCount(clampCount(u.CandidatesTokenCount) + thoughts), ReasoningTokens: thoughts}
}

// lenientGeminiUsage is a usageMetadata that does not read taken for none.
type lenientGeminiUsage struct {
	geminiUsage
	ok bool
}

func (u *lenientGeminiUsage) UnmarshalJSON(b []byte) error {
	var v geminiUsage
	if err := json.Unmarshal(b, &v); err == nil && !isNull(b) {
		u.geminiUsage, u.ok = v, true
	}
	return nil
}

// blocked is the error of a prompt Gemini's safety filters refused, which
// it answers 200 with no candidate: the caller's to read, never billed as
// output.
func (r *geminiResponse) blocked() *Error {
	if r.PromptFeedback == nil || r.PromptFeedback.BlockReason == "" || len(r.Candidates) > 0 {
		return nil
	}
	return &Error{Kind: Rejected, Status: http.StatusBadRequest, Code: "content_filter", Type: "invalid_request_error",
		Message: "The provider's safety filters blocked the prompt (" + r.PromptFeedback.BlockReason + ")."}
}

// geminiFinish maps a finishReason to OpenAI's; calls says the answer
// made function calls.
func geminiFinish(reason string, calls bool) string {
	switch reason {
	case "MAX_TOKENS":
		return "length"
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY":
		return "content_filter"
	}
	if calls {
		return "tool_calls"
	}
	return "stop"
}

// geminiCompletion reads a generateContent answer into a chat.completion.
func geminiCompletion(resp *http.Response, call *Call) (*Completion, error) {
	defer resp.Body.Close()
	raw, err := readAnswer(resp.Body, resp.ContentLength)
	if err != nil {
		return nil, transportError(err)
	}
	var r geminiResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, &Error{Kind: Unavailable, Status: resp.StatusCode, Message: "the upstream's answer is not a generateContent response"}
	}
	if e := r.blocked(); e != nil {
		return nil, e
	}
	var u Usage
	if r.UsageMetadata != nil && r.UsageMetadata.ok {
		u = r.UsageMetadata.usage().reported()
	}
	u = estimate(u, call, answerTokens(raw))
	var a answer
	var finish string
	if len(r.Candidates) > 0 {
		c := r.Candidates[0]
		if c.Content != nil {
			for _, p := range c.Content.Parts {
				addGeminiPart(&a, p, len(a.calls))
			}
		}
		finish = c.FinishReason
	}
	a.finish = geminiFinish(finish, len(a.calls) > 0)
	body, err := newChatOut("chatcmpl-"+r.ResponseID, call.ResponseModel).completion(a, u)
	if err != nil {
		return nil, err
	}
	return &Completion{Body: body, Usage: u}, nil
}

// addGeminiPart adds a part to an answer, numbering a function call
// index among the answer's calls; thoughts have no place in a
// chat.completion (they are counted, as output, from the usage).
func addGeminiPart(a *answer, p geminiPart, index int) {
	switch {
	case p.Thought:
	case p.FunctionCall != nil:
		args := "{}"
		if len(p.FunctionCall.Args) > 0 && !isNull(p.FunctionCall.Args) {
			args = compactJSON(p.FunctionCall.Args)
		}
		id := p.FunctionCall.ID
		if id == "" || p.ThoughtSignature != "" {
			id = geminiCallID(index, p.ThoughtSignature)
		}
		a.addCall(id, p.FunctionCall.Name, args)
	case p.Text != "":
		a.addText(p.Text)
	}
}

// googleErrorObject is Google's error: {"error":{"code","message","status"}}.
type googleErrorObject struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
	Details []struct {
		Reason string `json:"reason"`
	} `json:"details"`
}

// kind classifies the error; Google answers an invalid API key 400
// (reason API_KEY_INVALID), which is the credential's fault, not the
// request's.
func (o *googleErrorObject) kind(status int) ErrorKind {
	for _, d := range o.Details {
		if d.Reason == "API_KEY_INVALID" || d.Reason == "API_KEY_SERVICE_BLOCKED" {
			return Unauthorized
		}
	}
	switch o.Status {
	case "RESOURCE_EXHAUSTED":
		return RateLimited
	case "UNAUTHENTICATED", "PERMISSION_DENIED":
		return Unauthorized
	case "UNAVAILABLE", "INTERNAL":
		return Unavailable
	case "DEADLINE_EXCEEDED":
		return Timeout
	}
	if status == 0 {
		return Unavailable
	}
	return statusKind(status)
}

func (o *googleErrorObject) fill(e *Error, call *Call) {
	e.Kind = o.kind(e.Status)
	e.Message = redact(o.Message, call.Secret)
	if e.Kind == Rejected {
		e.Type = "invalid_request_error"
	}
}

// googleStatusError reads a Google API error answer (an object, or a list
// of one, as streaming endpoints send it).
func googleStatusError(resp *http.Response, call *Call) *Error {
	e := &Error{Kind: statusKind(resp.StatusCode), Status: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After")}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '[' {
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) == nil && len(list) > 0 {
			raw = list[0]
		}
	}
	var body struct {
		Error *googleErrorObject `json:"error"`
	}
	if json.Unmarshal(raw, &body) == nil && body.Error != nil {
		body.Error.fill(e, call)
	}
	if e.Kind == Unauthorized {
		e.Message = "credential " + call.CredentialID + " was refused: " + strings.TrimSpace(e.Message)
	}
	return e
}
