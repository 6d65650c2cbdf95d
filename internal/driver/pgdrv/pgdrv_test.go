package pgdrv

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/drivertest"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// The lab server all tests share, and the size of its sbtest data.
var (
	srv    *lab.Postgres
	srvErr error
)

const testTables, testRows = 2, 1000

var testKeys = []string{"rsa2048", "rsa4096", "rsa1024", "ecdsa-p256"}

func TestMain(m *testing.M) {
	flag.Parse()
	start := time.Now()
	var s lab.Server
	srvErr = labtest.Short()
	if srvErr == nil {
		s, srvErr = lab.Start(context.Background(), "postgres", lab.Options{Keys: testKeys})
	}
	if srvErr == nil {
		srv = s.(*lab.Postgres)
		srvErr = prepare()
		fmt.Fprintf(os.Stderr, "lab server started and sbtest prepared in %v\n", time.Since(start).Round(time.Millisecond))
	}
	code := m.Run()
	if s != nil {
		s.Stop()
	}
	os.Exit(code)
}

func prepare() error {
	cfg, err := newConfig("", "off", driver.Workload{Tables: testTables, Rows: testRows})
	if err != nil {
		return err
	}
	d, err := New(cfg)
	if err != nil {
		return err
	}
	return d.(driver.Preparer).Prepare(context.Background(), testTables, testRows, nil)
}

// server returns the shared lab server. Without PostgreSQL's binaries the
// test is skipped, except in CI, where that is a failure.
func server(t testing.TB) *lab.Postgres {
	t.Helper()
	labtest.Check(t, srvErr)
	return srv
}

// newConfig is what the bench gives a variant: the lab URL of auth, and a
// TLS config of version tlsMode ("off" for plain).
func newConfig(auth, tlsMode string, w driver.Workload) (driver.Config, error) {
	return variantConfig(plan.Variant{TLS: tlsMode, Auth: auth}, w)
}

// variantConfig is the config of variant v against the shared server, with
// workload w of the test data.
func variantConfig(v plan.Variant, w driver.Workload) (driver.Config, error) {
	if w.Tables == 0 {
		w.Tables, w.Rows = testTables, testRows
	}
	return drivertest.LabConfig(srv, v, w)
}

