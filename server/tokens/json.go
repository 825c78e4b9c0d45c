package tokens

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"
)

// What counting a JSON document adds beyond the text of its strings.
const (
	// objectFraming is what a provider adds around each object of a
	// request or an answer (a message's role and separators, a tool's
	// wrapping): OpenAI documents 3 tokens a message; objects that are
	// not messages (content parts, tool definitions) take it too, which
	// errs high.
	objectFraming = 3
	// imageTokens is what an image is counted as: at least what any
	// provider bills for one (OpenAI's high detail tops out near 1,100,
	// Anthropic's near 1,600, Gemini's at 1,290).
	imageTokens = 1_600
	// fileBytesPerToken prices an inline file that is not an image (a PDF,
	// audio): a token for every 16 bytes of it, above what providers bill
	// per page or second of typical files, and never less than an image.
	fileBytesPerToken = 16
	// blobMin is the length from which a string that reads as base64 is
	// taken for inline data rather than text.
	blobMin = 1 << 10
	// maxDepth bounds the nesting walked; deeper documents are counted as
	// text.
	maxDepth = 1_000
)

var errTooDeep = errors.New("document nested too deeply")

// CountJSON counts the tokens of a JSON document as a provider would bill
// it as input or output: the text of its strings (member names are the
// protocol's, not the content's), objectFraming for each object, and
// inline attachments (data: URLs, base64 members) at a fixed allowance
// instead of their base64 text. A document that is not valid JSON is
// counted as text. Text past exactLimit is extrapolated, so a huge body
// costs bounded time.
func CountJSON(c Counter, doc []byte) int64 {
	w := walker{dec: json.NewDecoder(bytes.NewReader(doc))}
	if err := w.value("", 0); err != nil {
		return c.Count(string(doc))
	}
	n := c.Count(w.text.String())
	return extrapolate(n, w.text.Len(), w.rest) + w.extra
}

// walker gathers a document's text and its fixed allowances.
type walker struct {
	dec   *json.Decoder
	text  strings.Builder
	rest  int
	extra int64
}

func (w *walker) value(key string, depth int) error {
	if depth > maxDepth {
		return errTooDeep
	}
	tok, err := w.dec.Token()
	if err != nil {
		return err
	}
	switch v := tok.(type) {
	case json.Delim:
		object := v == '{'
		if object {
			w.extra += objectFraming
		}
		for w.dec.More() {
			k := key
			if object {
				kt, err := w.dec.Token()
				if err != nil {
					return err
				}
				k, _ = kt.(string)
			}
			if err := w.value(k, depth+1); err != nil {
				return err
			}
		}
		_, err = w.dec.Token() // the closing delimiter
		return err
	case string:
		w.str(key, v)
	}
	return nil
}

func (w *walker) str(key, v string) {
	if n, ok := attachment(key, v); ok {
		w.extra += n
		return
	}
	// What fits under exactLimit is counted, the rest extrapolated from it.
	cut := min(len(v), max(exactLimit-w.text.Len()-1, 0))
	for cut > 0 && cut < len(v) && !utf8.RuneStart(v[cut]) {
		cut--
	}
	if cut > 0 {
		w.text.WriteString(v[:cut])
		w.text.WriteByte(' ')
	}
	w.rest += len(v) - cut
}

// attachment recognizes inline data: a data: URL (OpenAI's image_url,
// file_data, input_image) or a long base64 string in a member named data
// (Anthropic's and Gemini's inline sources, OpenAI's input_audio). Images
// count imageTokens; other files by their size.
func attachment(key, v string) (int64, bool) {
	if rest, ok := strings.CutPrefix(v, "data:"); ok {
		media, payload, ok := strings.Cut(rest, ",")
		if !ok {
			return 0, false
		}
		return dataTokens(strings.HasPrefix(media, "image/"), payload), true
	}
	if key == "data" && len(v) >= blobMin && isBase64(v) {
		return dataTokens(looksLikeImage(v), v), true
	}
	return 0, false
}

func dataTokens(image bool, payload string) int64 {
	if image {
		return imageTokens
	}
	return max(imageTokens, int64(base64.StdEncoding.DecodedLen(len(payload)))/fileBytesPerToken)
}

// looksLikeImage tells an image's base64 by its first bytes: PNG, JPEG,
// GIF and WebP signatures.
func looksLikeImage(b64 string) bool {
	for _, p := range []string{"iVBORw0KGgo", "/9j/", "R0lGOD", "UklGR"} {
		if strings.HasPrefix(b64, p) {
			return true
		}
	}
	return false
}

func isBase64(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
