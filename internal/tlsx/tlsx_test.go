package tlsx

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
)

func newCA(t *testing.T) *CA {
	t.Helper()
	ca, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// TestIssue issues a leaf of every key type (rsa4096 once, in parallel with
// the others) and checks what a client would see of it.
func TestIssue(t *testing.T) {
	ca := newCA(t)
	tests := []struct {
		key, peerKey string
	}{
		{"rsa1024", "RSA-1024"},
		{"rsa2048", "RSA-2048"},
		{"rsa4096", "RSA-4096"},
		{"ecdsa-p256", "ECDSA-P256"},
		{"ecdsa-p384", "ECDSA-P384"},
		{"ed25519", "Ed25519"},
	}
	if len(tests) != len(plan.KeyTypes) {
		t.Fatalf("test covers %d key types, plan has %d", len(tests), len(plan.KeyTypes))
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			if tt.key == "rsa4096" && testing.Short() {
				t.Skip("an RSA-4096 key takes seconds to generate: make test issues it")
			}
			t.Parallel()
			certPEM, keyPEM, err := ca.Issue(tt.key, localHosts)
			if err != nil {
				t.Fatal(err)
			}
			pair, err := tls.X509KeyPair(certPEM, keyPEM)
			if err != nil {
				t.Fatal(err)
			}
			leaf := pair.Leaf
			if got := PeerKey(leaf); got != tt.peerKey {
				t.Errorf("PeerKey = %q, want %q", got, tt.peerKey)
			}
			if got := KeyTypeOf(PeerKey(leaf)); got != tt.key {
				t.Errorf("KeyTypeOf(%q) = %q, want %q", PeerKey(leaf), got, tt.key)
			}
			for _, host := range localHosts {
				_, err := leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
				if err != nil {
					t.Errorf("verify for %s: %v", host, err)
				}
			}
		})
	}
}

func TestGenerateKeyUnknown(t *testing.T) {
	if _, err := GenerateKey("rsa512"); err == nil || !strings.Contains(err.Error(), "rsa2048") {
		t.Errorf("GenerateKey(rsa512) = %v, want an error listing the key types", err)
	}
}

func TestKeyTypeOf(t *testing.T) {
	tests := []struct{ in, want string }{
		{"RSA-2048", "rsa2048"},
		{"RSA-1024", "rsa1024"},
		{"RSA-3072", ""},
		{"ECDSA-P384", "ecdsa-p384"},
		{"ECDSA-P521", ""},
		{"Ed25519", "ed25519"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := KeyTypeOf(tt.in); got != tt.want {
			t.Errorf("KeyTypeOf(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestServerFiles(t *testing.T) {
	ca := newCA(t)
	dir := t.TempDir()
	keys := []string{"ecdsa-p256", "ed25519"}
	if err := WriteServerFiles(dir, ca, keys); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		fi, err := os.Stat(filepath.Join(dir, k+".key"))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s.key mode %v, want 0600", k, fi.Mode().Perm())
		}
		c, err := LoadServerCert(dir, k)
		if err != nil {
			t.Fatal(err)
		}
		if got := KeyTypeOf(PeerKey(c.Leaf)); got != k {
			t.Errorf("loaded %s certificate has key %q", k, got)
		}
	}
	pool, err := LoadCAFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if !pool.Equal(ca.Pool()) {
		t.Error("LoadCAFile pool differs from the CA's")
	}
	if _, err := LoadServerCert(dir, "rsa2048"); err == nil {
		t.Error("LoadServerCert of a missing key type succeeded")
	}
	if err := WriteServerFiles(dir, ca, []string{"dsa"}); err == nil {
		t.Error("WriteServerFiles of an unknown key type succeeded")
	}

	// A key file is not a CA file.
	_, err = LoadCAFile(filepath.Join(dir, "ecdsa-p256.key"))
	if err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("LoadCAFile(key file) = %v, want a no-PEM-certificate error", err)
	}
	bad := filepath.Join(dir, "bad.crt")
	os.WriteFile(bad, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("junk")}), 0o644)
	if _, err := LoadCAFile(bad); err == nil {
		t.Error("LoadCAFile of a corrupt certificate succeeded")
	}
}