func mustConfig(t testing.TB, auth, tlsMode string, w driver.Workload) driver.Config {
	t.Helper()
	server(t)
	cfg, err := newConfig(auth, tlsMode, w)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func open(t testing.TB, cfg driver.Config) *session {
	t.Helper()
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s.(*session)
}

// TestConformance runs the drivers' shared checks (drivertest.Conformance):
// SSLRequest 1 round trip; TLS 1.3 2, since PostgreSQL 15 (prime256v1
// only) answers Go's key shares with a HelloRetryRequest, 1 offering P-256;
// auth trust 1, md5 2, scram 3; the first query 1 with the simple protocol
// and 2 prepared (Parse+Describe, then Bind+Execute); close none.
// PostgreSQL never resumes TLS sessions; pg_stat_ssl names version and
// cipher.
func TestConformance(t *testing.T) {
	drivertest.Conformance(t, engine(t))
}

// engine describes PostgreSQL and the shared server to drivertest.
func engine(t testing.TB) drivertest.Engine {
	s := server(t)
	// Round trips of auth without TLS: after startup's first
	// authentication request; with TLS the StartupMessage is auth's too.
	authTrips := map[string]int{"trust": 0, "md5": 1, "scram-sha-256": 2}
	queryTrips := map[string]int{"simple": 1, "prepared": 2}
	var cases []drivertest.Case
	for _, auth := range []string{"scram-sha-256", "md5", "trust"} {
		for _, qm := range []string{"prepared", "simple"} {
			cases = append(cases, drivertest.Case{Name: auth + " " + qm, Auth: auth, Workload: driver.Workload{Name: "point-select", QueryMode: qm}})
		}
	}
	// A URL target's connect pings: SELECT 1 as text, whatever the mode.
	cases = append(cases, drivertest.Case{Name: "scram-sha-256 ping", Auth: "scram-sha-256", Workload: driver.Workload{Name: plan.WorkloadPing}})
	queryTrips[plan.WorkloadPing] = 1
	workload := func(name, qm string) drivertest.Case {
		return drivertest.Case{Name: name + " " + qm, Workload: driver.Workload{Name: name, QueryMode: qm}}
	}
	return drivertest.Engine{
		New: New,
		Config: func(t testing.TB, v plan.Variant, c drivertest.Case) driver.Config {
			cfg, err := variantConfig(v, c.Workload)
			if err != nil {
				t.Fatal(err)
			}
			return cfg
		},
		Cases: cases,
		Phases: func(v plan.Variant, c drivertest.Case, handshake int) []drivertest.Trips {
			p := []drivertest.Trips{drivertest.Trip(netx.PhaseTCP, 1), drivertest.Trip(PhaseStartup, 1)}
			auth := authTrips[cmp.Or(c.Auth, s.Auths()[0])]
			if !v.Plain() {
				p = append(p, drivertest.Trip(netx.PhaseTLSHandshake, handshake))
				auth++
			}
			return append(p, drivertest.Trip(PhaseAuth, auth),
				drivertest.Trip(PhaseQuery, queryTrips[cmp.Or(c.Workload.QueryMode, c.Workload.Name, "prepared")]), drivertest.Trip(netx.PhaseClose, 0))
		},
		QueryPhase: PhaseQuery,
		HelloRetry: true,
		Server:     drivertest.ServerSeesSuite,
		Keys:       testKeys,
		UseKey:     s.UseKey,
		Workloads: []drivertest.Workload{
			{Case: workload("point-select", "prepared"), Statements: 1, MinBytes: 120},
			{Case: workload(plan.WorkloadPing, ""), Statements: 1, MinBytes: 1},
			{Case: workload("read-only", "simple"), Statements: 16, MinBytes: 10 * 120},
			{Case: workload("read-only", "prepared"), Statements: 16, MinBytes: 10 * 120},
			// Every row carries at least c (120) and pad (60).
			{Case: workload("stream", "simple"), Statements: 1, MinBytes: testRows * 180},
			{Case: workload("stream", "prepared"), Statements: 1, MinBytes: testRows * 180},
		},
		Login: &drivertest.Login{Auths: []string{"scram-sha-256", "md5"}, Phase: PhaseAuth,
			Refused: "password authentication failed", PasswordFile: s.PasswordFile()},
	}
}

// BenchmarkPhaseTimes prints the median time of each connection phase
// per auth method, with and without TLS, in ms: figures, not invariants
// (the round-trip tests hold those).
func BenchmarkPhaseTimes(b *testing.B) {
	drivertest.PhaseTimes(b, engine(b), 20, []plan.Variant{
		{Auth: "trust", TLS: "off"}, {Auth: "trust", TLS: "1.3"}, {Auth: "scram-sha-256", TLS: "off"}, {Auth: "scram-sha-256", TLS: "1.3"}})
}

// TestPrepare checks that Prepare is idempotent: tables with the right
// rows are left alone, others are made (again).
func TestPrepare(t *testing.T) {
	cfg := mustConfig(t, "md5", "off", driver.Workload{})
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := d.(driver.Preparer)
	ctx := context.Background()
	check := open(t, mustConfig(t, "trust", "off", driver.Workload{}))
	defer check.Close()
	oids := func() map[string]uint32 {
		out := map[string]uint32{}
		rows, err := check.pg.Query(ctx, "SELECT relname::text, oid::int8 FROM pg_class WHERE relname ~ '^sbtest[0-9]+$'")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var name string
			var oid int64
			if err := rows.Scan(&name, &oid); err != nil {
				t.Fatal(err)
			}
			out[name] = uint32(oid)
		}
		if rows.Err() != nil {
			t.Fatal(rows.Err())
		}
		return out
	}
	count := func(table string) int {
		var n int
		if err := check.pg.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	prepare := func(tables int) []int64 {
		var calls []int64
		err := p.Prepare(ctx, tables, testRows, func(done, total int64) {
			if total != int64(tables*testRows) {
				t.Errorf("progress total %d, want %d", total, tables*testRows)
			}
			calls = append(calls, done)
		})
		if err != nil {
			t.Fatal(err)
		}
		return calls
	}

	before := oids()
	if calls := prepare(testTables); len(calls) != testTables || calls[len(calls)-1] != testTables*testRows {
		t.Errorf("prepare of existing tables reported progress %v", calls)
	}
	if after := oids(); !mapsEqual(before, after) {
		t.Errorf("prepare of existing tables changed them: %v, then %v", before, after)
	}

	// A third table is made; a table short of rows is made again.
	prepare(testTables + 1)
	if _, err := check.pg.Exec(ctx, "DELETE FROM sbtest3 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	made := oids()
	prepare(testTables + 1)
	after := oids()
	if after["sbtest1"] != before["sbtest1"] || after["sbtest2"] != before["sbtest2"] || after["sbtest3"] == made["sbtest3"] {
		t.Errorf("tables before %v, after making sbtest3 %v, after remaking it %v", before, made, after)
	}
	for n := 1; n <= testTables+1; n++ {
		if got := count(fmt.Sprintf("sbtest%d", n)); got != testRows {
			t.Errorf("sbtest%d has %d rows, want %d", n, got, testRows)
		}
	}
	var c, pad string
	var k, minID, maxID int
	err = check.pg.QueryRow(ctx, "SELECT k, c, pad, (SELECT min(id) FROM sbtest3), (SELECT max(id) FROM sbtest3) FROM sbtest3 LIMIT 1").
		Scan(&k, &c, &pad, &minID, &maxID)
	if err != nil {
		t.Fatal(err)
	}
	template := regexp.MustCompile(`^[0-9]{11}(-[0-9]{11})*$`)
	if k < 1 || k > testRows || len(c) != 120 || !template.MatchString(strings.TrimRight(c, " ")) || len(strings.TrimRight(c, " ")) != 119 ||
		len(strings.TrimRight(pad, " ")) != 59 || minID != 1 || maxID != testRows {
		t.Errorf("row k=%d c=%q pad=%q, ids %d..%d", k, c, pad, minID, maxID)
	}
	if _, err := check.pg.Exec(ctx, "DROP TABLE sbtest3"); err != nil {
		t.Fatal(err)
	}
}

func mapsEqual(a, b map[string]uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestReadOnlyStatements reads from the server's own log (log_statement =
// all) what one read-only operation sent: sysbench's 16 statements.
func TestReadOnlyStatements(t *testing.T) {
	s := server(t)
	ctx := context.Background()
	if err := s.LogStatements(ctx, true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.LogStatements(ctx, false) })
	for _, qm := range []string{"simple", "prepared"} {
		t.Run(qm, func(t *testing.T) {
			cfg := mustConfig(t, "", "off", driver.Workload{Name: "read-only", QueryMode: qm})
			sess := open(t, cfg)
			for range 2 { // the second runs on cached statements
				if err := sess.Do(ctx); err != nil {
					t.Fatal(err)
				}
			}
			pid := sess.pg.PgConn().PID()
			sess.Close()
			stmts := loggedStatements(t, s.LogFile(), pid)
			if len(stmts) != 32 {
				t.Fatalf("the server logged %d statements for two read-only operations, want 32:\n%s", len(stmts), strings.Join(stmts, "\n"))
			}
			for _, op := range [][]string{stmts[:16], stmts[16:]} {
				checkReadOnly(t, op)
			}
		})
	}
}

// loggedStatements returns the statements the server logged for backend
// pid, with their parameters put in place ($1 -> '5').
func loggedStatements(t *testing.T, logFile string, pid uint32) []string {
	t.Helper()
	f, err := os.Open(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stmt := regexp.MustCompile(`\[` + strconv.Itoa(int(pid)) + `\] LOG:  (?:statement|execute [^:]*): (.*)$`)
	param := regexp.MustCompile(`\[` + strconv.Itoa(int(pid)) + `\] DETAIL:  parameters: (.*)$`)
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := stmt.FindStringSubmatch(sc.Text()); m != nil {
			out = append(out, m[1])
		} else if m := param.FindStringSubmatch(sc.Text()); m != nil && len(out) > 0 {
			// "$1 = '5', $2 = '104'"; replace from the highest so that
			// $1 does not match inside $10.
			ps := strings.Split(m[1], ", ")
			for i := len(ps) - 1; i >= 0; i-- {
				name, value, _ := strings.Cut(ps[i], " = ")
				out[len(out)-1] = strings.ReplaceAll(out[len(out)-1], name, value)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkReadOnly checks one oltp_read_only transaction as the server saw it.
func checkReadOnly(t *testing.T, stmts []string) {
	t.Helper()
	// A value is $N filled in from the log's parameters ('5'), or what
	// pgx's simple protocol writes in its place ( '5' ).
	const v = `\s*'(\d+)'\s*`
	point := regexp.MustCompile(`^SELECT c FROM (sbtest\d+) WHERE id=` + v + `$`)
	ranges := []*regexp.Regexp{
		regexp.MustCompile(`^SELECT c FROM (sbtest\d+) WHERE id BETWEEN` + v + `AND` + v + `$`),
		regexp.MustCompile(`^SELECT SUM\(k\) FROM (sbtest\d+) WHERE id BETWEEN` + v + `AND` + v + `$`),
		regexp.MustCompile(`^SELECT c FROM (sbtest\d+) WHERE id BETWEEN` + v + `AND` + v + `ORDER BY c$`),
		regexp.MustCompile(`^SELECT DISTINCT c FROM (sbtest\d+) WHERE id BETWEEN` + v + `AND` + v + `ORDER BY c$`),
	}
	validTable := func(name string) bool {
		n, _ := strconv.Atoi(strings.TrimPrefix(name, "sbtest"))
		return n >= 1 && n <= testTables
	}
	if stmts[0] != "BEGIN" || stmts[15] != "COMMIT" {
		t.Errorf("transaction starts with %q and ends with %q", stmts[0], stmts[15])
	}
	var table string
	for i, st := range stmts[1:11] {
		m := point.FindStringSubmatch(st)
		if m == nil {
			t.Errorf("statement %d: %q is no point select", i+2, st)
			continue
		}
		if table == "" {
			table = m[1]
		}
		id, _ := strconv.Atoi(m[2])
		if m[1] != table || !validTable(m[1]) || id < 1 || id > testRows {
			t.Errorf("statement %d: %q: the point selects of one transaction read one table, ids 1..%d", i+2, st, testRows)
		}
	}
	for i, re := range ranges {
		st := stmts[11+i]
		m := re.FindStringSubmatch(st)
		if m == nil {
			t.Errorf("statement %d: %q, want %s", 12+i, st, re)
			continue
		}
		lo, _ := strconv.Atoi(m[2])
		hi, _ := strconv.Atoi(m[3])
		if !validTable(m[1]) || lo < 1 || lo > testRows || hi-lo != 99 {
			t.Errorf("statement %d: %q: want a range of 100 ids from 1..%d", 12+i, st, testRows)
		}
	}
}

// TestPlainOnlyServer asks TLS of a server that has none.
func TestPlainOnlyServer(t *testing.T) {
	server(t)
	plain := labtest.Start(t, "postgres", lab.Options{PlainOnly: true})
	raw, _ := plain.URL("", true)
	u, _ := url.Parse(raw)
	v := plan.Variant{TLS: "1.3"}
	tc, _ := tlsx.ClientConfig(v, tlsx.ClientOptions{RootCAs: plain.RootCAs(), ServerName: "127.0.0.1"})
	d, err := New(driver.Config{Variant: v, Addr: u.Host, TLS: tc, Dialer: &netx.Dialer{}, Timeout: 5 * time.Second, URL: u,
		Workload: driver.Workload{Tables: 1, Rows: 1}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Open(context.Background())
	var oe *driver.OpError
	if !errors.As(err, &oe) || oe.Phase != PhaseStartup || !strings.Contains(err.Error(), "does not accept TLS") {
		t.Errorf("TLS to a plain-only server: %v", err)
	}
	t.Log(err)
}

// TestConfigErrors checks what New refuses.
func TestConfigErrors(t *testing.T) {
	u, _ := url.Parse("postgres://u:secret@127.0.0.1:1/db")
	bad, _ := url.Parse("postgres://u:secret@127.0.0.1:1/db?sslmode=bogus")
	w := driver.Workload{Tables: 1, Rows: 1}
	for _, tc := range []struct {
		name string
		cfg  driver.Config
		want string
	}{
		{"no URL", driver.Config{Workload: w}, "no URL"},
		{"bad URL", driver.Config{URL: bad, Workload: w}, "sslmode"},
		{"workload", driver.Config{URL: u, Workload: driver.Workload{Name: "write-only", Tables: 1, Rows: 1}}, "unknown workload"},
		{"query mode", driver.Config{URL: u, Workload: driver.Workload{QueryMode: "batch", Tables: 1, Rows: 1}}, "query mode"},
		{"no data size", driver.Config{URL: u, Workload: driver.Workload{Name: "read-only"}}, "size"},
	} {
		_, err := New(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: %v, want an error about %s without the password", tc.name, err, tc.want)
		}
	}
	if _, err := New(driver.Config{URL: u, Workload: driver.Workload{Name: "stream"}}); err != nil {
		t.Errorf("stream needs no data size: %v", err)
	}
}
