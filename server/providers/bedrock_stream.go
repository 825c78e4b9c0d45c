package providers

import (
	"encoding/json"
	"errors"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// Bedrock streams answers in AWS's binary event-stream framing
// (application/vnd.amazon.eventstream): length-prefixed messages with
// typed headers and CRCs, decoded by the AWS SDK's eventstream package.
// A message's :message-type is event, exception or error; an event's
// :event-type names its payload, a JSON object.

// bedrockEvents reads a Bedrock event stream message by message.
type bedrockEvents struct {
	r    io.Reader
	dec  *eventstream.Decoder
	buf  []byte
	call *Call
}

func newBedrockEvents(r io.Reader, call *Call) *bedrockEvents {
	return &bedrockEvents{r: r, dec: eventstream.NewDecoder(), buf: make([]byte, 0, 8<<10), call: call}
}

// nextEvent returns the next event's type and payload; an exception or
// error message comes back as the *Error it is, the stream's end as
// io.EOF.
func (b *bedrockEvents) nextEvent() (string, []byte, error) {
	msg, err := b.dec.Decode(b.r, b.buf[:0])
	switch {
	case errors.Is(err, io.EOF):
		return "", nil, io.EOF
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "", nil, &Error{Kind: Unavailable, Message: "the upstream stream ended inside a message", Cause: ErrStreamTruncated}
	case err != nil:
		var checksum eventstream.ChecksumError
		var length eventstream.LengthError
		if errors.As(err, &checksum) || errors.As(err, &length) {
			return "", nil, &Error{Kind: Unavailable, Message: "the upstream sent an event-stream message that does not decode"}
		}
		return "", nil, transportError(err)
	}
	b.buf = msg.Payload[:0]
	switch header(msg, ":message-type") {
	case "exception":
		kind := header(msg, ":exception-type")
		e := &Error{Kind: bedrockErrorKind(kind, 0), Message: redact(awsMessage(msg.Payload), b.call.Secret)}
		return "", nil, e
	case "error":
		code := header(msg, ":error-code")
		return "", nil, &Error{Kind: bedrockErrorKind(code, 0), Message: redact(header(msg, ":error-message"), b.call.Secret)}
	}
	return header(msg, ":event-type"), msg.Payload, nil
}

func header(msg eventstream.Message, name string) string {
	v := msg.Headers.Get(name)
	if v == nil {
		return ""
	}
	return v.String()
}

// next makes an InvokeModelWithResponseStream stream an eventReader of
// the Anthropic events its chunks carry ({"bytes": base64 of the event}).
func (b *bedrockEvents) next() (string, []byte, error) {
	for {
		typ, payload, err := b.nextEvent()
		if err != nil {
			return "", nil, err
		}
		if typ != "chunk" {
			continue
		}
		var c struct {
			Bytes []byte `json:"bytes"`
		}
		if json.Unmarshal(payload, &c) != nil {
			return "", nil, &Error{Kind: Unavailable, Message: "the upstream sent a chunk that is not JSON"}
		}
		return "", c.Bytes, nil
	}
}

// converseEvent is any ConverseStream event's payload; each type fills
// its part.
type converseEvent struct {
	ContentBlockIndex int `json:"contentBlockIndex"`
	Start             *struct {
		ToolUse *struct {
			ToolUseID string `json:"toolUseId"`
			Name      string `json:"name"`
		} `json:"toolUse"`
	} `json:"start"`
	Delta *struct {
		Text    *string `json:"text"`
		ToolUse *struct {
			Input string `json:"input"`
		} `json:"toolUse"`
		ReasoningContent *struct {
			Text string `json:"text"`
		} `json:"reasoningContent"`
	} `json:"delta"`
	StopReason string                `json:"stopReason"`
	Usage      *lenientConverseUsage `json:"usage"`
}

// converseStream translates ConverseStream's events into chunks:
//
//	messageStart                  → a chunk with the assistant role
//	contentBlockStart (toolUse)   → a tool call's id and name
//	contentBlockDelta text        → content
//	contentBlockDelta toolUse     → a tool call's arguments, piece by piece
//	contentBlockDelta reasoning   → nothing (counted as reasoning)
//	messageStop                   → the finish reason
//	metadata                      → the usage (and the usage chunk)
//
// A structured-output call's arguments are the answer's content.
type converseStream struct {
	// end is how it ended, for Close (closeStream).
	end     streamEnd
	body    io.ReadCloser
	events  *bedrockEvents
	call    *Call
	out     chatOut
	queue   chunkQueue
	relayed relayed
	// tools maps a content block's index to its tool call's index, or to
	// -1 for the structured-output call.
	tools    map[int]int
	calls    int
	stopped  bool
	done     bool
	usage    converseUsage
	sawUsage bool
}

func newConverseStream(body io.ReadCloser, call *Call) *converseStream {
	return &converseStream{body: body, events: newBedrockEvents(body, call), call: call,
		out: newChatOut("", call.ResponseModel), tools: map[int]int{}}
}

func (s *converseStream) Recv() ([]byte, error) { return s.end.note(s.queue.drain(&s.done, s.next)) }

func (s *converseStream) next() error {
	typ, payload, err := s.events.nextEvent()
	switch {
	case err == io.EOF && s.stopped:
		// metadata may not come (a proxy that drops it); the answer
		// is whole, its output counted by gw.
		s.finish()
		return nil
	case err == io.EOF:
		return &Error{Kind: Unavailable, Message: "the upstream stream ended before messageStop", Cause: ErrStreamTruncated}
	case err != nil:
		return err
	}
	var ev converseEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return &Error{Kind: Unavailable, Message: "the upstream sent an event that is not JSON"}
	}
	s.translate(typ, &ev)
	return nil
}

