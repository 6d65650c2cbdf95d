package cli

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tlsbench/tlsbench/clients"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/result"
)

// TestClientRefusals: --client's mistakes are one line and exit 2, before
// any server starts.
func TestClientRefusals(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"connect", "--lab", "redis", "--client", "go,jdbc"}, `tlsbench: unknown client "jdbc" for redis: use go, redis-py, jedis, ioredis, hiredis`},
		{[]string{"pool", "--lab", "postgres", "--client", "pymongo"}, "tlsbench: client pymongo speaks mongodb, not postgres: use go, psycopg, pgjdbc, node-postgres"},
		{[]string{"connect", "--lab", "postgres", "--client", "python", "--via", "ssh"}, "tlsbench: not yet with --client psycopg: --via tunnels and poolers (direct connections only)"},
		{[]string{"stream", "--lab", "postgres", "--client", "psycopg"}, "unknown flag: --client"},
		{[]string{"connect", "--lab", "postgres", "--client", "go,libpq", "--rate", "100"},
			"tlsbench: not yet with --client libpq: --rate (closed loops only): pgbench paces itself (--rate), but tlsbench does not drive its schedule or read its lateness yet"},
		{[]string{"pool", "--lab", "redis", "--client", "ioredis", "--rate", "100"},
			"tlsbench: not yet with --client ioredis: --rate (closed loops only): the programs' protocol (clients/PROTOCOL.md) runs closed loops of workers, with no schedule of arrivals"},
		{[]string{"connect", "--lab", "mariadb", "--client", "go,libmariadb"}, "tlsbench: client libmariadb runs pool only: sysbench 1.0.20 keeps a connection a thread and has no reconnect option; libmariadb's connect loop is --client mysqlclient"},
	} {
		code, _, stderr := runMain(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, %q; want 2, %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestClientPsycopg runs connect on a lab PostgreSQL through Go's stack
// and psycopg's, plain and TLS 1.3: the server's own count of sessions
// equals the connections the run reports (every trial's operations and
// failures, and the check's one per variant), and psycopg says TLS 1.3;
// then pool through psycopg's own pool: its connections are the check's
// (three: see stackServer) and -c per trial, whatever the operations.
func TestClientPsycopg(t *testing.T) {
	labtest.Slow(t)
	if _, err := clients.Program("python/tlsbench_client.py"); err != nil {
		t.Skip("this build has no Python client program yet:", err)
	}
	srv := labtest.Start(t, "postgres", lab.Options{Keys: []string{"ecdsa-p256"}})
	raw, err := srv.URL("", false)
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	target.RawQuery = "sslrootcert=" + srv.CAFile()
	admin := *target
	admin.RawQuery = "sslmode=disable"
	ctx := context.Background()
	c, err := pgx.Connect(ctx, admin.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	db := strings.TrimPrefix(target.Path, "/")
	// pg_stat_database counts a session as it ends, a moment after the
	// client saw it close: read until the count holds still.
	sessions := func() int64 {
		var last int64 = -1
		for range 50 {
			var n int64
			if _, err := c.Exec(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
				t.Fatal(err)
			}
			if err := c.QueryRow(ctx, "SELECT sessions FROM pg_stat_database WHERE datname = $1", db).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n == last {
				return n
			}
			last = n
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatal("the session count did not settle")
		return 0
	}
	before := sessions()
	out := filepath.Join(t.TempDir(), "r.json")
	_, r := runClients(t, out, "connect", target.String(), "--client", "go,psycopg", "--tls", "off,1.3",
		"-c", "2", "-n", "20", "--trials", "1", "-q")
	if len(r.Trials) != 4 || len(r.Checks) != 4 {
		t.Fatalf("%d trials, %d checks; want 4 and 4", len(r.Trials), len(r.Checks))
	}
	// Go's check is one connection; psycopg's one, tlsbench's session
	// that asks the server about it and the pool of one it asks about.
	// A psycopg trial warms up first (a second of connections its warm
	// line counts) and is counted on a session of tlsbench's own: its
	// server_count is what the server counted of it, which is what
	// psycopg reported and warmed up with.
	conns := int64(0)
	for _, ch := range r.Checks {
		conns += map[bool]int64{false: 1, true: 3}[strings.HasPrefix(ch.Variant, "psycopg")]
	}
	for _, tr := range r.Trials {
		for _, n := range tr.Errors {
			conns += n
		}
		if tr.Ops != 20 {
			t.Errorf("%s: %d operations, want 20 (errors %v)", tr.Variant, tr.Ops, tr.Errors)
		}
		sc := tr.ServerCount
		switch {
		case !strings.HasPrefix(tr.Variant, "psycopg"):
			conns += tr.Ops
			if sc != nil {
				t.Errorf("%s: a server count of Go's trial: %+v", tr.Variant, *sc)
			}
		case sc == nil || sc.Counter != "pg_stat_database.sessions" || sc.WantMax < sc.Want || sc.Want <= tr.Conns || !sc.Agrees(tr.Variant == "psycopg tls1.3"):
			t.Errorf("%s: %d connections; the server counted %+v", tr.Variant, tr.Conns, sc)
		default:
			conns += sc.Conns + 1
		}
	}
	if got := sessions() - before; got != conns {
		t.Errorf("the server counted %d sessions, the run says %d", got, conns)
	}
	if len(r.Warnings) > 0 {
		t.Errorf("warnings: %q", r.Warnings)
	}
	for _, ch := range r.Checks {
		if ch.Variant == "psycopg tls1.3" && (ch.Client == nil || ch.Client.Version != "TLS 1.3") {
			t.Errorf("psycopg's check: %+v", ch.Client)
		}
	}
	if len(r.Clients) != 1 || r.Clients[0].Name != "psycopg" || !strings.HasPrefix(r.Clients[0].Driver, "psycopg/") {
		t.Errorf("clients %+v", r.Clients)
	}
	var ids []string
	for _, v := range r.Variants {
		ids = append(ids, v.ID)
	}
	if strings.Join(ids, "|") != "go plain|go tls1.3|psycopg plain|psycopg tls1.3" {
		t.Errorf("variants %q", ids)
	}

	before = sessions()
	code, _, stderr := runMain(t, "pool", target.String(), "--client", "psycopg", "--tls", "1.3", "--workload", "ping",
		"-c", "2", "-n", "30", "--warmup", "0s", "--trials", "2", "-q", "-o", out)
	if code != exitOK {
		t.Fatalf("pool: exit %d: %s", code, stderr)
	}
	if r, err = result.Read(out); err != nil {
		t.Fatal(err)
	}
	for _, tr := range r.Trials {
		if tr.Ops != 30 || len(tr.Errors) > 0 || tr.Conns != 2 || tr.Negotiated == nil || tr.Negotiated.Version != "TLS 1.3" {
			t.Errorf("pool %s: ops %d, errors %v, conns %d, negotiated %+v", tr.Variant, tr.Ops, tr.Errors, tr.Conns, tr.Negotiated)
		}
	}
	// The check: its connection, tlsbench's own session that asks the
	// server about the stack's, and the stack's pool of one it asks about;
	// each trial: its pool, and tlsbench's session that counts it.
	for _, tr := range r.Trials {
		if sc := tr.ServerCount; sc == nil || sc.Conns != 2 || sc.Want != 2 || sc.WantMax != 2 {
			t.Errorf("pool %s: the server counted %+v, want the pool's 2", tr.Variant, sc)
		}
	}
	if got, want := sessions()-before, int64(3+(2+1)*len(r.Trials)); len(r.Trials) != 2 || got != want {
		t.Errorf("pool: the server counted %d sessions over %d trials, want %d", got, len(r.Trials), want)
	}
}

// runClients runs tlsbench with args and -o out, a run through client
// stacks that must succeed (or skip, outside CI, a stack not installed),
// and returns its stdout and result.
func runClients(t *testing.T, out string, args ...string) (string, *result.Result) {
	t.Helper()
	code, stdout, stderr := runMain(t, append(args, "-o", out)...)
	if code != exitOK {
		if strings.Contains(stderr, "is not installed") && os.Getenv("CI") == "" {
			t.Skip(stderr)
		}
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	return stdout, r
}

// TestClientHiredisPassword: the lab's Redis has a password, which
// redis-benchmark would take on its command line only: hiredis is refused
// before any trial in one line naming why and the stacks that read a
// password from a file, and no redis-benchmark ran.
func TestClientHiredisPassword(t *testing.T) {
	labtest.Slow(t)
	code, _, stderr := runMain(t, "connect", "--lab", "redis", "--client", "hiredis", "--tls", "off", "-n", "5", "--trials", "1", "-q",
		"-o", filepath.Join(t.TempDir(), "r.json"))
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	last := lines[len(lines)-1]
	if code == exitOK || !strings.Contains(last, "client hiredis cannot run this variant: a password: redis-benchmark takes one only on its command line") ||
		!strings.Contains(last, "use --client redis-py, jedis or ioredis") || strings.Contains(stderr, "trial 1/") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// TestClientChainOnlyOnLab: openssl s_time checks a chain, never a name;
// against the built-in server, whose certificate tlsbench issued for the
// address it is reached at, it runs with the chain checked and a note
// says so (before, every TLS variant was refused with a flag that does
// not exist).
func TestClientChainOnlyOnLab(t *testing.T) {
	labtest.Slow(t)
	out := filepath.Join(t.TempDir(), "r.json")
	code, _, stderr := runMain(t, "connect", "builtin", "--client", "openssl", "--tls", "1.3", "-d", "1s", "--warmup", "0s", "--trials", "1", "-q", "-o", out)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "client openssl checks the server's certificate chain, never its name") {
		t.Errorf("no note of the chain-only check in %s", out)
	}
}
