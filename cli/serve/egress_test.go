package serve

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"testing"

	"github.com/gw-gateway/gw/cli/cmdutil/cmdtest"
)

// gw serve --egress-deny-private (or GW_EGRESS_DENY_PRIVATE) reaches the
// server's egress policy; off by default.
func TestServeEgressDenyPrivateFlag(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want bool
	}{
		{"off by default", nil, nil, false},
		{"flag", []string{"--egress-deny-private"}, nil, true},
		{"env", nil, map[string]string{"GW_EGRESS_DENY_PRIVATE": "true"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			f, _, _ := cmdtest.Factory()
			var got *Options
			cmd := NewCmd(f, func(_ context.Context, o *Options) error { got = o; return nil })
			// A data plane's configuration needs no database or key file.
			cmd.SetArgs(append([]string{"--role", "data-plane", "--control-plane-url", "http://cp:8080", "--token", "sk-cp-x"}, c.args...))
			cmd.SetOut(&bytes.Buffer{})
			cmd.SetErr(&bytes.Buffer{})
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			cfg, err := got.serverConfig(context.Background(), slog.New(slog.DiscardHandler), ln)
			if err != nil {
				t.Fatal(err)
			}
			if got.EgressDenyPrivate != c.want || cfg.Egress.DenyPrivate != c.want {
				t.Errorf("option %v, server config %v; want %v", got.EgressDenyPrivate, cfg.Egress.DenyPrivate, c.want)
			}
		})
	}
}
