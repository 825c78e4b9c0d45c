package dataplane

import (
	"encoding/json"
	"net/http"
)

// namedEvents writes server-sent events with an event name, as the
// Messages and Responses streams have them: the name is the payload's
// type member, which the SDKs dispatch on. Events queue in the stream's
// buffer and leave together, as a chat stream's chunks do.
type namedEvents struct {
	*eventStream
}

func startNamedEvents(w http.ResponseWriter) *namedEvents {
	return &namedEvents{eventStream: startEventStream(w)}
}

// queue adds one event; its name is read from the payload.
func (s *namedEvents) queue(payload []byte) {
	var head struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(payload, &head)
	s.buf = append(append(append(append(append(s.buf, "event: "...), head.Type...), "\ndata: "...), payload...), "\n\n"...)
}

// event writes one event, with any queued before it.
func (s *namedEvents) event(payload []byte) error {
	s.queue(payload)
	return s.send()
}

// events writes payloads' events, with any queued before them; with more
// (the upstream's next event is already at hand) they only queue.
func (s *namedEvents) events(payloads [][]byte, more bool) error {
	for _, p := range payloads {
		s.queue(p)
	}
	if more {
		return nil
	}
	return s.send()
}

// comment queues an SSE comment line, which every parser skips.
func (s *namedEvents) comment(text string) {
	s.buf = append(append(append(s.buf, ": "...), text...), "\n\n"...)
}

// errorFields reads the OpenAI error object of a response gw built.
func errorFields(r *response) apiError {
	var body struct {
		Error apiError `json:"error"`
	}
	_ = json.Unmarshal(r.body, &body)
	return body.Error
}
