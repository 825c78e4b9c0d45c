package tokens

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// floorMargin is what the floor takes off each string it counts: a
// provider tokenizes a string inside the text around it (a chat template,
// the next content part), where its first and last tokens may merge with
// their neighbours, so a string alone may count up to two tokens more
// than it adds in place.
const floorMargin = 2

// Request is what one pass over a request body tells of the input tokens
// a provider bills for it, by a model family's counter.
type Request struct {
	// Bound is never fewer tokens than the provider bills for the body's
	// text, with the exact counters: every string and member name counted
	// alone, each number's digits, and objectFraming for each object
	// (what a chat template adds to a message is less than its JSON
	// members: OpenAI documents 3 tokens and the role a message, and 3 a
	// request). Inline data (data: URLs, base64 blobs) is left out: the
	// caller prices attachments. With an estimating counter it is the
	// same walk at that counter's rates, a calibrated bound: see
	// Estimate. Text past exactLimit is extrapolated, a quarter higher.
	Bound int64
	// Floor is never more tokens than the provider bills for the body,
	// with the exact counters: only the text of members that carry content
	// (FloorKeys), each string counted alone less floorMargin, no framing,
	// nothing past exactLimit. 0 with an estimating counter: gw can prove
	// no input count for a family whose tokenizer it lacks.
	Floor int64
}

// RequestKeys are the members whose string values are content a provider
// renders into the prompt as they are: messages' content and text,
// system prompts and instructions, inputs and prompts, tool descriptions,
// the arguments of earlier tool calls and the output of tools. Strings of
// other members (roles, types, ids, names, enums) are left out of a floor.
var RequestKeys = map[string]bool{"content": true, "text": true, "system": true, "instructions": true, "input": true,
	"prompt": true, "description": true, "arguments": true, "output": true, "refusal": true, "thinking": true}

// AnswerKeys are the members of an answer whose strings are generated
// text: content, text, refusals, tool-call arguments, thinking.
var AnswerKeys = map[string]bool{"content": true, "text": true, "refusal": true, "arguments": true, "thinking": true,
	"reasoning_content": true}

// walkLimit bounds the bytes of a document a walk reads. Past exactLimit
// of text a walk counts nothing more, only bytes to extrapolate from, and
// a json.Decoder holds what it reads (its buffer, then each string as a
// copy): walking a 30 MiB body whole would hold twice its size, for
// nothing. Past the limit the bytes left are extrapolated like text.
const walkLimit = 2 * exactLimit

// CountRequest walks a request body once with c (its first walkLimit
// bytes; the rest extrapolated, a quarter higher). A body that is not
// JSON is counted as text for the bound, with no floor.
func CountRequest(c Counter, doc []byte) Request {
	if len(doc) <= walkLimit {
		// The body's bytes read in place (floorScan), strictly: a body
		// it does not take as JSON is left to the decoder's walk below,
		// which says what it is. The decoder copied the body and boxed
		// every token (5 % of gw's CPU a request).
		sc := floorScan{b: doc, bound: true, w: requestWalker{c: c, exact: c.Exact(), keys: RequestKeys}}
		// A chat request's member names, grown once.
		sc.w.names.Grow(256)
		if sc.value(nil, 0) == nil {
			return sc.w.result()
		}
	}
	return countRequestDecoded(c, doc)
}

// countRequestDecoded is CountRequest's walk through a json.Decoder: for
// bodies past walkLimit (cut, then extrapolated) and bodies the strict
// scan does not take.
func countRequestDecoded(c Counter, doc []byte) Request {
	walked := doc[:min(len(doc), walkLimit)]
	w := requestWalker{c: c, exact: c.Exact(), keys: RequestKeys, dec: json.NewDecoder(bytes.NewReader(walked))}
	w.dec.UseNumber()
	err := w.value("", 0)
	left := len(doc) - len(walked)
	if err != nil && left > 0 {
		w.cutString(walked)
	}
	if err != nil && (left == 0 || w.counted+w.rest == 0) {
		// Not JSON, or nothing of it read: its bytes as text (not copied:
		// Count reads at most exactLimit of them).
		return Request{Bound: c.Count(unsafe.String(unsafe.SliceData(doc), len(doc)))}
	}
	// What the walk did not reach counts like text it did not count; the
	// floor keeps only what was counted (a floor may be low, never high).
	w.rest += left
	return w.result()
}

// cutString counts the string the walk stopped in, cut at walkLimit (a
// body's one long prompt, most often): its part read, unescaped, as a
// string of its own (the rest is extrapolated).
func (w *requestWalker) cutString(walked []byte) {
	rest := bytes.TrimLeft(walked[w.dec.InputOffset():], " \t\r\n:,")
	if len(rest) < 2 || rest[0] != '"' {
		return
	}
	w.partString(w.cutKey, rest[1:])
}

