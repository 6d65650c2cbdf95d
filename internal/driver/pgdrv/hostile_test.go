package pgdrv

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/drivertest"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/script"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// silentAfterS answers the SSLRequest with 'S', as a PostgreSQL server with
// TLS does, and then says nothing.
func silentAfterS(c net.Conn) {
	var req [8]byte
	if _, err := io.ReadFull(c, req[:]); err != nil {
		return
	}
	c.Write([]byte("S"))
	drivertest.Drain(c)
}

// hostileConfig is a TLS 1.3 variant to addr that trusts a new CA.
func hostileConfig(t *testing.T, addr string, timeout time.Duration) driver.Config {
	t.Helper()
	ca, err := tlsx.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	v := plan.Variant{TLS: "1.3"}
	tc, err := tlsx.ClientConfig(v, tlsx.ClientOptions{RootCAs: ca.Pool(), ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("postgres://tlsbench:secret@" + addr + "/sbtest?sslmode=disable")
	return driver.Config{Variant: v, Addr: addr, Host: addr, TLS: tc, Dialer: &netx.Dialer{}, Timeout: timeout,
		URL: u, Workload: driver.Workload{Tables: 1, Rows: 1}}
}

func newDriver(t *testing.T, cfg driver.Config) driver.Driver {
	t.Helper()
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestHandshakeTimeout: a server that answers 'S' and then stays silent
// ends the handshake at the timeout with one line that names the phase,
// not with a panic in pgx.
func TestHandshakeTimeout(t *testing.T) {
	const timeout = 500 * time.Millisecond
	addr := drivertest.Listen(t, silentAfterS)
	d := newDriver(t, hostileConfig(t, addr, timeout))
	start := time.Now()
	_, err := d.Open(context.Background())
	took := time.Since(start)
	var oe *driver.OpError
	if !errors.As(err, &oe) || oe.Phase != netx.PhaseTLSHandshake || !strings.Contains(err.Error(), "did not answer within --timeout 500ms") {
		t.Errorf("Open: %v, want a tls-handshake error that says the server did not answer in time", err)
	}
	if took > timeout+drivertest.Margin {
		t.Errorf("Open took %v, timeout %v", took, timeout)
	}
	if k := driver.Kind(err); k != "tls-handshake: timeout" {
		t.Errorf("Kind = %q", k)
	}
	if strings.Contains(err.Error(), "secret") {
		t.Error("the error shows the password")
	}
	t.Logf("%v after %v", err, took.Round(time.Millisecond))
}

// TestCancelHandshakes cancels the run while eight handshakes wait on the
// silent server: every Open returns cancelled at once, none panics.
func TestCancelHandshakes(t *testing.T) {
	addr := drivertest.Listen(t, silentAfterS)
	d := newDriver(t, hostileConfig(t, addr, time.Minute))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	errs := make([]error, 8)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() {
			s, err := d.Open(ctx)
			if err == nil {
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	took := time.Since(start)
	for i, err := range errs {
		if !errors.Is(err, context.Canceled) || driver.Kind(err) != "tls-handshake: canceled" {
			t.Errorf("Open %d: %v (%s), want a cancelled tls-handshake", i, err, driver.Kind(err))
		}
	}
	if took > drivertest.Margin {
		t.Errorf("the Opens returned %v after the start, cancel at 100ms", took)
	}
	t.Logf("%v after %v", errs[0], took.Round(time.Millisecond))
}

// TestVerifyFailures: the lab server's certificate checked against a CA
// tlsbench was not given, or for a name it does not list, is one line
// that says what to pass; no panic.
func TestVerifyFailures(t *testing.T) {
	for _, tc := range []struct {
		name       string
		serverName string
		otherCA    bool
		want       string
	}{
		{"unknown CA", "127.0.0.1", true, "is signed by an unknown authority: pass --ca FILE with the issuing CA certificate, or --insecure"},
		{"wrong name", "db.example", false, "not db.example: connect by a name the certificate lists, or pass --insecure"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := mustConfig(t, "scram-sha-256", "1.3", driver.Workload{})
			roots := srv.RootCAs()
			if tc.otherCA {
				ca, err := tlsx.NewCA()
				if err != nil {
					t.Fatal(err)
				}
				roots = ca.Pool()
			}
			var err error
			cfg.TLS, err = tlsx.ClientConfig(cfg.Variant, tlsx.ClientOptions{RootCAs: roots, ServerName: tc.serverName})
			if err != nil {
				t.Fatal(err)
			}
			_, err = newDriver(t, cfg).Open(context.Background())
			var oe *driver.OpError
			if !errors.As(err, &oe) || oe.Phase != netx.PhaseTLSHandshake || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("Open: %v, want one tls-handshake line with %q", err, tc.want)
			}
			if k := driver.Kind(err); k != "tls-handshake: certificate" {
				t.Errorf("Kind = %q", k)
			}
			t.Log(err)
		})
	}
}

// TestPlainToTLSPort: a plaintext startup message to a TLS port (a
// crypto/tls server, which closes on it) asks whether it is a TLS port.
func TestPlainToTLSPort(t *testing.T) {
	addr := drivertest.TLSListener(t)
	cfg := hostileConfig(t, addr, 2*time.Second)
	cfg.Variant, cfg.TLS = plan.Variant{TLS: "off"}, nil
	_, err := newDriver(t, cfg).Open(context.Background())
	want := "the server at " + addr + " closed the connection on the plaintext request: is it a TLS port? use sslmode=require"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Open: %v, want %q", err, want)
	}
	t.Log(err)
}

// TestRefused: nothing listening is said so.
func TestRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = newDriver(t, hostileConfig(t, addr, time.Second)).Open(context.Background())
	if err == nil || !strings.Contains(err.Error(), "nothing is listening at "+addr) || driver.Kind(err) != "tcp: refused" {
		t.Errorf("Open: %v (%s), want a refused tcp error that says nothing is listening", err, driver.Kind(err))
	}
	t.Log(err)
}

// TestCertFiles: sslrootcert, sslcert and sslkey that are not regular
// files (/dev/zero, a FIFO) are one line from New, at once; pgx would read
// /dev/zero until memory ran out.
func TestCertFiles(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "root.crt")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"sslrootcert=/dev/zero", "sslrootcert=" + fifo, "sslcert=/dev/zero&sslkey=/dev/zero"} {
		cfg := hostileConfig(t, "127.0.0.1:1", time.Second)
		cfg.URL.RawQuery = q
		start := time.Now()
		_, err := New(cfg)
		took := time.Since(start)
		if err == nil || !strings.Contains(err.Error(), "is not a regular file") || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: %v, want one line that says it is not a regular file", q, err)
		}
		if took > drivertest.Margin {
			t.Errorf("%s: New took %v", q, took)
		}
		t.Logf("%s: %v (%v)", q, err, took)
	}
}

