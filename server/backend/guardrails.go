package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/guardrails"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
)

// A guardrail (issue 32) runs detectors over what a caller sends (input)
// and what it gets back (output) and blocks, redacts or flags what they
// find. An organization's applies to every workspace; a workspace's to
// its own. The target is the policies' target.

// GuardrailNameRule is what a guardrail's name may be.
var GuardrailNameRule = validate.StringRule{Min: 1, Max: 200, NoControl: true}

// GuardrailSecretRule bounds a webhook's signing secret.
var GuardrailSecretRule = validate.StringRule{Min: 16, Max: 512, NoControl: true}

// GuardrailDetector is a detector as stored: the spec and, for a webhook,
// its signing secret sealed (never answered back).
type GuardrailDetector struct {
	guardrails.DetectorSpec
	SecretSealed string `json:"secret_sealed,omitempty"`
}

// GuardrailDefinition is what a guardrail does, as stored (the
// definition column) and carried in bundles.
type GuardrailDefinition struct {
	Target    policy.Target       `json:"target"`
	Stages    []guardrails.Stage  `json:"stages"`
	Detectors []GuardrailDetector `json:"detectors"`
	Action    guardrails.Action   `json:"action"`
	OnError   guardrails.OnError  `json:"on_error"`
}

// Spec is the definition as the pure core reads it.
func (d GuardrailDefinition) Spec(id uuid.UUID, name string) guardrails.Spec {
	s := guardrails.Spec{ID: id.String(), Name: name, Stages: d.Stages, Action: d.Action, OnError: d.OnError,
		Detectors: make([]guardrails.DetectorSpec, len(d.Detectors))}
	for i, det := range d.Detectors {
		s.Detectors[i] = det.DetectorSpec
	}
	return s
}

// ReadGuardrailDefinition reads a stored definition.
func ReadGuardrailDefinition(g *store.Guardrail) (GuardrailDefinition, error) {
	var d GuardrailDefinition
	if err := json.Unmarshal([]byte(g.Definition), &d); err != nil {
		return d, fmt.Errorf("stored definition of guardrail %s: %w", g.ID, err)
	}
	return d, nil
}

// GuardrailInput is a guardrail's body as read: members absent are nil
// (an update keeps them). Secrets are the webhook secrets given, by
// detector index, in the clear until sealed.
type GuardrailInput struct {
	Name      *string
	Enabled   *bool
	Target    *policy.Target
	Stages    []guardrails.Stage
	Detectors []guardrails.DetectorSpec
	Action    *guardrails.Action
	OnError   *guardrails.OnError
	Secrets   map[int]string
	// has: which of stages and detectors were given.
	HasStages, HasDetectors bool
}

// ParseGuardrail reads a guardrail body strictly (unknown members are
// refused); create requires every member but enabled (true by default).
// Every problem is reported to o's errors, the detectors' with their
// place (a regex that does not compile names its pattern's index).
func ParseGuardrail(o *validate.Object, create bool) GuardrailInput {
	in := GuardrailInput{Secrets: map[int]string{}}
	errs := o.Errors()
	get := func(name string) (any, bool) {
		if create && name != "enabled" {
			return o.Require(name)
		}
		return o.Raw(name)
	}
	if v, ok := get("name"); ok {
		if s, ok := validate.String(v, o.Loc().With("name"), GuardrailNameRule, errs); ok {
			in.Name = &s
		}
	}
	if v, ok := get("enabled"); ok {
		if b, ok := validate.Bool(v, o.Loc().With("enabled"), errs); ok {
			in.Enabled = &b
		}
	}
	if v, ok := get("target"); ok {
		t := policy.ParseTarget(v, o.Loc().With("target"), errs)
		in.Target = &t
	}
	if v, ok := get("stages"); ok {
		in.HasStages = true
		validate.List(v, o.Loc().With("stages"), validate.ListRule{Min: 1, Max: 2}, errs, func(v any, loc validate.Loc) {
			if s, ok := validate.Literal(v, loc, guardrails.Stages, errs); ok {
				in.Stages = append(in.Stages, guardrails.Stage(s))
			}
		})
	}
	if v, ok := get("action"); ok {
		if s, ok := validate.Literal(v, o.Loc().With("action"), guardrails.Actions, errs); ok {
			a := guardrails.Action(s)
			in.Action = &a
		}
	}
	if v, ok := get("on_error"); ok {
		if s, ok := validate.Literal(v, o.Loc().With("on_error"), guardrails.OnErrors, errs); ok {
			e := guardrails.OnError(s)
			in.OnError = &e
		}
	}
	if v, ok := get("detectors"); ok {
		in.HasDetectors = true
		loc := o.Loc().With("detectors")
		validate.List(v, loc, validate.ListRule{Min: 1, Max: guardrails.MaxDetectors}, errs, func(v any, loc validate.Loc) {
			in.Detectors = append(in.Detectors, parseDetector(v, loc, errs, len(in.Detectors), in.Secrets))
		})
	}
	o.Close()
	return in
}

