package backend

import (
	"context"
	"fmt"
	"strings"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/catalogdb"
	"github.com/gw-gateway/gw/server/store"
)

// Where a provider credential's secret is sent is decided by those who
// manage the credential (issue 10, item 1). A credential without a
// base_url of its own follows the catalog's URL for its provider, so a
// catalog edit that changes that URL would carry the secrets of every
// such credential to a new host. Such an edit is refused unless the caller
// confirms it and also holds provider-credentials.manage at instance
// scope, where it covers every credential it would move.

// CatalogWrite is a catalog document to write (a whole import, or one
// provider or model), already validated against the stored catalog.
type CatalogWrite struct {
	Catalog *catalog.Catalog
	// ConfirmMoves is the caller's consent to move credentials that
	// follow a provider's catalog URL to its new one.
	ConfirmMoves bool
	// Entry: one provider or model saved, audited as such; otherwise a
	// whole document imported.
	Entry bool
}

// WriteCatalog adds or replaces the document's providers and models by id
// and audits what changed: URL moves, entries added or brought back.
func WriteCatalog(ctx context.Context, st *store.Store, actor Actor, in CatalogWrite) error {
	c := in.Catalog
	// What a catalog may hold but gw should not save (prices finer than a
	// nano-dollar, counts that overflow a cost bound): a
	// *catalog.ValidationError, which the API reports as validation items.
	if err := catalog.CheckStorable(c); err != nil {
		return err
	}
	return st.InTx(ctx, func(tx *store.Store) error {
		ch, err := catalogChangesOf(ctx, tx, c)
		if err != nil {
			return err
		}
		if err := actor.mayMove(ch.moves, in.ConfirmMoves); err != nil {
			return err
		}
		if err := catalogdb.Import(ctx, tx, c, store.Now()); err != nil {
			return err
		}
		if !in.Entry {
			return Audit(ctx, tx, actor, AuditEntry{Action: "catalog.imported", TargetType: "catalog", TargetID: "catalog",
				Details: ch.details(map[string]any{"providers": len(c.Providers), "models": len(c.Models)})})
		}
		target := ""
		for _, p := range c.Providers {
			target = p.ID
		}
		for _, m := range c.Models {
			target = m.ID
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "catalog.entry_saved", TargetType: "catalog", TargetID: target, Details: ch.details(nil)})
	})
}

// RetireCatalogProvider retires a provider (and so its models); retiring
// one already retired changes nothing but is audited all the same.
func RetireCatalogProvider(ctx context.Context, st *store.Store, actor Actor, id string) (*store.CatalogProvider, error) {
	var out *store.CatalogProvider
	err := st.InTx(ctx, func(tx *store.Store) error {
		rows, err := catalogdb.LoadRows(ctx, tx)
		if err != nil {
			return err
		}
		for _, p := range rows.Providers {
			if p.ID != id {
				continue
			}
			if p.RetiredAt == nil {
				now := store.Now()
				p.RetiredAt, p.UpdatedAt = &now, now
				if err := tx.UpsertCatalogProvider(ctx, &p); err != nil {
					return err
				}
			}
			out = &p
			return Audit(ctx, tx, actor, AuditEntry{Action: "catalog.provider_retired", TargetType: "catalog_provider", TargetID: id})
		}
		return errorf(NotFound, "provider %q not found in the catalog", id)
	})
	return out, err
}

// RetireCatalogModel retires a model, as RetireCatalogProvider a provider.
func RetireCatalogModel(ctx context.Context, st *store.Store, actor Actor, id string) (*store.CatalogModel, error) {
	var out *store.CatalogModel
	err := st.InTx(ctx, func(tx *store.Store) error {
		rows, err := catalogdb.LoadRows(ctx, tx)
		if err != nil {
			return err
		}
		for _, m := range rows.Models {
			if m.ID != id {
				continue
			}
			if m.RetiredAt == nil {
				now := store.Now()
				m.RetiredAt, m.UpdatedAt = &now, now
				if err := tx.UpsertCatalogModel(ctx, &m); err != nil {
					return err
				}
			}
			out = &m
			return Audit(ctx, tx, actor, AuditEntry{Action: "catalog.model_retired", TargetType: "catalog_model", TargetID: id})
		}
		return errorf(NotFound, "model %q not found in the catalog", id)
	})
	return out, err
}

