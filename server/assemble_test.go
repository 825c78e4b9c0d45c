package server_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/server"
)

// TestFailedAssemblyIsAnError: a step that fails closes what the steps
// before it opened and comes back as an error naming the step, never a
// panic, for either role.
func TestFailedAssemblyIsAnError(t *testing.T) {
	blocked := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(blocked, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		cfg  server.Config
		want string
	}{
		{"a database that cannot be opened", server.Config{Role: "all", DatabaseURL: "mysql://nowhere"}, "open the store"},
		{"a data plane whose state dir is a file", server.Config{Role: server.RoleDataPlane, ControlPlaneURL: "http://127.0.0.1:1",
			Token: "sk-cp-x", DataPlaneID: "dp-1", StateDir: filepath.Join(blocked, "state"), BundlePublicKey: ""}, ""},
	} {
		srv, err := server.New(context.Background(), c.cfg)
		if err == nil || srv != nil {
			t.Fatalf("%s: %v, %v; want an error", c.name, srv, err)
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want it to name %q", c.name, err, c.want)
		}
	}
}
