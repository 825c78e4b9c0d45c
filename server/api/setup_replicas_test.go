package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// Issue 27, row 8: a second control-plane replica starting on an empty
// database replaced the setup token the first had printed, which then
// failed. Each replica's token now works until the instance has its
// owner, whichever replica it is sent to; then none does.
func TestSetupTokensOfReplicasAllWork(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		// The first replica starts, then the second.
		var replicas [2]*httptest.Server
		var tokens [2]string
		for i := range replicas {
			s, err := api.New(ctx, store.New(db), api.Options{})
			if err != nil {
				t.Fatal(err)
			}
			replicas[i] = httptest.NewServer(s)
			t.Cleanup(replicas[i].Close)
			if tokens[i], err = s.PrepareSetup(ctx, ""); err != nil || tokens[i] == "" {
				t.Fatalf("replica %d: %q %v", i, tokens[i], err)
			}
		}
		bootstrap := func(replica int, token, email string) int {
			body, _ := json.Marshal(map[string]string{"token": token, "email": email, "password": "a long passphrase"})
			resp, err := http.Post(replicas[replica].URL+"/api/v1/bootstrap", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		if s := bootstrap(0, "setup_wrong", "nobody@example.com"); s != http.StatusForbidden {
			t.Fatalf("a wrong token: %d", s)
		}
		// The first replica's token, sent to the second.
		if s := bootstrap(1, tokens[0], "ops@example.com"); s != http.StatusOK {
			t.Fatalf("the first replica's token: %d", s)
		}
		if s := bootstrap(0, tokens[1], "late@example.com"); s != http.StatusConflict {
			t.Fatalf("the second replica's token after the bootstrap: %d", s)
		}
		st, err := store.New(db).GetInstanceState(ctx)
		if err != nil || len(st.SetupTokenHashes()) != 0 {
			t.Fatalf("setup tokens kept after the bootstrap: %v %v", st.SetupTokenHashes(), err)
		}
	})
}

// Past store.MaxSetupTokens processes, the oldest token goes.
func TestSetupTokensAreBounded(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		s, err := api.New(ctx, store.New(db), api.Options{})
		if err != nil {
			t.Fatal(err)
		}
		first, _ := s.PrepareSetup(ctx, "")
		for range store.MaxSetupTokens {
			if _, err := s.PrepareSetup(ctx, ""); err != nil {
				t.Fatal(err)
			}
		}
		st, err := store.New(db).GetInstanceState(ctx)
		if err != nil || len(st.SetupTokenHashes()) != store.MaxSetupTokens {
			t.Fatalf("%d tokens kept: %v", len(st.SetupTokenHashes()), err)
		}
		srv := httptest.NewServer(s)
		t.Cleanup(srv.Close)
		body, _ := json.Marshal(map[string]string{"token": first, "email": "ops@example.com", "password": "a long passphrase"})
		resp, err := http.Post(srv.URL+"/api/v1/bootstrap", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("the oldest token, past the bound: %d", resp.StatusCode)
		}
	})
}
