// Package web serves gw's few browser pages (first-run setup now; sign-in
// and CLI approval later) from embedded templates with no external assets.
// Pages only render; every action is a call to /api/v1 from the page, which
// sends X-Requested-With like any browser client must.
package web

import (
	"embed"
	"html/template"
	"log/slog"
	"net/http"
)

//go:embed templates/*.html
var files embed.FS

var pages = template.Must(template.ParseFS(files, "templates/*.html"))

// SetupState tells the setup page whether the instance has an owner.
type SetupState func(r *http.Request) (bootstrapped bool, err error)

// Handler serves the pages.
func Handler(log *slog.Logger, state SetupState) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /setup", func(w http.ResponseWriter, r *http.Request) {
		done, err := state(r)
		if err != nil {
			log.Error("setup page", "error", err)
			http.Error(w, "internal server error", http.StatusInternalServerError)
			return
		}
		render(w, log, map[string]any{"Title": "Set up", "Bootstrapped": done, "Token": r.URL.Query().Get("token")})
	})
	return mux
}

func render(w http.ResponseWriter, log *slog.Logger, data map[string]any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	// The page's own inline script is all it runs; nothing may frame it.
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline' 'self'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	w.Header().Set("X-Frame-Options", "DENY")
	// The setup token is in the URL; keep it out of Referer headers.
	w.Header().Set("Referrer-Policy", "no-referrer")
	if err := pages.ExecuteTemplate(w, "layout", data); err != nil {
		log.Error("render page", "error", err)
	}
}
