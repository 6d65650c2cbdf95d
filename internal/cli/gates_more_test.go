package cli

import (
	"context"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/result"
)

// TestGateUsageReplicateAdvise: replicate's and advise's gates are
// checked before anything runs (no cluster starts, no capture is read),
// exit 2 with one line naming what exists.
func TestGateUsageReplicateAdvise(t *testing.T) {
	dir := t.TempDir()
	capture := filepath.Join(dir, "none.pcap") // never read: the gates are refused first
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"replicate", "--gate", "replicate[tls1.4].lag.p99 < 1s"}, `no variant "tls1.4": the run's variants are [plain async], [tls1.3 async] (or [*])`},
		{[]string{"replicate", "--gate", "replicate[*].p99 < 1ms"}, `unknown quantity "p99" for replicate: use one of writes_per_s, commit.p50`},
		{[]string{"replicate", "--gate", "replicate[*].lag.p99 < 1s @ci95", "--trials", "1"}, "@ci95 needs an interval, which needs at least 2 trials"},
		{[]string{"replicate", "--gate", "replicate[*].resync.mb_per_s > 1"}, "give --resync"},
		{[]string{"replicate", "--gate", "connect[*].p99 < 1ms"}, "the run has no connect experiment (it runs replicate)"},
		{[]string{"replicate", "--junit", filepath.Join(dir, "j.xml")}, "--junit: there are no gates to report"},
		{[]string{"advise", capture, "--gate", "advise[tls13].saved.setup > 1ms"}, `no change "tls13": advise's changes are [tls1.3], [ecdsa-p256]`},
		{[]string{"advise", capture, "--gate", "advise[tls1.3].measured.setup > 1ms"}, "give --confirm"},
		{[]string{"advise", capture, "--gate", "advise[tls1.3].overhead.saved.setup < 10%"}, "drop overhead."},
		{[]string{"advise", capture, "--gate", "advise[tls1.3].error_pct.setup < 10 @ci95", "--confirm"}, "has no interval"},
		{[]string{"advise", capture, "--gate", "advise[tls1.3].saved.setup > 1ms", "--gate-abort"}, "--gate-abort stops the lab replay, which only --confirm runs"},
		{[]string{"replicate", "--gate-abort"}, "--gate-abort: there are no gates to stop at"},
	} {
		code, stdout, stderr := runMain(t, append(tc.args, "-o", filepath.Join(dir, "r.json"))...)
		lines := errorLines(stderr)
		if code != exitUsage || len(lines) != 1 || !strings.Contains(lines[0], tc.want) || stdout != "" {
			t.Errorf("%v: exit %d, %q; want 2 and one line with %q", tc.args, code, lines, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "r.json")); err == nil {
		t.Error("a run refused for its gates wrote a result")
	}
}

// junitCases reads a JUnit report: its test cases' names and failures.
func junitCases(t *testing.T, path string) (names []string, failed []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc xsdSuites
	if err := xml.Unmarshal(data, &doc); err != nil || len(doc.Suites) != 1 {
		t.Fatalf("JUnit: %v\n%s", err, data)
	}
	for _, c := range doc.Suites[0].Cases {
		names = append(names, c.Name)
		if len(c.Failure) > 0 {
			failed = append(failed, c.Name)
		}
	}
	return names, failed
}

// TestReplicateGates runs a lab PostgreSQL primary and replica, plain
// and TLS 1.3 links, with gates on the replication's own figures: the
// ones any link meets pass, the paired overhead is judged at its
// interval's far end, a bound no write can meet (a microsecond of the
// primary's CPU per write) fails; the run exits 3 with its verdicts in
// the result, the text report and the JUnit XML.
func TestReplicateGates(t *testing.T) {
	needServer(t, labBinaries["postgres"])
	besideOthers(t)
	dir := t.TempDir()
	out, junit := filepath.Join(dir, "r.json"), filepath.Join(dir, "j.xml")
	code, stdout, stderr := runProcess(t, "replicate", "--tls", "off,1.3", "-c", "2", "-d", "1s", "--warmup", "100ms", "--trials", "2", "-q", "-o", out, "--junit", junit,
		"--gate", "replicate[tls1.3].lag.p99 < 10s",
		"--gate", "replicate[*].writes_per_s > 0",
		"--gate", "replicate[tls1.3].overhead.commit.p99 < 100000% @ci95",
		"--gate", "replicate[*].error_rate == 0",
		"--gate", "replicate[tls1.3].primary_cpu_per_write < 1us")
	if code != exitGate {
		t.Fatalf("exit %d, want %d: %s", code, exitGate, stderr)
	}
	if lines := errorLines(stderr); len(lines) != 1 || lines[0] != "tlsbench: 1 of 5 gates failed: replicate[tls1.3].primary_cpu_per_write < 1us (see the gates table)" {
		t.Errorf("stderr %q", lines)
	}
	r, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Trials) != 4 || len(r.Gates) != 5 {
		t.Fatalf("%d trials, %d verdicts: want 4 and 5: %+v", len(r.Trials), len(r.Gates), r.Gates)
	}
	for i, v := range r.Gates {
		cells := []int{1, 2, 1, 2, 1}[i]
		if v.Pass != (i < 4) || v.Why != "" || v.Cells != cells {
			t.Errorf("%s: %+v, want pass %v on %d cells", v.Expr, v, i < 4, cells)
		}
	}
	if v := r.Gates[2]; v.High <= v.Mean || v.Value != v.High || v.Unit != "%" {
		t.Errorf("@ci95 judges the overhead's upper end: %+v", v)
	}
	if v := r.Gates[4]; v.Cell != "replicate tls1.3 async c=2" || v.Mean <= 1 || v.Unit != "us" {
		t.Errorf("the CPU gate: %+v, want a failure at tls1.3 async with over 1 µs per write", v)
	}
	for _, want := range []string{"gates (--gate)", "replicate[tls1.3].primary_cpu_per_write < 1us", "FAIL", "1 of 5 gates failed"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the text report lacks %q:\n%s", want, stdout)
		}
	}
	if names, failed := junitCases(t, junit); len(names) != 5 || len(failed) != 1 || failed[0] != "replicate[tls1.3].primary_cpu_per_write < 1us" {
		t.Errorf("JUnit: cases %q, failed %q", names, failed)
	}
}

