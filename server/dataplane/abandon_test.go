package dataplane_test

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gw-gateway/gw/server/store/storetest"
)

// A caller who leaves a stream half way is still charged, and the
// gateway stops the upstream at once rather than reading on: the event is
// an error, client_gone, with the tokens gw counted (the request it sent,
// the chunks it relayed), and the upstream sees its caller go.
func TestAbandonedStreamIsStillCharged(t *testing.T) {
	e := newInfEnv(t, storetest.Open(t, storetest.SQLite))
	upstreamLeft := make(chan bool, 1)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for i := 0; i < 200; i++ {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n")
			fl.Flush()
			select {
			case <-r.Context().Done():
				upstreamLeft <- true
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		upstreamLeft <- false
		fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-mini\",\"choices\":[],\"usage\":{\"prompt_tokens\":1000,\"completion_tokens\":200,\"total_tokens\":1200}}\n\ndata: [DONE]\n\n")
		fl.Flush()
	}))
	defer slow.Close()
	e.credential(t, &e.org.ID, &e.ws, "openai", "sk-slow-upstream-secret-1234", slow.URL+"/v1")
	e.sync(t)

	resp := e.post(t, `{"model":"`+gptMini+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	rd := bufio.NewReader(resp.Body)
	read := 0 // chunks of one "x" token each the caller received
	for read < 10 {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, `"content":"x"`) {
			read++
		}
	}
	resp.Body.Close() // the caller leaves after ten chunks

	if !<-upstreamLeft {
		t.Fatal("the gateway read the abandoned stream to its end")
	}
	ev := e.usage.wait(t, 1)[0]
	if ev.Status != "error" || deref(ev.Reason) != "client_gone" || ev.UsageSource != "estimated" ||
		ev.InputTokens < 2 || ev.OutputTokens < int64(read) || ev.CostUSD == "0" {
		t.Fatalf("usage of an abandoned stream: %+v", ev)
	}
}
