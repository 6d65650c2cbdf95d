package drivertest

import (
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Proxy relays every connection to its address on to a real server until
// it turns: from then on it misbehaves as its Misbehaviour says, on the
// connections open at the turn (at their next chunk either way) and on
// every new one. A server that answers a client's check correctly and
// goes wrong only later is a Proxy that turns after its first connection
// (TurnAfter).
type Proxy struct {
	Addr   string // where clients connect
	target string

	mode          atomic.Int32 // a Misbehaviour; Faithful until the turn
	clientStalled chan struct{}
	clientOnce    sync.Once
	done          chan struct{} // the test ended

	// TurnAfter's budget: whether the first connection ended, the bytes
	// of each later connection's setup, those sent to later ones past
	// their setup, and how many turn the proxy (0: never).
	firstEnded atomic.Bool
	skip       atomic.Int64
	later      atomic.Int64
	after      atomic.Int64
	afterMode  atomic.Int32
	conns      atomic.Int64
	// setup is what every connection is sent faithfully, turned or not
	// (KeepSetup).
	setup atomic.Int64
}

// link is one relayed connection: what the server sent it so far.
type link struct{ sent atomic.Int64 }

// Misbehaviour is what a Proxy does from its turn on.
type Misbehaviour int32

const (
	// Faithful relays both ways.
	Faithful Misbehaviour = iota
	// Silent holds what either side sends and keeps the connection open,
	// as a stopped (SIGSTOP) server does; the client's bytes are read and
	// dropped.
	Silent
	// Deaf reads nothing more from the client, so that the socket
	// buffers fill and the client's writes block, and sends nothing.
	Deaf
	// Trickle relays the server's answers one byte a second.
	Trickle
	// CloseMidAnswer sends half of the server's next answer (at least
	// one byte of it when it has two), then closes the connection.
	CloseMidAnswer
	// Garbage sends up to 64 MiB of random bytes at full speed in place
	// of the server's next answer, then closes the connection.
	Garbage
	// Reset resets the connection (TCP RST) at its next chunk either way:
	// a new connection at the client's first bytes.
	Reset
)

var misbehaviourNames = [...]string{"faithful", "silent", "deaf", "trickle", "close-mid-answer", "garbage", "reset"}

func (m Misbehaviour) String() string { return misbehaviourNames[m] }

// Misbehaviours are those of a Proxy that turned, for a test's table.
var Misbehaviours = []Misbehaviour{Silent, Deaf, Trickle, CloseMidAnswer, Garbage, Reset}

// proxyReadBuffer is the receive buffer of the proxy's sockets: small,
// so that a Deaf proxy's client finds the buffers full after a few MiB
// (the send buffer of a loopback socket grows to tcp_wmem's 4 MiB) and
// not after the 32 MiB a receive buffer can grow to.
const proxyReadBuffer = 64 << 10

// NewProxy starts a Proxy to the server at target on a new 127.0.0.1
// port; it stops when t ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	p := &Proxy{target: target, clientStalled: make(chan struct{}), done: make(chan struct{})}
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var err error
		rc.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, proxyReadBuffer)
		})
		return err
	}}
	p.Addr = listen(t, lc, p.serve)
	// Registered after listen's cleanup, so run before it: held relays
	// return, then listen closes the connections and waits for them.
	t.Cleanup(func() { close(p.done) })
	return p
}

// Turn makes the proxy misbehave as m from now on.
func (p *Proxy) Turn(m Misbehaviour) { p.mode.CompareAndSwap(int32(Faithful), int32(m)) }

// TurnAfter makes the proxy turn to m once its first connection (a run's
// check) has ended and the connections after it have been sent n bytes
// past the first setup bytes of each (their handshakes): n counts
// answers, so the turn comes after as many whatever the order in which
// the connections' handshakes and answers interleave.
func (p *Proxy) TurnAfter(m Misbehaviour, setup, n int64) {
	p.afterMode.Store(int32(m))
	p.skip.Store(setup)
	p.after.Store(n)
}

// KeepSetup makes the proxy relay faithfully, even once turned, what the
// server sends a connection until it has sent it n bytes: its setup (a
// handshake, a login). Turned, it is a server that takes connections and
// then hangs (a lock) or fails at their first operation.
func (p *Proxy) KeepSetup(n int64) { p.setup.Store(n) }

// Turned reports whether the proxy misbehaves.
func (p *Proxy) Turned() bool { return p.misbehaviour() != Faithful }

