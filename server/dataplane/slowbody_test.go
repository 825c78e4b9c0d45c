package dataplane_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// TestSlowInferenceBodyIsCut: a caller that trickles its body holds the
// connection no longer than the body read timeout: with a valid key it
// gets a 408; with a wrong one, the 401 is not held back while net/http
// drains the body.
func TestSlowInferenceBodyIsCut(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, func(o *dataplane.Options) { o.BodyReadTimeout = 300 * time.Millisecond })
		e.sync(t)
		for token, want := range map[string]int{e.token: http.StatusRequestTimeout, "sk-gw-wrong": http.StatusUnauthorized} {
			slowBody(t, e.srv.URL, token, want)
		}
	})
}

func slowBody(t *testing.T, url, token string, want int) {
	t.Helper()
	{
		conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		start := time.Now()
		fmt.Fprintf(conn, "POST /inf/v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", token)
		go func() {
			for range 20 {
				time.Sleep(200 * time.Millisecond)
				if _, err := conn.Write([]byte(" ")); err != nil {
					return
				}
			}
		}()
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if took := time.Since(start); resp.StatusCode != want || took > 3*time.Second {
			t.Fatalf("slow body: %d after %v, want %d", resp.StatusCode, took, want)
		}
	}
}