// TestCAFileNotAFile: --ca /dev/zero, a FIFO (opening one blocks until a
// writer comes) or a directory is one line at once, not a hang or an
// endless read.
func TestCAFileNotAFile(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "ca.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(t.TempDir(), "huge.crt")
	if err := os.WriteFile(huge, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, 8<<20); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{"/dev/zero", "is not a regular file (a character device)"},
		{fifo, "is not a regular file (a named pipe)"},
		{t.TempDir(), "is a directory"},
		{huge, "is larger than 4 MiB"},
	} {
		start := time.Now()
		_, err := LoadCAFile(tc.path)
		took := time.Since(start)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("LoadCAFile(%s) = %v, want one line with %q", tc.path, err, tc.want)
		}
		if took > time.Second {
			t.Errorf("LoadCAFile(%s) took %v", tc.path, took)
		}
		t.Logf("%v (%v)", err, took)
	}
}

func TestClientConfig(t *testing.T) {
	cache := tls.NewLRUClientSessionCache(8)
	opts := ClientOptions{Sessions: cache, ServerName: "localhost", ALPN: []string{"http/1.1"}}
	gcm := "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"
	tests := []struct {
		v        plan.Variant
		o        ClientOptions
		min, max uint16
		suites   []uint16
		resumes  bool
		wantErr  string
	}{
		{v: plan.Variant{ID: "tls1.2", TLS: "1.2"}, o: opts, min: tls.VersionTLS12, max: tls.VersionTLS12},
		{v: plan.Variant{ID: "tls1.3", TLS: "1.3"}, o: opts, min: tls.VersionTLS13, max: tls.VersionTLS13},
		{v: plan.Variant{ID: "tlsauto", TLS: "auto"}, o: opts, min: tls.VersionTLS12},
		{v: plan.Variant{TLS: "1.2", Cipher: gcm}, o: opts, min: tls.VersionTLS12, max: tls.VersionTLS12, suites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}},
		{v: plan.Variant{TLS: "1.2", Cipher: "rsa_with_aes_128_cbc_sha"}, o: opts, min: tls.VersionTLS12, max: tls.VersionTLS12, suites: []uint16{tls.TLS_RSA_WITH_AES_128_CBC_SHA}},
		{v: plan.Variant{TLS: "1.3", Resume: true}, o: opts, min: tls.VersionTLS13, max: tls.VersionTLS13, resumes: true},
		{v: plan.Variant{ID: "plain", TLS: "off"}, o: opts, wantErr: "plain"},
		{v: plan.Variant{TLS: "1.3", Cipher: gcm}, o: opts, wantErr: "TLS 1.2 only"},
		{v: plan.Variant{TLS: "1.2", Cipher: "TLS_NOPE"}, o: opts, wantErr: "unknown TLS 1.2 cipher suite"},
		{v: plan.Variant{TLS: "1.3", Resume: true}, wantErr: "no session cache"},
	}
	for _, tt := range tests {
		t.Run(tt.v.TLS+" "+tt.v.Cipher+tt.v.Group, func(t *testing.T) {
			c, err := ClientConfig(tt.v, tt.o)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.MinVersion != tt.min || c.MaxVersion != tt.max {
				t.Errorf("versions %x-%x, want %x-%x", c.MinVersion, c.MaxVersion, tt.min, tt.max)
			}
			if !equalSuites(c.CipherSuites, tt.suites) {
				t.Errorf("CipherSuites = %v, want %v", c.CipherSuites, tt.suites)
			}
			if (c.ClientSessionCache != nil) != tt.resumes {
				t.Errorf("ClientSessionCache set = %v, want %v", c.ClientSessionCache != nil, tt.resumes)
			}
			if c.ServerName != "localhost" || len(c.NextProtos) != 1 || c.NextProtos[0] != "http/1.1" {
				t.Errorf("ServerName %q, NextProtos %v", c.ServerName, c.NextProtos)
			}
		})
	}
}

