package dataplane_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/catalogdb"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/publish"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/fixture"
)

// env is a control plane (database, compiler) wired to a data plane through
// a Refresher, as gw serve runs them in one process.
type env struct {
	db      *bun.DB
	st      *store.Store
	plane   *dataplane.Plane
	refresh *publish.Refresher
	catalog *catalog.Catalog
	clock   *clock
}

func newEnv(t *testing.T, db *bun.DB) *env {
	t.Helper()
	ctx := context.Background()
	st := store.New(db)
	fixture.SeedCatalog(t, st)
	key, err := publish.SigningKey(ctx, st, fixture.Keyring(t))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := catalogdb.LoadRows(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := rows.Active()
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{now: time.Now()}
	plane := dataplane.NewPlane(key.Public().(ed25519.PublicKey), dataplane.Options{Now: c.Now})
	e := &env{
		db: db, st: st, plane: plane, catalog: cat, clock: c,
		refresh: &publish.Refresher{Compiler: &publish.Compiler{Store: st, Signer: key}, Plane: plane, Store: st},
	}
	return e
}

// sync recompiles and admits every organization (and marks the plane ready).
func (e *env) sync(t *testing.T) {
	t.Helper()
	if err := e.refresh.RefreshAll(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// get calls the data plane's handler directly.
func (e *env) get(token, path string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, path, nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	e.plane.ServeHTTP(w, r)
	return w
}

// listIDs lists the models token may discover, failing on anything but 200.
func (e *env) listIDs(t *testing.T, token string) []string {
	t.Helper()
	return listOf(t, e.plane, token)
}

func listOf(t testing.TB, p *dataplane.Plane, token string) []string {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, "/inf/v1/models", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	w := httptest.NewRecorder()
	p.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("list: %d %s", w.Code, w.Body)
	}
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil || list.Object != "list" || list.Data == nil {
		t.Fatalf("list body %s: %v", w.Body, err)
	}
	ids := make([]string, len(list.Data))
	for i, m := range list.Data {
		ids[i] = m.ID
	}
	return ids
}

func mustDecimal(t testing.TB, s string) decimal.Decimal {
	t.Helper()
	d, err := decimal.NewFromString(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// modelIDs returns the ids of the catalog models keep selects, in id order.
func (e *env) modelIDs(keep func(catalog.Model) bool) []string {
	ids := []string{}
	for _, m := range e.catalog.Models {
		if keep(m) {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

func ofProviders(providers ...string) func(catalog.Model) bool {
	return func(m catalog.Model) bool { return slices.Contains(providers, m.Provider) }
}

// openAIError decodes an OpenAI-shaped error body.
type openAIError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func decodeError(t *testing.T, w *httptest.ResponseRecorder) openAIError {
	t.Helper()
	var e openAIError
	dec := json.NewDecoder(strings.NewReader(w.Body.String()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("error body %s is not the OpenAI shape: %v", w.Body, err)
	}
	return e
}

// clock is a settable time source for expiry tests.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}
