package registry

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// Address ranges a reference written by a pull request author must never reach, beyond what netip's
// IsLoopback, IsPrivate, IsLinkLocal*, IsMulticast and IsUnspecified already say.
var refusedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),         // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),     // carrier-grade NAT (RFC 6598)
	netip.MustParsePrefix("192.0.0.0/24"),      // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),     // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),       // reserved, broadcast included
	netip.MustParsePrefix("fec0::/10"),         // deprecated site-local
	netip.MustParsePrefix("fd00:ec2::254/128"), // AWS metadata over IPv6 (also inside fc00::/7)
}

// Prefixes whose IPv6 addresses carry an IPv4 address that a gateway may reach on our behalf.
var embeddingPrefixes = []netip.Prefix{
	netip.MustParsePrefix("64:ff9b::/96"), // NAT64: the IPv4 address is the last 32 bits
}

// refusedReason says why addr must not be dialled, or "" when it may be.
func refusedReason(addr netip.Addr) string {
	addr = addr.Unmap()
	for _, p := range embeddingPrefixes {
		if p.Contains(addr) {
			b := addr.As16()
			if r := refusedReason(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})); r != "" {
				return r + " (embedded in a NAT64 address)"
			}
		}
	}
	switch {
	case addr.Is4() && addr == netip.AddrFrom4([4]byte{169, 254, 169, 254}), addr == netip.MustParseAddr("fd00:ec2::254"):
		return "a cloud metadata address"
	case addr.IsLoopback():
		return "a loopback address"
	case addr.IsUnspecified():
		return "an unspecified address"
	case addr.IsLinkLocalUnicast(), addr.IsLinkLocalMulticast():
		return "a link-local address"
	case addr.IsMulticast(), addr.IsInterfaceLocalMulticast():
		return "a multicast address"
	case addr.IsPrivate():
		return "a private address"
	}
	for _, p := range refusedPrefixes {
		if p.Contains(addr) {
			return "a reserved or internal address (" + p.String() + ")"
		}
	}
	return ""
}

// refusedError is returned when the guard will not connect. It is not temporary and unwraps to nothing, so no
// layer above retries it.
type refusedError struct{ msg string }

func (e *refusedError) Error() string { return e.msg }

// guardedDialer resolves on every dial, refuses internal addresses unless the host is allowed, and connects to
// one of the addresses it checked (never resolving twice, so a DNS answer cannot change between check and use).
type guardedDialer struct {
	allowed  hostSet
	resolver Resolver
	dial     func(ctx context.Context, network, addr string) (net.Conn, error)
}

func (d *guardedDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, &refusedError{fmt.Sprintf("refusing to dial %q: %v", addr, err)}
	}
	allowed := d.allowed.has(addr, port)
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		addrs = []netip.Addr{ip.WithZone("")}
	} else {
		ipNetwork := "ip"
		switch network {
		case "tcp4":
			ipNetwork = "ip4"
		case "tcp6":
			ipNetwork = "ip6"
		}
		addrs, err = d.resolver.LookupNetIP(ctx, ipNetwork, host)
		if err != nil {
			return nil, fmt.Errorf("resolving %s: %w", host, err)
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("resolving %s: no addresses", host)
		}
	}
	if !allowed {
		// One internal answer refuses them all: a mixed answer is how DNS rebinding starts.
		for _, a := range addrs {
			if why := refusedReason(a); why != "" {
				return nil, &refusedError{fmt.Sprintf("refusing to connect to %s: %s is %s (allow the host explicitly if it is a trusted registry)", host, a.Unmap(), why)}
			}
		}
	}
	var firstErr error
	for _, a := range addrs {
		conn, err := d.dial(ctx, network, net.JoinHostPort(a.Unmap().String(), port))
		if err == nil {
			return conn, nil
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
