// Package dbflags is how the commands that open gw's database themselves
// (gw serve, gw db, gw admin) name it and its secret key.
package dbflags

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store"
)

// DBOptions locate the database.
type DBOptions struct {
	DataDir     string
	DatabaseURL string
}

func AddDBFlags(cmd *cobra.Command) {
	cmd.Flags().String("data-dir", "", "directory for the embedded database and keys (default $XDG_DATA_HOME/gw) [GW_DATA_DIR]")
	cmd.Flags().String("database-url", "", "postgres://… to use PostgreSQL; empty for embedded SQLite in the data dir [GW_DATABASE_URL]")
}

func ReadDBOptions(v *viper.Viper) DBOptions {
	o := DBOptions{DataDir: v.GetString("data-dir"), DatabaseURL: v.GetString("database-url")}
	if o.DataDir == "" {
		o.DataDir = defaultDataDir()
	}
	return o
}

func defaultDataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "gw")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "gw")
	}
	return "gw-data"
}

// OpenDB opens the configured database.
func OpenDB(ctx context.Context, o DBOptions) (*bun.DB, error) {
	db, err := store.Open(ctx, o.DatabaseURL, o.DataDir)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	return db, nil
}

// OpenExistingDB opens the configured database for a command that only
// reads it. Opening an embedded database creates it (and its directory), so
// a mistyped --data-dir would have shown a fresh, empty database; here a
// missing file is an error that names the path.
func OpenExistingDB(ctx context.Context, o DBOptions) (*bun.DB, error) {
	if path := o.sqlitePath(); path != "" {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no database at %s: check --data-dir or --database-url (gw db migrate or gw serve creates one)", path)
		} else if err != nil {
			return nil, fmt.Errorf("open database: %w", err)
		}
	}
	return OpenDB(ctx, o)
}

// OpenServerDB opens the database of a running server for an operator
// command that changes it (gw admin). Opening creates an embedded
// database, and migrating would make any empty database a gw one, so a
// mistyped --data-dir used to get a fresh database and then "the instance
// has no owner yet" (issue 26, row 7): here a database gw never migrated
// is refused, naming where it looked.
func OpenServerDB(ctx context.Context, o DBOptions) (*bun.DB, error) {
	refuse := fmt.Errorf("no gw database at %s; pass the data dir of the running server (--data-dir, GW_DATA_DIR) or its --database-url", o.Where())
	if path := o.sqlitePath(); path != "" {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, refuse
		}
	}
	db, err := OpenDB(ctx, o)
	if err != nil {
		return nil, err
	}
	st, err := store.Status(ctx, db)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("read migrations of %s: %w", o.Where(), err)
	}
	if !slices.ContainsFunc(st, func(m store.MigrationStatus) bool { return m.Applied }) {
		db.Close()
		return nil, refuse
	}
	return db, nil
}

// where names the database for messages: the embedded database's file,
// or the URL with its password hidden.
func (o DBOptions) Where() string {
	if path := o.sqlitePath(); path != "" {
		return path
	}
	if u, err := url.Parse(o.DatabaseURL); err == nil {
		return u.Redacted()
	}
	return "the --database-url given"
}

// sqlitePath is the file of an embedded or sqlite:// database, as
// store.Open reads it; empty for PostgreSQL and in-memory databases.
func (o DBOptions) sqlitePath() string {
	if o.DatabaseURL == "" {
		return filepath.Join(o.DataDir, "gw.db")
	}
	if !strings.HasPrefix(o.DatabaseURL, "sqlite://") && !strings.HasPrefix(o.DatabaseURL, "file:") {
		return ""
	}
	path := strings.TrimPrefix(strings.TrimPrefix(o.DatabaseURL, "sqlite://"), "file:")
	query := ""
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path, query = path[:i], path[i:]
	}
	if path == "" || strings.HasPrefix(path, ":memory:") || strings.Contains(query, "mode=memory") {
		return ""
	}
	return path
}

// SecretOptions locate the secret key that seals provider secrets.
type SecretOptions struct {
	// Key is GW_SECRET_KEY (64 hex digits or base64 of 32 bytes); it wins
	// over the file.
	Key string
	// KeyFile defaults to <data dir>/secret.key, created 0600 if absent.
	KeyFile string
}

func AddSecretFlags(cmd *cobra.Command) {
	cmd.Flags().String("secret-key-file", "", "file holding the key that seals provider secrets (default DATA_DIR/secret.key, created if absent) [GW_SECRET_KEY_FILE; or GW_SECRET_KEY=<64 hex digits>]")
}

func ReadSecretOptions(v *viper.Viper, db DBOptions) SecretOptions {
	o := SecretOptions{Key: v.GetString("secret-key"), KeyFile: v.GetString("secret-key-file")}
	if o.KeyFile == "" {
		o.KeyFile = filepath.Join(db.DataDir, "secret.key")
	}
	return o
}

func LoadKeyring(o SecretOptions) (*secrets.Keyring, error) {
	kr, err := secrets.LoadKeyring(o.Key, secrets.KeyFiles{Current: o.KeyFile})
	if err != nil {
		return nil, fmt.Errorf("load secret key: %w", err)
	}
	return kr, nil
}
