package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/result"
)

// TestRate runs connect and pool at arrival rates through the command
// line against the built-in server: each trial records what was offered,
// achieved and dropped and both latencies, the report has the table and,
// for a search, the capacity finding; bad input is one line naming the
// flag and the fix.
func TestRate(t *testing.T) {
	labtest.Slow(t)
	out := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := runMain(t, "connect", "builtin", "--tls", "off,1.3", "--key", "ecdsa-p256",
		"--rate", "20,40", "--arrivals", "uniform", "-d", "1s", "--trials", "1", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Trials) != 4 {
		t.Fatalf("%d trials, want 4 (2 rates × 2 variants)", len(r.Trials))
	}
	for _, tr := range r.Trials {
		o := tr.Open
		if o == nil || o.Process != "uniform" || o.Slots != 1024 || tr.Concurrency != 1024 || o.Arrivals < 15 || o.Service.Count != tr.Ops || o.Service.HDR == "" {
			t.Errorf("%s: open loop %+v, concurrency %d, ops %d", tr.Variant, o, tr.Concurrency, tr.Ops)
		}
		if s := o.Schedule; s == nil || s.Started != tr.Ops || s.Lag.Count != s.Started || s.Due < o.Arrivals {
			t.Errorf("%s: schedule %+v, %d arrivals, %d ops", tr.Variant, s, o.Arrivals, tr.Ops)
		}
	}
	for _, want := range []string{"connect at arrival rates (--rate, uniform arrivals)", "20/s", "40/s", "service p99", "connect at arrival rates: schedule lag", "> 10 ms late"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the report has no %q:\n%s", want, stdout)
		}
	}

	code, stdout, stderr = runMain(t, "pool", "builtin", "--tls", "off", "-c", "2", "--rate", "50..100", "--slo", "5s", "-d", "1s", "--warmup", "0", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if r, err = result.Read(out); err != nil {
		t.Fatal(err)
	}
	if r.Spec.Knee == nil || len(r.Trials) != 2 || r.PlannedTrials != 2 {
		t.Errorf("search %+v: %d trials of %d planned, want 50/s and 75/s", r.Spec.Knee, len(r.Trials), r.PlannedTrials)
	}
	if want := "pool: at p99 < 5s from the intended start, plain sustains 75 operations/s"; !strings.Contains(stdout, want) {
		t.Errorf("the report has no %q:\n%s", want, stdout)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"connect", "builtin", "--rate", "0"}, "--rate: 0 is out of range: give arrivals per second above 0"},
		{[]string{"connect", "builtin", "--rate", "-5"}, "--rate: -5 is out of range"},
		{[]string{"connect", "builtin", "--rate", "fast"}, `--rate "fast": give arrivals per second`},
		{[]string{"connect", "builtin", "--rate", "100", "--max-inflight", "0"}, "--max-inflight: 0 is out of range: give a positive value"},
		{[]string{"connect", "builtin", "--rate", "100", "--slo", "10ms"}, "--slo is the bound of a rate search: give --rate auto or a range"},
		{[]string{"connect", "builtin", "--slo", "10ms"}, "--slo is the bound of a rate search"},
		{[]string{"connect", "builtin", "--arrivals", "uniform"}, "--arrivals shapes the arrivals of an open loop: give --rate too"},
		{[]string{"stream", "postgres://u@127.0.0.1:1/db", "--rate", "100"}, "--rate applies to connect and pool: stream reads one large result at a time"},
		{[]string{"--rate", "100"}, "--rate does not apply to --preset default"},
		{[]string{"connect", "builtin", "--rate", "100", "-c", "8"}, "-c/--concurrency sets a closed loop's workers: at a rate, connect starts workers as arrivals need them, up to --max-inflight"},
	} {
		if tt.want == "" {
			continue
		}
		code, _, stderr := runMain(t, tt.args...)
		if lines := errorLines(stderr); code != 2 || len(lines) != 1 || !strings.Contains(lines[0], tt.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 and one line with %q", tt.args, code, stderr, tt.want)
		}
	}
}
