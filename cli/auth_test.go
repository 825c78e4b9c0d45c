package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/cli/config"
)

func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		f, out, errOut := testFactory()
		if code := Run(context.Background(), f, []string{"completion", shell}); code != 0 || !strings.Contains(out.String(), "gw") {
			t.Fatalf("completion %s: %d %s", shell, code, errOut)
		}
	}
	f, out, _ := testFactory()
	if code := Run(context.Background(), f, []string{"__complete", "log"}); code != 0 ||
		!strings.Contains(out.String(), "login") || !strings.Contains(out.String(), "logout") {
		t.Fatalf("command completion: %q", out)
	}
}

// Completion offers the context names (gw context use).
func TestContextCompletion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	cfg, _ := config.Load(path)
	cfg.Contexts["local"] = &config.Context{Server: "http://127.0.0.1:8080"}
	if err := cfg.Save(); err != nil {
		t.Fatal(err)
	}
	f, out, _ := testFactory()
	f.ConfigPath = path
	if code := Run(context.Background(), f, []string{"__complete", "context", "use", ""}); code != 0 || !strings.Contains(out.String(), "local\n") {
		t.Fatalf("complete: %d %q", code, out)
	}
}
