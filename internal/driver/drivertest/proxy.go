package drivertest

import (
	"net"
	"sync"
	"testing"
)

// Proxy relays every connection to its address on to a real server until
// Stall; from then on it holds every byte either way and keeps the
// connections open, as a server that was stopped (SIGSTOP) does.
// StallClient holds only what the client sends.
type Proxy struct {
	Addr                       string // where clients connect
	stalled, clientStalled     chan struct{}
	stallOnce, clientStallOnce sync.Once
}

// NewProxy starts a Proxy to the server at target on a new 127.0.0.1
// port; it stops when t ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	p := &Proxy{stalled: make(chan struct{}), clientStalled: make(chan struct{})}
	done := make(chan struct{})
	p.Addr = Listen(t, func(c net.Conn) {
		s, err := net.Dial("tcp", target)
		if err != nil {
			return
		}
		defer s.Close()
		var wg sync.WaitGroup
		// Either direction ending ends both: no half-closed relays.
		wg.Go(func() {
			p.relay(c, s, p.stalled, done)
			c.Close()
			s.Close()
		})
		p.relay(s, c, p.clientStalled, done)
		c.Close()
		s.Close()
		wg.Wait()
	})
	// Registered after Listen's cleanup, so run before it: held relays
	// return, then Listen closes the connections and waits for them.
	t.Cleanup(func() { close(done) })
	return p
}

// Stall makes the proxy hold from now on whatever either side sends.
func (p *Proxy) Stall() {
	p.stallOnce.Do(func() { close(p.stalled) })
	p.StallClient()
}

// StallClient makes the proxy hold from now on whatever a client sends,
// and go on relaying what the server sends.
func (p *Proxy) StallClient() { p.clientStallOnce.Do(func() { close(p.clientStalled) }) }

// relay copies src to dst until either fails or, once stalled is closed,
// holds what it read until done.
func (p *Proxy) relay(dst, src net.Conn, stalled, done <-chan struct{}) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			select {
			case <-stalled:
				<-done
				return
			default:
			}
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
