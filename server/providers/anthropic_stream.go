package providers

import (
	"encoding/json"
	"errors"
	"io"
	"time"
)

// anthropicStream translates a Messages event stream into
// chat.completion.chunk objects:
//
//	message_start                    → a chunk with the assistant role
//	content_block_start (tool_use)   → a tool call's id and name
//	content_block_delta text_delta   → content
//	content_block_delta input_json…  → a tool call's arguments, piece by piece
//	message_delta                    → the finish reason
//	message_stop                     → the usage chunk, if the client asked
//
// Thinking blocks and pings produce nothing.
type anthropicStream struct {
	// end is how it ended, for Close (closeStream).
	end  streamEnd
	body io.ReadCloser
	sse  eventReader
	call *Call

	id      string
	created int64
	usage   anthropicUsage
	// sawStart and sawDelta: message_start reported the input, and a
	// message_delta the output.
	sawStart, sawDelta bool
	relayed            relayed
	// tools maps a content block's index to its tool call's index among
	// the tool calls: OpenAI numbers tool calls, not content blocks.
	tools map[int]int
	done  bool
}

// eventReader yields a stream's events: server-sent events (sseReader),
// or Bedrock's event-stream messages carrying them (bedrockChunks).
type eventReader interface {
	next() (event string, data []byte, err error)
}

