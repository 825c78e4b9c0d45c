package usage

import "testing"

// matchersAgree holds the hand-written matchers to the patterns they
// replace (and which error messages still quote).
func matchersAgree(t *testing.T, s string) {
	t.Helper()
	if got, want := isWord(s, true), endpointPattern.MatchString(s); got != want {
		t.Errorf("isWord(%q, dot) = %v, endpointPattern says %v", s, got, want)
	}
	if got, want := isWord(s, false), reasonPattern.MatchString(s); got != want {
		t.Errorf("isWord(%q) = %v, reasonPattern says %v", s, got, want)
	}
	if got, want := validCost(s), costPattern.MatchString(s); got != want {
		t.Errorf("validCost(%q) = %v, costPattern says %v", s, got, want)
	}
}

var matcherCases = []string{"", "a", "z9", "chat.completions", "chat_completions", "Chat", "9a", "a-b", "a b", "a\n", "é",
	"a123456789012345678901234567890123456789012345678901234567890123", "a1234567890123456789012345678901234567890123456789012345678901234",
	"0", "12", "0.1", "1.123456789", "1.1234567890", "1.", ".1", "1..2", "1.2.3", "-1", "+1", "1e3", "١", "0.000000001", "00"}

func TestMatchersAgreeWithPatterns(t *testing.T) {
	for _, s := range matcherCases {
		matchersAgree(t, s)
	}
}

func FuzzMatchersAgreeWithPatterns(f *testing.F) {
	for _, s := range matcherCases {
		f.Add(s)
	}
	f.Fuzz(matchersAgree)
}
