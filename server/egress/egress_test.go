package egress_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gw-gateway/gw/server/egress"
	"github.com/gw-gateway/gw/server/egress/egresstest"
)

// resolver is the names the tests use; nothing is looked up for real.
func resolver() *egresstest.Resolver {
	return egresstest.NewResolver().
		Set("169.254.169.254.nip.io", "169.254.169.254").
		Set("a9fea9fe.nip.io", "::ffff:169.254.169.254").
		Set("api.openai.com", "162.159.140.245", "2606:4700::6810:1").
		Set("mixed.example", "8.8.8.8", "169.254.169.254").
		Set("llm.internal", "10.20.30.40").
		Set("ollama.lan", "192.168.1.20")
}

// refusedAs is the class a URL is refused as; 0 allowed, -1 an unreadable
// host.
func refusedAs(t *testing.T, p egress.Policy, raw string) egress.Class {
	t.Helper()
	err := egress.CheckURL(context.Background(), p, raw)
	var r *egress.Refusal
	switch {
	case err == nil:
		return 0
	case errors.As(err, &r):
		if !strings.Contains(err.Error(), r.Class.String()) {
			t.Errorf("%s: the refusal %q does not name its class", raw, err)
		}
		return r.Class
	}
	return -1
}

// TestCheckURLAddressForms is docs/security.md's SSRF table: every form
// of a refused address, by default and with --egress-deny-private.
func TestCheckURLAddressForms(t *testing.T) {
	const invalid = egress.Class(-1)
	cases := []struct {
		url              string
		byDefault, strct egress.Class // strct: with --egress-deny-private
	}{
		// Cloud metadata services, by address and by name.
		{"http://169.254.169.254/latest/meta-data/", egress.Metadata, egress.Metadata},
		{"http://169.254.170.2/v2/credentials", egress.Metadata, egress.Metadata},
		{"http://[fd00:ec2::254]/latest/meta-data/", egress.Metadata, egress.Metadata},
		{"http://100.100.100.200/latest/meta-data/", egress.Metadata, egress.Metadata},
		{"http://metadata.google.internal/v1", egress.Metadata, egress.Metadata},
		{"http://METADATA.Google.Internal./v1", egress.Metadata, egress.Metadata},
		{"http://metadata.goog/computeMetadata/v1/", egress.Metadata, egress.Metadata},
		{"http://metadata/computeMetadata/v1/", egress.Metadata, egress.Metadata},
		{"http://instance-data.ec2.internal/latest/", egress.Metadata, egress.Metadata},
		// Every encoding of 169.254.169.254.
		{"http://[::ffff:169.254.169.254]/v1", egress.Metadata, egress.Metadata},
		{"http://[::ffff:a9fe:a9fe]/v1", egress.Metadata, egress.Metadata},
		{"http://[::a9fe:a9fe]/v1", egress.Metadata, egress.Metadata},
		{"http://[::ffff:0:a9fe:a9fe]/v1", egress.Metadata, egress.Metadata},
		{"http://[64:ff9b::a9fe:a9fe]/v1", egress.Metadata, egress.Metadata},
		{"http://[2002:a9fe:a9fe::1]/v1", egress.Metadata, egress.Metadata},
		{"http://2852039166/v1", egress.Metadata, egress.Metadata},
		{"http://0251.0376.0251.0376/v1", egress.Metadata, egress.Metadata},
		{"http://0xa9fea9fe/v1", egress.Metadata, egress.Metadata},
		{"http://0xA9.0xFE.0xA9.0xFE/v1", egress.Metadata, egress.Metadata},
		{"http://169.254.43518/v1", egress.Metadata, egress.Metadata},
		{"http://169.16689662/v1", egress.Metadata, egress.Metadata},
		{"http://169.254.169.254./v1", egress.Metadata, egress.Metadata},
		{"http://１６９.２５４.１６９.２５４/v1", egress.Metadata, egress.Metadata},
		{"http://169.254.169.254.nip.io/v1", egress.Metadata, egress.Metadata},
		{"http://a9fea9fe.nip.io/v1", egress.Metadata, egress.Metadata},
		{"http://mixed.example/v1", egress.Metadata, egress.Metadata},
		// Link-local and unspecified.
		{"http://169.254.1.1/v1", egress.LinkLocal, egress.LinkLocal},
		{"http://[fe80::1]/v1", egress.LinkLocal, egress.LinkLocal},
		{"http://[fe80::1%25eth0]/v1", egress.LinkLocal, egress.LinkLocal},
		{"http://0.0.0.0/v1", egress.Unspecified, egress.Unspecified},
		{"http://0/v1", egress.Unspecified, egress.Unspecified},
		{"http://[::]/v1", egress.Unspecified, egress.Unspecified},
		{"http://[::ffff:0.0.0.0]/v1", egress.Unspecified, egress.Unspecified},
		// Loopback and private: reachable unless the operator says not.
		{"http://127.0.0.1:8000/v1", 0, egress.Loopback},
		{"http://2130706433/v1", 0, egress.Loopback},
		{"http://localhost:11434/v1", 0, egress.Loopback},
		{"http://vllm.localhost/v1", 0, egress.Loopback},
		{"http://[::1]/v1", 0, egress.Loopback},
		{"http://[::ffff:127.0.0.1]/v1", 0, egress.Loopback},
		{"http://10.0.0.1/v1", 0, egress.Private},
		{"http://167772161/v1", 0, egress.Private},
		{"http://[fd00::1]/v1", 0, egress.Private},
		{"http://172.16.0.1/v1", 0, egress.Private},
		{"http://192.168.1.10/v1", 0, egress.Private},
		{"http://100.64.0.1/v1", 0, egress.Private},
		{"http://[64:ff9b::a00:1]/v1", 0, egress.Private},
		{"http://llm.internal/v1", 0, egress.Private},
		{"http://ollama.lan:11434/v1", 0, egress.Private},
		// Public, and names that do not resolve here (the dialer checks
		// them where they do).
		{"https://api.openai.com/v1", 0, 0},
		{"https://8.8.8.8/v1", 0, 0},
		{"https://[2606:4700::6810:1]/v1", 0, 0},
		{"https://nowhere.example/v1", 0, 0},
		// Hosts no dialer reads the same way twice.
		{"http://1.2.3.4.5/v1", invalid, invalid},
		{"http://08.1.1.1/v1", invalid, invalid},
		{"http://4294967296/v1", invalid, invalid},
		{"http://[fe80::zz]/v1", invalid, invalid},
		{"http://%31%36%39.254.169.254/v1", invalid, invalid}, // Go refuses escaped ASCII in a host
	}
	for _, c := range cases {
		t.Run(c.url, func(t *testing.T) {
			p := egress.Policy{Resolver: resolver()}
			if got := refusedAs(t, p, c.url); got != c.byDefault {
				t.Errorf("by default: %v, want %v", got, c.byDefault)
			}
			p.DenyPrivate = true
			if got := refusedAs(t, p, c.url); got != c.strct {
				t.Errorf("with --egress-deny-private: %v, want %v", got, c.strct)
			}
		})
	}
}

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// TestPolicyInstanceRules: the operator's deny refuses what it names; an
// allow wins over the operator's deny for what it names; the built-in
// ranges are lifted only by an allow of the very range.
func TestPolicyInstanceRules(t *testing.T) {
	cases := []struct {
		name        string
		policy      egress.Policy
		addr        string
		want        egress.Class
		wantMessage string
	}{
		{"a denied public range", egress.Policy{Deny: prefixes("203.0.113.0/24")}, "203.0.113.7", egress.Denied, ""},
		{"outside the denied range", egress.Policy{Deny: prefixes("203.0.113.0/24")}, "203.0.114.7", 0, ""},
		{"a denied private range is named private", egress.Policy{Deny: prefixes("10.0.0.0/8")}, "10.1.2.3", egress.Private,
			"private address (denied by the instance's egress policy)"},
		{"an allow inside the flag's deny", egress.Policy{DenyPrivate: true, Allow: prefixes("10.1.0.0/16")}, "10.1.2.3", 0, ""},
		{"only what the allow names", egress.Policy{DenyPrivate: true, Allow: prefixes("10.1.0.0/16")}, "10.2.0.1", egress.Private, ""},
		{"an allow inside the setting's deny", egress.Policy{Deny: prefixes("0.0.0.0/0"), Allow: prefixes("198.51.100.0/24")}, "198.51.100.9", 0, ""},
		{"allowing everything lifts no built-in range", egress.Policy{Allow: prefixes("0.0.0.0/0", "::/0")}, "169.254.169.254", egress.Metadata, ""},
		{"allowing link-local keeps the metadata address", egress.Policy{Allow: prefixes("169.254.0.0/16")}, "169.254.169.254", egress.Metadata, ""},
		{"allowing link-local opens link-local", egress.Policy{Allow: prefixes("169.254.0.0/16")}, "169.254.1.1", 0, ""},
		{"the exact metadata range lifts it", egress.Policy{Allow: prefixes("169.254.169.254/32")}, "169.254.169.254", 0, ""},
		{"the exact metadata range opens nothing else", egress.Policy{Allow: prefixes("169.254.169.254/32")}, "169.254.169.253", egress.LinkLocal, ""},
		{"the exact IPv6 metadata range", egress.Policy{Allow: prefixes("fd00:ec2::254/128")}, "fd00:ec2::254", 0, ""},
		{"a mapped address meets the IPv4 rules", egress.Policy{Deny: prefixes("203.0.113.0/24")}, "::ffff:203.0.113.7", egress.Denied, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := c.policy.Check(netip.MustParseAddr(c.addr))
			if got != c.want {
				t.Fatalf("Check(%s) = %v, want %v", c.addr, got, c.want)
			}
			if c.wantMessage != "" && got.String() != c.wantMessage {
				t.Errorf("class %q, want %q", got, c.wantMessage)
			}
		})
	}
}

