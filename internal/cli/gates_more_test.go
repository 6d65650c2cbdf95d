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
}
