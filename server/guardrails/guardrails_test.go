package guardrails

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// Test values: published examples (AWS's documented example key, test
// card numbers, the IBAN registry's examples), none of them live.
const (
	awsKey    = "AKIAIOSFODNN7EXAMPLE"
	ghToken   = "ghp_0123456789abcdefghijABCDEFGHIJ012345"
	slackTok  = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
	openaiKey = "sk-proj-Abcdefghij0123456789_KLMNOPqrst-uvwxyz"
	antKey    = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-abcdefghij"
	jwt       = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
	pemKey    = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\nVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n-----END RSA PRIVATE KEY-----"
	card      = "4111 1111 1111 1111"
	iban      = "GB82 WEST 1234 5698 7654 32"
	ssn       = "123-45-6789"
)

func types(ms []Match) []string {
	var out []string
	for _, m := range merge(ms) {
		out = append(out, m.Type)
	}
	return out
}

func find(t *testing.T, d DetectorSpec, text string) []string {
	t.Helper()
	fs, err := compileLocal(d)
	if err != nil {
		t.Fatal(err)
	}
	var ms []Match
	for _, f := range fs {
		ms = f(text, ms)
	}
	return types(ms)
}

func TestDetectors(t *testing.T) {
	pii := func(ts ...string) DetectorSpec { return DetectorSpec{Kind: KindPII, Types: ts} }
	secrets := DetectorSpec{Kind: KindSecrets}
	cases := []struct {
		name string
		d    DetectorSpec
		text string
		want string
	}{
		{"email", pii(PIIEmail), "write to jane.doe+x@mail.example.co.uk today", "email"},
		{"email none", pii(PIIEmail), "user at example dot com, a@b", ""},
		{"phone intl", pii(PIIPhone), "call +44 20 7946 0958 now", "phone"},
		{"phone nanp", pii(PIIPhone), "call (415) 555-0132 now", "phone"},
		{"phone too short", pii(PIIPhone), "version +1 2 3", ""},
		{"card spaced", pii(PIICreditCard), "card " + card + " exp 12/30", "credit_card"},
		{"card dashed", pii(PIICreditCard), "5500-0000-0000-0004", "credit_card"},
		{"card plain", pii(PIICreditCard), "378282246310005", "credit_card"},
		{"card bad luhn", pii(PIICreditCard), "4111 1111 1111 1112", ""},
		{"card inside longer number", pii(PIICreditCard), "order 94111111111111111199", ""},
		{"iban", pii(PIIIBAN), "pay to " + iban + " please", "iban"},
		{"iban compact", pii(PIIIBAN), "DE89370400440532013000", "iban"},
		{"iban bad check", pii(PIIIBAN), "DE89370400440532013001", ""},
		{"ssn", pii(PIIUSSSN), "ssn " + ssn + ".", "us_ssn"},
		{"ssn invalid area", pii(PIIUSSSN), "ssn 666-45-6789", ""},
		{"ssn inside", pii(PIIUSSSN), "id 1123-45-67890", ""},
		{"ipv4", pii(PIIIPAddress), "host 203.0.113.7 is up", "ip_address"},
		{"ipv4 not", pii(PIIIPAddress), "version 1.2.3.999", ""},
		{"ipv6", pii(PIIIPAddress), "at 2001:db8::1 now", "ip_address"},
		{"time is not ipv6", pii(PIIIPAddress), "at 12:30 today", ""},
		{"aws", secrets, "key=" + awsKey, "aws_access_key"},
		{"aws inside word", secrets, "X" + awsKey + "Y", ""},
		{"github", secrets, "token " + ghToken, "github_token"},
		{"slack", secrets, "slack: " + slackTok, "slack_token"},
		{"openai", secrets, "OPENAI_API_KEY=" + openaiKey, "openai_api_key"},
		{"anthropic", secrets, "x-api-key: " + antKey, "anthropic_api_key"},
		{"short sk is not a key", secrets, "the sk-learn docs", ""},
		{"jwt", secrets, "Bearer " + jwt, "jwt"},
		{"pem", secrets, "here:\n" + pemKey + "\nend", "private_key"},
		{"public key is not", secrets, "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----", ""},
		{"regex", DetectorSpec{Kind: KindRegex, Patterns: []string{`PRJ-[0-9]{4}`}}, "ticket PRJ-1234", "regex"},
		{"keywords", DetectorSpec{Kind: KindKeywords, Words: []string{"Project Falcon"}}, "about project FALCON, ok", "keyword"},
		{"keywords boundary", DetectorSpec{Kind: KindKeywords, Words: []string{"cat"}}, "concatenate the catalog", ""},
		{"keywords boundary unicode", DetectorSpec{Kind: KindKeywords, Words: []string{"élan"}}, "un élan vital; sélan", "keyword"},
		{"keywords then later", DetectorSpec{Kind: KindKeywords, Words: []string{"cat"}}, "concat cat", "keyword"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := strings.Join(find(t, c.d, c.text), ",")
			if got != c.want {
				t.Errorf("%q: found %q, want %q", c.text, got, c.want)
			}
		})
	}
}