func parseDetector(v any, loc validate.Loc, errs *validate.Errors, index int, secrets map[int]string) guardrails.DetectorSpec {
	o := validate.ReadObject(v, loc, errs)
	if o == nil {
		return guardrails.DetectorSpec{}
	}
	kind, ok := validate.Discriminator(o, "kind", guardrails.Kinds)
	if !ok {
		return guardrails.DetectorSpec{}
	}
	d := guardrails.DetectorSpec{Kind: kind}
	strs := func(name string, max int, rule validate.StringRule) []string {
		out := []string{}
		if v, ok := o.Require(name); ok {
			validate.List(v, loc.With(name), validate.ListRule{Min: 1, Max: max}, errs, func(v any, loc validate.Loc) {
				s, _ := validate.String(v, loc, rule, errs)
				out = append(out, s)
			})
		}
		return out
	}
	switch kind {
	case guardrails.KindPII:
		if v, ok := o.Require("types"); ok {
			validate.List(v, loc.With("types"), validate.ListRule{Min: 1, Max: len(guardrails.PIITypes)}, errs, func(v any, loc validate.Loc) {
				s, _ := validate.Literal(v, loc, guardrails.PIITypes, errs)
				d.Types = append(d.Types, s)
			})
		}
	case guardrails.KindSecrets:
	case guardrails.KindRegex:
		d.Patterns = strs("patterns", guardrails.MaxPatterns, validate.StringRule{Min: 1, Max: guardrails.MaxPatternLen})
	case guardrails.KindKeywords:
		d.Words = strs("words", guardrails.MaxWords, validate.StringRule{Min: 1, Max: guardrails.MaxWordLen, NoControl: true})
	case guardrails.KindWebhook:
		if v, ok := o.Require("url"); ok {
			d.URL, _ = validate.String(v, loc.With("url"), validate.StringRule{Min: 1, Max: 2048, NoControl: true}, errs)
		}
		if v, ok := o.Raw("timeout_ms"); ok {
			n, _ := validate.Int(v, loc.With("timeout_ms"), validate.IntRule{Min: validate.Bound(1), Max: validate.Bound(guardrails.MaxWebhookTimeout)}, errs)
			d.TimeoutMS = int(n)
		}
		if v, ok := o.Raw("secret"); ok {
			if s, ok := validate.String(v, loc.With("secret"), GuardrailSecretRule, errs); ok {
				secrets[index] = s
			}
		}
	}
	o.Close()
	return d
}

// problemLoc turns a core problem's field ("detectors[1].patterns[0]")
// into a location under body.
func problemLoc(field string) validate.Loc {
	loc := validate.Loc{"body"}
	for _, part := range strings.Split(field, ".") {
		name, rest, _ := strings.Cut(part, "[")
		loc = loc.With(name)
		for rest != "" {
			idx, after, _ := strings.Cut(rest, "]")
			if n, err := strconv.Atoi(idx); err == nil {
				loc = loc.With(n)
			}
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return loc
}

// GuardrailSealer seals a webhook secret under an AAD
// (secrets.GuardrailWebhookAAD of the guardrail and URL).
type GuardrailSealer func(secret []byte, guardrailID uuid.UUID, url string) (string, error)

// GuardrailCreate is a new guardrail at a scope.
type GuardrailCreate struct {
	Scope store.AliasScope
	In    GuardrailInput
	Seal  GuardrailSealer
}

// CreateGuardrail stores a guardrail whose detectors the core accepts,
// webhook secrets sealed, and audits it (kinds, stages, action, on_error,
// webhook URLs; never a pattern, word or secret).
func CreateGuardrail(ctx context.Context, st *store.Store, actor Actor, c GuardrailCreate) (*store.Guardrail, error) {
	now := store.Now()
	g := &store.Guardrail{ID: uuid.New(), OrgID: c.Scope.OrgID, WorkspaceID: c.Scope.WorkspaceID, Name: *c.In.Name, Enabled: true,
		CreatedAt: now, UpdatedAt: now}
	if c.In.Enabled != nil {
		g.Enabled = *c.In.Enabled
	}
	d := GuardrailDefinition{Target: *c.In.Target, Stages: c.In.Stages, Action: *c.In.Action, OnError: *c.In.OnError}
	if err := setDetectors(g, &d, nil, c.In, c.Seal); err != nil {
		return nil, err
	}
	err := st.InTx(ctx, func(tx *store.Store) error {
		if err := tx.CreateGuardrail(ctx, g); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return errorf(Conflict, "a guardrail named %q already exists here", g.Name)
			}
			return err
		}
		return auditGuardrail(ctx, tx, actor, "guardrail.created", g, d)
	})
	if err != nil {
		return nil, err
	}
	return g, nil
}

