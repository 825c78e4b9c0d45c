package dataplane

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/providers"
)

// messagesDialect is Anthropic's Messages API on /inf/v1/messages, so the
// Anthropic SDKs and Claude Code work with their base URL set to
// {base}/inf. To Anthropic upstreams the request goes as sent (its model,
// limit and stream set by an edit of its bytes); to others
// it is translated to Chat Completions and the answer back. Errors are in
// Anthropic's shape: {"type":"error","error":{"type","message"}}.
type messagesDialect struct{}

func (messagesDialect) name() string { return endpointMessages }

func (messagesDialect) parse(body []byte) (parsed, error) {
	p, err := parseTranslated(body, providers.MessagesToChat, "max_tokens")
	if err != nil {
		return parsed{}, err
	}
	// Checked for every upstream: a native one would refuse it after a
	// call spent on it.
	if err := providers.MessagesRequired(p.native.Members); err != nil {
		return parsed{}, err
	}
	// Claude Code's system turns go to an Anthropic upstream folded into
	// system, which is where the Messages API takes them.
	p.native.Edits = providers.FoldSystemTurns(p.native.Members)
	return p, nil
}

func (messagesDialect) translate(body []byte) (*providers.ChatRequest, int64, error) {
	return translateWhole(body, providers.MessagesToChat)
}

func (messagesDialect) dropped(members providers.Members) []providers.DroppedTool {
	return providers.MessagesDroppedTools(members)
}

func (messagesDialect) translated(providers.Members) []string { return nil }

// parseTranslated reads a request of another dialect: its members, and
// the Chat Completions request its outline translates to, which is what
// routing reads. The body is not translated whole here: an upstream of
// its own dialect takes it as sent, and for another upstream the route
// translates it whole (translator). A request the translation refuses is
// still routed, as the bare request it is (model, stream, limit), because
// a native upstream may take it; the translation's error refuses it only
// where it would have to be translated.
func parseTranslated(body []byte, translate func([]byte) ([]byte, error), limit string) (parsed, error) {
	// The members are slices of body, not copies: a native upstream gets
	// them as sent.
	members, err := providers.ParseObject(body)
	if err != nil {
		return parsed{}, invalidJSON
	}
	p := parsed{native: &providers.NativeRequest{Body: body, Members: members}}
	outline := providers.Outline(body)
	if p.whole = len(outline) == len(body); !p.whole {
		p.held = int64(len(outline))
	}
	chat, terr := translate(outline)
	if terr == nil {
		req, err := providers.ParseChatRequest(chat)
		if err == nil {
			p.req = req
			p.held += int64(len(chat))
			return p, nil
		}
		terr = err
	}
	var bare struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	if err := json.Unmarshal(outline, &bare); err != nil || bare.Model == "" {
		// Without a model there is nothing to route: the translation's
		// error says what is wrong.
		return parsed{}, terr
	}
	m := map[string]any{"model": bare.Model, "stream": bare.Stream, "messages": []any{map[string]any{"role": "user", "content": ""}}}
	if raw, ok := members.Get(limit); ok {
		if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil && n > 0 {
			m["max_completion_tokens"] = n
		}
	}
	req, err := providers.ParseChatRequest(mustJSON(m))
	if err != nil {
		return parsed{}, terr
	}
	p.req, p.translateErr, p.whole = req, terr, false
	return p, nil
}

// translateWhole is the whole request as Chat Completions, for an
// upstream that does not speak its dialect, and the bytes it holds.
func translateWhole(body []byte, translate func([]byte) ([]byte, error)) (*providers.ChatRequest, int64, error) {
	chat, err := translate(body)
	if err != nil {
		return nil, 0, err
	}
	req, err := providers.ParseChatRequest(chat)
	if err != nil {
		return nil, 0, err
	}
	return req, int64(len(chat)), nil
}

var invalidJSON = &providers.InvalidRequestError{Code: "invalid_json", Message: "The request body is not a JSON object."}

func (messagesDialect) unknown(x *exchange, translated bool) []string {
	return providers.MessagesUnknown(x.native.Members, translated)
}

func (messagesDialect) serves(m catalog.Model) bool { return !m.Embeds() }

func (messagesDialect) translates() bool { return true }

func (messagesDialect) refuse(w http.ResponseWriter, r *response) { anthropicError(r).write(w) }

// anthropicError re-encodes an error gw built in OpenAI's shape in
// Anthropic's, keeping its status and headers. The type follows the
// status, as Anthropic's do; the SDKs pick their error class by status.
// A budget spent for the period is Anthropic's own answer to a spent
// balance, 402 billing_error, which no Anthropic SDK retries (a 429
// rate_limit_error they would).
func anthropicError(r *response) *response {
	e := errorFields(r)
	status, typ := r.status, anthropicErrorType(r.status)
	switch {
	case r.billing:
		status, typ = http.StatusPaymentRequired, "billing_error"
	case e.Code != nil && *e.Code == "overloaded":
		// Anthropic's own word for it (which it sends with a 529).
		typ = "overloaded_error"
	case e.Code != nil && *e.Code == codeUpstreamOverloaded:
		// An Anthropic upstream's 529 goes back as it came.
		status, typ = statusOverloaded, "overloaded_error"
	}
	out := &response{status: status, code: r.code, body: mustJSON(anthropicErrorBody{Type: "error",
		Error: anthropicErrorObject{Type: typ, Message: e.Message}})}
	for _, f := range r.header {
		if f.name == "Content-Length" {
			f = headerField{"Content-Length", []string{strconv.Itoa(len(out.body))}}
		}
		out.header = append(out.header, f)
	}
	return out
}

func anthropicErrorType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

func (messagesDialect) answer(c *providers.Completion, native bool, model string) ([]byte, error) {
	if native {
		return c.Body, nil
	}
	return providers.ChatToMessage(c.Body, model, c.Usage)
}

func (messagesDialect) startStream(w http.ResponseWriter, native bool, model string) streamOut {
	s := &messagesStream{translatedStream{out: startNamedEvents(w)}}
	if !native {
		s.translate = &providers.MessagesStream{Model: model}
	}
	return s
}

// messagesStream writes a Messages event stream: a native upstream's
// events as they come, or the translation of chat chunks.
type messagesStream struct{ translatedStream }

func (s *messagesStream) fail(model string, f *providers.Error) error {
	status, e := upstreamError(model, f)
	if e.Code != nil && *e.Code == codeUpstreamOverloaded {
		status = statusOverloaded
	}
	return s.out.event(mustJSON(anthropicErrorBody{Type: "error", Error: anthropicErrorObject{Type: anthropicErrorType(status), Message: e.Message}}))
}
