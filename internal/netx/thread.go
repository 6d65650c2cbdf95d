package netx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// threadConn is a TCP socket whose reads and writes wait in the calling
// thread, with poll(2), as pgbench's and sysbench's threads do, instead of
// in Go's network poller. For a few busy ping-pong connections the poller
// costs more than the work: each answer wakes a thread blocked in
// epoll_wait, which hands the goroutine a P. A goroutine blocked in poll
// keeps its P (it is in a system call), so that an answer costs one
// wake-up: of the thread that waits for it (one PostgreSQL connection on
// 2 CPUs: 20-21µs of client CPU per point select, 28-32 in the poller even
// with pollSocket's raw reads and writes). The socket is no longer in
// the poller's epoll set at all, or every segment that arrives would still
// wake an idle thread there.
//
// Deadlines and Close interrupt a wait through an eventfd.
type threadConn struct {
	fd, wake      int // the socket and the eventfd written to interrupt a poll
	local, remote net.Addr

	readDeadline, writeDeadline atomic.Int64 // Unix ns; 0: none
	waiting                     atomic.Int32 // polls in progress
	yielded                     atomic.Int64 // Unix ns of the last runtime.Gosched
	closed                      atomic.Bool
	io                          sync.RWMutex // held shared by I/O, exclusively by Close

	// Of the reader alone: answers read, and whether each of the latest 8
	// read at once was not there yet (a bit each, the newest lowest).
	answers uint32
	late    uint8
}

