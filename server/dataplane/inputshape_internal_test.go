package dataplane

import (
	"bytes"
	"encoding/json"
	"testing"
)

// inputShapeBySearch is inputShapeOf as it was, a search of the body for
// each name of interest: the reference for the one-pass scan.
func inputShapeBySearch(body []byte) inputShape {
	s := inputShape{bytes: int64(len(body))}
	if escapedLetters(body) {
		var v any
		if json.Unmarshal(body, &v) == nil {
			walkShape(v, &s)
			return s
		}
	}
	eachValueBySearch(body, `"type"`, func(v string) { s.extra += typeTokens(v) })
	s.tools = hasMember(body, `"tools"`) || hasMember(body, `"functions"`) || hasMember(body, `"response_format"`) ||
		hasMember(body, `"mcp_servers"`)
	if hasMember(body, `"mcp_servers"`) {
		s.extra += attachmentTokens
	}
	if hasMember(body, `"cache_control"`) {
		s.cacheWrite = true
		eachValueBySearch(body, `"ttl"`, func(v string) { s.cacheWrite1h = s.cacheWrite1h || v == "1h" })
	}
	return s
}

func eachValueBySearch(body []byte, key string, fn func(string)) {
	eachOccurrence(body, key, func(i int) bool {
		i = skipSpace(body, i)
		if i >= len(body) || body[i] != ':' {
			return true
		}
		i = skipSpace(body, i+1)
		if i >= len(body) || body[i] != '"' {
			return true
		}
		end := bytes.IndexByte(body[i+1:], '"')
		if end < 0 {
			return false
		}
		raw := body[i+1 : i+1+end]
		if bytes.IndexByte(raw, '\\') >= 0 {
			var v string
			if dec := json.NewDecoder(bytes.NewReader(body[i:])); dec.Decode(&v) == nil {
				fn(v)
			}
			return true
		}
		fn(string(raw))
		return true
	})
}

var inputShapeSamples = []string{
	`{"messages":[{"role":"user","content":"hi"}]}`,
	`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]}`,
	`{"messages":[{"content":[{"type" :  "image","source":{}} , {"type":"document"}]}]}`,
	`{"messages":[{"role":"user","content":"{\"type\":\"image\",\"tools\":[],\"cache_control\":{}}"}]}`,
	`{"messages":[{"content":[{"typ\u0065":"image"}]}]}`,
	`{"messages":[{"content":[{"type":"imag\u0065"}]}]}`,
	`{"messages":[{"content":[{"type":"ima\"ge"}, {"type":"a\\"}, {"type":"image"}]}]}`,
	`{"tools":[{"type":"bash_20250124","name":"bash"},{"type":"text_editor_20250728"}],"x":"tools"}`,
	`{"mcp_servers":[{"type":"url","url":"https://m"}],"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral","ttl":"1h"}}]}`,
	`{"ttl":"1h","a":{"cache_control":null},"type":["image"],"functions":1}`,
	`["type","image",{"type":"input_audio"},"\\","\\\"",{"response_format":{}}]`,
}

func TestInputShapeMatchesSearch(t *testing.T) {
	for _, body := range inputShapeSamples {
		if got, want := inputShapeOf([]byte(body)), inputShapeBySearch([]byte(body)); got != want {
			t.Errorf("%s: %+v, the search finds %+v", body, got, want)
		}
	}
	// Not JSON (the parse stage refuses it first): read without a panic.
	for _, body := range []string{`"`, `{"type":"`, `{"type":`, `{"ttl":"1h`, `{"a\`, `"\`, `{"type":"x\`} {
		inputShapeOf([]byte(body))
	}
}

// FuzzInputShape: any bytes are read without a panic, and for valid JSON
// (what the parse stage passes on) the one-pass scan finds what a search
// for each name finds.
func FuzzInputShape(f *testing.F) {
	for _, s := range inputShapeSamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		shape := inputShapeOf(body) // any bytes: never a panic
		if !json.Valid(body) {
			return
		}
		if shape != inputShapeOf(body) {
			t.Fatal("not a pure function")
		}
		if got, want := inputShapeOf(body), inputShapeBySearch(body); got != want {
			t.Fatalf("%q: %+v, the search finds %+v", body, got, want)
		}
	})
}
