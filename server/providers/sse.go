package providers

import (
	"bufio"
	"bytes"
	"io"
)

// maxSSELine bounds one line of an upstream event stream. Chunks are small;
// the bound only stops a broken upstream from growing a buffer forever.
const maxSSELine = 16 << 20

// sseReader reads server-sent events (the WHATWG event-stream format):
// "field: value" lines, data lines joined by newlines, a blank line ending
// an event, lines starting with ':' ignored.
type sseReader struct {
	sc    *bufio.Scanner
	event string
	data  bytes.Buffer
}

func newSSEReader(r io.Reader) *sseReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxSSELine)
	return &sseReader{sc: sc}
}

// next returns the next event's type and data. The data is valid until the
// following call. At the end of the stream it returns io.EOF, or the read
// error; an event cut off by the end of the stream is dropped, as the
// format says.
func (s *sseReader) next() (string, []byte, error) {
	s.event = ""
	s.data.Reset()
	hasData := false
	for s.sc.Scan() {
		line := s.sc.Bytes()
		if len(line) == 0 {
			if hasData {
				return s.event, s.data.Bytes(), nil
			}
			s.event = ""
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			s.event = string(value)
		case "data":
			if hasData {
				s.data.WriteByte('\n')
			}
			s.data.Write(value)
			hasData = true
		}
	}
	if err := s.sc.Err(); err != nil {
		return "", nil, err
	}
	return "", nil, io.EOF
}
