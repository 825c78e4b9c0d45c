// Package secrets seals provider secrets (and the bundle signing key) at
// rest with AES-256-GCM.
//
// A sealed value names the key that sealed it, so a keyring holding the
// current key and, during a rotation, the next or previous one opens every
// value whatever point a rotation reached. Each value is bound to what it
// belongs to (the additional data, e.g. "provider_credential:<id>"), so a
// sealed secret copied onto another row does not open.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// KeySize is the length of a secret key: 256 bits.
const KeySize = 32

const sealPrefix = "v1"

// Key is one AES-256 key with its short identifier.
type Key struct {
	ID  string
	raw []byte
}

// NewKey wraps raw key bytes.
func NewKey(raw []byte) (Key, error) {
	if len(raw) != KeySize {
		return Key{}, fmt.Errorf("secret key must be %d bytes, got %d", KeySize, len(raw))
	}
	sum := sha256.Sum256(raw)
	return Key{ID: hex.EncodeToString(sum[:4]), raw: append([]byte(nil), raw...)}, nil
}

// GenerateKey makes a random key.
func GenerateKey() (Key, error) {
	raw := make([]byte, KeySize)
	if _, err := rand.Read(raw); err != nil {
		return Key{}, fmt.Errorf("generate secret key: %w", err)
	}
	return NewKey(raw)
}

// ParseKey reads a key written as 64 hex digits or as base64 of 32 bytes.
func ParseKey(text string) (Key, error) {
	text = strings.TrimSpace(text)
	if raw, err := hex.DecodeString(text); err == nil && len(raw) == KeySize {
		return NewKey(raw)
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if raw, err := enc.DecodeString(text); err == nil && len(raw) == KeySize {
			return NewKey(raw)
		}
	}
	return Key{}, errors.New("secret key must be 64 hex digits or base64 of 32 bytes")
}

// Encode renders the key as stored in a key file.
func (k Key) Encode() string { return hex.EncodeToString(k.raw) }

// Keyring seals with its current key and opens with any key it holds.
type Keyring struct {
	current Key
	byID    map[string]Key
}

// NewKeyring builds a keyring sealing with current and also opening with
// others.
func NewKeyring(current Key, others ...Key) *Keyring {
	kr := &Keyring{current: current, byID: map[string]Key{current.ID: current}}
	for _, k := range others {
		kr.byID[k.ID] = k
	}
	return kr
}

// CurrentID is the identifier of the sealing key.
func (kr *Keyring) CurrentID() string { return kr.current.ID }

// Seal encrypts plaintext bound to aad.
func (kr *Keyring) Seal(plaintext []byte, aad string) (string, error) {
	gcm, err := newGCM(kr.current)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, gcm.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("seal: %w", err)
	}
	ct := gcm.Seal(nonce, nonce, plaintext, []byte(aad))
	return sealPrefix + "." + kr.current.ID + "." + base64.RawURLEncoding.EncodeToString(ct), nil
}

// ErrCannotOpen is returned for a value this keyring cannot open; the
// message never includes the value.
var ErrCannotOpen = errors.New("sealed secret cannot be opened (wrong key, or tampered)")

// Open decrypts a sealed value bound to aad.
func (kr *Keyring) Open(sealed, aad string) ([]byte, error) {
	k, body, err := kr.parse(sealed)
	if err != nil {
		return nil, err
	}
	gcm, err := newGCM(k)
	if err != nil {
		return nil, err
	}
	if len(body) < gcm.NonceSize() {
		return nil, ErrCannotOpen
	}
	pt, err := gcm.Open(nil, body[:gcm.NonceSize()], body[gcm.NonceSize():], []byte(aad))
	if err != nil {
		return nil, ErrCannotOpen
	}
	return pt, nil
}

// SealedWithCurrent reports whether a value is sealed with the current key
// (rotation re-seals the others).
func (kr *Keyring) SealedWithCurrent(sealed string) bool {
	parts := strings.SplitN(sealed, ".", 3)
	return len(parts) == 3 && parts[1] == kr.current.ID
}

