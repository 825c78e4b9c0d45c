package dataplane

import (
	"encoding/json"
	"net/http"
)

// namedEvents writes server-sent events with an event name, as the
// Messages and Responses streams have them: the name is the payload's
// type member, which the SDKs dispatch on.
type namedEvents struct {
	*eventStream
	line []byte
}

func startNamedEvents(w http.ResponseWriter) *namedEvents {
	return &namedEvents{eventStream: startEventStream(w)}
}

// event writes one event; its name is read from the payload.
func (s *namedEvents) event(payload []byte) error {
	var head struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(payload, &head)
	s.line = append(append(append(append(append(s.line[:0], "event: "...), head.Type...), "\ndata: "...), payload...), "\n\n"...)
	if _, err := s.w.Write(s.line); err != nil {
		return err
	}
	return s.flush()
}

func (s *namedEvents) events(payloads [][]byte) error {
	for _, p := range payloads {
		if err := s.event(p); err != nil {
			return err
		}
	}
	return nil
}

// errorFields reads the OpenAI error object of a response gw built.
func errorFields(r *response) apiError {
	var body struct {
		Error apiError `json:"error"`
	}
	_ = json.Unmarshal(r.body, &body)
	return body.Error
}
