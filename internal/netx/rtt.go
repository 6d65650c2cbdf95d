package netx

import (
	"cmp"
	"errors"
	"net"
	"os"
	"sync"
	"time"
)

// maxInFlight bounds the bytes the emulated link holds each way, like a TCP
// window: a writer blocks (and the inbound side stops reading the socket)
// when this much is in flight. At RTT r it caps throughput at
// maxInFlight/(r/2) each way.
const maxInFlight = 4 << 20

// chunk is what one Write (outbound) or one socket read (inbound) moved,
// with the time it reaches the other end of the emulated link. An
// outbound chunk without data may end the writer's side instead (end).
type chunk struct {
	data []byte
	due  time.Time
	end  linkEnd
}

// linkEnd is how the writer's side of the link ends: a FIN (CloseWrite) or
// a RST (reset), sent after the bytes written before it, at their pace.
type linkEnd int

const (
	endNone linkEnd = iota
	endFIN
	endRST
)

// delayConn emulates a link with a round-trip time in user space, below the
// counting Conn: what the client writes is queued with a due time RTT/2
// away and a goroutine hands it to the socket then; a second goroutine reads
// the socket as soon as bytes arrive and Read releases them RTT/2 after
// their arrival. Writes do not wait for the link (up to maxInFlight), order
// is kept, nothing is done per byte but one copy.
type delayConn struct {
	net.Conn // the socket: addresses; Read/Write/Close/deadlines are ours
	half     time.Duration

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change of state
	closed  bool
	linger  bool // closed with bytes still in flight: the forwarder closes the socket
	rdl     time.Time
	wdl     time.Time

	in      []chunk
	inBytes int
	inErr   error // the socket's read error, released like data
	inErrAt time.Time
	floor   time.Time // nothing arrives before this (see newDelayConn)
	heard   bool      // Read has returned bytes

	// early delays what is written before the first bytes are read, on
	// top of RTT/2: the relay's client, whose connect the kernel ended at
	// once rather than one RTT later, wrote them that much early (see
	// Relay).
	early time.Duration

	out      []chunk
	outBytes int // queued or being written
	outErr   error
	ended    linkEnd // the last end queued (CloseWrite, reset)

	running sync.WaitGroup // receive and forward
}

// newDelayConn wraps a socket whose emulated connect ends at connected. The
// client's final ACK leaves then and reaches the server RTT/2 later: a server
// that speaks first is heard one RTT after connected at the earliest.
func newDelayConn(raw net.Conn, rtt time.Duration, connected time.Time) *delayConn {
	c := &delayConn{Conn: raw, half: rtt / 2, changed: make(chan struct{}), floor: connected.Add(rtt)}
	c.running.Add(2)
	go c.receive()
	go c.forward()
	return c
}

// signal wakes everyone waiting for a change; c.mu is held.
func (c *delayConn) signal() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// wait releases c.mu until the state changes, due comes (if set) or the
// deadline dl passes (if set), and takes it again.
func (c *delayConn) wait(due, dl time.Time) {
	ch := c.changed
	c.mu.Unlock()
	defer c.mu.Lock()
	var at <-chan struct{}
	if !due.IsZero() {
		at = clock.At(due)
	}
	var timeout <-chan time.Time
	if !dl.IsZero() {
		t := time.NewTimer(time.Until(dl))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-ch:
	case <-at:
	case <-timeout:
	}
}

func passed(dl, now time.Time) bool { return !dl.IsZero() && !now.Before(dl) }

// Read returns the bytes that have crossed the emulated link.
func (c *delayConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if c.closed {
			return 0, net.ErrClosed
		}
		now := time.Now()
		if passed(c.rdl, now) {
			return 0, os.ErrDeadlineExceeded
		}
		var due time.Time
		switch {
		case len(c.in) > 0 && !now.Before(c.in[0].due):
			n := 0
			for len(c.in) > 0 && n < len(p) && !now.Before(c.in[0].due) {
				k := copy(p[n:], c.in[0].data)
				n += k
				c.inBytes -= k
				if k == len(c.in[0].data) {
					c.in[0] = chunk{}
					c.in = c.in[1:]
				} else {
					c.in[0].data = c.in[0].data[k:]
				}
			}
			c.heard = true
			c.signal() // room for the receiver
			return n, nil
		case len(c.in) > 0:
			due = c.in[0].due
		case c.inErr != nil:
			if !now.Before(c.inErrAt) {
				return 0, c.inErr
			}
			due = c.inErrAt
		}
		if len(p) == 0 {
			return 0, nil
		}
		c.wait(due, c.rdl)
	}
}

