package api_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/publish"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/fixture"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// enrollEnv is an API whose changes compile bundles, with a second
// organization, a provider credential in each, and a data plane's key.
type enrollEnv struct {
	*env
	kr      *secrets.Keyring
	pub     ed25519.PublicKey
	dp      *secrets.DataPlaneKey
	dpToken string
	orgB    wire.Organization
}

func newEnrollEnv(t *testing.T, db *bun.DB) *enrollEnv {
	ctx := context.Background()
	st, kr := store.New(db), fixture.Keyring(t)
	signer, err := publish.SigningKey(ctx, st, kr)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, db, api.Options{Keyring: kr, Bundles: &publish.Publisher{Compiler: &publish.Compiler{Store: st, Signer: signer}, Store: st}})
	orgB := decodeData[wire.Organization](t, e.must("POST", "/api/v1/instance/organizations", e.ownerKey, map[string]any{"name": "b", "slug": "b"}))
	for _, org := range []string{"default", "b"} {
		e.must("POST", "/api/v1/organizations/"+org+"/provider-credentials", e.ownerKey,
			map[string]any{"provider": "openai", "label": "x", "secret": "sk-secret-of-" + org})
	}
	dp, err := secrets.GenerateDataPlaneKey()
	if err != nil {
		t.Fatal(err)
	}
	tok := e.key("/api/v1/instance", e.ownerKey, []string{"bundles.read", "data-planes.heartbeat"}, nil).Token
	return &enrollEnv{env: e, kr: kr, pub: signer.Public().(ed25519.PublicKey), dp: dp, dpToken: tok, orgB: orgB}
}

func (e *enrollEnv) poll(t *testing.T, token string) (int, wire.DataPlaneBundles) {
	t.Helper()
	st, raw := e.do("GET", "/api/v1/data-plane/bundles?data_plane_id=dp-1", token, nil)
	if st != 200 {
		return st, wire.DataPlaneBundles{}
	}
	return st, decodeData[wire.DataPlaneBundles](t, raw)
}

