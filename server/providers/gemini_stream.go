package providers

import (
	"encoding/json"
	"io"
)

// geminiStream translates streamGenerateContent's events (each a whole
// GenerateContentResponse holding the next parts) into chunks:
//
//	the first event            → a chunk with the assistant role
//	a text part                → content
//	a functionCall part        → a whole tool call (Gemini sends them whole)
//	a thought part             → nothing (counted as reasoning)
//	finishReason               → the finish reason
//	the end, after a finish    → the usage chunk, if the client asked
//
// The stream has no terminal event: it ends after the event with a
// finishReason, and one that ends before it was cut off.
type geminiStream struct {
	// end is how it ended, for Close (closeStream).
	end     streamEnd
	body    io.ReadCloser
	sse     *sseReader
	call    *Call
	out     chatOut
	queue   chunkQueue
	relayed relayed

	started, finished, done bool
	calls                   int
	usage                   geminiUsage
	sawUsage                bool
}

func newGeminiStream(body io.ReadCloser, call *Call) *geminiStream {
	return &geminiStream{body: body, sse: newSSEReader(body), call: call}
}

func (s *geminiStream) Recv() ([]byte, error) { return s.end.note(s.queue.drain(&s.done, s.next)) }

// next reads one event and queues its chunks.
func (s *geminiStream) next() error {
	_, data, err := s.sse.next()
	switch {
	case err == io.EOF && s.finished:
		s.done = true
		if s.call.Request.IncludeUsage {
			s.queue.push(s.out.usageChunk(s.Usage()))
		}
		return nil
	case err == io.EOF:
		return &Error{Kind: Unavailable, Message: "the upstream stream ended before its finish reason", Cause: ErrStreamTruncated}
	case err != nil:
		return transportError(err)
	}
	var r geminiResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return &Error{Kind: Unavailable, Message: "the upstream sent an event that is not a generateContent response"}
	}
	if r.Error != nil {
		e := &Error{}
		r.Error.fill(e, s.call)
		return e
	}
	if e := r.blocked(); e != nil {
		return e
	}
	s.translate(&r)
	return nil
}

func (s *geminiStream) translate(r *geminiResponse) {
	if !s.started {
		s.started = true
		s.out = newChatOut("chatcmpl-"+r.ResponseID, s.call.ResponseModel)
		s.queue.push(s.out.chunk(chunkDelta{Role: "assistant", Content: strPtr("")}, nil))
	}
	if r.UsageMetadata != nil && r.UsageMetadata.ok {
		s.usage, s.sawUsage = r.UsageMetadata.geminiUsage, true
	}
	if len(r.Candidates) == 0 {
		return
	}
	c := r.Candidates[0]
	if c.Content != nil {
		for _, p := range c.Content.Parts {
			s.part(p)
		}
	}
	if c.FinishReason != "" && !s.finished {
		s.finished = true
		s.queue.push(s.out.chunk(chunkDelta{}, strPtr(geminiFinish(c.FinishReason, s.calls > 0))))
	}
}

func (s *geminiStream) part(p geminiPart) {
	switch {
	case p.Thought:
		s.relayed.add(p.Text, true)
	case p.FunctionCall != nil:
		var a answer
		addGeminiPart(&a, p, s.calls)
		tc := chunkToolCall{Index: s.calls, ID: a.calls[0].ID, Type: "function"}
		tc.Function.Name, tc.Function.Arguments = a.calls[0].Function.Name, a.calls[0].Function.Arguments
		s.calls++
		s.relayed.add(tc.Function.Name, false)
		s.relayed.add(tc.Function.Arguments, false)
		s.queue.push(s.out.chunk(chunkDelta{ToolCalls: []chunkToolCall{tc}}, nil))
	case p.Text != "":
		s.relayed.add(p.Text, false)
		text := p.Text
		s.queue.push(s.out.chunk(chunkDelta{Content: &text}, nil))
	}
}

// Usage is the last usageMetadata: its input as soon as it comes, its
// output once the event with the finish reason has reported it.
func (s *geminiStream) Usage() Usage {
	u := s.usage.usage()
	u.InputReported = s.sawUsage
	u.OutputReported = s.sawUsage && s.finished
	return estimate(s.relayed.checked(u), s.call, &s.relayed)
}

func (s *geminiStream) Close() error { return closeStream(s.body, s.end) }
