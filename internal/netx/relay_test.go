package netx

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The relay's tests, like the emulated link's, assert what a loaded
// machine keeps: never less time than the round trips asked for, bytes
// intact and in order, every end (FIN, RST) passed on, and Close leaving
// nothing running. How close to the RTT it lands is
// BenchmarkRelayRTTAccuracy's figure.

// startRelay starts a relay to target over d's link, closed when t ends.
func startRelay(t testing.TB, target string, d *Dialer) *Relay {
	t.Helper()
	r, err := StartRelay(context.Background(), target, d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// relayed starts a relay to target over d's link and connects to it; it
// returns the connection and when its connect began.
func relayed(t testing.TB, target string, d *Dialer) (*net.TCPConn, time.Time) {
	t.Helper()
	r := startRelay(t, target, d)
	start := time.Now()
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn), start
}

// TestRelayTLS runs a TLS 1.3 handshake and an echo of 200 kB end to end
// through the relay: the connect and the handshake take at least two RTTs
// together (the emulated connect's, which the relay spends after its
// accept, and the handshake's one), the first line one more, and every
// byte comes back as sent.
func TestRelayTLS(t *testing.T) {
	addr, cfg := tlsListener(t, tls.VersionTLS13, false)
	for _, rtt := range []time.Duration{0, 20 * time.Millisecond} {
		t.Run(fmt.Sprint("rtt=", rtt), func(t *testing.T) {
			raw, start := relayed(t, addr, &Dialer{RTT: rtt})
			tc := tls.Client(raw, cfg)
			if err := tc.Handshake(); err != nil {
				t.Fatal(err)
			}
			if e := time.Since(start); e < 2*rtt {
				t.Errorf("connect and TLS 1.3 handshake in %v, under 2 RTT (%v)", e, 2*rtt)
			}
			if v := tc.ConnectionState().Version; v != tls.VersionTLS13 {
				t.Errorf("negotiated %x, want TLS 1.3", v)
			}
			sent := make([]byte, 200_000)
			rand.Read(sent)
			for i := range sent {
				if sent[i] == '\n' {
					sent[i] = 'n'
				}
			}
			sent[len(sent)-1] = '\n'
			began := time.Now()
			go tc.Write(sent) // the echo reads while this writes
			got := make([]byte, len(sent))
			if _, err := io.ReadFull(tc, got); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, sent) {
				t.Error("the echo differs from what was sent")
			}
			if e := time.Since(began); e < rtt {
				t.Errorf("echo in %v, under one RTT", e)
			}
		})
	}
}

// TestRelayFirstBytes checks the emulated connect's RTT as the client's
// first exchange carries it, as the Dialer's connect would: a
// server that speaks first is heard two RTTs after the client's connect
// began (the connect's and the greeting's); a client that speaks first is
// heard by the server one RTT and a half after it (the connect's and
// RTT/2), and answered two RTTs after it.
func TestRelayFirstBytes(t *testing.T) {
	rtt := 20 * time.Millisecond
	t.Run("server first", func(t *testing.T) {
		addr := listen(t, func(c net.Conn) {
			c.Write([]byte("hello"))
			io.Copy(io.Discard, c)
		})
		c, start := relayed(t, addr, &Dialer{RTT: rtt})
		b := make([]byte, 5)
		if _, err := io.ReadFull(c, b); err != nil || string(b) != "hello" {
			t.Fatalf("greeting %q, %v", b, err)
		}
		if e := time.Since(start); e < 2*rtt {
			t.Errorf("greeting after %v, under 2 RTT (%v)", e, 2*rtt)
		}
	})
	t.Run("client first", func(t *testing.T) {
		heard := make(chan time.Time, 1)
		addr := listen(t, func(c net.Conn) {
			b := make([]byte, 5)
			io.ReadFull(c, b)
			heard <- time.Now()
			c.Write(b)
		})
		c, start := relayed(t, addr, &Dialer{RTT: rtt})
		c.Write([]byte("hello"))
		b := make([]byte, 5)
		if _, err := io.ReadFull(c, b); err != nil || string(b) != "hello" {
			t.Fatalf("answer %q, %v", b, err)
		}
		if e := time.Since(start); e < 2*rtt {
			t.Errorf("answer after %v, under 2 RTT (%v)", e, 2*rtt)
		}
		if e := (<-heard).Sub(start); e < 3*rtt/2 {
			t.Errorf("the server heard the client after %v, under 1.5 RTT (%v)", e, 3*rtt/2)
		}
	})
}

// TestRelayHalfClose checks that a FIN passes each way and the other
// direction goes on: the client half-closes, the server reads to EOF and
// answers, and closes; the client reads the answer, then EOF.
func TestRelayHalfClose(t *testing.T) {
	for _, rtt := range []time.Duration{0, 20 * time.Millisecond} {
		t.Run(fmt.Sprint("rtt=", rtt), func(t *testing.T) {
			got := make(chan string, 1)
			addr := listen(t, func(c net.Conn) {
				c.SetDeadline(time.Now().Add(10 * time.Second))
				b, err := io.ReadAll(c) // to the client's FIN
				got <- fmt.Sprint(string(b), err)
				c.Write([]byte("bye"))
			})
			c, _ := relayed(t, addr, &Dialer{RTT: rtt})
			c.SetDeadline(time.Now().Add(10 * time.Second))
			c.Write([]byte("question"))
			if err := c.CloseWrite(); err != nil {
				t.Fatal(err)
			}
			if g := <-got; g != "question<nil>" {
				t.Errorf("the server read %q, want the question then EOF", g)
			}
			b, err := io.ReadAll(c) // to the server's FIN
			if string(b) != "bye" || err != nil {
				t.Errorf("the client read %q, %v: want bye then EOF", b, err)
			}
		})
	}
}