// partString counts part, the bytes of a string value cut short after its
// opening quote, as a string of its own: up to its last whole escape and
// rune.
func (w *requestWalker) partString(key string, part []byte) {
	// Not in the middle of an escape (\uXXXX is the longest) or a rune.
	if i := bytes.LastIndexByte(part[max(0, len(part)-6):], '\\'); i >= 0 {
		part = part[:max(0, len(part)-6)+i]
	}
	for len(part) > 0 && !utf8.Valid(part[max(0, len(part)-utf8.UTFMax):]) {
		part = part[:len(part)-1]
	}
	var v string
	if json.Unmarshal(append(append([]byte{'"'}, part...), '"'), &v) == nil {
		w.str(key, v)
	}
}

// FloorJSON is the floor of a JSON document's text, with the strings of
// the members keys names (RequestKeys for a request, AnswerKeys for an
// answer); key is the member the document is the value of ("" for a
// whole document). 0 unless c is exact, or doc is not JSON.
func FloorJSON(c Counter, key string, doc []byte, keys map[string]bool) int64 {
	if !c.Exact() {
		return 0
	}
	walked := doc[:min(len(doc), walkLimit)]
	sc := floorScan{b: walked, w: requestWalker{c: c, exact: true, keys: keys, floorOnly: true}}
	w := &sc.w
	// The key read in place (the scan never writes it); never nil, so
	// that a cut is told from none below.
	k := unsafe.Slice(unsafe.StringData(key), len(key))
	if k == nil {
		k = []byte{}
	}
	if err := sc.value(k, 0); err != nil {
		if len(walked) == len(doc) {
			return 0
		}
		// A document cut at walkLimit: the strings read, and the part of
		// the one it stopped in, a floor still.
		if sc.cutKey != nil {
			w.partString(string(sc.cutKey), walked[sc.cutStart:])
		}
	}
	return w.floor
}

// FloorText is the floor of text relayed as one piece: its exact count
// less floorMargin, 0 unless c is exact. Past exactLimit only the part
// counted counts.
func FloorText(c Counter, text string) int64 {
	if !c.Exact() || text == "" {
		return 0
	}
	cut := min(len(text), exactLimit)
	for cut > 0 && cut < len(text) && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return max(0, c.Count(text[:cut])-floorMargin)
}

// requestWalker gathers a document's bound and floor.
type requestWalker struct {
	dec   *json.Decoder
	c     Counter
	exact bool
	keys  map[string]bool
	// floorOnly skips the bound's work.
	floorOnly bool
	// cutKey is the member whose value the walk could not read.
	cutKey string

	names strings.Builder
	// counted is the bytes counted so far, rest those past exactLimit.
	counted, rest int
	bound, floor  int64
	objects       int64
}

func (w *requestWalker) result() Request {
	names := w.c.Count(w.names.String())
	bound := w.bound + names
	if w.rest > 0 {
		// Like text, a quarter higher (extrapolate).
		bound = extrapolate(bound, max(w.counted+w.names.Len(), 1), w.rest)
	}
	return Request{Bound: bound + w.objects*objectFraming, Floor: w.floor}
}

func (w *requestWalker) value(key string, depth int) error {
	if depth > maxDepth {
		return errTooDeep
	}
	tok, err := w.dec.Token()
	if err != nil {
		w.cutKey = key
		return err
	}
	switch v := tok.(type) {
	case json.Delim:
		object := v == '{'
		if object {
			w.objects++
		}
		for w.dec.More() {
			k := key
			if object {
				kt, err := w.dec.Token()
				if err != nil {
					return err
				}
				k, _ = kt.(string)
				if !w.floorOnly && w.names.Len() < exactLimit {
					w.names.WriteString(k)
					w.names.WriteByte(' ')
				}
			}
			if err := w.value(k, depth+1); err != nil {
				return err
			}
		}
		_, err = w.dec.Token() // the closing delimiter
		return err
	case string:
		w.str(key, v)
	case json.Number:
		if !w.floorOnly {
			w.str("", v.String())
		}
	case bool, nil:
		if !w.floorOnly {
			w.bound++
		}
	}
	return nil
}

// str counts one string value: alone, as a provider's template places it
// between other text.
func (w *requestWalker) str(key, v string) {
	if _, ok := attachment(key, v); ok {
		return
	}
	content := w.exact && w.keys[key]
	if w.floorOnly && !content {
		return
	}
	cut := min(len(v), max(exactLimit-w.counted, 0))
	for cut > 0 && cut < len(v) && !utf8.RuneStart(v[cut]) {
		cut--
	}
	w.counted += cut
	w.rest += len(v) - cut
	if cut == 0 {
		return
	}
	n := w.c.Count(v[:cut])
	w.bound += n
	if content {
		w.floor += max(0, n-floorMargin)
	}
}
