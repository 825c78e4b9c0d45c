package providers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Bedrock calls Amazon Bedrock's runtime API: Converse and ConverseStream,
// one request shape for every model family (Claude, Nova, Llama, Mistral,
// …). Requests are signed with AWS Signature Version 4 by the AWS SDK's
// signer, with the credential's access key, for its region.
type Bedrock struct {
	Client *http.Client
	keys   parsedSecrets
}

// bedrockSigner signs every Bedrock request; it keeps no per-request
// state, so one serves all.
var bedrockSigner = v4.NewSigner()

// Check translates the request and discards the result.
func (a *Bedrock) Check(call *Call, strict bool) error {
	out, err := translateConverse(call, strict)
	if err == nil && call.Prepared != nil {
		call.Prepared.converse = out
		call.Prepared.translations++
	}
	return err
}

// Complete implements Adapter.
func (a *Bedrock) Complete(ctx context.Context, call *Call) (*Completion, error) {
	resp, err := a.converse(ctx, call, false)
	if err != nil {
		return nil, err
	}
	return converseCompletion(resp, call)
}

// Stream implements Adapter.
func (a *Bedrock) Stream(ctx context.Context, call *Call) (ChunkStream, error) {
	resp, err := a.converse(ctx, call, true)
	if err != nil {
		return nil, err
	}
	return newConverseStream(resp.Body, call), nil
}

func (a *Bedrock) converse(ctx context.Context, call *Call, stream bool) (*http.Response, error) {
	req, kept, err := preparedConverse(call)
	if err != nil {
		return nil, err
	}
	body, err := encodeOnce(call, kept, req)
	if err != nil {
		return nil, invalid("", "invalid_json", "The request could not be translated for a Bedrock model.")
	}
	action := "/converse"
	if stream {
		action = "/converse-stream"
	}
	return a.post(ctx, call, action, body)
}

// post signs body and posts it to the model's action.
func (a *Bedrock) post(ctx context.Context, call *Call, action string, body []byte) (*http.Response, error) {
	v, err := a.keys.get(call, "", func() (any, error) {
		s, problem := parseAWSSecret(call.Secret)
		if problem != "" {
			return nil, credentialError(call, problem)
		}
		return aws.Credentials{AccessKeyID: s.AccessKeyID, SecretAccessKey: s.SecretAccessKey, SessionToken: s.SessionToken}, nil
	})
	if err != nil {
		return nil, err
	}
	u := bedrockBase(call) + "/model/" + awsPathEscape(call.UpstreamModel) + action
	sign := func(r *http.Request, call *Call, body rope) error {
		sum := sha256.New()
		for _, p := range body {
			sum.Write(p)
		}
		if err := bedrockSigner.SignHTTP(r.Context(), v.(aws.Credentials), r, hex.EncodeToString(sum.Sum(nil)), "bedrock", call.Settings.Region, time.Now().UTC()); err != nil {
			return credentialError(call, "the request could not be signed")
		}
		return nil
	}
	return send(ctx, a.Client, call, upstreamPost{url: u, body: rope{body}, accept: "application/json", authorize: sign,
		refusal: bedrockStatusError})
}

// bedrockHost is the catalog's regional runtime host, whose region the
// credential's replaces; any other base URL (a VPC endpoint, a proxy) is
// the credential's own choice and kept.
var bedrockHost = regexp.MustCompile(`^(https://bedrock-runtime(?:-fips)?\.)[a-z0-9-]+(\.amazonaws\.com)$`)

func bedrockBase(call *Call) string {
	base := trimBase(call.BaseURL)
	if m := bedrockHost.FindStringSubmatch(base); m != nil && call.Settings.Region != "" {
		return m[1] + call.Settings.Region + m[2]
	}
	return base
}

// awsPathEscape escapes a path segment as AWS does: everything but the
// unreserved characters (a model id's ':' and an ARN's '/' included).
func awsPathEscape(s string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

// bedrockErrorKind classifies an AWS error type (the x-amzn-ErrorType
// header, or a stream exception's type, in either case).
func bedrockErrorKind(errType string, status int) ErrorKind {
	t := strings.ToLower(errType)
	if i := strings.IndexByte(t, ':'); i >= 0 {
		t = t[:i]
	}
	switch t {
	case "throttlingexception", "servicequotaexceededexception", "modelnotreadyexception", "toomanyrequestsexception":
		return RateLimited
	case "accessdeniedexception", "unrecognizedclientexception", "invalidsignatureexception", "expiredtokenexception",
		"incompletesignatureexception", "missingauthenticationtokenexception":
		return Unauthorized
	case "internalserverexception", "serviceunavailableexception", "modelstreamerrorexception", "modelerrorexception":
		return Unavailable
	case "modeltimeoutexception":
		return Timeout
	case "validationexception", "resourcenotfoundexception":
		return Rejected
	}
	if status == 0 {
		return Unavailable
	}
	return statusKind(status)
}

// bedrockStatusError reads an AWS error answer: {"message": "…"} with the
// error's type in x-amzn-ErrorType.
func bedrockStatusError(resp *http.Response, call *Call) *Error {
	errType := resp.Header.Get("X-Amzn-Errortype")
	e := &Error{Kind: bedrockErrorKind(errType, resp.StatusCode), Status: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After")}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e.Message = redact(awsMessage(raw), call.Secret)
	if e.Kind == Rejected {
		e.Type = "invalid_request_error"
	}
	if e.Kind == Unauthorized {
		name, _, _ := strings.Cut(errType, ":")
		e.Message = "credential " + call.CredentialID + " was refused (" + name + ")"
	}
	return e
}

// awsMessage is an AWS error body's message (services spell it either
// way).
func awsMessage(raw []byte) string {
	var body struct {
		Message  string `json:"message"`
		Message2 string `json:"Message"`
	}
	if json.Unmarshal(raw, &body) != nil {
		return ""
	}
	if body.Message != "" {
		return body.Message
	}
	return body.Message2
}
