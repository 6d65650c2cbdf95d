package pgdrv

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
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
	start := time.Now()
	s, err := lab.Start(context.Background(), "postgres", lab.Options{Keys: testKeys})
	srvErr = err
	if err == nil {
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
	raw, err := srv.URL(auth, tlsMode != "off")
	if err != nil {
		return driver.Config{}, err
	}
	u, err := url.Parse(raw)
	if err != nil {
		return driver.Config{}, errors.New("the lab URL does not parse")
	}
	cfg := driver.Config{
		Variant:  plan.Variant{TLS: tlsMode, Auth: auth},
		Addr:     u.Host,
		Host:     u.Host,
		Dialer:   &netx.Dialer{},
		Timeout:  10 * time.Second,
		URL:      u,
		Workload: w,
	}
	if w.Tables == 0 {
		cfg.Workload.Tables, cfg.Workload.Rows = testTables, testRows
	}
	if tlsMode != "off" {
		cfg.TLS, err = tlsx.ClientConfig(cfg.Variant, tlsx.ClientOptions{RootCAs: srv.RootCAs(), ServerName: "127.0.0.1"})
	}
	return cfg, err
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

// connectOnce is one connect-experiment operation: open, one Do, close.
func connectOnce(t testing.TB, cfg driver.Config) netx.Trace {
	t.Helper()
	s := open(t, cfg)
	if err := s.Do(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return s.Conn().Finish()
}

// TestRoundTrips checks the exact round trips of every phase: SSLRequest 1;
// TLS 1.2 2; TLS 1.3 1, but 2 with Go's default key shares, which
// PostgreSQL 15 (prime256v1 only) answers with a HelloRetryRequest; auth
// trust 1, md5 2, scram 3; first query 1 with the simple protocol and 2
// prepared (Parse+Describe, then Bind+Execute).
func TestRoundTrips(t *testing.T) {
	authTrips := map[string]int{"trust": 1, "md5": 2, "scram-sha-256": 3}
	tlsTrips := map[string]int{"1.3": 2, "1.3-p256": 1, "1.2": 2}
	queryTrips := map[string]int{"simple": 1, "prepared": 2}
	for _, auth := range []string{"trust", "md5", "scram-sha-256"} {
		for _, mode := range []string{"off", "1.3", "1.3-p256", "1.2"} {
			for _, qm := range []string{"simple", "prepared"} {
				t.Run(fmt.Sprintf("%s/tls-%s/%s", auth, mode, qm), func(t *testing.T) {
					version, p256 := strings.CutSuffix(mode, "-p256")
					cfg := mustConfig(t, auth, version, driver.Workload{Name: "point-select", QueryMode: qm})
					if p256 {
						cfg.TLS.CurvePreferences = []tls.CurveID{tls.CurveP256}
					}
					s := open(t, cfg)
					if state, _ := s.TLS(); state.HelloRetryRequest != (version == "1.3" && !p256) {
						t.Errorf("HelloRetryRequest %v", state.HelloRetryRequest)
					}
					if err := s.Do(context.Background()); err != nil {
						t.Fatal(err)
					}
					if err := s.Close(); err != nil {
						t.Fatal(err)
					}
					tr := s.Conn().Finish()
					want := []netx.Phase{{Name: netx.PhaseTCP, RoundTrips: 1}}
					if mode != "off" {
						want = append(want, netx.Phase{Name: PhaseTLSNegotiation, RoundTrips: 1},
							netx.Phase{Name: netx.PhaseTLSHandshake, RoundTrips: tlsTrips[mode]})
					}
					want = append(want, netx.Phase{Name: PhaseAuth, RoundTrips: authTrips[auth]},
						netx.Phase{Name: PhaseQuery, RoundTrips: queryTrips[qm]},
						netx.Phase{Name: netx.PhaseClose})
					if got := phaseTrips(tr); !slices.Equal(got, phaseTrips(netx.Trace{Phases: want})) {
						t.Errorf("phases and round trips %v, want %v", got, phaseTrips(netx.Trace{Phases: want}))
					}
				})
			}
		}
	}
}

func phaseTrips(tr netx.Trace) []string {
	var out []string
	for _, p := range tr.Phases {
		out = append(out, fmt.Sprintf("%s:%d", p.Name, p.RoundTrips))
	}
	return out
}

// TestPhaseTimes reports the median phase times of plain vs TLS 1.3
// (rsa2048) and trust vs scram, from 20 interleaved connections each.
// BenchmarkPhaseTimes prints the median time of each connection phase
// per auth method, with and without TLS, in ms: figures, not invariants
// (the round-trip tests hold those).
func BenchmarkPhaseTimes(b *testing.B) {
	t := b
	type variant struct{ auth, tls string }
	variants := []variant{{"trust", "off"}, {"trust", "1.3"}, {"scram-sha-256", "off"}, {"scram-sha-256", "1.3"}}
	cfgs := make([]driver.Config, len(variants))
	for i, v := range variants {
		cfgs[i] = mustConfig(t, v.auth, v.tls, driver.Workload{QueryMode: "prepared"})
	}
	times := make([]map[string][]time.Duration, len(variants))
	for i := range times {
		times[i] = map[string][]time.Duration{}
	}
	for range 20 * b.N {
		for i, cfg := range cfgs {
			tr := connectOnce(t, cfg)
			for _, p := range tr.Phases {
				times[i][p.Name] = append(times[i][p.Name], p.Duration)
			}
			times[i]["total"] = append(times[i]["total"], tr.Total())
		}
	}
	for i, v := range variants {
		var parts []string
		for _, name := range []string{"tcp", PhaseTLSNegotiation, netx.PhaseTLSHandshake, PhaseAuth, PhaseQuery, netx.PhaseClose, "total"} {
			if ds := times[i][name]; len(ds) > 0 {
				parts = append(parts, fmt.Sprintf("%s %v", name, median(ds).Round(time.Microsecond)))
				b.ReportMetric(float64(median(ds).Microseconds())/1000, fmt.Sprintf("ms-%s-tls%s-%s", v.auth, v.tls, name))
			}
		}
		t.Logf("%-13s tls %-3s: %s", v.auth, v.tls, strings.Join(parts, ", "))
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestServerAgrees checks pg_stat_ssl against what the client negotiated.
func TestServerAgrees(t *testing.T) {
	// OpenSSL's names of the suites Go offers for TLS 1.2 (TLS 1.3 names
	// are the same in both).
	openssl := map[string]string{
		"ECDHE-RSA-AES128-GCM-SHA256":   "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
		"ECDHE-RSA-AES256-GCM-SHA384":   "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
		"ECDHE-RSA-CHACHA20-POLY1305":   "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
		"ECDHE-ECDSA-AES128-GCM-SHA256": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
		"ECDHE-ECDSA-AES256-GCM-SHA384": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
		"ECDHE-ECDSA-CHACHA20-POLY1305": "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
	}
	for _, mode := range []string{"off", "1.2", "1.3"} {
		t.Run("tls-"+mode, func(t *testing.T) {
			s := open(t, mustConfig(t, "", mode, driver.Workload{}))
			defer s.Close()
			view, err := s.ServerTLS(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			state, ok := s.TLS()
			if mode == "off" {
				if view.TLS || ok {
					t.Errorf("plain session: server says ssl=%v, client TLS %v", view.TLS, ok)
				}
				return
			}
			version := strings.Replace(tls.VersionName(state.Version), "TLS ", "TLSv", 1)
			suite := tls.CipherSuiteName(state.CipherSuite)
			if n, ok := openssl[view.Cipher]; ok {
				view.Cipher = n
			}
			if !view.TLS || view.Version != version || view.Cipher != suite {
				t.Errorf("server says %+v, client negotiated %s %s", view, version, suite)
			}
			t.Logf("server: %+v", view)
		})
	}
}

// TestKeys switches the server through every key type and checks the key
// a driver session sees; then checks that RSA-4096 handshakes are slower
// than RSA-2048 ones.
func TestKeys(t *testing.T) {
	s := server(t)
	ctx := context.Background()
	t.Cleanup(func() { s.UseKey(ctx, testKeys[0]) })
	cfg := mustConfig(t, "trust", "1.3", driver.Workload{})
	for _, key := range testKeys {
		if _, err := s.UseKey(ctx, key); err != nil {
			t.Fatal(err)
		}
		sess := open(t, cfg)
		state, _ := sess.TLS()
		sess.Close()
		if got := tlsx.KeyTypeOf(tlsx.PeerKey(state.PeerCertificates[0])); got != key {
			t.Errorf("server set to %s presented %s", key, got)
		}
	}

	hs := map[string][]time.Duration{}
	for range 20 {
		for _, key := range []string{"rsa2048", "rsa4096"} {
			if _, err := s.UseKey(ctx, key); err != nil {
				t.Fatal(err)
			}
			tr := connectOnce(t, cfg)
			p, _ := tr.Phase(netx.PhaseTLSHandshake)
			hs[key] = append(hs[key], p.Duration)
		}
	}
	m2048, m4096 := median(hs["rsa2048"]), median(hs["rsa4096"])
	t.Logf("median tls-handshake: rsa2048 %v, rsa4096 %v", m2048, m4096)
	if float64(m4096) < 1.3*float64(m2048) {
		t.Errorf("rsa4096 handshakes (median %v) are not clearly slower than rsa2048 ones (%v)", m4096, m2048)
	}
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
			if d, _ := New(cfg); d.(driver.Counter).Statements() != 16 {
				t.Errorf("Statements() = %d, want 16", d.(driver.Counter).Statements())
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

// TestStream reads the whole of sbtest1.
func TestStream(t *testing.T) {
	for _, qm := range []string{"simple", "prepared"} {
		t.Run(qm, func(t *testing.T) {
			s := open(t, mustConfig(t, "", "1.3", driver.Workload{Name: "stream", QueryMode: qm}))
			_, before := s.Conn().Counters()
			if err := s.Do(context.Background()); err != nil {
				t.Fatal(err)
			}
			_, after := s.Conn().Counters()
			s.Close()
			// Every row carries at least c (120) and pad (60).
			if after-before < testRows*180 {
				t.Errorf("stream read %d bytes, want at least %d", after-before, testRows*180)
			}
		})
	}
}

// TestAuthFailure checks that a wrong password fails in the auth phase,
// says so, and does not quote the password.
func TestAuthFailure(t *testing.T) {
	for _, auth := range []string{"scram-sha-256", "md5"} {
		for _, mode := range []string{"off", "1.3"} {
			cfg := mustConfig(t, auth, mode, driver.Workload{})
			password, _ := cfg.URL.User.Password()
			u := *cfg.URL
			u.User = url.UserPassword(cfg.URL.User.Username(), password+"x")
			cfg.URL = &u
			d, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = d.Open(context.Background())
			var oe *driver.OpError
			if !errors.As(err, &oe) || oe.Phase != PhaseAuth || !strings.Contains(err.Error(), "password authentication failed") {
				t.Errorf("%s tls %s, wrong password: %v", auth, mode, err)
			}
			if err != nil && strings.Contains(err.Error(), password) {
				t.Fatalf("%s tls %s: the error quotes the password", auth, mode)
			}
			t.Logf("%s tls %s: %v", auth, mode, err)
		}
	}
}

// TestPassfile logs in with the password from the lab's passfile.
func TestPassfile(t *testing.T) {
	cfg := mustConfig(t, "scram-sha-256", "1.3", driver.Workload{})
	u := *cfg.URL
	u.User = url.User(cfg.URL.User.Username())
	u.RawQuery = url.Values{"passfile": {srv.PasswordFile()}}.Encode()
	cfg.URL = &u
	connectOnce(t, cfg)
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
	if !errors.As(err, &oe) || oe.Phase != PhaseTLSNegotiation || !strings.Contains(err.Error(), "does not accept TLS") {
		t.Errorf("TLS to a plain-only server: %v", err)
	}
	t.Log(err)
}

// TestCancel checks that cancelling the session's context unblocks a
// query that waits on a lock at once.
func TestCancel(t *testing.T) {
	ctx := context.Background()
	locker := open(t, mustConfig(t, "trust", "off", driver.Workload{}))
	defer locker.Close()
	if _, err := locker.pg.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := locker.pg.Exec(ctx, "LOCK TABLE sbtest1, sbtest2 IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"off", "1.3"} {
		runCtx, cancel := context.WithCancel(ctx)
		cfg := mustConfig(t, "trust", mode, driver.Workload{})
		d, _ := New(cfg)
		s, err := d.Open(runCtx)
		if err != nil {
			t.Fatal(err)
		}
		time.AfterFunc(200*time.Millisecond, cancel)
		start := time.Now()
		err = s.Do(runCtx)
		took := time.Since(start)
		s.Close()
		if err == nil || took > 2*time.Second {
			t.Errorf("tls %s: a blocked query returned %v after %v, want an error soon after 200ms", mode, err, took)
		}
	}
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