func equalSuites(a, b []uint16) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// tlsServer is a real crypto/tls listener on 127.0.0.1:0 that completes the
// handshake, writes one byte (so that TLS 1.3 tickets reach the client) and
// closes.
func tlsServer(t *testing.T, certPEM, keyPEM []byte, minVersion, maxVersion uint16) string {
	t.Helper()
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: minVersion, MaxVersion: maxVersion, NextProtos: []string{"http/1.1"}}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
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
				c.SetDeadline(time.Now().Add(5 * time.Second))
				if c.(*tls.Conn).Handshake() == nil {
					c.Write([]byte{1})
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// handshake dials addr as variant v would and returns the connection state.
func handshake(t *testing.T, addr string, v plan.Variant, o ClientOptions) (tls.ConnectionState, error) {
	t.Helper()
	cfg, err := ClientConfig(v, o)
	if err != nil {
		t.Fatal(err)
	}
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	// TLS 1.2 may return the close_notify with the byte: n counts.
	if n, err := c.Read(make([]byte, 1)); n != 1 {
		t.Fatal(err)
	}
	return c.ConnectionState(), nil
}

func TestDescribe(t *testing.T) {
	ca := newCA(t)
	certPEM, keyPEM, err := ca.Issue("ecdsa-p256", localHosts)
	if err != nil {
		t.Fatal(err)
	}
	addr := tlsServer(t, certPEM, keyPEM, 0, 0)
	cache := tls.NewLRUClientSessionCache(8)
	tests := []struct {
		v       plan.Variant
		version string
		suite   string // prefix
		group   string
	}{
		{plan.Variant{TLS: "1.3"}, "TLS 1.3", "TLS_", "X25519MLKEM768"},
		{plan.Variant{TLS: "auto"}, "TLS 1.3", "TLS_", "X25519MLKEM768"},
		{plan.Variant{TLS: "1.2"}, "TLS 1.2", "TLS_ECDHE_ECDSA_", "X25519"},
		{plan.Variant{TLS: "1.2", Cipher: "ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"}, "TLS 1.2", "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "X25519"},
		// The NIST curves as tables and the wire decoder spell them.
		{plan.Variant{TLS: "1.3", Group: plan.GroupP256}, "TLS 1.3", "TLS_", "P-256"},
		{plan.Variant{TLS: "1.2", Group: plan.GroupP384}, "TLS 1.2", "TLS_ECDHE_ECDSA_", "P-384"},
	}
	for _, tt := range tests {
		t.Run(tt.v.TLS+" "+tt.v.Cipher+tt.v.Group, func(t *testing.T) {
			cs, err := handshake(t, addr, tt.v, ClientOptions{RootCAs: ca.Pool(), Sessions: cache, ALPN: []string{"http/1.1"}})
			if err != nil {
				t.Fatal(err)
			}
			n := Describe(cs)
			if n.Version != tt.version || !strings.HasPrefix(n.Suite, tt.suite) || n.Group != tt.group || n.PeerKey != "ECDSA-P256" || n.ALPN != "http/1.1" {
				t.Errorf("Describe = %+v, want %s, %s*, %s, ECDSA-P256, http/1.1", n, tt.version, tt.suite, tt.group)
			}
		})
	}

	// Resumption follows Variant.Resume alone.
	for _, resume := range []bool{false, true} {
		v := plan.Variant{TLS: "1.3", Resume: resume}
		o := ClientOptions{RootCAs: ca.Pool(), Sessions: tls.NewLRUClientSessionCache(8)}
		if _, err := handshake(t, addr, v, o); err != nil {
			t.Fatal(err)
		}
		cs, err := handshake(t, addr, v, o)
		if err != nil {
			t.Fatal(err)
		}
		if cs.DidResume != resume {
			t.Errorf("Resume %v: second connection DidResume = %v", resume, cs.DidResume)
		}
		if n := Describe(cs); n.PeerKey != "ECDSA-P256" {
			t.Errorf("Resume %v: PeerKey %q", resume, n.PeerKey)
		}
	}
}

// TestExplain makes each kind of handshake failure happen for real and
// checks the line Explain makes of it.
func TestExplain(t *testing.T) {
	ca := newCA(t)
	other := newCA(t)
	now := time.Now()
	good, goodKey, err := ca.Issue("ecdsa-p256", localHosts)
	if err != nil {
		t.Fatal(err)
	}
	expired, expiredKey, err := ca.issue("ecdsa-p256", localHosts, now.Add(-48*time.Hour), now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	future, futureKey, err := ca.issue("ecdsa-p256", localHosts, now.Add(24*time.Hour), now.Add(48*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	goodAddr := tlsServer(t, good, goodKey, 0, 0)
	tls12Addr := tlsServer(t, good, goodKey, 0, tls.VersionTLS12)
	tls13Addr := tlsServer(t, good, goodKey, tls.VersionTLS13, 0)
	expiredAddr := tlsServer(t, expired, expiredKey, 0, 0)
	futureAddr := tlsServer(t, future, futureKey, 0, 0)
	httpAddr := httpServer(t)
	closedAddr := closedPort(t)

	v13 := plan.Variant{ID: "tls1.3", TLS: "1.3"}
	v12 := plan.Variant{ID: "tls1.2", TLS: "1.2"}
	trusted := ClientOptions{RootCAs: ca.Pool()}
	tests := []struct {
		name string
		addr string
		v    plan.Variant
		o    ClientOptions
		want string // "" means returned as is
		as   any    // error type that must stay reachable
	}{
		{"unknown CA", goodAddr, v13, ClientOptions{RootCAs: other.Pool()},
			"certificate of ADDR is signed by an unknown authority: pass --ca FILE with the issuing CA certificate, or --insecure to skip verification",
			new(x509.UnknownAuthorityError)},
		{"wrong host", goodAddr, v13, ClientOptions{RootCAs: ca.Pool(), ServerName: "db.example.com"},
			"certificate of ADDR is valid for localhost, 127.0.0.1, ::1, not db.example.com: connect by a name the certificate lists, or pass --insecure",
			new(x509.HostnameError)},
		{"expired", expiredAddr, v13, trusted,
			"certificate of ADDR expired on " + stamp(now.Add(-time.Hour)) + ": renew it, or pass --insecure",
			new(x509.CertificateInvalidError)},
		{"not yet valid", futureAddr, v13, trusted,
			"certificate of ADDR is not valid before " + stamp(now.Add(24*time.Hour)) + " (check this machine's clock): wait, fix the certificate, or pass --insecure",
			new(x509.CertificateInvalidError)},
		{"1.3 of a 1.2 server", tls12Addr, v13, trusted,
			"ADDR does not speak TLS 1.3 (server said: protocol version not supported): use --tls 1.2 or auto", nil},
		{"1.2 of a 1.3 server", tls13Addr, v12, trusted,
			"ADDR does not speak TLS 1.2 (server said: protocol version not supported): use --tls 1.3 or auto", nil},
		{"RSA suite of an ECDSA server", goodAddr, plan.Variant{ID: "tls1.2 ECDHE_RSA_WITH_AES_128_GCM_SHA256", TLS: "1.2", Cipher: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}, trusted,
			"ADDR and tlsbench share no cipher suite for tls1.2 ECDHE_RSA_WITH_AES_128_GCM_SHA256 (server said: handshake failure): the server does not accept TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 with its key; choose another --cipher or leave it out", nil},
		{"plain HTTP server", httpAddr, v12, trusted,
			"ADDR does not speak TLS (it answered in plain HTTP): is it a plaintext port? check the port, or use the plain variant (--tls off)",
			new(tls.RecordHeaderError)},
		{"nothing listening", closedAddr, v13, trusted,
			"nothing is listening at ADDR (connection refused): is the server running, and is that its port?", new(*net.OpError)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, herr := handshake(t, tt.addr, tt.v, tt.o)
			if herr == nil {
				t.Fatal("handshake succeeded")
			}
			got := Explain(herr, tt.addr, tt.v)
			if tt.want == "" {
				if got != herr {
					t.Errorf("Explain changed %q into %q", herr, got)
				}
				return
			}
			want := strings.ReplaceAll(tt.want, "ADDR", tt.addr)
			if got.Error() != want {
				t.Errorf("Explain(%q)\n got %s\nwant %s", herr, got, want)
			}
			if !errors.Is(got, herr) {
				t.Error("explained error does not wrap the original")
			}
			if tt.as != nil && !errors.As(got, tt.as) {
				t.Errorf("explained error lost its %T", tt.as)
			}
		})
	}
	if Explain(nil, goodAddr, v13) != nil {
		t.Error("Explain(nil) != nil")
	}

	// An error explained where it happened keeps its line when a caller
	// wrapped it and explains it again.
	_, herr := handshake(t, goodAddr, v13, ClientOptions{RootCAs: other.Pool()})
	once := Explain(herr, goodAddr, v13)
	again := Explain(fmt.Errorf("tls-handshake: %w", once), goodAddr, v13)
	if again.Error() != once.Error() || !errors.Is(again, herr) {
		t.Errorf("explained twice: %q, want %q", again, once)
	}
}

// httpServer is a real plain HTTP server on 127.0.0.1:0.
func httpServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.NotFoundHandler(), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// closedPort returns an address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