// TestRelayReset checks that a RST passes each way, after the bytes sent
// before it: a PostgreSQL TLS connection ends so.
func TestRelayReset(t *testing.T) {
	for _, rtt := range []time.Duration{0, 20 * time.Millisecond} {
		t.Run(fmt.Sprint("server resets, rtt=", rtt), func(t *testing.T) {
			addr := listen(t, func(c net.Conn) {
				// After the client's word: a server that resets its
				// accept at once may fail the relay's connect itself.
				var b [1]byte
				io.ReadFull(c, b[:])
				c.Write([]byte("last words"))
				resetTCP(c.(*net.TCPConn))
			})
			c, start := relayed(t, addr, &Dialer{RTT: rtt})
			c.SetDeadline(time.Now().Add(10 * time.Second))
			c.Write([]byte("x"))
			b, err := io.ReadAll(c)
			if !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("the client read %q, %v: want a reset", b, err)
			}
			if e := time.Since(start); e < 2*rtt {
				t.Errorf("reset after %v, under 2 RTT (%v)", e, 2*rtt)
			}
		})
		t.Run(fmt.Sprint("client resets, rtt=", rtt), func(t *testing.T) {
			got := make(chan error, 1)
			addr := listen(t, func(c net.Conn) {
				c.SetDeadline(time.Now().Add(10 * time.Second))
				_, err := io.ReadAll(c)
				got <- err
			})
			c, _ := relayed(t, addr, &Dialer{RTT: rtt})
			c.Write([]byte("x"))
			time.Sleep(rtt) // the relay's dial is made: the reset has a server to reach
			resetTCP(c)
			if err := <-got; !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("the server read to %v, want a reset", err)
			}
		})
	}
}

// TestRelayConcurrent runs 40 connections at once, each echoing its own
// bytes, through one relay.
func TestRelayConcurrent(t *testing.T) {
	r := startRelay(t, echoListener(t), &Dialer{RTT: 5 * time.Millisecond})
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		wg.Go(func() {
			c, err := net.Dial("tcp", r.Addr())
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			sent := bytes.Repeat([]byte{byte(i)}, 10_000+i*1000)
			go c.Write(sent)
			got := make([]byte, len(sent))
			if _, err := io.ReadFull(c, got); err != nil {
				errs <- err
				return
			}
			if !bytes.Equal(got, sent) {
				errs <- fmt.Errorf("connection %d: the echo differs", i)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestRelayClose checks that Close resets the connections it relays, stops
// listening and leaves no goroutine running, and that a cancelled context
// stops the relay as well.
func TestRelayClose(t *testing.T) {
	addr := echoListener(t)
	before := runtime.NumGoroutine()
	r, err := StartRelay(context.Background(), addr, &Dialer{RTT: 40 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	for range 5 {
		c, err := net.Dial("tcp", r.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write([]byte("in flight"))
		conns = append(conns, c)
	}
	time.Sleep(60 * time.Millisecond) // some bytes on the link, some echoed
	r.Close()
	for i, c := range conns {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadAll(c); !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("connection %d after Close: %v, want a reset", i, err)
		}
	}
	if c, err := net.Dial("tcp", r.Addr()); err == nil {
		c.Close()
		t.Error("the relay still accepts after Close")
	}
	// The echo server's handlers end on the reset; the precise clock's
	// thread, started by the first emulated RTT, stays: +1.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before+1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+1 {
		t.Errorf("%d goroutines left, %d before the relay", n, before)
	}

	ctx, cancel := context.WithCancel(context.Background())
	r, err = StartRelay(ctx, addr, &Dialer{})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	done := make(chan struct{})
	go func() { r.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close after the context's cancel did not return")
	}
}

// TestRelayDialError checks that a target the relay cannot reach resets
// the client's connection, is the relay's Err, and counts in Failed once
// per connection.
func TestRelayDialError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	r := startRelay(t, addr, &Dialer{})
	// The reset may come before the client's connect has returned.
	c, err := net.Dial("tcp", r.Addr())
	if err == nil {
		defer c.Close()
		_, err = io.ReadAll(c)
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("client: %v, want a reset", err)
	}
	if err := r.Err(); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("Err: %v, want the refused dial", err)
	}
	if c, err := net.Dial("tcp", r.Addr()); err == nil {
		io.ReadAll(c)
		c.Close()
	}
	if n := r.Failed(); n != 2 {
		t.Errorf("Failed: %d, want 2 (two connections)", n)
	}
}

// TestRelaySources checks that the relay dials from the Dialer's source
// addresses, and listens on the target's address family.
func TestRelaySources(t *testing.T) {
	from := make(chan string, 1)
	addr := listen(t, func(c net.Conn) { from <- c.RemoteAddr().String() })
	sources := LoopbackSources(4)
	c, _ := relayed(t, addr, &Dialer{Sources: sources})
	c.Close()
	ap := netip.MustParseAddrPort(<-from)
	if !netip.MustParsePrefix("127.0.1.0/24").Contains(ap.Addr()) {
		t.Errorf("the relay dialed from %v, not from its sources", ap)
	}
	if a := netip.MustParseAddrPort(c.RemoteAddr().String()).Addr(); a != netip.MustParseAddr("127.0.0.1") {
		t.Errorf("relay to %s listens on %s", addr, a)
	}

	ln6, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skip("no IPv6 loopback:", err)
	}
	defer ln6.Close()
	r6 := startRelay(t, ln6.Addr().String(), &Dialer{Sources: sources})
	if a := netip.MustParseAddrPort(r6.Addr()).Addr(); a != netip.IPv6Loopback() {
		t.Errorf("relay to %s listens on %s", ln6.Addr(), a)
	}
}
