package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// enrollDataPlane waits for data plane id to ask to be enrolled and
// approves it for orgs, checking the fingerprint it asked with.
func enrollDataPlane(t *testing.T, owner *client.Client, id string, orgs ...string) wire.DataPlaneEnrollment {
	t.Helper()
	ctx := context.Background()
	var asked wire.DataPlaneEnrollment
	waitFor(t, "data plane "+id+" to ask to be enrolled", func() bool {
		e, err := owner.GetEnrollment(ctx, id)
		asked = e
		return err == nil
	})
	e, err := owner.ApproveEnrollment(ctx, id, wire.DataPlaneEnrollmentApprove{Organizations: orgs, Fingerprint: &asked.Fingerprint})
	if err != nil {
		t.Fatalf("enroll %s: %v", id, err)
	}
	return e
}

// notReady checks a 503 bundle_not_ready in OpenAI's error shape, with
// Retry-After.
func notReady(resp *http.Response) error {
	defer resp.Body.Close()
	var body struct {
		Error struct{ Code, Type, Message string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return err
	}
	if resp.StatusCode != 503 || body.Error.Code != "bundle_not_ready" || body.Error.Message == "" || resp.Header.Get("Retry-After") == "" {
		return errors.New(resp.Status + " code " + body.Error.Code + " Retry-After " + resp.Header.Get("Retry-After"))
	}
	return nil
}

// TestFreshDataPlaneAnswersNotReady: a data plane started before its
// control plane is reachable, with no pinned signing key, serves at once:
// 503 bundle_not_ready with Retry-After, not a hang (issue 10, item 9).
func TestFreshDataPlaneAnswersNotReady(t *testing.T) {
	nowhere := freeAddr(t) // nothing listens there
	start := time.Now()
	dp := startServe(t, "GW_ROLE=data-plane", "GW_CONTROL_PLANE_URL=http://"+nowhere, "GW_TOKEN=sk-cp-not-yet",
		"GW_DATA_DIR="+t.TempDir(), "GW_POLL_INTERVAL=200ms", "GW_DATA_PLANE_ID=dp-fresh")
	hc := &http.Client{Timeout: 5 * time.Second}
	req, _ := http.NewRequest("GET", dp.URL+"/inf/v1/models", nil)
	req.Header.Set("Authorization", "Bearer sk-gw-anything")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("a fresh data plane does not answer: %v", err)
	}
	if err := notReady(resp); err != nil {
		t.Fatalf("fresh data plane: %v", err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("started and answered in %v", d)
	}
	// Alive, not ready: liveness probes leave it be, readiness keeps
	// traffic away.
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 503} {
		health, err := hc.Get(dp.URL + path)
		if err != nil || health.StatusCode != want {
			t.Fatalf("%s: %v %v, want %d", path, health.StatusCode, err, want)
		}
		health.Body.Close()
	}
	// It keeps trying in the background, and says so.
	waitFor(t, "a failed poll to be logged", func() bool { return strings.Contains(dp.logs.String(), "bundle poll failed") })
	dp.stop(t)
}

// TestDataPlaneEnrollment runs a control plane and a data plane enrolled
// for organization A only (issue 10, item 8), on each database.
func TestDataPlaneEnrollment(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) { dataPlaneEnrollment(t, d) })
	}
}

