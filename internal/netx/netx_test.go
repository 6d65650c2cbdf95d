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
func tlsListener(t *testing.T, maxVersion uint16, preamble bool) (addr string, roots *tls.Config) {
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
		c := tls.Server(raw, cfg)
		br := bufio.NewReader(c)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			c.Write([]byte(line))
		}
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
// gets the tls-handshake phase from the record layer alone.
func TestSniffTLS(t *testing.T) {
	for _, version := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		addr, cfg := tlsListener(t, version, true)
		ctx := context.Background()
		c, err := (&Dialer{}).Dial(ctx, addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Mark("negotiate")
		c.SniffTLS("startup")
		c.Write([]byte{0, 0, 0, 8, 4, 210, 22, 47})
		var b [1]byte
		if _, err := io.ReadFull(c, b[:]); err != nil || b[0] != 'S' {
			t.Fatalf("preamble answer %q, %v", b, err)
		}
		tc := tls.Client(c, cfg)
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
