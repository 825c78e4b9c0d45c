package api

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/scim"
	"github.com/gw-gateway/gw/server/store"
)

// SCIM 2.0 provisioning at /scim/v2 (issue 31, part 2; docs/identity.md):
// an organization's provisioning client, authenticated by one of the
// organization's SCIM tokens, manages its users and groups. The handlers
// decode (server/scim), call server/backend and encode, in SCIM's shapes
// and its error shape; the routes are SCIM's own (RFC 7644), described by
// its discovery documents, not by gw's OpenAPI document.

const (
	scimPrefix = "/scim/v2"
	// scimMaxBody bounds a SCIM request body: a group's PATCH adding
	// thousands of members fits.
	scimMaxBody = 1 << 20
	// scimDefaultCount is a list's page when count is not given.
	scimDefaultCount = 100
)

// SCIM serves /scim/v2.
func (s *Server) SCIM() http.Handler { return http.HandlerFunc(s.serveSCIM) }

// scimCall is one SCIM request: the organization its token reaches, the
// actor for the audit log, the service's base URL.
type scimCall struct {
	w     http.ResponseWriter
	r     *http.Request
	id    string
	token *store.SCIMToken
	base  string
}

func (s *Server) serveSCIM(w http.ResponseWriter, r *http.Request) {
	id := requestID(r)
	w.Header().Set("X-Request-Id", id)
	w.Header().Set("Cache-Control", "no-store")
	c := &scimCall{w: w, r: r, id: id, base: s.scimBase(r.Host, r.TLS != nil)}
	rest, ok := strings.CutPrefix(r.URL.Path, scimPrefix)
	if !ok || (rest != "" && !strings.HasPrefix(rest, "/")) {
		s.scimError(c, scim.Errorf(http.StatusNotFound, "", "not found"))
		return
	}
	scheme, raw, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") || !strings.HasPrefix(strings.TrimSpace(raw), backend.SCIMTokenPrefix) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="gw-scim"`)
		s.scimError(c, scim.Errorf(http.StatusUnauthorized, "", "a SCIM token is required: Authorization: Bearer scim_…"))
		return
	}
	tok, err := backend.SCIMTokenFor(r.Context(), s.store, strings.TrimSpace(raw))
	var be *backend.Error
	if errors.As(err, &be) && be.Kind == backend.NotFound {
		w.Header().Set("WWW-Authenticate", `Bearer realm="gw-scim", error="invalid_token"`)
		s.scimError(c, scim.Errorf(http.StatusUnauthorized, "", "the SCIM token is not valid (deleted, or never issued)"))
		return
	}
	if err != nil {
		s.scimError(c, err)
		return
	}
	c.token = tok
	r.Body = http.MaxBytesReader(w, r.Body, scimMaxBody)
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	var res any
	status := http.StatusOK
	switch {
	case len(parts) == 1 && parts[0] == "ServiceProviderConfig" && r.Method == http.MethodGet:
		res = scim.Config(c.base)
	case parts[0] == "ResourceTypes" && r.Method == http.MethodGet:
		res, err = scimDiscovery(scim.ResourceTypes(c.base), parts, func(t scim.ResourceType) string { return t.ID })
	case parts[0] == "Schemas" && r.Method == http.MethodGet:
		res, err = scimDiscovery(scim.Schemas(c.base), parts, func(t scim.Schema) string { return t.ID })
	case parts[0] == "Users" && len(parts) <= 2:
		res, status, err = s.scimUsers(c, parts[1:])
	case parts[0] == "Groups" && len(parts) <= 2:
		res, status, err = s.scimGroups(c, parts[1:])
	case parts[0] == "ServiceProviderConfig" || parts[0] == "ResourceTypes" || parts[0] == "Schemas":
		err = errSCIMMethod
	default:
		err = scim.Errorf(http.StatusNotFound, "", "no SCIM endpoint %s", rest)
	}
	if err != nil {
		s.scimError(c, err)
		return
	}
	if status == http.StatusNoContent {
		w.WriteHeader(status)
		return
	}
	writeSCIM(w, status, res)
}

var errSCIMMethod = scim.Errorf(http.StatusMethodNotAllowed, "", "method not allowed")

// scimDiscovery is a list of discovery documents, or one by id.
func scimDiscovery[T any](all []T, parts []string, id func(T) string) (any, error) {
	if len(parts) == 1 {
		items := make([]any, len(all))
		for i, t := range all {
			items[i] = t
		}
		return listResponse(items, 1), nil
	}
	if len(parts) == 2 {
		for _, t := range all {
			if id(t) == parts[1] {
				return t, nil
			}
		}
	}
	return nil, scim.Errorf(http.StatusNotFound, "", "not found")
}

