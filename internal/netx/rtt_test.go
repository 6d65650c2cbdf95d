package netx

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"
)

// echoListener echoes every byte back on plain TCP.
func echoListener(t testing.TB) string {
	return listen(t, func(c net.Conn) { io.Copy(c, c) })
}

func median(xs []time.Duration) time.Duration {
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// The tests of the emulated link assert what a loaded machine keeps: a
// delay is never shorter than asked (the emulation only delays), round
// trips are counted as without it, order and content, deadlines and
// Close. How far above the RTT a delay lands is the scheduler's, and
// BenchmarkRTTAccuracy measures it (make bench).

// rttMedians dials addr n times with rtt emulated and returns the medians
// of the connect phase and of a one-byte echo exchange.
func rttMedians(tb testing.TB, addr string, rtt time.Duration, n int) (connect, exchange time.Duration) {
	d := &Dialer{RTT: rtt}
	var connects, exchanges []time.Duration
	for range n {
		c, err := d.Dial(context.Background(), addr)
		if err != nil {
			tb.Fatal(err)
		}
		tr := c.Finish()
		p, _ := tr.Phase(PhaseTCP)
		connects = append(connects, p.Duration)
		var b [1]byte
		start := time.Now()
		if _, err := c.Write([]byte{'x'}); err != nil {
			tb.Fatal(err)
		}
		if _, err := io.ReadFull(c, b[:]); err != nil || b[0] != 'x' {
			tb.Fatalf("echo %q, %v", b, err)
		}
		exchanges = append(exchanges, time.Since(start))
		c.Close()
	}
	return median(connects), median(exchanges)
}

// TestRTTAccuracy checks that the emulated connect and a one-byte exchange
// each take at least the RTT asked for (never less: the emulation only
// delays; medians of 10). How much more they take is
// BenchmarkRTTAccuracy's figure.
func TestRTTAccuracy(t *testing.T) {
	if testing.Short() {
		t.Skip("sleeps 20 emulated round trips: skipped under -short")
	}
	addr := echoListener(t)
	for _, rtt := range []time.Duration{time.Millisecond, 44 * time.Millisecond} {
		mc, me := rttMedians(t, addr, rtt, 10)
		t.Logf("rtt %v: connect median %v, 1-byte exchange median %v", rtt, mc, me)
		for what, m := range map[string]time.Duration{"connect": mc, "1-byte exchange": me} {
			if m < rtt {
				t.Errorf("rtt %v: %s median %v, below the RTT", rtt, what, m)
			}
		}
	}
}

// BenchmarkRTTAccuracy prints how far above the emulated RTT the connect
// and a one-byte exchange take, in µs (medians of 20): the accuracy the
// README quotes. Run it on an idle machine: make bench.
func BenchmarkRTTAccuracy(b *testing.B) {
	addr := echoListener(b)
	for _, rtt := range []time.Duration{time.Millisecond, 44 * time.Millisecond} {
		b.Run(rtt.String(), func(b *testing.B) {
			var mc, me time.Duration
			for range b.N {
				mc, me = rttMedians(b, addr, rtt, 20)
			}
			b.ReportMetric(float64((mc - rtt).Microseconds()), "µs-over-connect")
			b.ReportMetric(float64((me - rtt).Microseconds()), "µs-over-exchange")
		})
	}
}

// BenchmarkRelayRTTAccuracy prints, side by side in one run, what a TLS
// 1.3 client sees through the relay and through the Dialer at the same
// emulated RTT on the same server: the connect and TLS handshake together
// (2 RTT each way: the relay spends the connect's RTT after its accept),
// then a one-byte exchange, in ms (medians of 20, the two interleaved), and
// the relay's over the Dialer's as ratios. make bench.
func BenchmarkRelayRTTAccuracy(b *testing.B) {
	addr, cfg := tlsListener(b, tls.VersionTLS13, false)
	for _, rtt := range []time.Duration{time.Millisecond, 44 * time.Millisecond} {
		b.Run(rtt.String(), func(b *testing.B) {
			r := startRelay(b, addr, &Dialer{RTT: rtt})
			d := &Dialer{RTT: rtt}
			ways := []func() (net.Conn, error){
				func() (net.Conn, error) { return d.Dial(context.Background(), addr) },
				func() (net.Conn, error) { return net.Dial("tcp", r.Addr()) },
			}
			var setup, exchange [2]time.Duration
			for range b.N {
				var setups, exchanges [2][]time.Duration
				for range 20 {
					for i, dial := range ways {
						s, e := tlsTimes(b, dial, cfg)
						setups[i] = append(setups[i], s)
						exchanges[i] = append(exchanges[i], e)
					}
				}
				for i := range ways {
					setup[i], exchange[i] = median(setups[i]), median(exchanges[i])
				}
			}
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			b.ReportMetric(ms(setup[0]), "ms-setup-dialer")
			b.ReportMetric(ms(setup[1]), "ms-setup-relay")
			b.ReportMetric(float64(setup[1])/float64(setup[0]), "setup-relay/dialer")
			b.ReportMetric(ms(exchange[0]), "ms-exchange-dialer")
			b.ReportMetric(ms(exchange[1]), "ms-exchange-relay")
			b.ReportMetric(float64(exchange[1])/float64(exchange[0]), "exchange-relay/dialer")
		})
	}
}

// tlsTimes dials, runs a TLS handshake and exchanges one byte with a line
// echo: how long the dial and handshake took together, and the exchange.
func tlsTimes(tb testing.TB, dial func() (net.Conn, error), cfg *tls.Config) (setup, exchange time.Duration) {
	start := time.Now()
	raw, err := dial()
	if err != nil {
		tb.Fatal(err)
	}
	defer raw.Close()
	tc := tls.Client(raw, cfg)
	if err := tc.Handshake(); err != nil {
		tb.Fatal(err)
	}
	setup = time.Since(start)
	start = time.Now()
	var line [1]byte
	if _, err := tc.Write([]byte{'\n'}); err != nil {
		tb.Fatal(err)
	}
	if _, err := io.ReadFull(tc, line[:]); err != nil {
		tb.Fatal(err)
	}
	return setup, time.Since(start)
}

// TestRTTRoundTrips checks that the emulated link leaves the round-trip
// counts as they are without it.
func TestRTTRoundTrips(t *testing.T) {
	for _, tt := range []struct {
		version uint16
		want    int
	}{{tls.VersionTLS13, 1}, {tls.VersionTLS12, 2}} {
		addr, base := tlsListener(t, tt.version, false)
		cfg := base.Clone()
		cfg.MinVersion, cfg.MaxVersion = tt.version, tt.version
		plain := roundTrips(t, &Dialer{}, addr, cfg)
		rtt := 2 * time.Millisecond
		tr := roundTrips(t, &Dialer{RTT: rtt}, addr, cfg)
		want := map[string]int{PhaseTCP: 1, PhaseTLSHandshake: tt.want, "request": 1}
		for name, n := range want {
			p, _ := tr.Phase(name)
			q, _ := plain.Phase(name)
			if p.RoundTrips != n || q.RoundTrips != n {
				t.Errorf("TLS %x phase %s: %d round trips with rtt, %d without, want %d", tt.version, name, p.RoundTrips, q.RoundTrips, n)
			}
			if p.Duration < time.Duration(n)*rtt {
				t.Errorf("TLS %x phase %s: %v for %d round trips of %v", tt.version, name, p.Duration, n, rtt)
			}
		}
	}
}

// TestRTTServerFirst checks that a server that speaks first (MySQL's
// greeting) is heard one RTT after the connect, as on a real link.
func TestRTTServerFirst(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Write([]byte("hello"))
			defer c.Close()
			io.Copy(io.Discard, c)
		}
	}()
	rtt := 20 * time.Millisecond
	c, err := (&Dialer{RTT: rtt}).Dial(context.Background(), ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Mark("greeting")
	b := make([]byte, 5)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatal(err)
	}
	tr := c.Finish()
	p, _ := tr.Phase("greeting")
	if p.RoundTrips != 1 || p.Duration < rtt {
		t.Errorf("greeting: %d round trips in %v, want 1 in at least %v", p.RoundTrips, p.Duration, rtt)
	}
}