// TestHugeMessage: a message header that claims 1 GiB (pgx's own bound,
// which it would allocate at once) fails at the driver's 16 MiB bound,
// without the allocation.
func TestHugeMessage(t *testing.T) {
	addr := drivertest.Listen(t, func(c net.Conn) {
		var n [4]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return
		}
		// The startup message, then an authentication request of 1 GiB.
		io.CopyN(io.Discard, c, int64(n[0])<<24|int64(n[1])<<16|int64(n[2])<<8|int64(n[3])-4)
		c.Write([]byte{'R', 0x3f, 0xff, 0xff, 0xff})
		drivertest.Drain(c)
	})
	cfg := hostileConfig(t, addr, 2*time.Second)
	cfg.Variant, cfg.TLS = plan.Variant{TLS: "off"}, nil
	d := newDriver(t, cfg)
	var err error
	start := time.Now()
	growth := drivertest.HeapGrowth(func() { _, err = d.Open(context.Background()) })
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "more than the 16 MiB tlsbench reads") {
		t.Errorf("Open: %v, want a message too large", err)
	}
	if growth > drivertest.MaxGrowth || took > cfg.Timeout {
		t.Errorf("the heap grew by %d MiB in %v", growth>>20, took)
	}
	t.Logf("%v after %v, heap +%d KiB", err, took.Round(time.Millisecond), growth>>10)
}

// TestFailsMidSession: a server that resets the connection, closes it
// mid-answer or answers garbage after a session's first script pass fails
// the next pass with that cause, in every query mode, not with the "conn
// closed" pgconn says once it has closed the connection itself.
func TestFailsMidSession(t *testing.T) {
	sc, err := script.Parse(context.Background(), "one.sql", "SELECT 1;\n", 1, script.Postgres)
	if err != nil {
		t.Fatal(err)
	}
	mix, err := script.NewMix(sc)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		m          drivertest.Misbehaviour
		kind, want string
	}{
		{drivertest.Reset, "query: reset", "connection reset by peer"},
		{drivertest.CloseMidAnswer, "query: closed by server", "unexpected EOF"},
		{drivertest.Garbage, "query: other", "more than the 16 MiB tlsbench reads: is it a PostgreSQL server?"},
	} {
		for _, mode := range []string{"simple", "prepared"} {
			t.Run(tc.m.String()+" "+mode, func(t *testing.T) {
				cfg := mustConfig(t, "", "off", driver.Workload{QueryMode: mode, Scripts: mix})
				p := drivertest.NewProxy(t, cfg.Addr)
				cfg.Addr, cfg.Timeout = p.Addr, 2*time.Second
				s := open(t, cfg)
				defer s.Close()
				if err := s.Do(context.Background()); err != nil {
					t.Fatal(err)
				}
				p.Turn(tc.m)
				err := s.Do(context.Background())
				if kind := driver.Kind(err); kind != tc.kind || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%v (%s), want %s with %q", err, kind, tc.kind, tc.want)
				}
			})
		}
	}
}
