package dataplane_test

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gw-gateway/gw/server/store/storetest"
)

// A caller who leaves a stream half way is still charged: the gateway reads
// on to the upstream's last chunk, where OpenAI-kind upstreams put usage.
func TestAbandonedStreamIsStillCharged(t *testing.T) {
	e := newInfEnv(t, storetest.Open(t, storetest.SQLite))
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for i := 0; i < 20; i++ {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n")
			fl.Flush()
			time.Sleep(20 * time.Millisecond)
		}
		fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-mini\",\"choices\":[],\"usage\":{\"prompt_tokens\":1000,\"completion_tokens\":20,\"total_tokens\":1020}}\n\ndata: [DONE]\n\n")
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
	for i := 0; i < 3; i++ {
		if _, err := rd.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	resp.Body.Close() // the caller leaves after the first chunks

	ev := e.usage.wait(t, 1)[0]
	if ev.Status != "error" || ev.InputTokens != 1000 || ev.OutputTokens != 20 || ev.CostUSD == "0" {
		t.Fatalf("usage of an abandoned stream: %+v", ev)
	}
}