func TestEnrollmentConfinesBundles(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newEnrollEnv(t, db)
		orgA := e.boot.Organization.ID
		req := map[string]any{"id": "dp-1", "public_key": e.dp.Public().String()}

		// Not asked yet: 404; a poll without an id: 422.
		if st, _ := e.poll(t, e.dpToken); st != 404 {
			t.Fatalf("poll before asking: %d", st)
		}
		if st, _ := e.do("GET", "/api/v1/data-plane/bundles", e.dpToken, nil); st != 422 {
			t.Fatalf("poll without data_plane_id: %d", st)
		}
		got := decodeData[wire.DataPlaneEnrollment](t, e.must("POST", "/api/v1/data-plane/enrollments", e.dpToken, req))
		if got.Status != "pending" || got.Fingerprint != e.dp.Public().Fingerprint() {
			t.Fatalf("request: %+v", got)
		}
		e.must("POST", "/api/v1/data-plane/enrollments", e.dpToken, req) // repeating is harmless
		st, polled := e.poll(t, e.dpToken)
		if st != 200 || polled.Enrollment != "pending" || len(polled.Bundles) != 0 || polled.PublicKey != base64.StdEncoding.EncodeToString(e.pub) {
			t.Fatalf("pending poll: %d %+v", st, polled)
		}

		// Another key pair, or another management key, cannot take the
		// enrollment over, nor poll as the data plane.
		other, _ := secrets.GenerateDataPlaneKey()
		if st, raw := e.do("POST", "/api/v1/data-plane/enrollments", e.dpToken, map[string]any{"id": "dp-1", "public_key": other.Public().String()}); st != 409 {
			t.Fatalf("another key pair: %d %s", st, raw)
		}
		stranger := e.key("/api/v1/instance", e.ownerKey, []string{"bundles.read", "data-planes.heartbeat"}, nil).Token
		if st, _ := e.do("POST", "/api/v1/data-plane/enrollments", stranger, req); st != 409 {
			t.Fatalf("another management key: %d", st)
		}
		if st, _ := e.poll(t, stranger); st != 403 {
			t.Fatalf("another management key polls: %d", st)
		}
		if st, _ := e.do("POST", "/api/v1/data-plane/enrollments", e.dpToken, map[string]any{"id": "dp-2", "public_key": "bm90IGEga2V5"}); st != 422 {
			t.Fatalf("a malformed public key: %d", st)
		}

		// Approving needs provider-credentials.manage at instance scope,
		// and the fingerprint, when given, must be the data plane's.
		reader := e.key("/api/v1/instance", e.ownerKey, []string{"data-planes.read"}, nil).Token
		approve := map[string]any{"organizations": []string{"default"}}
		if st, _ := e.do("POST", "/api/v1/instance/data-planes/enrollments/dp-1/approve", reader, approve); st != 403 {
			t.Fatalf("approve with data-planes.read only: %d", st)
		}
		if st, _ := e.do("POST", "/api/v1/instance/data-planes/enrollments/dp-1/approve", e.ownerKey,
			map[string]any{"organizations": []string{"default"}, "fingerprint": other.Public().Fingerprint()}); st != 409 {
			t.Fatalf("approve another fingerprint: %d", st)
		}
		if st, _ := e.do("POST", "/api/v1/instance/data-planes/enrollments/dp-1/approve", e.ownerKey,
			map[string]any{"organizations": []string{"nope"}}); st != 422 {
			t.Fatalf("approve an unknown organization: %d", st)
		}
		approve["fingerprint"] = e.dp.Public().Fingerprint()
		got = decodeData[wire.DataPlaneEnrollment](t, e.must("POST", "/api/v1/instance/data-planes/enrollments/dp-1/approve", e.ownerKey, approve))
		if got.Status != "approved" || len(got.Organizations) != 1 || got.Organizations[0].ID != orgA {
			t.Fatalf("approved: %+v", got)
		}

		// Org A only, its secret sealed to the data plane and not to the
		// master key.
		st, polled = e.poll(t, e.dpToken)
		if st != 200 || polled.Enrollment != "approved" || len(polled.Bundles) != 1 || polled.Bundles[0].OrgID != orgA {
			t.Fatalf("approved poll: %d %+v", st, polled)
		}
		b := polled.Bundles[0]
		body, err := bundle.Verify(bundle.Signed{OrgID: b.OrgID, Version: b.Version, Hash: b.Hash, Signature: b.Signature, Body: b.Body}, e.pub)
		if err != nil {
			t.Fatal(err)
		}
		if len(body.Credentials) != 1 {
			t.Fatalf("credentials: %+v", body.Credentials)
		}
		c := body.Credentials[0]
		if pt, err := e.dp.Open(c.SecretSealed, secrets.CredentialAAD(c.ID)); err != nil || string(pt) != "sk-secret-of-default" {
			t.Fatalf("the data plane opens %q, %v", pt, err)
		}
		if _, err := e.kr.Open(c.SecretSealed, secrets.CredentialAAD(c.ID)); !errors.Is(err, secrets.ErrCannotOpen) {
			t.Fatalf("the master key opens what was sealed to the data plane: %v", err)
		}

		// The ETag holds while nothing changes, and moves with the set.
		resp := e.doResp("GET", "/api/v1/data-plane/bundles?data_plane_id=dp-1", e.dpToken, nil)
		etag := resp.Header.Get("ETag")
		resp.Body.Close()
		again := e.doResp("GET", "/api/v1/data-plane/bundles?data_plane_id=dp-1", e.dpToken, nil)
		if again.Header.Get("ETag") != etag {
			t.Fatal("the ETag moved without a change")
		}
		again.Body.Close()
		e.must("POST", "/api/v1/instance/data-planes/enrollments/dp-1/approve", e.ownerKey, map[string]any{"organizations": []string{"default", e.orgB.ID.String()}})
		_, polled = e.poll(t, e.dpToken)
		if len(polled.Bundles) != 2 {
			t.Fatalf("after adding b: %d bundles", len(polled.Bundles))
		}

		// Revoked: no bundle; the list shows it; asking again with a new
		// key pair makes it pending, not approved.
		got = decodeData[wire.DataPlaneEnrollment](t, e.must("POST", "/api/v1/instance/data-planes/enrollments/dp-1/revoke", e.ownerKey, nil))
		if got.Status != "revoked" || got.RevokedAt == nil {
			t.Fatalf("revoked: %+v", got)
		}
		if _, polled = e.poll(t, e.dpToken); polled.Enrollment != "revoked" || len(polled.Bundles) != 0 {
			t.Fatalf("revoked poll: %+v", polled)
		}
		list := decodeData[[]wire.DataPlaneEnrollment](t, e.must("GET", "/api/v1/instance/data-planes/enrollments", reader, nil))
		if len(list) != 1 || list[0].Status != "revoked" {
			t.Fatalf("list: %+v", list)
		}
		got = decodeData[wire.DataPlaneEnrollment](t, e.must("POST", "/api/v1/data-plane/enrollments", e.dpToken, map[string]any{"id": "dp-1", "public_key": other.Public().String()}))
		if got.Status != "pending" || got.Fingerprint != other.Public().Fingerprint() {
			t.Fatalf("renewed: %+v", got)
		}
		if _, polled = e.poll(t, e.dpToken); len(polled.Bundles) != 0 {
			t.Fatal("a renewed request received bundles before approval")
		}
		// The audit log says who did what, never a secret.
		raw := e.must("GET", "/api/v1/instance/activity", e.ownerKey, nil)
		for _, action := range []string{"data_plane.enrollment_approved", "data_plane.enrollment_revoked", "data_plane.enrollment_requested"} {
			if !strings.Contains(string(raw), action) {
				t.Errorf("audit lacks %s", action)
			}
		}
		if strings.Contains(string(raw), "sk-secret-of") {
			t.Error("a secret reached the audit log")
		}
	})
}

