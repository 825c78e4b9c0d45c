package providers_test

import (
	"encoding/json"
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/providers"
)

// allocated reports the bytes fn allocates on the heap.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Issue 17: decoding multiplied a body about 6.5 times (members, the
// messages, each message and each content string were copies). Parsing
// now reads what routing and policies need and keeps the rest as slices
// of the body: a 6 MiB request costs the parse a few kilobytes.
func TestParseKeepsTheBodyAsIs(t *testing.T) {
	text := strings.Repeat("a long prompt\n", 2<<20/14)
	image := "data:image/png;base64," + strings.Repeat("QUJD", 1<<20)
	body, err := json.Marshal(map[string]any{
		"model": "m", "temperature": 0.2,
		"messages": []any{
			map[string]any{"role": "system", "content": text},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": text},
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": image}},
			}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var req *providers.ChatRequest
	n := allocated(func() { req, err = providers.ParseChatRequest(body) })
	if err != nil {
		t.Fatal(err)
	}
	if n > 64<<10 {
		t.Fatalf("parsing a %d-byte body allocated %d bytes", len(body), n)
	}
	t.Logf("parsing a %.1f MiB body allocated %d bytes", float64(len(body))/(1<<20), n)
	if got := req.Modalities(); !slices.Equal(got, []catalog.Modality{catalog.ModalityImage}) {
		t.Fatalf("modalities %v", got)
	}
	// A translation decodes what it needs, when it needs it.
	sys, parts, err := req.Messages[0].Content.Decode()
	if err != nil || sys != text || parts != nil || req.Messages[0].Content.IsParts() {
		t.Fatalf("system content: %d bytes, parts %v, %v", len(sys), parts, err)
	}
	_, parts, err = req.Messages[1].Content.Decode()
	if err != nil || len(parts) != 2 || parts[0].Text != text || parts[1].ImageURL != image || !req.Messages[1].Content.IsParts() {
		t.Fatalf("user content: %d parts, %v", len(parts), err)
	}
}

func TestContentIsCheckedWithoutBeingDecoded(t *testing.T) {
	for _, tc := range []struct{ body, param string }{
		{`{"model":"m","messages":[1]}`, "messages[0]"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":7}]}]}`, "messages[0].content.text"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":""}}]}]}`, "messages[0].content[0].image_url.url"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"file_data":null}}]}]}`, "messages[0].content[0].file"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":3}}]}]}`, "messages[0].content.file.file_id"},
		{`{"model":"m","messages":[{"role":"user","content":{"text":"hi"}}]}`, "messages[0].content"},
	} {
		_, err := providers.ParseChatRequest([]byte(tc.body))
		var inv *providers.InvalidRequestError
		if !errors.As(err, &inv) || inv.Param != tc.param {
			t.Errorf("%s: got %v, want a refusal of %q", tc.body, err, tc.param)
		}
	}
	// Escapes, null and refusals decode as encoding/json reads them; the
	// last of a repeated member counts, as in a decoded map.
	r := parse(t, `{"model":"x","model":"m","messages":[{"role":"user","content":"a\n\u00e9\"b"},{"role":"assistant","content":null},`+
		`{"role":"assistant","content":[{"type":"refusal","refusal":"no"},{"type":"text","text":"yes"}]},{"role":"user","content":[]}]}`)
	if r.Model != "m" {
		t.Fatalf("model %q", r.Model)
	}
	if text, _, _ := r.Messages[0].Content.Decode(); text != "a\né\"b" {
		t.Fatalf("text %q", text)
	}
	if text, parts, _ := r.Messages[1].Content.Decode(); text != "" || parts != nil {
		t.Fatalf("null content: %q %v", text, parts)
	}
	if _, parts, _ := r.Messages[2].Content.Decode(); len(parts) != 2 || parts[0].Text != "no" || parts[1].Text != "yes" {
		t.Fatalf("parts %+v", parts)
	}
	if _, parts, _ := r.Messages[3].Content.Decode(); parts == nil || len(parts) != 0 {
		t.Fatalf("empty parts %+v", parts)
	}
}

// The members of a body are its own bytes; a body that is not one JSON
// object is refused.
func TestParseObject(t *testing.T) {
	body := []byte(`{"a":1, "b" : {"c":[1,2]},"d\u0065":"x","a":2}`)
	m, err := providers.ParseObject(body)
	if err != nil {
		t.Fatal(err)
	}
	if string(m["a"]) != "2" || string(m["b"]) != `{"c":[1,2]}` || string(m["de"]) != `"x"` || len(m) != 3 {
		t.Fatalf("members %q", m)
	}
	for _, bad := range []string{`[]`, `{"a":`, `"x"`, ``, `{"a":1}{}`} {
		if _, err := providers.ParseObject([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
