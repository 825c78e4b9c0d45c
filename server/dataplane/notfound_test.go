package dataplane_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/store/storetest"
)

// notFound is a 404 as it went over the wire, less the headers that differ
// between any two responses (Date) or any two requests (X-Request-Id).
type notFound struct {
	status int
	header http.Header
	body   string
}

func (n notFound) String() string {
	h, _ := json.Marshal(n.header)
	return http.StatusText(n.status) + " " + string(h) + " " + n.body
}

func readNotFound(t *testing.T, what string, resp *http.Response) notFound {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("%s: %d %s", what, resp.StatusCode, b)
	}
	h := resp.Header.Clone()
	h.Del("Date")
	h.Del("X-Request-Id")
	return notFound{resp.StatusCode, h, string(b)}
}

// Spec 4.9 rule 6: an unknown and a hidden model get the identical 404 —
// the same bytes whatever the id, its length or the path that asked, or
// the answer itself would tell a caller which ids exist.
func TestModelNotFoundIsTheSameBytesForEveryID(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		// haiku exists and has a credential, but the allowlist hides it.
		e.policy(t, rule(all, `{"kind":"models","names":["`+gptMini+`"]}`))
		e.sync(t)
		ids := []string{
			haiku,
			"openai/no-such-model",
			"x",
			strings.Repeat("provider/", 40) + "a-very-long-model-name",
			`quote"and<angle>&amp`,
		}
		var want notFound
		check := func(what string, got notFound) {
			t.Helper()
			if want.body == "" {
				want = got
				return
			}
			if got.String() != want.String() {
				t.Errorf("%s answers\n%s\nnot\n%s", what, got, want)
			}
		}
		for _, id := range ids {
			for _, path := range []string{"/inf/v1/models/" + id, "/inf/v1/models/" + url.PathEscape(id)} {
				req, err := http.NewRequest(http.MethodGet, e.srv.URL+path, nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Authorization", "Bearer "+e.token)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				check("GET "+path, readNotFound(t, "GET "+path, resp))
			}
			model, _ := json.Marshal(id)
			for _, stream := range []string{"false", "true"} {
				body := `{"model":` + string(model) + `,"stream":` + stream + `,"messages":[{"role":"user","content":"hi"}]}`
				check("chat completion "+body, readNotFound(t, body, e.post(t, body)))
			}
		}
		// The shape is still OpenAI's, which the SDKs read.
		var got openAIError
		if err := json.Unmarshal([]byte(want.body), &got); err != nil {
			t.Fatal(err)
		}
		if code(got) != "model_not_found" || got.Error.Param == nil || *got.Error.Param != "model" || got.Error.Type != "invalid_request_error" {
			t.Fatalf("404 body %s", want.body)
		}
		if len(e.anthropic.Requests()) != 0 {
			t.Fatal("a hidden model was called")
		}
	})
}
