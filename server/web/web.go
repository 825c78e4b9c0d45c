// Package web serves gw's few browser pages (first-run setup, sign-in,
// sign-up, CLI approval and the playground) from embedded templates with no external
// assets. Pages only render; every action is a call to /api/v1 from the
// page, which sends X-Requested-With like any browser client must. Forms
// that carry a password say method="post" so that, should the script fail,
// the browser never puts the password into a URL.
package web

import (
	"embed"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
)

//go:embed templates/*.html
var files embed.FS

// Each page is the layout plus its own "content"; they are parsed apart
// because every page defines that same template name.
var pages = map[string]*template.Template{}

func init() {
	for _, name := range []string{"index", "setup", "signin", "signup", "authorize", "playground", "oauth"} {
		pages[name] = template.Must(template.ParseFS(files, "templates/layout.html", "templates/"+name+".html"))
	}
}

// sessionCookie is the browser session cookie the API sets at sign-in
// (spec §5 names it).
const sessionCookie = "svc_session"

// SetupState tells the setup page whether the instance has an owner.
type SetupState func(r *http.Request) (bootstrapped bool, err error)

// SignInProviders names the identity providers the sign-in page offers
// (issue 31); nil offers none.
type SignInProviders func(r *http.Request) []string

// Handler serves the pages.
func Handler(log *slog.Logger, state SetupState) http.Handler {
	return HandlerWithSSO(log, state, nil)
}

// ssoLink is a provider as the sign-in page links it.
type ssoLink struct{ Name, URL string }

// HandlerWithSSO serves the pages, the sign-in page offering each of the
// identity providers providers names: a link to its start, returning to
// the page the person was going to.
func HandlerWithSSO(log *slog.Logger, state SetupState, providers SignInProviders) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		render(w, log, "index", map[string]any{"Title": "Home"})
	})
	mux.HandleFunc("GET /setup", func(w http.ResponseWriter, r *http.Request) {
		done, err := state(r)
		if err != nil {
			log.Error("setup page", "error", err)
			http.Error(w, "internal server error", http.StatusInternalServerError)
			return
		}
		render(w, log, "setup", map[string]any{"Title": "Set up", "Bootstrapped": done, "Token": r.URL.Query().Get("token")})
	})
	mux.HandleFunc("GET /signin", func(w http.ResponseWriter, r *http.Request) {
		next := SafeNext(r.URL.Query().Get("next"))
		var links []ssoLink
		if providers != nil {
			for _, name := range providers(r) {
				links = append(links, ssoLink{Name: name,
					URL: "/api/v1/auth/oidc/" + url.PathEscape(name) + "/start?return_to=" + url.QueryEscape(next)})
			}
		}
		render(w, log, "signin", map[string]any{"Title": "Sign in", "Next": next, "SignupURL": withNext("/signup", next), "SSO": links})
	})
	mux.HandleFunc("GET /signup", func(w http.ResponseWriter, r *http.Request) {
		next := SafeNext(r.URL.Query().Get("next"))
		render(w, log, "signup", map[string]any{"Title": "Create an account", "Next": next, "SigninURL": withNext("/signin", next)})
	})
	mux.HandleFunc("GET /cli/authorize", authorizePage(log))
	mux.HandleFunc("GET /playground", func(w http.ResponseWriter, r *http.Request) {
		// As for approval: no session cookie, straight to sign-in and back;
		// a stale one is caught by the page's first API call.
		signin := withNext("/signin", r.URL.RequestURI())
		if c, err := r.Cookie(sessionCookie); err != nil || c.Value == "" {
			http.Redirect(w, r, signin, http.StatusSeeOther)
			return
		}
		render(w, log, "playground", map[string]any{"Title": "Playground", "SigninURL": signin})
	})
	return mux
}

func authorizePage(log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		signin := withNext("/signin", r.URL.RequestURI())
		// Without any session cookie there is nothing to check: go to
		// sign-in at once. A cookie that turns out stale is caught by the
		// page itself (its first API call answers 401).
		if c, err := r.Cookie(sessionCookie); err != nil || c.Value == "" {
			http.Redirect(w, r, signin, http.StatusSeeOther)
			return
		}
		q := r.URL.Query()
		data := map[string]any{"Title": "Authorize the CLI", "SigninURL": signin,
			"OrgHint": q.Get("org"), "WorkspaceHint": q.Get("workspace"), "ScopeHint": q.Get("scope")}
		if raw := strings.TrimSpace(q.Get("code")); raw != "" {
			if code, ok := normalizeCode(raw); ok {
				data["Code"] = code
			} else {
				data["BadCode"] = raw
			}
		}
		render(w, log, "authorize", data)
	}
}

// normalizeCode accepts a user code as people type it (any case, with or
// without the dash, surrounding spaces) and rejects anything that cannot
// be one, so the page never builds API paths from arbitrary text.
func normalizeCode(raw string) (string, bool) {
	s := strings.ToUpper(strings.ReplaceAll(raw, "-", ""))
	if len(s) != 8 {
		return "", false
	}
	for _, c := range s {
		if c < 'A' || c > 'Z' {
			return "", false
		}
	}
	return s[:4] + "-" + s[4:], true
}

// SafeNext returns where to go after signing in: raw when it is a path on
// this site, else "/". Only a single leading slash is allowed, so
// "//evil.example" and "/\evil.example" (which browsers read as another
// host) and absolute URLs cannot send a freshly signed-in person, or their
// session's trust, elsewhere.
func SafeNext(raw string) string {
	if raw == "" || raw[0] != '/' || len(raw) > 2048 {
		return "/"
	}
	if len(raw) > 1 && (raw[1] == '/' || raw[1] == '\\') {
		return "/"
	}
	if strings.ContainsFunc(raw, func(r rune) bool { return r == '\\' || r < 0x20 || r == 0x7f }) {
		return "/"
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return "/"
	}
	return raw
}

func withNext(page, next string) string {
	if next == "" || next == "/" {
		return page
	}
	return page + "?next=" + url.QueryEscape(next)
}

func render(w http.ResponseWriter, log *slog.Logger, page string, data map[string]any) {
	renderStatus(w, log, http.StatusOK, page, data)
}

// renderStatus renders page with status.
func renderStatus(w http.ResponseWriter, log *slog.Logger, status int, page string, data map[string]any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	// The page's own inline script is all it runs; nothing may frame it
	// (an approval page in a frame could be clickjacked into approving).
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline' 'self'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	w.Header().Set("X-Frame-Options", "DENY")
	// Setup tokens and sign-in codes are in URLs; keep them out of Referer
	// headers.
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	if err := pages[page].ExecuteTemplate(w, "layout", data); err != nil {
		log.Error("render page", "page", page, "error", err)
	}
}
