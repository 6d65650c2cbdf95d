package netx

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// tlsListener runs a real crypto/tls server that answers each line with a line.
func tlsListener(t testing.TB, maxVersion uint16, preamble bool) (addr string, roots *tls.Config) {
	t.Helper()
	ca, err := tlsx.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.Issue("ecdsa-p256", []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MaxVersion: maxVersion}
	addr = listen(t, func(raw net.Conn) {
		if preamble {
			// Like PostgreSQL's SSLRequest: 8 bytes in, 'S' out.
			var b [8]byte
			if _, err := io.ReadFull(raw, b[:]); err != nil {
				return
			}
			raw.Write([]byte("S"))
		}
		echo(tls.Server(raw, cfg))
	})
	return addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}
}

// listen runs a real TCP server on loopback that hands each connection to
// handle, and closes it after.
func listen(t testing.TB, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// roundTrips dials, handshakes and exchanges one line, returning the trace.
func roundTrips(t *testing.T, d *Dialer, addr string, cfg *tls.Config) Trace {
	t.Helper()
	ctx := context.Background()
	c, err := d.Dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tc, err := Handshake(ctx, c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Mark("request")
	if _, err := tc.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(tc).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	return c.Finish()
}

func TestRoundTrips(t *testing.T) {
	cache := tls.NewLRUClientSessionCache(8)
	tests := []struct {
		name    string
		version uint16
		resume  bool
		want    int // round trips of the TLS handshake
	}{
		{"TLS 1.3 full", tls.VersionTLS13, false, 1},
		{"TLS 1.2 full", tls.VersionTLS12, false, 2},
		{"TLS 1.2 resumed", tls.VersionTLS12, true, 1},
		{"TLS 1.3 resumed", tls.VersionTLS13, true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr, base := tlsListener(t, tt.version, false)
			cfg := base.Clone()
			cfg.MinVersion, cfg.MaxVersion = tt.version, tt.version
			if tt.resume {
				cfg.ClientSessionCache = cache
				roundTrips(t, &Dialer{}, addr, cfg) // gets a ticket
			}
			tr := roundTrips(t, &Dialer{}, addr, cfg)
			want := map[string]int{PhaseTCP: 1, PhaseTLSHandshake: tt.want, "request": 1}
			for name, n := range want {
				p, ok := tr.Phase(name)
				if !ok || p.RoundTrips != n {
					t.Errorf("phase %s: %d round trips, want %d (trace %+v)", name, p.RoundTrips, n, tr.Phases)
				}
			}
		})
	}
}

func TestPhasesAddUp(t *testing.T) {
	addr, cfg := tlsListener(t, tls.VersionTLS13, false)
	tr := roundTrips(t, &Dialer{}, addr, cfg)
	var sum time.Duration
	at := tr.Start
	for _, p := range tr.Phases {
		if p.Start.Before(at) {
			t.Errorf("phase %s starts before the previous one ends", p.Name)
		}
		if p.Duration <= 0 {
			t.Errorf("phase %s has duration %v", p.Name, p.Duration)
		}
		at = p.Start.Add(p.Duration)
		sum += p.Duration
	}
	if sum != tr.Total() {
		t.Errorf("phases add up to %v, total is %v", sum, tr.Total())
	}
	if tr.Sent == 0 || tr.Received == 0 {
		t.Errorf("bytes not counted: sent %d, received %d", tr.Sent, tr.Received)
	}
}

// TestSniffTLS checks that a driver running TLS inside its own protocol
// gets the phases of the rule: the preamble's answer starts tls-handshake
// (MarkOnAnswer), and the handshake ends where the server's last handshake
// flight arrived, found from the record layer alone.
func TestSniffTLS(t *testing.T) {
	for _, version := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		addr, cfg := tlsListener(t, version, true)
		ctx := context.Background()
		c, err := (&Dialer{}).Dial(ctx, addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Mark("negotiate")
		c.MarkOnAnswer(PhaseTLSHandshake)
		c.SniffTLS("startup")
		c.Write([]byte{0, 0, 0, 8, 4, 210, 22, 47})
		var b [1]byte
		if _, err := io.ReadFull(c, b[:]); err != nil || b[0] != 'S' {
			t.Fatalf("preamble answer %q, %v", b, err)
		}
		answerS := c.TurnRead()
		tc := tls.Client(c, cfg)
		if err := tc.Handshake(); err != nil {
			t.Fatal(err)
		}
		lastFlight := c.TurnRead()
		if _, err := tc.Write([]byte("hello\n")); err != nil {
			t.Fatal(err)
		}
		if _, err := bufio.NewReader(tc).ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		tc.Close()
		tr := c.Finish()
		hs := map[uint16]int{tls.VersionTLS12: 2, tls.VersionTLS13: 1}[version]
		want := []struct {
			name string
			rt   int
		}{{PhaseTCP, 1}, {"negotiate", 1}, {PhaseTLSHandshake, hs}, {"startup", 1}}
		if len(tr.Phases) != len(want) {
			t.Fatalf("TLS %x: phases %+v", version, tr.Phases)
		}
		for i, w := range want {
			if p := tr.Phases[i]; p.Name != w.name || p.RoundTrips != w.rt {
				t.Errorf("TLS %x: phase %d is %s with %d round trips, want %s with %d", version, i, p.Name, p.RoundTrips, w.name, w.rt)
			}
		}
		if got := tr.Phases[2].Start; !got.Equal(answerS) {
			t.Errorf("TLS %x: tls-handshake starts %v after the 'S' arrived", version, got.Sub(answerS))
		}
		if got := tr.Phases[3].Start; !got.Equal(lastFlight) {
			t.Errorf("TLS %x: startup starts %v after the server's last handshake flight arrived", version, got.Sub(lastFlight))
		}
		if tr.Phases[2].Duration <= 0 {
			t.Errorf("TLS %x: tls-handshake lasts %v", version, tr.Phases[2].Duration)
		}
	}
}

// TestMarkAnswer: a phase marked after its answer was read ends where the
// answer arrived, not where the client went on.
func TestMarkAnswer(t *testing.T) {
	addr := listen(t, func(c net.Conn) {
		io.Copy(c, c)
	})
	c, err := (&Dialer{}).Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Mark("ask")
	c.Write([]byte("x"))
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		t.Fatal(err)
	}
	arrived := c.TurnRead()
	time.Sleep(5 * time.Millisecond) // the client's own work
	c.MarkAnswer("next")
	c.MarkAnswer("empty") // no answer: ends where it began
	tr := c.Finish()
	next, _ := tr.Phase("next")
	empty, _ := tr.Phase("empty")
	if !next.Start.Equal(arrived) || next.Duration != 0 || !empty.Start.Equal(arrived) || empty.Duration < 5*time.Millisecond {
		t.Errorf("answer arrived at %v; next %+v, empty %+v", arrived, next, empty)
	}
}

