package backend_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/catalogdb"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

func TestModelAliasRules(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		if err := catalogdb.Seed(ctx, w.st); err != nil {
			t.Fatal(err)
		}
		org := store.AliasScope{OrgID: w.org.ID}
		ws := store.AliasScope{OrgID: w.org.ID, WorkspaceID: &w.ws.ID}
		mini := []backend.AliasTarget{{Model: "openai/gpt-4o-mini", Weight: 1}}
		create := func(sc store.AliasScope, name string, ts []backend.AliasTarget) func() error {
			return func() error {
				_, err := backend.CreateModelAlias(ctx, w.st, w.admin, backend.AliasCreate{Scope: sc, Name: name, Targets: ts})
				return err
			}
		}
		checkRules(t, w.st, w.org.ID, []rule{
			{name: "an organization alias", op: create(org, "claude-opus-4-8[1m]", mini), action: "model_alias.created", by: &w.admin},
			{name: "the same name at the organization", op: create(org, "claude-opus-4-8[1m]", mini), kind: backend.Conflict},
			{name: "the same name in a workspace overrides", op: create(ws, "claude-opus-4-8[1m]", mini), action: "model_alias.created", by: &w.admin},
			{name: "a catalog model's id as name", op: create(org, "openai/gpt-4o-mini", mini), kind: invalid},
			{name: "a target not in the catalog", op: create(org, "gpt-5", []backend.AliasTarget{{Model: "openai/nope", Weight: 1}}), kind: invalid},
			{name: "a target twice", op: create(org, "gpt-5", append(mini, mini...)), kind: invalid},
			{name: "change the targets", op: func() error {
				_, err := backend.UpdateModelAlias(ctx, w.st, w.admin, org, "claude-opus-4-8[1m]", []backend.AliasTarget{{Model: "openai/gpt-4o", Weight: 3}})
				return err
			}, action: "model_alias.updated", by: &w.admin},
			{name: "change an unknown alias", op: func() error {
				_, err := backend.UpdateModelAlias(ctx, w.st, w.admin, org, "nope", mini)
				return err
			}, kind: backend.NotFound},
			{name: "delete the workspace's", op: func() error {
				_, err := backend.DeleteModelAlias(ctx, w.st, w.admin, ws, "claude-opus-4-8[1m]")
				return err
			}, action: "model_alias.deleted", by: &w.admin},
			{name: "delete it again", op: func() error {
				_, err := backend.DeleteModelAlias(ctx, w.st, w.admin, ws, "claude-opus-4-8[1m]")
				return err
			}, kind: backend.NotFound},
		})
		// Another organization's alias is not found by name from here.
		other := store.AliasScope{OrgID: uuid.New()}
		if _, err := backend.ModelAliasIn(ctx, w.st, other, "claude-opus-4-8[1m]"); kindOf(err) != backend.NotFound {
			t.Fatalf("another organization sees the alias: %v", err)
		}
		a, err := backend.ModelAliasIn(ctx, w.st, org, "claude-opus-4-8[1m]")
		if err != nil {
			t.Fatal(err)
		}
		if ts, err := backend.AliasTargets(a); err != nil || len(ts) != 1 || ts[0] != (backend.AliasTarget{Model: "openai/gpt-4o", Weight: 3}) {
			t.Fatalf("targets %+v %v", ts, err)
		}
	})
}
