package tokens

import (
	"unicode"
	"unicode/utf8"
)

// The pieces an encoding's byte-pair merges run within: OpenAI's split
// patterns, matched by hand. tiktoken-go matches them with regexp2 (a
// backtracking engine), and the split was three quarters of a count's
// time and all of its garbage (a match object, a rune buffer, a string a
// piece). Each function below follows its pattern's alternatives in order,
// as the backtracking engine tries them, and returns where the piece
// starting at i ends; TestCountMatchesTiktoken and FuzzCountMatchesTiktoken
// hold both to the patterns (regexp2's backtracking interpreter) and the
// tokens to tiktoken-go's (tiktoken_test.go says where its matcher strays
// from its own pattern, and gw follows the pattern).
//
// o200k_base:
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// cl100k_base:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// A byte that is not UTF-8 is a character of its own, U+FFFD's class, as
// the engine decodes it.

// A character's classes, as the patterns use them.
const (
	cLetter  = 1 << iota // \p{L}
	cNumber              // \p{N}
	cSpace               // \s (unicode.IsSpace, as regexp2's)
	cUpper               // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
	cLower               // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
	cLineEnd             // \r or \n
)

// asciiClass is every ASCII character's classes.
var asciiClass = func() (t [utf8.RuneSelf]uint8) {
	for c := range rune(utf8.RuneSelf) {
		t[c] = classOf(c)
	}
	return t
}()

func classOf(r rune) uint8 {
	var c uint8
	switch {
	case unicode.IsLetter(r):
		c = cLetter
		switch {
		case unicode.Is(unicode.Lu, r), unicode.Is(unicode.Lt, r):
			c |= cUpper
		case unicode.Is(unicode.Ll, r):
			c |= cLower
		default: // Lm, Lo
			c |= cUpper | cLower
		}
	case unicode.IsMark(r):
		c = cUpper | cLower
	case unicode.IsNumber(r):
		c = cNumber
	case unicode.IsSpace(r):
		c = cSpace
		if r == '\r' || r == '\n' {
			c |= cLineEnd
		}
	}
	return c
}

// at is the class and width of the character at i < len(s).
func at(s string, i int) (uint8, int) {
	if b := s[i]; b < utf8.RuneSelf {
		return asciiClass[b], 1
	}
	return atRune(s, i)
}

// atRune is at past ASCII. The loops over a run of characters read an
// ASCII one's class themselves and call this for the others: a call a
// character was a sixth of counting's time.
func atRune(s string, i int) (uint8, int) {
	r, w := utf8.DecodeRuneInString(s[i:])
	return classOf(r), w
}

// run is where the run of characters in any of classes starting at i ends.
func run(s string, i int, classes uint8) int {
	end, _ := runMarking(s, i, classes, 0)
	return end
}

// runMarking is run(s, i, classes), and where the last character of the
// run that is also in mark ends (-1 if none is): what a greedy loop gives
// back to when what follows it must start with such a character.
func runMarking(s string, i int, classes, mark uint8) (end, lastMark int) {
	lastMark = -1
	for i < len(s) {
		c, w := asciiClass[s[i]&0x7f], 1
		if s[i] >= utf8.RuneSelf {
			c, w = atRune(s, i)
		}
		if c&classes == 0 {
			break
		}
		i += w
		if c&mark != 0 {
			lastMark = i
		}
	}
	return i, lastMark
}

// prefix is the width of a character [^\r\n\p{L}\p{N}] at i, or 0.
func prefix(s string, i int) int {
	if i >= len(s) {
		return 0
	}
	c, w := at(s, i)
	if c&(cLetter|cNumber|cLineEnd) != 0 {
		return 0
	}
	return w
}

// other is [^\s\p{L}\p{N}].
const other = cLetter | cNumber | cSpace

// contraction is where (?i:'s|'t|'re|'ve|'m|'ll|'d)? ends from i. With
// ignored case, s also matches ſ (U+017F), whose upper case is S.
func contraction(s string, i int) int {
	if i+1 >= len(s) || s[i] != '\'' {
		return i
	}
	lower := func(j int) byte {
		if j < len(s) {
			return s[j] | 0x20
		}
		return 0
	}
	switch lower(i + 1) {
	case 's', 't', 'm', 'd':
		return i + 2
	case 'r', 'v':
		if lower(i+2) == 'e' {
			return i + 3
		}
	case 'l':
		if lower(i+2) == 'l' {
			return i + 3
		}
	case 0xc5 | 0x20: // ſ is C5 BF
		if s[i+1] == 0xc5 && i+2 < len(s) && s[i+2] == 0xbf {
			return i + 3
		}
	}
	return i
}