// TestRTTStream checks order and content over many writes of many sizes,
// and that writes do not wait for the link: a write that did would take at
// least the link's one-way delay (RTT/2, 1 s here) by itself, which no
// load makes a memory copy take; together they may take what the
// scheduler gives them.
func TestRTTStream(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for an emulated 2 s round trip: skipped under -short")
	}
	addr := echoListener(t)
	rtt := 2 * time.Second
	c, err := (&Dialer{RTT: rtt}).Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var sent bytes.Buffer
	start := time.Now()
	for i := range 200 {
		p := bytes.Repeat([]byte{byte(i)}, 1+i*97)
		sent.Write(p)
		began := time.Now()
		if _, err := c.Write(p); err != nil {
			t.Fatal(err)
		}
		if w := time.Since(began); w >= rtt/2 {
			t.Fatalf("write %d took %v: it waited for the link", i, w)
		}
	}
	got := make([]byte, sent.Len())
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, sent.Bytes()) {
		t.Error("the echo differs from what was sent")
	}
	if e := time.Since(start); e < rtt {
		t.Errorf("echo of %d bytes after %v, under one RTT", sent.Len(), e)
	}
}

// TestRTTDeadlineAndClose checks that deadlines bound reads of the emulated
// link, that Close wakes a blocked Read, and that no goroutine is left.
func TestRTTDeadlineAndClose(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for an emulated 1 s round trip: skipped under -short")
	}
	addr := echoListener(t)
	before := runtime.NumGoroutine()
	rtt := time.Second
	c, err := (&Dialer{RTT: rtt}).Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	// The echo is due in 1 s: a 20 ms deadline must cut the read short,
	// well before it (a loaded machine may take a while to act on it).
	c.Write([]byte("x"))
	c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	start := time.Now()
	var b [1]byte
	_, err = c.Read(b[:])
	// A timeout, not the byte: the deadline acted before the echo, due
	// at start+RTT, however late the scheduler let it act.
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read past the deadline after %v: %v, want a timeout", time.Since(start), err)
	}
	// Without a deadline the byte arrives.
	c.SetReadDeadline(time.Time{})
	if _, err := io.ReadFull(c, b[:]); err != nil || b[0] != 'x' {
		t.Fatalf("echo %q, %v", b, err)
	}
	// A Read blocked on nothing returns when the conn is closed.
	errc := make(chan error, 1)
	go func() { _, err := c.Read(b[:]); errc <- err }()
	time.Sleep(10 * time.Millisecond)
	c.Write([]byte("y")) // in flight at Close: flushed, then the socket closes
	c.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("read after close: %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not wake a blocked Read")
	}
	if _, err := c.Write([]byte("z")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("write after close: %v", err)
	}
	// The link's goroutines end (after flushing "y", within RTT/2).
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before+1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+1 {
		t.Errorf("%d goroutines left, %d before the dial", n, before)
	}
}

// TestRTTConnectCancel checks that a cancelled context ends the connect
// delay.
func TestRTTConnectCancel(t *testing.T) {
	addr := echoListener(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	rtt := time.Minute // far beyond any load's delay: a dial that waited it out is a bug
	if _, err := (&Dialer{RTT: rtt}).Dial(ctx, addr); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("dial: %v, want the context's error", err)
	}
	if e := time.Since(start); e >= rtt {
		t.Errorf("cancelled dial took %v, the whole emulated connect", e)
	}
}
