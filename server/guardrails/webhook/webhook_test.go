package webhook_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gw-gateway/gw/server/egress"
	"github.com/gw-gateway/gw/server/guardrails"
	"github.com/gw-gateway/gw/server/guardrails/webhook"
)

func loopback() egress.Policy {
	return egress.Policy{}.WithInstance(nil, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
}

func set(t *testing.T, url string, onErr guardrails.OnError) guardrails.Set {
	g, err := guardrails.Compile(guardrails.Spec{ID: "gr_w", Name: "hook", Stages: []guardrails.Stage{guardrails.StageInput},
		Detectors: []guardrails.DetectorSpec{{Kind: guardrails.KindWebhook, URL: url, TimeoutMS: 200}},
		Action:    guardrails.ActionRedact, OnError: onErr})
	if err != nil {
		t.Fatal(err)
	}
	return guardrails.Set{g}
}

// TestWebhookOverHTTP: a real server on 127.0.0.1 gets the text signed
// with the secret, and each failure mode (timeout, 500, garbage, slow)
// is honoured by on_error with the record saying errored.
func TestWebhookOverHTTP(t *testing.T) {
	var gotSig bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		gotSig = r.Header.Get(webhook.HeaderSignature) == webhook.Sign("s3cret", r.Header.Get(webhook.HeaderTimestamp), body)
		var b webhook.Body
		json.Unmarshal(body, &b)
		switch {
		case strings.Contains(b.Text, "slow"):
			time.Sleep(time.Second)
		case strings.Contains(b.Text, "fail"):
			w.WriteHeader(500)
			return
		case strings.Contains(b.Text, "garbage"):
			w.Write([]byte("<html>oops"))
			return
		}
		if i := strings.Index(b.Text, "Jane"); i >= 0 {
			json.NewEncoder(w).Encode(guardrails.HookAnswer{Action: "redact", Redactions: []guardrails.HookRedaction{{Start: i, End: i + 4, Type: "person"}}})
			return
		}
		w.Write([]byte(`{"action":"pass"}`))
	}))
	defer srv.Close()
	c := webhook.New(loopback, func(id string, i int) string { return "s3cret" })
	out, b, recs := guardrails.Check(context.Background(), set(t, srv.URL, guardrails.FailClosed), guardrails.StageInput, c, "hi Jane")
	if b != nil || out != "hi [REDACTED:person]" || recs[0].Outcome != guardrails.Redacted || !gotSig {
		t.Fatalf("%q %+v %+v sig=%v", out, b, recs, gotSig)
	}
	for _, text := range []string{"slow", "fail", "garbage"} {
		for _, mode := range []guardrails.OnError{guardrails.FailClosed, guardrails.FailOpen} {
			_, b, recs := guardrails.Check(context.Background(), set(t, srv.URL, mode), guardrails.StageInput, c, text)
			if recs[0].Outcome != guardrails.Errored || (mode == guardrails.FailClosed) != (b != nil) {
				t.Errorf("%s/%s: %+v %+v", text, mode, b, recs)
			}
		}
	}
	// The egress policy refuses what it refuses: the default policy
	// answers the same as unreachable for a metadata address.
	c2 := webhook.New(func() egress.Policy { return egress.Policy{} }, nil)
	_, b, recs = guardrails.Check(context.Background(), set(t, "http://169.254.169.254/x", guardrails.FailClosed), guardrails.StageInput, c2, "x")
	if b == nil || !b.Failed || recs[0].Outcome != guardrails.Errored {
		t.Fatalf("metadata address: %+v %+v", b, recs)
	}
}
