package providers

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/gw-gateway/gw/server/egress"
)

// countingConn counts the writes a connection is given: one Write is one
// write(2) on a TCP connection.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// An upstream request's headers and body leave in one write whenever the
// body fits the connection's write buffer, whatever pieces it was built
// from: a body net/http does not know is in memory is written after the
// headers are flushed apart, a second system call and segment a request.
func TestUpstreamRequestInOneWrite(t *testing.T) {
	var got [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, b)
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()

	client := NewGuardedHTTPClient(func() egress.Policy { return egress.Policy{} })
	tr := client.Transport.(*http.Transport)
	var writes atomic.Int64
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{Conn: c, writes: &writes}, nil
	}

	piece := func(n int, c byte) []byte { return bytes.Repeat([]byte{c}, n) }
	for _, tc := range []struct {
		name   string
		body   rope
		writes int64 // 0: not held, only the body's bytes
	}{
		{"none", nil, 1},
		{"one piece", rope{piece(200, 'a')}, 1},
		{"three pieces", rope{piece(100, 'a'), piece(10, 'b'), piece(60, 'c')}, 1},
		{"pieces filling most of the buffer", rope{piece(20<<10, 'a'), piece(8<<10, 'b')}, 1},
		{"pieces past the joined maximum", rope{piece(joinedBodyMax, 'a'), piece(100, 'b')}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := newRequest(context.Background(), "", srv.URL, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			before := writes.Load()
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if n := writes.Load() - before; tc.writes != 0 && n != tc.writes {
				t.Errorf("the request took %d writes, want %d", n, tc.writes)
			}
			want := bytes.Join(tc.body, nil)
			if last := got[len(got)-1]; !bytes.Equal(last, want) && !(len(last) == 0 && len(want) == 0) {
				t.Errorf("the upstream read %d bytes, want the %d sent", len(last), len(want))
			}
		})
	}
}
