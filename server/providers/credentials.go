package providers

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/gw-gateway/gw/server/catalog"
)

// Settings are a credential's non-secret settings (its `settings`
// member): what a cloud provider needs beyond the secret to find the
// model. Which members a kind takes is CredentialSettingsFor's table; the
// rest must be empty.
type Settings struct {
	// Region is Bedrock's AWS region (us-east-1).
	Region string `json:"region,omitempty"`
	// Project and Location are Vertex AI's; Project defaults to the
	// service account's project_id.
	Project  string `json:"project,omitempty"`
	Location string `json:"location,omitempty"`
	// APIVersion is Azure OpenAI's api-version query parameter.
	APIVersion string `json:"api_version,omitempty"`
	// Deployments maps a catalog model's upstream name to the Azure
	// deployment serving it; a model not listed is its own deployment.
	Deployments map[string]string `json:"deployments,omitempty"`
	// TokenURL replaces the OAuth token endpoint: the service account's
	// token_uri for Vertex, Microsoft Entra ID's for Azure.
	TokenURL string `json:"token_url,omitempty"`
	// Batches says where the lines of a batch that route to this
	// credential run: BatchesNative (the default) on the provider's own
	// batch API, BatchesGateway on gw's runner, one request at a time at
	// the synchronous price (docs/batches.md). Only the kinds with a batch
	// API gw speaks take it.
	Batches string `json:"batches,omitempty"`
	// BatchS3URI, BatchRoleARN and BatchS3Endpoint are a bedrock
	// credential's batch inference settings (docs/batches.md): the S3
	// prefix (s3://bucket/prefix/) gw writes a job's input under and
	// Bedrock its output, the service role Bedrock assumes to read and
	// write it, and an S3 endpoint other than AWS's regional one (an
	// S3-compatible store, a VPC endpoint). Without the first two a
	// bedrock credential's batch lines run on gw's runner.
	BatchS3URI      string `json:"batch_s3_uri,omitempty"`
	BatchRoleARN    string `json:"batch_role_arn,omitempty"`
	BatchS3Endpoint string `json:"batch_s3_endpoint,omitempty"`
}

// The values of Settings.Batches.
const (
	BatchesNative  = "native"
	BatchesGateway = "gateway"
)

// defaultAzureAPIVersion is the GA api-version gw speaks to Azure OpenAI
// when a credential names none.
const defaultAzureAPIVersion = "2024-10-21"

// CredentialProblem is one thing wrong with a credential: Field is
// "secret" or "settings.<member>", Type a pydantic-style word. Messages
// never quote the secret.
type CredentialProblem struct {
	Field, Type, Message string
}

// settingsOf lists the settings each kind takes, and which it requires.
var settingsOf = map[catalog.Kind]struct{ allowed, required []string }{
	catalog.KindBedrock:     {allowed: []string{"region", "batches", "batch_s3_uri", "batch_role_arn", "batch_s3_endpoint"}, required: []string{"region"}},
	catalog.KindVertex:      {allowed: []string{"project", "location", "token_url"}, required: []string{"location"}},
	catalog.KindAzureOpenAI: {allowed: []string{"api_version", "deployments", "token_url", "batches"}},
	catalog.KindOpenAI:      {allowed: []string{"batches"}},
	catalog.KindAnthropic:   {allowed: []string{"batches"}},
}

// CredentialSettings names the settings a credential of kind takes and
// those it requires (none for the kinds that take none): the CLI's
// completion of --setting reads them.
func CredentialSettings(kind catalog.Kind) (allowed, required []string) {
	spec := settingsOf[kind]
	return slices.Clone(spec.allowed), slices.Clone(spec.required)
}

// SettingNames lists every settings member, for strict decoding.
var SettingNames = []string{"region", "project", "location", "api_version", "deployments", "token_url", "batches",
	"batch_s3_uri", "batch_role_arn", "batch_s3_endpoint"}

var (
	awsRegionRE   = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$`)
	gcpLocationRE = regexp.MustCompile(`^(global|[a-z]+-[a-z]+[0-9]{1,2})$`)
	gcpProjectRE  = regexp.MustCompile(`^[a-z][a-z0-9-]{4,28}[a-z0-9]$`)
	apiVersionRE  = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}(-preview)?$|^(v1|latest|preview)$`)
	deploymentRE  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	// An IAM role's ARN, in any partition (aws, aws-cn, aws-us-gov).
	roleARNRE = regexp.MustCompile(`^arn:aws(-[a-z]+)*:iam::[0-9]{12}:role/[A-Za-z0-9+=,.@_/-]{1,512}$`)
)

