package cli

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// checkMTLS checks a run with client certificates: every variant that
// presents one recorded its key, the server confirmed it where it can say
// (serverSays), its off twin presented none; and the TLS handshake kept
// its round trips: 1 for TLS 1.3, 2 for TLS 1.2.
func checkMTLS(t *testing.T, r *result.Result, serverSays bool) {
	t.Helper()
	if len(r.Checks) == 0 {
		t.Fatal("no checks")
	}
	mtls := 0
	for _, c := range r.Checks {
		if c.Client == nil {
			continue // the plain variant
		}
		sends := strings.Contains(c.Variant, "mtls-") || r.Spec.CertFile != ""
		switch {
		case sends && c.Client.ClientCert != "ECDSA-P256":
			t.Errorf("%s: client certificate %q, want ECDSA-P256", c.Variant, c.Client.ClientCert)
		case !sends && c.Client.ClientCert != "":
			t.Errorf("%s: the off twin presented %q", c.Variant, c.Client.ClientCert)
		case sends && serverSays && (c.Server == nil || c.Server.ClientCert == ""):
			t.Errorf("%s: the server did not confirm the client certificate: %+v", c.Variant, c.Server)
		case !sends && c.Server != nil && c.Server.ClientCert != "":
			t.Errorf("%s: the server saw a client certificate on the off twin: %q", c.Variant, c.Server.ClientCert)
		}
		if sends {
			mtls++
		}
	}
	if mtls == 0 {
		t.Error("no variant presented a client certificate")
	}
	for _, tr := range r.Trials {
		if tr.Negotiated == nil {
			continue
		}
		want := map[string]float64{"TLS 1.3": 1, "TLS 1.2": 2}[tr.Negotiated.Version]
		for _, p := range tr.Phases {
			if p.Name == "tls-handshake" && (p.RoundTrips.Min != int(want) || p.RoundTrips.Max != int(want)) {
				t.Errorf("%s: the handshake took %d-%d round trips, want %v", tr.Variant, p.RoundTrips.Min, p.RoundTrips.Max, want)
			}
		}
		if strings.Contains(tr.Variant, "mtls-") && tr.Negotiated.ClientCert != "ECDSA-P256" {
			t.Errorf("%s: trial records client certificate %q", tr.Variant, tr.Negotiated.ClientCert)
		}
	}
}

// TestClientCertLab: --client-cert off,ecdsa-p256 against each lab server,
// which demands a certificate signed by the lab CA in those variants only.
func TestClientCertLab(t *testing.T) {
	labtest.Slow(t)
	besideOthers(t)
	for _, tt := range []struct {
		engine     string
		serverSays bool
	}{
		{"postgres", true},
		{"mariadb", true},
		{"redis", true},
		{"mongodb", false},
		{"builtin", false},
	} {
		t.Run(tt.engine, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "r.json")
			args := []string{"connect", "--lab", tt.engine, "--tls", "1.2,1.3", "--key", "ecdsa-p256", "--client-cert", "off,ecdsa-p256",
				"-n", "20", "--trials", "1", "--rows", "100", "-o", out}
			switch tt.engine {
			case "builtin":
				args = []string{"connect", "builtin", "--tls", "1.2,1.3", "--key", "ecdsa-p256", "--client-cert", "off,ecdsa-p256", "-n", "20", "--trials", "1", "-o", out}
			case "postgres":
				// PostgreSQL 15 takes P-256 only: offering it first keeps
				// TLS 1.3 at one round trip (no HelloRetryRequest).
				args = append(args, "--group", "p256", "--tables", "1")
			case "mariadb":
				args = append(args, "--tables", "1")
			default:
				needServer(t, map[string]string{"redis": "redis-server", "mongodb": "ferretdb"}[tt.engine])
			}
			if b, ok := labBinaries[tt.engine]; ok {
				needServer(t, b)
			}
			code, _, stderr := runProcess(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			r, err := result.Read(out)
			if err != nil {
				t.Fatal(err)
			}
			checkMTLS(t, r, tt.serverSays)
			if tt.engine != "builtin" && !hasNote(r, "client certificates demanded in the mtls variants only") {
				t.Errorf("no note on how the server demands client certificates: %q", r.Notes)
			}
		})
	}
}

