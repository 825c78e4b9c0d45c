package api

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/bodyread"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

// Access says what credential a route needs.
type Access int

const (
	// Scoped routes need a credential that covers the URL's scope and holds
	// the route's permission. The scope follows from the path parameters.
	Scoped Access = iota
	// Authenticated routes need any valid credential and act on the caller.
	Authenticated
	// Public routes need none (a credential, if sent, is still read).
	Public
	// BrowserSession routes act for the account holder (ending sessions,
	// changing the password) and need their browser session: a key is a
	// delegated credential, and whoever holds one, with any permissions,
	// must not lock the person out of their own account.
	BrowserSession
)

// errBrowserSessionOnly answers a BrowserSession route called with a
// management key.
var errBrowserSessionOnly = errorf(http.StatusForbidden, "this acts for the account holder and needs their browser session: "+
	"a management key cannot do it, whatever its permissions; sign in and do it there")

// QueryParam documents one query parameter.
type QueryParam struct {
	Name, Description string
	Integer           bool
	// Enum lists the values a word parameter takes, so generated clients
	// type it; Format is a string's format (uuid, date, date-time).
	Enum     []string
	Format   string
	Required bool
	// Pattern is a string's pattern; Repeated, that the parameter may be
	// given more than once (an array, form style, exploded).
	Pattern  string
	Repeated bool
}

// Route is one operation: its place, its rules, its documentation and its
// handler, together, so that no route exists without its documentation.
type Route struct {
	Method, Path string
	Tag, Summary string
	Access       Access
	// Perms must all be held, or, with AnyPerm, at least one.
	Perms   []auth.Permission
	AnyPerm bool
	// MaxBody overrides the body limit bodyLimit derives from the route.
	MaxBody int64
	// NarrowerKeys lets a key scoped to a workspace of the organization call
	// an organization route (the route then narrows what it returns).
	NarrowerKeys bool
	// Body and Result are zero values of the wire types, for the document.
	Body      any
	Result    any
	Paginated bool
	Query     []QueryParam
	// RefreshesBundles says a successful call changes what data planes
	// must know: the request's organization's bundle is recompiled (every
	// organization's for an instance route: the catalog, platform
	// credentials).
	RefreshesBundles bool
	// Raw: the handler writes its answer itself, not enveloped (the
	// playground's chat completion is the model's answer, in the data
	// plane's shape); Result documents it.
	Raw bool
	// CSV: the handler may also answer text/csv (a query parameter asks
	// for it), written itself; Result documents the JSON answer.
	CSV bool
	// Binary: the answer may also be application/octet-stream, the
	// {data} line followed by bytes (a batch-store file), written itself.
	Binary bool
	// DataPlane: the route needs the data plane in process, and answers
	// 503 on a server without one.
	DataPlane bool
	// Statuses are the further statuses the handler itself answers with,
	// beyond those the route's shape implies (responses in openapi.go):
	// a sign-in's 401 and 429, a poll's 304.
	Statuses []int
	Handle   func(*Request) (any, error)
}

// DocPath is the route's path as the OpenAPI document and docs/api.md show
// it. A ServeMux wildcard that takes the rest of the path, {name...}, is
// shown as {name}: OpenAPI path templates have no such syntax, and linters
// reject a parameter name with dots in it. The parameter's description
// says that it may contain slashes.
func (rt *Route) DocPath() string { return strings.ReplaceAll(rt.Path, "...}", "}") }

// Level is the scope level of the route's URL.
func (rt *Route) Level() auth.Level {
	switch {
	case strings.HasPrefix(rt.Path, "/api/v1/instance/"):
		// Instance routes may name an organization, but act with instance
		// rights (spec §5 rule 3); their handlers resolve it themselves.
		return auth.LevelInstance
	case strings.Contains(rt.Path, "{workspace_ref}"):
		return auth.LevelWorkspace
	case strings.Contains(rt.Path, "{org_id}"):
		return auth.LevelOrganization
	default:
		return auth.LevelInstance
	}
}

// Request is one call, as the handler sees it.
type Request struct {
	ctx    context.Context
	W      http.ResponseWriter
	R      *http.Request
	ID     string
	P      *Principal
	Org    *store.Organization
	WS     *store.Workspace
	Rights auth.Set
	s      *Server
}

// Context is the request's context.
func (r *Request) Context() context.Context { return r.ctx }

// page is what handlers of paginated routes return.
type page[T any] struct {
	items []T
	next  *string
}

func (p page[T]) envelope() any {
	if p.items == nil {
		p.items = []T{}
	}
	return wire.Page[T]{Data: p.items, Page: wire.PageRef{NextCursor: p.next}}
}

type paged interface{ envelope() any }

