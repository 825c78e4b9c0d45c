package dataplane

import (
	"encoding/json"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/providers"
)

// responsesCompactPath is OpenAI's compaction of a Responses conversation
// (issue 35): the caller's input in, one opaque, encrypted compaction item
// out, to send back as input later. It is a model call like any other —
// admitted, budgeted, metered as one usage event (endpoint
// responses.compact) — but only api.openai.com has it: the item it makes
// means nothing to another vendor, so it is never translated, and a model
// of another kind is refused with a 400 that says so.
const (
	responsesCompactPath     = "/inf/v1/responses/compact"
	endpointResponsesCompact = "responses.compact"
)

// compactDialect is responsesDialect for /responses/compact: the same
// body, no stream, no translation.
type compactDialect struct{ responsesDialect }

func (compactDialect) name() string { return endpointResponsesCompact }

func (d compactDialect) parse(body []byte) (parsed, error) {
	var bare struct {
		Stream json.RawMessage `json:"stream"`
	}
	if json.Unmarshal(body, &bare) == nil && len(bare.Stream) > 0 && string(bare.Stream) != "false" && string(bare.Stream) != "null" {
		return parsed{}, &providers.InvalidRequestError{Param: "stream", Code: "unsupported_parameter",
			Message: "responses/compact does not stream."}
	}
	p, err := parseTranslated(body, providers.ResponsesToChat, "max_output_tokens")
	if err != nil {
		return parsed{}, err
	}
	if err := providers.CheckResponsesState(p.native.Members); err != nil {
		return parsed{}, err
	}
	if p.req == nil || p.req.Model == "" {
		return parsed{}, &providers.InvalidRequestError{Param: "model", Code: "missing_required_parameter", Message: "model is required."}
	}
	return p, nil
}

func (compactDialect) translates() bool { return false }

func (compactDialect) answer(c *providers.Completion, _ bool, _ string) ([]byte, error) {
	return c.Body, nil
}

// notNative is the refusal of a model whose upstream has no compaction.
func (compactDialect) notNative(model string, kind catalog.Kind) *response {
	return invalidRequest("model", "unsupported_model", "The model '"+model+"' is served by a "+string(kind)+
		" upstream, which has no responses/compact: compaction is OpenAI's (models of the openai kind).")
}
