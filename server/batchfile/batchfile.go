// Package batchfile reads a batch's input file: OpenAI's batch JSONL, one
// request a line ({"custom_id", "method", "url", "body"}), checked against
// gw's size limits before anything is admitted, reserved or sent (issue
// 34, part 1). It is pure: no I/O and no package of ours, so the data
// plane (admission of every line) and the control plane (a file's upload)
// read a file the same way, and a fuzz target holds it to never panic.
//
// A problem names its line (1-based, as editors count) and, when the line
// has one, its custom_id, so a caller can fix the file in one pass: the
// first problem found ends the read, and nothing of the file is used.
package batchfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Limits bound what a batch file may hold. The zero value of a member is
// no limit, which only tests use; DefaultLimits are gw's.
type Limits struct {
	// Bytes is the largest file; Lines the most requests in one file;
	// LineBytes the largest line, its newline excluded.
	Bytes, Lines, LineBytes int64
}

// DefaultLimits are gw's limits on a batch file, stated in docs/batches.md:
// OpenAI's own (200 MB, 50,000 requests), and a line no larger than the
// data plane takes as one request's body.
var DefaultLimits = Limits{Bytes: 200 << 20, Lines: 50_000, LineBytes: 4 << 20}

// MessageBatchLimits are Anthropic's own limits on a message batch
// (docs/batches.md): at most 100,000 requests, and 256 MB the request
// carrying them — read as 256,000,000 bytes, the stricter reading, so a
// batch gw takes is one Anthropic's own batch API takes when gw sends it
// there. A request is a line as in any batch file (LineBytes).
var MessageBatchLimits = Limits{Bytes: 256_000_000, Lines: 100_000, LineBytes: 4 << 20}

// MessageBatchFileBytes bounds the file gw writes of a message batch's
// requests (each wrapped as a batch line, a few dozen bytes more than
// the request): 256 MiB, which leaves every request of a batch within
// MessageBatchLimits at least 124 bytes to grow by.
const MessageBatchFileBytes = 256 << 20

// LimitsFor are the limits of a batch file for endpoint: a message
// batch's file (MessagesEndpoint) is bound by Anthropic's limits, every
// other by OpenAI's (DefaultLimits).
func LimitsFor(endpoint string) Limits {
	if endpoint == MessagesEndpoint {
		return Limits{Bytes: MessageBatchFileBytes, Lines: MessageBatchLimits.Lines, LineBytes: MessageBatchLimits.LineBytes}
	}
	return DefaultLimits
}

// Endpoints are the URLs a line may ask for, as OpenAI's Batch API names
// them; a batch's lines all ask for its own endpoint.
var Endpoints = []string{"/v1/chat/completions", "/v1/responses", "/v1/embeddings"}

// MessagesEndpoint is the endpoint of Anthropic's Message Batches: gw
// writes their requests as the lines of a file for it (an OpenAI batch
// never names it), so one reader checks both.
const MessagesEndpoint = "/v1/messages"

func known(endpoint string) bool {
	return slices.Contains(Endpoints, endpoint) || endpoint == MessagesEndpoint
}

// The codes of a Problem, as OpenAI's batch errors name theirs where it
// has one.
const (
	CodeEmptyFile        = "empty_file"
	CodeFileTooLarge     = "file_too_large"
	CodeTooManyLines     = "too_many_requests"
	CodeLineTooLarge     = "line_too_large"
	CodeInvalidJSON      = "invalid_json_line"
	CodeMissingCustomID  = "missing_custom_id"
	CodeDuplicateCustom  = "duplicate_custom_id"
	CodeInvalidMethod    = "invalid_method"
	CodeInvalidURL       = "invalid_url"
	CodeMismatchedURL    = "mismatched_url"
	CodeInvalidBody      = "invalid_body"
	CodeMissingModel     = "missing_model"
	CodeStreamingRefused = "streaming_not_supported"
)

// MaxCustomIDBytes bounds a line's custom_id (OpenAI takes 64 characters;
// gw the same in bytes, as printable UTF-8).
const MaxCustomIDBytes = 64

// Problem is what is wrong with a batch file: the line (1-based; 0 for
// the file as a whole) and its custom_id when read, a code, and a message
// that says what to change.
type Problem struct {
	// Name, when set, is how the line is named instead of "line N" (an
	// Anthropic batch's "requests[i]").
	Name     string
	Line     int
	CustomID string
	Code     string
	Message  string
}

func (p *Problem) Error() string {
	name := p.Name
	if name == "" {
		name = fmt.Sprintf("line %d", p.Line)
	}
	switch {
	case p.Line == 0:
		return p.Message
	case p.CustomID != "":
		return fmt.Sprintf("%s (custom_id %q): %s", name, p.CustomID, p.Message)
	default:
		return fmt.Sprintf("%s: %s", name, p.Message)
	}
}

// Line is one request of a batch.
type Line struct {
	// Number is the line's number in the file, 1-based.
	Number   int
	CustomID string
	Method   string
	URL      string
	// Body is the request's body as written; Model its model.
	Body  json.RawMessage
	Model string
	// Name, when set, names the line in its problems (Problem.Name).
	Name string
}

// Problem is a problem of this line, for a check the caller makes (an
// unknown model, a policy's refusal).
func (l Line) Problem(code, format string, args ...any) *Problem {
	return &Problem{Name: l.Name, Line: l.Number, CustomID: l.CustomID, Code: code, Message: fmt.Sprintf(format, args...)}
}

