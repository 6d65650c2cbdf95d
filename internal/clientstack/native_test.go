package clientstack

import (
	"context"
	"errors"
	"testing"

	"github.com/tlsbench/tlsbench/internal/lab"
)

// nativeConfig is stackConfig for lab server s as the user of auth method
// auth, verifying the name localhost (libpq's host beside its hostaddr,
// hiredis's --sni), point selects prepared, over 100 rows.
func nativeConfig(t *testing.T, s lab.Server, engine, name, auth, tls string) Config {
	t.Helper()
	cfg := stackConfig(t, engine, name, labURL(t, s, auth, tls != "off"), s.CAFile(), tls)
	cfg.ServerName, cfg.QueryMode, cfg.Rows = "localhost", "prepared", 100
	return cfg
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
			"client openssl cannot run this variant: verify full: s_time sends no server name and checks none: against a server tlsbench did not start run it with --insecure (no check at all), or use --client curl (OpenSSL 3 too, the name checked)"},
		{Config{Stack: ossl, Workload: "request", TLS: "1.3", Verify: "none", Resume: true},
			"client openssl cannot run this variant: resumption over TLS 1.3 without a path: s_time -reuse reads nothing after the handshake, so it never gets TLS 1.3's session ticket (pin TLS 1.2, or give a path to GET)"},
		{Config{Stack: ossl, Workload: "request", TLS: "off"},
			"client openssl cannot run this variant: plaintext: openssl s_time times TLS connections only"},
		{Config{Stack: redis, Workload: "get", TLS: "1.3", Verify: "full"},
			"client hiredis cannot run this variant: verify full: hiredis checks the certificate's chain, never its name: against a server tlsbench did not start run it with --insecure (no check at all), or use --client redis-py, jedis or ioredis"},
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