func dataPlaneEnrollment(t *testing.T, d storetest.Dialect) {
	ctx := context.Background()
	master := strings.Repeat("5a", 32)
	cpEnv := []string{"GW_ROLE=control-plane", "GW_DATA_DIR=" + t.TempDir(), "GW_BOOTSTRAP_TOKEN=setup_enroll", "GW_SECRET_KEY=" + master}
	if d == storetest.Postgres {
		u, err := storetest.URL(t, d)
		if err != nil {
			t.Fatal(err)
		}
		cpEnv = append(cpEnv, "GW_DATABASE_URL="+u)
	}
	cp := startServe(t, cpEnv...)
	anon, _ := client.New(client.Options{Server: cp.URL})
	boot, err := anon.Bootstrap(ctx, wire.Bootstrap{Token: "setup_enroll", Email: "ops@example.com", Password: "a long passphrase"})
	if err != nil {
		t.Fatal(err)
	}
	owner, _ := client.New(client.Options{Server: cp.URL, Token: boot.ManagementKey.Token})
	orgB, err := owner.CreateOrganization(ctx, wire.OrganizationCreate{Name: "Tenant B"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := owner.AddMember(ctx, orgB.Slug, wire.MemberAdd{Email: "ops@example.com", Role: "owner"}); err != nil {
		t.Fatal(err)
	}
	upA := providerstest.NewOpenAI(t, "sk-upstream-of-a")
	upA.SetDefault(providerstest.Reply{Text: "hello from a", Usage: providerstest.Usage{Input: 3, Output: 2}})
	upB := providerstest.NewOpenAI(t, "sk-upstream-of-b")
	keys := map[string]string{}
	for org, up := range map[string]*providerstest.OpenAI{"default": upA, orgB.Slug: upB} {
		if _, err := owner.CreateCredential(ctx, client.OrgScope(org), wire.ProviderCredentialCreate{
			Provider: "openai", Label: "x", Secret: up.Key, BaseURL: up.BaseURL()}); err != nil {
			t.Fatal(err)
		}
		ws := "default"
		if org != "default" {
			w, err := owner.CreateWorkspace(ctx, org, wire.WorkspaceCreate{Name: "Main"})
			if err != nil {
				t.Fatal(err)
			}
			ws = w.Slug
		}
		ik, err := owner.CreateInferenceKey(ctx, org, ws, wire.InferenceKeyCreate{Name: "k"})
		if err != nil {
			t.Fatal(err)
		}
		keys[org] = ik.Token
	}
	dpKey, err := owner.CreateManagementKey(ctx, client.InstanceScope(), wire.ManagementKeyCreate{
		Permissions: []string{"bundles.read", "usage.ingest", "data-planes.heartbeat", "policy-state.sync"}, Label: "data-plane"})
	if err != nil {
		t.Fatal(err)
	}

	// The data plane runs without the master key.
	dpDir := t.TempDir()
	dpEnv := []string{"GW_ROLE=data-plane", "GW_CONTROL_PLANE_URL=" + cp.URL, "GW_TOKEN=" + dpKey.Token, "GW_DATA_DIR=" + dpDir,
		"GW_POLL_INTERVAL=200ms", "GW_HEARTBEAT_INTERVAL=200ms", "GW_DATA_PLANE_ID=dp-a", "GW_SECRET_KEY="}
	dp := startServe(t, dpEnv...)
	models := func(token string) *http.Response {
		req, _ := http.NewRequest("GET", dp.URL+"/inf/v1/models", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	status := func(token string) int {
		resp := models(token)
		resp.Body.Close()
		return resp.StatusCode
	}

	// Asked, not approved: it serves nothing, and says why.
	var asked wire.DataPlaneEnrollment
	waitFor(t, "the enrollment request", func() bool {
		asked, err = owner.GetEnrollment(ctx, "dp-a")
		return err == nil
	})
	if asked.Status != "pending" {
		t.Fatalf("request: %+v", asked)
	}
	if err := notReady(models(keys["default"])); err != nil {
		t.Fatalf("pending data plane: %v", err)
	}
	waitFor(t, "the data plane to log its fingerprint", func() bool { return strings.Contains(dp.logs.String(), asked.Fingerprint) })

	// An instance admin enrolls it for A, with the CLI.
	cli := []string{"GW_SERVER=" + cp.URL, "GW_TOKEN=" + boot.ManagementKey.Token, "GW_CONTEXT=", "XDG_CONFIG_HOME=" + t.TempDir()}
	out, _ := runGW(t, cli, "data-planes", "enroll", "dp-a", "--org", "default", "--fingerprint", asked.Fingerprint)
	if !contains(out, "dp-a", "approved", "default") {
		t.Fatalf("gw data-planes enroll:\n%s", out)
	}
	waitFor(t, "A's key to work on the data plane", func() bool { return status(keys["default"]) == 200 })
	if st := status(keys[orgB.Slug]); st != 401 {
		t.Fatalf("B's key on a data plane enrolled for A only: %d", st)
	}
	// A's secret opens on the data plane: a chat completion reaches A's
	// upstream with A's key.
	sdk := openai.NewClient(option.WithBaseURL(dp.URL+"/inf/v1/"), option.WithAPIKey(keys["default"]), option.WithMaxRetries(0))
	chat, err := sdk.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "openai/gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	if err != nil || len(chat.Choices) != 1 || chat.Choices[0].Message.Content != "hello from a" {
		t.Fatalf("chat through the enrolled data plane: %+v %v", chat, err)
	}
	if len(upB.Requests()) != 0 {
		t.Fatal("B's upstream was called")
	}

	// What the data plane holds: A's bundle only; its secrets open with its
	// own key (0600 in its state dir), not with the master key.
	keyPath := filepath.Join(dpDir, "dataplane", "data-plane-key")
	if fi, err := os.Stat(keyPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("data-plane key file: %v %v", fi, err)
	}
	raw, _ := os.ReadFile(keyPath)
	own, err := secrets.ParseDataPlaneKey(string(raw))
	if err != nil || own.Public().Fingerprint() != asked.Fingerprint {
		t.Fatalf("the key file is not the key it enrolled with: %v", err)
	}
	mk, _ := secrets.ParseKey(master)
	masterRing := secrets.NewKeyring(mk)
	checkHeld := func(bs []wire.SignedBundle, where string) {
		t.Helper()
		if len(bs) != 1 || bs[0].OrgID != boot.Organization.ID {
			t.Fatalf("%s: %d bundles, want A's only", where, len(bs))
		}
		var body bundle.Body
		if err := json.Unmarshal(bs[0].Body, &body); err != nil {
			t.Fatal(err)
		}
		if len(body.Credentials) != 1 {
			t.Fatalf("%s: credentials %+v", where, body.Credentials)
		}
		c := body.Credentials[0]
		aad := secrets.CredentialAAD(c.ID)
		if _, err := masterRing.Open(c.SecretSealed, aad); !errors.Is(err, secrets.ErrCannotOpen) {
			t.Fatalf("%s: the master key opens the data plane's secret: %v", where, err)
		}
		if pt, err := own.Open(c.SecretSealed, aad); err != nil || string(pt) != upA.Key {
			t.Fatalf("%s: the data plane's key opens %q, %v", where, pt, err)
		}
	}
	var cached wire.DataPlaneBundles
	// The cache is written just after the bundles are admitted, which
	// already serves requests.
	cachePath := filepath.Join(dpDir, "dataplane", "bundles.json")
	waitFor(t, "the bundle cache", func() bool { _, err := os.Stat(cachePath); return err == nil })
	raw, _ = os.ReadFile(cachePath)
	if err := json.Unmarshal(raw, &cached); err != nil {
		t.Fatal(err)
	}
	checkHeld(cached.Bundles, "the cached bundles")
	dpc, _ := client.New(client.Options{Server: cp.URL, Token: dpKey.Token})
	polled, _, _, err := dpc.PollBundles(ctx, "dp-a", "")
	if err != nil {
		t.Fatal(err)
	}
	checkHeld(polled.Bundles, "a poll")
	// Another key cannot poll as this data plane.
	if _, _, _, err := owner.PollBundles(ctx, "dp-a", ""); !client.IsStatus(err, 403) {
		t.Fatalf("the owner's key polls as dp-a: %v", err)
	}

	// Revoked: the next poll carries nothing and the data plane stops
	// serving A, also after a restart from its cache.
	out, _ = runGW(t, cli, "data-planes", "revoke", "dp-a", "--yes")
	if !contains(out, "dp-a", "revoked") {
		t.Fatalf("gw data-planes revoke:\n%s", out)
	}
	waitFor(t, "the revocation to reach the data plane", func() bool { return status(keys["default"]) == 401 })
	dp.stop(t)
	dp = startServe(t, dpEnv...)
	if st := status(keys["default"]); st != 401 && st != 503 {
		t.Fatalf("a revoked data plane serves A after a restart: %d", st)
	}
	out, _ = runGW(t, cli, "data-planes", "enrollments")
	if !contains(out, "dp-a", "revoked") {
		t.Fatalf("gw data-planes enrollments:\n%s", out)
	}
	// Enrolled again, it serves again.
	enrollDataPlane(t, owner, "dp-a", "default")
	waitFor(t, "A's key to work again", func() bool { return status(keys["default"]) == 200 })
	dp.stop(t)
	cp.stop(t)
}