// Most pieces of most text are a word: ASCII letters, after a space or a
// mark. asciiWord finds where such a piece ends (0 when the piece is not
// one, or cannot be told from ASCII alone) for both patterns' letter
// alternatives, which for ASCII letters alone match one way: the first
// pattern's [upper]*[lower]+ is a run of capitals then one of small
// letters (no ASCII letter is in both classes, so nothing is given back),
// and the second's \p{L}+ a run of letters. The general matchers below
// cost a call a character, a third of a count (issue 33, tenth round).
//
// upperFirst: capitals may lead the small letters (o200k_base); otherwise
// any ASCII letters make the run (cl100k_base).
func asciiWord(s string, i int, upperFirst bool) int {
	j := i
	if c := s[j]; c < utf8.RuneSelf && asciiClass[c]&(cLetter|cNumber|cLineEnd) == 0 && c != '\'' {
		j++ // the optional leading mark: a space, a punctuation mark
	}
	start := j
	if upperFirst {
		for j < len(s) && s[j]-'A' < 26 {
			j++
		}
		upper := j
		for j < len(s) && s[j]-'a' < 26 {
			j++
		}
		if j == upper {
			return 0 // no small letter after the capitals: [upper]+[lower]* or other, elsewhere
		}
	} else {
		for j < len(s) && (s[j]|0x20)-'a' < 26 {
			j++
		}
		if j == start {
			return 0
		}
	}
	if j == len(s) {
		return j
	}
	switch c := s[j]; {
	case c >= utf8.RuneSelf:
		return 0 // maybe a letter or a mark that continues the run
	case c == '\'' && upperFirst:
		return contraction(s, j)
	}
	// cl100k_base's contractions are an alternative of their own, which
	// starts the next piece.
	return j
}

// o200kPiece is where the o200k_base piece starting at i < len(s) ends.
func o200kPiece(s string, i int) int {
	if j := asciiWord(s, i, true); j > 0 {
		return j
	}
	p := prefix(s, i)
	// [^\r\n\p{L}\p{N}]?[upper]*[lower]+'s?, with the prefix, then without.
	if p > 0 {
		if j := o200kUpperLower(s, i+p); j > 0 {
			return j
		}
	}
	if j := o200kUpperLower(s, i); j > 0 {
		return j
	}
	// [^\r\n\p{L}\p{N}]?[upper]+[lower]*'s?
	if p > 0 {
		if j := o200kUpperThenLower(s, i+p); j > 0 {
			return j
		}
	}
	if j := o200kUpperThenLower(s, i); j > 0 {
		return j
	}
	return numberSpaceOther(s, i, true)
}

// o200kUpperLower matches [upper]*[lower]+ and a contraction from j: 0 if
// it does not match. The upper run is given back a character at a time
// (backtracking) until a lower character follows it.
func o200kUpperLower(s string, j int) int {
	k, lastLower := runMarking(s, j, cUpper, cLower)
	if k < len(s) {
		if c, _ := at(s, k); c&cLower != 0 {
			return contraction(s, run(s, k, cLower))
		}
	}
	if lastLower < 0 {
		return 0
	}
	// The last character of the upper run that is lower too, alone: the
	// one after it is not lower.
	return contraction(s, lastLower)
}

// o200kUpperThenLower matches [upper]+[lower]* and a contraction from j.
func o200kUpperThenLower(s string, j int) int {
	k := run(s, j, cUpper)
	if k == j {
		return 0
	}
	return contraction(s, run(s, k, cLower))
}

// cl100kPiece is where the cl100k_base piece starting at i < len(s) ends.
func cl100kPiece(s string, i int) int {
	if j := contraction(s, i); j > i {
		return j
	}
	if j := asciiWord(s, i, false); j > 0 {
		return j
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+, with the prefix, then without.
	if p := prefix(s, i); p > 0 {
		if j := run(s, i+p, cLetter); j > i+p {
			return j
		}
	}
	if j := run(s, i, cLetter); j > i {
		return j
	}
	return numberSpaceOther(s, i, false)
}

// numberSpaceOther is both patterns' common tail from i:
// \p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n<slash>]*|\s*[\r\n]+|\s+(?!\S)|\s+, where
// o200k_base's third alternative also takes slashes after the run.
func numberSpaceOther(s string, i int, slashes bool) int {
	c, w := at(s, i)
	if c&cNumber != 0 {
		j := i + w
		for n := 1; n < 3 && j < len(s); n++ {
			c, w := at(s, j)
			if c&cNumber == 0 {
				break
			}
			j += w
		}
		return j
	}
	// ' ?[^\s\p{L}\p{N}]+[\r\n]*' (and slashes)
	j := i
	if s[j] == ' ' {
		j++
	}
	if j < len(s) {
		if c, _ := at(s, j); c&other == 0 {
			for j < len(s) {
				c, w := at(s, j)
				if c&other != 0 {
					break
				}
				j += w
			}
			for j < len(s) && (s[j] == '\r' || s[j] == '\n' || slashes && s[j] == '/') {
				j++
			}
			return j
		}
	}
	// Whitespace from here on (every other character was taken above).
	k, lastLineEnd := runMarking(s, i, cSpace, cLineEnd)
	if k == i {
		// Not reached: a character is a letter, a number, whitespace or
		// other. One character, so that a split always moves on.
		return i + w
	}
	// \s*[\r\n]+: the run given back to its last line end (the one
	// after it is not a line end). tiktoken-go's matcher, code regexp2cg
	// generated, gives it back to its first: see tiktoken_test.go.
	if lastLineEnd >= 0 {
		return lastLineEnd
	}
	// \s+(?!\S): all of it at the end of the text, else all but its last
	// character, if that leaves one.
	if k == len(s) {
		return k
	}
	if _, last := utf8.DecodeLastRuneInString(s[i:k]); k-last > i {
		return k - last
	}
	// \s+
	return k
}