func listResponse(items []any, start int) scim.ListResponse {
	if start < 1 {
		start = 1
	}
	if items == nil {
		items = []any{}
	}
	return scim.ListResponse{Schemas: []string{scim.SchemaListResponse}, TotalResults: len(items), StartIndex: start, ItemsPerPage: len(items), Resources: items}
}

func writeSCIM(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", scim.ContentType)
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// scimError writes err in SCIM's error shape: a SCIM refusal as it is,
// the backend's kinds as their SCIM status (a Conflict is uniqueness,
// Unreadable an invalidValue); anything else is logged and a 500.
func (s *Server) scimError(c *scimCall, err error) {
	var se *scim.Error
	var be *backend.Error
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &se):
	case errors.As(err, &be):
		se = &scim.Error{Status: domainStatus[be.Kind], Detail: be.Detail}
		switch be.Kind {
		case backend.Conflict:
			se.ScimType = scim.Uniqueness
		case backend.Unreadable:
			se.Status, se.ScimType = http.StatusBadRequest, scim.InvalidValue
		}
	case errors.As(err, &mbe):
		se = scim.Errorf(http.StatusRequestEntityTooLarge, "", "the request body exceeds %d bytes", mbe.Limit)
	default:
		s.log.Error("SCIM request failed", "request_id", c.id, "error", err)
		se = scim.Errorf(http.StatusInternalServerError, "", "internal server error (request id %s)", c.id)
	}
	writeSCIM(c.w, se.Status, se.Body())
}

func (c *scimCall) body() ([]byte, error) {
	b, err := io.ReadAll(c.r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, err
		}
		return nil, scim.Errorf(http.StatusBadRequest, scim.InvalidSyntax, "the request body could not be read")
	}
	return b, nil
}

func (c *scimCall) actor() backend.Actor { return backend.SCIMActor(c.token, c.id) }

// page reads startIndex and count.
func (c *scimCall) page() (start, count int, err error) {
	q := c.r.URL.Query()
	start, count = 1, scimDefaultCount
	for name, dst := range map[string]*int{"startIndex": &start, "count": &count} {
		if v := q.Get(name); v != "" {
			n, perr := strconv.Atoi(v)
			if perr != nil {
				return 0, 0, scim.Errorf(http.StatusBadRequest, scim.InvalidValue, "%s must be an integer", name)
			}
			*dst = n
		}
	}
	if start < 1 {
		start = 1
	}
	return start, count, nil
}

func (s *Server) scimUsers(c *scimCall, rest []string) (any, int, error) {
	ctx, org := c.r.Context(), c.token.OrgID
	if len(rest) == 0 {
		switch c.r.Method {
		case http.MethodGet:
			f, err := scim.ParseFilter(c.r.URL.Query().Get("filter"), scim.KindUser)
			if err != nil {
				return nil, 0, err
			}
			start, count, err := c.page()
			if err != nil {
				return nil, 0, err
			}
			email, _ := f.Value("username")
			if email == "" {
				email, _ = f.Value("emails.value")
			}
			users, err := backend.SCIMUsers(ctx, s.store, org, email)
			if err != nil {
				return nil, 0, err
			}
			var matched []any
			for _, u := range users {
				if f.MatchUser(u) {
					matched = append(matched, u.Resource(c.base))
				}
			}
			lo, hi := scim.Page(len(matched), start, count, scim.MaxResults)
			out := listResponse(matched[lo:hi], start)
			out.TotalResults = len(matched)
			return out, http.StatusOK, nil
		case http.MethodPost:
			raw, err := c.body()
			if err != nil {
				return nil, 0, err
			}
			in, err := scim.DecodeUser(raw)
			if err != nil {
				return nil, 0, err
			}
			u, err := backend.SCIMCreateUser(ctx, s.store, c.actor(), org, in)
			if err != nil {
				return nil, 0, err
			}
			res := u.Resource(c.base)
			c.w.Header().Set("Location", res.Meta.Location)
			return res, http.StatusCreated, nil
		}
		return nil, 0, errSCIMMethod
	}
	id := rest[0]
	switch c.r.Method {
	case http.MethodGet:
		u, err := backend.SCIMUser(ctx, s.store, org, id)
		if err != nil {
			return nil, 0, err
		}
		return u.Resource(c.base), http.StatusOK, nil
	case http.MethodPut, http.MethodPatch:
		raw, err := c.body()
		if err != nil {
			return nil, 0, err
		}
		change, err := scimChange(c.r.Method, raw, scim.DecodeUser, func(in *scim.User, cur scim.User) { in.ID = cur.ID }, scim.PatchUser)
		if err != nil {
			return nil, 0, err
		}
		u, err := backend.SCIMChangeUser(ctx, s.store, c.actor(), org, id, change)
		if err != nil {
			return nil, 0, err
		}
		return u.Resource(c.base), http.StatusOK, nil
	case http.MethodDelete:
		return nil, http.StatusNoContent, backend.SCIMDeleteUser(ctx, s.store, c.actor(), org, id)
	}
	return nil, 0, errSCIMMethod
}

