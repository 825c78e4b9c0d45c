package store_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"

	"github.com/gw-gateway/gw/migrations"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// migratedUntil opens a fresh database with the migrations older than
// before applied: the schema an instance had before upgrading.
func migratedUntil(t *testing.T, d storetest.Dialect, before string) *bun.DB {
	t.Helper()
	ctx := context.Background()
	url, err := storetest.URL(t, d)
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(ctx, url, filepath.Join(t.TempDir(), "data"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	all, err := migrations.New()
	if err != nil {
		t.Fatal(err)
	}
	older := migrate.NewMigrations()
	for _, m := range all.Sorted() {
		if m.Name < before {
			older.Add(m)
		}
	}
	m := migrate.NewMigrator(db, older, migrate.WithMarkAppliedOnSuccess(true))
	if err := m.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return db
}

// The rows of issue 17's upgrades as an older release wrote them: only
// the columns it had.
type (
	oldOrg struct {
		bun.BaseModel `bun:"table:organizations"`
		ID            uuid.UUID `bun:"id,type:uuid"`
		Name, Slug    string
		CreatedAt     time.Time
		UpdatedAt     time.Time
	}
	oldWorkspace struct {
		bun.BaseModel `bun:"table:workspaces"`
		ID            uuid.UUID `bun:"id,type:uuid"`
		OrgID         uuid.UUID `bun:"org_id,type:uuid"`
		Name, Slug    string
		CreatedAt     time.Time
		UpdatedAt     time.Time
	}
	oldUser struct {
		bun.BaseModel `bun:"table:users"`
		ID            uuid.UUID `bun:"id,type:uuid"`
		Email, Name   string
		InstanceRole  string
		CreatedAt     time.Time
		UpdatedAt     time.Time
	}
	oldInferenceKey struct {
		bun.BaseModel                  `bun:"table:inference_keys"`
		ID, OrgID, WorkspaceID, UserID uuid.UUID `bun:",type:uuid"`
		Name, Prefix, TokenHash        string
		CreatedAt, UpdatedAt           time.Time
	}
	oldAudit struct {
		bun.BaseModel `bun:"table:audit_events"`
		ID            uuid.UUID  `bun:"id,type:uuid"`
		ActorType     string     `bun:"actor_type"`
		ActorID       *uuid.UUID `bun:"actor_id,type:uuid"`
		Action        string
		TargetType    string `bun:"target_type"`
		TargetID      string `bun:"target_id"`
		RequestID     string `bun:"request_id"`
		Details       string
		CreatedAt     time.Time
	}
	oldEnrollment struct {
		bun.BaseModel `bun:"table:data_plane_enrollments"`
		DataPlaneID   string `bun:"data_plane_id"`
		PublicKey     string
		Fingerprint   string
		Status        string
		RequestedAt   time.Time
		UpdatedAt     time.Time
	}
)

// Upgrading: inference keys learn who issued them from the audit log, so
// disabling the issuer revokes them too; enrollments made before
// platform_credentials existed keep receiving platform credentials.
func TestIssue17Upgrade(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			db := migratedUntil(t, d, "20261126000020")
			now := store.Now()
			org := oldOrg{ID: uuid.New(), Name: "acme", Slug: "acme", CreatedAt: now, UpdatedAt: now}
			ws := oldWorkspace{ID: uuid.New(), OrgID: org.ID, Name: "main", Slug: "main", CreatedAt: now, UpdatedAt: now}
			issuer := oldUser{ID: uuid.New(), Email: "issuer@example.com", Name: "issuer", InstanceRole: "member", CreatedAt: now, UpdatedAt: now}
			owner := oldUser{ID: uuid.New(), Email: "owner@example.com", Name: "owner", InstanceRole: "member", CreatedAt: now, UpdatedAt: now}
			audited := oldInferenceKey{ID: uuid.New(), OrgID: org.ID, WorkspaceID: ws.ID, UserID: owner.ID, Name: "a", Prefix: "sk-gw-a", TokenHash: "h1", CreatedAt: now, UpdatedAt: now}
			unaudited := oldInferenceKey{ID: uuid.New(), OrgID: org.ID, WorkspaceID: ws.ID, UserID: owner.ID, Name: "b", Prefix: "sk-gw-b", TokenHash: "h2", CreatedAt: now, UpdatedAt: now}
			issued := oldAudit{ID: uuid.New(), ActorType: "user", ActorID: &issuer.ID, Action: "inference_key.issued", TargetType: "inference_key",
				TargetID: audited.ID.String(), RequestID: "req", Details: "{}", CreatedAt: now}
			enrollment := oldEnrollment{DataPlaneID: "dp-old", PublicKey: "pk", Fingerprint: "f", Status: "approved", RequestedAt: now, UpdatedAt: now}
			for _, row := range []any{&org, &ws, &issuer, &owner, &audited, &unaudited, &issued, &enrollment} {
				if _, err := db.NewInsert().Model(row).Exec(ctx); err != nil {
					t.Fatalf("insert %T: %v", row, err)
				}
			}
			applied, err := store.Migrate(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("applied %v", applied)
			st := store.New(db)
			k, err := st.GetInferenceKey(ctx, ws.ID, audited.ID)
			if err != nil || k.CreatedBy == nil || *k.CreatedBy != issuer.ID {
				t.Fatalf("the audited key's issuer: %+v %v", k.CreatedBy, err)
			}
			if k, err := st.GetInferenceKey(ctx, ws.ID, unaudited.ID); err != nil || k.CreatedBy != nil {
				t.Fatalf("a key without an audit entry: %+v %v", k.CreatedBy, err)
			}
			revoked, err := st.RevokeUserInferenceKeys(ctx, issuer.ID, now)
			if err != nil || len(revoked) != 1 || revoked[0].ID != audited.ID {
				t.Fatalf("disabling the issuer revokes %+v %v", revoked, err)
			}
			e, err := st.GetEnrollment(ctx, "dp-old")
			if err != nil || !e.PlatformCredentials {
				t.Fatalf("an enrollment from before the choice: %+v %v", e, err)
			}
		})
	}
}