// anthropicEvent is any Messages stream event; each type fills its part.
type anthropicEvent struct {
	Type    string `json:"type"`
	Message *struct {
		ID    string       `json:"id"`
		Usage lenientUsage `json:"usage"`
	} `json:"message"`
	Index        int `json:"index"`
	ContentBlock *struct {
		Type string `json:"type"`
		ID   string `json:"id"`
		Name string `json:"name"`
		Text string `json:"text"`
	} `json:"content_block"`
	Delta *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		Thinking    string `json:"thinking"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *lenientUsage         `json:"usage"`
	Error *anthropicErrorObject `json:"error"`
}

// lenientUsage is a usage object in a stream event: one that does not
// read leaves the event whole and its usage unreported (ok false), so gw
// counts the tokens itself rather than failing the stream.
type lenientUsage struct {
	anthropicUsage
	ok bool
}

func (u *lenientUsage) UnmarshalJSON(b []byte) error {
	var v anthropicUsage
	if err := json.Unmarshal(b, &v); err == nil && !isNull(b) {
		u.anthropicUsage, u.ok = v, true
	}
	return nil
}

func (s *anthropicStream) Recv() ([]byte, error) { return s.end.note(s.recv()) }

func (s *anthropicStream) recv() ([]byte, error) {
	for !s.done {
		_, ev, err := nextAnthropicEvent(s.sse, s.call)
		if err != nil {
			s.done = true
			return nil, err
		}
		s.relayed.anthropicEvent(&ev)
		if out, ok := s.translate(&ev); ok {
			return out, nil
		}
	}
	return nil, io.EOF
}

// nextAnthropicEvent reads a Messages stream's next event. The stream's
// end before message_stop, an event that is not JSON and an error event
// come back as the *Error the caller ends the stream with.
func nextAnthropicEvent(sse eventReader, call *Call) ([]byte, anthropicEvent, error) {
	var ev anthropicEvent
	_, data, err := sse.next()
	if err != nil {
		if err == io.EOF {
			// A Messages stream always ends with message_stop; one that
			// ends before it was cut off.
			return nil, ev, &Error{Kind: Unavailable, Message: "the upstream stream ended before message_stop", Cause: ErrStreamTruncated}
		}
		var e *Error
		if errors.As(err, &e) {
			// An event source's own failure (a Bedrock exception).
			return nil, ev, e
		}
		return nil, ev, transportError(err)
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, ev, &Error{Kind: Unavailable, Message: "the upstream sent an event that is not JSON"}
	}
	if ev.Type == "error" {
		e := &Error{Kind: Unavailable}
		if ev.Error != nil {
			e.Kind = anthropicStreamKind(ev.Error.Type)
			ev.Error.fill(e, call.Secret)
		}
		return nil, ev, e
	}
	return data, ev, nil
}

// translate turns one event into a chunk, or reports that it yields none.
func (s *anthropicStream) translate(ev *anthropicEvent) ([]byte, bool) {
	switch ev.Type {
	case "message_start":
		return s.start(ev), true
	case "content_block_start":
		return s.blockStart(ev)
	case "content_block_delta":
		return s.blockDelta(ev)
	case "message_delta":
		return s.messageDelta(ev)
	case "message_stop":
		s.done = true
		if s.call.Request.IncludeUsage {
			u := s.Usage().chat()
			return mustMarshal(streamChunk{ID: s.id, Object: "chat.completion.chunk", Created: s.created,
				Model: s.call.ResponseModel, Choices: []chunkChoice{}, Usage: &u}), true
		}
	}
	return nil, false
}

// start notes the message's id and input usage, and opens the assistant
// turn.
func (s *anthropicStream) start(ev *anthropicEvent) []byte {
	if ev.Message != nil {
		s.id = ev.Message.ID
		s.usage, s.sawStart = ev.Message.Usage.anthropicUsage, ev.Message.Usage.ok
	}
	s.created = time.Now().Unix()
	empty := ""
	return s.chunk(chunkDelta{Role: "assistant", Content: &empty}, nil)
}

// blockStart opens a tool call (numbered in the order tools start) or
// relays a text block's first text.
func (s *anthropicStream) blockStart(ev *anthropicEvent) ([]byte, bool) {
	b := ev.ContentBlock
	switch {
	case b == nil:
	case b.Type == "tool_use":
		i := len(s.tools)
		s.tools[ev.Index] = i
		tc := chunkToolCall{Index: i, ID: b.ID, Type: "function"}
		tc.Function.Name = b.Name
		return s.chunk(chunkDelta{ToolCalls: []chunkToolCall{tc}}, nil), true
	case b.Type == "text" && b.Text != "":
		return s.chunk(chunkDelta{Content: &b.Text}, nil), true
	}
	return nil, false
}

// blockDelta relays text, and a tool call's arguments as they stream.
func (s *anthropicStream) blockDelta(ev *anthropicEvent) ([]byte, bool) {
	d := ev.Delta
	switch {
	case d == nil:
	case d.Type == "text_delta" && d.Text != "":
		return s.chunk(chunkDelta{Content: &d.Text}, nil), true
	case d.Type == "input_json_delta" && d.PartialJSON != "":
		i, ok := s.tools[ev.Index]
		if !ok {
			return nil, false
		}
		tc := chunkToolCall{Index: i}
		tc.Function.Arguments = d.PartialJSON
		return s.chunk(chunkDelta{ToolCalls: []chunkToolCall{tc}}, nil), true
	}
	return nil, false
}

// messageDelta notes the output usage and relays the stop reason.
func (s *anthropicStream) messageDelta(ev *anthropicEvent) ([]byte, bool) {
	if ev.Usage != nil && ev.Usage.ok {
		s.usage.merge(ev.Usage.anthropicUsage)
		s.sawDelta = true
	}
	if ev.Delta != nil && ev.Delta.StopReason != "" {
		reason := finishReason(ev.Delta.StopReason)
		return s.chunk(chunkDelta{}, &reason), true
	}
	return nil, false
}

func (s *anthropicStream) chunk(d chunkDelta, finish *string) []byte {
	return mustMarshal(streamChunk{
		ID: s.id, Object: "chat.completion.chunk", Created: s.created, Model: s.call.ResponseModel,
		Choices: []chunkChoice{{Delta: d, FinishReason: finish}},
	})
}

// Usage is what message_start and message_delta reported, completed by
// gw's count where they have not (yet).
func (s *anthropicStream) Usage() Usage {
	return anthropicStreamUsage(s.usage, s.sawStart, s.sawDelta, s.call, &s.relayed)
}

// anthropicStreamUsage is a Messages stream's usage so far: the input as
// message_start reported it, the output once a message_delta has, each
// estimated until then (message_start's output count is only the first
// token's).
func anthropicStreamUsage(u anthropicUsage, sawStart, sawDelta bool, call *Call, r *relayed) Usage {
	g := u.usage()
	g.InputReported, g.OutputReported = sawStart, sawDelta
	return estimate(r.checked(g), call, r)
}

// anthropicEvent keeps the text of a Messages stream event: text,
// thinking, a tool's name and its input as it streams.
func (r *relayed) anthropicEvent(ev *anthropicEvent) {
	if b := ev.ContentBlock; ev.Type == "content_block_start" && b != nil {
		r.add(b.Name, false)
		r.add(b.Text, false)
	}
	if d := ev.Delta; ev.Type == "content_block_delta" && d != nil {
		r.add(d.Text, false)
		r.add(d.PartialJSON, false)
		r.add(d.Thinking, true)
	}
}

func (s *anthropicStream) Close() error { return closeStream(s.body, s.end) }

// streamChunk is OpenAI's chat.completion.chunk.
type streamChunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *chatUsage    `json:"usage,omitempty"`
}

type chunkChoice struct {
	Index        int        `json:"index"`
	Delta        chunkDelta `json:"delta"`
	FinishReason *string    `json:"finish_reason"`
}

type chunkDelta struct {
	Role      string          `json:"role,omitempty"`
	Content   *string         `json:"content,omitempty"`
	ToolCalls []chunkToolCall `json:"tool_calls,omitempty"`
}

type chunkToolCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}
