package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/catalogdb"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
)

// A model alias (issue 19) is a name agents ask for (their vendor's own
// model ids, such as claude-opus-4-8 or gpt-5.1-codex[1m]) routed to
// catalog models. Its targets are catalog models, never aliases, so an
// alias cannot lead to another and cycles are impossible by construction.

// Alias limits: how many targets, and the weight range.
const (
	AliasMaxTargets = 8
	AliasMaxWeight  = 100
)

// AliasNamePattern is what an alias name may be: the characters model ids
// of the agents use, never a slash, so an alias can never read as a
// catalog id (provider/model) and travels in one path segment.
var AliasNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@\[\]-]{0,127}$`)

// The rules of an alias's members as the API reads them. gw aliases
// apply reads its file with the same rules, so a file that passes there
// passes here, and its problems are all reported before anything is sent.
var (
	AliasNameRule   = validate.StringRule{Min: 1, Max: 128, Pattern: AliasNamePattern}
	AliasModelRule  = validate.StringRule{Min: 1, Max: 200, NoControl: true}
	AliasWeightRule = validate.IntRule{Min: validate.Bound(1), Max: validate.Bound(AliasMaxWeight)}
)

// ParseAliasTargets reads an alias's targets at loc: 1 to 8
// {model, weight}, the weight 1 to 100 and 1 when absent. Whether the
// models are in the catalog is checkAlias's to say, with the store.
func ParseAliasTargets(v any, loc validate.Loc, errs *validate.Errors) []AliasTarget {
	var out []AliasTarget
	validate.List(v, loc, validate.ListRule{Min: 1, Max: AliasMaxTargets}, errs, func(v any, loc validate.Loc) {
		t := validate.ReadObject(v, loc, errs)
		if t == nil {
			return
		}
		target := AliasTarget{Weight: 1}
		if m, ok := t.Require("model"); ok {
			target.Model, _ = validate.String(m, loc.With("model"), AliasModelRule, errs)
		}
		if w, ok := t.Raw("weight"); ok {
			n, _ := validate.Int(w, loc.With("weight"), AliasWeightRule, errs)
			target.Weight = int(n)
		}
		t.Close()
		out = append(out, target)
	})
	return out
}

// AliasTarget is a catalog model an alias routes to, with its weight.
type AliasTarget struct {
	Model  string `json:"model"`
	Weight int    `json:"weight"`
}

// AliasCreate is a new alias at a scope.
type AliasCreate struct {
	Scope   store.AliasScope
	Name    string
	Targets []AliasTarget
}

// CreateModelAlias stores an alias under a name no catalog model has and
// no alias of its level has, its targets all catalog models.
func CreateModelAlias(ctx context.Context, st *store.Store, actor Actor, in AliasCreate) (*store.ModelAlias, error) {
	now := store.Now()
	a := &store.ModelAlias{ID: uuid.New(), OrgID: in.Scope.OrgID, WorkspaceID: in.Scope.WorkspaceID, Name: in.Name,
		CreatedAt: now, UpdatedAt: now}
	err := st.InTx(ctx, func(tx *store.Store) error {
		var err error
		if a.Targets, err = checkAlias(ctx, tx, &in.Name, in.Targets); err != nil {
			return err
		}
		if err := tx.CreateModelAlias(ctx, a); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return errorf(Conflict, "a model alias named %q already exists here", a.Name)
			}
			return err
		}
		return auditAlias(ctx, tx, actor, "model_alias.created", a)
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// ModelAliasIn is the scope's alias name.
func ModelAliasIn(ctx context.Context, st *store.Store, sc store.AliasScope, name string) (*store.ModelAlias, error) {
	a, err := st.GetModelAlias(ctx, sc, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errorf(NotFound, "model alias %q not found", name)
	}
	return a, err
}

// UpdateModelAlias replaces the targets of the scope's alias name.
func UpdateModelAlias(ctx context.Context, st *store.Store, actor Actor, sc store.AliasScope, name string, targets []AliasTarget) (*store.ModelAlias, error) {
	var a *store.ModelAlias
	err := st.InTx(ctx, func(tx *store.Store) error {
		var err error
		if a, err = ModelAliasIn(ctx, tx, sc, name); err != nil {
			return err
		}
		if a.Targets, err = checkAlias(ctx, tx, nil, targets); err != nil {
			return err
		}
		a.UpdatedAt = store.Now()
		if err := tx.UpdateModelAlias(ctx, a); err != nil {
			return err
		}
		return auditAlias(ctx, tx, actor, "model_alias.updated", a)
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// DeleteModelAlias deletes the scope's alias name.
func DeleteModelAlias(ctx context.Context, st *store.Store, actor Actor, sc store.AliasScope, name string) (*store.ModelAlias, error) {
	var a *store.ModelAlias
	err := st.InTx(ctx, func(tx *store.Store) error {
		var err error
		if a, err = ModelAliasIn(ctx, tx, sc, name); err != nil {
			return err
		}
		if err := tx.DeleteModelAlias(ctx, a.ID); err != nil {
			return err
		}
		return auditAlias(ctx, tx, actor, "model_alias.deleted", a)
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// AliasTargets reads an alias's stored targets.
func AliasTargets(a *store.ModelAlias) ([]AliasTarget, error) {
	var ts []AliasTarget
	if err := json.Unmarshal([]byte(a.Targets), &ts); err != nil {
		return nil, fmt.Errorf("stored targets of model alias %s: %w", a.ID, err)
	}
	return ts, nil
}

func auditAlias(ctx context.Context, tx *store.Store, actor Actor, action string, a *store.ModelAlias) error {
	ts, err := AliasTargets(a)
	if err != nil {
		return err
	}
	models := make([]string, len(ts))
	for i, t := range ts {
		models[i] = t.Model
	}
	return Audit(ctx, tx, actor, AuditEntry{Action: action, TargetType: "model_alias", TargetID: a.ID.String(),
		OrgID: &a.OrgID, WorkspaceID: a.WorkspaceID, Details: map[string]any{"name": a.Name, "targets": models}})
}

// checkAlias refuses a name (when given) equal to a catalog model's id and
// targets that are not catalog models in force, and returns the targets'
// canonical JSON. A retired model may stay the target of an alias made
// before it retired (it is then shown as retired and skipped), but a new
// target must be in force.
func checkAlias(ctx context.Context, tx *store.Store, name *string, targets []AliasTarget) (string, error) {
	rows, err := catalogdb.LoadRows(ctx, tx)
	if err != nil {
		return "", err
	}
	active, err := rows.Active()
	if err != nil {
		return "", err
	}
	var errs validate.Errors
	if name != nil {
		for _, m := range rows.Models {
			if m.ID == *name {
				errs.Add(validate.Loc{"body", "name"}, "value_error",
					"Value error, the name is a catalog model's id; an alias cannot shadow a model", *name, nil)
			}
		}
	}
	seen := map[string]bool{}
	for i, t := range targets {
		if seen[t.Model] {
			errs.Add(validate.Loc{"body", "targets", i, "model"}, "value_error",
				"Value error, the model is already a target of this alias", t.Model, nil)
		}
		seen[t.Model] = true
		if _, ok := active.Model(t.Model); !ok {
			errs.Add(validate.Loc{"body", "targets", i, "model"}, "value_error",
				"Value error, not a model of the catalog in force", t.Model, nil)
		}
	}
	if err := errs.Err(); err != nil {
		return "", err
	}
	b, err := json.Marshal(targets)
	if err != nil {
		return "", fmt.Errorf("model alias targets: %w", err)
	}
	return string(b), nil
}