func TestChecksums(t *testing.T) {
	for s, want := range map[string]bool{"4111111111111111": true, "4111111111111112": false, "79927398713": true, "": false} {
		if Luhn(s) != want {
			t.Errorf("Luhn(%q) != %v", s, want)
		}
	}
	for s, want := range map[string]bool{"GB82WEST12345698765432": true, "GB82 WEST 1234 5698 7654 32": true, "GB83WEST12345698765432": false, "FR1420041010050500013M02606": true, "XX00": false} {
		if IBANValid(s) != want {
			t.Errorf("IBANValid(%q) != %v", s, want)
		}
	}
}

func spec(action Action, onErr OnError, ds ...DetectorSpec) Spec {
	return Spec{ID: "gr_1", Name: "no-secrets", Stages: []Stage{StageInput, StageOutput}, Detectors: ds, Action: action, OnError: onErr}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name  string
		spec  Spec
		field string
		msg   string
	}{
		{"ok", spec(ActionBlock, FailClosed, DetectorSpec{Kind: KindSecrets}), "", ""},
		{"bad regex", spec(ActionBlock, FailClosed, DetectorSpec{Kind: KindRegex, Patterns: []string{"ok", "a(b"}}), "detectors[0].patterns[1]", "missing closing )"},
		{"backref is not RE2", spec(ActionBlock, FailClosed, DetectorSpec{Kind: KindRegex, Patterns: []string{`(a)\1`}}), "detectors[0].patterns[0]", "does not compile"},
		{"empty match", spec(ActionBlock, FailClosed, DetectorSpec{Kind: KindRegex, Patterns: []string{`a*`}}), "detectors[0].patterns[0]", "empty string"},
		{"webhook not http", spec(ActionBlock, FailClosed, DetectorSpec{Kind: KindWebhook, URL: "ftp://x"}), "detectors[0].url", "http"},
		{"webhook timeout", spec(ActionBlock, FailClosed, DetectorSpec{Kind: KindWebhook, URL: "https://x", TimeoutMS: 60000}), "detectors[0].timeout_ms", ""},
		{"pii type", spec(ActionBlock, FailClosed, DetectorSpec{Kind: KindPII, Types: []string{"email", "dna"}}), "detectors[0].types[1]", ""},
		{"kind", spec(ActionBlock, FailClosed, DetectorSpec{Kind: "magic"}), "detectors[0].kind", ""},
		{"field of other kind", spec(ActionBlock, FailClosed, DetectorSpec{Kind: KindSecrets, Words: []string{"x"}}), "detectors[0].words", ""},
		{"action", spec("drop", FailClosed, DetectorSpec{Kind: KindSecrets}), "action", ""},
		{"on_error", spec(ActionBlock, "maybe", DetectorSpec{Kind: KindSecrets}), "on_error", ""},
		{"no detectors", spec(ActionBlock, FailClosed), "detectors", ""},
		{"stage", Spec{Stages: []Stage{"middle"}, Detectors: []DetectorSpec{{Kind: KindSecrets}}, Action: ActionBlock, OnError: FailOpen}, "stages[0]", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ps := Validate(c.spec)
			if c.field == "" {
				if len(ps) > 0 {
					t.Fatalf("problems %v", ps)
				}
				return
			}
			if len(ps) == 0 || ps[0].Field != c.field || !strings.Contains(ps[0].Message, c.msg) {
				t.Fatalf("problems %v, want %s (%s)", ps, c.field, c.msg)
			}
		})
	}
}

type hookFunc func(ctx context.Context, req HookRequest) ([]byte, error)