// TestReplicateGateAbort: with --gate-abort a replicate run stops after
// the first trial on which a gate can no longer pass (no link writes
// under one write a second), keeps that trial in its result, says which
// gate stopped it after which trial, and exits 3.
func TestReplicateGateAbort(t *testing.T) {
	needServer(t, labBinaries["postgres"])
	dir := t.TempDir()
	out, junit := filepath.Join(dir, "r.json"), filepath.Join(dir, "j.xml")
	code, stdout, stderr := runMain(t, "replicate", "--tls", "off,1.3", "-c", "1", "-d", "1s", "--warmup", "100ms", "--trials", "3", "-q", "-o", out, "--junit", junit,
		"--gate", "replicate[*].writes_per_s < 1", "--gate-abort")
	if code != exitGate {
		t.Fatalf("exit %d, want %d: %s", code, exitGate, stderr)
	}
	const after = "after trial 1 of 6 (replicate plain async c=1, round 1)"
	if lines := errorLines(stderr); len(lines) != 1 || lines[0] != "tlsbench: 1 of 1 gate failed: replicate[*].writes_per_s < 1 (see the gates table); --gate-abort stopped the run "+after {
		t.Errorf("stderr %q", lines)
	}
	r, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Trials) != 1 || r.Trials[0].Variant != "plain async" || r.PlannedTrials != 6 || r.Interrupted || r.Error != "" {
		t.Fatalf("%d of %d trials (%+v), interrupted %v, error %q: want the first of 6 kept, a run that ended early", len(r.Trials), r.PlannedTrials, r.Trials, r.Interrupted, r.Error)
	}
	if len(r.Gates) != 1 || r.Gates[0].Pass || r.Gates[0].Cell != "replicate plain async c=1" || r.Gates[0].Mean < 1 {
		t.Errorf("verdicts %+v, want the gate failed on plain async's writes", r.Gates)
	}
	if notes := strings.Join(r.Notes, "\n"); !strings.Contains(notes, "stopped by --gate-abort "+after+": replicate[*].writes_per_s < 1 can no longer pass (replicate plain async c=1: measured ") {
		t.Errorf("no note says which gate stopped the run after which trial: %q", r.Notes)
	}
	if !strings.Contains(stdout, "stopped by --gate-abort "+after) || !strings.Contains(stdout, "1 of 1 gate failed") {
		t.Errorf("the text report does not say where the run stopped:\n%s", stdout)
	}
	if _, failed := junitCases(t, junit); len(failed) != 1 {
		t.Errorf("JUnit: failed %q, want the gate", failed)
	}
}

