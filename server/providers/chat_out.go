package providers

import (
	"encoding/json"
	"io"
	"strconv"
	"time"
)

// chatOut builds the OpenAI answers of the adapters that translate an
// upstream's own protocol: a chat.completion, or a stream's chunks, with
// the call's model id.
type chatOut struct {
	id      string
	created int64
	model   string
}

func newChatOut(id, model string) chatOut {
	if id == "" {
		id = "chatcmpl-gw" + strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	return chatOut{id: id, created: time.Now().Unix(), model: model}
}

func (c chatOut) chunk(d chunkDelta, finish *string) []byte {
	return mustMarshal(streamChunk{ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: c.model,
		Choices: []chunkChoice{{Delta: d, FinishReason: finish}}})
}

// usageChunk is the last chunk of a stream whose client asked for usage.
func (c chatOut) usageChunk(u Usage) []byte {
	cu := u.chat()
	return mustMarshal(streamChunk{ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: c.model,
		Choices: []chunkChoice{}, Usage: &cu})
}

// answer is a translated non-streaming answer's content.
type answer struct {
	text    string
	hasText bool
	calls   []responseToolCall
	finish  string
}

func (a *answer) addText(s string) {
	a.text += s
	a.hasText = true
}

func (a *answer) addCall(id, name, arguments string) {
	tc := responseToolCall{ID: id, Type: "function"}
	tc.Function.Name, tc.Function.Arguments = name, arguments
	a.calls = append(a.calls, tc)
}

// completion encodes the answer as a chat.completion with usage u.
func (c chatOut) completion(a answer, u Usage) ([]byte, error) {
	out := chatCompletion{ID: c.id, Object: "chat.completion", Created: c.created, Model: c.model,
		Choices: []completionChoice{{Message: completionMessage{Role: "assistant", ToolCalls: a.calls}, FinishReason: a.finish}},
		Usage:   u.chat()}
	if a.hasText || len(a.calls) == 0 {
		text := a.text
		out.Choices[0].Message.Content = &text
	}
	body, err := json.Marshal(out)
	if err != nil {
		return nil, &Error{Kind: Unavailable, Message: "encoding the answer failed", Cause: err}
	}
	return body, nil
}

// chunkQueue holds the chunks one upstream event produced, for Recv to
// hand out one at a time.
type chunkQueue struct{ pending [][]byte }

func (q *chunkQueue) push(b []byte) { q.pending = append(q.pending, b) }

func (q *chunkQueue) pop() ([]byte, bool) {
	if len(q.pending) == 0 {
		return nil, false
	}
	b := q.pending[0]
	q.pending = q.pending[1:]
	return b, true
}

// drain is Recv for a stream that translates: it hands out the queued
// chunks, reading the next upstream event with next when none is queued,
// until *done; an error from next ends the stream.
func (q *chunkQueue) drain(done *bool, next func() error) ([]byte, error) {
	for {
		if b, ok := q.pop(); ok {
			return b, nil
		}
		if *done {
			return nil, io.EOF
		}
		if err := next(); err != nil {
			*done = true
			return nil, err
		}
	}
}

func strPtr(s string) *string { return &s }
