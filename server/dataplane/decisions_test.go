package dataplane_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/server/reseal"
	"github.com/gw-gateway/gw/server/store/fixture"
)

// limitedUpstream answers as memUpstream does, except that it refuses the
// model named in refuse with a 429 (so the policies' fallback is taken).
type limitedUpstream struct {
	memUpstream
	refuse atomic.Pointer[string]
}

func (u *limitedUpstream) RoundTrip(r *http.Request) (*http.Response, error) {
	if m := u.refuse.Load(); m != nil {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"model":"`+*m+`"`)) {
			return &http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{"Content-Type": {"application/json"}},
				Body: io.NopCloser(strings.NewReader(`{"error":{"message":"slow down","type":"rate_limit_error"}}`)), Request: r}, nil
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	return u.memUpstream.RoundTrip(r)
}

// decisionBundles signs versions of one organization's bundle whose
// workspace policy is rules (a JSON array's members).
type decisionBundles struct {
	t     *testing.T
	priv  ed25519.PrivateKey
	Pub   ed25519.PublicKey
	body  bundle.Body
	Token string
}

func newDecisionBundles(t *testing.T) *decisionBundles {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	return &decisionBundles{t: t, priv: priv, Pub: pub, body: bundle.Body{
		Format: bundle.Format, OrgID: uuid.New(), Workspaces: []bundle.Workspace{{ID: uuid.New(), Slug: "main", Name: "Main"}},
		Catalog: *cat,
	}}
}

func (b *decisionBundles) sign(version int64, rules string, keyring func(credID uuid.UUID) string) bundle.Signed {
	b.t.Helper()
	def, err := policy.ParseDefinitionJSON([]byte(`{"target":{"kind":"workspace"},"rules":[` + rules + `]}`))
	if err != nil {
		b.t.Fatal(err)
	}
	ws := b.body.Workspaces[0].ID
	if b.body.Keys == nil {
		token, _, hash := auth.NewToken(auth.InferenceKeyPrefix)
		b.Token = token
		b.body.Keys = []bundle.Key{{ID: uuid.New(), WorkspaceID: ws, OwnerID: uuid.New(), TokenHash: hash}}
		credID := uuid.New()
		base := "http://upstream.test/v1"
		b.body.Credentials = []bundle.Credential{{ID: credID, Scope: policy.ScopeOrg, Provider: "openai", BaseURL: &base,
			SecretSealed: keyring(credID)}}
	}
	b.body.Version, b.body.CompiledAt = version, time.Now().UTC()
	b.body.Policies = []bundle.Policy{{ID: uuid.New(), WorkspaceID: ws, Name: "p", Definition: def}}
	signed, err := bundle.Sign(&b.body, b.priv)
	if err != nil {
		b.t.Fatal(err)
	}
	return signed
}

const decisionRules = `{"match":{"kind":"all_requests"},"action":{"kind":"models","names":["openai/gpt-4o-mini","openai/gpt-4o"]}},
	{"match":{"kind":"all_requests"},"action":{"kind":"request_limits","max_output_tokens":4096}},
	{"match":{"kind":"request","stream":true},"action":{"kind":"request_limits","max_output_tokens":1024}},
	{"match":{"kind":"all_requests"},"action":{"kind":"budget","amount_usd":"1000000","period":"day","aggregation":"shared"}},
	{"match":{"kind":"all_requests"},"action":{"kind":"fallback","models":["openai/gpt-4o"],"on":["rate_limited"],"max_attempts":2,"timeout_ms":30000}}`

// The policy decisions a key caches per model (issue 33) are shared by
// every request that finds them: requests that go through every reader
// of a decision (the budgets' reservation and settlement, the provenance,
// a fallback taken, streamed and not) leave each cached decision equal to
// what evaluating the policies now gives, and a new bundle's policies are
// in force from its first request.
func TestCachedDecisionIsReadOnly(t *testing.T) {
	kr := fixture.Keyring(t)
	up := &limitedUpstream{memUpstream: memUpstream{streams: map[int][]byte{20: allocStream(20)}, chunks: 20}}
	bundles := newDecisionBundles(t)
	seal := func(credID uuid.UUID) string {
		sealed, err := kr.Seal([]byte("sk-upstream"), reseal.CredentialAAD(credID))
		if err != nil {
			t.Fatal(err)
		}
		return sealed
	}
	sink := &captureSink{}
	plane := dataplane.NewPlane(bundles.Pub, dataplane.Options{Keyring: kr, Usage: sink,
		Budgets: &generousLeases{granted: map[string]int64{}}, Upstreams: providers.NewSet(&http.Client{Transport: up})})
	if err := plane.Admit(bundles.sign(1, decisionRules, seal)); err != nil {
		t.Fatal(err)
	}
	plane.MarkReady()
	send := func(body []byte) (int, http.Header) {
		r, _ := http.NewRequest(http.MethodPost, "/inf/v1/chat/completions", bytes.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+bundles.Token)
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		plane.ServeHTTP(w, r)
		return w.Code, w.Header()
	}
	for round := range 3 {
		for _, body := range [][]byte{allocBody, allocStreamBody} {
			if code, _ := send(body); code != http.StatusOK {
				t.Fatalf("round %d: status %d", round, code)
			}
		}
		// gpt-4o-mini refused: the fallback rule's gpt-4o answers.
		mini := "gpt-4o-mini"
		up.refuse.Store(&mini)
		code, h := send(allocBody)
		up.refuse.Store(nil)
		if code != http.StatusOK || h.Get("X-Gw-Model") != "openai/gpt-4o" {
			t.Fatalf("round %d: fallback answered %d by %q", round, code, h.Get("X-Gw-Model"))
		}
		n, err := dataplane.CheckCachedDecisions(plane)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		// gpt-4o-mini streamed and not, gpt-4o as a fallback (streamed
		// too once gpt-4o-mini cools down after its 429).
		if n < 3 || n > 4 {
			t.Fatalf("round %d: %d cached decisions, want 3 or 4", round, n)
		}
	}
	// Every event names the budget the decision counted it against.
	for _, e := range sink.snapshot() {
		if e.Provenance == nil || len(e.Provenance.Budgets) != 1 {
			t.Fatalf("event without its budget: %+v", e.Provenance)
		}
	}

	// A new bundle whose policy denies requests that do not stream (a
	// rule discovery cannot apply, so the model stays visible) refuses
	// the next one at once.
	if err := plane.Admit(bundles.sign(2, `{"match":{"kind":"request","stream":false},"action":{"kind":"deny","message":"stream only"}}`, seal)); err != nil {
		t.Fatal(err)
	}
	if code, _ := send(allocBody); code != http.StatusForbidden {
		t.Fatalf("after the new bundle: status %d, want 403", code)
	}
	if n, err := dataplane.CheckCachedDecisions(plane); err != nil || n != 1 {
		t.Fatalf("after the new bundle: %d cached decisions (%v), want 1", n, err)
	}
}
