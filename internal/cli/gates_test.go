package cli

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/result"
)

// TestGateUsage: a gate that cannot be judged on the run is exit 2, one
// line naming the problem and the fix, before anything runs (the
// built-in server is not even started: these return at once).
func TestGateUsage(t *testing.T) {
	dir := t.TempDir()
	gates := filepath.Join(dir, "gates.yaml")
	if err := os.WriteFile(gates, []byte("- connect[*].roundtrips.tls-handshake <= 1\n- pool[*].p99 < 2ms\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"connect", "builtin", "--tls", "off,1.3", "--trials", "2", "-o", filepath.Join(dir, "r.json")}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--gate", "connect[tls1.4].overhead.p99 < 40%"}, `no variant "tls1.4": the run's variants are [plain], [tls1.3 rsa2048]`},
		{[]string{"--gate", "connect[tls1.3].overhead.p999 < 40%"}, `unknown quantity "p999"`},
		{[]string{"--gate", "connect[tls1.3].overhead.p99 < 40ms"}, "a change is in percent"},
		{[]string{"--gate", "connect[tls1.3].p99 < 40%"}, `"%" does not fit a time`},
		{[]string{"--gate", "connect[tls1.3].p99 <"}, "not a gate"},
		{[]string{"--gate", "connect[tls1.3].overhead.p99 < 40% @ci95", "--trials", "1"}, "@ci95 needs an interval, which needs at least 2 trials"},
		{[]string{"--gate", "compare: connect[*].p95.delta < 10%"}, "give it to tlsbench compare"},
		{[]string{"--gates", gates}, "the run has no pool experiment"},
		{[]string{"--gates", filepath.Join(dir, "none.yaml")}, "no such file"},
		{[]string{"--junit", filepath.Join(dir, "j.xml")}, "--junit: there are no gates to report"},
		{[]string{"--gate-abort"}, "--gate-abort: there are no gates to stop at"},
		{[]string{"--gate", "connect[*].rate > 1", "--junit", dir}, "--junit:"},
	} {
		code, stdout, stderr := runMain(t, append(base, tc.args...)...)
		lines := errorLines(stderr)
		if code != exitUsage || len(lines) != 1 || !strings.Contains(lines[0], tc.want) || stdout != "" {
			t.Errorf("%v: exit %d, %q; want 2 and one line with %q", tc.args, code, lines, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "r.json")); err == nil {
		t.Error("a run refused for its gates wrote a result")
	}
}

