package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/result"
)

// writeScript writes a script file for a test and returns its path.
func writeScript(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestScriptBadInput: a script's problem is one line naming the file and
// line (or the flag) and the fix, exit 2, before any server starts.
func TestScriptBadInput(t *testing.T) {
	good := writeScript(t, "good.sql", "SELECT 1;\n")
	gset := writeScript(t, "gset.sql", "SELECT 1 AS one\n\\gset\n")
	syntax := writeScript(t, "syntax.sql", "-- ok\n\\set n random(1, 10\nSELECT :n;\n")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"pool", "--lab", "postgres", "--script", gset}, gset + `:2: \gset is not supported by tlsbench: tlsbench discards query results: compute the value with \set instead`},
		{[]string{"pool", "--lab", "postgres", "--script", syntax}, syntax + `:2: syntax error at end of expression: missing ")" after the arguments of random in command "set"`},
		{[]string{"pool", "--lab", "redis", "--script", good}, "--script: pgbench scripts run on PostgreSQL and MySQL/MariaDB targets (a postgres:// or mysql:// URL, --lab postgres or mariadb), not on lab:redis"},
		{[]string{"pool", "--lab", "postgres", "--script", good, "--workload", "read-only"}, "give --workload read-only or --script, not both: a script is the workload"},
		{[]string{"pool", "--lab", "mariadb", "--script", good + "@0"}, "--script: the total weight of the scripts is zero: give at least one a weight above 0"},
		{[]string{"pool", "--lab", "mariadb", "--script", good + "@x"}, `--script: "` + good + `@x": the weight after @ must be a whole number from 0 to 2147483647`},
		{[]string{"pool", "--lab", "postgres", "--script", good + ".missing"}, "--script " + good + ".missing: no such file or directory"},
		{[]string{"stream", "--lab", "postgres", "--script", good}, "the stream experiment reads one large result: leave --script out, or use the pool experiment"},
	} {
		code, _, stderr := runMain(t, tt.args...)
		lines := errorLines(stderr)
		if code != exitUsage || len(lines) != 1 || lines[0] != "tlsbench: "+tt.want {
			t.Errorf("%v: exit %d, %q\nwant exit 2 and tlsbench: %s", tt.args, code, lines, tt.want)
		}
	}
}

// TestScriptRuns runs scripts end to end through the command line: on a
// PostgreSQL configured as Debian ships it, by URL, without any sbtest
// data (a script reads the user's tables); on the lab MariaDB, a mix of two
// scripts. The result records each script whole with its checksum, and
// counts the statements of a pass; a statement the server rejects is one
// line with the file and line.
func TestScriptRuns(t *testing.T) {
	t.Run("postgres URL", func(t *testing.T) {
		needServer(t, labBinaries["postgres"])
		srv, err := lab.Start(context.Background(), "postgres", lab.Options{Keys: []string{"ecdsa-p256"}, LocalhostOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Stop() })
		url, err := srv.URL(srv.Auths()[0], false)
		if err != nil {
			t.Fatal(err)
		}
		text := "\\set id random(1, 1000)\nSELECT :id::int + 1;\nSELECT :client_id::int;\n"
		sc := writeScript(t, "bench.sql", text)
		out := filepath.Join(t.TempDir(), "r.json")
		code, _, stderr := runMain(t, "pool", url, "--script", sc, "--query-mode", "simple", "--tls", "off,1.3", "--ca", srv.(*lab.Postgres).CAFile(), "-n", "50", "--warmup", "0s", "--trials", "1", "-o", out)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		r, err := result.Read(out)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(text))
		if s := r.Spec.Scripts; len(s) != 1 || s[0].File != sc || s[0].Weight != 1 || s[0].Text != text || s[0].SHA256 != hex.EncodeToString(sum[:]) || r.Spec.Workload != "script" {
			t.Errorf("recorded %+v, workload %q", s, r.Spec.Workload)
		}
		for _, tr := range r.Trials {
			if tr.Ops != 50 || tr.Queries != 100 || len(tr.Errors) > 0 {
				t.Errorf("%s: %d operations, %d queries, errors %v: want 50, 100, none", tr.Variant, tr.Ops, tr.Queries, tr.Errors)
			}
		}

		bad := writeScript(t, "bad.sql", "SELECT 1;\nSELECT * FROM no_such_table;\n")
		code, _, stderr = runMain(t, "pool", url, "--tls", "off", "--script", bad, "-n", "5", "--trials", "1", "-o", filepath.Join(t.TempDir(), "r.json"))
		lines := errorLines(stderr)
		if code != exitFailed || len(lines) != 1 || !strings.Contains(lines[0], bad+`:2: ERROR: relation "no_such_table" does not exist`) {
			t.Errorf("a failing statement: exit %d, %q", code, lines)
		}
	})
	t.Run("mariadb mix", func(t *testing.T) {
		needServer(t, labBinaries["mariadb"])
		a := writeScript(t, "a.sql", "\\set id random(1, :rows)\nSELECT c FROM sbtest1 WHERE id = :id;\n")
		b := writeScript(t, "b.sql", "\\set id random(1, :rows)\nBEGIN;\nSELECT k FROM sbtest1 WHERE id = :id;\nCOMMIT;\n")
		out := filepath.Join(t.TempDir(), "r.json")
		code, _, stderr := runMain(t, "pool", "--lab", "mariadb", "--tls", "off,1.3", "--key", "ecdsa-p256", "--script", a+"@1", "--script", b+"@1",
			"-n", "40", "--warmup", "0s", "--trials", "1", "--tables", "1", "--rows", "100", "-o", out)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		r, err := result.Read(out)
		if err != nil {
			t.Fatal(err)
		}
		if s := r.Spec.Scripts; len(s) != 2 || s[1].File != b || !strings.Contains(s[1].Text, "BEGIN;") || r.Spec.QueryMode != "prepared" {
			t.Errorf("recorded %+v, query mode %q", s, r.Spec.QueryMode)
		}
		for _, tr := range r.Trials {
			// (1 + 3) / 2 statements per pass of the mix.
			if tr.Ops != 40 || tr.Queries != 80 || len(tr.Errors) > 0 {
				t.Errorf("%s: %d operations, %d queries, errors %v: want 40, 80, none", tr.Variant, tr.Ops, tr.Queries, tr.Errors)
			}
		}
	})
}
