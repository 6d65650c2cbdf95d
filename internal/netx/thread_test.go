package netx

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"math/bits"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// threadDial dials addr and moves the connection out of the poller.
func threadDial(t *testing.T, addr string) *Conn {
	t.Helper()
	c, err := (&Dialer{}).Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitInThread(); err != nil {
		t.Fatal(err)
	}
	if c.thread.Load() == nil {
		t.Fatal("WaitInThread left the connection in the poller")
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// pollDial dials addr and leaves the connection in the poller, read and
// written by its pollSocket.
func pollDial(t *testing.T, addr string) *Conn {
	t.Helper()
	c, err := (&Dialer{}).Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	if c.polled.Load() == nil || c.thread.Load() != nil {
		t.Fatal("a TCP connection in the poller has no pollSocket")
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waits are the two places a Conn's I/O waits in, for tests that hold for
// both.
var waits = []struct {
	name string
	dial func(*testing.T, string) *Conn
}{{"thread", threadDial}, {"poller", pollDial}}

// echo answers each line with the line.
func echo(c net.Conn) {
	br := bufio.NewReader(c)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		c.Write([]byte(line))
	}
}

func TestWaitsEcho(t *testing.T) {
	// A TLS handshake and lines of every size through either wait, with
	// the turns counted alike.
	for _, w := range waits {
		t.Run(w.name, func(t *testing.T) {
			addr, cfg := tlsListener(t, 0, false)
			testEchoes(t, w.dial(t, addr), cfg)
		})
	}
}

func testEchoes(t *testing.T, c *Conn, cfg *tls.Config) {
	tc, err := Handshake(context.Background(), c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Mark("lines")
	br := bufio.NewReader(tc)
	for _, n := range []int{1, 100, 16 << 10, 1 << 20} {
		line := strings.Repeat("x", n) + "\n"
		if _, err := tc.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
		got, err := br.ReadString('\n')
		if err != nil || got != line {
			t.Fatalf("line of %d: got %d bytes, %v", n, len(got), err)
		}
	}
	tr := c.Finish()
	if p, _ := tr.Phase(PhaseTLSHandshake); p.RoundTrips != 1 {
		t.Errorf("tls-handshake: %d round trips, want 1", p.RoundTrips)
	}
	if p, _ := tr.Phase("lines"); p.RoundTrips < 4 {
		t.Errorf("lines: %d round trips, want at least 4, one a line", p.RoundTrips)
	}
	if sent, recv := c.Counters(); sent < 1<<20 || recv < 1<<20 {
		t.Errorf("counters: %d sent, %d received, want at least 1 MiB each", sent, recv)
	}
}

func TestWaitsFullDuplex(t *testing.T) {
	// One goroutine writes 8 MiB while another reads the echo: both
	// directions wait for the socket's buffers at once.
	for _, w := range waits {
		t.Run(w.name, func(t *testing.T) {
			c := w.dial(t, listen(t, func(c net.Conn) { io.Copy(c, c) }))
			const size = 8 << 20
			wrote := make(chan error, 1)
			go func() {
				_, err := c.Write(bytes.Repeat([]byte("0123456789abcdef"), size/16))
				wrote <- err
			}()
			n, err := io.CopyN(io.Discard, c, size)
			if err != nil || n != size {
				t.Fatalf("read back %d bytes of %d: %v", n, size, err)
			}
			if err := <-wrote; err != nil {
				t.Fatal(err)
			}
			if sent, recv := c.Counters(); sent != size || recv != size {
				t.Errorf("counters: %d sent, %d received, want %d each", sent, recv, size)
			}
		})
	}
}

func TestWaitsInterrupt(t *testing.T) {
	for _, w := range waits {
		t.Run(w.name, func(t *testing.T) { testInterrupts(t, w.dial) })
	}
}

func testInterrupts(t *testing.T, dial func(*testing.T, string) *Conn) {
	silent := listen(t, func(c net.Conn) { io.Copy(io.Discard, c) })
	read := func(c *Conn) chan error {
		done := make(chan error, 1)
		go func() {
			_, err := c.Read(make([]byte, 10))
			done <- err
		}()
		return done
	}
	within := func(t *testing.T, done chan error) error {
		t.Helper()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("the waiting read was not interrupted")
			return nil
		}
	}
	t.Run("deadline set while waiting", func(t *testing.T) {
		c := dial(t, silent)
		done := read(c)
		time.Sleep(50 * time.Millisecond)
		c.SetDeadline(time.Unix(1, 0)) // as the drivers' context.AfterFunc
		if err := within(t, done); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("got %v, want a deadline error", err)
		}
		var ne net.Error
		if err := within(t, read(c)); !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("a read after the deadline: %v, want a net.Error timeout", err)
		}
	})
	t.Run("stopped for good", func(t *testing.T) {
		c := dial(t, silent)
		ctx, cancel := context.WithCancel(context.Background())
		defer c.StopOn(ctx)()
		done := read(c)
		time.Sleep(50 * time.Millisecond)
		cancel()
		if err := within(t, done); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("got %v, want a deadline error", err)
		}
		// As the MongoDB driver does before every read.
		c.SetDeadline(time.Now().Add(time.Hour))
		start := time.Now()
		if err := within(t, read(c)); !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) > 5*time.Second {
			t.Errorf("a read after a later deadline: %v after %v, want a deadline error at once", err, time.Since(start))
		}
	})
	t.Run("deadline passing", func(t *testing.T) {
		c := dial(t, silent)
		start := time.Now()
		c.SetReadDeadline(start.Add(100 * time.Millisecond))
		if err := within(t, read(c)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("got %v, want a deadline error", err)
		}
		if d := time.Since(start); d < 100*time.Millisecond {
			t.Errorf("the deadline ended the read after %v, before its 100ms", d)
		}
		c.SetReadDeadline(time.Time{})
		c.Write([]byte("still writable\n"))
	})
	t.Run("close while waiting", func(t *testing.T) {
		c := dial(t, silent)
		done := read(c)
		time.Sleep(50 * time.Millisecond)
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if err := within(t, done); !errors.Is(err, net.ErrClosed) {
			t.Errorf("got %v, want net.ErrClosed", err)
		}
		if err := c.Close(); !errors.Is(err, net.ErrClosed) {
			t.Errorf("a second Close: %v, want net.ErrClosed", err)
		}
	})
	t.Run("server closes", func(t *testing.T) {
		addr := listen(t, func(c net.Conn) {})
		c := dial(t, addr)
		if err := within(t, read(c)); err != io.EOF {
			t.Errorf("got %v, want io.EOF", err)
		}
	})
	t.Run("server resets", func(t *testing.T) {
		addr := listen(t, func(c net.Conn) {
			time.Sleep(100 * time.Millisecond) // once the client has connected
			c.(*net.TCPConn).SetLinger(0)      // close with RST
			c.Close()
		})
		c := dial(t, addr)
		var se *os.SyscallError
		if err := within(t, read(c)); !errors.Is(err, syscall.ECONNRESET) || !errors.As(err, &se) {
			t.Errorf("got %v, want a read's syscall error ECONNRESET", err)
		}
	})
}

