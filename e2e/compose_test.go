package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// composeFile is deploy/compose.yaml as the test reads it: its header's
// commands and its gw services.
type composeFile struct {
	header   []string // the comment lines before the first key, joined at trailing backslashes
	services map[string]composeService
}

type composeService struct {
	Image       string
	Command     []string
	Environment map[string]string
}

func readCompose(t *testing.T) composeFile {
	t.Helper()
	raw, err := os.ReadFile("../deploy/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c struct{ Services map[string]composeService }
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	f := composeFile{services: c.Services}
	cont := ""
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "#") {
			break
		}
		line = strings.TrimSpace(strings.TrimLeft(line, "#"))
		if l, ok := strings.CutSuffix(line, "\\"); ok {
			cont += l
			continue
		}
		f.header = append(f.header, cont+line)
		cont = ""
	}
	return f
}

var (
	composeVar    = regexp.MustCompile(`\$\{(\w+)(?::([?-])([^}]*))?\}`)
	composeExport = regexp.MustCompile(`^export (\w+)=\$\((gw .*)\)`)
	composeSet    = regexp.MustCompile(`^export (\w+)=([\w.-]+)\s*(#.*)?$`)
	composeHost   = regexp.MustCompile(`\b(0\.0\.0\.0|control-plane):(8080|9090)\b`)
)

// TestComposeWithoutDocker runs deploy/compose.yaml's gw services as
// processes (issue 22, row 14): each with its command's flags and its
// environment, the variables filled in as its header says (the keys made
// with its own gw keys create commands), service names and ports turned
// into local addresses, PostgreSQL a fresh schema when the suite has one.
// The data planes get their own keys and never the secret key, the
// enrollment steps enroll them, and both then serve.
func TestComposeWithoutDocker(t *testing.T) {
	c := readCompose(t)
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	vars := map[string]string{"GW_SECRET_KEY": hex.EncodeToString(secret)}
	// Everything the test process has of gw's own settings stays out.
	var base []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GW_") {
			base = append(base, kv)
		}
	}
	addrs := map[string]string{}
	env := func(name string, s composeService) []string {
		out := append([]string{}, base...)
		out = append(out, "GW_DATA_DIR="+filepath.Join(t.TempDir(), name))
		for k, v := range s.Environment {
			v = expand(t, name, v, vars)
			if k == "GW_DATABASE_URL" {
				if os.Getenv(storetest.EnvDatabaseURL) == "" {
					continue // no PostgreSQL here: the embedded database
				}
				u, err := storetest.URL(t, storetest.Postgres)
				if err != nil {
					t.Fatal(err)
				}
				v = u
			}
			out = append(out, k+"="+composeHost.ReplaceAllStringFunc(v, func(m string) string { return local(addrs, m) }))
		}
		return out
	}
	args := func(name string, s composeService) []string {
		out := make([]string, len(s.Command))
		for i, a := range s.Command {
			out[i] = composeHost.ReplaceAllStringFunc(expand(t, name, a, vars), func(m string) string { return local(addrs, m) })
		}
		return out
	}
	start := func(name string) *server {
		s := c.services[name]
		srv := startGW(t, args(name, s), env(name, s))
		addrs[name] = strings.TrimPrefix(srv.URL, "http://")
		return srv
	}

	cp := start("control-plane")
	ctx := context.Background()
	anon, _ := client.New(client.Options{Server: cp.URL})
	token := c.services["control-plane"].Environment["GW_BOOTSTRAP_TOKEN"]
	boot, err := anon.Bootstrap(ctx, wire.Bootstrap{Token: token, Email: "ops@example.com", Password: "a long passphrase"})
	if err != nil {
		t.Fatalf("bootstrap with the compose file's setup token: %v\n%s", err, cp.logs)
	}
	// The header's commands, in order, as the owner.
	owner := []string{"GW_SERVER=" + cp.URL, "GW_TOKEN=" + boot.ManagementKey.Token, "GW_CONTEXT=", "GW_ORG=", "GW_WORKSPACE=",
		"XDG_CONFIG_HOME=" + t.TempDir()}
	for _, line := range c.header {
		if m := composeExport.FindStringSubmatch(line); m != nil {
			out, _ := runGW(t, owner, strings.Fields(strings.TrimPrefix(m[2], "gw "))...)
			vars[m[1]] = strings.TrimSpace(out)
		} else if m := composeSet.FindStringSubmatch(line); m != nil {
			vars[m[1]] = m[2]
		}
	}
	for _, v := range []string{"GW_DATA_PLANE_1_TOKEN", "GW_DATA_PLANE_2_TOKEN", "GW_ENROLL_TOKEN", "GW_ENROLL_ORG"} {
		if vars[v] == "" {
			t.Fatalf("the compose file's header does not set %s", v)
		}
	}

	planes := map[string]*server{}
	for _, name := range []string{"data-plane-1", "data-plane-2"} {
		if _, ok := c.services[name].Environment["GW_SECRET_KEY"]; ok {
			t.Fatalf("%s is given the secret key", name)
		}
		planes[name] = start(name)
	}
	for _, name := range []string{"enroll-data-plane-1", "enroll-data-plane-2"} {
		s := c.services[name]
		cmd := exec.Command(gwBin, args(name, s)...)
		cmd.Env = append(env(name, s), "XDG_CONFIG_HOME="+t.TempDir())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
	}
	for name, p := range planes {
		deadline := time.Now().Add(60 * time.Second)
		for {
			resp, err := http.Get(p.URL + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never became ready (a bundle admitted)\n%s", name, p.logs)
			}
			time.Sleep(250 * time.Millisecond)
		}
		if strings.Contains(p.logs.String(), "GW_SECRET_KEY") {
			t.Errorf("%s warns about the secret key:\n%s", name, p.logs)
		}
	}
}

// expand fills ${VAR}, ${VAR:-default} and ${VAR:?message} as compose does;
// a required variable that is not set fails the test with its message.
func expand(t *testing.T, service, s string, vars map[string]string) string {
	return composeVar.ReplaceAllStringFunc(s, func(m string) string {
		p := composeVar.FindStringSubmatch(m)
		v, ok := vars[p[1]]
		switch {
		case ok && v != "":
			return v
		case p[2] == "-":
			return p[3]
		case p[2] == "?":
			t.Fatalf("%s needs %s: %s", service, p[1], p[3])
		}
		return ""
	})
}

// local turns a compose address into a local one: a listening address
// picks a free port, a service's address is where that service listens.
func local(addrs map[string]string, m string) string {
	host, port, _ := strings.Cut(m, ":")
	if host == "0.0.0.0" {
		return "127.0.0.1:0"
	}
	if port == "8080" && addrs[host] != "" {
		return addrs[host]
	}
	return m
}