func hasNote(r *result.Result, s string) bool {
	for _, n := range r.Notes {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// certServer starts a lab server as users configure one: clients from
// 127.0.0.1 only, users that need a client certificate signed by its CA,
// which it demands; the data prepared by its ordinary user.
func certServer(t *testing.T, engine string) (lab.Server, string) {
	t.Helper()
	if b, ok := labBinaries[engine]; ok {
		needServer(t, b)
	}
	srv, err := lab.Start(context.Background(), engine, lab.Options{Keys: []string{"ecdsa-p256"}, LocalhostOnly: true, ClientCerts: []string{"ecdsa-p256"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	plainURL, err := srv.URL("", false)
	if err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runMain(t, "prepare", plainURL, "--tables", "1", "--rows", "100"); code != 0 {
		t.Fatalf("prepare: exit %d: %s", code, stderr)
	}
	if _, err := srv.(lab.ClientCertServer).DemandClientCert(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	return srv, filepath.Dir(srv.CAFile())
}

// TestClientCertURL measures servers that require client certificates
// through their URLs, with each ecosystem's parameters (PostgreSQL's
// sslcert/sslkey/sslrootcert with a cert-method user in a pg_hba that
// allows 127.0.0.1/32 only; MariaDB's ssl-ca/ssl-cert/ssl-key with a
// REQUIRE X509 user; Redis with tls-auth-clients yes and --cert/--cert-key).
// Without the certificate, each refuses with one line that says to give one.
func TestClientCertURL(t *testing.T) {
	for _, engine := range []string{"postgres", "mariadb", "redis", "mongodb"} {
		t.Run(engine, func(t *testing.T) {
			if engine == "mongodb" {
				needServer(t, "ferretdb")
			}
			srv, dir := certServer(t, engine)
			certFile, keyFile := tlsx.ClientCertFile(dir, "ecdsa-p256"), tlsx.ClientKeyFile(dir, "ecdsa-p256")
			var with, without, prep []string
			common := []string{"-n", "20", "--trials", "1", "--tables", "1", "--rows", "100"}
			switch engine {
			case "postgres":
				raw, err := srv.(lab.ClientCertServer).ClientCertURL("cert")
				if err != nil {
					t.Fatal(err)
				}
				q := "?sslmode=verify-full&sslrootcert=" + url.QueryEscape(srv.CAFile())
				prep = []string{raw + q + "&sslcert=" + url.QueryEscape(certFile) + "&sslkey=" + url.QueryEscape(keyFile)}
				with = append([]string{prep[0], "--group", "p256"}, common...)
				without = append([]string{raw + q, "--group", "p256"}, common...)
			case "mariadb":
				raw, err := srv.(lab.ClientCertServer).ClientCertURL("")
				if err != nil {
					t.Fatal(err)
				}
				q := "?tls=true&ssl-ca=" + url.QueryEscape(srv.CAFile())
				prep = []string{raw + q + "&ssl-cert=" + url.QueryEscape(certFile) + "&ssl-key=" + url.QueryEscape(keyFile)}
				with = append(prep, common...)
				without = append([]string{raw + q}, common...)
			case "redis":
				raw, err := srv.URL("", true)
				if err != nil {
					t.Fatal(err)
				}
				prep = []string{raw, "--ca", srv.CAFile(), "--cert", certFile, "--cert-key", keyFile}
				with = append(prep, common...)
				without = append([]string{raw, "--ca", srv.CAFile()}, common...)
			case "mongodb":
				raw, err := srv.URL("", true) // tls=true&tlsCAFile=...
				if err != nil {
					t.Fatal(err)
				}
				pair := filepath.Join(t.TempDir(), "client.pem")
				if err := os.WriteFile(pair, append(must(os.ReadFile(certFile)), must(os.ReadFile(keyFile))...), 0o600); err != nil {
					t.Fatal(err)
				}
				prep = []string{raw + "&tlsCertificateKeyFile=" + url.QueryEscape(pair)}
				with = append(prep, common...)
				without = append([]string{raw}, common...)
				// FerretDB has no X.509 authentication: one line says so.
				u, _ := url.Parse(raw)
				u.User = nil
				q := u.Query()
				q.Set("authSource", "$external")
				u.RawQuery = q.Encode()
				x509 := u.String() + "&authMechanism=MONGODB-X509&tlsCertificateKeyFile=" + url.QueryEscape(pair)
				code, _, stderr := runMain(t, "connect", x509, "--tls", "1.3", "-n", "5", "--trials", "1", "-o", filepath.Join(t.TempDir(), "r.json"))
				lines := errorLines(stderr)
				t.Logf("MONGODB-X509: %s", stderr)
				if code != 1 || len(lines) != 1 || !strings.Contains(lines[0], "does not support authMechanism=MONGODB-X509") {
					t.Errorf("MONGODB-X509 against FerretDB: exit %d, %q; want 1 and one line saying it is not supported", code, lines)
				}
			}
			// prepare logs in with the certificate too (the data is there).
			if code, _, stderr := runMain(t, append(append([]string{"prepare"}, prep...), "--tables", "1", "--rows", "100")...); code != 0 {
				t.Errorf("prepare with the client certificate: exit %d: %s", code, stderr)
			}
			out := filepath.Join(t.TempDir(), "r.json")
			code, _, stderr := runMain(t, append([]string{"connect", "-o", out, "--tls", "1.2,1.3"}, with...)...)
			if code != 0 {
				t.Fatalf("with the client certificate: exit %d: %s", code, stderr)
			}
			r, err := result.Read(out)
			if err != nil {
				t.Fatal(err)
			}
			checkMTLS(t, r, engine != "mongodb")
			if strings.Contains(string(must(os.ReadFile(out))), "PRIVATE KEY") {
				t.Error("the result holds a private key")
			}
			for _, v := range []string{"1.3", "1.2"} {
				args := append([]string{"connect", "-o", filepath.Join(t.TempDir(), "r.json")}, without...)
				args = append(args, "--tls", v)
				code, _, stderr = runMain(t, args...)
				lines := errorLines(stderr)
				t.Logf("TLS %s: %s", v, stderr)
				if code != 1 || len(lines) != 1 || !strings.Contains(lines[0], "client certificate") || !strings.Contains(lines[0], "--cert") {
					t.Errorf("TLS %s without the client certificate: exit %d, %q; want 1 and one line saying to give --cert", v, code, lines)
				}
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestClientCertFiles: a client certificate that cannot be used is the
// user's input: one line naming the flag (or URL parameter) that gave the
// file, the file and the fix, exit 2, before any connection: unreadable,
// a device, not PEM, a key that does not match, an encrypted key (never a
// prompt). A key others can read is used, with a warning naming chmod 600,
// on stderr, in the result and in its report.
func TestClientCertFiles(t *testing.T) {
	srv := startServer(t, lab.BuiltinOptions{Keys: []string{"ecdsa-p256"}, ClientCerts: []string{"ecdsa-p256", "rsa2048"}})
	dir := filepath.Dir(srv.CAFile())
	cert, key := tlsx.ClientCertFile(dir, "ecdsa-p256"), tlsx.ClientKeyFile(dir, "ecdsa-p256")
	tmp := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	block, _ := pem.Decode(must(os.ReadFile(key)))
	//lint:ignore SA1019 legacy encrypted PEM keys are what users have.
	legacy, err := x509.EncryptPEMBlock(strings.NewReader(strings.Repeat("x", 64)), "EC PRIVATE KEY", block.Bytes, []byte("pw"), x509.PEMCipherAES256) //nolint:staticcheck
	if err != nil {
		t.Fatal(err)
	}
	pkcs8 := pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte{0x30, 0x03, 0x02, 0x01, 0x00}})
	pair := write("pair.pem", append(must(os.ReadFile(cert)), pem.EncodeToMemory(legacy)...))
	url := "https://" + srv.MTLSEndpoint("ecdsa-p256") + "/"
	flags := func(cert, key string) []string {
		return []string{url, "--ca", srv.CAFile(), "--cert", cert, "--cert-key", key}
	}
	// The URL's own parameters: nothing listens there, as nothing is
	// dialed before the files are read.
	pgURL := func(cert, key string) []string {
		return []string{"postgres://bench@127.0.0.1:1/bench?sslmode=require&sslcert=" + cert + "&sslkey=" + key, "--tls", "1.3"}
	}
	for _, tt := range []struct {
		name string
		args []string
		want []string
	}{
		{"missing", flags(filepath.Join(tmp, "missing.pem"), key), []string{"--cert:", "missing.pem: no such file: give the path of the client certificate"}},
		{"key missing", flags(cert, filepath.Join(tmp, "missing.key")), []string{"--cert-key:", "missing.key: no such file: give the path of the client key"}},
		{"not PEM", flags(write("cert.der", []byte("not pem at all")), key), []string{"--cert:", "holds no PEM certificate", "openssl x509"}},
		{"key a device", flags(cert, "/dev/zero"), []string{"--cert-key:", "/dev/zero is not a regular file"}},
		{"mismatch", flags(cert, tlsx.ClientKeyFile(dir, "rsa2048")), []string{"--cert and --cert-key:", "does not match the key in", "give the key the certificate was issued for"}},
		{"legacy encrypted", flags(cert, write("legacy.pem", pem.EncodeToMemory(legacy))), []string{"--cert-key:", "is encrypted: tlsbench does not prompt for passwords"}},
		{"PKCS#8 encrypted", flags(cert, write("pkcs8.pem", pkcs8)), []string{"--cert-key:", "openssl pkey -in"}},
		{"encrypted, in the certificate's file", []string{url, "--ca", srv.CAFile(), "--cert", pair}, []string{"--cert:", "is encrypted"}},
		{"sslkey= a device", pgURL(cert, "/dev/zero"), []string{"sslkey=:", "/dev/zero is not a regular file"}},
		{"sslkey= encrypted", pgURL(cert, filepath.Join(tmp, "pkcs8.pem")), []string{"sslkey=:", "openssl pkey -in"}},
		{"sslcert= not PEM", pgURL(filepath.Join(tmp, "cert.der"), key), []string{"sslcert=:", "holds no PEM certificate"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runMain(t, append([]string{"connect", "-n", "1", "--trials", "1", "-o", filepath.Join(t.TempDir(), "r.json")}, tt.args...)...)
			lines := errorLines(stderr)
			t.Log(stderr)
			if code != 2 || len(lines) != 1 {
				t.Fatalf("exit %d, %q; want 2 and one line", code, lines)
			}
			for _, w := range tt.want {
				if !strings.Contains(lines[0], w) {
					t.Errorf("%q: want %q in it", lines[0], w)
				}
			}
		})
	}
	t.Run("key others can read", func(t *testing.T) {
		open := write("open.key", must(os.ReadFile(key)))
		if err := os.Chmod(open, 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "r.json")
		code, stdout, stderr := runMain(t, append([]string{"connect", "--tls", "1.3", "-n", "5", "--trials", "1", "-o", out}, flags(cert, open)...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		want := "chmod 600 " + open
		if !strings.Contains(stderr, "warning: the client key "+open) || !strings.Contains(stderr, want) {
			t.Errorf("stderr %q: no warning naming %q", stderr, want)
		}
		if !strings.Contains(stdout, want) {
			t.Errorf("the report does not warn %q:\n%s", want, stdout)
		}
		r, err := result.Read(out)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], want) {
			t.Errorf("result warnings %q, want one naming %q", r.Warnings, want)
		}
		checkMTLS(t, r, false)
	})
	// The built-in server's demanding listener: no certificate, and one
	// from another CA, are refused by the server, one line each.
	other := startServer(t, lab.BuiltinOptions{Keys: []string{"ecdsa-p256"}, ClientCerts: []string{"ecdsa-p256"}})
	otherDir := filepath.Dir(other.CAFile())
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"none", nil, "requires a client certificate"},
		{"unknown CA", []string{"--cert", tlsx.ClientCertFile(otherDir, "ecdsa-p256"), "--cert-key", tlsx.ClientKeyFile(otherDir, "ecdsa-p256")}, "rejected the client certificate"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"connect", url, "--ca", srv.CAFile(), "--tls", "1.3", "-n", "1", "--trials", "1", "-o", filepath.Join(t.TempDir(), "r.json")}, tt.args...)
			code, _, stderr := runMain(t, args...)
			lines := errorLines(stderr)
			t.Log(stderr)
			if code != 1 || len(lines) != 1 || !strings.Contains(lines[0], tt.want) {
				t.Errorf("exit %d, %q; want 1 and one line with %q", code, lines, tt.want)
			}
		})
	}
}

// TestClientCertNotAsked: a client certificate given (--cert, --cert-key)
// to a server that never asks for one, as each engine's stock setup does,
// was never sent: the run stops at its check with one line, exit 1, that
// says so and names how that engine's server is made to ask, never
// another engine's (a Redis target is not told about pg_hba.conf), in TLS
// 1.2 and 1.3 alike. MariaDB asks every TLS client (with or without
// ssl_ca): it takes the certificate and refuses its unknown CA, a line
// that names its own CA setting. The built-in server's listener that asks
// for one takes it, and the check records that it was sent.
func TestClientCertNotAsked(t *testing.T) {
	ca, err := tlsx.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.IssueClient("ecdsa-p256", lab.ClientCertUser)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")
	if err := os.WriteFile(certFile, certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		engine string
		want   []string // the engine's remedy
		absent []string // other engines'
	}{
		{"postgres", []string{"did not ask for a client certificate", "pg_hba.conf", "ssl_ca_file", "sslcert="}, []string{"tls-auth-clients", "REQUIRE X509"}},
		// In TLS 1.3 the server's alert may be lost to the reset that
		// meets the client's next write: "may have rejected".
		{"mariadb", []string{"rejected the client certificate", "ssl_ca (ssl-ca)"}, []string{"ssl_ca_file", "tls-ca-cert-file"}},
		{"redis", []string{"did not ask for a client certificate", "tls-auth-clients yes"}, []string{"pg_hba", "REQUIRE X509", "sslcert="}},
		{"mongodb", []string{"did not ask for a client certificate", "net.tls.CAFile", "--tlsCAFile", "allowConnectionsWithoutCertificates", "--listen-tls-ca-file"}, []string{"pg_hba", "REQUIRE X509"}},
		{"https", []string{"did not ask for a client certificate", "ssl_verify_client on", "ClientAuth"}, []string{"pg_hba", "REQUIRE X509", "tls-auth-clients"}},
	} {
		t.Run(tt.engine, func(t *testing.T) {
			var target []string
			switch tt.engine {
			case "https":
				srv := startServer(t, lab.BuiltinOptions{Keys: []string{"ecdsa-p256"}})
				target = []string{"https://" + srv.Endpoint("ecdsa-p256") + "/", "--ca", srv.CAFile()}
			default:
				if b, ok := labBinaries[tt.engine]; ok {
					needServer(t, b)
				}
				if tt.engine == "mongodb" {
					needServer(t, "ferretdb")
				}
				// No client certificates: the lab server asks for none.
				var srv lab.Server
				if tt.engine == "postgres" || tt.engine == "mariadb" {
					srv, _ = sharedLab(t, tt.engine)
				} else {
					srv = labtest.Start(t, tt.engine, lab.Options{Keys: []string{"ecdsa-p256"}})
				}
				raw, err := srv.URL("", true)
				if err != nil {
					t.Fatal(err)
				}
				switch tt.engine {
				case "mariadb":
					target = []string{raw + "?tls=true&ssl-ca=" + url.QueryEscape(srv.CAFile())}
				case "mongodb":
					target = []string{raw} // tls=true&tlsCAFile=...
				default:
					target = []string{raw, "--ca", srv.CAFile()}
				}
			}
			for _, v := range []string{"1.2", "1.3"} {
				out := filepath.Join(t.TempDir(), "r.json")
				args := append([]string{"connect", "-o", out, "--tls", v, "--cert", certFile, "--cert-key", keyFile, "-n", "5", "--trials", "1"}, target...)
				code, _, stderr := runMain(t, args...)
				lines := errorLines(stderr)
				t.Logf("TLS %s: %s", v, stderr)
				if code != 1 || len(lines) != 1 {
					t.Fatalf("TLS %s: exit %d, %q; want 1 and one line", v, code, lines)
				}
				for _, w := range tt.want {
					if !strings.Contains(lines[0], w) {
						t.Errorf("TLS %s: %q does not name %q", v, lines[0], w)
					}
				}
				for _, a := range tt.absent {
					if strings.Contains(lines[0], a) {
						t.Errorf("TLS %s: %q names another engine's %q", v, lines[0], a)
					}
				}
				if _, err := os.Stat(out); err == nil {
					t.Errorf("TLS %s: a result was saved", v)
				}
			}
		})
	}
	t.Run("https, asked", func(t *testing.T) {
		srv := startServer(t, lab.BuiltinOptions{Keys: []string{"ecdsa-p256"}, ClientCerts: []string{"ecdsa-p256"}})
		d := filepath.Dir(srv.CAFile())
		out := filepath.Join(t.TempDir(), "r.json")
		code, _, stderr := runMain(t, "connect", "https://"+srv.MTLSEndpoint("ecdsa-p256")+"/", "--ca", srv.CAFile(), "--tls", "1.2,1.3",
			"--cert", tlsx.ClientCertFile(d, "ecdsa-p256"), "--cert-key", tlsx.ClientKeyFile(d, "ecdsa-p256"), "-n", "5", "--trials", "1", "-o", out)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		r, err := result.Read(out)
		if err != nil {
			t.Fatal(err)
		}
		checkMTLS(t, r, false)
	})
}
