package dataplane

import (
	"net/http"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/providers"
)

// responsesDialect is OpenAI's Responses API on /inf/v1/responses. To
// api.openai.com the request goes as sent (with store forced off by an
// edit of its bytes); to other upstreams it is translated to Chat
// Completions. gw keeps no
// responses, so store: true, previous_response_id, conversation and
// background are refused with a 400 that says so.
type responsesDialect struct{}

func (responsesDialect) name() string { return endpointResponses }

func (responsesDialect) parse(body []byte) (parsed, error) {
	p, err := parseTranslated(body, providers.ResponsesToChat, "max_output_tokens")
	if err != nil {
		return parsed{}, err
	}
	if err := providers.CheckResponsesState(p.native.Members); err != nil {
		return parsed{}, err
	}
	if err := providers.ResponsesRequired(p.native.Members); err != nil {
		return parsed{}, err
	}
	return p, nil
}

func (responsesDialect) translate(body []byte) (*providers.ChatRequest, int64, error) {
	return translateWhole(body, providers.ResponsesToChat)
}

func (responsesDialect) dropped(members providers.Members) []providers.DroppedTool {
	return providers.ResponsesDroppedTools(members)
}

func (responsesDialect) translated(members providers.Members) []string {
	return providers.ResponsesTranslatedTools(members)
}

// customCalls rewrites a translated Responses answer's calls of the
// request's custom tools as custom_tool_call items; other answers are
// returned as they are.
func (x *exchange) customCalls(body []byte) ([]byte, error) {
	if _, ok := x.d.(responsesDialect); !ok {
		return body, nil
	}
	custom := providers.ResponsesCustomTools(x.native.Members)
	if custom == nil {
		return body, nil
	}
	return providers.CustomToolCalls(body, custom)
}

// customStream has a translated Responses stream write the calls of the
// request's custom tools as custom_tool_call items.
func (x *exchange) customStream(out streamOut) {
	if s, ok := out.(*responsesStream); ok {
		if rs, ok := s.translate.(*providers.ResponsesStream); ok {
			rs.Custom = providers.ResponsesCustomTools(x.native.Members)
		}
	}
}

func (responsesDialect) unknown(x *exchange, translated bool) []string {
	return providers.ResponsesUnknown(x.native.Members, translated)
}

func (responsesDialect) serves(m catalog.Model) bool { return !m.Embeds() }

func (responsesDialect) translates() bool { return true }

func (responsesDialect) refuse(w http.ResponseWriter, r *response) { r.write(w) }

func (responsesDialect) answer(c *providers.Completion, native bool, model string) ([]byte, error) {
	if native {
		return c.Body, nil
	}
	return providers.ChatToResponse(c.Body, model, c.Usage, nil)
}

func (responsesDialect) startStream(w http.ResponseWriter, native bool, model string) streamOut {
	s := &responsesStream{translatedStream{out: startNamedEvents(w)}}
	if !native {
		s.translate = &providers.ResponsesStream{Model: model}
	}
	return s
}

type responsesStream struct{ translatedStream }

// fail ends a broken stream with an error event, which the OpenAI SDKs
// raise as an error.
func (s *responsesStream) fail(model string, f *providers.Error) error {
	_, e := upstreamError(model, f)
	code := ""
	if e.Code != nil {
		code = *e.Code
	}
	return s.out.event(mustJSON(map[string]any{"type": "error", "code": code, "message": e.Message, "param": nil}))
}