// WaitInThread moves the Conn's socket out of Go's network poller: from
// now on its reads and writes wait in their own thread (see threadConn).
// It does nothing on a connection that is not a TCP socket (an SSH
// channel). It must be called while no I/O is in flight. It is for the
// pool's few persistent connections, one goroutine each, as the peers'
// threads: a thread per waiting read would not scale to thousands of
// connections.
func (c *Conn) WaitInThread() error {
	tc, ok := c.socket().(*net.TCPConn) // not a threadConn already
	if !ok {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	fd := -1
	if cerr := rc.Control(func(s uintptr) { fd, err = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); cerr != nil {
		return cerr
	}
	if err != nil {
		return os.NewSyscallError("fcntl", err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(fd)
		return os.NewSyscallError("eventfd", err)
	}
	t := &threadConn{fd: fd, wake: wake, local: tc.LocalAddr(), remote: tc.RemoteAddr()}
	c.deadlineMu.Lock()
	if c.stopped { // the poller's deadline cannot be read back; StopOn's can
		t.SetDeadline(time.Unix(1, 0))
	}
	c.thread.Store(t)
	c.deadlineMu.Unlock()
	// Closing the original takes the socket out of the poller's epoll set;
	// the duplicate keeps it open.
	return tc.Close()
}

// WaitInPoller undoes WaitInThread: the socket goes back to Go's network
// poller, with its deadlines. Like WaitInThread, it must be called while no
// I/O is in flight. It does nothing on a connection whose I/O already waits
// in the poller.
func (c *Conn) WaitInPoller() error {
	t := c.thread.Load()
	if t == nil {
		return nil
	}
	t.io.Lock() // no Close of t meanwhile
	if t.closed.Load() {
		t.io.Unlock()
		return t.opError("wait in poller", net.ErrClosed)
	}
	fd, err := unix.FcntlInt(uintptr(t.fd), unix.F_DUPFD_CLOEXEC, 0)
	t.io.Unlock()
	if err != nil {
		return t.opError("wait in poller", os.NewSyscallError("fcntl", err))
	}
	f := os.NewFile(uintptr(fd), "")
	nc, err := net.FileConn(f) // a duplicate of f's, in the poller
	f.Close()
	if err != nil {
		return t.opError("wait in poller", err)
	}
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		nc.Close()
		return t.opError("wait in poller", fmt.Errorf("socket came back as %T", nc))
	}
	if ns := t.readDeadline.Load(); ns != 0 {
		tc.SetReadDeadline(time.Unix(0, ns))
	}
	if ns := t.writeDeadline.Load(); ns != 0 {
		tc.SetWriteDeadline(time.Unix(0, ns))
	}
	ps := newPollSocket(tc)
	if ps == nil {
		tc.Close()
		return t.opError("wait in poller", errors.New("socket came back without a RawConn"))
	}
	c.polled.Store(ps)
	c.thread.Store(nil)
	return t.Close()
}

func (t *threadConn) Read(p []byte) (int, error) { return t.read(p, false) }

// read reads p; answer says that the client has spoken since its last
// read, so that the bytes are the answer of a turn. If the answers of the
// latest turns were mostly not there yet when the client asked (the
// server had still to run), it polls first: one system call less than a
// read that fails with EAGAIN and then polls. Every 8th answer is read at
// once, which keeps the tally true.
func (t *threadConn) read(p []byte, answer bool) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	t.io.RLock()
	defer t.io.RUnlock()
	sample := false
	if answer {
		t.answers++
		sample = t.answers%8 == 0 || bits.OnesCount8(t.late) < 6
		if !sample {
			if err := t.wait(unix.POLLIN, &t.readDeadline); err != nil {
				return 0, t.opError("read", err)
			}
		}
	}
	for {
		if t.closed.Load() {
			return 0, t.opError("read", net.ErrClosed)
		}
		n, e := rawRead(t.fd, p)
		if sample {
			t.late = t.late<<1 | b2u8(e == unix.EAGAIN)
			sample = false
		}
		switch {
		case e == 0 && n == 0:
			return 0, io.EOF
		case e == 0:
			return n, nil
		case e == unix.EINTR:
		case e == unix.EAGAIN:
			if err := t.wait(unix.POLLIN, &t.readDeadline); err != nil {
				return 0, t.opError("read", err)
			}
		default:
			return 0, t.opError("read", os.NewSyscallError("read", e))
		}
	}
}

func b2u8(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

func (t *threadConn) Write(p []byte) (int, error) {
	t.io.RLock()
	defer t.io.RUnlock()
	written := 0
	for written < len(p) {
		if t.closed.Load() {
			return written, t.opError("write", net.ErrClosed)
		}
		n, e := rawWrite(t.fd, p[written:])
		written += n
		switch e {
		case 0, unix.EINTR:
		case unix.EAGAIN:
			if err := t.wait(unix.POLLOUT, &t.writeDeadline); err != nil {
				return written, t.opError("write", err)
			}
		default:
			return written, t.opError("write", os.NewSyscallError("write", e))
		}
	}
	return written, nil
}

// wait blocks until the socket is ready for events, the deadline passes
// or the connection closes.
func (t *threadConn) wait(events int16, deadline *atomic.Int64) error {
	// A goroutine that only ever waits in its thread never passes through
	// the scheduler, which sysmon takes for one running too long: every
	// 10ms it would preempt it and retake its P, and then poll again at
	// its fastest, every 20µs, for a millisecond and more. A yield now and
	// then shows it is not.
	if now := time.Now().UnixNano(); now-t.yielded.Load() > yieldEvery {
		t.yielded.Store(now)
		runtime.Gosched()
	}
	t.waiting.Add(1)
	defer t.waiting.Add(-1)
	fds := []unix.PollFd{{Fd: int32(t.fd), Events: events}, {Fd: int32(t.wake), Events: unix.POLLIN}}
	for {
		if t.closed.Load() {
			return net.ErrClosed
		}
		timeout := -1
		if d := deadline.Load(); d != 0 {
			left := d - time.Now().UnixNano()
			if left <= 0 {
				return os.ErrDeadlineExceeded
			}
			timeout = int((left + int64(time.Millisecond) - 1) / int64(time.Millisecond))
		}
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, timeout); err != nil && err != unix.EINTR {
			return os.NewSyscallError("poll", err)
		}
		if fds[1].Revents != 0 {
			var buf [8]byte
			unix.Read(t.wake, buf[:]) // drained; the loop looks at what changed
		}
		if fds[0].Revents != 0 {
			return nil // ready, or an error the next read or write returns
		}
	}
}

// yieldEvery is how often a goroutine waiting in its thread yields, ns:
// well within sysmon's 10ms.
const yieldEvery = int64(5 * time.Millisecond)

// interrupt wakes the polls in progress, if any.
func (t *threadConn) interrupt() {
	if t.waiting.Load() > 0 {
		one := [8]byte{1}
		unix.Write(t.wake, one[:])
	}
}

func (t *threadConn) Close() error {
	if t.closed.Swap(true) {
		return t.opError("close", net.ErrClosed)
	}
	one := [8]byte{1}
	unix.Write(t.wake, one[:]) // whether or not a poll is in progress yet
	t.io.Lock()                // the I/O in flight has returned
	defer t.io.Unlock()
	unix.Close(t.wake)
	if err := unix.Close(t.fd); err != nil {
		return t.opError("close", os.NewSyscallError("close", err))
	}
	return nil
}

func (t *threadConn) LocalAddr() net.Addr  { return t.local }
func (t *threadConn) RemoteAddr() net.Addr { return t.remote }

func (t *threadConn) SetDeadline(d time.Time) error {
	t.readDeadline.Store(unixNano(d))
	t.writeDeadline.Store(unixNano(d))
	t.interrupt()
	return nil
}

func (t *threadConn) SetReadDeadline(d time.Time) error {
	t.readDeadline.Store(unixNano(d))
	t.interrupt()
	return nil
}

func (t *threadConn) SetWriteDeadline(d time.Time) error {
	t.writeDeadline.Store(unixNano(d))
	t.interrupt()
	return nil
}

// unixNano is a deadline's Unix ns, 0 for none.
func unixNano(d time.Time) int64 {
	if d.IsZero() {
		return 0
	}
	return max(d.UnixNano(), 1)
}

// opError gives an error the form net's own connections give it.
func (t *threadConn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: t.local, Addr: t.remote, Err: err}
}

