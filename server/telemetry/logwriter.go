package telemetry

import (
	"io"
	"sync"
)

// DefaultLogBuffer bounds the log bytes a LogWriter holds before its
// writers wait for the output.
const DefaultLogBuffer = 1 << 20

// LogWriter is the access log's single writer. A request's handler
// formats its line (slog, into its own pooled buffer) and LogWriter.Write
// only copies it into a preallocated buffer; one goroutine writes what has
// gathered to the output, many lines per write, while requests go on.
// Writing to stderr from the request itself held every request behind a
// system call (and behind the pipe or terminal reading it), which showed
// in the tail at one connection.
//
// Nothing is dropped: when the output falls behind by max bytes, writers
// wait for it (a log that cannot keep up slows requests rather than losing
// lines). Two buffers are swapped, so in steady state nothing allocates.
// A line is in the output once the goroutine has written it, within the
// time of one write after Write returns; Close writes what is left.
type LogWriter struct {
	out io.Writer
	max int

	mu      sync.Mutex
	room    sync.Cond // signalled when the writer has taken the buffer
	buf     []byte    // lines gathered since the last write
	spare   []byte    // the buffer being written, or idle
	closed  bool
	wake    chan struct{}
	stopped chan struct{}
}

// NewLogWriter starts a writer to out holding at most max bytes
// (DefaultLogBuffer when max ≤ 0; a longer line is taken whole).
func NewLogWriter(out io.Writer, max int) *LogWriter {
	if max <= 0 {
		max = DefaultLogBuffer
	}
	w := &LogWriter{out: out, max: max, buf: make([]byte, 0, 64<<10), spare: make([]byte, 0, 64<<10),
		wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	w.room.L = &w.mu
	go w.loop()
	return w
}

// Write copies p to the buffer; after Close it writes p through.
func (w *LogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	for !w.closed && len(w.buf) > 0 && len(w.buf)+len(p) > w.max {
		w.room.Wait()
	}
	if w.closed {
		w.mu.Unlock()
		return w.out.Write(p)
	}
	w.buf = append(w.buf, p...)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default: // the writer is already due
	}
	return len(p), nil
}

func (w *LogWriter) loop() {
	defer close(w.stopped)
	for {
		<-w.wake
		for {
			w.mu.Lock()
			if len(w.buf) == 0 {
				closed := w.closed
				w.mu.Unlock()
				if closed {
					return
				}
				break
			}
			out := w.buf
			w.buf = w.spare[:0]
			w.room.Broadcast()
			w.mu.Unlock()
			// A failed write has nowhere to be reported but the log
			// itself: the lines are lost, as with a direct write.
			_, _ = w.out.Write(out)
			w.mu.Lock()
			w.spare = out[:0]
			w.mu.Unlock()
		}
	}
}

// Close writes what is buffered and makes later writes direct. Call it
// once, when the process's logging is done.
func (w *LogWriter) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.room.Broadcast()
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default: // a wake is pending: the writer will see closed
	}
	<-w.stopped
	return nil
}
