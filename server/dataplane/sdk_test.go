package dataplane_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/store/storetest"
)

// The official OpenAI Go SDK, unchanged, against {base_url}/inf/v1: it
// lists and fetches models, ids with slashes included (it sends them
// escaped, openai%2Fgpt-4o-mini), and reads gw's errors as its own.
func TestOpenAISDKDiscoversModels(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		a := newAcme(t, e)
		e.sync(t)
		srv := httptest.NewServer(e.plane)
		t.Cleanup(srv.Close)
		client := func(token string) openai.Client {
			return openai.NewClient(option.WithBaseURL(srv.URL+"/inf/v1/"), option.WithAPIKey(token), option.WithMaxRetries(0))
		}
		c := client(a.token)

		page, err := c.Models.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range page.Data {
			got = append(got, m.ID)
			if m.Object != "model" || m.OwnedBy == "" {
				t.Errorf("model %+v", m)
			}
		}
		if want := e.listIDs(t, a.token); !slices.Equal(got, want) || len(want) == 0 {
			t.Fatalf("SDK lists\n%v\nwant\n%v", got, want)
		}

		for _, id := range []string{"openai/gpt-4o-mini", "groq/meta-llama/llama-4-scout-17b-16e-instruct"} {
			m, err := c.Models.Get(ctx, id)
			if err != nil {
				t.Fatalf("get %s: %v", id, err)
			}
			cat, _ := e.catalog.Model(id)
			if m.ID != id || m.OwnedBy != cat.Provider || m.Created != cat.Created {
				t.Fatalf("get %s: %+v", id, m)
			}
		}

		var apiErr *openai.Error
		if _, err := c.Models.Get(ctx, "openai/gpt-4o"); !errors.As(err, &apiErr) ||
			apiErr.StatusCode != http.StatusNotFound || apiErr.Code != "model_not_found" || apiErr.Param != "model" {
			t.Fatalf("hidden model: %v", err)
		}
		bad := client("sk-gw-not-a-key")
		if _, err := bad.Models.List(ctx); !errors.As(err, &apiErr) ||
			apiErr.StatusCode != http.StatusUnauthorized || apiErr.Code != "invalid_api_key" {
			t.Fatalf("invalid key: %v", err)
		}
	})
}
