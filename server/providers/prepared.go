package providers

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
}

// preparedAnthropic is the call's Messages request, translated by the
// route's check when it was for the same streaming.
func preparedAnthropic(call *Call, stream bool) (*anthropicRequest, bool, error) {
	if p := call.Prepared; p != nil && p.anthropic != nil && p.stream == stream {
		return p.anthropic, p.beta, nil
	}
	return translateAnthropic(call, stream)
}

// preparedGemini is the call's generateContent request.
func preparedGemini(call *Call) (*geminiRequest, error) {
	if p := call.Prepared; p != nil && p.gemini != nil {
		return p.gemini, nil
	}
	return translateGemini(call, false)
}

// preparedConverse is the call's Converse request.
func preparedConverse(call *Call) (*converseRequest, error) {
	if p := call.Prepared; p != nil && p.converse != nil {
		return p.converse, nil
	}
	return translateConverse(call, false)
}