func (f hookFunc) Call(ctx context.Context, req HookRequest) ([]byte, error) { return f(ctx, req) }

func mustSet(t testing.TB, specs ...Spec) Set {
	t.Helper()
	var s Set
	for _, sp := range specs {
		g, err := Compile(sp)
		if err != nil {
			t.Fatal(err)
		}
		s = append(s, g)
	}
	return s
}

func TestRunActions(t *testing.T) {
	secrets := DetectorSpec{Kind: KindSecrets}
	pii := DetectorSpec{Kind: KindPII, Types: []string{PIIEmail, PIICreditCard}}
	ctx := context.Background()
	text := "my key is " + awsKey + " and mail a@example.com"

	out, b, recs := Check(ctx, mustSet(t, spec(ActionRedact, FailClosed, secrets, pii)), StageInput, nil, text)
	if b != nil || out != "my key is [REDACTED:aws_access_key] and mail [REDACTED:email]" {
		t.Fatalf("redact: %q %v", out, b)
	}
	if recs[0].Outcome != Redacted || strings.Join(recs[0].Detectors, ",") != "secrets,pii" {
		t.Fatalf("records %+v", recs)
	}

	out, b, recs = Check(ctx, mustSet(t, spec(ActionBlock, FailClosed, pii, secrets)), StageInput, nil, text)
	if b == nil || out != "" || b.Detector != KindSecrets || b.Type != "aws_access_key" || recs[0].Outcome != Blocked {
		t.Fatalf("block: %q %+v %+v", out, b, recs)
	}
	if want := `the request was blocked by guardrail "no-secrets" (detector secrets: aws_access_key)`; b.Message() != want {
		t.Fatalf("message %q", b.Message())
	}

	out, b, recs = Check(ctx, mustSet(t, spec(ActionFlag, FailClosed, secrets)), StageInput, nil, text)
	if b != nil || out != text || recs[0].Outcome != Flagged {
		t.Fatalf("flag: %q %+v %+v", out, b, recs)
	}

	out, _, recs = Check(ctx, mustSet(t, spec(ActionBlock, FailClosed, secrets)), StageInput, nil, "nothing here")
	if out != "nothing here" || recs[0].Outcome != Passed || recs[0].Detectors != nil {
		t.Fatalf("pass: %+v", recs)
	}

	// Only the guardrails of the stage run.
	in := spec(ActionBlock, FailClosed, secrets)
	in.Stages = []Stage{StageOutput}
	if _, b, recs := Check(ctx, mustSet(t, in), StageInput, nil, text); b != nil || recs != nil {
		t.Fatalf("output-only guardrail ran at input: %+v", recs)
	}
}

func TestRunSkipRanks(t *testing.T) {
	r := NewRun(mustSet(t, spec(ActionRedact, FailClosed, DetectorSpec{Kind: KindSecrets})), StageInput, nil)
	r.Text(context.Background(), "hello")
	r.Skip()
	if o := r.Records()[0].Outcome; o != Skipped {
		t.Fatalf("text passed, image skipped: %s, want skipped", o)
	}
	r.Text(context.Background(), awsKey)
	if o := r.Records()[0].Outcome; o != Redacted {
		t.Fatalf("redacted after skipped: %s", o)
	}
}

