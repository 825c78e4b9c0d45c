// Package archive keeps a copy of each request's body and answer (after
// redaction) in a workspace's own object store (issue 32), off the hot
// path: a request hands its payload to the Writer, which spools it on
// disk and uploads it in the background, retrying with backoff while the
// store is down, so the archive never fails or slows a request and
// nothing is lost when the store comes back. Each request is one object
// whose key is built from its usage event id (Key), so an upload retried
// after a crash rewrites the same object: exactly one object a request.
//
// The package holds the pure parts (Key, Encode, Decode, Expired) and the
// S3 client (Client), which dials through server/egress.
package archive

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Destination is where a workspace's payloads go: an S3-compatible bucket.
// The secret is in the clear here; it is sealed everywhere it is stored.
type Destination struct {
	Endpoint, Region, Bucket, Prefix string
	AccessKeyID, SecretAccessKey     string
	PathStyle                        bool
}

// Include names what an archived object holds.
const (
	IncludeRequest  = "request"
	IncludeResponse = "response"
)

// Payload is one request's archived object.
type Payload struct {
	// UsageEventID is the request's usage event id (the object's name);
	// RequestID the X-Request-Id it answered.
	UsageEventID uuid.UUID `json:"usage_event_id"`
	RequestID    string    `json:"request_id,omitempty"`
	OrgID        uuid.UUID `json:"org_id"`
	WorkspaceID  uuid.UUID `json:"workspace_id"`
	Endpoint     string    `json:"endpoint,omitempty"`
	OccurredAt   time.Time `json:"occurred_at"`
	// Request and Response are the bodies: JSON as JSON, anything else
	// (an event stream) as a JSON string; absent when not included.
	Request  json.RawMessage `json:"request,omitempty"`
	Response json.RawMessage `json:"response,omitempty"`
	// ResponseCut: the answer was longer than what was kept of it.
	ResponseCut bool `json:"response_truncated,omitempty"`
}

// Body is b as a Payload carries it: itself when it is JSON, else a JSON
// string of it (an event stream's text).
func Body(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	if json.Valid(b) {
		return append(json.RawMessage(nil), b...)
	}
	s, _ := json.Marshal(string(b))
	return s
}

// Key is the object key of a request's payload:
// <prefix>/<org>/<workspace>/<yyyy>/<mm>/<dd>/<usage event id>.json.gz,
// the date the request's (UTC). The name is gw's own id, never the
// caller's X-Request-Id: a caller may reuse or shape that one.
func Key(prefix string, org, workspace uuid.UUID, occurred time.Time, id uuid.UUID) string {
	d := occurred.UTC()
	k := fmt.Sprintf("%s/%s/%04d/%02d/%02d/%s.json.gz", org, workspace, d.Year(), int(d.Month()), d.Day(), id)
	if p := strings.Trim(prefix, "/"); p != "" {
		return p + "/" + k
	}
	return k
}

// WorkspacePrefix is the key prefix under which a workspace's payloads
// are (with its trailing slash), for listing.
func WorkspacePrefix(prefix string, org, workspace uuid.UUID) string {
	k := org.String() + "/" + workspace.String() + "/"
	if p := strings.Trim(prefix, "/"); p != "" {
		return p + "/" + k
	}
	return k
}

// Expired reports whether the object at key (under the workspace prefix
// wp) holds a request of a day that ended retentionDays or more before
// now; a key that is not one of Key's shape is never expired.
func Expired(wp, key string, now time.Time, retentionDays int) bool {
	if retentionDays <= 0 || !strings.HasPrefix(key, wp) {
		return false
	}
	rest := strings.TrimPrefix(key, wp)
	parts := strings.Split(rest, "/")
	if len(parts) != 4 || !strings.HasSuffix(parts[3], ".json.gz") {
		return false
	}
	day, err := time.Parse("2006/01/02", path.Join(parts[0], parts[1], parts[2]))
	if err != nil {
		return false
	}
	cutoff := time.Date(now.UTC().Year(), now.UTC().Month(), now.UTC().Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, -retentionDays)
	return day.Before(cutoff)
}

// Encode is p as its object holds it: gzipped JSON.
func Encode(p *Payload) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzips.Get().(*gzip.Writer)
	defer gzips.Put(zw)
	zw.Reset(&buf)
	if err := json.NewEncoder(zw).Encode(p); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// gzips are reused compressors: a gzip.Writer's state is hundreds of
// kilobytes, too much to allocate for each request. BestSpeed: the
// archive is written once and read rarely.
var gzips = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
	return zw
}}

// maxObject bounds what Decode reads of an object once unzipped.
const maxObject = 256 << 20

// Decode is the JSON an object holds (Encode's inverse, as bytes).
func Decode(gz []byte) (json.RawMessage, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("archived object is not gzip: %w", err)
	}
	b, err := io.ReadAll(io.LimitReader(zr, maxObject))
	if err != nil {
		return nil, fmt.Errorf("archived object does not unzip: %w", err)
	}
	if !json.Valid(b) {
		return nil, fmt.Errorf("archived object is not JSON")
	}
	return bytes.TrimSpace(b), nil
}
