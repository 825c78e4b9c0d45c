package dataplane_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// Issue 27, row 8: count_tokens ignored the workspace's required_tags. It
// is refused without them, 400 missing_required_tags in Anthropic's shape,
// as the inference endpoints refuse, and counts with them.
func TestCountTokensRequiresTheWorkspacesTags(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		e := newInfEnv(t, db)
		ws, err := e.st.GetWorkspace(ctx, e.ws)
		if err != nil {
			t.Fatal(err)
		}
		ws.RequiredTags = store.Strings{"team"}
		if err := e.st.UpdateWorkspace(ctx, ws); err != nil {
			t.Fatal(err)
		}
		e.sync(t)
		count := func(tags string) (int, string) {
			req, _ := http.NewRequest("POST", e.srv.URL+"/inf/v1/messages/count_tokens",
				strings.NewReader(`{"model":"`+haiku+`","messages":[{"role":"user","content":"hi"}]}`))
			req.Header.Set("Authorization", "Bearer "+e.token)
			if tags != "" {
				req.Header.Set("X-Gw-Tags", tags)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(raw)
		}
		if status, raw := count(""); status != 400 || !strings.Contains(raw, "missing_required_tags") && !strings.Contains(raw, "requires the tags team") ||
			!strings.Contains(raw, `"invalid_request_error"`) {
			t.Fatalf("without the required tag: %d %s", status, raw)
		}
		if status, raw := count("team=search"); status != 200 || !strings.Contains(raw, "input_tokens") {
			t.Fatalf("with the required tag: %d %s", status, raw)
		}
	})
}
