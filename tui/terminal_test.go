package tui

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// package noprobe sets TERM=dumb while bubbletea initialises; the
// dashboard's colours depend on getting the real TERM back.
func TestTERMRestoredAfterInit(t *testing.T) {
	if os.Getenv("GW_TEST_PRINT_TERM") == "1" {
		os.Stdout.WriteString(os.Getenv("TERM"))
		os.Exit(0)
	}
	for _, term := range []string{"xterm-256color", ""} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestTERMRestoredAfterInit$")
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "TERM=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, "GW_TEST_PRINT_TERM=1")
		if term != "" {
			cmd.Env = append(cmd.Env, "TERM="+term)
		}
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != term {
			t.Errorf("TERM %q after init, want %q", out, term)
		}
	}
}
