package clientstack

import (
	"context"
	"crypto/tls"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// TestCurl: one curl process a run against the built-in HTTPS server:
// plain and TLS 1.3 connect runs whose transfers are each a connection
// the server counted (over TLS 1.3), a pool run whose transfers share the
// concurrency's connections, a run bounded by its duration, and a closed
// port's transfers failing as refused in tcp.
func TestCurl(t *testing.T) {
	labtest.Slow(t)
	srv := startHTTP(t)
	st, err := Lookup("http", "curl")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const n = 40
	for _, tc := range []struct {
		tls, experiment string
		conns           int64
	}{
		{"off", "connect", n},
		{"1.3", "connect", n},
		{"1.3", "pool", 2},
	} {
		t.Run(tc.experiment+"-"+tc.tls, func(t *testing.T) {
			cfg := srv.cfg
			cfg.Stack, cfg.TLS = st, tc.tls
			if tc.tls != "off" {
				cfg.Port = srv.tlsPort
			}
			c := startNativeT(t, cfg)
			if h := c.Hello(); h.Stack != "curl" || !strings.HasPrefix(h.Driver, "libcurl/") || !strings.HasPrefix(h.TLS, "OpenSSL/3.") || h.Model != "event-loop" {
				t.Errorf("hello %+v", h)
			}
			conns, tls13 := srv.count(t)
			rep, err := c.Run(ctx, Run{Experiment: tc.experiment, Concurrency: 2, MaxOps: n, Duration: 60 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			nativeCheckOps(t, rep, n, 2)
			if rep.TLS != nil || rep.Totals != nil {
				t.Errorf("TLS %+v, totals %+v: curl says neither", rep.TLS, rep.Totals)
			}
			gotConns, gotTLS := srv.count(t)
			wantTLS := tc.conns
			if tc.tls == "off" {
				wantTLS = 0
			}
			if gotConns-conns != tc.conns || gotTLS-tls13 != wantTLS {
				t.Errorf("the server counted %d connections (%d over TLS 1.3), want %d (%d)", gotConns-conns, gotTLS-tls13, tc.conns, wantTLS)
			}
		})
	}
	t.Run("duration", func(t *testing.T) {
		cfg := srv.cfg
		cfg.Stack, cfg.TLS = st, "off"
		c := startNativeT(t, cfg)
		rep, err := c.Run(ctx, Run{Experiment: "pool", Concurrency: 2, Duration: time.Second, Warmup: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Ops) < 10 || rep.Elapsed < time.Second || rep.Elapsed > 20*time.Second {
			t.Errorf("a 1 s run: %d operations in %v", len(rep.Ops), rep.Elapsed)
		}
		nativeCheckOps(t, rep, int64(len(rep.Ops)), 2)
	})
	t.Run("refused", func(t *testing.T) {
		cfg := srv.cfg
		cfg.Stack, cfg.TLS, cfg.Port = st, "1.3", closedPort(t)
		c := startNativeT(t, cfg)
		rep, err := c.Run(ctx, Run{Experiment: "connect", Concurrency: 1, MaxOps: 3, Duration: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Ops) != 3 {
			t.Fatalf("%d operations, want 3", len(rep.Ops))
		}
		for _, o := range rep.Ops {
			if o.Phase != "tcp" || o.Kind != "refused" || !strings.Contains(o.Message, "curl: (7) Failed to connect to 127.0.0.1 port "+strconv.Itoa(cfg.Port)) {
				t.Errorf("op %+v", o)
			}
		}
	})
	t.Run("wrong-ca", func(t *testing.T) {
		cfg := srv.cfg
		cfg.Stack, cfg.TLS, cfg.Port = st, "1.3", srv.tlsPort
		cfg.CA = filepath.Join(t.TempDir(), "other.pem")
		if err := os.WriteFile(cfg.CA, otherCA(t), 0o600); err != nil {
			t.Fatal(err)
		}
		c := startNativeT(t, cfg)
		rep, err := c.Run(ctx, Run{Experiment: "connect", Concurrency: 1, MaxOps: 1, Duration: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Ops) != 1 || rep.Ops[0].Phase != "tls-handshake" || rep.Ops[0].Kind != "tls" || !strings.Contains(rep.Ops[0].Message, "curl: (60)") {
			t.Errorf("ops %+v", rep.Ops)
		}
	})
}

// TestCurlCancel: a cancelled run ends at once, its curl reaped.
func TestCurlCancel(t *testing.T) {
	labtest.Slow(t)
	srv := startHTTP(t)
	st, _ := Lookup("http", "curl")
	cfg := srv.cfg
	cfg.Stack, cfg.TLS = st, "off"
	c := startNativeT(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, err := c.Run(ctx, Run{Experiment: "pool", Concurrency: 2, Duration: time.Minute})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(began) > 20*time.Second {
		t.Fatalf("err = %v after %v", err, time.Since(began))
	}
	if kids := children(t, "curl"); len(kids) > 0 {
		t.Errorf("curl processes left: %v", kids)
	}
}

// children are the processes of this test whose command is name.
func children(t *testing.T, name string) []string {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var kids []string
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid …
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || !strings.Contains(s[:i], "("+name) {
			continue
		}
		if f := strings.Fields(s[i+1:]); len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) {
			kids = append(kids, s[:i+1])
		}
	}
	return kids
}

// otherCA is the PEM of a CA that signed nothing the servers have.
func otherCA(t *testing.T) []byte {
	t.Helper()
	ca, err := tlsx.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	return ca.CertPEM
}

// checkHello checks that a ClientHello offered version only (GREASE
// aside; a TLS 1.2 hello lists 1.2 and below) and curve only.
func checkHello(t *testing.T, h *tls.ClientHelloInfo, version uint16, curve tls.CurveID) {
	t.Helper()
	if h == nil {
		t.Fatal("no ClientHello")
	}
	v := slices.DeleteFunc(slices.Clone(h.SupportedVersions), func(v uint16) bool { return v&0x0f0f == 0x0a0a })
	if len(v) == 0 || v[0] != version || (version == tls.VersionTLS13 && len(v) != 1) {
		t.Errorf("versions offered %x, want %x only", v, version)
	}
	if !slices.Equal(h.SupportedCurves, []tls.CurveID{curve}) {
		t.Errorf("groups offered %v, want %v", h.SupportedCurves, curve)
	}
}
