package tlsx

import (
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/plan"
)

// TestClientConfigCerts: a variant of the --client-cert dimension presents
// its key type's certificate, the off twin none, and a URL's certificate
// goes to every other TLS variant; the server receives it even when its
// list of acceptable CAs leaves the issuer out.
func TestClientConfigCerts(t *testing.T) {
	ca, other := mustCA(t), mustCA(t)
	certPEM, keyPEM, err := other.IssueClient("ecdsa-p256", "bench_cert")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	o := ClientOptions{RootCAs: ca.Pool(), ServerName: "127.0.0.1", ClientCerts: map[string]tls.Certificate{"ecdsa-p256": cert}}
	for _, tt := range []struct {
		v    plan.Variant
		url  bool
		want string
	}{
		{plan.Variant{ID: "a", TLS: "1.3", ClientCert: "ecdsa-p256"}, false, "ECDSA-P256"},
		{plan.Variant{ID: "b", TLS: "1.3", ClientCert: plan.ClientCertOff}, true, ""},
		{plan.Variant{ID: "c", TLS: "1.2"}, true, "ECDSA-P256"},
		{plan.Variant{ID: "d", TLS: "1.2"}, false, ""},
	} {
		oo := o
		if tt.url {
			oo.Certificate = &cert
		}
		c, err := ClientConfig(tt.v, oo)
		if err != nil {
			t.Fatal(err)
		}
		if got := ClientCertKey(c); got != tt.want {
			t.Errorf("%s: presents %q, want %q", tt.v.ID, got, tt.want)
		}
		if tt.want == "" {
			continue
		}
		// A server that lists only its own CA as acceptable still gets
		// the certificate (and rejects it, as it should).
		got := handshakeClientCert(t, ca, c)
		if got != "CN=bench_cert,O=tlsbench" {
			t.Errorf("%s: the server received %q", tt.v.ID, got)
		}
	}
	if _, err := ClientConfig(plan.Variant{ID: "e", TLS: "1.3", ClientCert: "rsa2048"}, o); err == nil {
		t.Error("a variant whose client certificate was not made got a config")
	}
}

func mustCA(t *testing.T) *CA {
	t.Helper()
	ca, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// handshakeClientCert runs a TLS server that asks for a client certificate
// issued by ca and returns the subject of the one the client c sent.
func handshakeClientCert(t *testing.T, ca *CA, c *tls.Config) string {
	t.Helper()
	certPEM, keyPEM, err := ca.Issue("ecdsa-p256", []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			got <- ""
			return
		}
		defer conn.Close()
		s := tls.Server(conn, &tls.Config{Certificates: []tls.Certificate{sc}, ClientAuth: tls.RequestClientCert, ClientCAs: ca.Pool()})
		s.Handshake()
		if pc := s.ConnectionState().PeerCertificates; len(pc) > 0 {
			got <- pc[0].Subject.String()
			return
		}
		got <- ""
	}()
	conn, err := tls.Dial("tcp", ln.Addr().String(), c)
	if err == nil {
		conn.Close()
	}
	return <-got
}

// TestSkipHostname: verify-ca checks the chain, not the name.
func TestSkipHostname(t *testing.T) {
	ca := mustCA(t)
	for _, tt := range []struct {
		roots *CA
		ok    bool
	}{{ca, true}, {mustCA(t), false}} {
		c, err := ClientConfig(plan.Variant{ID: "v", TLS: "1.3"}, ClientOptions{RootCAs: tt.roots.Pool(), ServerName: "not-the-name.example", SkipHostname: true})
		if err != nil {
			t.Fatal(err)
		}
		got := handshakeErr(t, ca, c)
		if (got == nil) != tt.ok || got != nil && !strings.Contains(got.Error(), "unknown authority") {
			t.Errorf("own CA %v: %v", tt.ok, got)
		}
	}
}

func handshakeErr(t *testing.T, ca *CA, c *tls.Config) error {
	t.Helper()
	certPEM, keyPEM, err := ca.Issue("ecdsa-p256", []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := tls.X509KeyPair(certPEM, keyPEM)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{sc}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if conn, err := ln.Accept(); err == nil {
			conn.(*tls.Conn).Handshake()
			conn.Close()
		}
	}()
	conn, err := tls.Dial("tcp", ln.Addr().String(), c)
	if err == nil {
		conn.Close()
	}
	return err
}

// TestKeyExposed: a client key that others than its owner may read or
// write is named with chmod 600 (libpq refuses such a key); one only its
// owner can use, or none at all, is not.
func TestKeyExposed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "client.key")
	if got := KeyExposed(path); got != "" {
		t.Errorf("a missing file: %q", got)
	}
	if err := os.WriteFile(path, []byte("key"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode os.FileMode
		warn bool
	}{{0o600, false}, {0o400, false}, {0o640, true}, {0o604, true}, {0o660, true}, {0o644, true}} {
		if err := os.Chmod(path, tc.mode); err != nil {
			t.Fatal(err)
		}
		got := KeyExposed(path)
		if tc.warn != (got != "") || tc.warn && !strings.Contains(got, "chmod 600 "+path) {
			t.Errorf("mode %04o: %q, want a warning %v naming chmod 600", tc.mode, got, tc.warn)
		}
	}
}
