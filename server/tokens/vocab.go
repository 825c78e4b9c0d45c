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
type vocab struct {
	data  string   // every token's bytes, in rank order
	ends  []uint32 // ends[r]: where rank r's bytes end in data (start: ends[r-1])
	slots []uint32 // rank+1 by hash, 0 for an empty slot; a power of two long
	mask  uint64
	seed  maphash.Seed
}

// parseVocab reads a vocabulary in vocabgen's form.
func parseVocab(raw string) (*vocab, error) {
	if !strings.HasPrefix(raw, vocabMagic) {
		return nil, errors.New("not a gw-bpe 1 vocabulary")
	}
	raw = raw[len(vocabMagic):]
	v := &vocab{seed: maphash.MakeSeed()}
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
		if n > 0 {
			count++
		}
	}
	v.data = data.String()
	size := 1 << bits.Len(uint(2*count))
	v.slots, v.mask = make([]uint32, size), uint64(size-1)
	for r := range v.ends {
		t := v.token(uint32(r))
		if t == "" {
			continue
		}
		i := maphash.String(v.seed, t) & v.mask
		for v.slots[i] != 0 {
			i = (i + 1) & v.mask
		}
		v.slots[i] = uint32(r) + 1
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

// rank is s's rank, if s is a token.
func (v *vocab) rank(s string) (uint32, bool) {
	i := maphash.String(v.seed, s) & v.mask
	for {
		r := v.slots[i]
		if r == 0 {
			return 0, false
		}
		if v.token(r-1) == s {
			return r - 1, true
		}
		i = (i + 1) & v.mask
	}
}
