package server

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/tlsx"
)

type certSet struct {
	certs map[string]tls.Certificate
	pool  *x509.CertPool
}

// loadCerts issues certificates once per test binary.
var loadCerts = sync.OnceValues(func() (certSet, error) {
	ca, err := tlsx.NewCA()
	if err != nil {
		return certSet{}, err
	}
	set := certSet{certs: map[string]tls.Certificate{}, pool: ca.Pool()}
	for _, k := range []string{"rsa2048", "ecdsa-p256", "ed25519"} {
		c, key, err := ca.Issue(k, []string{"127.0.0.1", "localhost"})
		if err != nil {
			return set, err
		}
		pair, err := tls.X509KeyPair(c, key)
		if err != nil {
			return set, err
		}
		set.certs[k] = pair
	}
	return set, nil
})

func testCerts() (map[string]tls.Certificate, *x509.CertPool, error) {
	set, err := loadCerts()
	return set.certs, set.pool, err
}

func start(t *testing.T, cfg Config) (*Server, *x509.CertPool) {
	t.Helper()
	certs, pool, err := testCerts()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Certs == nil && cfg.HTTPSAddr != "" {
		cfg.Certs = certs
	}
	s, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, pool
}

func client(pool *x509.CertPool, c *tls.Config) *http.Client {
	if c == nil {
		c = &tls.Config{}
	}
	c.RootCAs = pool
	return &http.Client{
		Timeout: 10 * time.Second,
		// Offer h2 too: the server must still answer in HTTP/1.1.
		Transport: &http.Transport{TLSClientConfig: c, ForceAttemptHTTP2: true},
	}
}

func TestResponses(t *testing.T) {
	for _, size := range []int{0, 1024, 1 << 20} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			s, pool := start(t, Config{HTTPAddr: "127.0.0.1:0", HTTPSAddr: "127.0.0.1:0", ResponseSize: size})
			urls := map[string]string{"": "http://" + s.HTTPAddr() + "/"}
			for k, addr := range s.HTTPSAddrs() {
				urls[k] = "https://" + addr + "/any/path?q=1"
			}
			if len(urls) != 4 {
				t.Fatalf("endpoints %v, want plain and 3 keys", urls)
			}
			c := client(pool, nil)
			for key, url := range urls {
				resp, err := c.Get(url)
				if err != nil {
					t.Fatal(err)
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != 200 || len(body) != size || resp.ContentLength != int64(size) || resp.Proto != "HTTP/1.1" {
					t.Errorf("%s: %s %s, body %d bytes, Content-Length %d; want 200 HTTP/1.1 with %d bytes",
						url, resp.Proto, resp.Status, len(body), resp.ContentLength, size)
				}
				if key == "" {
					if resp.TLS != nil {
						t.Errorf("%s: plain endpoint spoke TLS", url)
					}
					continue
				}
				if got := tlsx.KeyTypeOf(tlsx.PeerKey(resp.TLS.PeerCertificates[0])); got != key {
					t.Errorf("%s: presented key %s, want %s", url, got, key)
				}
			}
		})
	}
}

// rawRequests sends requests by hand, to see exactly what the server does
// with the connection, and reads their responses.
func rawRequests(t *testing.T, conn net.Conn, requests ...string) (responses int, r *bufio.Reader) {
	t.Helper()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	r = bufio.NewReader(conn)
	for _, req := range requests {
		if _, err := io.WriteString(conn, req); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		responses++
	}
	return responses, r
}

// closedByServer reports whether the server closed the connection (EOF)
// within the connection's deadline.
func closedByServer(r *bufio.Reader) bool {
	_, err := r.ReadByte()
	return err == io.EOF
}

func TestKeepAliveAndClose(t *testing.T) {
	s, pool := start(t, Config{HTTPAddr: "127.0.0.1:0", HTTPSAddr: "127.0.0.1:0", ResponseSize: 100})
	get := "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
	getClose := "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
	dial := map[string]func() (net.Conn, error){
		"http": func() (net.Conn, error) { return net.Dial("tcp", s.HTTPAddr()) },
		"https": func() (net.Conn, error) {
			return tls.Dial("tcp", s.HTTPSAddrs()["ecdsa-p256"], &tls.Config{RootCAs: pool})
		},
	}
	for name, d := range dial {
		t.Run(name, func(t *testing.T) {
			// Three requests on one connection, the last asking to close:
			// the server answers all and closes first.
			conn, err := d()
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			n, r := rawRequests(t, conn, get, get, getClose)
			if closed := closedByServer(r); n != 3 || !closed {
				t.Errorf("%d responses, server closed %v; want 3 and the server closing", n, closed)
			}
		})
	}
}

