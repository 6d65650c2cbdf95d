package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/lab/labtest"
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
// data (a script reads the user's tables); on the shared lab MariaDB, a
// mix of two scripts. The result records each script whole with its
// checksum, and counts the statements of a pass; a statement the server
// rejects is one line with the file and line.
func TestScriptRuns(t *testing.T) {
	t.Run("postgres URL", func(t *testing.T) {
		srv, url := sharedLab(t, "postgres") // clients from 127.0.0.1 only, as Debian ships it
		text := "\\set id random(1, 1000)\nSELECT :id::int + 1;\nSELECT :client_id::int;\n"
		sc := writeScript(t, "bench.sql", text)
		out := filepath.Join(t.TempDir(), "r.json")
		code, _, stderr := runMain(t, "pool", url, "--script", sc, "--query-mode", "simple", "--tls", "off,1.3", "--ca", srv.CAFile(), "-n", "50", "--warmup", "0s", "--trials", "1", "-o", out)
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
		// The shared MariaDB: the scripts read its data, and what they
		// test does not depend on a server of their own.
		srv, url := sharedLab(t, "mariadb")
		a := writeScript(t, "a.sql", "\\set id random(1, :rows)\nSELECT c FROM sbtest1 WHERE id = :id;\n")
		b := writeScript(t, "b.sql", "\\set id random(1, :rows)\nBEGIN;\nSELECT k FROM sbtest1 WHERE id = :id;\nCOMMIT;\n")
		out := filepath.Join(t.TempDir(), "r.json")
		code, _, stderr := runMain(t, "pool", url, "--tls", "off,1.3", "--ca", srv.CAFile(), "--script", a+"@1", "--script", b+"@1",
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

// TestScriptLongParseSignal: SIGINT and SIGTERM stop tlsbench while it
// reads a long script (15 MB of \set sums, which took hours before the
// parser was linear, with the signals held until the end): exit 130
// within a few seconds, before any connection is made.
func TestScriptLongParseSignal(t *testing.T) {
	labtest.Slow(t)
	line := "\\set x 1" + strings.Repeat("+1", 249_000) + "\n" // within the 250,000-term bound
	big := writeScript(t, "big.sql", strings.Repeat(line, 30)+"SELECT :x;\n")
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "pool", "postgres://u@127.0.0.1:1/db", "--tls", "off", "--script", big, "-o", filepath.Join(t.TempDir(), "r.json"))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(700 * time.Millisecond) // started, reading the script
			sent := time.Now()
			cmd.Process.Signal(sig)
			cmd.Wait()
			took := time.Since(sent)
			if code := cmd.ProcessState.ExitCode(); code != exitInterrupted || took > 5*time.Second || strings.TrimSpace(stderr.String()) != "tlsbench: interrupted" {
				t.Errorf("exit %d after %v, stderr %q; want 130 within 5s and tlsbench: interrupted", code, took, stderr.String())
			}
		})
	}
}

// TestScriptWarmupFailures: a script whose passes fail now and then (a
// division by zero in 1 pass of 5) runs with --max-error-rate 100%: the
// warm-up's failures no longer stop the workers (which failed the run as
// "every operation failed", nothing saved); the trial counts its own
// failures, by kind, and only those.
func TestScriptWarmupFailures(t *testing.T) {
	_, url := sharedLab(t, "postgres")
	sc := writeScript(t, "div.sql", "\\set x random(1, 5)\nSELECT 1 / (:x - 1);\n")
	out := filepath.Join(t.TempDir(), "r.json")
	code, _, stderr := runMain(t, "pool", url, "--tls", "off", "--script", sc, "-c", "1", "-d", "1s", "--warmup", "1s",
		"--max-error-rate", "100%", "--trials", "1", "--tables", "1", "--rows", "10", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Trials) != 1 {
		t.Fatalf("%d trials, want 1", len(r.Trials))
	}
	tr := r.Trials[0]
	failed := tr.Errors["query: other"]
	// 1 in 5 fail: the trial's share, well away from both 0 and the whole.
	if share := float64(failed) / float64(failed+tr.Ops); len(tr.Errors) != 1 || failed == 0 || share > 0.4 ||
		!strings.Contains(tr.ErrorSamples["query: other"], sc+":2: ERROR: division by zero") {
		t.Errorf("%d operations, errors %v (%v); want about 1 in 5 failed by division by zero", tr.Ops, tr.Errors, tr.ErrorSamples)
	}
}

