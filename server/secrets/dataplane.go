package secrets

// Sealing to a data plane (DESIGN §7, enrollment): a remote data plane
// holds its own key pair, and the control plane re-seals each provider
// secret to the data plane's public key before the secret leaves it. The
// master key therefore never has to be on a data-plane host, and what one
// data plane receives opens on no other.
//
// The construction is HPKE (RFC 9180) from the standard library, base mode,
// single shot: KEM ML-KEM-768 + X25519 (X-Wing), HKDF-SHA256,
// ChaCha20-Poly1305. The hybrid KEM costs a larger public key (1,216 bytes)
// and ciphertext, and keeps a recorded bundle closed even to whoever later
// breaks X25519 alone.

import (
	"crypto/hpke"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
)

// recipientPrefix starts a value sealed to a data plane; the master
// keyring's values start with sealPrefix, so neither is mistaken for the
// other.
const recipientPrefix = "dp1"

var (
	recipientKEM  = hpke.MLKEM768X25519()
	recipientKDF  = hpke.HKDFSHA256()
	recipientAEAD = hpke.ChaCha20Poly1305()
)

// recipientInfo binds a sealed value to what it belongs to (aad, as with
// the keyring), and to this use, through HPKE's info.
func recipientInfo(aad string) []byte { return []byte("gw data-plane secret v1\x00" + aad) }

// DataPlaneKey is a data plane's private key: it opens what the control
// plane sealed to the matching public key.
type DataPlaneKey struct {
	priv hpke.PrivateKey
	pub  DataPlanePublicKey
}

// DataPlanePublicKey is the public half, which the control plane seals to.
type DataPlanePublicKey struct {
	pub hpke.PublicKey
	raw []byte
}

// GenerateDataPlaneKey makes a new key pair.
func GenerateDataPlaneKey() (*DataPlaneKey, error) {
	priv, err := recipientKEM.GenerateKey()
	if err != nil {
		return nil, fmt.Errorf("generate data-plane key: %w", err)
	}
	return dataPlaneKeyOf(priv)
}

func dataPlaneKeyOf(priv hpke.PrivateKey) (*DataPlaneKey, error) {
	pub := priv.PublicKey()
	return &DataPlaneKey{priv: priv, pub: DataPlanePublicKey{pub: pub, raw: pub.Bytes()}}, nil
}

// ParseDataPlaneKey reads a private key as written by Encode.
func ParseDataPlaneKey(text string) (*DataPlaneKey, error) {
	raw, err := hex.DecodeString(strings.TrimSpace(text))
	if err != nil {
		return nil, errors.New("data-plane key must be hex")
	}
	priv, err := recipientKEM.NewPrivateKey(raw)
	if err != nil {
		return nil, fmt.Errorf("data-plane key: %w", err)
	}
	return dataPlaneKeyOf(priv)
}

// Encode renders the private key as stored in its file.
func (k *DataPlaneKey) Encode() (string, error) {
	raw, err := k.priv.Bytes()
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(raw), nil
}

// Public is the key the control plane seals to.
func (k *DataPlaneKey) Public() DataPlanePublicKey { return k.pub }

// Open decrypts a value sealed to this key and bound to aad. It has the
// keyring's signature, so a data plane opens credentials with either.
func (k *DataPlaneKey) Open(sealed, aad string) ([]byte, error) {
	parts := strings.SplitN(sealed, ".", 3)
	if len(parts) != 3 || parts[0] != recipientPrefix {
		return nil, ErrCannotOpen
	}
	if parts[1] != k.pub.Fingerprint() {
		return nil, fmt.Errorf("%w: sealed to data-plane key %s, not this one (%s)", ErrCannotOpen, parts[1], k.pub.Fingerprint())
	}
	ct, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return nil, ErrCannotOpen
	}
	pt, err := hpke.Open(k.priv, recipientKDF, recipientAEAD, recipientInfo(aad), ct)
	if err != nil {
		return nil, ErrCannotOpen
	}
	return pt, nil
}

// ParseDataPlanePublicKey reads a public key as String writes it.
func ParseDataPlanePublicKey(text string) (DataPlanePublicKey, error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(text))
	if err != nil {
		return DataPlanePublicKey{}, errors.New("data-plane public key must be base64")
	}
	pub, err := recipientKEM.NewPublicKey(raw)
	if err != nil {
		return DataPlanePublicKey{}, fmt.Errorf("data-plane public key: %w", err)
	}
	return DataPlanePublicKey{pub: pub, raw: raw}, nil
}

// String is the public key in base64, as the API carries it.
func (p DataPlanePublicKey) String() string { return base64.StdEncoding.EncodeToString(p.raw) }

// Fingerprint is a short, stable name of the key (the first 128 bits of
// its SHA-256, hex): what an admin compares with what the data plane logs
// before enrolling it, and what a sealed value names.
func (p DataPlanePublicKey) Fingerprint() string {
	sum := sha256.Sum256(p.raw)
	return hex.EncodeToString(sum[:16])
}

// SealTo encrypts plaintext to a data plane's public key, bound to aad.
func SealTo(p DataPlanePublicKey, plaintext []byte, aad string) (string, error) {
	if p.pub == nil {
		return "", errors.New("seal: no data-plane public key")
	}
	ct, err := hpke.Seal(p.pub, recipientKDF, recipientAEAD, recipientInfo(aad), plaintext)
	if err != nil {
		return "", fmt.Errorf("seal to data plane: %w", err)
	}
	return recipientPrefix + "." + p.Fingerprint() + "." + base64.RawURLEncoding.EncodeToString(ct), nil
}

// Reseal opens a value sealed with the master keyring and seals it to a
// data plane: what the control plane does to each credential before it
// leaves. The plaintext lives only in this call.
func (kr *Keyring) Reseal(sealed, aad string, to DataPlanePublicKey) (string, error) {
	pt, err := kr.Open(sealed, aad)
	if err != nil {
		return "", err
	}
	defer clear(pt)
	return SealTo(to, pt, aad)
}

// LoadDataPlaneKey reads the data plane's key file, creating the key pair
// (mode 0600) on first start. created says it did.
func LoadDataPlaneKey(path string) (k *DataPlaneKey, created bool, err error) {
	raw, err := os.ReadFile(path)
	if err == nil {
		k, err := ParseDataPlaneKey(string(raw))
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", path, err)
		}
		return k, false, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, false, err
	}
	if k, err = GenerateDataPlaneKey(); err != nil {
		return nil, false, err
	}
	text, err := k.Encode()
	if err != nil {
		return nil, false, err
	}
	if err := writeSecretFile(path, text+"\n"); err != nil {
		return nil, false, err
	}
	return k, true, nil
}
