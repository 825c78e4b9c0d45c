// Package egresstest resolves names for tests without a DNS query: nothing
// a test does may leave 127.0.0.1.
package egresstest

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"
)

// Resolver answers from its table; a name it lacks does not exist. Each
// name may have several answers, given in turn (the last one repeats), so
// a test can make a name change its address between two lookups, as DNS
// rebinding does.
type Resolver struct {
	mu      sync.Mutex
	answers map[string][][]netip.Addr
	asked   map[string]int
}

// NewResolver returns a resolver with no names.
func NewResolver() *Resolver {
	return &Resolver{answers: map[string][][]netip.Addr{}, asked: map[string]int{}}
}

// Set makes name resolve to addrs (each an address), after any answers
// set before.
func (r *Resolver) Set(name string, addrs ...string) *Resolver {
	r.mu.Lock()
	defer r.mu.Unlock()
	answer := make([]netip.Addr, len(addrs))
	for i, a := range addrs {
		answer[i] = netip.MustParseAddr(a)
	}
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	r.answers[name] = append(r.answers[name], answer)
	return r
}

// Asked is how many times name was looked up.
func (r *Resolver) Asked(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.asked[name]
}

// LookupNetIP implements egress.Resolver.
func (r *Resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	answers := r.answers[host]
	n := r.asked[host]
	r.asked[host]++
	if len(answers) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return answers[min(n, len(answers)-1)], nil
}
