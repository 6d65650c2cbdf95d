package cli

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// TestProgressLines feeds the lines shown off a terminal a run's progress
// on a stand-in clock: a line as the fill begins, every fillEvery while it
// goes and as it ends, one per stage, and one as each trial begins and
// ends.
func TestProgressLines(t *testing.T) {
	var b bytes.Buffer
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := start
	p := &runProgress{w: &b, lines: &progressLines{w: &b, unit: "rows", now: func() time.Time { return now }, start: start}}
	at := func(s float64) { now = start.Add(time.Duration(s * float64(time.Second))) }
	for _, step := range []struct {
		at float64
		ev bench.Progress
	}{
		{1, bench.Progress{Stage: bench.StagePrepare, Done: 0, Total: -1}},
		{2, bench.Progress{Stage: bench.StagePrepare, Done: 1000, Total: 100000}},
		{11.5, bench.Progress{Stage: bench.StagePrepare, Done: 50000, Total: 100000}},
		{12, bench.Progress{Stage: bench.StagePrepare, Done: 60000, Total: 100000}},
		{21, bench.Progress{Stage: bench.StagePrepare, Done: 100000, Total: 100000}},
		{21, bench.Progress{Stage: bench.StageCheck, Total: 2}},
		{22, bench.Progress{Stage: bench.StageTrials, Total: 2}},
		{22, bench.Progress{Stage: bench.StageTrials, Total: 2, Next: "connect plain c=4"}},
		{23, bench.Progress{Stage: bench.StageTrials, Done: 1, Total: 2, Trial: &result.Trial{Ops: 1500, Elapsed: time.Second}}},
		{23, bench.Progress{Stage: bench.StageTrials, Done: 1, Total: 2, Next: "connect tls1.3 c=4"}},
		{24, bench.Progress{Stage: bench.StageTrials, Done: 2, Total: 2, Trial: &result.Trial{Ops: 90, Elapsed: time.Second, Errors: map[string]int64{"tls": 2, "auth": 1}}}},
	} {
		at(step.at)
		p.update(step.ev)
	}
	p.finish()
	// A fill cut short (interrupted, failed) says so.
	at(30)
	p.update(bench.Progress{Stage: bench.StagePrepare, Done: 0, Total: -1})
	at(32)
	p.update(bench.Progress{Stage: bench.StagePrepare, Done: 500, Total: 1000})
	p.finish()
	want := `[   1.0s] filling the server with the workload's data
[  11.5s] filling: 50000 of 100000 rows (50%), 4762 rows/s
[  21.0s] filled: 100000 rows in 20.0 s, 5000 rows/s
[  21.0s] checking the variants (2): one connection each
[  22.0s] trials: 2 planned, the variants interleaved
[  22.0s] trial 1/2 begins: connect plain c=4
[  23.0s] trial 1/2 ended: connect plain c=4: 1500 ops in 1.00 s, 1500/s
[  23.0s] trial 2/2 begins: connect tls1.3 c=4
[  24.0s] trial 2/2 ended: connect tls1.3 c=4: 90 ops in 1.00 s, 90/s, 3 failed
[  30.0s] filling the server with the workload's data
[  32.0s] filling stopped: 500 of 1000 rows in 2.0 s, 250 rows/s
`
	if got := b.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// TestProgressCheckStacks: the check's line says what the check does:
// one connection a variant, and for the variants of client stacks the
// pool of one each holds while the server is asked about it.
func TestProgressCheckStacks(t *testing.T) {
	for _, tc := range []struct {
		stacks int64
		want   string
	}{
		{0, "checking the variants (3): one connection each\n"},
		{2, "checking the variants (3): one connection each; then each client stack (2) holds a pool of one open for 1s while the server is asked what it saw, where it can say\n"},
	} {
		var b bytes.Buffer
		now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		l := &progressLines{w: &b, now: func() time.Time { return now }, start: now}
		l.update(bench.Progress{Stage: bench.StageCheck, Total: 3, Stacks: tc.stacks})
		if got := strings.TrimPrefix(b.String(), "[   0.0s] "); got != tc.want {
			t.Errorf("%d stacks: %q, want %q", tc.stacks, got, tc.want)
		}
	}
}

// TestProgressOffTerminal runs against the built-in server with stderr
// not a terminal: stderr shows a line per phase (the server started, the
// check, each trial's begin and end), in order, and with -q none of them,
// while the lines naming the result stay.
func TestProgressOffTerminal(t *testing.T) {
	labtest.Slow(t)
	args := []string{"connect", "builtin", "--tls", "off,1.3", "--key", "ecdsa-p256", "-n", "20", "--trials", "2"}
	code, _, stderr := runMain(t, append(args, "-o", filepath.Join(t.TempDir(), "r.json"))...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got []string
	for _, l := range strings.Split(stderr, "\n") {
		if m := regexp.MustCompile(`^\[ *[0-9]+\.[0-9]s\] (.*)$`).FindStringSubmatch(l); m != nil {
			got = append(got, m[1])
		}
	}
	want := []string{
		`starting the built-in server \(keys ecdsa-p256\)`,
		`started in [0-9.]+ s: .+`,
		`checking the variants \(2\): one connection each`,
		`signing ceilings of the server keys, where they apply \(connect on servers tlsbench starts\)`,
		`trials: 4 planned, the variants interleaved`,
		`trial 1/4 begins: connect plain c=1`,
		`trial 1/4 ended: connect plain c=1: 20 ops in [0-9.]+ s, [0-9.]+/s`,
		`trial 2/4 begins: connect tls1.3 ecdsa-p256 c=1`,
		`trial 2/4 ended: connect tls1.3 ecdsa-p256 c=1: 20 ops in .*`,
		`trial 3/4 begins: connect plain c=1`,
		`trial 3/4 ended: .*`,
		`trial 4/4 begins: connect tls1.3 ecdsa-p256 c=1`,
		`trial 4/4 ended: .*`,
	}
	if len(got) != len(want) {
		t.Fatalf("progress lines:\n%s\nwant %d", strings.Join(got, "\n"), len(want))
	}
	for i, w := range want {
		if !regexp.MustCompile("^" + w + "$").MatchString(got[i]) {
			t.Errorf("line %d: %q, want %q", i+1, got[i], w)
		}
	}
	code, _, stderr = runMain(t, append(args, "-q", "-o", filepath.Join(t.TempDir(), "r.json"))...)
	if code != 0 || strings.Contains(stderr, progressPrefix) || !strings.Contains(stderr, "result: ") {
		t.Errorf("-q: exit %d, stderr:\n%s\nwant no progress line, the result named", code, stderr)
	}
}

// TestStartsWhat: the first progress line names the servers a run starts.
func TestStartsWhat(t *testing.T) {
	for _, tt := range []struct {
		spec plan.Spec
		want string
	}{
		{plan.Spec{Target: "builtin", Keys: []string{"rsa2048"}}, "the built-in server (keys rsa2048)"},
		{plan.Spec{Lab: "postgres", Keys: []string{"ecdsa-p256"}}, "the lab postgres server (keys ecdsa-p256)"},
		{plan.Spec{Lab: "postgres:15,postgres:18", Keys: []string{"ecdsa-p256"}}, "the lab postgres:15 and postgres:18 servers (keys ecdsa-p256)"},
		{plan.Spec{Lab: "mariadb", Keys: []string{"rsa2048"}, TLS: []string{"off"}, Via: []string{"direct", "ssh"}}, "the lab mariadb server (keys rsa2048) and the ssh path"},
		{plan.Spec{Target: "postgres://u@127.0.0.1/db"}, ""},
	} {
		spec, err := plan.New(tt.spec)
		if err != nil {
			t.Fatal(err)
		}
		if got := startsWhat(spec); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.spec, got, tt.want)
		}
	}
}
