package clientstack

import (
	"context"
	"errors"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/lab"
)

// labConfig is the Config of stack name for the lab server s, reached as
// its auth method's user, with TLS tls (off, 1.2, 1.3, auto) verified
// fully against the lab's CA.
func labConfig(t *testing.T, s lab.Server, engine, name, auth, tls string) Config {
	t.Helper()
	st, err := Lookup(engine, name)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := s.URL(auth, tls != "off")
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal("the lab URL does not parse")
	}
	port, _ := strconv.Atoi(u.Port())
	pw, err := os.ReadFile(s.PasswordFile())
	if err != nil {
		t.Fatal(err)
	}
	// libpq's passfile (*:port:*:*:pw) or the password alone.
	password := strings.TrimSpace(string(pw))
	if f := strings.Split(password, ":"); len(f) == 5 {
		password = f[4]
	}
	return Config{Stack: st, Host: u.Hostname(), Port: port, User: u.User.Username(), Password: password,
		Database: strings.TrimPrefix(u.Path, "/"), TLS: tls, CA: s.CAFile(), Verify: "full", ServerName: "localhost",
		Workload: "ping", Tables: 1, Rows: 100, QueryMode: "prepared", Timeout: 10 * time.Second}
}

// startNativeT starts cfg's client for t, failing t on an error.
func startNativeT(t *testing.T, cfg Config) Client {
	t.Helper()
	c, err := Start(context.Background(), cfg)
	if err != nil {
		var ni *NotInstalled
		if errors.As(err, &ni) && os.Getenv("CI") == "" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// checkOps checks a run's operations: n of them, none failed, each
// ending after it starts, in the order they ended, on workers 0..c-1.
func nativeCheckOps(t *testing.T, rep Report, n int64, c int) {
	t.Helper()
	if int64(len(rep.Ops)) != n {
		t.Errorf("%d operations, want %d", len(rep.Ops), n)
	}
	for i, o := range rep.Ops {
		if o.Failed() || o.End < o.Start || o.Worker < 0 || o.Worker >= c || (i > 0 && o.End < rep.Ops[i-1].End) {
			t.Fatalf("op %d: %+v", i, o)
		}
	}
	if rep.CPU <= 0 || rep.Elapsed <= 0 {
		t.Errorf("CPU %v, elapsed %v", rep.CPU, rep.Elapsed)
	}
}

func TestNativeStacksRegistered(t *testing.T) {
	for _, tc := range []struct{ engine, name string }{
		{"postgres", "libpq"}, {"redis", "hiredis"}, {"builtin", "openssl"},
	} {
		s, err := Lookup(tc.engine, tc.name)
		if err != nil || s.Lang != "native" {
			t.Errorf("Lookup(%s, %s) = %+v, %v", tc.engine, tc.name, s, err)
		}
	}
}

func TestNativeNotInstalled(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := lookTool("libpq", "pgbench", t.TempDir())
	if err == nil || err.Error() != "client libpq is not installed (no pgbench): run bash scripts/install.sh" {
		t.Fatalf("err = %v", err)
	}
}

func TestPgbenchScript(t *testing.T) {
	for _, tc := range []struct {
		cfg     Config
		perConn int
		want    string
	}{
		{Config{Workload: "ping"}, 2, "SELECT 1;\nSELECT 1;\n"},
		{Config{Workload: "point-select", Tables: 1, Rows: 100}, 1, "\\set id random(1, 100)\nSELECT c FROM sbtest1 WHERE id = :id;\n"},
		{Config{Workload: "point-select", Tables: 2, Rows: 10}, 1, "\\set id random(1, 10)\n\\set t random(1, 2)\n" +
			"\\if :t = 1\nSELECT c FROM sbtest1 WHERE id = :id;\n\\elif :t = 2\nSELECT c FROM sbtest2 WHERE id = :id;\n\\endif\n"},
	} {
		if got := pgbenchScript(tc.cfg, tc.perConn); got != tc.want {
			t.Errorf("%+v: got\n%s\nwant\n%s", tc.cfg, got, tc.want)
		}
	}
}

func TestNativeRefusals(t *testing.T) {
	pg := Stack{Name: "libpq", Engine: "postgres", Lang: "native"}
	ossl := Stack{Name: "openssl", Engine: "http", Lang: "native"}
	redis := Stack{Name: "hiredis", Engine: "redis", Lang: "native"}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Stack: pg, Workload: "ping", TLS: "1.3", Verify: "none", Resume: true},
			"client libpq cannot run this variant: resumption: libpq keeps no TLS session between connections (and PostgreSQL's server disables resumption)"},
		{Config{Stack: pg, Workload: "ping", TLS: "1.3", Verify: "full"},
			"client libpq cannot run this variant: verification against the system's CAs: libpq 15 reads its CAs only from sslrootcert (a CA file)"},
		{Config{Stack: pg, Workload: "ping", TLS: "1.3", Verify: "none", Group: "X25519MLKEM768"},
			"client libpq cannot run this variant: group X25519MLKEM768: Debian's OpenSSL 3.0 knows X25519, X448, P-256, P-384, P-521 and the ffdhe groups"},
		{Config{Stack: ossl, Workload: "request", TLS: "1.3", Verify: "full"},
			"client openssl cannot run this variant: verify full: s_time sends no server name and checks none (use --verify ca: the chain is checked, a failure only printed)"},
		{Config{Stack: ossl, Workload: "request", TLS: "1.3", Verify: "none", Resume: true},
			"client openssl cannot run this variant: resumption over TLS 1.3 without a path: s_time -reuse reads nothing after the handshake, so it never gets TLS 1.3's session ticket (pin TLS 1.2, or give a path to GET)"},
		{Config{Stack: ossl, Workload: "request", TLS: "off"},
			"client openssl cannot run this variant: plaintext: openssl s_time times TLS connections only"},
		{Config{Stack: redis, Workload: "get", TLS: "1.3", Verify: "full"},
			"client hiredis cannot run this variant: verify full: hiredis checks the certificate's chain, never its name (use --verify ca)"},
		{Config{Stack: redis, Workload: "get", TLS: "1.3", Verify: "ca", Resume: true},
			"client hiredis cannot run this variant: resumption: hiredis keeps no TLS session between connections"},
		{Config{Stack: pg, Workload: "read-only", TLS: "off"},
			"client libpq cannot run this variant: workload read-only: pgbench here runs ping (SELECT 1) and point-select"},
	} {
		_, err := Start(context.Background(), tc.cfg)
		var r *Refused
		if !errors.As(err, &r) || err.Error() != tc.want {
			t.Errorf("%+v: err = %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
