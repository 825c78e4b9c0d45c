package config

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSaveLoadContexts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gw", "config.yaml")
	f, err := Load(path)
	if err != nil || len(f.Contexts) != 0 {
		t.Fatalf("missing file: %v %+v", err, f)
	}
	f.Contexts["local"] = &Context{Server: "http://127.0.0.1:8080", Token: "sk-cp-x", Org: "default"}
	f.Contexts["prod"] = &Context{Server: "https://gw.example.com"}
	if err := f.Use("local"); err != nil {
		t.Fatal(err)
	}
	if err := f.Save(); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode())
	}
	g, err := Load(path)
	if err != nil || g.Current().Token != "sk-cp-x" || len(g.Names()) != 2 {
		t.Fatalf("reload: %v %+v", err, g)
	}
	if err := g.Use("nope"); err == nil {
		t.Fatal("using an unknown context succeeded")
	}
	if err := g.Delete("local"); err != nil || g.Current() != nil {
		t.Fatalf("delete current: %v", err)
	}
	if err := os.WriteFile(path, []byte("contexts: [oops"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil {
		t.Fatal("malformed file accepted")
	}
}