// setDetectors checks the definition with the core, seals the secrets
// given (a webhook given none keeps the sealed secret of the old
// definition's webhook of the same URL, if any) and writes the column.
func setDetectors(g *store.Guardrail, d *GuardrailDefinition, old *GuardrailDefinition, in GuardrailInput, seal GuardrailSealer) error {
	if in.HasDetectors {
		d.Detectors = make([]GuardrailDetector, len(in.Detectors))
		for i, spec := range in.Detectors {
			d.Detectors[i] = GuardrailDetector{DetectorSpec: spec}
			if spec.Kind != guardrails.KindWebhook {
				continue
			}
			if s, ok := in.Secrets[i]; ok {
				sealed, err := seal([]byte(s), g.ID, spec.URL)
				if err != nil {
					return err
				}
				d.Detectors[i].SecretSealed = sealed
			} else if old != nil {
				for _, od := range old.Detectors {
					if od.Kind == guardrails.KindWebhook && od.URL == spec.URL && od.SecretSealed != "" {
						d.Detectors[i].SecretSealed = od.SecretSealed
						break
					}
				}
			}
		}
	}
	var errs validate.Errors
	for _, p := range guardrails.Validate(d.Spec(g.ID, g.Name)) {
		errs.Add(problemLoc(p.Field), "value_error", "Value error, "+p.Message, nil, nil)
	}
	if err := errs.Err(); err != nil {
		return err
	}
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("guardrail definition: %w", err)
	}
	g.Definition = string(b)
	return nil
}

// GuardrailIn is the guardrail id of exactly the scope; any other is not
// found.
func GuardrailIn(ctx context.Context, st *store.Store, sc store.AliasScope, id uuid.UUID) (*store.Guardrail, error) {
	g, err := st.GetGuardrail(ctx, sc, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errorf(NotFound, "guardrail %s not found", id)
	}
	return g, err
}

// UpdateGuardrail applies the members given to the scope's guardrail id.
func UpdateGuardrail(ctx context.Context, st *store.Store, actor Actor, sc store.AliasScope, id uuid.UUID, in GuardrailInput, seal GuardrailSealer) (*store.Guardrail, error) {
	var g *store.Guardrail
	err := st.InTx(ctx, func(tx *store.Store) error {
		var err error
		if g, err = GuardrailIn(ctx, tx, sc, id); err != nil {
			return err
		}
		old, err := ReadGuardrailDefinition(g)
		if err != nil {
			return err
		}
		d := old
		if in.Name != nil {
			g.Name = *in.Name
		}
		if in.Enabled != nil {
			g.Enabled = *in.Enabled
		}
		if in.Target != nil {
			d.Target = *in.Target
		}
		if in.HasStages {
			d.Stages = in.Stages
		}
		if in.Action != nil {
			d.Action = *in.Action
		}
		if in.OnError != nil {
			d.OnError = *in.OnError
		}
		if err := setDetectors(g, &d, &old, in, seal); err != nil {
			return err
		}
		g.UpdatedAt = store.Now()
		if err := tx.UpdateGuardrail(ctx, g); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return errorf(Conflict, "a guardrail named %q already exists here", g.Name)
			}
			return err
		}
		return auditGuardrail(ctx, tx, actor, "guardrail.updated", g, d)
	})
	if err != nil {
		return nil, err
	}
	return g, nil
}

// DeleteGuardrail deletes the scope's guardrail id.
func DeleteGuardrail(ctx context.Context, st *store.Store, actor Actor, sc store.AliasScope, id uuid.UUID) (*store.Guardrail, error) {
	var g *store.Guardrail
	err := st.InTx(ctx, func(tx *store.Store) error {
		var err error
		if g, err = GuardrailIn(ctx, tx, sc, id); err != nil {
			return err
		}
		d, err := ReadGuardrailDefinition(g)
		if err != nil {
			return err
		}
		if err := tx.DeleteGuardrail(ctx, g.ID); err != nil {
			return err
		}
		return auditGuardrail(ctx, tx, actor, "guardrail.deleted", g, d)
	})
	if err != nil {
		return nil, err
	}
	return g, nil
}

func auditGuardrail(ctx context.Context, tx *store.Store, actor Actor, action string, g *store.Guardrail, d GuardrailDefinition) error {
	kinds := make([]string, len(d.Detectors))
	var hooks []string
	for i, det := range d.Detectors {
		kinds[i] = det.Kind
		if det.Kind == guardrails.KindWebhook {
			hooks = append(hooks, det.URL)
		}
	}
	details := map[string]any{"name": g.Name, "enabled": g.Enabled, "stages": d.Stages, "detectors": kinds,
		"action": d.Action, "on_error": d.OnError}
	if len(hooks) > 0 {
		details["webhooks"] = hooks
	}
	return Audit(ctx, tx, actor, AuditEntry{Action: action, TargetType: "guardrail", TargetID: g.ID.String(),
		OrgID: &g.OrgID, WorkspaceID: g.WorkspaceID, Details: details})
}