// Row 4: platform credentials reach a data plane only if its enrollment
// says so. A new enrollment starts without; the choice is a boolean; a
// change republishes the organization's bundle under a new version (a data
// plane admits only newer ones) and changes the poll's ETag.
func TestEnrollmentPlatformCredentials(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newEnrollEnv(t, db)
		asked := decodeData[wire.DataPlaneEnrollment](t, e.must("POST", "/api/v1/data-plane/enrollments", e.dpToken,
			map[string]any{"id": "dp-1", "public_key": e.dp.Public().String()}))
		if asked.PlatformCredentials {
			t.Fatal("a new enrollment asks with platform credentials")
		}
		const approve = "/api/v1/instance/data-planes/enrollments/dp-1/approve"
		if status, raw := e.do("POST", approve, e.ownerKey, map[string]any{"organizations": []string{"default"}, "platform_credentials": "yes"}); status != 422 ||
			!strings.Contains(string(raw), `["body","platform_credentials"]`) {
			t.Fatalf("a platform_credentials that is not a boolean: %d %s", status, raw)
		}
		poll := func() (string, int64) {
			t.Helper()
			resp := e.doResp("GET", "/api/v1/data-plane/bundles?data_plane_id=dp-1", e.dpToken, nil)
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			b := decodeData[wire.DataPlaneBundles](t, raw)
			if len(b.Bundles) != 1 {
				t.Fatalf("poll: %d bundles", len(b.Bundles))
			}
			return resp.Header.Get("ETag"), b.Bundles[0].Version
		}
		got := decodeData[wire.DataPlaneEnrollment](t, e.must("POST", approve, e.ownerKey, map[string]any{"organizations": []string{"default"}}))
		if got.PlatformCredentials {
			t.Fatal("approved without asking, with platform credentials")
		}
		tag1, v1 := poll()
		got = decodeData[wire.DataPlaneEnrollment](t, e.must("POST", approve, e.ownerKey, map[string]any{"organizations": []string{"default"}, "platform_credentials": true}))
		if !got.PlatformCredentials {
			t.Fatal("platform_credentials true not kept")
		}
		tag2, v2 := poll()
		if tag2 == tag1 || v2 != v1+1 {
			t.Fatalf("after allowing platform credentials: ETag %s → %s, version %d → %d", tag1, tag2, v1, v2)
		}
		ev := e.lastAudit("data_plane.enrollment_approved")
		if ev == nil || ev.Details["platform_credentials"] != true || ev.Details["previous_platform_credentials"] != false {
			t.Fatalf("audit: %+v", ev)
		}
		// Approving again without the member keeps the setting, and
		// republishes nothing.
		got = decodeData[wire.DataPlaneEnrollment](t, e.must("POST", approve, e.ownerKey, map[string]any{"organizations": []string{"default"}}))
		if _, v3 := poll(); !got.PlatformCredentials || v3 != v2 {
			t.Fatalf("an approval without the member: platform %v, version %d → %d", got.PlatformCredentials, v2, v3)
		}
	})
}
