package batchfile

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

const chat = "/v1/chat/completions"

func line(id, body string) string {
	return fmt.Sprintf(`{"custom_id":%q,"method":"POST","url":"/v1/chat/completions","body":%s}`, id, body)
}

const hello = `{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`

func TestReadTakesAFile(t *testing.T) {
	file := line("a", hello) + "\r\n" + line("b", `{"model":"anthropic/claude-haiku-4-5","messages":[],"stream":false}`) + "\n"
	lines, err := Read([]byte(file), chat, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2 || lines[0].Number != 1 || lines[0].CustomID != "a" || lines[0].Model != "openai/gpt-4o-mini" ||
		lines[1].Number != 2 || lines[1].Model != "anthropic/claude-haiku-4-5" || string(lines[0].Body) != hello || lines[1].URL != chat {
		t.Fatalf("lines: %+v", lines)
	}
	// No final newline reads the same.
	if lines, err := Read([]byte(line("a", hello)), chat, DefaultLimits); err != nil || len(lines) != 1 {
		t.Fatalf("%v %+v", err, lines)
	}
}

// Every problem names its line and, once read, its custom_id.
func TestReadRefuses(t *testing.T) {
	small := Limits{Bytes: 1000, Lines: 2, LineBytes: 200}
	for _, c := range []struct {
		name, file, endpoint string
		lim                  Limits
		line                 int
		id, code             string
	}{
		{"an empty file", "\n", chat, DefaultLimits, 0, "", CodeEmptyFile},
		{"a file over the limit", strings.Repeat(line("a", hello)+"\n", 10), chat, small, 0, "", CodeFileTooLarge},
		{"more lines than the limit", line("a", hello) + "\n" + line("b", hello) + "\n" + line("c", hello), chat, small, 3, "", CodeTooManyLines},
		{"a line over the limit", line("a", hello) + "\n" + line("b", `{"model":"m","x":"`+strings.Repeat("y", 200)+`"}`), chat, small, 2, "", CodeLineTooLarge},
		{"malformed JSON", line("a", hello) + "\n{\"custom_id\": \"b\",", chat, DefaultLimits, 2, "", CodeInvalidJSON},
		{"not an object", `[1,2]`, chat, DefaultLimits, 1, "", CodeInvalidJSON},
		{"an unknown member", `{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"m"},"x":1}`, chat, DefaultLimits, 1, "", CodeInvalidJSON},
		{"two values on a line", line("a", hello) + " {}", chat, DefaultLimits, 1, "", CodeInvalidJSON},
		{"an empty line inside", line("a", hello) + "\n\n" + line("b", hello), chat, DefaultLimits, 2, "", CodeInvalidJSON},
		{"no custom_id", `{"method":"POST","url":"/v1/chat/completions","body":{"model":"m"}}`, chat, DefaultLimits, 1, "", CodeMissingCustomID},
		{"a custom_id of the wrong type", `{"custom_id":7,"method":"POST","url":"/v1/chat/completions","body":{"model":"m"}}`, chat, DefaultLimits, 1, "", CodeInvalidJSON},
		{"a custom_id too long", line(strings.Repeat("x", 65), hello), chat, DefaultLimits, 1, "", CodeMissingCustomID},
		{"a duplicate custom_id", line("a", hello) + "\n" + line("a", hello), chat, DefaultLimits, 2, "a", CodeDuplicateCustom},
		{"a GET", `{"custom_id":"a","method":"GET","url":"/v1/chat/completions","body":{"model":"m"}}`, chat, DefaultLimits, 1, "a", CodeInvalidMethod},
		{"an unknown url", `{"custom_id":"a","method":"POST","url":"/v1/images","body":{"model":"m"}}`, chat, DefaultLimits, 1, "a", CodeInvalidURL},
		{"another endpoint's url", `{"custom_id":"a","method":"POST","url":"/v1/embeddings","body":{"model":"m"}}`, chat, DefaultLimits, 1, "a", CodeMismatchedURL},
		{"a body that is not an object", line("a", `"hi"`), chat, DefaultLimits, 1, "a", CodeInvalidBody},
		{"no model", line("a", `{"messages":[]}`), chat, DefaultLimits, 1, "a", CodeMissingModel},
		{"a model that is not a string", line("a", `{"model":7}`), chat, DefaultLimits, 1, "a", CodeMissingModel},
		{"a stream", line("a", `{"model":"m","stream":true}`), chat, DefaultLimits, 1, "a", CodeStreamingRefused},
		{"an endpoint gw does not batch", line("a", hello), "/v1/images", DefaultLimits, 0, "", CodeInvalidURL},
	} {
		t.Run(c.name, func(t *testing.T) {
			lines, err := Read([]byte(c.file), c.endpoint, c.lim)
			var p *Problem
			if !errors.As(err, &p) || lines != nil {
				t.Fatalf("Read = %+v, %v; want a problem", lines, err)
			}
			if p.Line != c.line || p.CustomID != c.id || p.Code != c.code {
				t.Errorf("problem %+v (%s); want line %d custom_id %q code %s", p, p.Error(), c.line, c.id, c.code)
			}
			if c.line > 0 && !strings.HasPrefix(p.Error(), fmt.Sprintf("line %d", c.line)) {
				t.Errorf("the message does not name the line: %s", p.Error())
			}
		})
	}
}

// A caller's own check of a line (an unknown model, a policy) names it
// as Read's do.
func TestLineProblem(t *testing.T) {
	lines, err := Read([]byte(line("a", hello)+"\n"+line("b", `{"model":"nope/x"}`)), chat, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	p := lines[1].Problem("model_not_found", "the model %q does not exist", lines[1].Model)
	if got := p.Error(); got != `line 2 (custom_id "b"): the model "nope/x" does not exist` {
		t.Errorf("Error() = %s", got)
	}
}

func FuzzRead(f *testing.F) {
	f.Add([]byte(line("a", hello) + "\n" + line("b", hello)))
	f.Add([]byte("{\"custom_id\":\"a\"}\n\n"))
	f.Add([]byte(`[{"a":1}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		lines, err := Read(data, chat, Limits{Bytes: 1 << 16, Lines: 20, LineBytes: 1 << 12})
		if err == nil && len(lines) == 0 {
			t.Fatal("no lines and no problem")
		}
		var p *Problem
		if err != nil && (!errors.As(err, &p) || p.Code == "" || p.Message == "") {
			t.Fatalf("a problem without a code or message: %v", err)
		}
		seen := map[string]bool{}
		for i, l := range lines {
			if l.Number != i+1 || l.CustomID == "" || l.Model == "" || seen[l.CustomID] {
				t.Fatalf("line %d: %+v", i, l)
			}
			seen[l.CustomID] = true
		}
	})
}
