package bundle

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/google/uuid"
)

// Signed is a bundle as it travels and is stored: the body bytes exactly as
// signed, with their hash and signature. OrgID and Version repeat what the
// body says so a receiver can route and order bundles before verifying them;
// Verify checks that they agree.
type Signed struct {
	OrgID   uuid.UUID `json:"org_id"`
	Version int64     `json:"version"`
	// Hash is the hex SHA-256 of Body: the content address a poller sends
	// back as its ETag.
	Hash string `json:"hash"`
	// Signature is the base64 Ed25519 signature of Body.
	Signature string `json:"signature"`
	Body      []byte `json:"body"`
}

// ErrInvalid is wrapped by every reason Verify refuses a bundle.
var ErrInvalid = errors.New("invalid bundle")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// Sign encodes body and signs the bytes. It does not validate: Compile
// validates before it signs, and tests sign broken bodies on purpose.
func Sign(body *Body, key ed25519.PrivateKey) (Signed, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return Signed{}, fmt.Errorf("encode bundle: %w", err)
	}
	return Signed{
		OrgID:     body.OrgID,
		Version:   body.Version,
		Hash:      hashOf(data),
		Signature: base64.StdEncoding.EncodeToString(ed25519.Sign(key, data)),
		Body:      data,
	}, nil
}

func hashOf(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Verify checks that s is signed by pub and is a bundle this build can
// serve, and returns its body. The hash and the signature are checked before
// a byte of the body is parsed, so untrusted input reaches the parser only
// once it is known to come from the control plane.
func Verify(s Signed, pub ed25519.PublicKey) (*Body, error) {
	if len(pub) != ed25519.PublicKeySize {
		return nil, invalid("verification key has %d bytes, want %d", len(pub), ed25519.PublicKeySize)
	}
	if hashOf(s.Body) != s.Hash {
		return nil, invalid("hash does not match the body")
	}
	sig, err := base64.StdEncoding.DecodeString(s.Signature)
	if err != nil || !ed25519.Verify(pub, s.Body, sig) {
		return nil, invalid("signature does not verify")
	}
	body, err := decodeBody(s.Body)
	if err != nil {
		return nil, err
	}
	if body.OrgID != s.OrgID {
		return nil, invalid("body is for organization %s, envelope says %s", body.OrgID, s.OrgID)
	}
	if body.Version != s.Version {
		return nil, invalid("body has version %d, envelope says %d", body.Version, s.Version)
	}
	if err := body.Validate(); err != nil {
		return nil, err
	}
	return body, nil
}

// decodeBody parses strictly: an unknown member or trailing data means the
// body was written by something this build does not understand.
func decodeBody(data []byte) (*Body, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	body := new(Body)
	if err := dec.Decode(body); err != nil {
		return nil, invalid("body does not parse: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, invalid("body has trailing data")
	}
	return body, nil
}

// ErrStale is a data plane's refusal of a bundle not newer than the one
// admitted for its organization; the admitted bundle stays in force.
var ErrStale = errors.New("bundle is not newer than the admitted one")

// ErrForgotten is a data plane's refusal of a bundle of an organization it
// was told is deleted.
var ErrForgotten = errors.New("organization was deleted")
