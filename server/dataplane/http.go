package dataplane

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"unsafe"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/oauth"
)

// Paths of the discovery and inference endpoints.
const (
	modelsPath          = "/inf/v1/models"
	modelPathPrefix     = modelsPath + "/"
	chatCompletionsPath = "/inf/v1/chat/completions"
	responsesPath       = "/inf/v1/responses"
	messagesPath        = "/inf/v1/messages"
	countTokensPath     = "/inf/v1/messages/count_tokens"
	embeddingsPath      = "/inf/v1/embeddings"
)

// ServeHTTP answers /inf/v1. Routing is a prefix match on the decoded path
// rather than a ServeMux pattern because model ids contain slashes and
// clients send them either raw (openai/gpt-4o-mini) or escaped
// (openai%2Fgpt-4o-mini, as the OpenAI SDKs do): r.URL.Path holds both
// decoded alike.
func (p *Plane) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The document describes the plane, not its configuration: it needs
	// no key and no admitted bundle.
	if r.URL.Path == openAPIPath && r.Method == http.MethodGet {
		serveOpenAPI(w)
		return
	}
	if r.URL.Path == mcpResourceMetadataPath {
		p.serveMCPResourceMetadata(w, r)
		return
	}
	if !p.ready.Load() {
		inDialectOf(r, errNotReady, false).write(w)
		return
	}
	path := r.URL.Path
	switch {
	case path == modelsPath:
		p.serveModelList(w, r)
	case strings.HasPrefix(path, modelPathPrefix):
		p.serveModel(w, r, path[len(modelPathPrefix):])
	case path == chatCompletionsPath:
		p.serveChatCompletions(w, r)
	case path == responsesPath && isWebSocketUpgrade(r):
		p.serveResponsesSocket(w, r)
	case path == responsesPath:
		p.serveInference(w, r, responsesDialect{})
	case path == responsesCompactPath:
		p.serveInference(w, r, compactDialect{})
	case path == messagesPath:
		p.serveInference(w, r, messagesDialect{})
	case path == messageBatchesPath || strings.HasPrefix(path, messageBatchesPath+"/"):
		p.serveMessageBatches(w, r, strings.TrimPrefix(strings.TrimPrefix(path, messageBatchesPath), "/"))
	case path == countTokensPath:
		p.serveCountTokens(w, r)
	case path == embeddingsPath:
		p.serveInference(w, r, embeddingsDialect{})
	case path == filesPath || strings.HasPrefix(path, filesPath+"/"):
		p.serveFiles(w, r, strings.TrimPrefix(strings.TrimPrefix(path, filesPath), "/"))
	case path == batchesPath || strings.HasPrefix(path, batchesPath+"/"):
		p.serveBatches(w, r, strings.TrimPrefix(strings.TrimPrefix(path, batchesPath), "/"))
	case path == mcpPath:
		p.serveMCP(w, r, "")
	case strings.HasPrefix(path, mcpPath+"/") && !strings.Contains(path[len(mcpPath)+1:], "/"):
		p.serveMCP(w, r, path[len(mcpPath)+1:])
	default:
		inDialectOf(r, unknownURL(r), true).write(w)
	}
}

// inDialectOf is a refusal made before any endpoint took the request (an
// unknown path, no configuration yet) in the error shape its caller
// reads: Anthropic's for a path under /inf/v1/messages, or, byHeader, a
// request that says anthropic-version (what Anthropic's SDKs and Claude
// Code send) or carries its key as x-api-key (Anthropic's header, which
// no OpenAI client sends) to a path no endpoint serves, or to discovery,
// which both dialects share; OpenAI's otherwise.
func inDialectOf(r *http.Request, refusal *response, byHeader bool) *response {
	if strings.HasPrefix(r.URL.Path, messagesPath) || (byHeader && (r.Header.Get("Anthropic-Version") != "" || r.Header.Get("X-Api-Key") != "")) {
		return anthropicError(refusal)
	}
	return refusal
}

// serveModelList answers GET /inf/v1/models with the key's pre-encoded list.
func (p *Plane) serveModelList(w http.ResponseWriter, r *http.Request) {
	setRequestID(w, r, uuid.New())
	key, refusal := p.authenticate(r)
	if refusal == nil && r.Method != http.MethodGet {
		refusal = errMethodNotAllowed
	}
	if refusal != nil {
		inDialectOf(r, refusal, true).write(w)
		return
	}
	key.models.list.write(w)
}

// serveModel answers GET /inf/v1/models/{model_id...}.
func (p *Plane) serveModel(w http.ResponseWriter, r *http.Request, id string) {
	setRequestID(w, r, uuid.New())
	key, refusal := p.authenticate(r)
	if refusal == nil && r.Method != http.MethodGet {
		refusal = errMethodNotAllowed
	}
	if refusal != nil {
		inDialectOf(r, refusal, true).write(w)
		return
	}
	if obj, ok := key.models.byID[id]; ok {
		obj.write(w)
		return
	}
	inDialectOf(r, errModelNotFound, true).write(w)
}

// authenticate finds the request's inference key, or the 401 to answer.
// The token's prefix says what it is before any lookup, so a management
// key is refused with a message that says so.
func (p *Plane) authenticate(r *http.Request) (*admittedKey, *response) {
	if line := batchLineOf(r.Context()); line != nil {
		// A batch line the runner sends in process: the key that
		// submitted the batch, as the bundle in force has it now.
		return p.batchKey(line)
	}
	token, ok := bearerToken(r.Header.Get("Authorization"))
	if !ok {
		// The Anthropic SDKs and Claude Code send their key as x-api-key.
		token = strings.TrimSpace(r.Header.Get("X-Api-Key"))
		ok = token != ""
	}
	switch {
	case !ok:
		return nil, errMissingKey
	case strings.HasPrefix(token, auth.ManagementKeyPrefix):
		return nil, errManagementKey
	case strings.HasPrefix(token, oauth.AccessTokenPrefix):
		return p.authenticateOAuth(r, token)
	case !strings.HasPrefix(token, auth.InferenceKeyPrefix):
		return nil, errInvalidKey
	}
	var hash [sha256.Size * 2]byte
	tokenHash(&hash, token)
	key := p.state.Load().keys[string(hash[:])] // a lookup by string(bytes) copies nothing
	switch {
	case key == nil:
		return nil, errInvalidKey
	case key.expires && !p.now().Before(key.expiresAt):
		return nil, errExpiredKey
	}
	return key, nil
}

// tokenHash writes auth.HashToken(token), the index of the admitted keys,
// into dst without allocating (issue 33: three allocations a request):
// the token's bytes are hashed in place, since sha256 only reads them, and
// the hex digest stays in the caller's array.
func tokenHash(dst *[sha256.Size * 2]byte, token string) {
	sum := sha256.Sum256(unsafe.Slice(unsafe.StringData(token), len(token)))
	hex.Encode(dst[:], sum[:])
}

// bearerToken reads "Bearer <token>"; the scheme is case-insensitive
// (RFC 9110 §11.1).
func bearerToken(header string) (string, bool) {
	const scheme = "Bearer "
	if len(header) <= len(scheme) || !strings.EqualFold(header[:len(scheme)], scheme) {
		return "", false
	}
	token := strings.TrimSpace(header[len(scheme):])
	return token, token != ""
}
