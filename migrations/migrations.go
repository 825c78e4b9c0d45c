// Package migrations holds gw's database schema as embedded SQL templates.
//
// One template serves both dialects: the few column types that differ are
// placeholders filled per dialect, so SQLite and PostgreSQL never drift apart.
// Each file runs inside one transaction and is recorded only on success.
package migrations

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"text/template"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/migrate"
)

//go:embed *.sql
var files embed.FS

// columnTypes are the per-dialect spellings of the placeholder types.
type columnTypes struct {
	UUID, Time, Bool string
	// Bytes is a column of raw bytes (a batch file's body).
	Bytes string
}

func typesFor(d dialect.Name) (columnTypes, error) {
	switch d {
	case dialect.PG:
		return columnTypes{UUID: "UUID", Time: "TIMESTAMPTZ", Bool: "BOOLEAN", Bytes: "BYTEA"}, nil
	case dialect.SQLite:
		// SQLite stores bun's fixed-width UTC text, which sorts correctly.
		return columnTypes{UUID: "TEXT", Time: "TIMESTAMP", Bool: "BOOLEAN", Bytes: "BLOB"}, nil
	default:
		return columnTypes{}, fmt.Errorf("migrations: unsupported dialect %s", d)
	}
}

// New returns the migration set, ready for migrate.NewMigrator.
func New() (*migrate.Migrations, error) {
	names, err := fs.Glob(files, "*.sql")
	if err != nil {
		return nil, fmt.Errorf("list migrations: %w", err)
	}
	sort.Strings(names)
	ms := migrate.NewMigrations()
	for _, name := range names {
		body, err := files.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", name, err)
		}
		tmpl, err := template.New(name).Option("missingkey=error").Parse(string(body))
		if err != nil {
			return nil, fmt.Errorf("parse migration %s: %w", name, err)
		}
		ms.Add(migrate.Migration{
			Name:    strings.TrimSuffix(name, ".sql"),
			Comment: name,
			Up:      apply(tmpl),
			Down:    refuseDown(name),
		})
	}
	return ms, nil
}

// apply renders a template for the migrator's dialect and runs it in one
// transaction. (migrate.Migration's func fields have an unexported named type;
// a literal of the same signature is assignable to it.)
func apply(tmpl *template.Template) func(context.Context, *migrate.Migrator, *migrate.Migration) error {
	return func(ctx context.Context, m *migrate.Migrator, _ *migrate.Migration) error {
		db := m.DB()
		types, err := typesFor(db.Dialect().Name())
		if err != nil {
			return err
		}
		var sql bytes.Buffer
		if err := tmpl.Execute(&sql, types); err != nil {
			return fmt.Errorf("render %s: %w", tmpl.Name(), err)
		}
		return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			for _, stmt := range statements(sql.String()) {
				if _, err := tx.ExecContext(ctx, stmt); err != nil {
					return fmt.Errorf("%s: %w", tmpl.Name(), err)
				}
			}
			return nil
		})
	}
}

// Rolling a schema back would drop data; operators restore a backup instead.
func refuseDown(name string) func(context.Context, *migrate.Migrator, *migrate.Migration) error {
	return func(context.Context, *migrate.Migrator, *migrate.Migration) error {
		return fmt.Errorf("migration %s cannot be rolled back; restore a backup instead", name)
	}
}

// statements splits a script on semicolons that end a line, dropping
// comment-only lines. The schema files use no semicolons inside literals.
func statements(script string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(script, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(trimmed, ";") {
			out = append(out, strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"))
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}