// TestWebhookFailures is the on_error column of the conformance table:
// a webhook that times out, answers 500, answers garbage or is too slow
// blocks under fail_closed and passes under fail_open, and either way the
// record says errored.
func TestWebhookFailures(t *testing.T) {
	hook := DetectorSpec{Kind: KindWebhook, URL: "https://hook.example/check", TimeoutMS: 50}
	failures := map[string]Hook{
		"timeout": hookFunc(func(ctx context.Context, _ HookRequest) ([]byte, error) { return nil, context.DeadlineExceeded }),
		"500":     hookFunc(func(context.Context, HookRequest) ([]byte, error) { return nil, &HookError{Reason: "status 500"} }),
		"garbage": hookFunc(func(context.Context, HookRequest) ([]byte, error) { return []byte(`<html>`), nil }),
		"bad action": hookFunc(func(context.Context, HookRequest) ([]byte, error) {
			return []byte(`{"action":"maybe"}`), nil
		}),
		"span out of text": hookFunc(func(context.Context, HookRequest) ([]byte, error) {
			return []byte(`{"action":"redact","redactions":[{"start":0,"end":999,"type":"x"}]}`), nil
		}),
		"leaky error": hookFunc(func(context.Context, HookRequest) ([]byte, error) {
			return nil, errors.New("dial failed while sending " + awsKey)
		}),
	}
	for name, h := range failures {
		for _, mode := range []OnError{FailClosed, FailOpen} {
			t.Run(name+"/"+string(mode), func(t *testing.T) {
				out, b, recs := Check(context.Background(), mustSet(t, spec(ActionBlock, mode, hook)), StageInput, h, "secret "+awsKey)
				if recs[0].Outcome != Errored || recs[0].Detectors[0] != KindWebhook {
					t.Fatalf("record %+v", recs)
				}
				if mode == FailClosed && (b == nil || !b.Failed || out != "") {
					t.Fatalf("fail_closed let it through: %q %+v", out, b)
				}
				if mode == FailOpen && (b != nil || out == "") {
					t.Fatalf("fail_open blocked: %+v", b)
				}
				if b != nil && strings.Contains(b.Message(), awsKey) {
					t.Fatalf("refusal leaks: %s", b.Message())
				}
			})
		}
	}
}

func TestWebhookAnswers(t *testing.T) {
	hook := DetectorSpec{Kind: KindWebhook, URL: "https://hook.example/check"}
	answer := func(body string) Hook {
		return hookFunc(func(_ context.Context, req HookRequest) ([]byte, error) {
			if req.TimeoutMS != DefaultTimeoutMS || req.Stage != StageInput {
				t.Errorf("request %+v", req)
			}
			return []byte(body), nil
		})
	}
	ctx := context.Background()
	set := mustSet(t, spec(ActionRedact, FailClosed, hook))
	out, b, recs := Check(ctx, set, StageInput, answer(`{"action":"redact","redactions":[{"start":6,"end":10,"type":"person"}]}`), "héllo Jane!")
	if b != nil || out != "héllo [REDACTED:person]!" || recs[0].Outcome != Redacted {
		t.Fatalf("%q %+v %+v", out, b, recs)
	}
	_, b, recs = Check(ctx, set, StageInput, answer(`{"action":"block"}`), "how do I …")
	if b == nil || recs[0].Outcome != Blocked || b.Detector != KindWebhook {
		t.Fatalf("webhook block under redact: %+v %+v", b, recs)
	}
	out, _, recs = Check(ctx, set, StageInput, answer(`{"action":"pass"}`), "fine")
	if out != "fine" || recs[0].Outcome != Passed {
		t.Fatalf("%+v", recs)
	}
}

// TestNoMatchedTextInRefusals: whatever a detector matches, the refusal's
// message, the block and the records name the guardrail and detector and
// never carry the matched text.
func TestNoMatchedTextInRefusals(t *testing.T) {
	secrets := []string{awsKey, ghToken, slackTok, openaiKey, antKey, jwt, pemKey, card, iban, ssn, "jane@example.com", "PRJ-4821", "falcon"}
	ds := []DetectorSpec{
		{Kind: KindSecrets},
		{Kind: KindPII, Types: PIITypes},
		{Kind: KindRegex, Patterns: []string{`PRJ-[0-9]{4}`}},
		{Kind: KindKeywords, Words: []string{"falcon"}},
	}
	for _, action := range []Action{ActionBlock, ActionRedact, ActionFlag} {
		for _, s := range secrets {
			sp := spec(action, FailClosed, ds...)
			sp.Name = "guard"
			out, b, recs := Check(context.Background(), mustSet(t, sp), StageInput, nil, "text: "+s+" end")
			var said []string
			if b != nil {
				said = append(said, b.Message(), b.Detector, b.Type, b.Reason, b.Guardrail)
			}
			for _, r := range recs {
				said = append(said, r.Name, string(r.Outcome), strings.Join(r.Detectors, ","))
			}
			for _, x := range said {
				if strings.Contains(x, s) || (len(s) > 6 && strings.Contains(x, s[:6])) {
					t.Errorf("%s: %q says %q", action, s, x)
				}
			}
			if action != ActionFlag && strings.Contains(out, s) {
				t.Errorf("%s: %q went on: %q", action, s, out)
			}
		}
	}
}

