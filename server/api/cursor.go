package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/store"
)

// maxCursorLen bounds what we will even try to decode.
const maxCursorLen = 256

// cursorCodec makes opaque page cursors: a sort position bound to one
// collection, signed with the instance's cursor key. Tampered, foreign
// (another collection's, or another instance's) and oversized cursors all
// fail to open.
type cursorCodec struct {
	key []byte
}

type cursorBody struct {
	B string    `json:"b"` // collection binding, e.g. "audit:org:<id>"
	T int64     `json:"t"` // created_at, microseconds since the epoch
	I uuid.UUID `json:"i"`
}

func (c cursorCodec) seal(binding string, k store.PageKey) string {
	body, _ := json.Marshal(cursorBody{B: binding, T: k.CreatedAt.UnixMicro(), I: k.ID})
	enc := base64.RawURLEncoding
	return enc.EncodeToString(body) + "." + enc.EncodeToString(c.mac(body))
}

func (c cursorCodec) open(binding, cursor string) (*store.PageKey, bool) {
	if len(cursor) > maxCursorLen {
		return nil, false
	}
	payload, sig, ok := strings.Cut(cursor, ".")
	if !ok {
		return nil, false
	}
	// Strict: the unused low bits of a final character must be zero, else
	// several spellings would decode to the same bytes and an edited cursor
	// would still open.
	enc := base64.RawURLEncoding.Strict()
	body, err1 := enc.DecodeString(payload)
	mac, err2 := enc.DecodeString(sig)
	if err1 != nil || err2 != nil || !hmac.Equal(mac, c.mac(body)) {
		return nil, false
	}
	var b cursorBody
	if err := json.Unmarshal(body, &b); err != nil || b.B != binding {
		return nil, false
	}
	return &store.PageKey{CreatedAt: time.UnixMicro(b.T).UTC(), ID: b.I}, true
}

func (c cursorCodec) mac(body []byte) []byte {
	h := hmac.New(sha256.New, c.key)
	h.Write(body)
	return h.Sum(nil)[:16]
}
