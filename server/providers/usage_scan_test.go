package providers

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// unmarshalUsage is what scanOpenAIUsage stands in for.
func unmarshalUsage(raw []byte) (openAIUsage, error) {
	var u openAIUsage
	err := json.Unmarshal(raw, &u)
	return u, err
}

// checkScan holds scanOpenAIUsage to json.Unmarshal on raw: where it
// answers, it answers what Unmarshal does, and Unmarshal succeeds.
func checkScan(t *testing.T, raw []byte) bool {
	t.Helper()
	got, ok := scanOpenAIUsage(raw)
	if !ok {
		return false
	}
	want, err := unmarshalUsage(raw)
	if err != nil {
		t.Fatalf("scan took %s, which json.Unmarshal refuses: %v", raw, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\nscan      %+v %+v %+v\nunmarshal %+v %+v %+v", raw, got, got.PromptTokensDetails, got.CompletionTokensDetails,
			want, want.PromptTokensDetails, want.CompletionTokensDetails)
	}
	return true
}

func TestScanOpenAIUsageMatchesUnmarshal(t *testing.T) {
	fixed := []string{
		`{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":0}}`,
		`{"prompt_tokens":19,"completion_tokens":20,"total_tokens":39}`,
		`{"prompt_tokens":100,"completion_tokens":50,"total_tokens":150,"prompt_tokens_details":{"cached_tokens":20,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":30,"accepted_prediction_tokens":0}}`,
		`{"prompt_tokens":10,"prompt_cache_hit_tokens":4,"prompt_cache_miss_tokens":6}`,
		`{ "prompt_tokens" : 1 , "completion_tokens":null }`,
		`{"prompt_tokens_details":{"cached_tokens":5},"prompt_tokens_details":{}}`,
		`{"prompt_tokens_details":{"cached_tokens":5},"prompt_tokens_details":null}`,
		`{"prompt_tokens_details":null,"prompt_tokens_details":{"cached_tokens":2}}`,
		`{"prompt_tokens":1,"prompt_tokens":2}`,
		`{"prompt_tokens":-3}`,
		`{"prompt_tokens":9223372036854775807}`,
		`{"prompt_tokens":-9223372036854775808}`,
		`{}`,
		`{"prompt_tokens":5000,"completion_tokens":10,"prompt_tokens_details":{"cached_tokens":1000,"cache_write_tokens":3207}}`,
		`{"prompt_tokens_details":{"cache_write_tokens":4},"prompt_tokens_details":{"cached_tokens":1}}`,
	}
	for _, raw := range fixed {
		if !checkScan(t, []byte(raw)) {
			t.Errorf("the fast path declined %s", raw)
		}
	}
	// Shapes it must leave to json.Unmarshal (which may refuse them).
	for _, raw := range []string{
		`{"Prompt_Tokens":3}`, `{"prompt_tokens":1.0}`, `{"prompt_tokens":1e3}`, `{"prompt_tokens":"3"}`,
		`{"prompt_tokens":9223372036854775808}`, `{"prompt_tokens":-9223372036854775809}`, `{"\u0070rompt_tokens":3}`,
		`{"prompt_tokens_details":{"Cached_Tokens":3}}`, `{"prompt_tokens_details":{"Cache_Write_Tokens":3}}`, `{"prompt_tokens_details":7}`, `[1]`, `null`, `{"prompt_tokens":1`,
		`{"prompt_tokens":true}`, `{"prompt_\u212atokens":1}`,
	} {
		if _, ok := scanOpenAIUsage([]byte(raw)); ok {
			t.Errorf("the fast path took %s", raw)
		}
	}
	// Random usage objects of the members upstreams send, in random order,
	// with duplicates, nulls and unknown members.
	rng := rand.New(rand.NewPCG(1, 2))
	keys := []string{"prompt_tokens", "completion_tokens", "total_tokens", "prompt_cache_hit_tokens", "prompt_cache_miss_tokens", "extra"}
	num := func() string {
		switch rng.IntN(8) {
		case 0:
			return "null"
		case 1:
			return "-" + strings.Repeat("9", 1+rng.IntN(19))
		case 2:
			return strings.Repeat("9", 1+rng.IntN(20))
		default:
			return strconv.Itoa(rng.IntN(100_000))
		}
	}
	details := func(inner string) string {
		if rng.IntN(5) == 0 {
			return "null"
		}
		var parts []string
		for range rng.IntN(3) {
			k := inner
			if rng.IntN(3) == 0 {
				k = "audio_tokens"
			}
			parts = append(parts, `"`+k+`":`+num())
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	took := 0
	for range 20000 {
		var parts []string
		for range rng.IntN(8) {
			switch r := rng.IntN(len(keys) + 2); {
			case r < len(keys):
				parts = append(parts, `"`+keys[r]+`":`+num())
			case r == len(keys):
				parts = append(parts, `"prompt_tokens_details":`+details("cached_tokens"))
			default:
				parts = append(parts, `"completion_tokens_details":`+details("reasoning_tokens"))
			}
		}
		if checkScan(t, []byte("{"+strings.Join(parts, ",")+"}")) {
			took++
		}
	}
	if took < 10000 {
		t.Errorf("the fast path took only %d of 20000 objects", took)
	}
}

func FuzzScanOpenAIUsage(f *testing.F) {
	f.Add([]byte(`{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":0}}`))
	f.Add([]byte(`{"prompt_tokens_details":{"cached_tokens":5},"prompt_tokens_details":{}}`))
	f.Add([]byte(`{"completion_tokens_details":{"reasoning_tokens":-1},"PROMPT_TOKENS":2}`))
	f.Fuzz(func(t *testing.T, raw []byte) { checkScan(t, raw) })
}

func BenchmarkDecodeOpenAIUsage(b *testing.B) {
	raw := []byte(`{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":0}}`)
	b.Run("unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = unmarshalUsage(raw)
		}
	})
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = scanOpenAIUsage(raw)
		}
	})
}
