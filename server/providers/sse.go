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
// an event, lines starting with ':' ignored. It reads through a
// bufio.Reader rather than a Scanner so that it can tell (ready) whether
// a whole event is already buffered.
type sseReader struct {
	r     *bufio.Reader
	event string
	data  bytes.Buffer
	// long pieces together a line longer than r's buffer.
	long []byte
	err  error
}

// sseBuffer is the read buffer of a stream: net/http's own body reader
// is 4 KiB, and a chunk is a few hundred bytes, so a larger buffer only
// costs its zeroing on every stream (64 KiB was 5 % of gw's CPU a
// streamed request, issue 33); a longer line is pieced together in long.
const sseBuffer = 4 << 10

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, sseBuffer)}
}

// line returns the next line without its line ending, valid until the
// next call.
func (s *sseReader) line() ([]byte, error) {
	if s.err != nil {
		return nil, s.err
	}
	line, err := s.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		s.long = append(s.long[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = s.r.ReadSlice('\n')
			s.long = append(s.long, line...)
			if len(s.long) > maxSSELine {
				s.err = bufio.ErrTooLong
				return nil, s.err
			}
		}
		line = s.long
	}
	if err != nil {
		// The last line may end without a newline; it is still a line.
		s.err = err
		if len(line) == 0 {
			return nil, err
		}
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), nil
}

// next returns the next event's type and data. The data is valid until the
// following call. At the end of the stream it returns io.EOF, or the read
// error; an event cut off by the end of the stream is dropped, as the
// format says.
func (s *sseReader) next() (string, []byte, error) {
	s.event = ""
	s.data.Reset()
	hasData := false
	for {
		line, err := s.line()
		if err != nil {
			return "", nil, err
		}
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
}

// ready reports whether the buffer holds a whole event that next returns
// (a data line, through its blank line), so that next would return
// without reading. A block next skips (comments, a keep-alive, an event
// without data) does not count: the caller holds what it has while ready,
// and holding it over a keep-alive would keep it until the upstream's
// next event.
func (s *sseReader) ready() bool {
	b, _ := s.r.Peek(s.r.Buffered())
	data := false
	for len(b) > 0 {
		line, rest, whole := bytes.Cut(b, []byte("\n"))
		if !whole {
			return false // an unfinished line: the rest is not here yet
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) == 0 {
			if data {
				return true
			}
		} else if field, _, _ := bytes.Cut(line, []byte(":")); string(field) == "data" {
			data = true
		}
		b = rest
	}
	return false
}
