package api

import (
	"net/http"

	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/store"
)

// sessionStart is where a session started by this request comes from.
func sessionStart(r *Request) backend.SessionStart {
	ua, addr := sessionOrigin(r)
	return backend.SessionStart{UserAgent: ua, ClientAddress: addr, TTL: sessionTTL}
}

// setSessionCookie hands the browser a session that the service layer
// started (backend.StartSession).
func (s *Server) setSessionCookie(r *Request, se *store.Session, token string) {
	http.SetCookie(r.W, &http.Cookie{
		Name: SessionCookie, Value: token, Path: "/", Expires: se.ExpiresAt, MaxAge: int(sessionTTL.Seconds()),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.secureCookies(r),
	})
}
