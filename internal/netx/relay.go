package netx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Relay is a TCP relay on loopback that emulates the link a Dialer
// emulates, for clients that cannot use the Dialer (a Python, Java or Node
// program, pgbench, curl): the client connects to Addr, and for each
// connection the relay dials the target and passes bytes untouched both
// ways (TLS stays end to end), through the same delaying conn as the
// Dialer's (delayConn).
//
// The link, as the client sees it:
//   - the connect: the kernel completes the client's connect to the relay
//     at once, so the one RTT of the emulated connect cannot be spent
//     there; the relay spends it on the first bytes each way instead. It
//     dials the target at its accept (the server sees the connection when
//     it would through the Dialer); the server's bytes reach the client no
//     earlier than two RTTs after the relay's connect (delayConn's floor:
//     the connect's and their own), and what the client writes before it
//     has heard from the server leaves one RTT after it was written, then
//     takes RTT/2 (delayConn's early): the client did that work one RTT
//     early, its connect having returned at once. So a client's first
//     exchange ends when it does through the Dialer (connect + first
//     exchange: 2 RTT plus both sides' time, whoever speaks first), but its
//     tcp phase is the loopback's and the connect's RTT shows in the first
//     exchange.
//   - each direction delivers RTT/2 after the bytes were sent, in order,
//     with at most maxInFlight bytes in flight each way.
//   - a FIN (half-close) and a RST pass on RTT/2 after the bytes before
//     them, each way: a PostgreSQL TLS connection that ends in a reset and
//     a plain one that leaves TIME_WAIT leave the client's socket as they
//     would without the relay. The relay's own socket to the target is the
//     one in TIME_WAIT when the relay closes first, which is why it dials
//     from the Dialer's source addresses.
//
// A target the relay cannot dial resets the client's connection (the
// client saw its connect succeed); Err says why, Failed how often.
//
// Use: one relay per target and RTT, given the dialer Go's connections of
// the variant use, and the client given Addr in place of the target's
// host:port (its TLS must still verify the target's name: libpq's
// hostaddr=, a client's SNI setting):
//
//	r, err := netx.StartRelay(ctx, "127.0.0.1:5432", dialer.WithRTT(44*time.Millisecond))
//	if err != nil { ... }
//	defer r.Close()
//	... the client connects to r.Addr() ...
//	if err := r.Err(); err != nil { ... the relay could not reach the target ... }
//
// Each relayed connection holds four goroutines (two at RTT 0) and up to
// maxInFlight bytes each way.
type Relay struct {
	ln     net.Listener
	target string
	d      *Dialer // dials without delay: dialTCP
	rtt    time.Duration

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the accept loop and every pair

	mu     sync.Mutex
	err    error
	failed atomic.Int64 // connections whose target the relay could not dial
}

// StartRelay listens on a free port of loopback (::1 for an IPv6 target,
// 127.0.0.1 otherwise) and relays every connection to target (host:port)
// over the link d emulates: d.RTT (the relay delays, d is not asked to)
// and d's source addresses, bind address and network namespace for the
// relay's dial. A d that dials through a tunnel is refused. ctx, once
// done, stops the relay as Close does; Close must still be called.
func StartRelay(ctx context.Context, target string, d *Dialer) (*Relay, error) {
	if d == nil {
		d = &Dialer{}
	}
	if d.Via != nil {
		return nil, errors.New("the relay dials TCP only: a tunnel (--via) carries its own RTT")
	}
	host := "127.0.0.1"
	if ap, err := netip.ParseAddrPort(target); err == nil && ap.Addr().Is6() && !ap.Addr().Is4In6() {
		host = "::1"
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, err
	}
	r := &Relay{ln: ln, target: target, d: d, rtt: d.RTT}
	r.ctx, r.cancel = context.WithCancel(ctx)
	context.AfterFunc(r.ctx, func() { ln.Close() })
	r.wg.Add(1)
	go r.accept()
	return r, nil
}