func TestStreamSplitSecret(t *testing.T) {
	set := mustSet(t, spec(ActionRedact, FailClosed, DetectorSpec{Kind: KindSecrets}, DetectorSpec{Kind: KindPII, Types: []string{PIIEmail}}))
	answer := strings.Repeat("filler text. ", 50) + "the key is " + awsKey + " and " + pemKey + " mail bob@example.org " + strings.Repeat("more. ", 200)
	want := strings.Repeat("filler text. ", 50) + "the key is [REDACTED:aws_access_key] and [REDACTED:private_key] mail [REDACTED:email] " + strings.Repeat("more. ", 200)
	for _, size := range []int{1, 3, 7, 16, 64, 1000} {
		for _, hold := range []int{0, 32} {
			run := NewRun(set, StageOutput, nil)
			st := NewStream(context.Background(), run, hold)
			var got strings.Builder
			for i := 0; i < len(answer); i += size {
				out, blocked := st.Write(answer[i:min(i+size, len(answer))])
				if blocked {
					t.Fatal("blocked")
				}
				got.WriteString(out)
			}
			out, _ := st.Close()
			got.WriteString(out)
			if got.String() != want {
				t.Fatalf("pieces of %d, hold %d:\n got %q\nwant %q", size, hold, got.String(), want)
			}
			if run.Records()[0].Outcome != Redacted {
				t.Fatalf("%+v", run.Records())
			}
		}
	}
}

func TestStreamBlock(t *testing.T) {
	set := mustSet(t, spec(ActionBlock, FailClosed, DetectorSpec{Kind: KindSecrets}))
	run := NewRun(set, StageOutput, nil)
	st := NewStream(context.Background(), run, 0)
	answer := strings.Repeat("a ", 400) + ghToken[:10]
	sent, blocked := st.Write(answer)
	if blocked || strings.Contains(sent, "ghp_") {
		t.Fatalf("sent %q", sent)
	}
	if _, blocked := st.Write(ghToken[10:] + " rest"); blocked {
		// Held text may or may not be checked yet; Close decides.
		return
	}
	if out, blocked := st.Close(); !blocked || out != "" {
		t.Fatalf("close %q %v", out, blocked)
	}
	if run.Blocked() == nil || run.Records()[0].Outcome != Blocked {
		t.Fatal("not blocked")
	}
}

func TestStreamWebhookHoldsWhole(t *testing.T) {
	calls := 0
	h := hookFunc(func(_ context.Context, req HookRequest) ([]byte, error) {
		calls++
		return []byte(`{"action":"pass"}`), nil
	})
	set := mustSet(t, spec(ActionBlock, FailOpen, DetectorSpec{Kind: KindWebhook, URL: "http://127.0.0.1:1/x"}))
	st := NewStream(context.Background(), NewRun(set, StageOutput, h), 0)
	for range 100 {
		if out, _ := st.Write(strings.Repeat("x", 100)); out != "" {
			t.Fatal("let go before the webhook saw the whole answer")
		}
	}
	out, _ := st.Close()
	if len(out) != 10000 || calls != 1 {
		t.Fatalf("%d bytes, %d calls", len(out), calls)
	}
}