// TestGatesPostgres runs real connections to a lab PostgreSQL 15, which
// accepts P-256 only: Go's default TLS 1.3 offer pays a HelloRetryRequest
// and --group p256 does not. The round-trip gate catches exactly that
// variant, at exactly 2 round trips; the others pass; the run exits 3 and
// the verdicts are in the result, the text report, the JUnit XML and the
// Markdown summary. With --gate-abort the same run stops at the first
// trial that fails the gate and keeps it.
func TestGatesPostgres(t *testing.T) {
	srv, url := sharedLab(t, "postgres")
	dir := t.TempDir()
	out, junit, summary := filepath.Join(dir, "r.json"), filepath.Join(dir, "j.xml"), filepath.Join(dir, "s.md")
	args := []string{"connect", url, "--ca", srv.CAFile(), "--tls", "off,1.3", "--group", "default,p256", "-d", "1s", "--trials", "2",
		"--tables", "1", "--rows", "100", "-q",
		"--gate", "connect[*].roundtrips.tls-handshake <= 1",
		"--gate", "connect[p256].roundtrips.tls-handshake == 1",
		"--gate", "connect[*].error_rate < 1%",
		"--gate", "connect[p256].overhead.mean < 100000% @ci95"}
	code, stdout, stderr := runMain(t, append(args, "-o", out, "--junit", junit, "--summary-md", summary)...)
	if code != exitGate {
		t.Fatalf("exit %d, want %d: %s", code, exitGate, stderr)
	}
	if lines := errorLines(stderr); len(lines) != 1 || lines[0] != "tlsbench: 1 of 4 gates failed: connect[*].roundtrips.tls-handshake <= 1 (see the gates table)" {
		t.Errorf("stderr %q", lines)
	}
	r, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Trials) != 6 || r.Interrupted || r.Error != "" {
		t.Fatalf("%d trials, interrupted %v, error %q: want all 6 of a run that went well", len(r.Trials), r.Interrupted, r.Error)
	}
	if len(r.Gates) != 4 {
		t.Fatalf("%d verdicts, want 4: %+v", len(r.Gates), r.Gates)
	}
	hrr := r.Gates[0]
	if hrr.Pass || hrr.Cell != "connect tls1.3 c=1" || hrr.Value != 2 || hrr.Bound != 1 || hrr.Cells != 2 {
		t.Errorf("the round-trip gate: %+v; want a failure at tls1.3 (Go's default offer) with exactly 2 round trips", hrr)
	}
	for i, v := range r.Gates[1:] {
		if cells := []int{1, 3, 1}[i]; !v.Pass || v.Why != "" || v.Cells != cells {
			t.Errorf("%s: %+v, want a pass on %d cells", v.Expr, v, cells)
		}
	}
	if v := r.Gates[1]; v.Mean != 1 || v.Low != 1 || v.High != 1 {
		t.Errorf("p256's handshake: %+v, want exactly 1 round trip", v)
	}
	// Not the mean's sign: two 1 s trials on a loaded machine measured
	// TLS 9.7% faster than plain once (interval -364% to +344%).
	if v := r.Gates[3]; v.High <= v.Mean || v.Low >= v.Mean || v.Value != v.High {
		t.Errorf("@ci95 compares the interval's upper end: %+v", v)
	}
	for _, want := range []string{"gates (--gate)", "connect[*].roundtrips.tls-handshake <= 1", "FAIL", "2 round trips", "1 of 4 gates failed"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the text report lacks %q:\n%s", want, stdout)
		}
	}
	var doc xsdSuites
	data, err := os.ReadFile(junit)
	if err == nil {
		err = xml.Unmarshal(data, &doc)
	}
	if err != nil || len(doc.Suites) != 1 || len(doc.Suites[0].Cases) != 4 || doc.Suites[0].Failures != "1" {
		t.Fatalf("JUnit: %v\n%s", err, data)
	}
	if c := doc.Suites[0].Cases[0]; len(c.Failure) != 1 || !strings.Contains(c.Failure[0].Message, "measured 2 round trips, bound <= 1") {
		t.Errorf("JUnit failure of the round-trip gate: %+v", c)
	}
	md, _ := os.ReadFile(summary)
	if !strings.Contains(string(md), "3 of 4 gates passed") || !strings.Contains(string(md), "❌ FAIL | connect tls1.3 c=1 | 2 round trips |") {
		t.Errorf("the Markdown summary:\n%s", md)
	}

	// --gate-abort: the gate fails at the first trial of tls1.3, the
	// second of the run (plain's comes first); that trial is kept.
	abortArgs := append(args[:len(args)-8:len(args)-8], "--trials", "3", "--gate", "connect[*].roundtrips.tls-handshake <= 1", "--gate-abort", "-o", out)
	start := time.Now()
	code, _, stderr = runMain(t, abortArgs...)
	if code != exitGate {
		t.Fatalf("--gate-abort: exit %d, want %d: %s", code, exitGate, stderr)
	}
	if r, err = result.Read(out); err != nil {
		t.Fatal(err)
	}
	if len(r.Trials) >= r.PlannedTrials || r.PlannedTrials != 9 || r.Interrupted || len(r.Gates) != 1 || r.Gates[0].Pass {
		t.Errorf("--gate-abort: %d of %d trials, interrupted %v, gates %+v; want fewer than planned, not interrupted, the gate failed", len(r.Trials), r.PlannedTrials, r.Interrupted, r.Gates)
	}
	// One line says which gate stopped it and after which trial: the
	// last kept, the first of tls1.3 with Go's default offer.
	stopped := fmt.Sprintf("stopped by --gate-abort after trial %d of 9 (connect tls1.3", len(r.Trials))
	if notes := strings.Join(r.Notes, "\n"); !strings.Contains(notes, stopped) || !strings.Contains(notes, "connect[*].roundtrips.tls-handshake <= 1 can no longer pass (connect tls1.3") {
		t.Errorf("no note says which gate stopped the run after which trial (%q): %q", stopped, r.Notes)
	}
	if lines := errorLines(stderr); len(lines) != 1 || !strings.Contains(lines[0], fmt.Sprintf("--gate-abort stopped the run after trial %d of 9", len(r.Trials))) {
		t.Errorf("stderr %q", lines)
	}
	t.Logf("--gate-abort: %d of %d trials in %s", len(r.Trials), r.PlannedTrials, time.Since(start).Round(time.Millisecond))
}