func TestWaitInThreadLeavesOtherConnsAlone(t *testing.T) {
	// An SSH channel or a pipe is no socket: nothing changes.
	a, b := net.Pipe()
	defer b.Close()
	c := newConn(a, time.Now(), time.Now())
	if err := c.WaitInThread(); err != nil {
		t.Fatal(err)
	}
	if c.thread.Load() != nil {
		t.Fatal("a pipe was moved to a thread")
	}
	go echo(b)
	c.Write([]byte("hi\n"))
	if got, err := bufio.NewReader(c).ReadString('\n'); err != nil || got != "hi\n" {
		t.Errorf("got %q, %v", got, err)
	}
	c.Close()
}

func TestWaitInPollerMovesBack(t *testing.T) {
	// Back and forth between the thread and the poller, with the lines
	// echoed each way, the deadline kept, and no descriptor left behind.
	addr := listen(t, echo)
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	c := threadDial(t, addr)
	br := bufio.NewReader(c)
	// One line echoed first: the listener has then accepted (its side's
	// descriptor is in the count before, not only after).
	c.Write([]byte("first\n"))
	if got, err := br.ReadString('\n'); err != nil || got != "first\n" {
		t.Fatalf("got %q, %v", got, err)
	}
	before := fds()
	for i := range 50 {
		if i%2 == 0 {
			if err := c.WaitInPoller(); err != nil {
				t.Fatal(err)
			}
		} else if err := c.WaitInThread(); err != nil {
			t.Fatal(err)
		}
		if inThread := c.thread.Load() != nil; inThread != (i%2 == 1) {
			t.Fatalf("move %d: in the thread: %v", i, inThread)
		}
		line := strings.Repeat("y", 1+i*100) + "\n"
		c.Write([]byte(line))
		if got, err := br.ReadString('\n'); err != nil || got != line {
			t.Fatalf("move %d: got %d bytes, %v", i, len(got), err)
		}
	}
	if after := fds(); after != before {
		t.Errorf("%d descriptors after 50 moves, %d before", after, before)
	}
	if err := c.WaitInThread(); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if err := c.WaitInPoller(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read after the move: %v, want the deadline kept", err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("the deadline passed %v late", waited)
	}
	if err := c.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if err := c.WaitInPoller(); err != nil {
		t.Errorf("a closed connection in the poller: %v", err)
	}
}

func TestWaitInThreadPollsFirstForLateAnswers(t *testing.T) {
	// A server that answers each line 2ms late: after a few turns the
	// thread polls before it reads the answer, still within the deadline.
	addr := listen(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if line == "never\n" {
				continue
			}
			time.Sleep(2 * time.Millisecond)
			c.Write([]byte(line))
		}
	})
	c := threadDial(t, addr)
	br := bufio.NewReader(c)
	for i := range 20 {
		line := strings.Repeat("z", i+1) + "\n"
		c.Write([]byte(line))
		if got, err := br.ReadString('\n'); err != nil || got != line {
			t.Fatalf("line %d: got %q, %v", i, got, err)
		}
	}
	if late := c.thread.Load().late; bits.OnesCount8(late) < 6 {
		t.Fatalf("late answers %08b: the thread would still read before it polls", late)
	}
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	c.Write([]byte("never\n"))
	if _, err := br.ReadString('\n'); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("an answer that never comes: %v, want the deadline", err)
	}
	c.mu.Lock()
	turns := c.turns
	c.mu.Unlock()
	if turns < 21 { // the TCP handshake and 20 lines
		t.Errorf("%d turns, want at least 21: an answer polled for is still counted", turns)
	}
}
