package clientstack

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// helloProbe listens on loopback for one TLS connection, after prelude
// (if any) on the raw connection, and returns what its ClientHello
// offered; the handshake is then refused, so the tool fails, which is not
// what this looks at.
func helloProbe(t *testing.T, prelude func(net.Conn) error) (port int, hello <-chan *tls.ClientHelloInfo) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ch := make(chan *tls.ClientHelloInfo, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		if prelude != nil && prelude(c) != nil {
			return
		}
		tls.Server(c, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			ch <- h
			return nil, errors.New("seen")
		}}).Handshake()
	}()
	return ln.Addr().(*net.TCPAddr).Port, ch
}

// pgSSLAnswer plays a PostgreSQL server up to TLS: the client's
// SSLRequest read, answered 'S'.
func pgSSLAnswer(c net.Conn) error {
	if _, err := io.ReadFull(c, make([]byte, 8)); err != nil {
		return err
	}
	_, err := c.Write([]byte("S"))
	return err
}

// checkHello checks that a ClientHello offered version only and curve
// only. A TLS 1.2 hello has no supported_versions: Go lists 1.2 and below
// for it. GREASE values aside.
func checkHello(t *testing.T, h *tls.ClientHelloInfo, version uint16, curve tls.CurveID) {
	t.Helper()
	v := slices.DeleteFunc(slices.Clone(h.SupportedVersions), func(v uint16) bool { return v&0x0f0f == 0x0a0a })
	if len(v) == 0 || v[0] != version || (version == tls.VersionTLS13 && len(v) != 1) {
		t.Errorf("versions offered %x, want %x only", v, version)
	}
	if !slices.Equal(h.SupportedCurves, []tls.CurveID{curve}) {
		t.Errorf("groups offered %v, want %v", h.SupportedCurves, curve)
	}
}

// TestNativeTLSPins: what a C stack offers when its variant pins the TLS
// version and the group, by the tool's own flags (libpq, curl's --tlsv1.x
// --tls-max and --curves) or by the OPENSSL_CONF file tlsbench writes
// where it has none (hiredis; libmariadb under sysbench, after a MySQL
// greeting that offers TLS).
func TestNativeTLSPins(t *testing.T) {
	labtest.Slow(t)
	// Any certificate and key serve sysbench: the handshake never gets
	// that far.
	ca, err := tlsx.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := tlsx.WriteClientFiles(dir, ca, []string{"ecdsa-p256"}, "probe"); err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		engine, stack, workload string
		prelude                 func(net.Conn) error
		// ends: the run ends on its own, curl's one transfer failing in
		// tls-handshake, sysbench's run failing; the others' runs are
		// cancelled once the hello is seen.
		ends       bool
		tls, group string
		version    uint16
		curve      tls.CurveID
	}{
		{"postgres", "libpq", "ping", pgSSLAnswer, false, "1.2", "P-256", tls.VersionTLS12, tls.CurveP256},
		{"postgres", "libpq", "ping", pgSSLAnswer, false, "1.3", "X25519", tls.VersionTLS13, tls.X25519},
		{"redis", "hiredis", "ping", nil, false, "1.2", "X25519", tls.VersionTLS12, tls.X25519},
		{"redis", "hiredis", "ping", nil, false, "1.3", "P-384", tls.VersionTLS13, tls.CurveP384},
		{"http", "curl", "request", nil, true, "1.2", "P-256", tls.VersionTLS12, tls.CurveP256},
		{"http", "curl", "request", nil, true, "1.3", "X25519", tls.VersionTLS13, tls.X25519},
		{"mysql", "libmariadb", "point-select", mysqlGreeting, true, "1.2", "P-256", tls.VersionTLS12, tls.CurveP256},
		{"mysql", "libmariadb", "point-select", mysqlGreeting, true, "1.3", "X25519", tls.VersionTLS13, tls.X25519},
	} {
		t.Run(tc.stack+"-"+tc.tls, func(t *testing.T) {
			port, hello := helloProbe(t, tc.prelude)
			st, err := Lookup(tc.engine, tc.stack)
			if err != nil {
				t.Fatal(err)
			}
			cfg := Config{Stack: st, Host: "127.0.0.1", Port: port, User: "u", Database: "d", TLS: tc.tls, Verify: "none",
				Group: tc.group, Workload: tc.workload, Path: "/", Timeout: 5 * time.Second}
			if tc.stack == "libmariadb" {
				cfg.Verify, cfg.CA = "ca", caFile
				cfg.Cert, cfg.Key = tlsx.ClientCertFile(dir, "ecdsa-p256"), tlsx.ClientKeyFile(dir, "ecdsa-p256")
			}
			c := startStack(t, cfg)
			ctx, cancel := context.WithCancel(context.Background())
			ran := make(chan struct{})
			var rep Report
			var runErr error
			go func() {
				defer close(ran)
				rep, runErr = c.Run(ctx, Run{Experiment: "pool", Concurrency: 1, MaxOps: 1, Duration: 10 * time.Second})
			}()
			defer func() { cancel(); <-ran }()
			select {
			case h := <-hello:
				checkHello(t, h, tc.version, tc.curve)
			case <-time.After(30 * time.Second):
				t.Fatal("no ClientHello")
			}
			if tc.ends {
				<-ran
				if runErr == nil && (len(rep.Ops) != 1 || rep.Ops[0].Phase != "tls-handshake") {
					t.Errorf("a run against a probe: ops %+v", rep.Ops)
				}
			}
		})
	}
}

