package oauth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gw-gateway/gw/server/egress"
)

// Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-
// document, the MCP authorization spec of 2025-11-25): a client's
// client_id is an https URL, and the document there describes it.

// CIMDMaxBytes is the largest document gw reads; CIMDTimeout how long a
// fetch may take.
const (
	CIMDMaxBytes = 5 << 10
	CIMDTimeout  = 5 * time.Second
)

// ClientMetadata is what gw reads of a client's document.
type ClientMetadata struct {
	ClientID                string   `json:"client_id"`
	ClientName              string   `json:"client_name"`
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
}

// NewCIMDClient is the HTTP client documents are fetched with: dialled
// through server/egress under policy, which the caller makes refuse
// private addresses unless the instance allows them; no redirect is
// followed. roots, when set, replaces the system's trusted roots (tests).
func NewCIMDClient(policy func() egress.Policy, roots *x509.CertPool) *http.Client {
	d := egress.NewDialer(policy)
	tr := &http.Transport{DialContext: d.DialContext, TLSHandshakeTimeout: CIMDTimeout, ResponseHeaderTimeout: CIMDTimeout,
		MaxIdleConnsPerHost: 2, IdleConnTimeout: 30 * time.Second}
	if roots != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr, Timeout: CIMDTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// ClientIDURLProblem says what is wrong with a client_id URL, or "": https,
// a path other than "/", no fragment, credentials or dot segments.
func ClientIDURLProblem(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return "the client_id must be an https URL"
	}
	switch {
	case u.User != nil:
		return "the client_id URL must not carry credentials"
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return "the client_id URL must not have a fragment"
	case u.Path == "" || u.Path == "/":
		return "the client_id URL must have a path"
	case slices.Contains(strings.Split(u.Path, "/"), ".") || slices.Contains(strings.Split(u.Path, "/"), ".."):
		return "the client_id URL must not have dot segments"
	case len(raw) > 2048:
		return "the client_id URL is too long"
	}
	return ""
}

// FetchClientMetadata fetches and checks the document at clientID: a 200
// within CIMDMaxBytes and CIMDTimeout, JSON whose client_id is exactly the
// URL, with redirect_uris, and no client secret (a document describes a
// public client). Every refusal is an invalid_client Error saying why.
func FetchClientMetadata(ctx context.Context, hc *http.Client, clientID string) (*ClientMetadata, error) {
	refuse := func(format string, args ...any) error {
		return Errorf(http.StatusBadRequest, "invalid_client", "client metadata document "+clientID+": "+fmt.Sprintf(format, args...))
	}
	if p := ClientIDURLProblem(clientID); p != "" {
		return nil, Errorf(http.StatusBadRequest, "invalid_client", p)
	}
	ctx, cancel := context.WithTimeout(ctx, CIMDTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, clientID, nil)
	if err != nil {
		return nil, refuse("not a URL")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		var refused *egress.Refusal
		switch {
		case errors.As(err, &refused):
			return nil, refuse("its address is refused: %s (the instance setting oauth_cimd_allow_private allows private addresses)", refused.Class)
		case errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "Timeout") || strings.Contains(err.Error(), "timeout"):
			return nil, refuse("the fetch timed out after %s", CIMDTimeout)
		}
		return nil, refuse("could not be fetched")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, refuse("answered HTTP %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, CIMDMaxBytes+1))
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "deadline") || strings.Contains(err.Error(), "timeout") {
			return nil, refuse("the fetch timed out after %s", CIMDTimeout)
		}
		return nil, refuse("could not be read")
	}
	if len(body) > CIMDMaxBytes {
		return nil, refuse("is larger than %d bytes", CIMDMaxBytes)
	}
	var m ClientMetadata
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, refuse("is not a JSON object")
	}
	switch {
	case m.ClientID != clientID:
		return nil, refuse("its client_id is %q, not the URL it was fetched from", m.ClientID)
	case len(m.RedirectURIs) == 0:
		return nil, refuse("it lists no redirect_uris")
	case m.TokenEndpointAuthMethod != "" && m.TokenEndpointAuthMethod != "none":
		return nil, refuse("token_endpoint_auth_method %q is not supported (a document describes a public client: none)", m.TokenEndpointAuthMethod)
	}
	for _, u := range m.RedirectURIs {
		if !RedirectURIOK(u) {
			return nil, refuse("redirect URI %q is not allowed", u)
		}
	}
	if len(m.ClientName) > 200 {
		m.ClientName = m.ClientName[:200]
	}
	return &m, nil
}
