package clientstack

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/plan"
)

// pgConn runs f on a connection to the lab server as its trust user,
// plaintext.
func pgConn(s lab.Server, f func(ctx context.Context, c *pgx.Conn) error) error {
	raw, err := s.URL("trust", false)
	if err != nil {
		return err
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("the lab URL does not parse")
	}
	q := u.Query()
	q.Set("sslmode", "disable")
	u.RawQuery = q.Encode()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, u.String())
	if err != nil {
		return errors.New("connecting to the lab server failed: " + plan.Redact(err.Error()))
	}
	defer c.Close(ctx)
	return f(ctx, c)
}

// pgQuery runs one query and scans its row into dst.
func pgQuery(s lab.Server, query string, dst ...any) error {
	return pgConn(s, func(ctx context.Context, c *pgx.Conn) error { return c.QueryRow(ctx, query).Scan(dst...) })
}

// pgAdmin is pgQuery failing t on an error.
func pgAdmin(t *testing.T, s lab.Server, query string, dst ...any) {
	t.Helper()
	if err := pgQuery(s, query, dst...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// pgExec runs statements.
func pgExec(s lab.Server, stmts ...string) error {
	return pgConn(s, func(ctx context.Context, c *pgx.Conn) error {
		for _, q := range stmts {
			if _, err := c.Exec(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		return nil
	})
}

// pgScans is how many scans of sbtest1 (by its index or not, as the
// planner likes for 100 rows) the server has counted: one a point select.
func pgScans(t *testing.T, s lab.Server) int64 {
	var n int64
	pgAdmin(t, s, "SELECT seq_scan + coalesce(idx_scan, 0) FROM pg_stat_user_tables WHERE relname = 'sbtest1'", &n)
	return n
}

// pgStat is a counter of pg_stat_database for the lab's database:
// sessions (ended ones) or xact_commit. Each call adds a session and a
// transaction of its own.
func pgStat(t *testing.T, s lab.Server, column string) int64 {
	var n int64
	pgAdmin(t, s, "SELECT "+column+" FROM pg_stat_database WHERE datname = current_database()", &n)
	return n
}

// waitStat waits until the server's column counts want more than from
// (a backend reports its counts as it exits, just after its client has
// gone), and fails t with the count if it never does.
func waitStat(t *testing.T, s lab.Server, column string, from, want int64) {
	t.Helper()
	var got int64
	deadline := time.Now().Add(15 * time.Second)
	// Less the checks' own: the one that read from, and each one before.
	for i := int64(1); ; i++ {
		if got = pgStat(t, s, column) - from - i; got >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got != want {
		t.Errorf("the server counted %d %s, want %d", got, column, want)
	}
}

// TestLibpq: pgbench drives libpq against a lab PostgreSQL, plain and TLS
// 1.3, connect and pool: the operations it reports are the sessions and
// statements the server counted, the pool's connections negotiated TLS
// 1.3 (pg_stat_ssl), and a failing statement aborts clients that count
// as failed operations.
func TestLibpq(t *testing.T) {
	s := labtest.Start(t, "postgres", lab.Options{Keys: []string{"ecdsa-p256"}})
	ctx := context.Background()
	for _, tls := range []string{"off", "1.3"} {
		t.Run("connect-"+tls, func(t *testing.T) {
			cfg := nativeConfig(t, s, "postgres", "libpq", "scram-sha-256", tls)
			c := startStack(t, cfg)
			before := pgStat(t, s, "sessions")
			rep, err := c.Run(ctx, Run{Experiment: "connect", Concurrency: 2, PerConn: 1, MaxOps: 20, Duration: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			checkOps(t, cfg, rep, 20, 2)
			// 20 connections and pgbench's setup one, which the run says.
			if rep.Extra != exactly(1) {
				t.Errorf("the run says it opened %+v besides its connections, want pgbench's first", rep.Extra)
			}
			waitStat(t, s, "sessions", before, 20+1)
		})
	}
	// sbtest1's index scans count the point selects, and nothing else.
	if err := pgExec(s, "CREATE TABLE sbtest1 (id int PRIMARY KEY, c text)",
		"INSERT INTO sbtest1 SELECT i, 'c' || i FROM generate_series(1, 100) i", "ANALYZE sbtest1"); err != nil {
		t.Fatal(err)
	}
	t.Run("pool-1.3", func(t *testing.T) {
		cfg, c := pointSelects(t, s, "1.3", 1)
		before := pgStat(t, s, "sessions")
		scans := pgScans(t, s)
		var versions string
		polls := 0
		seen := make(chan struct{})
		go func() {
			defer close(seen)
			// While the pool runs: what its connections negotiated.
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				polls++
				pgQuery(s, `SELECT count(*) || ' ' || coalesce(string_agg(DISTINCT version, ','), '') FROM pg_stat_ssl JOIN pg_stat_activity USING (pid)
					WHERE application_name = 'pgbench' AND backend_type = 'client backend'`, &versions)
				if strings.HasPrefix(versions, "2 ") {
					return
				}
			}
		}()
		rep, err := c.Run(ctx, Run{Experiment: "pool", Concurrency: 2, Duration: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		<-seen
		if versions != "2 TLSv1.3" {
			t.Errorf("pg_stat_ssl of pgbench's connections: %q, want 2 TLSv1.3", versions)
		}
		// A pool for a duration: pgbench's own count, its latencies a
		// sample of its log.
		checkSampled(t, cfg, rep, 2)
		if rep.Totals.Ops < 10 {
			t.Errorf("only %d operations in 3 s", rep.Totals.Ops)
		}
		if rep.Elapsed <= 0 || rep.Elapsed > 3500*time.Millisecond {
			t.Errorf("the run took %v of 3 s", rep.Elapsed)
		}
		// Its 2 connections and its setup one, and the checks: of the
		// index scans, of TLS.
		waitStat(t, s, "sessions", before, 2+1+1+int64(polls))
		// (Counted as the backends exit, after the sessions.)
		if got := pgScans(t, s) - scans; got != rep.Totals.Ops {
			t.Errorf("the server counted %d point selects, pgbench reported %d", got, rep.Totals.Ops)
		}
	})
	t.Run("pool-warmup", func(t *testing.T) {
		// The warm-up is a pgbench run of its own, before Warmed: the
		// server counts its statements and sessions too, the report only
		// the measured run's.
		cfg, c := pointSelects(t, s, "off", 1)
		before := pgStat(t, s, "sessions")
		scans := pgScans(t, s)
		warmed := 0
		rep, err := c.Run(ctx, Run{Experiment: "pool", Concurrency: 2, Duration: time.Second, Warmup: time.Second,
			Warmed: func() { warmed++ }})
		if err != nil {
			t.Fatal(err)
		}
		checkSampled(t, cfg, rep, 2)
		if warmed != 1 || rep.Warmup < time.Second || rep.WarmupCPU <= 0 {
			t.Errorf("warmed %d times, warm-up %v with %v of CPU", warmed, rep.Warmup, rep.WarmupCPU)
		}
		// Two runs of 2 connections and a setup one, and the check of
		// the index scans; the run says all but the measured pool's.
		if rep.Extra != exactly(2+1+1) {
			t.Errorf("the run says it opened %+v besides its pool, want the warm-up's 2 and pgbench's first twice", rep.Extra)
		}
		waitStat(t, s, "sessions", before, 2*(2+1)+1)
		if got := pgScans(t, s) - scans; got <= rep.Totals.Ops {
			t.Errorf("the server counted %d point selects, no more than the %d reported after the warm-up", got, rep.Totals.Ops)
		}
	})
	t.Run("pool-count", func(t *testing.T) {
		// A pool for a count: each operation from the log, MaxOps of them.
		cfg, c := pointSelects(t, s, "off", 1)
		scans := pgScans(t, s)
		rep, err := c.Run(ctx, Run{Experiment: "pool", Concurrency: 2, MaxOps: 41, Duration: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		checkOps(t, cfg, rep, 41, 2)
		// pgbench runs whole transactions a client: 21 each.
		if got := pgScans(t, s) - scans; got != 42 {
			t.Errorf("the server counted %d point selects, want 2 clients × 21", got)
		}
	})
	t.Run("pool-errors", func(t *testing.T) {
		_, c := pointSelects(t, s, "off", 3) // no sbtest2 and sbtest3
		rep, err := c.Run(ctx, Run{Experiment: "pool", Concurrency: 2, Duration: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		failed := 0
		for _, o := range rep.Ops {
			if !o.Failed() {
				continue
			}
			failed++
			if o.Phase != "query" || o.Kind != "server" || !regexp.MustCompile(`relation "sbtest[23]" does not exist`).MatchString(o.Message) {
				t.Errorf("op %+v", o)
			}
		}
		if failed != 2 {
			t.Fatalf("%d failed operations, want the 2 aborted clients: %+v", failed, rep.Ops)
		}
		// The clients aborted: what they ran before is counted, and the
		// failed operations span the run.
		if rep.Totals == nil || rep.Totals.Errors != 0 {
			t.Errorf("totals %+v", rep.Totals)
		}
		for _, o := range rep.Ops {
			if time.Duration(o.End-o.Start) != rep.Elapsed {
				t.Errorf("aborted client %d spans %v of the run's %v", o.Worker, time.Duration(o.End-o.Start), rep.Elapsed)
			}
		}
	})
	t.Run("wrong-password", func(t *testing.T) {
		cfg := nativeConfig(t, s, "postgres", "libpq", "scram-sha-256", "off")
		cfg.Password = "not-the-" + cfg.Password
		c := startStack(t, cfg)
		_, err := c.Run(ctx, Run{Experiment: "pool", Concurrency: 1, Duration: time.Second})
		if err == nil || !strings.Contains(err.Error(), "password authentication failed") || strings.Contains(err.Error(), cfg.Password) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		c := startStack(t, nativeConfig(t, s, "postgres", "libpq", "trust", "off"))
		ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		if _, err := c.Run(ctx, Run{Experiment: "pool", Concurrency: 1, Duration: time.Minute}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v", err)
		}
	})
}

// pointSelects starts libpq for point selects over tables tables, as the
// trust user, with TLS tls.
func pointSelects(t *testing.T, s lab.Server, tls string, tables int) (Config, Client) {
	t.Helper()
	cfg := nativeConfig(t, s, "postgres", "libpq", "trust", tls)
	cfg.Workload, cfg.Tables = "point-select", tables
	return cfg, startStack(t, cfg)
}

// checkSampled checks a pool run for a duration: pgbench's totals (its
// count, the latencies of a sample), from c clients.
func checkSampled(t *testing.T, cfg Config, rep Report, c int) {
	t.Helper()
	if rep.Totals == nil {
		t.Fatalf("a pool for a duration reported %d operations, not pgbench's totals", len(rep.Ops))
	}
	checkOps(t, cfg, rep, -1, c)
}

// TestPgbenchTotals reads pgbench 15's summaries: a run, and one whose
// clients aborted.
func TestPgbenchTotals(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		n, failed int64
		tps       float64
	}{
		{"run", `pgbench (15.18 (Debian 15.18-0+deb12u1))
transaction type: workload.sql
scaling factor: 1
query mode: prepared
number of clients: 4
number of threads: 4
maximum number of tries: 1
duration: 2 s
number of transactions actually processed: 33174
number of failed transactions: 0 (0.000%)
latency average = 0.230 ms
initial connection time = 93.524 ms
tps = 17381.517873 (without initial connection time)
`, 33174, 0, 17381.517873},
		{"aborted", `number of clients: 2
number of transactions actually processed: 9380
number of failed transactions: 3 (0.032%)
latency average = 0.420 ms
tps = 4757.825177 (without initial connection time)
`, 9380, 3, 4757.825177},
		{"none", "number of transactions actually processed: 0\nnumber of failed transactions: 0 (NaN%)\n", 0, 0, 0},
	} {
		n, failed, tps, err := pgbenchTotals([]byte(tc.out))
		if err != nil || n != tc.n || failed != tc.failed || tps != tc.tps {
			t.Errorf("%s: %d, %d, %v, %v", tc.name, n, failed, tps, err)
		}
	}
	if _, _, _, err := pgbenchTotals([]byte("pgbench: error: connection to server failed\n")); err == nil {
		t.Error("a summary without a count read")
	}
}
