// Package scim is SCIM 2.0 (RFC 7643, RFC 7644) as gw speaks it: the
// resource shapes of users and groups, reading them from a request body,
// the PATCH operations in both the Okta and the Microsoft Entra forms,
// the filters gw supports, paging, the error shape and the discovery
// documents. Pure functions: no I/O, no HTTP, no store. The handlers
// live in server/api (scim.go) and the changes in server/backend
// (scim.go); docs/identity.md says what is supported.
package scim

import (
	"encoding/json"
	"fmt"
	"net/mail"
	"strconv"
	"strings"
	"time"
)

// The schema and message URNs.
const (
	SchemaUser                  = "urn:ietf:params:scim:schemas:core:2.0:User"
	SchemaGroup                 = "urn:ietf:params:scim:schemas:core:2.0:Group"
	SchemaEnterpriseUser        = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"
	SchemaListResponse          = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
	SchemaPatchOp               = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
	SchemaError                 = "urn:ietf:params:scim:api:messages:2.0:Error"
	SchemaServiceProviderConfig = "urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"
	SchemaResourceType          = "urn:ietf:params:scim:schemas:core:2.0:ResourceType"
	SchemaSchema                = "urn:ietf:params:scim:schemas:core:2.0:Schema"
)

// ContentType is the media type of every SCIM answer.
const ContentType = "application/scim+json"

// The scimType values of RFC 7644 §3.12 gw answers with.
const (
	InvalidFilter = "invalidFilter"
	InvalidSyntax = "invalidSyntax"
	InvalidPath   = "invalidPath"
	InvalidValue  = "invalidValue"
	NoTarget      = "noTarget"
	Mutability    = "mutability"
	Uniqueness    = "uniqueness"
	TooMany       = "tooMany"
)

// Error is a refusal in SCIM's terms: an HTTP status, a scimType (for
// 400 and 409) and a sentence. It never holds a secret.
type Error struct {
	Status   int
	ScimType string
	Detail   string
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.ScimType, e.Detail) }

// Errorf is a refusal with a status and a scimType.
func Errorf(status int, scimType, format string, args ...any) *Error {
	return &Error{Status: status, ScimType: scimType, Detail: fmt.Sprintf(format, args...)}
}

func badRequest(scimType, format string, args ...any) *Error {
	return Errorf(400, scimType, format, args...)
}

// ErrorBody is an error's body (RFC 7644 §3.12); status is a string, as
// the RFC's examples have it.
type ErrorBody struct {
	Schemas  []string `json:"schemas"`
	Status   string   `json:"status"`
	ScimType string   `json:"scimType,omitempty"`
	Detail   string   `json:"detail"`
}

// Body is the error's body.
func (e *Error) Body() ErrorBody {
	return ErrorBody{Schemas: []string{SchemaError}, Status: strconv.Itoa(e.Status), ScimType: e.ScimType, Detail: e.Detail}
}

// Meta is a resource's metadata.
type Meta struct {
	ResourceType string `json:"resourceType"`
	Created      string `json:"created,omitempty"`
	LastModified string `json:"lastModified,omitempty"`
	Location     string `json:"location,omitempty"`
}

func meta(kind, location string, created, modified time.Time) Meta {
	m := Meta{ResourceType: kind, Location: location}
	if !created.IsZero() {
		m.Created = created.UTC().Format(time.RFC3339)
	}
	if !modified.IsZero() {
		m.LastModified = modified.UTC().Format(time.RFC3339)
	}
	return m
}

// Ref is a reference to another resource: a group's member, a user's
// group.
type Ref struct {
	Value   string `json:"value"`
	Display string `json:"display,omitempty"`
	Ref     string `json:"$ref,omitempty"`
}

// ListResponse is a page of resources (RFC 7644 §3.4.2).
type ListResponse struct {
	Schemas      []string `json:"schemas"`
	TotalResults int      `json:"totalResults"`
	StartIndex   int      `json:"startIndex"`
	ItemsPerPage int      `json:"itemsPerPage"`
	Resources    []any    `json:"Resources"`
}

// attrs reads a JSON object with its member names folded to lower case:
// SCIM attribute names are case-insensitive (RFC 7643 §2.1).
func attrs(raw json.RawMessage, what string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, badRequest(InvalidSyntax, "%s must be a JSON object", what)
	}
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		out[strings.ToLower(k)] = v
	}
	return out, nil
}

func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// stringValue reads a string attribute; null reads as "".
func stringValue(raw json.RawMessage, name string) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", badRequest(InvalidValue, "%s must be a string", name)
	}
	if len(s) > 1024 || strings.ContainsRune(s, 0) {
		return "", badRequest(InvalidValue, "%s is too long or holds a NUL character", name)
	}
	return s, nil
}

// boolValue reads a boolean, also as the strings "true" and "false" in
// any case (Microsoft Entra sends "False").
func boolValue(raw json.RawMessage, name string) (bool, error) {
	var b bool
	if err := json.Unmarshal(raw, &b); err == nil {
		return b, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
	}
	return false, badRequest(InvalidValue, "%s must be a boolean", name)
}

// CheckUserName refuses a userName that is no email address: gw's
// accounts are people's emails, and userName is the email.
func CheckUserName(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return "", badRequest(InvalidValue, "userName is required (the person's email address)")
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || len(s) > 254 {
		return "", badRequest(InvalidValue, "userName must be an email address: gw's accounts are people's emails")
	}
	return s, nil
}

// Page is the slice [lo, hi) of total items that startIndex (1-based)
// and count select (RFC 7644 §3.4.2.4): a startIndex below 1 is 1, a
// negative count is 0, and count is at most max.
func Page(total, startIndex, count, max int) (lo, hi int) {
	if startIndex < 1 {
		startIndex = 1
	}
	if count < 0 {
		count = 0
	}
	if count > max {
		count = max
	}
	lo = startIndex - 1
	if lo > total {
		lo = total
	}
	hi = lo + count
	if hi > total {
		hi = total
	}
	return lo, hi
}
