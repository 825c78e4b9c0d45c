package tokens

import (
	"encoding/binary"
	"errors"
	"hash/maphash"
	"math/bits"
	"strings"
)

// The vocabularies, written by internal/vocabgen from tiktoken-go's copy
// of OpenAI's encodings (see there for the form).
//
//go:generate go run ./internal/vocabgen
const vocabMagic = "gw-bpe 1\n"

// vocab is an encoding's tokens and their ranks, kept without a pointer
// the garbage collector would follow: the tokens' bytes in one array,
// their offsets by rank, and an open-addressed table of ranks by hash. A
// map of strings (tiktoken-go's) held 8.4 MiB the collector scanned at
// every cycle, a third of gw's live heap (issue 33, ninth round).
//
// Counting is lookups, most of them of byte pairs that are no token
// (merging a word starts from its bytes), each a read from memory the
// processor's caches seldom hold for a varied text: a lookup reads one
// slot, which holds a short token's bytes themselves and a long one's
// whole hash, so a slot of another string is passed without reading the
// token's bytes (two more reads, its end and its bytes, were two thirds
// of counting's time; issue 33, tenth round). Tokens of one and two
// bytes are found by their bytes alone.
type vocab struct {
	data  string   // every token's bytes, in rank order
	ends  []uint32 // ends[r]: where rank r's bytes end in data (start: ends[r-1])
	one   [256]uint32
	two   []uint32 // rank+1 of a two-byte token by its bytes (1<<16 of them), 0 for none
	slots []slot   // tokens of three bytes and more by hash; a power of two long
	mask  uint64
	seed  maphash.Seed
	mix   uint64 // a short key's seed
}

// slot is one token of three bytes or more in vocab's table.
type slot struct {
	// key is the token's bytes, little-endian, when it has at most
	// eight (shortKey); a longer one's hash.
	key  uint64
	rank uint32 // rank+1, 0 for an empty slot
	n    uint32 // the token's length
}

// parseVocab reads a vocabulary in vocabgen's form.
func parseVocab(raw string) (*vocab, error) {
	if !strings.HasPrefix(raw, vocabMagic) {
		return nil, errors.New("not a gw-bpe 1 vocabulary")
	}
	raw = raw[len(vocabMagic):]
	v := &vocab{seed: maphash.MakeSeed(), two: make([]uint32, 1<<16)}
	v.mix = maphash.String(v.seed, "mix")
	var data strings.Builder
	data.Grow(len(raw))
	count := 0
	for len(raw) > 0 {
		n, w := binary.Uvarint([]byte(raw[:min(len(raw), binary.MaxVarintLen64)]))
		if w <= 0 || uint64(len(raw)-w) < n {
			return nil, errors.New("vocabulary cut short")
		}
		data.WriteString(raw[w : w+int(n)])
		raw = raw[w+int(n):]
		v.ends = append(v.ends, uint32(data.Len()))
		if n > 2 {
			count++
		}
	}
	v.data = data.String()
	size := 1 << bits.Len(uint(2*count))
	v.slots, v.mask = make([]slot, size), uint64(size-1)
	for r := range v.ends {
		t := v.token(uint32(r))
		switch len(t) {
		case 0:
			continue
		case 1:
			v.one[t[0]] = uint32(r) + 1
			continue
		case 2:
			v.two[uint16(t[0])|uint16(t[1])<<8] = uint32(r) + 1
			continue
		}
		key, i := v.keyOf(t)
		for v.slots[i].rank != 0 {
			i = (i + 1) & v.mask
		}
		v.slots[i] = slot{key: key, rank: uint32(r) + 1, n: uint32(len(t))}
	}
	return v, nil
}

// token is rank r's bytes ("" for a rank without a token).
func (v *vocab) token(r uint32) string {
	start := uint32(0)
	if r > 0 {
		start = v.ends[r-1]
	}
	return v.data[start:v.ends[r]]
}

// keyOf is s's key in a slot and the slot its probe starts at.
func (v *vocab) keyOf(s string) (key, at uint64) {
	if len(s) <= 8 {
		key = shortKey(s)
		hi, lo := bits.Mul64(key^v.mix, 0x9e3779b97f4a7c15)
		return key, (hi ^ lo) & v.mask
	}
	key = maphash.String(v.seed, s)
	return key, key & v.mask
}

// shortKey is the bytes of s (at most eight), little-endian.
func shortKey(s string) uint64 {
	if len(s) == 8 {
		return binary.LittleEndian.Uint64([]byte(s))
	}
	var k uint64
	for i := len(s) - 1; i >= 0; i-- {
		k = k<<8 | uint64(s[i])
	}
	return k
}

// rank is s's rank, if s is a token.
func (v *vocab) rank(s string) (uint32, bool) {
	var r uint32
	switch len(s) {
	case 0:
		return 0, false
	case 1:
		r = v.one[s[0]]
	case 2:
		r = v.two[uint16(s[0])|uint16(s[1])<<8]
	default:
		key, i := v.keyOf(s)
		n := uint32(len(s))
		for {
			sl := &v.slots[i]
			if sl.rank == 0 {
				return 0, false
			}
			// A short token's key is its bytes; a long one's is a hash,
			// and the bytes decide.
			if sl.key == key && sl.n == n && (n <= 8 || v.token(sl.rank-1) == s) {
				r = sl.rank
				break
			}
			i = (i + 1) & v.mask
		}
	}
	return r - 1, r != 0
}
