package netx

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Dialer opens timed connections. The zero value dials with the kernel's
// choice of source address.
type Dialer struct {
	// Sources, when set, are the local addresses connections to loopback
	// targets are bound to, in turn (see LoopbackSources).
	Sources []netip.Addr
	// Bind, when valid, is the one local address every connection is
	// bound to, whatever the target (--source ADDR).
	Bind netip.Addr
	// RTT, when set, is a round-trip time emulated in user space on every
	// connection (see WithRTT): the connect takes one RTT more and each
	// direction delivers RTT/2 late.
	RTT time.Duration
	// Via, when set, opens every connection through a tunnel (an SSH
	// connection) instead of TCP; the tunnel's own transport carries any
	// RTT, so RTT and Sources do not apply.
	Via Tunnel
	// Netns, when set, is the network namespace (/run/netns/NAME) whose
	// network the connections' sockets are made in: a VPN's client side.
	Netns string
	next  atomic.Uint64
}

// Tunnel carries connections to their target over a transport of its own,
// as `ssh -L` does.
type Tunnel interface {
	// Open opens a connection to addr through the tunnel and returns it
	// with the client turns (round trips) the opening took.
	Open(ctx context.Context, addr string) (net.Conn, int, error)
}

// WithRTT returns a dialer like d (same Sources) that emulates rtt, or d
// itself when it already does.
func (d *Dialer) WithRTT(rtt time.Duration) *Dialer {
	if rtt == d.RTT {
		return d
	}
	return &Dialer{Sources: d.Sources, Bind: d.Bind, RTT: rtt, Via: d.Via, Netns: d.Netns}
}

// LoopbackSources returns n addresses 127.0.1.1, 127.0.1.2, ...: every one
// of them brings its own ~28,000 ephemeral ports, so a connect loop at
// thousands of connections per second does not exhaust them with sockets in
// TIME_WAIT.
func LoopbackSources(n int) []netip.Addr {
	out := make([]netip.Addr, n)
	for i := range out {
		out[i] = netip.AddrFrom4([4]byte{127, 0, 1 + byte(i/250), 1 + byte(i%250)})
	}
	return out
}

// Dial opens a TCP connection to addr and times it as the tcp phase.
func (d *Dialer) Dial(ctx context.Context, addr string) (*Conn, error) {
	if d.Via != nil {
		start := time.Now()
		raw, turns, err := d.Via.Open(ctx, addr)
		if err != nil {
			return nil, err
		}
		// The far end connects to addr before it confirms the channel, so
		// a server that speaks first has spoken by then: the client owes
		// no word.
		return openedConn(raw, Phase{Name: PhaseTunnel, Start: start, RoundTrips: turns}, time.Now(), false), nil
	}
	raw, start, connected, err := d.dialTCP(ctx, addr)
	if err != nil {
		return nil, err
	}
	if d.RTT > 0 {
		// The kernel's connect took the loopback's round trip; the
		// emulated link's SYN-ACK comes one RTT later. The delay layer
		// sits below the counting Conn, which sees what a real link would
		// hand it.
		if !clock.Sleep(connected.Add(d.RTT), ctx.Done()) {
			raw.Close()
			return nil, ctx.Err()
		}
		connected = time.Now()
		raw = newDelayConn(raw, d.RTT, connected)
	}
	return newConn(raw, start, connected), nil
}

// dialTCP opens a TCP connection to addr from d's source address, in d's
// network namespace, and says when the connect began (the SYN left) and
// when the kernel's connect ended (the SYN-ACK arrived): no RTT yet.
func (d *Dialer) dialTCP(ctx context.Context, addr string) (raw net.Conn, start, connected time.Time, err error) {
	nd := net.Dialer{}
	if src, ok := d.source(addr); ok {
		if ap, err := netip.ParseAddrPort(addr); err == nil && ap.Addr().Unmap().Is4() != src.Unmap().Is4() {
			return nil, time.Time{}, time.Time{}, &SourceFamilyError{Source: src, Addr: addr}
		}
		nd.LocalAddr = &net.TCPAddr{IP: src.AsSlice()}
		if src.Is4() {
			nd.Control = bindNoPort
		}
	}
	// The tcp phase starts where the SYN leaves, at connect(2), as a
	// capture sees it: making and binding the socket before it is the
	// client's own setup, not the handshake's.
	start = time.Now()
	bind := nd.Control
	nd.Control = func(network, address string, rc syscall.RawConn) error {
		if bind != nil {
			if err := bind(network, address, rc); err != nil {
				return err
			}
		}
		start = time.Now()
		return nil
	}
	if d.Netns != "" {
		err = InNetns(d.Netns, func() (err error) {
			raw, err = nd.DialContext(ctx, "tcp", addr)
			return err
		})
	} else {
		raw, err = nd.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, time.Time{}, time.Time{}, err
	}
	return raw, start, synAcked(raw, start, time.Now()), nil
}

