package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// Issue 27, row 6: policies naming another tenant's key, or ids matching
// nothing, were kept silently. The API still takes any string (the spec
// says so, and tag budgets rely on it), but gw policies apply, diff and
// explain warn, on stderr, about every id that names no key or member of
// the workspace: here another organization's key, another workspace's
// key, a made-up id and an unknown user; not the workspace's own key, its
// owner or a tag budget's marker.
func TestPoliciesWarnAboutTargetsMatchingNothing(t *testing.T) {
	e := newPolicyAPI(t)
	ctx := context.Background()
	own, err := e.c.CreateInferenceKey(ctx, "default", "default", wire.InferenceKeyCreate{Name: "own"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.CreateOrganization(ctx, wire.OrganizationCreate{Name: "Acme", Slug: "acme"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.CreateWorkspace(ctx, "acme", wire.WorkspaceCreate{Name: "Main", Slug: "main"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.AddMember(ctx, "acme", wire.MemberAdd{UserID: &own.UserID, Role: "owner"}); err != nil {
		t.Fatal(err)
	}
	foreign, err := e.c.CreateInferenceKey(ctx, "acme", "main", wire.InferenceKeyCreate{Name: "theirs"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.CreateWorkspace(ctx, "default", wire.WorkspaceCreate{Name: "Other", Slug: "other"}); err != nil {
		t.Fatal(err)
	}
	sibling, err := e.c.CreateInferenceKey(ctx, "default", "other", wire.InferenceKeyCreate{Name: "sibling"})
	if err != nil {
		t.Fatal(err)
	}
	const stranger = "00000000-0000-4000-8000-00000000beef"
	file := e.write("targets.yaml", `
- name: keys
  definition:
    target: {kind: selected_keys, key_ids: ["`+own.ID.String()+`", "`+foreign.ID.String()+`", "`+sibling.ID.String()+`", "no-such-key", "tag:team=search"]}
    rules:
      - match: {kind: all_requests}
        action: {kind: deny, message: no}
- name: users
  definition:
    target: {kind: selected_users, user_ids: ["`+own.UserID.String()+`", "`+stranger+`"]}
    rules:
      - match: {kind: all_requests}
        action: {kind: deny, message: no}
`)
	wants := []string{
		`warning: policy "keys": selected_keys id "` + foreign.ID.String() + `" is no inference key of workspace default; it matches no request`,
		`warning: policy "keys": selected_keys id "` + sibling.ID.String() + `" is no inference key of workspace default`,
		`warning: policy "keys": selected_keys id "no-such-key" is no inference key of workspace default`,
		`warning: policy "users": selected_users id "` + stranger + `" is no member of workspace default nor the owner of one of its keys`,
	}
	check := func(what, errOut string) {
		t.Helper()
		wantContains(t, what, errOut, wants...)
		if n := strings.Count(errOut, "warning: "); n != len(wants) {
			t.Errorf("%s: %d warnings, want %d:\n%s", what, n, len(wants), errOut)
		}
	}
	_, errOut := e.mustRun(ExitDiffers, "", "policies", "diff", "-f", file)
	check("diff", errOut)
	_, errOut = e.mustRun(0, "", "policies", "apply", "-f", file, "--dry-run")
	check("apply --dry-run", errOut)
	_, errOut = e.mustRun(0, "", "policies", "apply", "-f", file)
	check("apply", errOut)
	if len(e.policies()) != 2 {
		t.Fatal("the policies were not saved: warnings must not stop apply")
	}
	if _, err := e.c.CreateCredential(ctx, client.WorkspaceScope("default", "default"),
		wire.ProviderCredentialCreate{Provider: "openai", Label: "main", Secret: "sk-test-0123456789abcdef"}); err != nil {
		t.Fatal(err)
	}
	_, errOut = e.mustRun(0, "", "policies", "explain", "--key", own.ID.String(), "--model", "openai/gpt-4o-mini")
	check("explain", errOut)
	// A workspace whose targets all match says nothing.
	clean := e.write("clean.yaml", `
- name: keys
  definition:
    target: {kind: selected_keys, key_ids: ["`+own.ID.String()+`"]}
    rules:
      - match: {kind: all_requests}
        action: {kind: deny, message: no}
`)
	if _, errOut = e.mustRun(ExitDiffers, "", "policies", "diff", "-f", clean); strings.Contains(errOut, "warning") {
		t.Errorf("warnings for targets that match: %s", errOut)
	}
}