// Stall makes the proxy hold from now on whatever either side sends
// (Silent).
func (p *Proxy) Stall() { p.Turn(Silent) }

// StallClient makes the proxy hold from now on whatever a client sends,
// and go on relaying what the server sends.
func (p *Proxy) StallClient() { p.clientOnce.Do(func() { close(p.clientStalled) }) }

func (p *Proxy) misbehaviour() Misbehaviour { return Misbehaviour(p.mode.Load()) }

// now is what the proxy does to l: Faithful during its setup.
func (p *Proxy) now(l *link) Misbehaviour {
	if l.sent.Load() < p.setup.Load() {
		return Faithful
	}
	return p.misbehaviour()
}

// serve relays one client connection c.
func (p *Proxy) serve(c net.Conn) {
	first := p.conns.Add(1) == 1
	l := new(link)
	if m := p.now(l); m == Silent || m == Deaf || m == Reset {
		// Nothing will reach the server: no connection to it.
		p.toServer(nil, c, l, p.done)
		return
	}
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	closed := make(chan struct{})
	var once sync.Once
	// Either direction ending ends both: no half-closed relays.
	end := func() {
		once.Do(func() {
			close(closed)
			c.Close()
			s.Close()
		})
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		p.toServer(s, c, l, closed)
		end()
	})
	p.toClient(c, s, l, closed, first)
	end()
	wg.Wait()
	if first {
		p.firstEnded.Store(true)
		p.count(0)
	}
}

// hold waits until the connection or the test ends.
func (p *Proxy) hold(closed <-chan struct{}) {
	select {
	case <-closed:
	case <-p.done:
	}
}

// toServer relays what the client c sends to the server s.
func (p *Proxy) toServer(s, c net.Conn, l *link, closed <-chan struct{}) {
	buf := make([]byte, 32<<10)
	for {
		switch p.now(l) {
		case Deaf:
			if s != nil {
				s.Close() // nothing will reach it
			}
			p.hold(closed)
			return
		}
		n, err := c.Read(buf)
		if n > 0 {
			select {
			case <-p.clientStalled:
				p.hold(closed)
				return
			default:
			}
			switch p.now(l) {
			case Silent, Deaf:
				continue // dropped: nobody is listening
			case Reset:
				reset(c)
				return
			}
			if _, err := s.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// toClient relays what the server s sends to the client c, misbehaving
// from the turn on.
func (p *Proxy) toClient(c, s net.Conn, l *link, closed <-chan struct{}, first bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := s.Read(buf)
		if n > 0 {
			if p.now(l) == Faithful {
				if _, err := c.Write(buf[:n]); err != nil {
					return
				}
				sent := l.sent.Add(int64(n))
				if !first {
					// Only what passes the link's setup counts.
					p.count(sent - max(sent-int64(n), p.skip.Load()))
				}
				continue
			}
			switch chunk := buf[:n]; p.now(l) {
			case Silent, Deaf:
				s.Close()
				p.hold(closed)
			case Trickle:
				for _, b := range chunk {
					select {
					case <-closed:
						return
					case <-p.done:
						return
					case <-time.After(time.Second):
					}
					if _, err := c.Write([]byte{b}); err != nil {
						return
					}
				}
				continue
			case CloseMidAnswer:
				c.Write(chunk[:len(chunk)/2])
			case Garbage:
				Endless(c, garbage, 0, 64<<20)
			case Reset:
				reset(c)
			}
			return
		}
		if err != nil {
			if m := p.now(l); m == Silent || m == Deaf {
				// The server was let go; the client is held by
				// toServer until it closes the connection (Silent)
				// or the test ends (Deaf).
				p.hold(closed)
			}
			return
		}
	}
}

// count adds n bytes sent to a connection after the first past its
// setup, and turns the proxy once TurnAfter's budget is spent.
func (p *Proxy) count(n int64) {
	if n <= 0 {
		return
	}
	later := p.later.Add(n)
	if after := p.after.Load(); after > 0 && p.firstEnded.Load() && later >= after {
		p.Turn(Misbehaviour(p.afterMode.Load()))
	}
}

// reset closes c with a TCP RST instead of a FIN.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

// garbage is what a Garbage proxy sends, over and over: random bytes, the
// same in every run.
var garbage = func() []byte {
	b := make([]byte, 4<<10)
	rand.NewChaCha8([32]byte{'h', 'o', 's', 't', 'i', 'l', 'e'}).Read(b)
	return b
}()
