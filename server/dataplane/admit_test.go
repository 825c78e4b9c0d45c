package dataplane_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/bundle/bundletest"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/policy"
)

// admitEnv signs synthetic bundles for a plane, without a database.
type admitEnv struct {
	pub   ed25519.PublicKey
	priv  ed25519.PrivateKey
	plane *dataplane.Plane
}

func newAdmitEnv(t testing.TB) *admitEnv {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p := dataplane.NewPlane(pub, dataplane.Options{})
	p.MarkReady()
	return &admitEnv{pub: pub, priv: priv, plane: p}
}

func (a *admitEnv) sign(t testing.TB, b *bundle.Body) bundle.Signed {
	t.Helper()
	s, err := bundle.Sign(b, a.priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (a *admitEnv) status(token string) int {
	r := httptest.NewRequest(http.MethodGet, "/inf/v1/models", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	w := httptest.NewRecorder()
	a.plane.ServeHTTP(w, r)
	return w.Code
}

var smallScale = bundletest.Scale{Models: 80, Keys: 40, Policies: 30, Workspaces: 3, Users: 7}

func synthetic(t testing.TB, seed uint64, sc bundletest.Scale) *bundletest.Synthetic {
	t.Helper()
	s, err := bundletest.NewSynthetic(seed, sc)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAdmitRefusesTamperedAndStaleBundlesAndKeepsServing(t *testing.T) {
	a := newAdmitEnv(t)
	syn := synthetic(t, 1, smallScale)
	v1 := a.sign(t, syn.Body)
	if err := a.plane.Admit(v1); err != nil {
		t.Fatal(err)
	}
	token, dropped := syn.Tokens[0], syn.Tokens[1]
	if a.status(token) != http.StatusOK || a.status(dropped) != http.StatusOK {
		t.Fatal("v1 keys refused")
	}

	// v2 drops a key.
	v2body := *syn.Body
	v2body.Version = 2
	v2body.Keys = slices.Delete(slices.Clone(syn.Body.Keys), 1, 2)
	v2 := a.sign(t, &v2body)

	tampered := v2
	tampered.Body = bytes.Replace(slices.Clone(v2.Body), []byte(`"ws-00"`), []byte(`"ws-xx"`), 1)
	_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
	foreign, _ := bundle.Sign(&v2body, otherKey)
	for name, s := range map[string]bundle.Signed{"tampered": tampered, "signed by another key": foreign} {
		if err := a.plane.Admit(s); !errors.Is(err, bundle.ErrInvalid) {
			t.Fatalf("%s: got %v, want ErrInvalid", name, err)
		}
		if a.status(dropped) != http.StatusOK || a.plane.Versions()[syn.Body.OrgID] != 1 {
			t.Fatalf("%s: the admitted bundle is no longer served", name)
		}
	}

	if err := a.plane.Admit(v1); err != nil {
		t.Fatalf("re-admitting the bundle in force: %v", err)
	}
	other1 := *syn.Body
	other1.Keys = syn.Body.Keys[:3]
	if err := a.plane.Admit(a.sign(t, &other1)); !errors.Is(err, dataplane.ErrStale) {
		t.Fatalf("another bundle claiming version 1: got %v, want ErrStale", err)
	}

	if err := a.plane.Admit(v2); err != nil {
		t.Fatal(err)
	}
	if a.status(dropped) != http.StatusUnauthorized || a.status(token) != http.StatusOK {
		t.Fatal("v2 is not what is served")
	}
	if err := a.plane.Admit(v1); !errors.Is(err, dataplane.ErrStale) {
		t.Fatalf("older bundle: got %v, want ErrStale", err)
	}
	if a.status(dropped) != http.StatusUnauthorized || a.plane.Versions()[syn.Body.OrgID] != 2 {
		t.Fatal("a stale bundle changed what is served")
	}
}

func TestAdmitKeepsOrganizationsApart(t *testing.T) {
	a := newAdmitEnv(t)
	one, two := synthetic(t, 1, smallScale), synthetic(t, 2, smallScale)
	if err := a.plane.AdmitAll([]bundle.Signed{a.sign(t, one.Body), a.sign(t, two.Body)}); err != nil {
		t.Fatal(err)
	}
	if a.status(one.Tokens[0]) != http.StatusOK || a.status(two.Tokens[0]) != http.StatusOK {
		t.Fatal("keys of both organizations should work")
	}
	want := map[uuid.UUID]int64{one.Body.OrgID: 1, two.Body.OrgID: 1}
	if got := a.plane.Versions(); !maps.Equal(got, want) {
		t.Fatalf("versions %v, want %v", got, want)
	}

	// A bundle claiming another organization's token hash is refused
	// whole: it must not take the key over.
	thief := *two.Body
	thief.Version = 2
	thief.Keys = slices.Clone(two.Body.Keys)
	thief.Keys[0].TokenHash = one.Body.Keys[0].TokenHash
	if err := a.plane.Admit(a.sign(t, &thief)); err == nil {
		t.Fatal("a bundle holding another organization's token hash was admitted")
	}
	if a.plane.Versions()[two.Body.OrgID] != 1 || a.status(two.Tokens[0]) != http.StatusOK {
		t.Fatal("the refused bundle changed what is served")
	}

	// A deleted organization's keys stop at once, and its bundles are
	// refused from then on.
	a.plane.Forget(one.Body.OrgID)
	if a.status(one.Tokens[0]) != http.StatusUnauthorized || a.status(two.Tokens[0]) != http.StatusOK {
		t.Fatal("Forget did not drop exactly the one organization")
	}
	late := *one.Body
	late.Version = 9
	if err := a.plane.Admit(a.sign(t, &late)); !errors.Is(err, dataplane.ErrForgotten) {
		t.Fatalf("bundle of a deleted organization: got %v, want ErrForgotten", err)
	}
}

// Keys are grouped so that each group's visible models are computed once.
// Whatever the grouping, each key must see exactly what policy.Evaluate
// says when asked about that key alone with all of its workspace's
// policies.
func TestGroupedDiscoveryEqualsEvaluatingEachKey(t *testing.T) {
	for seed := range uint64(3) {
		a := newAdmitEnv(t)
		syn := synthetic(t, seed, bundletest.Scale{Models: 120, Keys: 300, Policies: 60, Workspaces: 3, Users: 25})
		if err := a.plane.Admit(a.sign(t, syn.Body)); err != nil {
			t.Fatal(err)
		}
		compareWithEvaluate(t, a.plane, syn)
	}
}

func compareWithEvaluate(t *testing.T, plane *dataplane.Plane, syn *bundletest.Synthetic) {
	t.Helper()
	b := syn.Body
	for i, k := range b.Keys {
		var policies []policy.Policy
		for _, p := range b.Policies {
			if p.WorkspaceID == k.WorkspaceID {
				policies = append(policies, policy.Policy{ID: p.ID, Name: p.Name, Enabled: true, Definition: p.Definition})
			}
		}
		var want []string
		for _, m := range b.Catalog.Models {
			var scopes []policy.CredentialScope
			for _, c := range b.Credentials {
				if c.Provider == m.Provider && (c.WorkspaceID == nil || *c.WorkspaceID == k.WorkspaceID) && !slices.Contains(scopes, c.Scope) {
					scopes = append(scopes, c.Scope)
				}
			}
			d := policy.Evaluate(policies, policy.Request{
				Phase: policy.PhaseDiscovery, KeyID: k.ID.String(), OwnerUserID: k.OwnerID, Model: m.ID, Provider: m.Provider,
				InputPricePerMTok: mustDecimal(t, m.Pricing.InputPerMTok), OutputPricePerMTok: mustDecimal(t, m.Pricing.OutputPerMTok),
				CredentialScopes: scopes,
			})
			if d.Allowed {
				want = append(want, m.ID)
			}
		}
		got := listOf(t, plane, syn.Tokens[i])
		if !slices.Equal(got, want) {
			t.Fatalf("key %d (%s) sees\n%v\nEvaluate says\n%v", i, k.ID, got, want)
		}
	}
}

// Requests keep being answered from one whole bundle while new versions are
// admitted underneath them (run with -race).
func TestServingDuringAdmissions(t *testing.T) {
	a := newAdmitEnv(t)
	syn := synthetic(t, 4, smallScale)
	body := *syn.Body
	if err := a.plane.Admit(a.sign(t, &body)); err != nil {
		t.Fatal(err)
	}
	want := listOf(t, a.plane, syn.Tokens[0])
	versions := make([]bundle.Signed, 20)
	for i := range versions {
		body.Version++
		versions[i] = a.sign(t, &body)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, s := range versions {
			if err := a.plane.Admit(s); err != nil {
				t.Error(err)
			}
		}
	}()
	for served := 0; ; served++ {
		select {
		case <-done:
			if got := a.plane.Versions()[body.OrgID]; got != body.Version {
				t.Fatalf("admitted version %d, want %d", got, body.Version)
			}
			return
		default:
		}
		if got := listOf(t, a.plane, syn.Tokens[0]); !slices.Equal(got, want) {
			t.Fatalf("request %d saw a different list during admission", served)
		}
	}
}
