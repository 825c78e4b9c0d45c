package egress

import (
	"context"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// fallbackDelay is how long the first address family has before the other
// is tried in parallel (RFC 8305's Happy Eyeballs, as net.Dialer does).
const fallbackDelay = 300 * time.Millisecond

// Dialer makes connections the policy allows, and no other: it resolves
// names itself (with the policy's resolver), refuses a name any of whose
// addresses the policy refuses, dials the addresses it checked, and checks
// again, in the socket's Control hook, the address each socket actually
// connects to. So a name that resolved to an allowed address when it was
// saved and resolves to a refused one now (DNS rebinding) is refused, and
// nothing reaches a refused address whatever resolved it.
type Dialer struct {
	policy func() Policy
	net    net.Dialer
}

// NewDialer returns a dialer that checks every connection against the
// policy policy returns at that moment (it may change as the instance's
// setting does).
func NewDialer(policy func() Policy) *Dialer {
	d := &Dialer{policy: policy}
	d.net = net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: d.control}
	return d
}

// DialContext connects to address (host:port) on network (tcp, tcp4,
// tcp6), as http.Transport's DialContext.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	p := d.policy()
	addrs, resolved, err := p.resolve(ctx, host)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	addrs = forNetwork(network, addrs)
	if len(addrs) == 0 {
		return nil, &net.OpError{Op: "dial", Net: network, Err: &net.AddrError{Err: "no suitable address", Addr: host}}
	}
	if err := p.checkAll(host, addrs, resolved); err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	return d.dialAddrs(ctx, network, addrs, port)
}

// control refuses a socket about to connect to an address the policy
// refuses: the last word, on the very address dialled.
func (d *Dialer) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return err
	}
	if c := d.policy().Check(ap.Addr()); c != 0 {
		return &Refusal{Host: ap.Addr().String(), Addr: ap.Addr(), Class: c}
	}
	return nil
}

func forNetwork(network string, addrs []netip.Addr) []netip.Addr {
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		a = a.Unmap()
		switch {
		case network == "tcp4" && !a.Is4(), network == "tcp6" && !a.Is6():
			continue
		}
		out = append(out, a)
	}
	return out
}

// dialAddrs tries the addresses of the first one's family in turn, and,
// if they have not connected within fallbackDelay (or failed), those of
// the other family in parallel; the first connection wins.
func (d *Dialer) dialAddrs(ctx context.Context, network string, addrs []netip.Addr, port string) (net.Conn, error) {
	var primary, fallback []netip.Addr
	for _, a := range addrs {
		if a.Is4() == addrs[0].Is4() {
			primary = append(primary, a)
		} else {
			fallback = append(fallback, a)
		}
	}
	if len(fallback) == 0 {
		return d.dialSerial(ctx, network, primary, port)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		conn net.Conn
		err  error
	}
	results := make(chan result, 2)
	start := func(list []netip.Addr) {
		go func() {
			c, err := d.dialSerial(ctx, network, list, port)
			results <- result{c, err}
		}()
	}
	start(primary)
	timer := time.NewTimer(fallbackDelay)
	defer timer.Stop()
	running, fellBack := 1, false
	var firstErr error
	for {
		select {
		case <-timer.C:
			if !fellBack {
				fellBack, running = true, running+1
				start(fallback)
			}
		case r := <-results:
			running--
			if r.err == nil {
				if running > 0 {
					// The other attempt is cancelled; a connection it
					// made all the same is closed.
					go func() {
						if late := <-results; late.conn != nil {
							late.conn.Close()
						}
					}()
				}
				return r.conn, nil
			}
			if firstErr == nil {
				firstErr = r.err
			}
			if !fellBack {
				fellBack, running = true, running+1
				start(fallback)
			}
			if running == 0 {
				return nil, firstErr
			}
		}
	}
}

func (d *Dialer) dialSerial(ctx context.Context, network string, addrs []netip.Addr, port string) (net.Conn, error) {
	var firstErr error
	for _, a := range addrs {
		c, err := d.net.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, firstErr
}
