package providers

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// The Gemini API and Bedrock embed in shapes of their own; these adapters
// translate OpenAI's embeddings request to them and the vectors back into
// OpenAI's list, so a client of /inf/v1/embeddings sees one shape.

// maxEmbeddingInputs bounds the inputs of one translated request: Bedrock's
// Titan takes one text a call, and the Gemini API a hundred a batch.
const maxEmbeddingInputs = 100

// embeddingsRequest is what the translated adapters read of OpenAI's
// embeddings request.
type embeddingsRequest struct {
	inputs     []string
	dimensions int64
	base64     bool
}

func readEmbeddingsRequest(call *Call) (embeddingsRequest, error) {
	var r embeddingsRequest
	raw := call.Native.Members.Value("input")
	var one string
	if json.Unmarshal(raw, &one) == nil {
		r.inputs = []string{one}
	} else if json.Unmarshal(raw, &r.inputs) != nil {
		return r, invalid("input", "unsupported_value", "This model takes 'input' as a string or an array of strings, not token arrays.")
	}
	if len(r.inputs) == 0 || len(r.inputs) > maxEmbeddingInputs {
		return r, invalid("input", "invalid_value", "This model takes 1 to %d inputs a request.", maxEmbeddingInputs)
	}
	if d, ok := call.Native.Members.Get("dimensions"); ok && !isNull(d) {
		_ = json.Unmarshal(d, &r.dimensions) // checked by the data plane
	}
	var format string
	_ = json.Unmarshal(call.Native.Members.Value("encoding_format"), &format)
	r.base64 = format == "base64"
	return r, nil
}

// embeddingsList is OpenAI's answer: the vectors in order, floats or
// base64 of little-endian float32s, with the input count.
func embeddingsList(call *Call, req embeddingsRequest, vectors [][]float64, u Usage) *Completion {
	type item struct {
		Object    string `json:"object"`
		Index     int    `json:"index"`
		Embedding any    `json:"embedding"`
	}
	data := make([]item, len(vectors))
	for i, v := range vectors {
		data[i] = item{Object: "embedding", Index: i, Embedding: v}
		if req.base64 {
			buf := make([]byte, 4*len(v))
			for j, f := range v {
				binary.LittleEndian.PutUint32(buf[4*j:], math.Float32bits(float32(f)))
			}
			data[i].Embedding = base64.StdEncoding.EncodeToString(buf)
		}
	}
	u.OutputReported = true
	u = estimate(u, call, noOutput)
	body := mustMarshal(map[string]any{"object": "list", "data": data, "model": call.ResponseModel,
		"usage": map[string]int64{"prompt_tokens": u.InputTokens, "total_tokens": u.InputTokens}})
	return &Completion{Body: body, Usage: u}
}

// GeminiEmbeddings embeds through the Gemini API's batchEmbedContents.
// The API reports no token count, so gw counts the input.
type GeminiEmbeddings struct {
	Client *http.Client
}

// Check reads the request as Gemini takes it.
func (a *GeminiEmbeddings) Check(call *Call, _ bool) error {
	_, err := readEmbeddingsRequest(call)
	return err
}

// Complete implements Adapter.
func (a *GeminiEmbeddings) Complete(ctx context.Context, call *Call) (*Completion, error) {
	req, err := readEmbeddingsRequest(call)
	if err != nil {
		return nil, err
	}
	model := "models/" + call.UpstreamModel
	type request struct {
		Model   string        `json:"model"`
		Content geminiContent `json:"content"`
		Dims    int64         `json:"outputDimensionality,omitempty"`
	}
	batch := struct {
		Requests []request `json:"requests"`
	}{}
	for _, in := range req.inputs {
		batch.Requests = append(batch.Requests, request{Model: model, Content: geminiContent{Parts: []geminiPart{{Text: in}}}, Dims: req.dimensions})
	}
	u := trimBase(call.BaseURL) + "/models/" + url.PathEscape(call.UpstreamModel) + ":batchEmbedContents"
	resp, err := send(ctx, a.Client, call, upstreamPost{url: u, body: rope{mustMarshal(batch)},
		authorize: googleKey, refusal: googleStatusError})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := readAnswer(resp.Body, resp.ContentLength)
	if err != nil {
		return nil, transportError(err)
	}
	var answer struct {
		Embeddings []struct {
			Values []float64 `json:"values"`
		} `json:"embeddings"`
	}
	if json.Unmarshal(raw, &answer) != nil || len(answer.Embeddings) != len(req.inputs) {
		return nil, &Error{Kind: Unavailable, Status: resp.StatusCode, Message: "the upstream's answer is not one embedding per input"}
	}
	vectors := make([][]float64, len(answer.Embeddings))
	for i, e := range answer.Embeddings {
		vectors[i] = e.Values
	}
	return embeddingsList(call, req, vectors, Usage{}), nil
}

// Stream is never called: embeddings do not stream.
func (a *GeminiEmbeddings) Stream(context.Context, *Call) (ChunkStream, error) {
	return nil, invalid("stream", "unsupported_parameter", "Embeddings do not stream.")
}

// BedrockEmbeddings embeds through InvokeModel with Amazon Titan Text
// Embeddings' body, one call per input (Titan takes one text a call), and
// sums the input counts it reports.
type BedrockEmbeddings struct {
	Bedrock *Bedrock
}

// Check reads the request as Titan takes it.
func (a *BedrockEmbeddings) Check(call *Call, _ bool) error {
	if !strings.HasPrefix(call.UpstreamModel, "amazon.titan-embed") {
		return invalid("model", "unsupported_model", "gw embeds through Bedrock with Amazon Titan Text Embeddings models.")
	}
	_, err := readEmbeddingsRequest(call)
	return err
}

// Complete implements Adapter.
func (a *BedrockEmbeddings) Complete(ctx context.Context, call *Call) (*Completion, error) {
	if err := a.Check(call, false); err != nil {
		return nil, err
	}
	req, _ := readEmbeddingsRequest(call)
	vectors := make([][]float64, len(req.inputs))
	var u Usage
	u.InputReported = true
	for i, in := range req.inputs {
		body := map[string]any{"inputText": in}
		if req.dimensions > 0 {
			body["dimensions"] = req.dimensions
		}
		resp, err := a.Bedrock.post(ctx, call, "/invoke", mustMarshal(body))
		if err != nil {
			return nil, err
		}
		raw, err := readAnswer(resp.Body, resp.ContentLength)
		resp.Body.Close()
		if err != nil {
			return nil, transportError(err)
		}
		var answer struct {
			Embedding  []float64 `json:"embedding"`
			InputCount *int64    `json:"inputTextTokenCount"`
		}
		if json.Unmarshal(raw, &answer) != nil || answer.Embedding == nil {
			return nil, &Error{Kind: Unavailable, Message: "the upstream's answer to input " + strconv.Itoa(i) + " is not an embedding"}
		}
		vectors[i] = answer.Embedding
		if answer.InputCount == nil {
			u.InputReported = false
		} else {
			u.InputTokens = clampCount(u.InputTokens + clampCount(*answer.InputCount))
		}
	}
	return embeddingsList(call, req, vectors, u), nil
}

// Stream is never called: embeddings do not stream.
func (a *BedrockEmbeddings) Stream(context.Context, *Call) (ChunkStream, error) {
	return nil, invalid("stream", "unsupported_parameter", "Embeddings do not stream.")
}