func (kr *Keyring) parse(sealed string) (Key, []byte, error) {
	parts := strings.SplitN(sealed, ".", 3)
	if len(parts) != 3 || parts[0] != sealPrefix {
		return Key{}, nil, ErrCannotOpen
	}
	k, ok := kr.byID[parts[1]]
	if !ok {
		return Key{}, nil, fmt.Errorf("%w: sealed with key %s, which this keyring does not hold", ErrCannotOpen, parts[1])
	}
	body, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return Key{}, nil, ErrCannotOpen
	}
	return k, body, nil
}

func newGCM(k Key) (cipher.AEAD, error) {
	block, err := aes.NewCipher(k.raw)
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	return cipher.NewGCM(block)
}

// KeyFiles names the files of a file-based key: the current key, and the
// next and previous keys a rotation leaves while it runs.
type KeyFiles struct {
	Current string
}

// Next is where a rotation writes the new key before re-sealing.
func (f KeyFiles) Next() string { return f.Current + ".next" }

// Previous is where a rotation keeps the old key afterwards.
func (f KeyFiles) Previous() string { return f.Current + ".previous" }

// LoadKeyring builds the keyring gw serve uses. A key given in the
// environment (GW_SECRET_KEY) wins; otherwise the key file is read, or
// created (mode 0600) when absent. The next/previous files of a rotation
// are added for opening.
func LoadKeyring(envKey string, files KeyFiles) (*Keyring, error) {
	var others []Key
	for _, path := range []string{files.Next(), files.Previous()} {
		if k, err := readKeyFile(path); err == nil {
			others = append(others, k)
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	if envKey != "" {
		k, err := ParseKey(envKey)
		if err != nil {
			return nil, fmt.Errorf("GW_SECRET_KEY: %w", err)
		}
		return NewKeyring(k, others...), nil
	}
	k, err := readKeyFile(files.Current)
	if errors.Is(err, os.ErrNotExist) {
		if k, err = GenerateKey(); err != nil {
			return nil, err
		}
		if err := WriteKeyFile(files.Current, k); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	return NewKeyring(k, others...), nil
}

func readKeyFile(path string) (Key, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Key{}, err
	}
	k, err := ParseKey(string(raw))
	if err != nil {
		return Key{}, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// WriteKeyFile writes a key atomically with mode 0600.
func WriteKeyFile(path string, k Key) error { return writeSecretFile(path, k.Encode()+"\n") }

// writeSecretFile writes text atomically with mode 0600, in a directory
// created 0700 if missing.
func writeSecretFile(path, text string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create key dir: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".secret-key-*")
	if err != nil {
		return fmt.Errorf("write key file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("write key file: %w", err)
	}
	if _, err := tmp.WriteString(text); err != nil {
		tmp.Close()
		return fmt.Errorf("write key file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write key file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write key file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write key file: %w", err)
	}
	return nil
}

// Keys returns every key of the ring, the current one first.
func (kr *Keyring) Keys() []Key {
	out := []Key{kr.current}
	for id, k := range kr.byID {
		if id != kr.current.ID {
			out = append(out, k)
		}
	}
	return out
}

// CredentialAAD binds a provider credential's sealed secret to its id, so a
// sealed value copied onto another credential does not open.
func CredentialAAD(id fmt.Stringer) string { return "provider_credential:" + id.String() }

// ArchiveAAD binds a workspace archive's sealed secret access key to its
// workspace, endpoint, bucket and access key id (issue 32): a sealed value
// copied onto another workspace, or kept while the destination changes,
// does not open.
func ArchiveAAD(workspaceID fmt.Stringer, endpoint, bucket, accessKeyID string) string {
	return "workspace_archive:" + workspaceID.String() + ":" + endpoint + ":" + bucket + ":" + accessKeyID
}

// GuardrailWebhookAAD binds a guardrail webhook's sealed signing secret to
// its guardrail and URL (issue 32): a sealed value copied onto another
// guardrail, or kept while the URL changes, does not open.
func GuardrailWebhookAAD(guardrailID fmt.Stringer, url string) string {
	return "guardrail_webhook:" + guardrailID.String() + ":" + url
}

// MCPServerAAD binds an MCP server's sealed secret to its id (issue 30).
func MCPServerAAD(id fmt.Stringer) string { return "mcp_server:" + id.String() }
