// Package archivetest starts a real S3-compatible server (versitygw) for
// the archive's tests: found through GW_TEST_S3_BIN, else versitygw on
// PATH or in $(go env GOPATH)/bin; a test skips when there is none,
// unless GW_TEST_REQUIRE_S3=1 (CI), when it fails.
package archivetest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Access and Secret are the server's root credentials.
const (
	Access = "gwtestaccess"
	Secret = "gwtestsecret-not-a-real-one"
)

// S3 is a running versitygw serving a directory.
type S3 struct {
	t        testing.TB
	bin, dir string
	addr     string
	cmd      *exec.Cmd
}

// Binary is the versitygw to run, or "".
func Binary() string {
	if b := os.Getenv("GW_TEST_S3_BIN"); b != "" {
		return b
	}
	if b, err := exec.LookPath("versitygw"); err == nil {
		return b
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
			gopath = strings.TrimSpace(string(out))
		}
	}
	for _, p := range filepath.SplitList(gopath) {
		b := filepath.Join(p, "bin", "versitygw")
		if _, err := os.Stat(b); err == nil {
			return b
		}
	}
	return ""
}

// Start starts a server on a free 127.0.0.1 port, serving a fresh
// directory; it stops with the test.
func Start(t testing.TB) *S3 {
	t.Helper()
	bin := Binary()
	if bin == "" {
		if os.Getenv("GW_TEST_REQUIRE_S3") == "1" {
			t.Fatal("GW_TEST_REQUIRE_S3=1 but no versitygw: set GW_TEST_S3_BIN or go install github.com/versity/versitygw/cmd/versitygw@v1.8.0")
		}
		t.Skip("no S3-compatible server (versitygw): set GW_TEST_S3_BIN")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s := &S3{t: t, bin: bin, dir: t.TempDir(), addr: addr}
	s.Restart()
	t.Cleanup(s.Stop)
	return s
}

// Endpoint is the server's URL.
func (s *S3) Endpoint() string { return "http://" + s.addr }

// Stop stops the server (its directory stays).
func (s *S3) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Restart starts the server again on the same directory and port, and
// waits until it accepts connections.
func (s *S3) Restart() {
	s.t.Helper()
	s.Stop()
	cmd := exec.Command(s.bin, "--access", Access, "--secret", Secret, "--port", s.addr, "posix", s.dir)
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start versitygw: %v", err)
	}
	s.cmd = cmd
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatal(fmt.Sprintf("versitygw did not listen on %s: %v", s.addr, err))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
