package providers

import "encoding/json"

// Prepared is a route's request as its kind translated it, kept by the
// route's Check for the attempts that follow, so that a request is
// translated once per route rather than once in the check and again in
// every attempt (issue 29). The data plane holds one per route and hands
// it to each call of that route (Call.Prepared); a call without one
// translates as it sends. Translation reads only the request, the model
// and the output limits, which a route fixes, never the credential.
type Prepared struct {
	// anthropic is the Messages request (Anthropic, Vertex's Claude) for
	// a stream or not (stream), and whether it needs the beta.
	anthropic *anthropicRequest
	beta      bool
	stream    bool
	// gemini and converse do not depend on streaming: it is in the URL.
	gemini   *geminiRequest
	converse *converseRequest
	// body is the translation encoded for the upstream, by the first
	// attempt that sends it; every later attempt of the route sends the
	// same bytes (a route's kind, model and streaming are fixed, so its
	// encoding is too). translations and encodings count what was made,
	// which the table test holds at one per route.
	body         []byte
	translations int
	encodings    int
}

// encodeOnce is the request v encoded: the route's bytes when v is the
// route's prepared translation (kept), encoded by its first attempt.
func encodeOnce(call *Call, kept bool, v any) ([]byte, error) {
	if kept && call.Prepared.body != nil {
		return call.Prepared.body, nil
	}
	b, err := json.Marshal(v)
	if err == nil && kept {
		call.Prepared.body = b
		call.Prepared.encodings++
	}
	return b, err
}

// preparedAnthropic is the call's Messages request, translated by the
// route's check when it was for the same streaming.
// kept says it is the route's.
func preparedAnthropic(call *Call, stream bool) (req *anthropicRequest, beta, kept bool, err error) {
	if p := call.Prepared; p != nil && p.anthropic != nil && p.stream == stream {
		return p.anthropic, p.beta, true, nil
	}
	req, beta, err = translateAnthropic(call, stream)
	return req, beta, false, err
}

// preparedGemini is the call's generateContent request.
func preparedGemini(call *Call) (*geminiRequest, bool, error) {
	if p := call.Prepared; p != nil && p.gemini != nil {
		return p.gemini, true, nil
	}
	req, err := translateGemini(call, false)
	return req, false, err
}

// preparedConverse is the call's Converse request.
func preparedConverse(call *Call) (*converseRequest, bool, error) {
	if p := call.Prepared; p != nil && p.converse != nil {
		return p.converse, true, nil
	}
	req, err := translateConverse(call, false)
	return req, false, err
}
