package cli

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/result"
)

// TestPgbouncer measures the lab PostgreSQL directly and through PgBouncer:
// plain and TLS to PgBouncer with plain pooled server connections, and the
// local pooler (plaintext in, TLS to the server). Round trips are those of
// the client's connection to PgBouncer; the check confirms what the
// server itself sees (plaintext, or TLS from the local pooler).
func TestPgbouncer(t *testing.T) {
	needServer(t, labBinaries["postgres"])
	needServer(t, "/usr/sbin/pgbouncer")
	besideOthers(t)
	out := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := runProcess(t, "connect", "--lab", "postgres", "--tls", "off,1.3", "--key", "ecdsa-p256",
		"--via", "direct,pgbouncer,pgbouncer:local?default_pool_size=2", "-n", "20", "--trials", "1", "--tables", "1", "--rows", "100", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	// PgBouncer's OpenSSL takes Go's X25519 share: 1 round trip, where
	// PostgreSQL 15's one group (P-256) costs a HelloRetryRequest.
	want := map[string]string{
		"plain":                               "tcp:1 startup:1 auth:2 query:2 close:0",
		"tls1.3 ecdsa-p256":                   "tcp:1 startup:1 tls-handshake:2 auth:3 query:2 close:0",
		"pgbouncer":                           "tcp:1 startup:1 auth:2 query:2 close:0",
		"pgbouncer tls1.3 ecdsa-p256":         "tcp:1 startup:1 tls-handshake:1 auth:3 query:2 close:0",
		"pgbouncer local default_pool_size=2": "tcp:1 startup:1 auth:2 query:2 close:0",
	}
	if len(r.Trials) != len(want) {
		t.Fatalf("%d trials, want %d", len(r.Trials), len(want))
	}
	for _, tr := range r.Trials {
		if got := phaseRoundTrips(tr); got != want[tr.Variant] {
			t.Errorf("%s: phases [round trips] %s, want %s", tr.Variant, got, want[tr.Variant])
		}
		if tr.Ops != 20 || len(tr.Errors) > 0 {
			t.Errorf("%s: %d ops, errors %v", tr.Variant, tr.Ops, tr.Errors)
		}
	}
	for _, c := range r.Checks {
		tlsAtServer := c.Variant == "tls1.3 ecdsa-p256" || strings.Contains(c.Variant, "local")
		if c.Server == nil || c.Server.TLS != tlsAtServer {
			t.Errorf("%s: the server says %+v, want TLS %v", c.Variant, c.Server, tlsAtServer)
		}
	}
	if len(r.Tunnels) != 2 || r.Tunnels[1].Settings["server_tls_sslmode"] != "verify-full" || r.Tunnels[1].Settings["default_pool_size"] != "2" ||
		r.Tunnels[0].Settings["pool_mode"] != "session" || !strings.HasPrefix(r.Tunnels[0].Server, "PgBouncer 1.") {
		t.Errorf("tunnels %+v", r.Tunnels)
	}
	if !strings.Contains(stdout, "pgbouncer tls1.3 ecdsa-p256") {
		t.Errorf("the report lacks the PgBouncer variants:\n%s", stdout)
	}
	// The ranking of protected paths (or, where none is measurably
	// cheaper, their list) leaves out the plaintext pooler.
	_, rank, ok := strings.Cut(oneLine(stdout), "Where to protect connections, measured here per new connection")
	if !ok {
		_, rank, _ = strings.Cut(oneLine(stdout), "No way to protect connections measured here")
	}
	rank, _, _ = strings.Cut(rank, "Server CPU includes")
	if !strings.Contains(rank, "pgbouncer local default_pool_size=2 ") || !strings.Contains(rank, "pgbouncer tls1.3 ecdsa-p256 ") ||
		regexp.MustCompile(`(: |, )pgbouncer [0-9]`).MatchString(rank) {
		t.Errorf("ranking of protected paths: %q", rank)
	}
}

// TestPgbouncerDiesMidRun kills PgBouncer during a run: one line naming
// it, the finished trials kept.
func TestPgbouncerDiesMidRun(t *testing.T) {
	needServer(t, labBinaries["postgres"])
	needServer(t, "/usr/sbin/pgbouncer")
	besideOthers(t)
	tmp := sharedTempDir(t)
	find := func() []int {
		var pids []int
		for _, p := range processesMentioning(filepath.Join(tmp, "tlsbench-pgbouncer-")) {
			if n, err := strconv.Atoi(p); err == nil {
				pids = append(pids, n)
			}
		}
		return pids
	}
	r := killMidRun(t, tmp, find, "pgbouncer", "connect", "--lab", "postgres", "--tls", "off", "--auth", "trust",
		"--via", "pgbouncer", "-d", "300ms", "--trials", "100", "--tables", "1", "--rows", "100")
	if strings.Count(r.Error, "pgbouncer") < 1 {
		t.Errorf("the error should name pgbouncer: %q", r.Error)
	}
}
