package bench

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// tlsSession is a Session over a real TLS handshake with a loopback
// crypto/tls server: what verifyClientCert reads is the Conn's note of
// the server's CertificateRequest and the negotiated state.
type tlsSession struct{ driver.Link }

func (tlsSession) Do(context.Context) error { return nil }
func (s tlsSession) Close() error           { return s.Net.Close() }

// tlsListener is a loopback TLS server that asks for client certificates
// as auth says; its handshakes run until the client's side is done.
func tlsListener(t *testing.T, ca *tlsx.CA, auth tls.ClientAuthType) string {
	t.Helper()
	certPEM, keyPEM, err := ca.Issue("ecdsa-p256", []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: auth, ClientCAs: ca.Pool()})
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
				c.SetDeadline(time.Now().Add(10 * time.Second))
				c.(*tls.Conn).Handshake()
				c.Read(make([]byte, 1)) // until the client closes
			}()
		}
	}()
	return ln.Addr().String()
}

// TestVerifyClientCert: a client certificate given to a server that never
// asked for one (no CertificateRequest in a full handshake) fails the check
// with the engine's own remedy, whether the certificate is the lab's (a
// --client-cert variant) or the user's (--cert); a server that asks (and
// one that only requests it) gets it, and the check says it was sent; a
// resumed handshake, which never asks, passes (the check then asks the
// server's own view).
func TestVerifyClientCert(t *testing.T) {
	ca, err := tlsx.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.IssueClient("ecdsa-p256", "bench_cert")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	lab := plan.Variant{ID: "tls1.3 mtls-ecdsa-p256", TLS: "1.3", ClientCert: "ecdsa-p256"}
	url := plan.Variant{ID: "tls1.3", TLS: "1.3"}
	resume := plan.Variant{ID: "tls1.3 resume", TLS: "1.3", Resume: true}
	base := tlsx.ClientOptions{RootCAs: ca.Pool(), ServerName: "127.0.0.1", Sessions: tls.NewLRUClientSessionCache(4)}
	config := func(v plan.Variant, o tlsx.ClientOptions) *tls.Config {
		t.Helper()
		c, err := tlsx.ClientConfig(v, o)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	withCert, withLab := base, base
	withCert.Certificate = &cert
	withLab.ClientCerts = map[string]tls.Certificate{"ecdsa-p256": cert}
	labCfg, urlCfg, none, resumeCfg := config(lab, withLab), config(url, withCert), config(url, base), config(resume, withCert)

	asks := tlsListener(t, ca, tls.RequireAndVerifyClientCert)
	requests := tlsListener(t, ca, tls.RequestClientCert)
	silent := tlsListener(t, ca, tls.NoClientCert)
	open := func(addr string, c *tls.Config) tlsSession {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		nc, err := (&netx.Dialer{}).Dial(ctx, addr)
		if err != nil {
			t.Fatal(err)
		}
		tc, err := netx.Handshake(ctx, nc, c)
		if err != nil {
			nc.Close()
			t.Fatal(err)
		}
		return tlsSession{driver.Link{Net: nc, Secure: tc}}
	}
	// The resumed session: a full handshake first fills the cache.
	first := open(asks, resumeCfg)
	// TLS 1.3 tickets arrive after the handshake: a read takes them.
	first.Secure.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	first.Secure.Read(make([]byte, 1))
	first.Close()
	resumed := open(asks, resumeCfg)
	defer resumed.Close()
	if st, _ := resumed.TLS(); !st.DidResume {
		t.Fatal("the second session did not resume: the case of a resumed check is not tested")
	}

	for _, tt := range []struct {
		name   string
		v      plan.Variant
		c      *tls.Config
		s      tlsSession
		engine string
		sent   bool
		want   []string // in the error; none: no error
		absent string   // not in the error: another engine's remedy
	}{
		{name: "asked, lab", v: lab, c: labCfg, s: open(asks, labCfg), engine: "postgres", sent: true},
		{name: "asked, --cert", v: url, c: urlCfg, s: open(asks, urlCfg), engine: "http", sent: true},
		{name: "requested (optional)", v: url, c: urlCfg, s: open(requests, urlCfg), engine: "http", sent: true},
		{name: "no certificate", v: url, c: none, s: open(silent, none), engine: "redis"},
		{name: "not asked, redis", v: url, c: urlCfg, s: open(silent, urlCfg), engine: "redis",
			want: []string{"did not ask for a client certificate", "ECDSA-P256", "tls-auth-clients yes", "leave --cert out"}, absent: "pg_hba"},
		{name: "not asked, postgres", v: url, c: urlCfg, s: open(silent, urlCfg), engine: "postgres",
			want: []string{"pg_hba.conf", "clientcert=verify-full", "sslcert="}, absent: "REQUIRE X509"},
		{name: "not asked, mysql", v: url, c: urlCfg, s: open(silent, urlCfg), engine: "mysql",
			want: []string{"REQUIRE X509", "ssl-ca", "ssl-cert="}, absent: "pg_hba"},
		{name: "not asked, mongodb", v: url, c: urlCfg, s: open(silent, urlCfg), engine: "mongodb",
			want: []string{"net.tls.CAFile", "--tlsCAFile", "allowConnectionsWithoutCertificates", "--listen-tls-ca-file"}, absent: "pg_hba"},
		{name: "not asked, https", v: url, c: urlCfg, s: open(silent, urlCfg), engine: "http",
			want: []string{"ssl_verify_client on", "ClientAuth"}, absent: "pg_hba"},
		{name: "not asked, lab", v: lab, c: labCfg, s: open(silent, labCfg), engine: "builtin",
			want: []string{"--client-ca", "report this"}},
		{name: "resumed", v: resume, c: resumeCfg, s: resumed, engine: "redis", sent: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sent, err := verifyClientCert(tt.v, tt.c, &tt.s, tt.engine, "127.0.0.1:1")
			if tt.s.Secure != nil && tt.s.Net != resumed.Net {
				defer tt.s.Close()
			}
			switch {
			case len(tt.want) == 0 && err != nil:
				t.Fatalf("error %v", err)
			case len(tt.want) > 0 && err == nil:
				t.Fatalf("no error, want one with %q", tt.want)
			case sent != tt.sent:
				t.Errorf("sent %v, want %v", sent, tt.sent)
			}
			if err == nil {
				return
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v\nwant %q in it", err, w)
				}
			}
			if tt.absent != "" && strings.Contains(err.Error(), tt.absent) {
				t.Errorf("%v\nnames another engine's remedy (%q)", err, tt.absent)
			}
		})
	}
}