// TestWatchRecords: a TLS 1.3 server that asks for a client certificate
// sends its NewSessionTicket after the client's Finished, before it reads
// the request: the first read after the request brings the ticket, and
// RecordRead is the arrival of the answer's record, 20 ms later.
func TestWatchRecords(t *testing.T) {
	ca, err := tlsx.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(name string) tls.Certificate {
		certPEM, keyPEM, err := ca.Issue("ecdsa-p256", []string{name})
		if err != nil {
			t.Fatal(err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		return cert
	}
	const delay = 20 * time.Millisecond
	srv := &tls.Config{Certificates: []tls.Certificate{leaf("127.0.0.1")}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool()}
	addr := listen(t, func(raw net.Conn) {
		c := tls.Server(raw, srv)
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			return
		}
		time.Sleep(delay)
		c.Write([]byte(line))
	})
	tickets := &ticketTimes{}
	cfg := &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1", Certificates: []tls.Certificate{leaf("client")},
		MinVersion: tls.VersionTLS13, ClientSessionCache: tickets}
	c, err := (&Dialer{}).Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tc, err := Handshake(context.Background(), c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.WatchRecords()
	if _, err := tc.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(tc)
	if _, err := br.Peek(1); err != nil {
		t.Fatal(err)
	}
	answer, first := c.RecordRead(), c.TurnRead()
	c.StopRecords()
	if line, err := br.ReadString('\n'); err != nil || line != "ping\n" {
		t.Fatalf("answer %q, %v", line, err)
	}
	if c.records != nil {
		t.Error("the Conn still watches records after StopRecords with an empty buffer")
	}
	if tickets.put.IsZero() {
		t.Fatal("no session ticket arrived")
	}
	if first.After(tickets.put) || !answer.After(tickets.put) || answer.Sub(first) < delay {
		t.Errorf("first read after the request %v, ticket handled %v, answer's record %v (want the answer %v after the first read, after the ticket)",
			first, tickets.put.Sub(first), answer.Sub(first), delay)
	}
}

// ticketTimes is a session cache that notes when a ticket was stored.
type ticketTimes struct{ put time.Time }

func (s *ticketTimes) Get(string) (*tls.ClientSessionState, bool) { return nil, false }
func (s *ticketTimes) Put(_ string, cs *tls.ClientSessionState) {
	if cs != nil && s.put.IsZero() {
		s.put = time.Now()
	}
}

func TestLoopbackSources(t *testing.T) {
	addr, cfg := tlsListener(t, 0, false)
	d := &Dialer{Sources: LoopbackSources(3)}
	seen := map[netip.Addr]bool{}
	for range 6 {
		c, err := d.Dial(context.Background(), addr)
		if err != nil {
			t.Fatal(err)
		}
		seen[c.LocalAddr().(*net.TCPAddr).AddrPort().Addr()] = true
		c.Close()
	}
	for _, s := range LoopbackSources(3) {
		if !seen[s] {
			t.Errorf("source %s never used (used %v)", s, seen)
		}
	}
	_ = cfg
	// A target outside loopback keeps the kernel's choice.
	if _, ok := d.source("192.0.2.1:443"); ok {
		t.Error("a non-loopback target got a loopback source")
	}
}

// TestTurnsWithBackgroundReader: a driver whose reader runs in the
// background (pgx's, once a write is slow) may read the answer while the
// writer has not returned from Write yet; the turn must count all the
// same, and a server's farewell in a one-way phase must not.
func TestTurnsWithBackgroundReader(t *testing.T) {
	addr := listen(t, func(c net.Conn) {
		r := bufio.NewReader(c)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			if line == "bye\n" {
				c.Write([]byte("farewell\n")) // as a TLS server's close_notify
				return
			}
			c.Write([]byte(line))
		}
	})
	DelayWrites(50 * time.Millisecond)
	t.Cleanup(func() { DelayWrites(0) })
	c, err := (&Dialer{}).Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	lines := make(chan error, 1)
	read := func() {
		_, err := bufio.NewReader(c).ReadString('\n')
		lines <- err
	}
	c.Mark("request")
	for i := range 3 {
		go read() // waits before the write begins, reads while the writer sleeps
		if _, err := c.Write([]byte("ping\n")); err != nil {
			t.Fatal(err)
		}
		if err := <-lines; err != nil {
			t.Fatal(err)
		}
		if c.Waiting() || c.Turns() != int64(2+i) {
			t.Fatalf("exchange %d answered: waiting %v, %d turns (want false, %d)", i, c.Waiting(), c.Turns(), 2+i)
		}
	}
	c.MarkOneWay(PhaseClose)
	go read()
	if _, err := c.Write([]byte("bye\n")); err != nil {
		t.Fatal(err)
	}
	if err := <-lines; err != nil {
		t.Fatal(err)
	}
	tr := c.Finish()
	req, _ := tr.Phase("request")
	cl, _ := tr.Phase(PhaseClose)
	if req.RoundTrips != 3 || cl.RoundTrips != 0 {
		t.Errorf("request %d round trips (want 3), close %d (want 0): %+v", req.RoundTrips, cl.RoundTrips, tr.Phases)
	}
}
