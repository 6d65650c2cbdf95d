package clientstack

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/lab/labtest"
)

// helloProbe listens on loopback for one TLS connection (after
// PostgreSQL's SSLRequest, answered 'S', if sslRequest) and returns what
// its ClientHello offered; the handshake is then refused, so the tool
// fails, which is not what this looks at.
func helloProbe(t *testing.T, sslRequest bool) (port int, hello <-chan *tls.ClientHelloInfo) {
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
		if sslRequest {
			if _, err := io.ReadFull(c, make([]byte, 8)); err != nil {
				return
			}
			c.Write([]byte("S"))
		}
		tls.Server(c, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			ch <- h
			return nil, errors.New("seen")
		}}).Handshake()
	}()
	return ln.Addr().(*net.TCPAddr).Port, ch
}

// TestNativeTLSPins: what a C stack offers when its variant pins the TLS
// version and the group, by the tool's own flags or by the OPENSSL_CONF
// file tlsbench writes where it has none.
func TestNativeTLSPins(t *testing.T) {
	labtest.Slow(t)
	for _, tc := range []struct {
		engine, stack string
		sslRequest    bool
		tls, group    string
		version       uint16
		curve         tls.CurveID
	}{
		{"postgres", "libpq", true, "1.2", "P-256", tls.VersionTLS12, tls.CurveP256},
		{"postgres", "libpq", true, "1.3", "X25519", tls.VersionTLS13, tls.X25519},
		{"redis", "hiredis", false, "1.2", "X25519", tls.VersionTLS12, tls.X25519},
		{"redis", "hiredis", false, "1.3", "P-384", tls.VersionTLS13, tls.CurveP384},
	} {
		t.Run(tc.stack+"-"+tc.tls, func(t *testing.T) {
			port, hello := helloProbe(t, tc.sslRequest)
			st, err := Lookup(tc.engine, tc.stack)
			if err != nil {
				t.Fatal(err)
			}
			cfg := Config{Stack: st, Host: "127.0.0.1", Port: port, User: "u", Database: "d", TLS: tc.tls, Verify: "none",
				Group: tc.group, Workload: "ping", Timeout: 5 * time.Second}
			c := startNativeT(t, cfg)
			ctx, cancel := context.WithCancel(context.Background())
			ran := make(chan struct{})
			go func() {
				defer close(ran)
				c.Run(ctx, Run{Experiment: "pool", Concurrency: 1, MaxOps: 1, Duration: 5 * time.Second})
			}()
			defer func() { cancel(); <-ran }()
			select {
			case h := <-hello:
				// A TLS 1.2 hello has no supported_versions: Go lists 1.2
				// and below for it. GREASE values aside.
				v := slices.DeleteFunc(slices.Clone(h.SupportedVersions), func(v uint16) bool { return v&0x0f0f == 0x0a0a })
				if len(v) == 0 || v[0] != tc.version || (tc.version == tls.VersionTLS13 && len(v) != 1) {
					t.Errorf("versions offered %x, want %x only", v, tc.version)
				}
				if !slices.Equal(h.SupportedCurves, []tls.CurveID{tc.curve}) {
					t.Errorf("groups offered %v, want %v", h.SupportedCurves, tc.curve)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("no ClientHello")
			}
		})
	}
}