// rawLine is a line as written; an unknown member is refused.
type rawLine struct {
	CustomID *string         `json:"custom_id"`
	Method   *string         `json:"method"`
	URL      *string         `json:"url"`
	Body     json.RawMessage `json:"body"`
}

// Read checks data, a batch's input file for endpoint (one of Endpoints),
// within lim, and returns its lines in order, or the first problem found.
// A final newline ends the last line; any other empty line is a problem
// (OpenAI refuses it too), as are a line that is not one JSON object with
// exactly the four members, a custom_id that is empty, too long or used
// twice, a method other than POST, a url other than endpoint, and a body
// that is not an object naming its model or that asks to stream.
func Read(data []byte, endpoint string, lim Limits) ([]Line, error) {
	if !known(endpoint) {
		return nil, &Problem{Code: CodeInvalidURL, Message: fmt.Sprintf("endpoint %q is not one of %s", endpoint, strings.Join(Endpoints, ", "))}
	}
	if lim.Bytes > 0 && int64(len(data)) > lim.Bytes {
		return nil, &Problem{Code: CodeFileTooLarge, Message: fmt.Sprintf("the file is %d bytes, more than the %d a batch file may be", len(data), lim.Bytes)}
	}
	data = bytes.TrimSuffix(data, []byte("\n"))
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &Problem{Code: CodeEmptyFile, Message: "the file has no requests"}
	}
	var lines []Line
	seen := map[string]int{}
	for n := 1; ; n++ {
		raw, rest, more := bytes.Cut(data, []byte("\n"))
		if lim.Lines > 0 && int64(n) > lim.Lines {
			return nil, &Problem{Line: n, Code: CodeTooManyLines, Message: fmt.Sprintf("a batch file holds at most %d requests", lim.Lines)}
		}
		raw = bytes.TrimSuffix(raw, []byte("\r"))
		if lim.LineBytes > 0 && int64(len(raw)) > lim.LineBytes {
			return nil, &Problem{Line: n, Code: CodeLineTooLarge, Message: fmt.Sprintf("the line is %d bytes, more than the %d a request may be", len(raw), lim.LineBytes)}
		}
		l, p := readLine(n, raw, endpoint)
		if p != nil {
			return nil, p
		}
		if first, ok := seen[l.CustomID]; ok {
			return nil, l.Problem(CodeDuplicateCustom, "custom_id is line %d's too; each request's must be its own", first)
		}
		seen[l.CustomID] = n
		lines = append(lines, l)
		if !more {
			break
		}
		data = rest
	}
	return lines, nil
}

// readLine reads line n.
func readLine(n int, raw []byte, endpoint string) (Line, *Problem) {
	l := Line{Number: n}
	if len(bytes.TrimSpace(raw)) == 0 {
		return l, l.Problem(CodeInvalidJSON, "the line is empty; every line is one request")
	}
	var r rawLine
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return l, l.Problem(CodeInvalidJSON, "the line is not a request object {custom_id, method, url, body}: %s", jsonProblem(err))
	}
	if dec.More() {
		return l, l.Problem(CodeInvalidJSON, "the line holds more than one JSON value")
	}
	if r.CustomID == nil || *r.CustomID == "" {
		return l, l.Problem(CodeMissingCustomID, "custom_id is required, a non-empty string")
	}
	id := *r.CustomID
	if len(id) > MaxCustomIDBytes || !utf8.ValidString(id) || strings.ContainsFunc(id, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return l, l.Problem(CodeMissingCustomID, "custom_id must be printable text of at most %d bytes", MaxCustomIDBytes)
	}
	l.CustomID = id
	if r.Method == nil || *r.Method != "POST" {
		return l, l.Problem(CodeInvalidMethod, "method must be \"POST\"")
	}
	l.Method = *r.Method
	switch {
	case r.URL == nil || !known(*r.URL):
		return l, l.Problem(CodeInvalidURL, "url must be one of %s", strings.Join(Endpoints, ", "))
	case *r.URL != endpoint:
		return l, l.Problem(CodeMismatchedURL, "url is %q, but the batch's endpoint is %q; every line asks for the batch's", *r.URL, endpoint)
	}
	l.URL = *r.URL
	var body map[string]json.RawMessage
	if len(r.Body) == 0 || r.Body[0] != '{' || json.Unmarshal(r.Body, &body) != nil {
		return l, l.Problem(CodeInvalidBody, "body must be the request's JSON object")
	}
	var model string
	if json.Unmarshal(body["model"], &model) != nil || model == "" {
		return l, l.Problem(CodeMissingModel, "body.model is required, a non-empty string")
	}
	var stream bool
	if s, ok := body["stream"]; ok && json.Unmarshal(s, &stream) == nil && stream {
		return l, l.Problem(CodeStreamingRefused, "body.stream must not be true: a batch's answers are collected, not streamed")
	}
	l.Body, l.Model = r.Body, model
	return l, nil
}

// jsonProblem is a decoding error without the decoder's Go type names.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("invalid JSON at byte %d", se.Offset)
	case errors.As(err, &te) && te.Field == "":
		return "the line must be a JSON object"
	case errors.As(err, &te):
		return te.Field + " must be a string"
	default:
		return strings.TrimPrefix(err.Error(), "json: ")
	}
}