func TestGuardBody(t *testing.T) {
	set := mustSet(t, spec(ActionRedact, FailClosed, DetectorSpec{Kind: KindSecrets}))
	cases := []struct {
		name, body, want string
		outcome          Outcome
	}{
		{"chat", `{"model":"m","messages":[{"role":"user","content":"key ` + awsKey + `"}]}`,
			`{"messages":[{"content":"key [REDACTED:aws_access_key]","role":"user"}],"model":"m"}`, Redacted},
		{"chat parts and tool result", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"tool","tool_call_id":"c1","content":"` + ghToken + `"}]}`,
			`{"messages":[{"content":[{"text":"hi","type":"text"}],"role":"user"},{"content":"[REDACTED:github_token]","role":"tool","tool_call_id":"c1"}],"model":"m"}`, Redacted},
		{"responses", `{"model":"m","instructions":"be brief","input":[{"type":"function_call_output","call_id":"x","output":"` + awsKey + `"}]}`,
			`{"input":[{"call_id":"x","output":"[REDACTED:aws_access_key]","type":"function_call_output"}],"instructions":"be brief","model":"m"}`, Redacted},
		{"messages", `{"model":"m","system":"s","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"` + awsKey + `"}]}]}`,
			`{"max_tokens":5,"messages":[{"content":[{"content":"[REDACTED:aws_access_key]","tool_use_id":"t","type":"tool_result"}],"role":"user"}],"model":"m","system":"s"}`, Redacted},
		{"embeddings", `{"model":"e","input":["a","` + awsKey + `"]}`, `{"input":["a","[REDACTED:aws_access_key]"],"model":"e"}`, Redacted},
		{"clean stays as sent", `{"model":"m",  "messages":[{"role":"user","content":"hello"}]}`, `{"model":"m",  "messages":[{"role":"user","content":"hello"}]}`, Passed},
		{"image only", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]}`, "", Skipped},
		{"audio", `{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}}]}]}`, "", Skipped},
		{"token ids", `{"model":"e","input":[1,2,3]}`, "", Skipped},
		{"model name is not text", `{"model":"` + awsKey + `","messages":[]}`, `{"model":"` + awsKey + `","messages":[]}`, Passed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := NewRun(set, StageInput, nil)
			out, _ := GuardBody(context.Background(), run, []byte(c.body))
			if c.want != "" && string(out) != c.want {
				t.Fatalf("got  %s\nwant %s", out, c.want)
			}
			if o := run.Records()[0].Outcome; o != c.outcome {
				t.Fatalf("outcome %s, want %s", o, c.outcome)
			}
		})
	}
}

func FuzzGuardBody(f *testing.F) {
	f.Add(`{"messages":[{"role":"user","content":"` + awsKey + `"}]}`)
	f.Add(`{"input":[1,"x",{"type":"image"}]}`)
	set := mustSet(f, spec(ActionRedact, FailOpen, DetectorSpec{Kind: KindSecrets}, DetectorSpec{Kind: KindPII, Types: PIITypes}))
	f.Fuzz(func(t *testing.T, body string) {
		out, changed := GuardBody(context.Background(), NewRun(set, StageInput, nil), []byte(body))
		if changed && !json.Valid(out) {
			t.Fatalf("redacted body is not JSON: %s", out)
		}
	})
}

func TestGuardArguments(t *testing.T) {
	set := mustSet(t, spec(ActionRedact, FailClosed, DetectorSpec{Kind: KindSecrets}))
	run := NewRun(set, StageInput, nil)
	out, changed := GuardArguments(context.Background(), run, []byte(`{"path":"/tmp/x","env":{"AWS":"`+awsKey+`"},"n":3}`))
	if !changed || string(out) != `{"env":{"AWS":"[REDACTED:aws_access_key]"},"n":3,"path":"/tmp/x"}` || run.Records()[0].Outcome != Redacted {
		t.Fatalf("%s %+v", out, run.Records())
	}
}

// TestStreamGrowingHoldLinear: a candidate that keeps growing (an "sk-"
// followed by a long token, an unclosed private-key block) is held from
// its start, and the buffer holding it is scanned about log(n) times, not
// once per step: the scans of an answer stay within a few times its
// length (it was quadratic). The text still comes out whole, redacted.
func TestStreamGrowingHoldLinear(t *testing.T) {
	set := mustSet(t, spec(ActionRedact, FailClosed, DetectorSpec{Kind: KindSecrets}))
	for _, c := range []struct{ name, head, tail string }{
		{"token", "sk-", "[REDACTED:openai_api_key]"},
		{"unclosed key", "-----BEGIN RSA PRIVATE KEY-----\n", ""},
	} {
		body := strings.Repeat("abcdefghij", 40_000) // 400 kB, under MaxHold
		answer := "see " + c.head + body + " end"
		run := NewRun(set, StageOutput, nil)
		st := NewStream(context.Background(), run, 0)
		var got strings.Builder
		for i := 0; i < len(answer); i += 16 {
			out, _ := st.Write(answer[i:min(i+16, len(answer))])
			got.WriteString(out)
		}
		if st.checks > 40 {
			t.Fatalf("%s: %d checks of a held buffer for %d bytes", c.name, st.checks, len(answer))
		}
		out, _ := st.Close()
		got.WriteString(out)
		want := answer
		if c.tail != "" {
			want = "see " + c.tail + " end"
		}
		if got.String() != want {
			t.Fatalf("%s: got %d bytes, want %d", c.name, got.Len(), len(want))
		}
	}
}
