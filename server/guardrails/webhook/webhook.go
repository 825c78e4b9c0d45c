// Package webhook calls guardrail webhook detectors (issue 32): gw POSTs
// the text as JSON, signed with the detector's sealed secret, and reads
// `{action, redactions}` back (server/guardrails parses it). Connections
// are dialled through server/egress, as upstream calls are; this is the
// one package outside server/providers that builds an HTTP request
// (server/boundaries_test.go names it, with the reason).
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/gw-gateway/gw/server/egress"
	"github.com/gw-gateway/gw/server/guardrails"
)

// MaxAnswer bounds a webhook's answer: past it the answer is garbage.
const MaxAnswer = 1 << 20

// Headers of a call: the Unix time of the call and the signature,
// "sha256=" and the hex HMAC-SHA256 of "<timestamp>.<body>" under the
// detector's secret (a detector without a secret sends no signature).
const (
	HeaderTimestamp = "X-Gw-Timestamp"
	HeaderSignature = "X-Gw-Signature"
)

// Body is what a webhook receives.
type Body struct {
	Guardrail string `json:"guardrail"`
	Stage     string `json:"stage"`
	Text      string `json:"text"`
}

// Secrets gives a detector's signing secret (opened from its seal) by
// guardrail id and detector index; "" when it has none.
type Secrets func(guardrailID string, detector int) string

// Caller is a guardrails.Hook over HTTP.
type Caller struct {
	client  *http.Client
	secrets Secrets
	now     func() time.Time
}

// New returns a caller dialling through the egress policy policy returns.
func New(policy func() egress.Policy, secrets Secrets) *Caller {
	d := egress.NewDialer(policy)
	return &Caller{
		client: &http.Client{
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 16,
				IdleConnTimeout: 90 * time.Second, TLSHandshakeTimeout: 10 * time.Second},
		},
		secrets: secrets,
		now:     time.Now,
	}
}

// Sign is the signature header's value for a body at a timestamp.
func Sign(secret, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(timestamp))
	m.Write([]byte("."))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Call POSTs the text and returns the 2xx answer's body. Failures are
// guardrails.HookErrors whose reasons name no text.
func (c *Caller) Call(ctx context.Context, req guardrails.HookRequest) ([]byte, error) {
	secret := ""
	if c.secrets != nil {
		secret = c.secrets(req.GuardrailID, req.Detector)
	}
	return c.CallSigned(ctx, req, secret)
}

// CallSigned is Call with the detector's signing secret given ("" sends
// no signature).
func (c *Caller) CallSigned(ctx context.Context, req guardrails.HookRequest, secret string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(req.TimeoutMS)*time.Millisecond)
	defer cancel()
	body, err := json.Marshal(Body{Guardrail: req.GuardrailID, Stage: string(req.Stage), Text: req.Text})
	if err != nil {
		return nil, &guardrails.HookError{Reason: "unencodable text"}
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, req.URL, bytes.NewReader(body))
	if err != nil {
		return nil, &guardrails.HookError{Reason: "bad url"}
	}
	hr.Header.Set("Content-Type", "application/json")
	ts := strconv.FormatInt(c.now().Unix(), 10)
	hr.Header.Set(HeaderTimestamp, ts)
	if secret != "" {
		hr.Header.Set(HeaderSignature, Sign(secret, ts, body))
	}
	resp, err := c.client.Do(hr)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return nil, &guardrails.HookError{Reason: "timeout"}
		}
		var refusal *egress.Refusal
		if errors.As(err, &refusal) {
			return nil, &guardrails.HookError{Reason: "refused by the egress policy"}
		}
		return nil, &guardrails.HookError{Reason: "unreachable"}
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, &guardrails.HookError{Reason: "status " + strconv.Itoa(resp.StatusCode)}
	}
	out, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswer+1))
	switch {
	case ctx.Err() != nil:
		return nil, &guardrails.HookError{Reason: "timeout"}
	case err != nil:
		return nil, &guardrails.HookError{Reason: "unreachable"}
	case len(out) > MaxAnswer:
		return nil, &guardrails.HookError{Reason: "garbage answer"}
	}
	return out, nil
}