// TestAdviseGates gates the advice on a capture of curl's TLS 1.2
// connections to the built-in server: TLS 1.3 saves exactly 1 round trip
// per connection and pooling 3, so a gate asking resumption for more than
// 1 fails; advise exits 3 with the verdicts in the result, the report and
// the JUnit XML; the stored advice is judged again by advise RESULT.json.
func TestAdviseGates(t *testing.T) {
	needServer(t, "curl")
	srv := startServer(t, lab.BuiltinOptions{Keys: []string{"rsa2048"}, ResponseSize: 16, MaxTLS: "1.2"})
	p := port(srv.Endpoint("rsa2048"))[1:]
	n, _ := strconv.Atoi(p)
	args := []string{"-s", "--no-sessionid", "-o", "/dev/null", "--cacert", srv.CAFile(), "-H", "Connection: close"}
	for range 4 {
		args = append(args, "https://127.0.0.1:"+p+"/")
	}
	file := captureWhile(t, n, func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "curl", args...).CombinedOutput(); err != nil {
			t.Fatalf("curl: %v: %s", err, out)
		}
	})
	dir := t.TempDir()
	out, junit, summary := filepath.Join(dir, "advice.json"), filepath.Join(dir, "j.xml"), filepath.Join(dir, "s.md")
	code, stdout, stderr := runMain(t, "advise", file, "-o", out, "--junit", junit, "--summary-md", summary,
		"--gate", "advise[tls1.3].saved.round_trips == 1",
		"--gate", "advise[pooling].saved.round_trips >= 3",
		"--gate", "advise[resumption].saved.round_trips > 1")
	if code != exitGate {
		t.Fatalf("exit %d, want %d: %s", code, exitGate, stderr)
	}
	if lines := errorLines(stderr); len(lines) != 1 || lines[0] != "tlsbench: 1 of 3 gates failed: advise[resumption].saved.round_trips > 1 (see the gates table)" {
		t.Errorf("stderr %q", lines)
	}
	r, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	server := r.Advise[0].Profile.Server
	if len(r.Gates) != 3 || !r.Gates[0].Pass || !r.Gates[1].Pass || r.Gates[2].Pass {
		t.Fatalf("verdicts %+v", r.Gates)
	}
	if v := r.Gates[2]; v.Cell != "advise resumption on "+server || v.Mean != 1 || v.Unit != "count" {
		t.Errorf("the resumption gate: %+v, want 1 round trip at %s", v, server)
	}
	for _, want := range []string{"gates (--gate)", "advise[resumption].saved.round_trips > 1", "1 of 3 gates failed"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the text report lacks %q:\n%s", want, stdout)
		}
	}
	if names, failed := junitCases(t, junit); len(names) != 3 || len(failed) != 1 {
		t.Errorf("JUnit: cases %q, failed %q", names, failed)
	}
	if md, _ := os.ReadFile(summary); !strings.Contains(string(md), "2 of 3 gates passed") {
		t.Errorf("the Markdown summary:\n%s", md)
	}
	// The stored advice, judged again: a gate it passes.
	code, again, stderr := runMain(t, "advise", out, "--gate", "advise[tls1.3].saved.round_trips >= 1")
	if code != 0 || !strings.Contains(again, "0 of 1 gate failed") {
		t.Errorf("advise %s --gate: exit %d: %s\n%s", out, code, stderr, again)
	}

	// --confirm --gate-abort: a prediction that fails stops the replay
	// before it starts; the advice is saved as predictions.
	out = filepath.Join(dir, "stopped-before.json")
	code, _, stderr = runMain(t, "advise", file, "-o", out, "--confirm", "--trials", "3", "-d", "500ms", "-q", "--gate-abort",
		"--gate", "advise[resumption].saved.round_trips > 1")
	if r, err = result.Read(out); err != nil {
		t.Fatal(err)
	}
	before := "stopped by --gate-abort before the lab replay of " + server + ": advise[resumption].saved.round_trips > 1 can no longer pass"
	if code != exitGate || len(r.Advise[0].Replays) != 1 || !strings.HasPrefix(r.Advise[0].Replays[0].Error, "not replayed: --gate-abort") ||
		!strings.Contains(strings.Join(r.Notes, "\n"), before) {
		t.Errorf("a failed prediction with --gate-abort: exit %d (%s), replays %+v, notes %q; want 3, no replay, %q", code, stderr, r.Advise[0].Replays, r.Notes, before)
	}
	// A measured figure that fails stops the replay at the first trial
	// of the change: TLS 1.3 saves exactly 1 round trip, never more. The
	// trials run are kept, as the measured figures over them.
	out = filepath.Join(dir, "stopped.json")
	code, stdout, stderr = runMain(t, "advise", file, "-o", out, "--confirm", "--trials", "3", "-d", "500ms", "-q", "--gate-abort",
		"--gate", "advise[tls1.3].measured.round_trips > 1")
	if code != exitGate {
		t.Fatalf("--confirm --gate-abort: exit %d, want %d: %s", code, exitGate, stderr)
	}
	if r, err = result.Read(out); err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(r.Notes, "\n")
	rp := r.Advise[0].Replays
	if len(rp) != 1 || rp[0].Error != "" || rp[0].Trials != 1 || !strings.Contains(notes, "stopped by --gate-abort after trial ") ||
		!strings.Contains(notes, " of the lab replay of "+server+" (connect ") || !strings.Contains(notes, "advise[tls1.3].measured.round_trips > 1 can no longer pass (advise tls1.3 on "+server+": measured 1 round trip") {
		t.Errorf("the replay stopped by the gate: replays %+v, notes %q", rp, r.Notes)
	}
	for _, c := range r.Advise[0].Advice {
		if c.Change == "TLS 1.2 → 1.3" && (c.RoundTripsMeasured == nil || *c.RoundTripsMeasured != 1) {
			t.Errorf("TLS 1.3's round trips measured over the trials kept: %v", c.RoundTripsMeasured)
		}
	}
	if len(r.Gates) != 1 || r.Gates[0].Pass || !strings.Contains(stdout, "stopped by --gate-abort after trial") {
		t.Errorf("verdicts %+v; report:\n%s", r.Gates, stdout)
	}
}