// RelayNote says, for a result file, how a run emulates an RTT for the
// connections of a client stack other than Go's.
func RelayNote(rtt time.Duration) string {
	return fmt.Sprintf("rtt %s for client stacks other than Go's: their connections go through tlsbench's relay on loopback, which passes the bytes untouched (TLS stays end to end between the stack and the server) over the link the dialer emulates; the stack's connect returns at once and the connect's RTT comes with its first exchange, so a connection takes as long as through the dialer; the relay's CPU is tlsbench's, not in the stack's client CPU",
		rttLabel(rtt))
}

// Addr is the relay's address (host:port) for the client to connect to.
func (r *Relay) Addr() string { return r.ln.Addr().String() }

// Err is the first error dialing the target, nil if every dial succeeded.
func (r *Relay) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Failed counts the connections the relay reset because it could not dial
// the target: a caller that takes the difference around a run of its own
// knows how many of that run's connections failed in their connect.
func (r *Relay) Failed() int64 { return r.failed.Load() }

func (r *Relay) fail(err error) {
	r.failed.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

// Close stops the listener, resets every relayed connection both ways and
// waits for the relay's goroutines (up to 1.5 RTT: a delivery on its way
// ends first).
func (r *Relay) Close() error {
	r.cancel()
	r.wg.Wait()
	return nil
}

func (r *Relay) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			if r.ctx.Err() != nil {
				return
			}
			// Out of descriptors, say: wait for some to close rather than
			// spin; the client's connect waits in the backlog.
			if !clock.Sleep(time.Now().Add(10*time.Millisecond), r.ctx.Done()) {
				return
			}
			continue
		}
		r.wg.Add(1)
		go r.serve(c.(*net.TCPConn))
	}
}

// serve relays one connection.
func (r *Relay) serve(client *net.TCPConn) {
	defer r.wg.Done()
	defer client.Close()
	stopClient := context.AfterFunc(r.ctx, func() { resetTCP(client) })
	defer stopClient()

	raw, _, connected, err := r.d.dialTCP(r.ctx, r.target)
	if err != nil {
		if r.ctx.Err() == nil {
			r.fail(err)
		}
		resetTCP(client)
		return
	}
	tcp, _ := raw.(*net.TCPConn)
	var server net.Conn = raw
	var dc *delayConn
	if rtt := r.rtt; rtt > 0 {
		// The emulated SYN-ACK comes one RTT after the kernel's: the
		// server's first bytes are heard no earlier than one RTT after
		// it (delayConn's floor), and what the client wrote before them
		// leaves one RTT after it was written (early).
		dc = newDelayConn(raw, rtt, connected.Add(rtt))
		dc.early = rtt
		server = dc
	}
	stopServer := context.AfterFunc(r.ctx, func() {
		if tcp != nil {
			tcp.SetLinger(0)
		}
		if dc != nil {
			dc.Close() // wakes a Read waiting for a delivery
		}
		raw.Close()
	})
	defer stopServer()

	done := make(chan struct{})
	go func() {
		defer close(done)
		// The server's reset, if any, reaches the client through the
		// other direction, after what the server sent before it.
		pass(server, client, nil)
	}()
	pass(client, server, server)
	<-done
	if dc != nil {
		dc.Close() // after a FIN or RST still due, the socket closes
		dc.running.Wait()
	}
	raw.Close()
}

// pass copies src to dst until src ends, then ends dst the same way: a FIN
// with a FIN (CloseWrite), anything else (a reset, the relay's Close) with
// a RST. If dst fails first (its peer reset it), the reset goes on to
// resetOnFail, if set.
func pass(dst, src, resetOnFail net.Conn) {
	buf := make([]byte, 32<<10) // two TLS records
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				if resetOnFail != nil {
					reset(resetOnFail)
				}
				return
			}
		}
		if errors.Is(err, io.EOF) {
			if h, ok := dst.(interface{ CloseWrite() error }); ok {
				h.CloseWrite()
			}
			return
		}
		if err != nil {
			reset(dst)
			return
		}
	}
}

// reset sends a RST on c: at once on a socket, after the bytes in flight on
// an emulated link.
func reset(c net.Conn) {
	switch c := c.(type) {
	case *delayConn:
		c.reset()
	case *net.TCPConn:
		resetTCP(c)
	default:
		c.Close()
	}
}

// resetTCP closes c with a RST (SO_LINGER 0).
func resetTCP(c *net.TCPConn) {
	c.SetLinger(0)
	c.Close()
}
