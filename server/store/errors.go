package store

import (
	"database/sql"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// The two database errors callers act on. Everything else is an internal
// failure.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
)

// mapErr turns driver errors into ErrNotFound / ErrConflict, once, for both
// dialects, keeping the original in the chain for logs.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return errors.Join(ErrConflict, err)
	}
	// modernc.org/sqlite reports constraint failures in the message text.
	if strings.Contains(err.Error(), "UNIQUE constraint failed") || strings.Contains(err.Error(), "constraint failed: UNIQUE") {
		return errors.Join(ErrConflict, err)
	}
	return err
}