func TestParseRange(t *testing.T) {
	cases := []struct{ in, want, problem string }{
		{"10.0.0.0/8", "10.0.0.0/8", ""},
		{"10.0.0.5", "10.0.0.5/32", ""},
		{"fd00::/8", "fd00::/8", ""},
		{"::1", "::1/128", ""},
		{"10.1.2.3/8", "", "the range is 10.0.0.0/8"},
		{"::ffff:169.254.169.254/128", "", "IPv4 form"},
		{"fe80::1%eth0", "", "CIDR range"},
		{"example.com", "", "CIDR range"},
		{"10.0.0.0/33", "", "CIDR range"},
	}
	for _, c := range cases {
		p, problem := egress.ParseRange(c.in)
		if c.problem != "" {
			if !strings.Contains(problem, c.problem) {
				t.Errorf("ParseRange(%q) problem %q, want it to say %q", c.in, problem, c.problem)
			}
			continue
		}
		if problem != "" || p.String() != c.want {
			t.Errorf("ParseRange(%q) = %s %q, want %s", c.in, p, problem, c.want)
		}
	}
}

// upstream is an HTTP server on 127.0.0.1 counting the connections it
// accepts.
func upstream(t *testing.T) (port string, conns *atomic.Int64) {
	t.Helper()
	conns = new(atomic.Int64)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return u.Port(), conns
}