// receive reads the socket as soon as bytes arrive and stamps them.
func (c *delayConn) receive() {
	defer c.running.Done()
	buf := make([]byte, 64<<10)
	for {
		c.mu.Lock()
		for c.inBytes >= maxInFlight && !c.closed {
			c.wait(time.Time{}, time.Time{})
		}
		closed := c.closed
		c.mu.Unlock()
		if closed {
			return
		}
		n, err := c.Conn.Read(buf)
		due := time.Now().Add(c.half)
		if due.Before(c.floor) {
			due = c.floor
		}
		c.mu.Lock()
		if n > 0 {
			c.in = append(c.in, chunk{data: append([]byte(nil), buf[:n]...), due: due})
			c.inBytes += n
		}
		if err != nil {
			c.inErr, c.inErrAt = err, due
		}
		c.signal()
		c.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// Write queues p for the link and returns at once, unless maxInFlight bytes
// are already on their way.
func (c *delayConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		switch {
		case c.closed:
			return 0, net.ErrClosed
		case c.ended != endNone:
			return 0, errWriteEnded
		case c.outErr != nil:
			return 0, c.outErr
		case passed(c.wdl, time.Now()):
			return 0, os.ErrDeadlineExceeded
		}
		if c.outBytes < maxInFlight {
			break
		}
		c.wait(time.Time{}, c.wdl)
	}
	if len(p) == 0 {
		return 0, nil
	}
	c.out = append(c.out, chunk{data: append([]byte(nil), p...), due: c.outDue()})
	c.outBytes += len(p)
	c.signal()
	return len(p), nil
}

// outDue is when what is written now reaches the other end; c.mu is held.
func (c *delayConn) outDue() time.Time {
	if c.heard {
		return time.Now().Add(c.half)
	}
	return time.Now().Add(c.half + c.early)
}

// errWriteEnded is a Write after CloseWrite or reset, as the socket's
// would fail.
var errWriteEnded = errors.New("write after the link's end was sent")

// CloseWrite sends a FIN after the bytes written so far, RTT/2 from now
// as they go; reads go on. For a relay passing a peer's half-close on.
func (c *delayConn) CloseWrite() error { return c.end(endFIN) }

// reset sends a RST after the bytes written so far, RTT/2 from now (it may
// follow a FIN, as a socket closed with unread bytes sends one): the
// socket is closed with SO_LINGER 0 then. For a relay passing a peer's
// reset on.
func (c *delayConn) reset() error { return c.end(endRST) }

func (c *delayConn) end(e linkEnd) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return net.ErrClosed
	case c.ended >= e:
		return errWriteEnded
	}
	c.ended = e
	c.out = append(c.out, chunk{due: c.outDue(), end: e})
	c.signal()
	return nil
}

// forward hands queued bytes to the socket at their due time, and the
// FIN or RST that ends them.
func (c *delayConn) forward() {
	defer c.running.Done()
	var bufs net.Buffers
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		for len(c.out) == 0 && !c.closed {
			c.wait(time.Time{}, time.Time{})
		}
		if len(c.out) == 0 {
			// Closed with nothing in flight (any more).
			if c.linger {
				c.Conn.Close()
			}
			return
		}
		due := c.out[0].due
		if now := time.Now(); now.Before(due) {
			c.mu.Unlock()
			<-clock.At(due)
			c.mu.Lock()
		}
		now := time.Now()
		if e := c.out[0].end; e != endNone {
			c.out = c.out[1:]
			c.mu.Unlock()
			err := sendEnd(c.Conn, e)
			c.mu.Lock()
			if e == endRST || err != nil {
				// The socket is closed (or broken): nothing more leaves.
				c.outErr = cmp.Or(err, net.ErrClosed)
				c.out = nil
			}
			c.signal()
			continue
		}
		bufs, n := bufs[:0], 0
		for len(c.out) > 0 && !now.Before(c.out[0].due) && c.out[0].end == endNone {
			bufs = append(bufs, c.out[0].data)
			n += len(c.out[0].data)
			c.out[0] = chunk{}
			c.out = c.out[1:]
		}
		c.mu.Unlock()
		_, err := bufs.WriteTo(c.Conn)
		c.mu.Lock()
		c.outBytes -= n
		if err != nil {
			c.outErr = err
			c.out, c.outBytes = nil, 0
		}
		c.signal()
		if err != nil {
			if c.linger {
				c.Conn.Close()
			}
			return
		}
	}
}

// Close stops both directions at once for the caller. Bytes already written
// still reach the server at their due time (a real close sends what the
// socket buffered, then FIN): the socket closes after them, at most RTT/2
// later; without them it closes now.
func (c *delayConn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return net.ErrClosed
	}
	c.closed = true
	c.linger = c.outBytes > 0 || len(c.out) > 0 // bytes, or a FIN or RST
	c.signal()
	linger := c.linger
	c.mu.Unlock()
	if linger {
		// Bound the flush: a server that stopped reading must not keep
		// the forwarder alive.
		c.Conn.SetWriteDeadline(time.Now().Add(c.half + time.Second))
		return nil
	}
	return c.Conn.Close()
}

// SetDeadline bounds Read and Write of the emulated link (not the socket's,
// which the link's goroutines use).
// sendEnd half-closes (FIN) or resets (RST) the socket raw.
func sendEnd(raw net.Conn, e linkEnd) error {
	if e == endRST {
		if l, ok := raw.(interface{ SetLinger(int) error }); ok {
			l.SetLinger(0)
		}
		return raw.Close()
	}
	if h, ok := raw.(interface{ CloseWrite() error }); ok {
		return h.CloseWrite()
	}
	return errors.ErrUnsupported
}

func (c *delayConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rdl, c.wdl = t, t
	c.signal()
	return nil
}

func (c *delayConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rdl = t
	c.signal()
	return nil
}

func (c *delayConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wdl = t
	c.signal()
	return nil
}
