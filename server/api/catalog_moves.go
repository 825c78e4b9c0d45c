package api

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/catalogdb"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
)

// Where a provider credential's secret is sent is decided by those who
// manage the credential (issue 10, item 1). A credential without a
// base_url of its own follows the catalog's URL for its provider, so a
// catalog edit that changes that URL would carry the secrets of every
// such credential to a new host. Such an edit is refused (409) unless the
// caller says so with ?confirm_base_url_change=true and also holds
// provider-credentials.manage at instance scope, where it covers every
// credential it would move.

const confirmBaseURLParam = "confirm_base_url_change"

var confirmBaseURLQuery = QueryParam{Name: confirmBaseURLParam,
	Description: "true to change the base URL of a provider that credentials without a base_url of their own follow " +
		"(their secrets then go to the new URL); needs provider-credentials.manage as well as catalog.manage",
	Enum: []string{"true", "false"}}

// baseURLMove is a provider whose catalog URL changes while credentials
// follow it.
type baseURLMove struct {
	Provider, Old, New string
	Credentials        int
}

func (m baseURLMove) audit() map[string]any {
	return map[string]any{"provider": m.Provider, "old_base_url": m.Old, "new_base_url": m.New, "credentials_moved": m.Credentials}
}

// catalogChanges compares incoming entries with the stored catalog: the
// base URL moves, and the providers and models added or brought back.
type catalogChanges struct {
	moves                                []baseURLMove
	providersAdded, modelsAdded, revived []string
}

func (s *Server) catalogChanges(r *Request, tx *store.Store, c *catalog.Catalog) (catalogChanges, error) {
	var ch catalogChanges
	rows, err := catalogdb.LoadRows(r.ctx, tx)
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
		n, err := tx.CountCredentialsOnCatalogURL(r.ctx, p.ID)
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

// allowMoves refuses base URL moves the caller did not confirm or may not
// make.
func allowMoves(r *Request, moves []baseURLMove) error {
	var errs validate.Errors
	confirmed := false
	if raw, ok := r.R.URL.Query()[confirmBaseURLParam]; ok {
		v, good := validate.Literal(raw[0], validate.Loc{"query", confirmBaseURLParam}, []string{"true", "false"}, &errs)
		if !good {
			return errs.Err()
		}
		confirmed = v == "true"
	}
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
		return errorf(http.StatusConflict, "this change would send the secrets of provider credentials without a base_url of their own "+
			"to a new URL (%s); give those credentials their own base_url first, or repeat with ?%s=true "+
			"(which needs provider-credentials.manage)", what, confirmBaseURLParam)
	}
	if !r.Rights.Has(auth.ProviderCredentialsManage) {
		return errorf(http.StatusForbidden, "missing permission: %s is required to move existing credentials to a new base URL (%s)",
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
			ms[i] = m.audit()
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
