package mysqldrv

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
)

// statementLog is what the lab MariaDB offers tests: its general log.
type statementLog interface {
	LogStatements(ctx context.Context, on bool) error
	LogFile() string
}

// TestReadOnlyIsSysbench runs real sysbench 1.0.20's oltp_read_only for one
// event and one tlsbench read-only operation, with the server's general log
// on, and compares the statements each sent: numbers aside, they must be
// the same, in the same order, and in prepared mode also the same
// commands (Execute for prepared statements, Query for text).
func TestReadOnlyIsSysbench(t *testing.T) {
	srv := server(t)
	sysbench, err := exec.LookPath("sysbench")
	if err != nil {
		if os.Getenv("CI") != "true" {
			t.Skip("sysbench is not installed")
		}
		t.Fatal("sysbench is not installed (apt-get install sysbench)")
	}
	if out, err := exec.Command(sysbench, "--version").Output(); err != nil || !strings.Contains(string(out), "1.0.20") {
		t.Logf("sysbench --version: %s", strings.TrimSpace(string(out)))
	}
	log, ok := srv.(statementLog)
	if !ok {
		t.Fatal("the lab MariaDB has no statement log")
	}
	ctx := context.Background()
	if err := log.LogStatements(ctx, true); err != nil {
		t.Fatal(err)
	}
	defer log.LogStatements(ctx, false)

	raw, err := srv.URL("", false)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(raw)
	password, _ := u.User.Password()
	start := logSize(t, log)
	cmd := exec.Command(sysbench, "oltp_read_only",
		"--mysql-host=127.0.0.1", "--mysql-port="+u.Port(), "--mysql-user="+u.User.Username(),
		"--mysql-password="+password, "--mysql-db=bench",
		fmt.Sprintf("--tables=%d", testTables), fmt.Sprintf("--table-size=%d", testRows),
		"--events=1", "--threads=1", "run")
	cmd.Dir = t.TempDir()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sysbench: %v\n%s", err, out)
	}
	sysbenchEnd := logSize(t, log)

	for _, mode := range []string{"prepared", "simple"} {
		from := logSize(t, log)
		d, err := driver.New("mysql", config(t, srv, "off", "", "read-only", mode))
		if err != nil {
			t.Fatal(err)
		}
		s, err := d.Open(ctx)
		if err != nil {
			t.Fatal(err)
		}
		err = s.Do(ctx)
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		to := logSize(t, log)
		ours := statements(t, log, from, to)
		if n := len(pointSelectTables(rawStatements(t, log, from, to))); n != 1 {
			t.Errorf("%s: the point selects read %d tables", mode, n)
		}
		theirs := statements(t, log, start, sysbenchEnd)
		if mode == "simple" {
			// The text protocol sends the same statements as Query.
			for i := range theirs {
				theirs[i] = strings.Replace(theirs[i], "Execute\t", "Query\t", 1)
			}
		}
		if !slices.Equal(ours, theirs) {
			t.Errorf("%s: tlsbench sent\n  %s\nsysbench sent\n  %s", mode, strings.Join(ours, "\n  "), strings.Join(theirs, "\n  "))
		}
		if len(ours) != 16 {
			t.Errorf("%s: %d statements, want 16", mode, len(ours))
		}
	}
	if n := len(pointSelectTables(rawStatements(t, log, start, sysbenchEnd))); n != 1 {
		t.Errorf("sysbench's point selects read %d tables", n)
	}
}

// pointSelectTables are the tables the point selects of a transaction
// read: one, as in oltp_read_only's execute_point_selects.
func pointSelectTables(stmts []string) map[string]bool {
	tables := map[string]bool{}
	for _, s := range stmts {
		if m := pointSelectTable.FindStringSubmatch(s); m != nil {
			tables[m[1]] = true
		}
	}
	return tables
}

var pointSelectTable = regexp.MustCompile(`\tSELECT c FROM sbtest(\d+) WHERE id=\d+$`)

// logSize waits until the general log has settled (it is written as the
// server runs statements) and returns its size.
func logSize(t *testing.T, log statementLog) int64 {
	t.Helper()
	var last int64 = -1
	for {
		fi, err := os.Stat(log.LogFile())
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() == last {
			return last
		}
		last = fi.Size()
		time.Sleep(20 * time.Millisecond)
	}
}

// A general log line: [time] thread-id command TAB argument.
var logLine = regexp.MustCompile(`^(?:\d{6} [ \d]\d:\d\d:\d\d)?\s+\d+ (Execute|Query)\t(.*)$`)

// normalize replaces numbers (ids, table numbers) so that two runs with
// different random values compare.
var number = regexp.MustCompile(`\d+`)

// statements reads the executed statements between two offsets of the
// general log, normalized: prepares, connects and quits are left out, as
// sysbench prepares every statement of every table at start.
func statements(t *testing.T, log statementLog, from, to int64) []string {
	t.Helper()
	var out []string
	for _, s := range rawStatements(t, log, from, to) {
		out = append(out, number.ReplaceAllString(s, "N"))
	}
	return out
}

// rawStatements reads the executed statements between two offsets of the
// general log, as COMMAND TAB STATEMENT.
func rawStatements(t *testing.T, log statementLog, from, to int64) []string {
	t.Helper()
	data, err := os.ReadFile(log.LogFile())
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(data)) < to {
		t.Fatal(errors.New("the general log shrank"))
	}
	var out []string
	for _, line := range strings.Split(string(data[from:to]), "\n") {
		m := logLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		out = append(out, m[1]+"\t"+m[2])
	}
	return out
}
