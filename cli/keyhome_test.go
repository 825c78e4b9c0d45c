package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gw-gateway/gw/cli/config"
)

// keyRecorder is a server that records the Authorization headers it was
// sent and answers 401.
type keyRecorder struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newKeyRecorder(t *testing.T) *keyRecorder {
	k := &keyRecorder{}
	k.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k.mu.Lock()
		k.seen = append(k.seen, r.Header.Get("Authorization"))
		k.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"detail":"invalid management key"}`))
	}))
	t.Cleanup(k.Close)
	return k
}

func (k *keyRecorder) keys() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.seen...)
}

// Issue 10, item 10: GW_SERVER (or --server) pointing elsewhere must not
// carry the current context's key there; the CLI says how to log in there.
// A context stored for that server lends its own key; GW_TOKEN is the
// caller's explicit choice.
func TestStoredKeyGoesOnlyToItsServer(t *testing.T) {
	home, elsewhere := newKeyRecorder(t), newKeyRecorder(t)
	const homeKey, otherKey = "sk-cp-home-secret", "sk-cp-other-secret"
	path := filepath.Join(t.TempDir(), "config.yaml")
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Contexts["home"] = &config.Context{Server: home.URL, Token: homeKey, Org: "default"}
	if err := cfg.Use("home"); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Save(); err != nil {
		t.Fatal(err)
	}
	run := func(env map[string]string, args ...string) (int, string) {
		for _, k := range []string{"GW_SERVER", "GW_TOKEN", "GW_CONTEXT", "GW_ORG", "GW_WORKSPACE"} {
			t.Setenv(k, env[k])
		}
		f, _, errOut := testFactory()
		f.ConfigPath = path
		return Run(context.Background(), f, args), errOut.String()
	}

	cases := []struct {
		name string
		env  map[string]string
		args []string
		// the server that must see wantKey, and the one that must see none
		to      *keyRecorder
		wantKey string
		code    int
	}{
		{"env server elsewhere", map[string]string{"GW_SERVER": elsewhere.URL}, []string{"whoami"}, elsewhere, "", ExitAuth},
		{"flag server elsewhere", nil, []string{"whoami", "--server", elsewhere.URL}, elsewhere, "", ExitAuth},
		{"env server home, trailing slash", map[string]string{"GW_SERVER": home.URL + "/"}, []string{"whoami"}, home, "Bearer " + homeKey, ExitAuth},
		{"explicit GW_TOKEN goes where told", map[string]string{"GW_SERVER": elsewhere.URL, "GW_TOKEN": otherKey}, []string{"whoami"}, elsewhere, "Bearer " + otherKey, ExitAuth},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(c.to.keys())
			code, errOut := run(c.env, c.args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d: %s", code, c.code, errOut)
			}
			for _, k := range elsewhere.keys() {
				if strings.Contains(k, homeKey) {
					t.Fatalf("the home server's key was sent elsewhere: %q", k)
				}
			}
			got := c.to.keys()[before:]
			if c.wantKey == "" {
				if len(got) != 0 {
					t.Fatalf("a request went out without a key to send: %q", got)
				}
				if !strings.Contains(errOut, "gw login --server "+elsewhere.URL) {
					t.Fatalf("stderr does not say how to log in there: %s", errOut)
				}
				return
			}
			if len(got) == 0 || got[0] != c.wantKey {
				t.Fatalf("server saw %q, want %q", got, c.wantKey)
			}
		})
	}

	// A context stored for the other server lends its own key.
	cfg.Contexts["other"] = &config.Context{Server: elsewhere.URL, Token: otherKey}
	if err := cfg.Save(); err != nil {
		t.Fatal(err)
	}
	before := len(elsewhere.keys())
	if code, errOut := run(map[string]string{"GW_SERVER": elsewhere.URL}, "whoami"); code != ExitAuth {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if got := elsewhere.keys()[before:]; len(got) == 0 || got[0] != "Bearer "+otherKey {
		t.Fatalf("elsewhere saw %q, want its own stored key", got)
	}
}