// TestScriptSleepBounds: a \sleep ends within the run's bounds. Fixed
// sleeps longer than --timeout are refused before any server starts; a
// sleep of hours (\sleep 99999 s used to hang the run until interrupted)
// with a --timeout above it ends with the trial (-d 2s), and the run says
// no operation finished; a sleep a variable makes longer than --timeout
// fails its pass at the timeout, counted by its own kind.
func TestScriptSleepBounds(t *testing.T) {
	long := writeScript(t, "long.sql", "SELECT 1;\n\\sleep 99999 s\nSELECT 2;\n")
	code, _, stderr := runMain(t, "pool", "--lab", "postgres", "--script", long)
	if lines := errorLines(stderr); code != exitUsage || len(lines) != 1 ||
		lines[0] != "tlsbench: "+long+":2: \\sleep: the script's fixed sleeps take 27h46m39s in every pass, longer than the timeout of 10s that bounds a pass: shorten the sleeps, or give a longer --timeout" {
		t.Errorf("fixed sleep past --timeout: exit %d, %q", code, lines)
	}

	_, target := sharedLab(t, "postgres")
	t.Run("-d", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		// A sleep of 20 h within --timeout's bound of 24 h.
		hours := writeScript(t, "hours.sql", "SELECT 1;\n\\sleep 72000 s\nSELECT 2;\n")
		// A process of its own: the password in a passfile, not on its
		// command line.
		u, _ := url.Parse(target)
		cmd := exec.CommandContext(ctx, os.Args[0], "pool", passfileURL(t, target, "*:*:*:*:%s\n")(u.Host), "--tls", "off", "--script", hours, "--timeout", "24h", "-d", "2s",
			"--trials", "1", "--tables", "1", "--rows", "10", "-o", filepath.Join(t.TempDir(), "r.json"))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		cmd.Run()
		took := time.Since(start)
		// The check (its sleep ends after -d), 1s of warm-up and 2s of
		// trial.
		lines := errorLines(stderr.String())
		if code := cmd.ProcessState.ExitCode(); code != exitFailed || took > time.Minute || len(lines) != 1 ||
			!strings.HasSuffix(lines[0], "no operation finished within the trial: give a longer -d/--duration or a larger -n/--count") {
			t.Errorf("exit %d after %v: %q", code, took, lines)
		}
	})
	t.Run("--timeout", func(t *testing.T) {
		// Each session sleeps :client_id seconds: the first none, the
		// others (and every reopened one) past the 500ms timeout.
		sc := writeScript(t, "var.sql", "\\set s :client_id * 1000\n\\sleep :s ms\nSELECT 1;\n")
		out := filepath.Join(t.TempDir(), "r.json")
		start := time.Now()
		code, _, stderr := runMain(t, "pool", target, "--tls", "off", "--script", sc, "-c", "2", "--timeout", "500ms", "-d", "2s",
			"--max-error-rate", "100%", "--trials", "1", "--tables", "1", "--rows", "10", "-o", out)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		r, err := result.Read(out)
		if err != nil {
			t.Fatal(err)
		}
		tr := r.Trials[0]
		kind := "query: sleep past timeout"
		if n := tr.Errors[kind]; len(tr.Errors) != 1 || n < 1 || n > 10 || tr.Ops == 0 ||
			!strings.HasSuffix(tr.ErrorSamples[kind], sc+":2: \\sleep: the pass would run past its timeout (500ms): shorten the sleep or give a longer --timeout") {
			t.Errorf("%d operations, errors %v (%v); want some of kind %q", tr.Ops, tr.Errors, tr.ErrorSamples, kind)
		}
		if took := time.Since(start); took > time.Minute {
			t.Errorf("the run took %v", took)
		}
	})
}
