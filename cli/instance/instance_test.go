package instance

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/cmdutil/cmdtest"
)

func TestUpdateFlags(t *testing.T) {
	cmdtest.RunFlagCases(t, NewCmdUpdate, []cmdtest.FlagCase[UpdateOptions]{
		{Name: "lists", Args: []string{"--egress-deny", "10.0.0.0/8", "--egress-deny", "192.168.0.0/16", "--egress-allow", "10.1.0.0/16"},
			Check: func(t *testing.T, o *UpdateOptions) {
				if strings.Join(o.Deny, " ") != "10.0.0.0/8 192.168.0.0/16" || strings.Join(o.Allow, " ") != "10.1.0.0/16" || o.NoEgress {
					t.Errorf("%+v", o)
				}
			}},
		{Name: "comma separated", Args: []string{"--egress-deny", "10.0.0.0/8,fd00::/8"}, Check: func(t *testing.T, o *UpdateOptions) {
			if len(o.Deny) != 2 {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "empty", Args: []string{"--no-egress"}, Check: func(t *testing.T, o *UpdateOptions) {
			if !o.NoEgress || o.Deny != nil || o.Allow != nil {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "nothing", WantErr: "nothing to change"},
		{Name: "both", Args: []string{"--no-egress", "--egress-deny", "10.0.0.0/8"}, WantErr: "takes no --egress-deny"},
		{Name: "bad output", Args: []string{"--no-egress", "-o", "xml"}, WantErr: cmdtest.BadOutput},
	})
}

// The commands against a server that answers as gw's does: update sends
// the lists whole (none for --no-egress), a refused range is named by its
// flag, get prints the policy.
func TestSettingsRun(t *testing.T) {
	var sent []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/instance/settings" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		settings := `{"data":{"egress":{"deny":["10.0.0.0/8"],"allow":["10.1.0.0/16"]},"builtin_deny":["169.254.169.254/32"],` +
			`"egress_deny_private":false,"revision":2,"updated_at":"2026-11-28T10:00:00Z"}}`
		if r.Method == http.MethodPatch {
			body, _ := io.ReadAll(r.Body)
			sent = append(sent, string(body))
			if strings.Contains(string(body), "10.1.2.3/8") {
				w.WriteHeader(http.StatusUnprocessableEntity)
				_, _ = io.WriteString(w, `{"detail":[{"type":"value_error","loc":["body","egress","deny",0],"msg":"10.1.2.3/8 is not a canonical range; did you mean 10.0.0.0/8?","input":"10.1.2.3/8"}]}`)
				return
			}
		}
		_, _ = io.WriteString(w, settings)
	}))
	defer srv.Close()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(t.TempDir(), "config"))
	t.Setenv("GW_SERVER", srv.URL)
	t.Setenv("GW_TOKEN", "gw_instance_key")
	run := func(args ...string) (int, string, string) {
		f, out, errOut := cmdtest.Factory()
		code := cmdtest.Run(context.Background(), f, args, NewCmd(f))
		return code, out.String(), errOut.String()
	}

	if code, out, errOut := run("instance", "settings", "get"); code != cmdutil.ExitOK ||
		!strings.Contains(out, "10.0.0.0/8") || !strings.Contains(out, "169.254.169.254/32") {
		t.Fatalf("get: %d %q %q", code, out, errOut)
	}
	if code, out, errOut := run("instance", "settings", "update", "--egress-deny", "10.0.0.0/8", "--egress-allow", "10.1.0.0/16", "-o", "json"); code != cmdutil.ExitOK ||
		!json.Valid([]byte(out)) {
		t.Fatalf("update: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := run("instance", "settings", "update", "--no-egress"); code != cmdutil.ExitOK {
		t.Fatalf("--no-egress: %d %q", code, errOut)
	}
	code, _, errOut := run("instance", "settings", "update", "--egress-deny", "10.1.2.3/8")
	if code != cmdutil.ExitUsage || !strings.Contains(errOut, "--egress-deny") || !strings.Contains(errOut, "10.0.0.0/8") {
		t.Fatalf("a refused range: %d %q", code, errOut)
	}
	want := []string{`{"egress":{"deny":["10.0.0.0/8"],"allow":["10.1.0.0/16"]}}`, `{"egress":{}}`, `{"egress":{"deny":["10.1.2.3/8"]}}`}
	if strings.Join(sent, "\n") != strings.Join(want, "\n") {
		t.Fatalf("sent:\n%s\nwant:\n%s", strings.Join(sent, "\n"), strings.Join(want, "\n"))
	}
}
