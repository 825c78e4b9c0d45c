package tui

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

func TestWorkspaceLabels(t *testing.T) {
	w := func(id, name, slug string) wire.Workspace {
		return wire.Workspace{ID: uuid.MustParse(id), Name: name, Slug: slug}
	}
	a := w("00000000-0000-4000-8000-00000000000a", "Search", "search")
	b := w("00000000-0000-4000-8000-00000000000b", "search ", "search-2")
	c := w("00000000-0000-4000-8000-00000000000c", "Ads", "ads")
	d := w("00000000-0000-4000-8000-00000000000d", "", "nameless")
	got := WorkspaceLabels([]wire.Workspace{a, b, c, d})
	want := map[string]string{a.ID.String(): "Search (search)", b.ID.String(): "search (search-2)", c.ID.String(): "Ads", d.ID.String(): "(nameless)"}
	for id, label := range want {
		if got[id] != label {
			t.Errorf("%s: %q, want %q", id, got[id], label)
		}
	}
}

// clientLabeled is the fake's usage with the real ClientSource's names,
// read from a server that has two workspaces named alike.
type clientLabeled struct {
	*fakeSource
	names ClientSource
}

func (c clientLabeled) Labels(ctx context.Context) (map[string]string, error) {
	return c.names.Labels(ctx)
}

// Two workspaces named alike read differently in the dashboard: each
// shows its slug (issue 26, row 12).
func TestWorkspacesNamedAlikeShowTheirSlugs(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var data any = []any{}
		if r.URL.Path == "/api/v1/organizations/acme/workspaces" {
			data = []wire.Workspace{
				{ID: uuid.MustParse(wsProd), Name: "Search", Slug: "search"},
				{ID: uuid.MustParse(wsDev), Name: "Search", Slug: "search-staging"},
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"data": data})
	}))
	defer srv.Close()
	c, err := client.New(client.Options{Server: srv.URL, Token: "sk-cp-test"})
	if err != nil {
		t.Fatal(err)
	}
	fake := newFake()
	d := start(t, clientLabeled{fakeSource: fake, names: ClientSource{Client: c, Org: "acme"}}, fake, Options{By: "workspace"})
	d.mustShow("By workspace", "Search (search)", "Search (search-staging)")
	d.key("w")
	d.mustShow("filters: workspace Search (search)")
}

// A sub-cent cost beside its share shows its digits, never "$0.0000"
// (issue 26, row 12).
func TestSubCentCostsShowTheirDigits(t *testing.T) {
	fake := newFake()
	fake.rows["model"] = []wire.UsageBreakdownRow{
		{Key: "openai/gpt-4o", UsageCounters: counters(60, "0.0066")},
		{Key: "openai/gpt-4o-mini", UsageCounters: counters(40, "0.00042")},
	}
	d := start(t, fake, fake, Options{})
	d.mustShow("openai/gpt-4o-mini", "$0.00042", "6.0%", "$0.0066")
	if strings.Contains(d.view(), "$0.0000 ") {
		t.Fatalf("a cost shown as $0.0000:\n%s", d.view())
	}
}