func (s *converseStream) translate(typ string, ev *converseEvent) {
	switch typ {
	case "messageStart":
		s.queue.push(s.out.chunk(chunkDelta{Role: "assistant", Content: strPtr("")}, nil))
	case "contentBlockStart":
		s.start(ev)
	case "contentBlockDelta":
		s.delta(ev)
	case "messageStop":
		s.stopped = true
		reason := converseFinish(ev.StopReason)
		if reason == "tool_calls" && s.calls == 0 {
			reason = "stop"
		}
		s.queue.push(s.out.chunk(chunkDelta{}, &reason))
	case "metadata":
		if ev.Usage != nil && ev.Usage.ok {
			s.usage, s.sawUsage = ev.Usage.converseUsage, true
		}
		s.finish()
	}
}

func (s *converseStream) start(ev *converseEvent) {
	if ev.Start == nil || ev.Start.ToolUse == nil {
		return
	}
	tu := ev.Start.ToolUse
	if tu.Name == structuredTool {
		s.tools[ev.ContentBlockIndex] = -1
		return
	}
	i := s.calls
	s.calls++
	s.tools[ev.ContentBlockIndex] = i
	tc := chunkToolCall{Index: i, ID: tu.ToolUseID, Type: "function"}
	tc.Function.Name = tu.Name
	s.relayed.add(tu.Name, false)
	s.queue.push(s.out.chunk(chunkDelta{ToolCalls: []chunkToolCall{tc}}, nil))
}

func (s *converseStream) delta(ev *converseEvent) {
	d := ev.Delta
	switch {
	case d == nil:
	case d.Text != nil && *d.Text != "":
		s.relayed.add(*d.Text, false)
		s.queue.push(s.out.chunk(chunkDelta{Content: d.Text}, nil))
	case d.ToolUse != nil && d.ToolUse.Input != "":
		s.relayed.add(d.ToolUse.Input, false)
		i, ok := s.tools[ev.ContentBlockIndex]
		if !ok {
			return
		}
		if i < 0 {
			s.queue.push(s.out.chunk(chunkDelta{Content: &d.ToolUse.Input}, nil))
			return
		}
		tc := chunkToolCall{Index: i}
		tc.Function.Arguments = d.ToolUse.Input
		s.queue.push(s.out.chunk(chunkDelta{ToolCalls: []chunkToolCall{tc}}, nil))
	case d.ReasoningContent != nil:
		s.relayed.add(d.ReasoningContent.Text, true)
	}
}

// finish ends the stream after the usage chunk, if the client asked.
func (s *converseStream) finish() {
	s.done = true
	if s.call.Request.IncludeUsage {
		s.queue.push(s.out.usageChunk(s.Usage()))
	}
}

// Usage is metadata's usage, once it came, completed by gw's count.
func (s *converseStream) Usage() Usage {
	var u Usage
	if s.sawUsage {
		u = withReasoning(s.usage.usage().reported(), &s.relayed)
	}
	return estimate(s.relayed.checked(u), s.call, &s.relayed)
}

func (s *converseStream) Close() error { return closeStream(s.body, s.end) }
