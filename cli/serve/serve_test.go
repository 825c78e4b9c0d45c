package serve

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gw-gateway/gw/cli/cmdutil/cmdtest"
)

func TestServeFlags(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
		check   func(t *testing.T, o *Options)
	}{
		{name: "defaults", check: func(t *testing.T, o *Options) {
			if o.Addr != "127.0.0.1:8080" || o.DatabaseURL != "" || o.LogFormat != "text" || o.ShutdownTimeout != 30*time.Second || o.MCPTimeout != time.Minute {
				t.Errorf("defaults: %+v", o)
			}
			if !strings.HasSuffix(o.DataDir, "gw") {
				t.Errorf("data dir %q", o.DataDir)
			}
		}},
		{name: "flags", args: []string{"--addr", ":9", "--database-url", "postgres://x/y", "--log-format", "json", "--disable-signup"},
			check: func(t *testing.T, o *Options) {
				if o.Addr != ":9" || o.DatabaseURL != "postgres://x/y" || o.LogFormat != "json" || !o.DisableSignup {
					t.Errorf("flags: %+v", o)
				}
			}},
		{name: "env", env: map[string]string{"GW_ADDR": "127.0.0.1:7000", "GW_DATA_DIR": "/tmp/d", "GW_BOOTSTRAP_TOKEN": "tok"},
			check: func(t *testing.T, o *Options) {
				if o.Addr != "127.0.0.1:7000" || o.DataDir != "/tmp/d" || o.BootstrapToken != "tok" {
					t.Errorf("env: %+v", o)
				}
			}},
		{name: "flag beats env", args: []string{"--addr", ":1"}, env: map[string]string{"GW_ADDR": ":2"},
			check: func(t *testing.T, o *Options) {
				if o.Addr != ":1" {
					t.Errorf("addr %q", o.Addr)
				}
			}},
		{name: "bad log format", args: []string{"--log-format", "xml"}, wantErr: "--log-format"},
		{name: "half bootstrap", args: []string{"--bootstrap-email", "a@b.c"}, wantErr: "go together"},
		{name: "positional", args: []string{"extra"}, wantErr: "unknown command"},
		{name: "role all by default", check: func(t *testing.T, o *Options) {
			if o.Role != RoleAll || o.PollInterval != 5*time.Second || o.HeartbeatInterval != 10*time.Second {
				t.Errorf("role defaults: %+v", o)
			}
		}},
		{name: "data plane", args: []string{"--role", "data-plane", "--control-plane-url", "http://cp:8080", "--token", "sk-cp-x", "--poll-interval", "1s"},
			check: func(t *testing.T, o *Options) {
				if o.Role != RoleDataPlane || o.ControlPlaneURL != "http://cp:8080" || o.Token != "sk-cp-x" || o.PollInterval != time.Second {
					t.Errorf("data plane: %+v", o)
				}
			}},
		{name: "data plane needs its control plane", args: []string{"--role", "data-plane"}, wantErr: "--control-plane-url"},
		{name: "control plane URL with the API path", args: []string{"--role", "data-plane", "--control-plane-url", "http://cp:8080/api/v1/", "--token", "sk-cp-x"},
			check: func(t *testing.T, o *Options) {
				if o.ControlPlaneURL != "http://cp:8080" {
					t.Errorf("control plane URL %q", o.ControlPlaneURL)
				}
			}},
		{name: "unknown role", args: []string{"--role", "edge"}, wantErr: "--role must be"},
		{name: "cors off by default", check: func(t *testing.T, o *Options) {
			if len(o.CORSOrigins) != 0 {
				t.Errorf("cors origins %v", o.CORSOrigins)
			}
		}},
		{name: "cors flag", args: []string{"--cors-origins", "https://app.example.com,http://localhost:3000/"},
			check: func(t *testing.T, o *Options) {
				if strings.Join(o.CORSOrigins, " ") != "https://app.example.com http://localhost:3000" {
					t.Errorf("cors origins %v", o.CORSOrigins)
				}
			}},
		{name: "cors env", env: map[string]string{"GW_CORS_ORIGINS": "https://a.example, https://B.example"},
			check: func(t *testing.T, o *Options) {
				if strings.Join(o.CORSOrigins, " ") != "https://a.example https://b.example" {
					t.Errorf("cors origins %v", o.CORSOrigins)
				}
			}},
		{name: "cors origin with a path", args: []string{"--cors-origins", "https://a.example/app"}, wantErr: "--cors-origins"},
		{name: "body budget by default", check: func(t *testing.T, o *Options) {
			if o.BodyBudgetMiB != 256 || o.KeyBodyBudgetMiB != 64 {
				t.Errorf("body budget %d, per key %d", o.BodyBudgetMiB, o.KeyBodyBudgetMiB)
			}
		}},
		{name: "body budget env", env: map[string]string{"GW_BODY_BUDGET_MIB": "1024", "GW_KEY_BODY_BUDGET_MIB": "128"},
			check: func(t *testing.T, o *Options) {
				if o.BodyBudgetMiB != 1024 || o.KeyBodyBudgetMiB != 128 {
					t.Errorf("body budget %d, per key %d", o.BodyBudgetMiB, o.KeyBodyBudgetMiB)
				}
			}},
		{name: "body budget of nothing", args: []string{"--body-budget-mib", "0"}, wantErr: "--body-budget-mib"},
		{name: "pprof off by default", check: func(t *testing.T, o *Options) {
			if o.Pprof {
				t.Error("pprof on without --pprof")
			}
		}},
		{name: "pprof flag", args: []string{"--pprof", "--metrics-addr", "127.0.0.1:0"}, check: func(t *testing.T, o *Options) {
			if !o.Pprof {
				t.Error("--pprof not taken")
			}
		}},
		{name: "pprof env", env: map[string]string{"GW_PPROF": "true", "GW_METRICS_ADDR": "127.0.0.1:0"}, check: func(t *testing.T, o *Options) {
			if !o.Pprof {
				t.Error("GW_PPROF not taken")
			}
		}},
		{name: "pprof without a metrics address", args: []string{"--pprof"}, wantErr: "--metrics-addr"},
		{name: "mcp timeout", env: map[string]string{"GW_MCP_TIMEOUT": "3s"}, check: func(t *testing.T, o *Options) {
			if o.MCPTimeout != 3*time.Second {
				t.Errorf("GW_MCP_TIMEOUT not taken: %s", o.MCPTimeout)
			}
		}},
		{name: "mcp timeout of nothing", args: []string{"--mcp-timeout", "0s"}, wantErr: "--mcp-timeout"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			f, _, _ := cmdtest.Factory()
			var got *Options
			cmd := NewCmd(f, func(_ context.Context, o *Options) error { got = o; return nil })
			cmd.SetArgs(c.args)
			cmd.SetOut(&bytes.Buffer{})
			cmd.SetErr(&bytes.Buffer{})
			err := cmd.Execute()
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, got)
		})
	}
}
