package plan

import (
	"strings"
	"testing"
)

// TestClientCertURL: each engine's URL parameters for client certificates
// become the Spec's files, with libpq's sslmode meanings; conflicts and
// spellings of other ecosystems are one line each.
func TestClientCertURL(t *testing.T) {
	for _, tc := range []struct {
		target, cert, key, ca string
		flagCert              string
		skipHost, insecure    bool
		err                   string
	}{
		{target: "postgres://u@127.0.0.1/db?sslmode=verify-full&sslcert=/c.pem&sslkey=/k.pem&sslrootcert=/ca.pem", cert: "/c.pem", key: "/k.pem", ca: "/ca.pem"},
		{target: "postgres://u@127.0.0.1/db?sslmode=verify-ca&sslcert=/c.pem&sslkey=/k.pem&sslrootcert=/ca.pem", cert: "/c.pem", key: "/k.pem", ca: "/ca.pem", skipHost: true},
		{target: "postgres://u@127.0.0.1/db?sslmode=require&sslcert=/c.pem&sslkey=/k.pem", cert: "/c.pem", key: "/k.pem", insecure: true},
		// libpq: require with a root CA file verifies the chain (verify-ca).
		{target: "postgres://u@127.0.0.1/db?sslmode=require&sslrootcert=/ca.pem", ca: "/ca.pem", skipHost: true},
		{target: "postgres://u@127.0.0.1/db?sslmode=verify-full&sslrootcert=system"},
		{target: "postgres://u@127.0.0.1/db?sslmode=require&sslrootcert=system", err: "sslrootcert=system: libpq allows it with sslmode=verify-full only"},
		{target: "postgres://u@127.0.0.1/db?sslmode=require&sslcert=/c.pem", err: "sslcert= without sslkey=: give sslkey= too"},
		{target: "postgres://u@127.0.0.1/db?sslmode=require&sslkey=/k.pem", err: "names a key but no certificate: give the certificate too (sslcert= and sslkey=)"},
		{target: "postgres://u@127.0.0.1/db?sslmode=require&sslcert=/c.pem&sslkey=/k.pem", flagCert: "/d.pem", err: "--cert and the URL's sslcert= and sslkey= both name a client certificate"},
		{target: "mysql://u@127.0.0.1/db?tls=true&ssl-ca=/ca.pem&ssl-cert=/c.pem&ssl-key=/k.pem", cert: "/c.pem", key: "/k.pem", ca: "/ca.pem"},
		{target: "mysql://u@127.0.0.1/db?tls=true&ssl_cert=/c.pem", err: "ssl_cert: use ssl-ca=, ssl-cert= and ssl-key="},
		{target: "mysql://u@127.0.0.1/db?tls=skip-verify&ssl-ca=/ca.pem", err: "ssl-ca= verifies the server, tls=skip-verify does not"},
		{target: "mongodb://127.0.0.1/?tlsCertificateKeyFile=/ck.pem&tlsCAFile=/ca.pem", cert: "/ck.pem", key: "/ck.pem", ca: "/ca.pem"},
		{target: "mongodb://127.0.0.1/?tls=true&tlsCertificateKeyFile=/ck.pem&authMechanism=MONGODB-X509", cert: "/ck.pem", key: "/ck.pem"},
		{target: "mongodb://127.0.0.1/?tls=true&authMechanism=MONGODB-X509", err: "authMechanism=MONGODB-X509 logs in with the client certificate: give tlsCertificateKeyFile="},
		{target: "mongodb://127.0.0.1/?tls=true&tlsCertificateKeyFilePassword=x", err: "tlsbench does not decrypt keys"},
		{target: "rediss://127.0.0.1:6380", flagCert: "/c.pem", cert: "/c.pem", key: "/c.pem"},
		{target: "redis://127.0.0.1:6379", flagCert: "/c.pem", err: "--cert is sent in the TLS handshake: add 1.2, 1.3 or auto to --tls"},
		{target: "https://127.0.0.1:8443/", flagCert: "/c.pem", cert: "/c.pem", key: "/c.pem"},
		{target: "lab:postgres", flagCert: "/c.pem", err: "--cert applies to URL targets"},
	} {
		s, err := New(Spec{Target: tc.target, CertFile: tc.flagCert})
		msg := ""
		if err != nil {
			msg = err.(*Error).Spell(func(f string) string { return "--" + map[string]string{"cert_file": "cert", "tls": "tls"}[f] })
		}
		if tc.err != "" {
			if !strings.Contains(msg, tc.err) {
				t.Errorf("%s: error %q, want %q", tc.target, msg, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.target, err)
			continue
		}
		if s.CertFile != tc.cert || s.CertKeyFile != tc.key || s.CAFile != tc.ca || s.Insecure != tc.insecure {
			t.Errorf("%s: cert %q key %q ca %q insecure %v, want %q %q %q %v", tc.target, s.CertFile, s.CertKeyFile, s.CAFile, s.Insecure, tc.cert, tc.key, tc.ca, tc.insecure)
		}
		if tg, _ := ParseTarget(s.Target); tg.SkipHostname != tc.skipHost {
			t.Errorf("%s: skip host name %v, want %v", tc.target, tg.SkipHostname, tc.skipHost)
		}
	}
}

// TestClientCertVariants: --client-cert is a dimension of the TLS variants
// only, named in IDs only when given; bad values are one line.
func TestClientCertVariants(t *testing.T) {
	s, err := New(Spec{Lab: "postgres", TLS: []string{"off", "1.3"}, ClientCerts: []string{"off", "ecdsa-p256"}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, v := range s.Variants() {
		ids = append(ids, v.ID+"="+v.ClientCert)
	}
	if got, want := strings.Join(ids, ", "), "plain=, tls1.3 rsa2048=off, tls1.3 rsa2048 mtls-ecdsa-p256=ecdsa-p256"; got != want {
		t.Errorf("variants %s, want %s", got, want)
	}
	for _, tc := range []struct {
		spec Spec
		err  string
	}{
		{Spec{Lab: "redis", ClientCerts: []string{"rsa512"}}, "client_certs: unknown key type \"rsa512\": use off or one of"},
		{Spec{Lab: "redis", ClientCerts: []string{"off", "off"}}, "client_certs: off is given twice"},
		{Spec{Lab: "redis", TLS: []string{"off"}, ClientCerts: []string{"rsa2048"}}, "client_certs applies to TLS variants"},
		{Spec{Target: "https://127.0.0.1/", ClientCerts: []string{"rsa2048"}}, "client_certs applies to servers tlsbench starts"},
	} {
		if _, err := New(tc.spec); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%+v: %v, want %q", tc.spec, err, tc.err)
		}
	}
}

// TestClientCertField: an error about a client certificate file names
// where the user gave that file: a flag, or the URL's own parameter; a key
// in the certificate's file is the certificate's.
func TestClientCertField(t *testing.T) {
	for _, tc := range []struct {
		target, cert, key string
		part, want        string
	}{
		{target: "https://127.0.0.1:8443/", cert: "/c.pem", key: "/k.pem", part: "cert", want: "--cert"},
		{target: "https://127.0.0.1:8443/", cert: "/c.pem", key: "/k.pem", part: "key", want: "--cert-key"},
		{target: "https://127.0.0.1:8443/", cert: "/c.pem", key: "/k.pem", part: "pair", want: "--cert and --cert-key"},
		{target: "rediss://127.0.0.1:6380", cert: "/ck.pem", part: "key", want: "--cert"},
		{target: "rediss://127.0.0.1:6380", cert: "/ck.pem", part: "pair", want: "--cert"},
		{target: "postgres://u@127.0.0.1/db?sslmode=require&sslcert=/c.pem&sslkey=/k.pem", part: "key", want: "sslkey="},
		{target: "postgres://u@127.0.0.1/db?sslmode=require&sslcert=/c.pem&sslkey=/k.pem", part: "pair", want: "sslcert= and sslkey="},
		{target: "mysql://u@127.0.0.1/db?tls=true&ssl-cert=/c.pem&ssl-key=/k.pem", part: "cert", want: "ssl-cert="},
		{target: "mysql://u@127.0.0.1/db?tls=true&ssl-cert=/c.pem&ssl-key=/k.pem", part: "key", want: "ssl-key="},
		{target: "mongodb://127.0.0.1/?tls=true&tlsCertificateKeyFile=/ck.pem", part: "key", want: "tlsCertificateKeyFile="},
	} {
		s, err := New(Spec{Target: tc.target, CertFile: tc.cert, CertKeyFile: tc.key})
		if err != nil {
			t.Fatalf("%s: %v", tc.target, err)
		}
		tg, _ := ParseTarget(s.Target)
		got := Errorf("%s", s.ClientCertField(tg, tc.part)).(*Error).Spell(func(f string) string {
			return "--" + map[string]string{"cert_file": "cert", "cert_key_file": "cert-key"}[f]
		})
		if got != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.target, tc.part, got, tc.want)
		}
	}
}