// CheckSettings reports what is wrong with settings for a credential of
// kind: a member the kind does not take, a required one missing, a value
// of the wrong form.
func CheckSettings(kind catalog.Kind, s Settings) []CredentialProblem {
	spec := settingsOf[kind]
	var out []CredentialProblem
	present := s.present()
	for _, name := range SettingNames {
		if present[name] && !slices.Contains(spec.allowed, name) {
			out = append(out, CredentialProblem{"settings." + name, "extra_forbidden",
				"Extra inputs are not permitted: a " + string(kind) + " credential takes no " + name + " setting"})
		}
	}
	for _, name := range spec.required {
		if !present[name] {
			out = append(out, CredentialProblem{"settings." + name, "missing", "Field required for a " + string(kind) + " credential"})
		}
	}
	check := func(name string, ok bool, msg string) {
		if present[name] && slices.Contains(spec.allowed, name) && !ok {
			out = append(out, CredentialProblem{"settings." + name, "string_pattern_mismatch", msg})
		}
	}
	check("region", awsRegionRE.MatchString(s.Region), "Should be an AWS region, such as us-east-1")
	check("location", gcpLocationRE.MatchString(s.Location), "Should be a Google Cloud location, such as us-east5 or global")
	check("project", gcpProjectRE.MatchString(s.Project), "Should be a Google Cloud project id")
	check("api_version", apiVersionRE.MatchString(s.APIVersion), "Should be an Azure OpenAI api-version, such as 2024-10-21")
	check("token_url", tokenURLValid(s.TokenURL), "Should be an absolute http(s) URL without credentials or fragment")
	check("batches", s.Batches == BatchesNative || s.Batches == BatchesGateway, `Should be "native" (the provider's batch API) or "gateway" (gw runs each line)`)
	check("batch_s3_uri", s3URIValid(s.BatchS3URI), "Should be an S3 prefix s3://BUCKET/PREFIX/ (a bucket name of 3 to 63 lowercase letters, digits, '.' and '-'; the prefix, if any, ending in '/')")
	check("batch_role_arn", roleARNRE.MatchString(s.BatchRoleARN), "Should be an IAM role's ARN, such as arn:aws:iam::123456789012:role/gw-batch")
	check("batch_s3_endpoint", tokenURLValid(s.BatchS3Endpoint), "Should be an absolute http(s) URL without credentials or fragment")
	// A bucket without the role Bedrock reads it as (or the other way
	// round), or an endpoint without a bucket, cannot run a job: refused
	// when saved rather than found out at a batch's first poll.
	if slices.Contains(spec.allowed, "batch_s3_uri") {
		needs := func(name, needed string) {
			if present[name] && !present[needed] {
				out = append(out, CredentialProblem{"settings." + needed, "missing",
					"Field required: settings." + name + " needs settings." + needed + " (Bedrock batch inference needs both the S3 prefix and the role)"})
			}
		}
		needs("batch_s3_uri", "batch_role_arn")
		needs("batch_role_arn", "batch_s3_uri")
		if present["batch_s3_endpoint"] && !present["batch_s3_uri"] && !present["batch_role_arn"] {
			needs("batch_s3_endpoint", "batch_s3_uri")
		}
	}
	for model, dep := range s.Deployments {
		if model == "" || !deploymentRE.MatchString(dep) {
			out = append(out, CredentialProblem{"settings.deployments", "value_error",
				"Each deployment maps a model name to an Azure deployment name (letters, digits, '.', '_', '-')"})
			break
		}
	}
	return out
}

func (s Settings) present() map[string]bool {
	return map[string]bool{"region": s.Region != "", "project": s.Project != "", "location": s.Location != "",
		"api_version": s.APIVersion != "", "deployments": len(s.Deployments) > 0, "token_url": s.TokenURL != "",
		"batches": s.Batches != "", "batch_s3_uri": s.BatchS3URI != "", "batch_role_arn": s.BatchRoleARN != "",
		"batch_s3_endpoint": s.BatchS3Endpoint != ""}
}

// s3BucketRE is an S3 bucket name (the general-purpose rules: no
// uppercase or underscore).
var s3BucketRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// s3URIValid tells an S3 prefix gw can write a batch job's input under:
// s3://bucket/ or s3://bucket/prefix/.
func s3URIValid(s string) bool {
	_, _, ok := ParseS3Prefix(s)
	return ok
}

// ParseS3Prefix splits s3://bucket/prefix/ into the bucket and the key
// prefix ("" or ending in "/").
func ParseS3Prefix(s string) (bucket, prefix string, ok bool) {
	rest, found := strings.CutPrefix(s, "s3://")
	if !found {
		return "", "", false
	}
	bucket, prefix, slash := strings.Cut(rest, "/")
	if !slash || !s3BucketRE.MatchString(bucket) || strings.Contains(bucket, "..") {
		return "", "", false
	}
	if prefix != "" && (!strings.HasSuffix(prefix, "/") || strings.HasPrefix(prefix, "/") || strings.Contains(prefix, "//") ||
		strings.ContainsAny(prefix, "\x00\n\r\\?#")) {
		return "", "", false
	}
	return bucket, prefix, true
}

func tokenURLValid(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && u.User == nil && u.Fragment == ""
}

// CheckSecret reports what is wrong with a secret for a credential of
// kind: the JSON credentials of Bedrock, Vertex and Azure's Entra ID must
// read, the others are opaque keys.
func CheckSecret(kind catalog.Kind, secret string) []CredentialProblem {
	var err string
	switch kind {
	case catalog.KindBedrock:
		_, err = parseAWSSecret(secret)
	case catalog.KindVertex:
		_, err = parseServiceAccount(secret)
	case catalog.KindAzureOpenAI:
		if looksJSON(secret) {
			_, err = parseEntraSecret(secret)
		}
	}
	if err != "" {
		return []CredentialProblem{{"secret", "value_error", "Value error, " + err}}
	}
	return nil
}