func (s *Server) handler(rt *Route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, hr *http.Request) {
		// ServeHTTP settled the request id and the common headers.
		req := &Request{ctx: hr.Context(), W: w, R: hr, ID: hr.Header.Get("X-Request-Id"), s: s}
		if err := limitBody(w, hr, rt); err != nil {
			writeError(w, s.log, req.ID, err)
			return
		}
		if err := refuseControlInURL(rt, hr); err != nil {
			writeError(w, s.log, req.ID, err)
			return
		}
		if err := s.admit(req, rt); err != nil {
			writeError(w, s.log, req.ID, err)
			return
		}
		result, err := rt.Handle(req)
		if err != nil {
			writeError(w, s.log, req.ID, err)
			return
		}
		if rt.RefreshesBundles {
			s.refreshBundles(req)
		}
		if _, ok := result.(answered); ok {
			return
		}
		if _, ok := result.(notModified); ok {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		if p, ok := result.(paged); ok {
			writeJSON(w, http.StatusOK, p.envelope())
			return
		}
		writeJSON(w, http.StatusOK, wire.Envelope[any]{Data: result})
	})
}

// admit authenticates the caller and, for scoped routes, resolves the scope
// and checks the permission. It fails closed.
func (s *Server) admit(req *Request, rt *Route) error {
	p, err := s.authenticate(req)
	switch {
	case rt.Access == Public:
		if err == nil {
			req.P = p
		}
		return refuseFormPost(req, rt)
	case err != nil:
		return err
	}
	req.P = p
	switch rt.Access {
	case Authenticated:
		return nil
	case BrowserSession:
		if p.Session == nil {
			return errBrowserSessionOnly
		}
		return nil
	}
	return s.authorize(req, rt)
}

var pathParamRE = regexp.MustCompile(`\{([A-Za-z_]+)(?:\.\.\.)?\}`)

// refuseControlInURL answers 422 for a path segment holding a control
// character or a query value holding NUL, before anything looks them up:
// PostgreSQL cannot compare a NUL in text (a 500 otherwise), and no id,
// slug or model id has a control character.
func refuseControlInURL(rt *Route, hr *http.Request) error {
	var errs validate.Errors
	for _, m := range pathParamRE.FindAllStringSubmatch(rt.Path, -1) {
		validate.ControlIssue(hr.PathValue(m[1]), validate.Loc{"path", m[1]}, false, &errs)
	}
	for name, values := range hr.URL.Query() {
		if !validate.ControlIssue(name, validate.Loc{"query"}, false, &errs) {
			continue
		}
		for _, v := range values {
			validate.ControlIssue(v, validate.Loc{"query", name}, true, &errs)
		}
	}
	return errs.Err()
}

// refuseFormPost answers 415 when a public endpoint taking JSON receives
// one of the content types a cross-site HTML form can send: such a page
// could otherwise sign a visitor in to an account of the attacker's (login
// CSRF). Authenticated endpoints are covered by the X-Requested-With rule.
func refuseFormPost(req *Request, rt *Route) error {
	if rt.Body == nil {
		return nil
	}
	ct := strings.ToLower(req.R.Header.Get("Content-Type"))
	for _, form := range []string{"application/x-www-form-urlencoded", "multipart/form-data", "text/plain"} {
		if strings.HasPrefix(ct, form) {
			return errorf(http.StatusUnsupportedMediaType, "send the body as JSON with Content-Type: application/json")
		}
	}
	return nil
}

// Body limits, by what a route's body can legitimately hold. Every body is
// bounded before it is read: a stranger must not make the server hold
// tens of megabytes per connection (issue 10, item 2).
const (
	// A sign-in, sign-up, CLI start or invitation is a few hundred bytes.
	authBodyLimit = 64 << 10
	// A name, a key, a credential, a member: a few kilobytes at most.
	defaultBodyLimit = 1 << 20
	// A catalog document: the default catalog is ~100 KB; room for large
	// private catalogs.
	catalogBodyLimit = 16 << 20
	// Usage events and budget leases come from data planes in batches.
	dataPlaneBodyLimit = 32 << 20
	// The largest legitimate body is a policy at the spec's limits (100
	// rules, each with 1000 names of 255 characters): about 51 MB of JSON.
	policyBodyLimit = 64 << 20
)

// Body read deadlines: how long a client may take to send the body, from
// the moment its headers are in. Proportionate to the limit at a slow
// (~1 Mbit/s) link, so a slow writer cannot hold a connection for minutes
// on a route whose body is a few hundred bytes.
const (
	authBodyDeadline    = 10 * time.Second
	defaultBodyDeadline = 20 * time.Second
	largeBodyDeadline   = 2 * time.Minute
)

// bodyLimit is the most a route's body may hold.
func (rt *Route) bodyLimit() int64 {
	switch {
	case rt.MaxBody > 0:
		return rt.MaxBody
	case rt.Access != Scoped:
		// Public and caller-only routes: sign-in and the like.
		return authBodyLimit
	case strings.Contains(rt.Path, "/policies"):
		return policyBodyLimit
	case strings.Contains(rt.Path, "/catalog/"):
		return catalogBodyLimit
	case strings.HasPrefix(rt.Path, "/api/v1/data-plane/"):
		return dataPlaneBodyLimit
	default:
		return defaultBodyLimit
	}
}

