package mcpgw

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"time"
)

// sessionToken is what a legacy session's Mcp-Session-Id carries: the
// negotiated version and the upstream sessions gw opened for it, by
// server id. It is sealed (AES-256-GCM) under a key derived from the
// caller's own bearer token, so any data-plane replica that admits the
// key opens it with no session store, a token is bound to its key, and
// nobody without the key can read or forge one.
type sessionToken struct {
	Version   string             `json:"v"`
	Issued    int64              `json:"iat"`
	Upstreams map[string]session `json:"u,omitempty"`
}

const sessionPrefix = "gwmcp1."

func sessionAEAD(bearer string) (cipher.AEAD, error) {
	key := sha256.Sum256([]byte("gw mcp session v1\x00" + bearer))
	block, err := aes.NewCipher(key[:])
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// sealSession seals t for the caller holding bearer.
func sealSession(bearer string, t *sessionToken) (string, error) {
	aead, err := sessionAEAD(bearer)
	if err != nil {
		return "", err
	}
	plain, err := json.Marshal(t)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, aead.NonceSize())
	if err := randomBytes(nonce); err != nil {
		return "", err
	}
	sealed := aead.Seal(nonce, nonce, plain, []byte(sessionPrefix))
	return sessionPrefix + base64.RawURLEncoding.EncodeToString(sealed), nil
}

var errBadSession = errors.New("mcpgw: not a session of this key")

// openSession opens a session id sealed for bearer, refusing one older
// than sessionLifetime.
func openSession(bearer, id string, now time.Time) (*sessionToken, error) {
	if len(id) <= len(sessionPrefix) || id[:len(sessionPrefix)] != sessionPrefix {
		return nil, errBadSession
	}
	raw, err := base64.RawURLEncoding.DecodeString(id[len(sessionPrefix):])
	if err != nil {
		return nil, errBadSession
	}
	aead, err := sessionAEAD(bearer)
	if err != nil {
		return nil, err
	}
	if len(raw) < aead.NonceSize() {
		return nil, errBadSession
	}
	plain, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], []byte(sessionPrefix))
	if err != nil {
		return nil, errBadSession
	}
	var t sessionToken
	if err := json.Unmarshal(plain, &t); err != nil {
		return nil, errBadSession
	}
	if age := now.Sub(time.Unix(t.Issued, 0)); age < -time.Minute || age > sessionLifetime {
		return nil, errBadSession
	}
	return &t, nil
}