func client(d *egress.Dialer) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

func get(c *http.Client, u string) (string, error) {
	resp, err := c.Get(u)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// TestDialerRefusesRebinding: a name that resolved to 127.0.0.1 when it
// was saved and resolves to the metadata service when dialled is refused,
// and no connection is made.
func TestDialerRefusesRebinding(t *testing.T) {
	port, conns := upstream(t)
	res := egresstest.NewResolver().Set("rebind.example", "127.0.0.1").Set("rebind.example", "169.254.169.254")
	p := egress.Policy{Resolver: res}
	target := "http://rebind.example:" + port + "/v1"
	if err := egress.CheckURL(context.Background(), p, target); err != nil {
		t.Fatalf("when saved: %v", err)
	}
	_, err := get(client(egress.NewDialer(func() egress.Policy { return p })), target)
	var r *egress.Refusal
	if !errors.As(err, &r) || r.Class != egress.Metadata || !r.Resolved {
		t.Fatalf("dial after rebinding: %v, want a refusal of the cloud metadata service", err)
	}
	if !strings.Contains(err.Error(), "rebind.example (resolves to 169.254.169.254): cloud metadata service") {
		t.Errorf("refusal %q", err)
	}
	if res.Asked("rebind.example") != 2 || conns.Load() != 0 {
		t.Errorf("lookups %d, connections %d; want 2 and 0", res.Asked("rebind.example"), conns.Load())
	}
}

// TestDialerConnects: an allowed name is dialled at the address the
// resolver gave (falling back from an address that refuses to the other
// family's); the policy in force at each dial decides, and the Control
// hook refuses a literal address on its own.
func TestDialerConnects(t *testing.T) {
	port, conns := upstream(t)
	// ::1 first: nothing listens there on this port, so the dialer falls
	// back to 127.0.0.1.
	res := egresstest.NewResolver().Set("llm.example", "::1", "127.0.0.1")
	var policy atomic.Pointer[egress.Policy]
	policy.Store(&egress.Policy{Resolver: res})
	c := client(egress.NewDialer(func() egress.Policy { return *policy.Load() }))
	body, err := get(c, "http://llm.example:"+port+"/v1")
	if err != nil || body != "ok" || conns.Load() != 1 {
		t.Fatalf("allowed name: %q %v, %d connections", body, err, conns.Load())
	}
	policy.Store(&egress.Policy{Resolver: res, DenyPrivate: true})
	for _, u := range []string{"http://llm.example:" + port + "/v1", "http://127.0.0.1:" + port + "/v1", "http://2130706433:" + port + "/v1"} {
		_, err = get(c, u)
		var r *egress.Refusal
		if !errors.As(err, &r) || r.Class != egress.Loopback {
			t.Errorf("%s under --egress-deny-private: %v, want a loopback refusal", u, err)
		}
	}
	// The Control hook checks the socket's own address with the policy
	// then in force: here it changed between the look-up and the connect.
	var calls atomic.Int64
	d := egress.NewDialer(func() egress.Policy {
		return egress.Policy{Resolver: res, DenyPrivate: calls.Add(1) > 1}
	})
	_, err = get(client(d), "http://127.0.0.1:"+port+"/v1")
	var r *egress.Refusal
	if !errors.As(err, &r) || r.Class != egress.Loopback || calls.Load() != 2 {
		t.Errorf("refused in Control: %v after %d policy reads", err, calls.Load())
	}
	if conns.Load() != 1 {
		t.Errorf("%d connections, want 1", conns.Load())
	}
}