func (s *Server) scimGroups(c *scimCall, rest []string) (any, int, error) {
	ctx, org := c.r.Context(), c.token.OrgID
	withMembers := true
	for _, a := range strings.Split(c.r.URL.Query().Get("excludedAttributes"), ",") {
		if strings.EqualFold(strings.TrimSpace(a), "members") {
			withMembers = false
		}
	}
	if len(rest) == 0 {
		switch c.r.Method {
		case http.MethodGet:
			f, err := scim.ParseFilter(c.r.URL.Query().Get("filter"), scim.KindGroup)
			if err != nil {
				return nil, 0, err
			}
			start, count, err := c.page()
			if err != nil {
				return nil, 0, err
			}
			groups, err := backend.SCIMGroups(ctx, s.store, org)
			if err != nil {
				return nil, 0, err
			}
			var matched []any
			for _, g := range groups {
				if f.MatchGroup(g) {
					matched = append(matched, g.Resource(c.base, withMembers))
				}
			}
			lo, hi := scim.Page(len(matched), start, count, scim.MaxResults)
			out := listResponse(matched[lo:hi], start)
			out.TotalResults = len(matched)
			return out, http.StatusOK, nil
		case http.MethodPost:
			raw, err := c.body()
			if err != nil {
				return nil, 0, err
			}
			in, err := scim.DecodeGroup(raw)
			if err != nil {
				return nil, 0, err
			}
			g, err := backend.SCIMCreateGroup(ctx, s.store, c.actor(), org, in)
			if err != nil {
				return nil, 0, err
			}
			res := g.Resource(c.base, true)
			c.w.Header().Set("Location", res.Meta.Location)
			return res, http.StatusCreated, nil
		}
		return nil, 0, errSCIMMethod
	}
	id := rest[0]
	switch c.r.Method {
	case http.MethodGet:
		g, err := backend.SCIMGroup(ctx, s.store, org, id)
		if err != nil {
			return nil, 0, err
		}
		return g.Resource(c.base, withMembers), http.StatusOK, nil
	case http.MethodPut, http.MethodPatch:
		raw, err := c.body()
		if err != nil {
			return nil, 0, err
		}
		change, err := scimChange(c.r.Method, raw, scim.DecodeGroup, func(in *scim.Group, cur scim.Group) { in.ID = cur.ID }, scim.PatchGroup)
		if err != nil {
			return nil, 0, err
		}
		g, err := backend.SCIMChangeGroup(ctx, s.store, c.actor(), org, id, change)
		if err != nil {
			return nil, 0, err
		}
		if c.r.Method == http.MethodPatch && !withMembers {
			return g.Resource(c.base, false), http.StatusOK, nil
		}
		return g.Resource(c.base, true), http.StatusOK, nil
	case http.MethodDelete:
		return nil, http.StatusNoContent, backend.SCIMDeleteGroup(ctx, s.store, c.actor(), org, id)
	}
	return nil, 0, errSCIMMethod
}

// scimChange reads a PUT (the whole resource, which keeps its id) or a
// PATCH (operations on the current resource) as the change a backend
// operation applies inside its transaction, for users and groups alike.
func scimChange[T any](method string, raw []byte, decode func([]byte) (T, error), keepID func(in *T, cur T),
	patch func(T, []scim.Op) (T, error)) (func(T) (T, error), error) {
	if method == http.MethodPut {
		in, err := decode(raw)
		if err != nil {
			return nil, err
		}
		return func(cur T) (T, error) { keepID(&in, cur); return in, nil }, nil
	}
	ops, err := scim.DecodePatch(raw)
	if err != nil {
		return nil, err
	}
	return func(cur T) (T, error) { return patch(cur, ops) }, nil
}
