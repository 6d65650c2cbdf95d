package cli

import (
	"context"
	"net"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/result"
)

// TestIPv6 measures every engine through a URL that names the IPv6
// loopback, [::1]: data prepared through it, then a short TLS connect run
// that verifies the server's certificate (issued for ::1 among others: an
// IP address, so no SNI is sent) and whose check connection reached ::1.
func TestIPv6(t *testing.T) {
	labtest.Slow(t)
	if out, err := exec.Command("ip", "-6", "addr", "show", "lo").Output(); err != nil || !strings.Contains(string(out), "::1/128") {
		t.Fatalf("this machine has no IPv6 loopback (ip -6 addr show lo: %q, %v)", out, err)
	}
	for _, tt := range []struct {
		engine  string
		prepare []string // arguments after the plain URL
		run     []string // arguments after the TLS URL
	}{
		{"postgres", []string{"--tables", "1", "--rows", "100"}, []string{"--tls", "1.3", "--tables", "1", "--rows", "100"}},
		{"mariadb", []string{"--tables", "1", "--rows", "100"}, []string{"--tls", "1.3", "--tables", "1", "--rows", "100"}},
		{"redis", []string{"--rows", "100"}, []string{"--tls", "1.3", "--rows", "100"}},
		{"mongodb", []string{"--records", "100"}, []string{"--tls", "auto", "--rows", "100"}},
		{"https", nil, []string{"--tls", "1.3"}},
	} {
		t.Run(tt.engine, func(t *testing.T) {
			plainURL, tlsURL, ca := ipv6Server(t, tt.engine)
			for _, u := range []string{plainURL, tlsURL} {
				if h := hostOf(t, u); h != "::1" {
					t.Fatalf("URL host %q, want ::1", h)
				}
			}
			if tt.prepare != nil {
				if code, _, stderr := runMain(t, append([]string{"prepare", plainURL}, tt.prepare...)...); code != 0 {
					t.Fatalf("prepare through [::1]: exit %d: %s", code, stderr)
				}
			}
			out := filepath.Join(t.TempDir(), "r.json")
			args := append([]string{"connect", tlsURL, "--ca", ca, "-n", "5", "--trials", "1", "-o", out}, tt.run...)
			code, _, stderr := runMain(t, args...)
			if code != 0 {
				t.Fatalf("connect through [::1]: exit %d: %s", code, stderr)
			}
			r, err := result.Read(out)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Checks) != 1 || r.Checks[0].Client == nil {
				t.Fatalf("checks %+v: want one TLS connection", r.Checks)
			}
			host, _, err := net.SplitHostPort(r.Checks[0].Remote)
			if err != nil || host != "::1" {
				t.Errorf("the check connection reached %q, want [::1]:PORT", r.Checks[0].Remote)
			}
			if len(r.Trials) != 1 || len(r.Trials[0].Errors) != 0 || r.Trials[0].Ops != 5 {
				t.Errorf("trials %+v: want one of 5 clean connections", r.Trials)
			}
		})
	}
}

// ipv6Server starts a lab server of engine for the test and returns its
// plain and TLS URLs with the host [::1] (with the password: pass them to
// runMain only) and its CA file.
func ipv6Server(t *testing.T, engine string) (plainURL, tlsURL, ca string) {
	t.Helper()
	keys := []string{"ecdsa-p256"}
	if engine == "https" {
		srv := startServer(t, lab.BuiltinOptions{Keys: keys, ResponseSize: 16, IPv6: true})
		plainURL, _ = srv.URL("", false)
		tlsURL, _ = srv.URL("", true)
		return plainURL, tlsURL, srv.CAFile()
	}
	if bin, ok := labBinaries[engine]; ok {
		needServer(t, bin)
	} else {
		needServer(t, "ferretdb")
	}
	srv, err := lab.Start(context.Background(), engine, lab.Options{Keys: keys, IPv6: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	six := func(tls bool) string {
		raw, err := srv.URL(srv.Auths()[0], tls)
		if err != nil {
			t.Fatal(err)
		}
		// PostgreSQL, MariaDB and Redis listen on both loopbacks and name
		// 127.0.0.1 in their URLs.
		return strings.Replace(raw, "@127.0.0.1:", "@[::1]:", 1)
	}
	return six(false), six(true), srv.CAFile()
}

func hostOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("URL: %v", err)
	}
	return u.Hostname()
}

// TestIPv6Source checks --source against an IPv6 server: an IPv4 source
// address cannot reach it (one line naming --source), and spread, whose
// addresses are IPv4, says it has nothing to spread over and lets the
// kernel choose.
func TestIPv6Source(t *testing.T) {
	labtest.Slow(t)
	_, tlsURL, ca := ipv6Server(t, "https")
	out := filepath.Join(t.TempDir(), "r.json")
	code, _, stderr := runMain(t, "connect", tlsURL, "--ca", ca, "-n", "5", "--trials", "1", "--source", "127.0.0.1", "-o", out)
	if lines := errorLines(stderr); code != 1 || len(lines) != 1 || !strings.Contains(lines[0], "the source address 127.0.0.1 is IPv4") || !strings.Contains(lines[0], "--source auto") {
		t.Errorf("--source 127.0.0.1: exit %d, %q; want 1 and one line naming the families and --source", code, lines)
	}
	if code, _, stderr = runMain(t, "connect", tlsURL, "--ca", ca, "-n", "5", "--trials", "1", "--source", "spread", "-o", out); code != 0 {
		t.Fatalf("--source spread: exit %d: %s", code, stderr)
	}
	r, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "no source addresses to spread over") }) || !strings.HasPrefix(r.Checks[0].Remote, "[::1]:") {
		t.Errorf("--source spread: notes %q, remote %q", r.Notes, r.Checks[0].Remote)
	}
}
