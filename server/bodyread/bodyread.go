// Package bodyread reads an HTTP body whole into one buffer of its
// declared length. io.ReadAll starts at 512 bytes and grows by copying: a
// data plane's batch of usage events (a megabyte) was allocated twice its
// size in 24 pieces, an upstream's answer of a few KB four or five times
// (issue 33, seventeenth and eighteenth rounds). Both the management API's
// request bodies and the providers' answers are read here, on the hot
// path, so it stands alone.
package bodyread

import (
	"errors"
	"io"
)

// ErrTooLarge is Read's refusal of a body longer than its limit.
var ErrTooLarge = errors.New("the body exceeds its limit")

// Read reads r to its end, as io.ReadAll does, into one buffer of the
// declared length (a Content-Length; below 0 when unknown), at most ahead
// bytes beyond what has been read: a sender may declare a length and send
// nothing. A body longer than declared still reads whole. With limit > 0,
// a body of more than limit bytes is refused with ErrTooLarge, unread when
// its declared length is already over it; with limit 0 the caller's reader
// keeps the limit (http.MaxBytesReader). A reader's error is returned with
// the bytes read before it.
func Read(r io.Reader, declared int64, ahead, limit int) ([]byte, error) {
	if limit > 0 && declared > int64(limit) {
		return nil, ErrTooLarge
	}
	size := 512 // io.ReadAll's first
	if declared >= 0 {
		// One byte more: the read that finds the end needs room.
		size = int(min(declared, int64(ahead))) + 1
	}
	b := make([]byte, 0, size)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		end := cap(b)
		if limit > 0 {
			end = min(end, limit+1)
		}
		n, err := r.Read(b[len(b):end])
		if b = b[:len(b)+n]; limit > 0 && len(b) > limit {
			return nil, ErrTooLarge
		}
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}