// bodyDeadline is how long the route's body may take to arrive.
func (rt *Route) bodyDeadline() time.Duration {
	switch n := rt.bodyLimit(); {
	case n <= authBodyLimit:
		return authBodyDeadline
	case n <= defaultBodyLimit:
		return defaultBodyDeadline
	default:
		return largeBodyDeadline
	}
}

// limitBody applies the route's body limit and read deadline before
// anything else runs: a declared length over the limit is refused before
// a byte of the body is read, and a body that trickles in is cut at the
// deadline (the server's own ReadTimeout is far longer, for inference).
func limitBody(w http.ResponseWriter, hr *http.Request, rt *Route) error {
	if hr.Body == nil || hr.Body == http.NoBody {
		return nil
	}
	limit := rt.bodyLimit()
	if hr.ContentLength > limit {
		// The connection cannot be reused with an unread body behind.
		w.Header().Set("Connection", "close")
		return errBodyTooLarge(limit)
	}
	// Where the writer cannot take a deadline (a test recorder), the
	// server's ReadTimeout still applies.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(rt.bodyDeadline()))
	hr.Body = http.MaxBytesReader(w, hr.Body, limit)
	return nil
}

func errBodyTooLarge(limit int64) *Error {
	return errorf(http.StatusRequestEntityTooLarge, "request body exceeds %d bytes, the limit of this endpoint", limit)
}

// readBody reads the whole (already bounded) body, mapping a body too
// large to 413 and one that did not arrive in time to 408.
func (r *Request) readBody() ([]byte, error) {
	data, err := readAll(r.R.Body, r.R.ContentLength)
	if err != nil {
		var mbe *http.MaxBytesError
		var ne net.Error
		switch {
		case errors.As(err, &mbe):
			return nil, errBodyTooLarge(mbe.Limit)
		case errors.As(err, &ne) && ne.Timeout():
			r.W.Header().Set("Connection", "close")
			return nil, errorf(http.StatusRequestTimeout, "the request body did not arrive in time")
		}
		return nil, errorf(http.StatusBadRequest, "reading request body: %v", err)
	}
	// The body is in: a handler that runs long must not have its
	// context cancelled by the read deadline of a connection it no
	// longer reads.
	_ = http.NewResponseController(r.W).SetReadDeadline(time.Time{})
	return data, nil
}

// maxBodyAhead bounds the buffer readAll makes ahead of the bytes: a
// caller may declare a length and send nothing.
const maxBodyAhead = 4 << 20

// readAll reads a request's body into one buffer of its declared length
// (bodyread); limitBody has refused one over the route's limit, and its
// MaxBytesReader keeps the limit as the body is read.
func readAll(body io.Reader, declared int64) ([]byte, error) {
	return bodyread.Read(body, declared, maxBodyAhead, 0)
}

// body reads and strictly validates a JSON object body. read is called with
// the object even when other problems were found, so that every problem is
// reported at once.
func (r *Request) body(read func(o *validate.Object)) error {
	data, err := r.readBody()
	if err != nil {
		return err
	}
	return readBodyObject(data, read)
}

// readBodyObject is body's reading of bytes already in: parsed, NUL
// refused, read strictly, every problem reported at once.
func readBodyObject(data []byte, read func(o *validate.Object)) error {
	v, err := validate.ParseJSON(data, validate.Loc{"body"})
	if err != nil {
		return err
	}
	if err := validate.RefuseNUL(v, validate.Loc{"body"}); err != nil {
		return err
	}
	var errs validate.Errors
	if o := validate.ReadObject(v, validate.Loc{"body"}, &errs); o != nil {
		read(o)
		o.Close()
	}
	return errs.Err()
}

// pathUUID parses a UUID path parameter, answering 422 when it is not one.
func (r *Request) pathUUID(name string) (uuid.UUID, error) {
	var errs validate.Errors
	id, _ := validate.UUIDString(r.R.PathValue(name), validate.Loc{"path", name}, &errs)
	return id, errs.Err()
}

// pageQuery reads limit and cursor for a collection bound to binding.
func (r *Request) pageQuery(binding string) (store.PageQuery, error) {
	q := r.R.URL.Query()
	p := store.PageQuery{Limit: 50}
	if raw, ok := q["limit"]; ok {
		var errs validate.Errors
		n, _ := validate.IntString(raw[0], validate.Loc{"query", "limit"}, validate.IntRule{Min: validate.Bound(1), Max: validate.Bound(200)}, &errs)
		if err := errs.Err(); err != nil {
			return p, err
		}
		p.Limit = int(n)
	}
	if raw, ok := q["cursor"]; ok {
		key, ok := r.s.cursors.open(binding, raw[0])
		if !ok {
			return p, errInvalidCursor
		}
		p.After = key
	}
	return p, nil
}

// nextCursor seals the key of a page's last item, if there is a next page.
func (r *Request) nextCursor(binding string, k *store.PageKey) *string {
	if k == nil {
		return nil
	}
	c := r.s.cursors.seal(binding, *k)
	return &c
}