// SourceFamilyError is a source address to bind that cannot reach the
// target: one is IPv4, the other IPv6 (the kernel says only "no suitable
// address found").
type SourceFamilyError struct {
	Source netip.Addr
	Addr   string
}

func (e *SourceFamilyError) Error() string {
	from, to := "IPv4", "IPv6"
	if !e.Source.Unmap().Is4() {
		from, to = to, from
	}
	return fmt.Sprintf("the source address %s is %s and %s is %s", e.Source, from, e.Addr, to)
}

// source picks the address to bind: Bind, or the next of Sources if the
// target is IPv4 loopback.
func (d *Dialer) source(addr string) (netip.Addr, bool) {
	if d.Bind.IsValid() {
		return d.Bind, true
	}
	if len(d.Sources) == 0 {
		return netip.Addr{}, false
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().Is4() || !ap.Addr().IsLoopback() {
		return netip.Addr{}, false
	}
	i := d.next.Add(1)
	return d.Sources[i%uint64(len(d.Sources))], true
}

// bindNoPort defers the choice of source port from bind to connect, so the
// kernel picks a port free for this destination rather than one free for
// every destination (IP_BIND_ADDRESS_NO_PORT).
func bindNoPort(network, address string, rc syscall.RawConn) error {
	var serr error
	err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1)
	})
	if err != nil {
		return err
	}
	return serr
}

// Handshake runs a TLS client handshake over c as the tls-handshake phase,
// noting on c whether the server asked for a client certificate.
func Handshake(ctx context.Context, c *Conn, cfg *tls.Config) (*tls.Conn, error) {
	c.Mark(PhaseTLSHandshake)
	if cfg != nil && cfg.GetClientCertificate != nil {
		// Only then: no closure for a connection without a certificate.
		cfg = ClientCertConfig(cfg, func() *Conn { return c })
	}
	tc := tls.Client(c, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, err
	}
	return tc, nil
}

// RTTNote says, for a result file, how the dialer emulates its RTT; "" when
// it does not.
func (d *Dialer) RTTNote() string {
	if d.RTT <= 0 {
		return ""
	}
	return fmt.Sprintf("rtt %s: emulated in user space by tlsbench's dialer (no tc netem): the connect is held one RTT after the kernel's returns, and each direction's bytes are delivered RTT/2 after they were sent (timestamped chunks, one goroutine per direction, timed by a 1 ns-slack ppoll thread; up to %d MiB in flight each way, no loss, no bandwidth limit); loopback's own latency adds to it, and client CPU includes the emulation's",
		rttLabel(d.RTT), maxInFlight>>20)
}

// rttLabel writes an RTT as variant IDs show it (plan.RTTLabel): 44ms,
// 1.5ms, 500us.
func rttLabel(rtt time.Duration) string {
	return strings.ReplaceAll(rtt.String(), "µ", "u")
}

// PortNote says, for a result file, how a run avoids port exhaustion.
func (d *Dialer) PortNote() string {
	if d.Bind.IsValid() {
		return fmt.Sprintf("ephemeral ports: every connection comes from %s (--source), with the whole ephemeral port range for each server address", d.Bind)
	}
	if len(d.Sources) == 0 {
		return "ephemeral ports: the kernel picks the source address (--source spread spreads connections to a loopback server over 64 source addresses if a long connect run exhausts the ports)"
	}
	return fmt.Sprintf("ephemeral ports: connections to 127.0.0.0/8 are spread over %d source addresses (%s-%s, IP_BIND_ADDRESS_NO_PORT), each with the whole ephemeral port range, so TIME_WAIT cannot exhaust them",
		len(d.Sources), d.Sources[0], d.Sources[len(d.Sources)-1])
}

// synAcked is when the SYN-ACK arrived, as a capture sees it: the kernel's
// first round-trip sample (TCP_INFO's rtt, in microseconds, right after
// the handshake) after the connect began; the wake-up of the goroutine
// that waited for it belongs to what the client does next. now where the
// kernel does not say.
func synAcked(c net.Conn, start, now time.Time) time.Time {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return now
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return now
	}
	var rtt time.Duration
	if rc.Control(func(fd uintptr) {
		if info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
			rtt = time.Duration(info.Rtt) * time.Microsecond
		}
	}) != nil || rtt <= 0 {
		return now
	}
	if t := start.Add(rtt); t.Before(now) {
		return t
	}
	return now
}
