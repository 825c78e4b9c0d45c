package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"math/big"
)

// Token prefixes. The prefix says what a secret is before any lookup, so an
// inference key sent to the control plane is refused without a query.
const (
	ManagementKeyPrefix = "sk-cp-"
	InferenceKeyPrefix  = "sk-gw-"
	SessionPrefix       = "ses_"
	InvitationPrefix    = "inv_"
	SetupTokenPrefix    = "setup_"
)

// tokenChars is base62: URL-, shell- and copy-paste-safe.
const tokenChars = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// tokenLen characters of base62 carry 43 × log2(62) ≈ 256 bits.
const tokenLen = 43

// displayLen is how much of a token is kept in clear as its prefix: enough
// to tell keys apart in a list, far too little to guess the rest.
const displayLen = 8

// NewToken returns a fresh secret with the given prefix, the short display
// prefix to store beside its hash, and the hash itself.
func NewToken(prefix string) (token, display, hash string) {
	max := big.NewInt(int64(len(tokenChars)))
	buf := make([]byte, tokenLen)
	for i := range buf {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			// crypto/rand never fails on supported platforms; a gateway that
			// cannot draw randomness must not mint credentials.
			panic("auth: reading random bytes: " + err.Error())
		}
		buf[i] = tokenChars[n.Int64()]
	}
	token = prefix + string(buf)
	return token, token[:len(prefix)+displayLen], HashToken(token)
}

// HashToken is the stored form of a high-entropy secret. A plain SHA-256 is
// enough here: the secrets carry 256 bits, so there is nothing to stretch.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}
