package mcpgw

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
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
	// Caps are the client capabilities the caller declared at initialize
	// that gw relays (sampling, elicitation, roots): gw declares them to
	// the upstreams, and relays their requests of those kinds to the
	// caller.
	Caps map[string]json.RawMessage `json:"c,omitempty"`
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

// relayID is what the id of an upstream's request relayed to the caller
// carries (sampling/createMessage, elicitation/create, roots/list): the
// upstream, the upstream session the request came on and its own id, so
// the caller's answer, POSTed to any replica, goes back to that session
// with that id. Sealed like a session, under the caller's key.
type relayID struct {
	Server  string          `json:"s"`
	Session session         `json:"u"`
	ID      json.RawMessage `json:"id"`
	Issued  int64           `json:"iat"`
}

const relayPrefix = "gwmcpr1."

// sealRelay seals r for the caller holding bearer.
func sealRelay(bearer string, r *relayID) (string, error) {
	aead, err := sessionAEAD(bearer)
	if err != nil {
		return "", err
	}
	plain, err := json.Marshal(r)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, aead.NonceSize())
	if err := randomBytes(nonce); err != nil {
		return "", err
	}
	return relayPrefix + base64.RawURLEncoding.EncodeToString(aead.Seal(nonce, nonce, plain, []byte(relayPrefix))), nil
}

// openRelay opens a relayed request's id sealed for bearer, refusing one
// older than maxAge.
func openRelay(bearer, id string, now time.Time, maxAge time.Duration) (*relayID, error) {
	rest, ok := strings.CutPrefix(id, relayPrefix)
	if !ok {
		return nil, errBadSession
	}
	raw, err := base64.RawURLEncoding.DecodeString(rest)
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
	plain, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], []byte(relayPrefix))
	if err != nil {
		return nil, errBadSession
	}
	var r relayID
	if err := json.Unmarshal(plain, &r); err != nil || len(r.ID) == 0 {
		return nil, errBadSession
	}
	if age := now.Sub(time.Unix(r.Issued, 0)); age < -time.Minute || age > maxAge {
		return nil, errBadSession
	}
	return &r, nil
}
