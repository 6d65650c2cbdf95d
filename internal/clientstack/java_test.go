package clientstack

import (
	"crypto/tls"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/server"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// TestJavaStacks runs every Java stack (clients/java/Client.java) against
// its real server, as TestPythonStacks does: plain and TLS 1.3 connect runs
// whose operations are each one connection the server counted, TLS 1.3 as
// the stack says, and a pool of 2 opening 2. A JVM compiling the source
// file costs seconds of CPU, so the TLS connect run and the pool run share
// one process.
func TestJavaStacks(t *testing.T) {
	labtest.Slow(t)
	for _, tc := range []struct {
		engine, stack string
		start         func(t *testing.T) counted
	}{
		{"postgres", "pgjdbc", startPostgres},
		{"mysql", "connector-j", startMariaDB},
		{"redis", "jedis", startRedis},
		{"mongodb", "mongodb-java", startMongoDB},
		{"http", "java-httpclient", startHTTP},
	} {
		t.Run(tc.stack, func(t *testing.T) {
			srv := tc.start(t)
			st, err := Lookup(tc.engine, tc.stack)
			if err != nil {
				t.Fatal(err)
			}
			cfg := srv.cfg
			cfg.Stack, cfg.TLS = st, "off"
			checkConnect(t, startClient(t, cfg), srv, cfg)
			cfg.TLS, cfg.Port = "1.3", srv.tlsPort
			c := startClient(t, cfg)
			checkConnect(t, c, srv, cfg)
			checkPool(t, c, srv, cfg)
		})
	}
}

// startHTTP starts the built-in server and counts what reached it: the
// connections that sent requests (one remote address each), and of them
// those over TLS 1.3.
func startHTTP(t *testing.T) counted {
	ca, err := tlsx.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.Issue("ecdsa-p256", []string{"127.0.0.1", "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	conns, tls13 := map[string]bool{}, map[string]bool{}
	srv, err := server.Start(server.Config{HTTPAddr: "127.0.0.1:0", HTTPSAddr: "127.0.0.1:0",
		Certs: map[string]tls.Certificate{"ecdsa-p256": pair}, ResponseSize: 64,
		Check: func(r *http.Request) int {
			mu.Lock()
			defer mu.Unlock()
			conns[r.RemoteAddr] = true
			if r.TLS != nil && r.TLS.Version == tls.VersionTLS13 {
				tls13[r.RemoteAddr] = true
			}
			return 200
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	port := func(addr string) int {
		_, p, _ := net.SplitHostPort(addr)
		n, _ := strconv.Atoi(p)
		return n
	}
	cfg := Config{Host: "127.0.0.1", Port: port(srv.HTTPAddr()), CA: caFile, Verify: "full", ServerName: "127.0.0.1",
		Workload: "request", Path: "/", Timeout: 10 * time.Second}
	return counted{cfg, port(srv.HTTPSAddrs()["ecdsa-p256"]), func(t *testing.T) (int64, int64) {
		mu.Lock()
		defer mu.Unlock()
		return int64(len(conns)), int64(len(tls13))
	}}
}
