package tokens

import (
	_ "embed"
	"math"
	"sync"
)

//go:embed vocab/o200k_base.bpe
var o200kVocab string

//go:embed vocab/cl100k_base.bpe
var cl100kVocab string

// noRank marks a pair of parts that is no token.
const noRank = math.MaxUint32

// countTokens is how many tokens text is in v with split's pieces.
func countTokens(v *vocab, split func(string, int) int, text string) int64 {
	var n int64
	for i := 0; i < len(text); {
		j := split(text, i)
		n += int64(pieceTokens(v, text[i:j], nil))
		i = j
	}
	return n
}

// appendTokens appends text's tokens' ranks to dst (for the tests, which
// hold them to tiktoken-go's).
func appendTokens(dst []uint32, v *vocab, split func(string, int) int, text string) []uint32 {
	for i := 0; i < len(text); {
		j := split(text, i)
		pieceTokens(v, text[i:j], &dst)
		i = j
	}
	return dst
}

// scanMerge is the longest piece merged by scanning its parts (on the
// stack); a longer one is merged with a heap, as tiktoken-go does from
// 96 bytes, since scanning costs the square of its length.
const scanMerge = 64

// pieceTokens is how many tokens byte-pair encoding makes of piece,
// appending their ranks to *ranks when ranks is not nil.
func pieceTokens(v *vocab, piece string, ranks *[]uint32) int {
	if r, ok := v.rank(piece); ok {
		if ranks != nil {
			*ranks = append(*ranks, r)
		}
		return 1
	}
	if len(piece) <= scanMerge {
		return scanMergeTokens(v, piece, ranks)
	}
	return heapMergeTokens(v, piece, ranks)
}

// pairRank is the rank of piece[start:end], or noRank.
func pairRank(v *vocab, piece string, start, end int) uint32 {
	if r, ok := v.rank(piece[start:end]); ok {
		return r
	}
	return noRank
}

// scanMergeTokens merges, again and again, the leftmost pair of adjacent
// parts whose joined bytes have the lowest rank (tiktoken's
// byte_pair_merge), the parts starting as single bytes.
func scanMergeTokens(v *vocab, piece string, ranks *[]uint32) int {
	var offBuf [scanMerge + 1]int32
	var rankBuf [scanMerge + 1]uint32
	n := len(piece)
	off, rank := offBuf[:n+1], rankBuf[:n+1]
	for i := range off {
		off[i], rank[i] = int32(i), noRank
	}
	// rank[i]: the rank of parts i and i+1 joined.
	for i := 0; i+2 < len(off); i++ {
		rank[i] = pairRank(v, piece, int(off[i]), int(off[i+2]))
	}
	for len(off) > 1 {
		best, at := uint32(noRank), -1
		for i, r := range rank[:len(off)-1] {
			if r < best {
				best, at = r, i
			}
		}
		if at < 0 {
			break
		}
		// Parts at and at+1 become one: its pairs with its neighbours.
		if at+3 < len(off) {
			rank[at] = pairRank(v, piece, int(off[at]), int(off[at+3]))
		} else {
			rank[at] = noRank
		}
		if at > 0 {
			rank[at-1] = pairRank(v, piece, int(off[at-1]), int(off[at+2]))
		}
		off = append(off[:at+1], off[at+2:]...)
		rank = append(rank[:at+1], rank[at+2:]...)
	}
	if ranks != nil {
		for i := 0; i+1 < len(off); i++ {
			r, _ := v.rank(piece[off[i]:off[i+1]])
			*ranks = append(*ranks, r)
		}
	}
	return len(off) - 1
}

// heapMergeTokens is scanMergeTokens for a long piece: the parts a list,
// the candidate pairs a heap by rank, then position, so the pair merged
// is the same one the scan picks.
func heapMergeTokens(v *vocab, piece string, ranks *[]uint32) int {
	n := int32(len(piece))
	m := merges.Get().(*heapMerge)
	defer merges.Put(m)
	m.next, m.prev, m.rank = grow(m.next, n+1), grow(m.prev, n+1), grow(m.rank, n+1)
	next, prev, rank := m.next, m.prev, m.rank
	for i := range next {
		next[i], prev[i], rank[i] = int32(i)+1, int32(i)-1, noRank
	}
	next[n] = -1
	pairOf := func(i int32) uint32 {
		j := next[i]
		if j < 0 || next[j] < 0 {
			return noRank
		}
		return pairRank(v, piece, int(i), int(next[j]))
	}
	h := m.heap[:0]
	defer func() { m.heap = h[:0] }()
	for i := int32(0); i+2 <= n; i++ {
		if rank[i] = pairOf(i); rank[i] != noRank {
			h.push(rank[i], i)
		}
	}
	parts := int(n)
	for len(h) > 0 {
		r, i := h.pop()
		if rank[i] != r {
			continue // stale: merged away, or re-ranked since
		}
		// Parts i and next[i] become one.
		j := next[i]
		next[i] = next[j]
		if next[j] >= 0 {
			prev[next[j]] = i
		}
		next[j], rank[j] = -1, noRank
		parts--
		if rank[i] = pairOf(i); rank[i] != noRank {
			h.push(rank[i], i)
		}
		if p := prev[i]; p >= 0 {
			if rank[p] = pairOf(p); rank[p] != noRank {
				h.push(rank[p], p)
			}
		}
	}
	if ranks != nil {
		for i := int32(0); next[i] >= 0; i = next[i] {
			r, _ := v.rank(piece[i:next[i]])
			*ranks = append(*ranks, r)
		}
	}
	return parts
}

// heapMerge is heapMergeTokens' arrays, kept for the next long piece.
type heapMerge struct {
	next, prev []int32
	rank       []uint32
	heap       mergeHeap
}

var merges = sync.Pool{New: func() any { return new(heapMerge) }}

// grow is s with length n, its array reused when it is long enough.
func grow[T int32 | uint32](s []T, n int32) []T {
	if int32(cap(s)) >= n {
		return s[:n]
	}
	return make([]T, n)
}

// mergeHeap is a min-heap of candidate pairs, each its rank and its
// position in one word, so that the least is the lowest rank, then the
// leftmost.
type mergeHeap []uint64

func (h *mergeHeap) push(rank uint32, at int32) {
	*h = append(*h, uint64(rank)<<32|uint64(uint32(at)))
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if s[p] <= s[i] {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

func (h *mergeHeap) pop() (uint32, int32) {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < len(s) && s[l] < s[m] {
			m = l
		}
		if r := l + 1; r < len(s) && s[r] < s[m] {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return uint32(top >> 32), int32(uint32(top))
}
