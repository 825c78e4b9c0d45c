package backend_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/catalogdb"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/server/validate"
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

// TestParseAliasTargets: the targets rules the API and gw aliases apply
// share.
func TestParseAliasTargets(t *testing.T) {
	for _, c := range []struct {
		name string
		in   string
		want []backend.AliasTarget
		locs []string
	}{
		{"default weight", `[{"model":"a/b"}]`, []backend.AliasTarget{{Model: "a/b", Weight: 1}}, nil},
		{"weights", `[{"model":"a/b","weight":3},{"model":"c/d","weight":100}]`,
			[]backend.AliasTarget{{Model: "a/b", Weight: 3}, {Model: "c/d", Weight: 100}}, nil},
		{"none", `[]`, nil, []string{"targets"}},
		{"nine", `[{"model":"a"},{"model":"b"},{"model":"c"},{"model":"d"},{"model":"e"},{"model":"f"},{"model":"g"},{"model":"h"},{"model":"i"}]`,
			nil, []string{"targets"}},
		{"weight out of range", `[{"model":"a","weight":0},{"model":"b","weight":101}]`, nil, []string{"targets.0.weight", "targets.1.weight"}},
		{"no model, unknown member", `[{"weight":2,"modle":"x"}]`, nil, []string{"targets.0.model", "targets.0.modle"}},
		{"not a list", `{"model":"a"}`, nil, []string{"targets"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, err := validate.ParseJSON([]byte(c.in), nil)
			if err != nil {
				t.Fatal(err)
			}
			var errs validate.Errors
			got := backend.ParseAliasTargets(v, validate.Loc{"targets"}, &errs)
			var locs []string
			if ve, ok := validate.AsError(errs.Err()); ok {
				for _, is := range ve.Issues {
					parts := make([]string, len(is.Loc))
					for i, p := range is.Loc {
						parts[i] = fmt.Sprint(p)
					}
					locs = append(locs, strings.Join(parts, "."))
				}
			}
			slices.Sort(locs)
			if !slices.Equal(locs, c.locs) {
				t.Fatalf("problems at %v, want %v", locs, c.locs)
			}
			if c.locs == nil && !slices.Equal(got, c.want) {
				t.Fatalf("targets %+v, want %+v", got, c.want)
			}
		})
	}
}