// TestCompareGate judges compare's Welch changes on two stored results:
// a run against itself passes (exit 0), against a copy whose server CPU
// per operation is 30% higher fails (exit 3) with the change measured;
// the example with @ci95 fails on itself, where the interval is
// wider than its bound.
func TestCompareGate(t *testing.T) {
	old := filepath.Join("..", "report", "testdata", "measured-pool.json")
	r, err := result.Read(old)
	if err != nil {
		t.Fatal(err)
	}
	for i := range r.Trials {
		r.Trials[i].ServerCPU = r.Trials[i].ServerCPU * 13 / 10
	}
	dir := t.TempDir()
	worse, junit := filepath.Join(dir, "worse.json"), filepath.Join(dir, "j.xml")
	if err := result.Write(worse, r); err != nil {
		t.Fatal(err)
	}
	// Three noisy trials a side give Welch intervals of ±4 to ±82%: the
	// issue's "< +10% @ci95" cannot pass on them, "< +100% @ci95" can.
	gate := "compare: pool[*].server_cpu_per_op.delta < +10%"
	code, stdout, stderr := runMain(t, "compare", old, old, "--gate", gate, "--gate", "compare: pool[*].server_cpu_per_op.delta < +100% @ci95", "--junit", junit)
	if code != exitOK || !strings.Contains(stdout, "0 of 2 gates failed") {
		t.Errorf("a run against itself: exit %d, %s\n%s", code, stderr, stdout)
	}
	code, stdout, stderr = runMain(t, "compare", old, worse, "--gate", gate, "--junit", junit)
	if code != exitGate || !strings.Contains(stdout, "FAIL") || !strings.Contains(stderr, "1 of 1 gate failed") {
		t.Errorf("30%% more server CPU: exit %d, %s\n%s", code, stderr, stdout)
	}
	code, stdout, _ = runMain(t, "compare", old, old, "--gate", "compare: pool[*].server_cpu_per_op.delta < +10% @ci95")
	if code != exitGate || !strings.Contains(stdout, "0%; upper end 15.23% of the 95% Welch interval over two results of at least 3 trials (-15.23 to 15.23%)") {
		t.Errorf("the issue's example on 3 trials against themselves: exit %d\n%s", code, stdout)
	}
	data, _ := os.ReadFile(junit)
	if !strings.Contains(string(data), `measured 30%`) {
		t.Errorf("the JUnit report does not give the change measured (30%%):\n%s", data)
	}
	for _, tc := range []struct{ gate, want string }{
		{"pool[*].server_cpu_per_op < 10ms", "compare judges changes between two results"},
		{"compare: connect[*].rate.delta > -5%", "a result has no connect experiment"},
		{"compare: pool[tls1.2].rate.delta > -5%", `no variant "tls1.2"`},
		{"compare: pool[*].p99.delta > -5%", `unknown quantity "p99" for compare`},
	} {
		code, _, stderr := runMain(t, "compare", old, worse, "--gate", tc.gate)
		if lines := errorLines(stderr); code != exitUsage || len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
			t.Errorf("compare --gate %q: exit %d, %q; want 2 and %q", tc.gate, code, lines, tc.want)
		}
	}
}

// xsdSuites is the structure of Jenkins xunit's junit-10.xsd that the
// gate package's JUnit test checks in full: here, the counts and cases.
type xsdSuites struct {
	XMLName xml.Name `xml:"testsuites"`
	Suites  []struct {
		Failures string `xml:"failures,attr"`
		Cases    []struct {
			Name    string `xml:"name,attr"`
			Failure []struct {
				Message string `xml:"message,attr"`
			} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}
