package mysqldrv

import (
	"context"
	sqldriver "database/sql/driver"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/drivertest"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/script"
)

// openScript opens a plain session running src in mode.
func openScript(t *testing.T, mode, src string) *session {
	t.Helper()
	srv := server(t)
	sc, err := script.Parse(context.Background(), "bench.sql", src, 1, script.MySQL)
	if err != nil {
		t.Fatal(err)
	}
	mix, err := script.NewMix(sc)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := drivertest.LabConfig(srv, plan.Variant{TLS: "off"}, driver.Workload{QueryMode: mode, Scripts: mix, Tables: testTables, Rows: testRows})
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if n := d.(driver.MultiStatement).Statements(); n != len(sc.Statements) {
		t.Errorf("Statements() = %d, want %d", n, len(sc.Statements))
	}
	s, err := d.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.(*session)
}

// adminExec runs sql on s's connection outside the workload.
func adminExec(t *testing.T, s *session, sql string) {
	t.Helper()
	if _, err := s.dc.(sqldriver.ExecerContext).ExecContext(context.Background(), sql, nil); err != nil {
		t.Fatal(err)
	}
}

// A general log line's command and argument, prepares included.
var scriptLogLine = regexp.MustCompile(`^(?:\d{6} [ \d]\d:\d\d:\d\d)?\s+\d+ (Prepare|Execute|Query)\t(.*)$`)

// TestScriptReachesServer: MariaDB's general log shows a script's
// statements as written: prepared mode as one Prepare per statement and
// connection, then an Execute per pass with the values in place; simple
// mode as Query with the values in the text. The values stay within their
// bounds and carry from line to line.
func TestScriptReachesServer(t *testing.T) {
	srv := server(t)
	log, ok := srv.(statementLog)
	if !ok {
		t.Fatal("the lab MariaDB has no statement log")
	}
	ctx := context.Background()
	if err := log.LogStatements(ctx, true); err != nil {
		t.Fatal(err)
	}
	defer log.LogStatements(ctx, false)
	const src = `# a script
\set a random(1, 10)
\set b :a * 2
BEGIN;
SELECT c FROM sbtest1
  WHERE id = :a;
SELECT :a + :b AS s, 'x:y' AS lit, :client_id;
COMMIT;
`
	value := regexp.MustCompile(`^SELECT (\d+) \+ (\d+) AS s, 'x:y' AS lit, (\d+);$`)
	for _, mode := range []string{"prepared", "simple"} {
		t.Run(mode, func(t *testing.T) {
			from := logSize(t, log)
			s := openScript(t, mode, src)
			const passes = 3
			for range passes {
				if err := s.Do(ctx); err != nil {
					t.Fatal(err)
				}
			}
			data, err := os.ReadFile(log.LogFile())
			if err != nil {
				t.Fatal(err)
			}
			var kinds, texts []string
			// A statement spanning lines is logged over those lines.
			text := strings.ReplaceAll(string(data[from:logSize(t, log)]), "\n  WHERE", " WHERE")
			for _, line := range strings.Split(text, "\n") {
				if m := scriptLogLine.FindStringSubmatch(line); m != nil {
					// The server logs a statement without its ';'.
					kinds, texts = append(kinds, m[1]), append(texts, m[2]+";")
				}
			}
			wantKinds := strings.Repeat("Query ", 4*passes)
			if mode == "prepared" {
				wantKinds = strings.Repeat("Prepare Execute ", 4) + strings.Repeat("Execute ", 4*(passes-1))
			}
			if got := strings.Join(kinds, " ") + " "; got != wantKinds {
				t.Fatalf("the server logged %s\nwant %s\n%q", got, wantKinds, texts)
			}
			var executed []string
			for i, k := range kinds {
				if k != "Prepare" {
					executed = append(executed, texts[i])
				} else if want := []string{"BEGIN;", "SELECT c FROM sbtest1 WHERE id = ?;", "SELECT ? + ? AS s, 'x:y' AS lit, ?;", "COMMIT;"}[i/2]; texts[i] != want {
					t.Errorf("prepared %q, want %q", texts[i], want)
				}
			}
			for p := range passes {
				op := executed[4*p : 4*p+4]
				m := value.FindStringSubmatch(op[2])
				if op[0] != "BEGIN;" || op[3] != "COMMIT;" || m == nil || op[1] != "SELECT c FROM sbtest1 WHERE id = "+m[1]+";" {
					t.Fatalf("pass %d: %q", p, op)
				}
				a, _ := strconv.Atoi(m[1])
				b, _ := strconv.Atoi(m[2])
				if a < 1 || a > 10 || b != 2*a || m[3] != "0" {
					t.Errorf("pass %d: a = %d, b = %d, client_id = %s: want a in [1, 10], b = 2a, client_id 0", p, a, b, m[3])
				}
			}
		})
	}
}

// TestScriptBounds: the random functions' values, inserted by a script and
// read back by the server, stay within their bounds; random() reaches both
// ends. A failing statement names the file and line.
func TestScriptBounds(t *testing.T) {
	const src = `\set u random(-3, 3)
\set e random_exponential(1, 5, 2.5)
\set g random_gaussian(10, 20, 2.5)
\set z random_zipfian(100, 105, 1.5)
INSERT INTO script_bounds VALUES (:u, :e, :g, :z);
`
	for _, mode := range []string{"prepared", "simple"} {
		t.Run(mode, func(t *testing.T) {
			s := openScript(t, mode, src)
			adminExec(t, s, "DROP TABLE IF EXISTS script_bounds")
			adminExec(t, s, "CREATE TABLE script_bounds (u int, e int, g int, z int)")
			defer adminExec(t, s, "DROP TABLE script_bounds")
			for range 300 {
				if err := s.Do(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			rows, err := s.dc.(sqldriver.QueryerContext).QueryContext(context.Background(),
				"SELECT CONCAT_WS(' ', count(*), min(u), max(u), min(e), max(e), min(g), max(g), min(z), max(z)) FROM script_bounds", nil)
			if err != nil {
				t.Fatal(err)
			}
			var got string
			eachRow(rows, func(r []sqldriver.Value) { got = asString(r[0]) })
			rows.Close()
			var n, umin, umax, emin, emax, gmin, gmax, zmin, zmax int
			for i, f := range strings.Fields(got) {
				v, _ := strconv.Atoi(f)
				*[]*int{&n, &umin, &umax, &emin, &emax, &gmin, &gmax, &zmin, &zmax}[i] = v
			}
			if n != 300 || umin != -3 || umax != 3 || emin < 1 || emax > 5 || gmin < 10 || gmax > 20 || zmin != 100 || zmax > 105 {
				t.Errorf("read back %q: want 300 rows, u exactly [-3, 3], e in [1, 5], g in [10, 20], z from 100 in [100, 105]", got)
			}
		})
	}
	s := openScript(t, "prepared", "SELECT 1;\nSELECT * FROM no_such_table;\n")
	if err := s.Do(context.Background()); err == nil || !strings.Contains(err.Error(), "query: bench.sql:2: Error 1146") {
		t.Errorf("a missing table: %v", err)
	}
}