// handshakeServer is a TLS server on loopback that counts the handshakes
// it completes, full and resumed, and closes each connection.
func handshakeServer(t *testing.T) (port int, full, resumed *atomic.Int64) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	full, resumed = new(atomic.Int64), new(atomic.Int64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				tc := c.(*tls.Conn)
				tc.SetDeadline(time.Now().Add(10 * time.Second))
				if tc.Handshake() != nil {
					return
				}
				if tc.ConnectionState().DidResume {
					resumed.Add(1)
				} else {
					full.Add(1)
				}
				io.Copy(io.Discard, tc) // until the client closes
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, full, resumed
}

// TestSTime: openssl s_time's count of connections is the handshakes a
// TLS server completed: full ones under -new, resumed ones (after one
// full handshake a process) under -reuse.
func TestSTime(t *testing.T) {
	labtest.Slow(t)
	st, err := Lookup("http", "openssl")
	if err != nil {
		t.Fatal(err)
	}
	for _, resume := range []bool{false, true} {
		t.Run(map[bool]string{false: "new", true: "reuse"}[resume], func(t *testing.T) {
			port, full, resumed := handshakeServer(t)
			// s_time resumes TLS 1.3 only when it reads (a path): 1.2 here.
			cfg := Config{Stack: st, Host: "127.0.0.1", Port: port, TLS: map[bool]string{false: "1.3", true: "1.2"}[resume],
				Verify: "none", Resume: resume, Workload: "request", Timeout: 5 * time.Second}
			c := startStack(t, cfg)
			rep, err := c.Run(context.Background(), Run{Experiment: "connect", Concurrency: 2, Duration: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Totals == nil || rep.Totals.Ops < 2 || rep.Totals.Mean != 0 || rep.CPU <= 0 {
				t.Fatalf("report %+v, totals %+v", rep, rep.Totals)
			}
			time.Sleep(100 * time.Millisecond) // the server's last counts
			wantFull, wantResumed := rep.Totals.Ops, int64(0)
			if resume {
				wantFull, wantResumed = 2, rep.Totals.Ops
			}
			if full.Load() != wantFull || resumed.Load() != wantResumed {
				t.Errorf("the server completed %d full and %d resumed handshakes; s_time counted %d", full.Load(), resumed.Load(), rep.Totals.Ops)
			}
		})
	}
}