// baseURLMove is a provider whose catalog URL changes while credentials
// follow it.
type baseURLMove struct {
	Provider, Old, New string
	Credentials        int
}

// catalogChanges compares incoming entries with the stored catalog: the
// base URL moves, and the providers and models added or brought back.
type catalogChanges struct {
	moves                                []baseURLMove
	providersAdded, modelsAdded, revived []string
}

func catalogChangesOf(ctx context.Context, tx *store.Store, c *catalog.Catalog) (catalogChanges, error) {
	var ch catalogChanges
	rows, err := catalogdb.LoadRows(ctx, tx)
	if err != nil {
		return ch, err
	}
	stored := map[string]store.CatalogProvider{}
	for _, p := range rows.Providers {
		stored[p.ID] = p
	}
	for _, p := range c.Providers {
		old, ok := stored[p.ID]
		if !ok {
			ch.providersAdded = append(ch.providersAdded, p.ID)
			continue
		}
		if old.RetiredAt != nil {
			ch.revived = append(ch.revived, p.ID)
		}
		if old.BaseURL == p.BaseURL {
			continue
		}
		n, err := tx.CountCredentialsOnCatalogURL(ctx, p.ID)
		if err != nil {
			return ch, err
		}
		if n > 0 {
			ch.moves = append(ch.moves, baseURLMove{Provider: p.ID, Old: old.BaseURL, New: p.BaseURL, Credentials: n})
		}
	}
	models := map[string]store.CatalogModel{}
	for _, m := range rows.Models {
		models[m.ID] = m
	}
	for _, m := range c.Models {
		old, ok := models[m.ID]
		switch {
		case !ok:
			ch.modelsAdded = append(ch.modelsAdded, m.ID)
		case old.RetiredAt != nil:
			ch.revived = append(ch.revived, m.ID)
		}
	}
	return ch, nil
}

// ConfirmBaseURLParam is the query parameter that confirms base URL moves.
const ConfirmBaseURLParam = "confirm_base_url_change"

// mayMove refuses base URL moves the actor did not confirm or may not make.
func (a Actor) mayMove(moves []baseURLMove, confirmed bool) error {
	if len(moves) == 0 {
		return nil
	}
	parts := make([]string, len(moves))
	for i, m := range moves {
		old := m.Old
		if old == "" {
			old = "(none)"
		}
		parts[i] = fmt.Sprintf("%s: %s → %s (%d credential%s)", m.Provider, old, m.New, m.Credentials, plural(m.Credentials))
	}
	what := strings.Join(parts, "; ")
	if !confirmed {
		return errorf(Conflict, "this change would send the secrets of provider credentials without a base_url of their own "+
			"to a new URL (%s); give those credentials their own base_url first, or repeat with ?%s=true "+
			"(which needs provider-credentials.manage)", what, ConfirmBaseURLParam)
	}
	if a.Type != "system" && !a.Rights.Has(auth.ProviderCredentialsManage) {
		return errorf(Forbidden, "missing permission: %s is required to move existing credentials to a new base URL (%s)",
			auth.ProviderCredentialsManage, what)
	}
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// details adds the changes to an audit entry's details.
func (ch catalogChanges) details(d map[string]any) map[string]any {
	if d == nil {
		d = map[string]any{}
	}
	if len(ch.moves) > 0 {
		ms := make([]map[string]any, len(ch.moves))
		for i, m := range ch.moves {
			ms[i] = map[string]any{"provider": m.Provider, "old_base_url": m.Old, "new_base_url": m.New, "credentials_moved": m.Credentials}
		}
		d["base_url_changes"] = ms
	}
	for k, v := range map[string][]string{"providers_added": ch.providersAdded, "models_added": ch.modelsAdded, "restored": ch.revived} {
		if len(v) > 0 {
			d[k] = v
		}
	}
	return d
}