func looksJSON(secret string) bool { return strings.HasPrefix(strings.TrimSpace(secret), "{") }

// awsSecret is a Bedrock credential's secret: an IAM access key, with the
// session token of temporary credentials.
type awsSecret struct {
	AccessKeyID     string `json:"access_key_id"`
	SecretAccessKey string `json:"secret_access_key"`
	SessionToken    string `json:"session_token,omitempty"`
}

func parseAWSSecret(secret string) (awsSecret, string) {
	var s awsSecret
	if err := strictJSON(secret, &s); err != "" {
		return s, "a bedrock secret is a JSON object {access_key_id, secret_access_key, session_token?}: " + err
	}
	if s.AccessKeyID == "" || s.SecretAccessKey == "" {
		return s, "a bedrock secret needs access_key_id and secret_access_key"
	}
	return s, ""
}

// serviceAccount is the part of a Google service-account key file gw
// reads; the whole file is what the OAuth library takes.
type serviceAccount struct {
	Type         string `json:"type"`
	ProjectID    string `json:"project_id"`
	PrivateKey   string `json:"private_key"`
	ClientEmail  string `json:"client_email"`
	PrivateKeyID string `json:"private_key_id"`
	TokenURI     string `json:"token_uri"`
}

func parseServiceAccount(secret string) (serviceAccount, string) {
	var sa serviceAccount
	if json.Unmarshal([]byte(secret), &sa) != nil {
		return sa, "a vertex secret is a service account's JSON key file"
	}
	switch {
	case sa.Type != "service_account":
		return sa, `a vertex secret is a service account's JSON key file ("type": "service_account")`
	case sa.ClientEmail == "" || sa.ProjectID == "":
		return sa, "the service account key file needs client_email and project_id"
	}
	block, _ := pem.Decode([]byte(sa.PrivateKey))
	if block == nil {
		return sa, "the service account key file's private_key is not a PEM key"
	}
	if _, err := x509.ParsePKCS8PrivateKey(block.Bytes); err != nil {
		if _, err := x509.ParsePKCS1PrivateKey(block.Bytes); err != nil {
			return sa, "the service account key file's private_key does not parse"
		}
	}
	return sa, ""
}

// SecretTokenURI is the token endpoint a secret names, if it is a
// service account's key file with a token_uri: gw sends it signed token
// requests, so the egress policy must allow it like any URL.
func SecretTokenURI(secret string) string {
	if !looksJSON(secret) {
		return ""
	}
	var sa serviceAccount
	if json.Unmarshal([]byte(secret), &sa) != nil || sa.Type != "service_account" {
		return ""
	}
	return sa.TokenURI
}

// entraSecret is an Azure credential's Microsoft Entra ID application:
// gw takes tokens for it by the client-credentials grant.
type entraSecret struct {
	TenantID     string `json:"tenant_id"`
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
}

func parseEntraSecret(secret string) (entraSecret, string) {
	var s entraSecret
	if err := strictJSON(secret, &s); err != "" {
		return s, "an azure-openai secret is an api-key, or a JSON object {tenant_id, client_id, client_secret} for Entra ID: " + err
	}
	if s.TenantID == "" || s.ClientID == "" || s.ClientSecret == "" {
		return s, "an Entra ID secret needs tenant_id, client_id and client_secret"
	}
	return s, ""
}

// strictJSON decodes an object refusing unknown members; the error names
// no value.
func strictJSON(s string, v any) string {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if strings.Contains(err.Error(), "unknown field") {
			return strings.TrimPrefix(err.Error(), "json: ")
		}
		return "it is not such a JSON object"
	}
	return ""
}

// parsedSecrets keeps what an adapter made of each credential's secret
// (signing keys, token sources), by credential id, for as long as the
// secret stays the same: a rotated secret is parsed anew.
type parsedSecrets struct {
	m sync.Map // credential id → parsedSecret
}

type parsedSecret struct {
	digest [32]byte
	value  any
}

// get returns the value made of call's secret and the settings it
// depends on (extra), making it with build once.
func (p *parsedSecrets) get(call *Call, extra string, build func() (any, error)) (any, error) {
	digest := sha256.Sum256([]byte(call.Secret + "\x00" + extra))
	if v, ok := p.m.Load(call.CredentialID); ok && v.(parsedSecret).digest == digest {
		return v.(parsedSecret).value, nil
	}
	value, err := build()
	if err != nil {
		return nil, err
	}
	p.m.Store(call.CredentialID, parsedSecret{digest: digest, value: value})
	return value, nil
}

// credentialError is a credential gw cannot use as configured: the
// operator's to fix, so it is an Unauthorized failure naming the
// credential and never its secret.
func credentialError(call *Call, what string) *Error {
	return &Error{Kind: Unauthorized, Message: "credential " + call.CredentialID + ": " + what}
}