// SetDeadline sets the deadline of reads and writes.
func (c *Conn) SetDeadline(d time.Time) error { return c.setDeadline(d, net.Conn.SetDeadline) }

// SetReadDeadline sets the deadline of reads.
func (c *Conn) SetReadDeadline(d time.Time) error {
	return c.setDeadline(d, net.Conn.SetReadDeadline)
}

// SetWriteDeadline sets the deadline of writes.
func (c *Conn) SetWriteDeadline(d time.Time) error {
	return c.setDeadline(d, net.Conn.SetWriteDeadline)
}

// StopOn makes ctx's cancellation end the Conn's reads and writes at once
// and for good: from then on its deadline stays in the past whatever
// deadline a driver sets later (the MongoDB driver sets its own before
// every read, which undid a past deadline set once). stop is
// context.AfterFunc's.
func (c *Conn) StopOn(ctx context.Context) (stop func() bool) {
	return context.AfterFunc(ctx, func() {
		c.deadlineMu.Lock()
		c.stopped = true
		c.deadlineMu.Unlock()
		c.SetDeadline(time.Time{}) // any: it becomes the past
	})
}

// setDeadline sets d with set on the socket, or the past once StopOn's
// context is cancelled.
func (c *Conn) setDeadline(d time.Time, set func(net.Conn, time.Time) error) error {
	c.deadlineMu.Lock()
	defer c.deadlineMu.Unlock()
	if c.stopped {
		d = time.Unix(1, 0)
	}
	return set(c.socket(), d)
}

// Close closes the connection.
func (c *Conn) Close() error { return c.socket().Close() }

// stream is what the Conn reads and writes: its threadConn, its
// pollSocket, or the net.Conn it was made with when that is not TCP (an
// SSH channel).
func (c *Conn) stream() io.ReadWriter {
	if t := c.thread.Load(); t != nil {
		return t
	}
	if p := c.polled.Load(); p != nil {
		return p
	}
	return c.Conn
}

// socket is what the Conn's deadlines and Close go to: the threadConn
// that WaitInThread moved its socket to, the TCPConn in the poller (the
// original or the one WaitInPoller gave back), or the net.Conn it was made
// with.
func (c *Conn) socket() net.Conn {
	if t := c.thread.Load(); t != nil {
		return t
	}
	if p := c.polled.Load(); p != nil {
		return p.tc
	}
	return c.Conn
}
