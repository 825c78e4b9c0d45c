package dataplane

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/providers"
)

// embeddingsDialect is OpenAI's embeddings API on /inf/v1/embeddings, for
// the catalog's embedding models, served by OpenAI-shaped upstreams only
// (nothing is translated). A request is priced by its input tokens.
type embeddingsDialect struct{}

func (embeddingsDialect) name() string { return endpointEmbeddings }

func (embeddingsDialect) parse(body []byte) (parsed, error) {
	// The members, input included, are slices of body, not copies.
	members, err := providers.ParseObject(body)
	if err != nil {
		return parsed{}, invalidJSON
	}
	var req struct {
		Model          *string         `json:"model"`
		EncodingFormat *string         `json:"encoding_format"`
		Dimensions     *int64          `json:"dimensions"`
		Input          json.RawMessage `json:"-"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return parsed{}, &providers.InvalidRequestError{Code: "invalid_type", Message: "The request is not an embeddings request: " + err.Error()}
	}
	req.Input = bytes.TrimSpace(members.Value("input"))
	switch {
	case req.Model == nil || *req.Model == "":
		return parsed{}, &providers.InvalidRequestError{Param: "model", Code: "missing_required_parameter", Message: "Missing required parameter: 'model'."}
	case len(req.Input) == 0 || string(req.Input) == "null":
		return parsed{}, &providers.InvalidRequestError{Param: "input", Code: "missing_required_parameter", Message: "Missing required parameter: 'input'."}
	case req.Input[0] != '"' && req.Input[0] != '[':
		return parsed{}, &providers.InvalidRequestError{Param: "input", Code: "invalid_type", Message: "'input' must be a string or an array."}
	case req.EncodingFormat != nil && *req.EncodingFormat != "float" && *req.EncodingFormat != "base64":
		return parsed{}, &providers.InvalidRequestError{Param: "encoding_format", Code: "invalid_value", Message: "'encoding_format' must be float or base64."}
	case req.Dimensions != nil && *req.Dimensions < 1:
		return parsed{}, &providers.InvalidRequestError{Param: "dimensions", Code: "invalid_value", Message: "'dimensions' must be an integer of at least 1."}
	}
	return parsed{req: &providers.ChatRequest{Model: *req.Model, Members: members}, whole: true,
		native: &providers.NativeRequest{Body: body, Members: members}}, nil
}

// embeddingsKnown are the members of OpenAI's embeddings API.
var embeddingsKnown = map[string]bool{"model": true, "input": true, "dimensions": true, "encoding_format": true, "user": true}

func (embeddingsDialect) unknown(x *exchange, _ bool) []string {
	var out []string
	for _, m := range x.native.Members {
		if !embeddingsKnown[m.Name] {
			out = append(out, m.Name)
		}
	}
	return sortedStrings(out)
}

func (embeddingsDialect) serves(m catalog.Model) bool { return m.Embeds() }

func (embeddingsDialect) translates() bool { return false }

func (embeddingsDialect) refuse(w http.ResponseWriter, r *response) { r.write(w) }

func (embeddingsDialect) answer(c *providers.Completion, _ bool, _ string) ([]byte, error) {
	return c.Body, nil
}

// startStream is never called: an embeddings request does not stream.
func (embeddingsDialect) startStream(w http.ResponseWriter, _ bool, _ string) streamOut {
	return chatStream{startEventStream(w)}
}
