package providers

import (
	"encoding/json"
	"testing"
)

// OpenAI's explicit cache writes (GPT-5.6: prompt_tokens_details and
// input_tokens_details.cache_write_tokens) leave the fresh input, as
// Anthropic's do, and are never more than the prompt left after the reads.
func TestOpenAICacheWriteTokens(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		resp bool
		want Usage
	}{
		{"chat", `{"prompt_tokens":5000,"completion_tokens":10,"prompt_tokens_details":{"cached_tokens":1000,"cache_write_tokens":3207}}`, false,
			Usage{InputTokens: 793, OutputTokens: 10, CacheReadTokens: 1000, CacheWriteTokens: 3207}},
		{"chat, writes beyond the prompt", `{"prompt_tokens":100,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":40,"cache_write_tokens":90}}`, false,
			Usage{InputTokens: 0, OutputTokens: 1, CacheReadTokens: 40, CacheWriteTokens: 60}},
		{"responses", `{"input_tokens":5000,"output_tokens":10,"input_tokens_details":{"cached_tokens":0,"cache_write_tokens":3207}}`, true,
			Usage{InputTokens: 1793, OutputTokens: 10, CacheWriteTokens: 3207}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got Usage
			if tc.resp {
				got = decodeResponsesUsage(json.RawMessage(tc.raw))
			} else {
				got = decodeOpenAIUsage(json.RawMessage(tc.raw))
			}
			tc.want = tc.want.reported()
			if got != tc.want {
				t.Errorf("got %+v; want %+v", got, tc.want)
			}
		})
	}
}

func TestServiceTierName(t *testing.T) {
	for raw, want := range map[string]string{
		`"priority"`: "priority", `"flex"`: "flex", `"default"`: "default", `"scale_2"`: "scale_2",
		`"Priority"`: "", `""`: "", `null`: "", `1`: "", `"a b"`: "", `"1x"`: "", `"` + string(make([]byte, 40)) + `"`: "",
	} {
		if got := ServiceTierName([]byte(raw)); got != want {
			t.Errorf("ServiceTierName(%s) = %q; want %q", raw, got, want)
		}
	}
	// An answer's, found by the walk that sets its model.
	if _, _, tier, _ := rewriteAnswer([]byte(`{"id":"x","service_tier":"priority","usage":{}}`), jsonString("m")); ServiceTierName(tier) != "priority" {
		t.Errorf("an answer's service tier: %s", tier)
	}
	if _, _, tier, _ := rewriteAnswer([]byte(`{"id":"x","usage":{}}`), jsonString("m")); tier != nil {
		t.Errorf("an answer's service tier, without one: %s", tier)
	}
}
