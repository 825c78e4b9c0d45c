package backend

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/store"
)

// SessionStart is where a browser session comes from, as the session list
// shows it, and how long it lasts.
type SessionStart struct {
	UserAgent, ClientAddress string
	TTL                      time.Duration
}

// StartSession creates a browser session for userID in the caller's
// transaction, so an account and its first session commit together. The
// token is returned once, for the cookie, and never stored.
func StartSession(ctx context.Context, tx *store.Store, userID uuid.UUID, from SessionStart) (*store.Session, string, error) {
	token, _, hash := auth.NewToken(auth.SessionPrefix)
	now := store.Now()
	se := &store.Session{ID: uuid.New(), UserID: userID, TokenHash: hash, UserAgent: from.UserAgent, ClientAddress: from.ClientAddress,
		CreatedAt: now, ExpiresAt: now.Add(from.TTL)}
	if err := tx.CreateSession(ctx, se); err != nil {
		return nil, "", err
	}
	return se, token, nil
}
