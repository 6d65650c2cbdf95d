package pgdrv

import (
	"bufio"
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/script"
)

// scriptConfig is the plain variant's config running the scripts (name,
// weight, text) in mode.
func scriptConfig(t *testing.T, mode string, scripts ...string) driver.Config {
	t.Helper()
	var parsed []*script.Script
	for i := 0; i+2 < len(scripts); i += 3 {
		w, _ := strconv.Atoi(scripts[i+1])
		sc, err := script.Parse(context.Background(), scripts[i], scripts[i+2], w, script.Postgres)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, sc)
	}
	mix, err := script.NewMix(parsed...)
	if err != nil {
		t.Fatal(err)
	}
	return mustConfig(t, "", "off", driver.Workload{QueryMode: mode, Scripts: mix, Tables: testTables, Rows: testRows})
}

// exec runs sql on the session's connection outside the workload.
func exec(t *testing.T, s *session, sql string) {
	t.Helper()
	if _, err := s.pg.Exec(context.Background(), sql, pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatal(err)
	}
}

// logged is one statement as the server logged it: "statement" (simple
// protocol) or "execute NAME" (a prepared statement), its text, and the
// parameters' values.
type logged struct {
	kind, text string
	params     []string
}

// scriptLog reads what the server logged for backend pid.
func scriptLog(t *testing.T, pid uint32) []logged {
	t.Helper()
	f, err := os.Open(srv.LogFile())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := strconv.Itoa(int(pid))
	stmt := regexp.MustCompile(`\[` + p + `\] LOG:  (statement|execute [^:]*): (.*)$`)
	param := regexp.MustCompile(`\[` + p + `\] DETAIL:  parameters: (.*)$`)
	value := regexp.MustCompile(`\$\d+ = '([^']*)'`)
	var out []logged
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := stmt.FindStringSubmatch(sc.Text()); m != nil {
			out = append(out, logged{kind: m[1], text: m[2]})
		} else if m := param.FindStringSubmatch(sc.Text()); m != nil && len(out) > 0 {
			for _, v := range value.FindAllStringSubmatch(m[1], -1) {
				out[len(out)-1].params = append(out[len(out)-1].params, v[1])
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestScriptReachesServer: the server's own log (log_statement = all)
// shows each statement of a script as written, one by one, as prepared
// statements P_n with their values as parameters (untyped, as pgbench
// sends them: hence the casts) or as simple-protocol
// text with the values in place; \set values stay in their bounds and
// variables carry from line to line.
func TestScriptReachesServer(t *testing.T) {
	s := server(t)
	ctx := context.Background()
	if err := s.LogStatements(ctx, true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.LogStatements(ctx, false) })
	const src = `-- a pgbench script
\set a random(1, 10)
\set b :a * 2
BEGIN;
SELECT c FROM sbtest1
  WHERE id = :a;
SELECT :a::int + :b::int AS s, 'x:y' AS lit, :client_id::int;
COMMIT;
`
	for _, mode := range []string{"prepared", "simple"} {
		t.Run(mode, func(t *testing.T) {
			sess := open(t, scriptConfig(t, mode, "bench.sql", "1", src))
			const passes = 3
			for range passes {
				if err := sess.Do(ctx); err != nil {
					t.Fatal(err)
				}
			}
			pid := sess.pg.PgConn().PID()
			sess.Close()
			got := scriptLog(t, pid)
			if len(got) != 4*passes {
				t.Fatalf("the server logged %d statements for %d passes, want %d: %+v", len(got), passes, 4*passes, got)
			}
			for p := range passes {
				op := got[4*p : 4*p+4]
				for i, l := range op {
					want := "statement"
					if mode == "prepared" {
						want = "execute P_" + strconv.Itoa(i)
					}
					if l.kind != want {
						t.Errorf("pass %d statement %d: logged as %q, want %q", p, i, l.kind, want)
					}
				}
				var a, b, client string
				if mode == "prepared" {
					wantText := []string{"BEGIN;", "SELECT c FROM sbtest1\n  WHERE id = $1;", "SELECT $1::int + $2::int AS s, 'x:y' AS lit, $3::int;", "COMMIT;"}
					for i := range op {
						// The log holds the first line of a statement.
						if first, _, _ := strings.Cut(wantText[i], "\n"); op[i].text != first {
							t.Errorf("pass %d: logged %q, want %q", p, op[i].text, first)
						}
					}
					if len(op[1].params) != 1 || len(op[2].params) != 3 {
						t.Fatalf("parameters %q, %q", op[1].params, op[2].params)
					}
					a, b, client = op[1].params[0], op[2].params[1], op[2].params[2]
					if op[2].params[0] != a {
						t.Errorf(":a is %s in one statement and %s in the next", a, op[2].params[0])
					}
				} else {
					m := regexp.MustCompile(`^SELECT (\d+)::int \+ (\d+)::int AS s, 'x:y' AS lit, (\d+)::int;$`).FindStringSubmatch(op[2].text)
					if op[1].text != "SELECT c FROM sbtest1" || m == nil {
						t.Fatalf("logged %q", op)
					}
					a, b, client = m[1], m[2], m[3]
				}
				ai, _ := strconv.Atoi(a)
				bi, _ := strconv.Atoi(b)
				if ai < 1 || ai > 10 || bi != 2*ai || client != "0" {
					t.Errorf("pass %d: a = %s, b = %s, client_id = %s: want a in [1, 10], b = 2a, client_id 0", p, a, b, client)
				}
			}
		})
	}
}

// TestScriptBounds: every random function's values, inserted by a script
// and read back by the server, stay within their bounds; random() reaches
// both ends.
func TestScriptBounds(t *testing.T) {
	const src = `\set u random(-3, 3)
\set e random_exponential(1, 5, 2.5)
\set g random_gaussian(10, 20, 2.5)
\set z random_zipfian(100, 105, 1.5)
INSERT INTO script_bounds VALUES (:u, :e, :g, :z);
`
	for _, mode := range []string{"prepared", "simple"} {
		t.Run(mode, func(t *testing.T) {
			sess := open(t, scriptConfig(t, mode, "bounds.sql", "1", src))
			defer sess.Close()
			exec(t, sess, "DROP TABLE IF EXISTS script_bounds; CREATE TABLE script_bounds (u int, e int, g int, z int)")
			defer exec(t, sess, "DROP TABLE script_bounds")
			for range 300 {
				if err := sess.Do(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			var n, umin, umax, emin, emax, gmin, gmax, zmin, zmax int
			err := sess.pg.QueryRow(context.Background(), `SELECT count(*), min(u), max(u), min(e), max(e), min(g), max(g), min(z), max(z) FROM script_bounds`).
				Scan(&n, &umin, &umax, &emin, &emax, &gmin, &gmax, &zmin, &zmax)
			if err != nil {
				t.Fatal(err)
			}
			if n != 300 || umin != -3 || umax != 3 || emin < 1 || emax > 5 || gmin < 10 || gmax > 20 || zmin != 100 || zmax > 105 {
				t.Errorf("%d rows: u in [%d, %d] (want exactly [-3, 3]), e [%d, %d] in [1, 5], g [%d, %d] in [10, 20], z [%d, %d] from 100 in [100, 105]",
					n, umin, umax, emin, emax, gmin, gmax, zmin, zmax)
			}
		})
	}
}

// TestScriptMix: two scripts at weights 3 and 1 run in about that
// proportion, counted by the server; a mix's statements per operation are
// the weighted mean.
func TestScriptMix(t *testing.T) {
	cfg := scriptConfig(t, "prepared",
		"a.sql", "3", "INSERT INTO script_mix VALUES ('a');\n",
		"b.sql", "1", "INSERT INTO script_mix VALUES ('b');\nSELECT 1;\nSELECT 2;\nSELECT 3;\nSELECT 4;\n")
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if n := d.(driver.MultiStatement).Statements(); n != 2 { // (3*1 + 1*5) / 4
		t.Errorf("Statements() = %d, want 2", n)
	}
	sess := open(t, cfg)
	defer sess.Close()
	exec(t, sess, "DROP TABLE IF EXISTS script_mix; CREATE TABLE script_mix (s text)")
	defer exec(t, sess, "DROP TABLE script_mix")
	const passes = 400
	for range passes {
		if err := sess.Do(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	var a, b int
	if err := sess.pg.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE s = 'a'), count(*) FILTER (WHERE s = 'b') FROM script_mix`).Scan(&a, &b); err != nil {
		t.Fatal(err)
	}
	if a+b != passes || a < 240 || a > 360 {
		t.Errorf("a.sql ran %d times, b.sql %d, of %d passes: want about 300 and 100", a, b, passes)
	}
}

// TestScriptErrors: a failing statement fails the operation naming the
// file and line, and is rolled back, so that the next pass does not find
// an aborted transaction; a script that leaves a transaction open is an
// error too.
func TestScriptErrors(t *testing.T) {
	ctx := context.Background()
	sess := open(t, scriptConfig(t, "prepared", "dup.sql", "1", "BEGIN;\nINSERT INTO script_dup VALUES (1);\nCOMMIT;\n"))
	defer sess.Close()
	exec(t, sess, "DROP TABLE IF EXISTS script_dup; CREATE TABLE script_dup (id int PRIMARY KEY)")
	defer exec(t, sess, "DROP TABLE script_dup")
	if err := sess.Do(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		err := sess.Do(ctx)
		if err == nil || !strings.Contains(err.Error(), "query: dup.sql:2: ERROR: duplicate key value") {
			t.Errorf("a duplicate insert: %v", err)
		}
		if tx := sess.pg.PgConn().TxStatus(); tx != 'I' {
			t.Errorf("after the failed pass the transaction status is %c", tx)
		}
	}

	open := open(t, scriptConfig(t, "simple", "open.sql", "1", "BEGIN;\nSELECT 1;\n"))
	defer open.Close()
	for range 2 {
		if err := open.Do(ctx); err == nil || !strings.Contains(err.Error(), "the script ended inside a transaction block: end it with COMMIT or END") {
			t.Errorf("a pass that leaves a transaction open: %v", err)
		}
	}
}
