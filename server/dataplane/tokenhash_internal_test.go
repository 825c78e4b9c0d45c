package dataplane

import (
	"strings"
	"testing"

	"github.com/gw-gateway/gw/server/auth"
)

// tokenHash is auth.HashToken, which the admitted keys are indexed by,
// for every token: real ones, empty, long, and bytes that are not UTF-8.
func TestTokenHashIsHashToken(t *testing.T) {
	tokens := []string{"", "sk-gw-", "\xff\xfe not utf-8", strings.Repeat("x", 10_000)}
	for range 50 {
		token, _, _ := auth.NewToken(auth.InferenceKeyPrefix)
		tokens = append(tokens, token)
	}
	for _, token := range tokens {
		var got [64]byte
		tokenHash(&got, token)
		if want := auth.HashToken(token); string(got[:]) != want {
			t.Fatalf("tokenHash(%q) = %s, auth.HashToken = %s", token, got[:], want)
		}
	}
}
