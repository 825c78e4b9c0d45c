// Command vocabgen writes the BPE vocabularies server/tokens counts with,
// from tiktoken-go's copy of OpenAI's encodings, in the compact form
// server/tokens reads (vocab.go): run by go generate in server/tokens.
//
//	gw-bpe 1\n, then for each rank from 0: the token's length as a
//	uvarint and its bytes (length 0: no token has that rank).
//
// Reading the library's vocabulary builds its map (8 MiB of strings the
// collector scans at every cycle), which is why gw ships this form
// instead and the library is left to the tests, as the reference.
package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"

	"github.com/tiktoken-go/tokenizer"
)

func main() {
	for _, e := range []struct {
		enc  tokenizer.Encoding
		file string
	}{{tokenizer.O200kBase, "vocab/o200k_base.bpe"}, {tokenizer.Cl100kBase, "vocab/cl100k_base.bpe"}} {
		if err := write(e.enc, e.file); err != nil {
			fmt.Fprintln(os.Stderr, "vocabgen:", err)
			os.Exit(1)
		}
	}
}

func write(enc tokenizer.Encoding, file string) error {
	codec, err := tokenizer.Get(enc)
	if err != nil {
		return err
	}
	var ranks [][]byte
	last := -1
	// Ranks are dense but for a few gaps (special tokens live apart);
	// past the last one, a long run of unknown ranks ends the walk.
	for r := 0; r < last+1+4096; r++ {
		s, err := codec.Decode([]uint{uint(r)})
		if err != nil || s == "" {
			ranks = append(ranks, nil)
			continue
		}
		ranks = append(ranks, []byte(s))
		last = r
	}
	ranks = ranks[:last+1]
	var b bytes.Buffer
	b.WriteString(magic)
	var n [binary.MaxVarintLen64]byte
	for _, t := range ranks {
		b.Write(n[:binary.PutUvarint(n[:], uint64(len(t)))])
		b.Write(t)
	}
	return os.WriteFile(file, b.Bytes(), 0o644)
}

// magic is vocab.go's vocabMagic.
const magic = "gw-bpe 1\n"