func TestTLSSettings(t *testing.T) {
	s, pool := start(t, Config{HTTPSAddr: "127.0.0.1:0", ResponseSize: 10})
	s12, _ := start(t, Config{HTTPSAddr: "127.0.0.1:0", ResponseSize: 10, MaxTLS: tls.VersionTLS12})
	rsa, ecdsa := s.HTTPSAddrs()["rsa2048"], s.HTTPSAddrs()["ecdsa-p256"]
	tests := []struct {
		name    string
		addr    string
		cfg     *tls.Config
		version uint16 // 0: the handshake must fail
		suite   uint16
	}{
		{"1.3 by default", ecdsa, &tls.Config{}, tls.VersionTLS13, 0},
		{"1.2 when asked", ecdsa, &tls.Config{MaxVersion: tls.VersionTLS12}, tls.VersionTLS12, 0},
		{"1.0 refused", ecdsa, &tls.Config{MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}, 0, 0},
		{"weak suite on request", rsa, &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_RSA_WITH_AES_128_CBC_SHA}},
			tls.VersionTLS12, tls.TLS_RSA_WITH_AES_128_CBC_SHA},
		{"1.2-only server", s12.HTTPSAddrs()["ecdsa-p256"], &tls.Config{}, tls.VersionTLS12, 0},
		{"1.2-only server refuses 1.3", s12.HTTPSAddrs()["ecdsa-p256"], &tls.Config{MinVersion: tls.VersionTLS13}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg.Clone()
			cfg.RootCAs = pool
			cfg.NextProtos = []string{"h2", "http/1.1"}
			conn, err := tls.Dial("tcp", tt.addr, cfg)
			if tt.version == 0 {
				if err == nil {
					conn.Close()
					t.Fatalf("handshake succeeded with %s", tls.VersionName(conn.ConnectionState().Version))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			cs := conn.ConnectionState()
			if cs.Version != tt.version || (tt.suite != 0 && cs.CipherSuite != tt.suite) || cs.NegotiatedProtocol != "http/1.1" {
				t.Errorf("negotiated %s %s ALPN %q", tls.VersionName(cs.Version), tls.CipherSuiteName(cs.CipherSuite), cs.NegotiatedProtocol)
			}
		})
	}
}

func TestResumption(t *testing.T) {
	s, pool := start(t, Config{HTTPSAddr: "127.0.0.1:0", ResponseSize: 10})
	for _, version := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		t.Run(tls.VersionName(version), func(t *testing.T) {
			cfg := &tls.Config{RootCAs: pool, MaxVersion: version, ClientSessionCache: tls.NewLRUClientSessionCache(4)}
			var resumed []bool
			for range 2 {
				conn, err := tls.Dial("tcp", s.HTTPSAddrs()["ed25519"], cfg)
				if err != nil {
					t.Fatal(err)
				}
				// Reading the response also reads a TLS 1.3 ticket.
				rawRequests(t, conn, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
				resumed = append(resumed, conn.ConnectionState().DidResume)
				conn.Close()
			}
			if !slices.Equal(resumed, []bool{false, true}) {
				t.Errorf("resumed %v, want [false true]", resumed)
			}
		})
	}
}

func TestListenerOrder(t *testing.T) {
	certs := map[string]tls.Certificate{"ed25519": {}, "rsa2048": {}, "ecdsa-p256": {}, "custom": {}}
	tests := []struct {
		cfg     Config
		want    []string
		wantErr string
	}{
		{Config{HTTPSAddr: "x:0", Certs: certs}, []string{"rsa2048", "ecdsa-p256", "ed25519", "custom"}, ""},
		{Config{HTTPSAddr: "x:0", Certs: certs, Keys: []string{"custom", "ed25519", "rsa2048", "ecdsa-p256"}}, []string{"custom", "ed25519", "rsa2048", "ecdsa-p256"}, ""},
		{Config{HTTPSAddr: "", Certs: certs}, nil, ""},
		{Config{HTTPSAddr: "x:0"}, nil, "without a certificate"},
		{Config{HTTPSAddr: "x:0", Certs: certs, Keys: []string{"ed25519"}}, nil, "1 keys ordered for 4"},
		{Config{HTTPSAddr: "x:0", Certs: certs, Keys: []string{"a", "b", "c", "d"}}, nil, `no certificate for key type "a"`},
	}
	for _, tt := range tests {
		got, err := listenerOrder(tt.cfg)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("listenerOrder(%v) error %v, want %q", tt.cfg.Keys, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("listenerOrder(%v) = %v, %v; want %v", tt.cfg.Keys, got, err, tt.want)
		}
	}
}

func TestStartErrors(t *testing.T) {
	certs, _, err := testCerts()
	if err != nil {
		t.Fatal(err)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"nothing", Config{}, "nothing to serve"},
		{"negative size", Config{HTTPAddr: "127.0.0.1:0", ResponseSize: -1}, "negative"},
		{"TLS 1.1", Config{HTTPSAddr: "127.0.0.1:0", Certs: certs, MaxTLS: tls.VersionTLS11}, "TLS 1.1 is not supported"},
		{"bad address", Config{HTTPSAddr: "127.0.0.1", Certs: certs}, "HTTPS address"},
		{"HTTP port busy", Config{HTTPAddr: busy.Addr().String(), HTTPSAddr: "127.0.0.1:0", Certs: certs}, "HTTP listener"},
		{"HTTPS port busy", Config{HTTPAddr: "127.0.0.1:0", HTTPSAddr: busy.Addr().String(), Certs: certs}, "HTTPS listener for rsa2048"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Start(tt.cfg)
			if err == nil {
				s.Close()
				t.Fatal("Start succeeded")
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestClose(t *testing.T) {
	certs, _, err := testCerts()
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(Config{HTTPAddr: "127.0.0.1:0", HTTPSAddr: "127.0.0.1:0", Certs: certs})
	if err != nil {
		t.Fatal(err)
	}
	// An idle keep-alive connection must not hold Close up.
	idle, err := net.Dial("tcp", s.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	_, r := rawRequests(t, idle, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !closedByServer(r) {
		t.Error("Close left an idle connection open")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	addrs := []string{s.HTTPAddr()}
	for _, a := range s.HTTPSAddrs() {
		addrs = append(addrs, a)
	}
	for _, a := range addrs {
		if c, err := net.Dial("tcp", a); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after Close", a)
		}
	}
}
