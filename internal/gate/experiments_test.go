package gate

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/report"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// Gates on replicate and advise: the grammar of the run commands, over
// their own quantities.
func TestParseReplicateAdvise(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want Gate
	}{
		{"replicate[tls1.3].overhead.commit.p99 < 20% @ci95", Gate{Experiment: plan.Replicate, Variant: "tls1.3", Quantity: "commit.p99", Overhead: true, Op: "<", Bound: 20, Unit: "%", CI95: true}},
		{"replicate[tls1.3].lag.p99 < 1s", Gate{Experiment: plan.Replicate, Variant: "tls1.3", Quantity: "lag.p99", Op: "<", Bound: 1000, Unit: "ms"}},
		{"replicate[*].writes_per_s > 500/s", Gate{Experiment: plan.Replicate, Variant: "*", Quantity: "writes_per_s", Op: ">", Bound: 500, Unit: "/s"}},
		{"replicate[*].primary_cpu_per_write < 1ms", Gate{Experiment: plan.Replicate, Variant: "*", Quantity: "primary_cpu_per_write", Op: "<", Bound: 1000, Unit: "us"}},
		{"replicate[tls1.3 async].overhead.link_mb_per_s < 5%", Gate{Experiment: plan.Replicate, Variant: "tls1.3 async", Quantity: "link_mb_per_s", Overhead: true, Op: "<", Bound: 5, Unit: "%"}},
		{"replicate[tls1.3].overhead.resync.mb_per_s > -30%", Gate{Experiment: plan.Replicate, Variant: "tls1.3", Quantity: "resync.mb_per_s", Overhead: true, Op: ">", Bound: -30, Unit: "%"}},
		{"advise[ecdsa-p256].error_pct.server_cpu < 10", Gate{Experiment: plan.Advise, Variant: "ecdsa-p256", Quantity: "error_pct.server_cpu", Op: "<", Bound: 10, Unit: "%"}},
		{"advise[ecdsa-p256].error_pct.server_cpu > -10%", Gate{Experiment: plan.Advise, Variant: "ecdsa-p256", Quantity: "error_pct.server_cpu", Op: ">", Bound: -10, Unit: "%"}},
		{"advise[*].saved.round_trips >= 0", Gate{Experiment: plan.Advise, Variant: "*", Quantity: "saved.round_trips", Op: ">=", Bound: 0, Unit: "count"}},
		{"advise[tls1.3].measured.setup > 500us @ci95", Gate{Experiment: plan.Advise, Variant: "tls1.3", Quantity: "measured.setup", Op: ">", Bound: 0.5, Unit: "ms", CI95: true}},
		{"advise[pooling].saved.server_cores > 0.1", Gate{Experiment: plan.Advise, Variant: "pooling", Quantity: "saved.server_cores", Op: ">", Bound: 0.1, Unit: "count"}},
	} {
		g, err := Parse(tc.expr)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.expr, err)
			continue
		}
		if math.Abs(g.Bound-tc.want.Bound) < 1e-9 {
			g.Bound = tc.want.Bound
		}
		if g.Experiment != tc.want.Experiment || g.Variant != tc.want.Variant || g.Quantity != tc.want.Quantity || g.Overhead != tc.want.Overhead ||
			g.Op != tc.want.Op || g.Bound != tc.want.Bound || g.CI95 != tc.want.CI95 || g.unitOf() != tc.want.Unit {
			t.Errorf("Parse(%q) = %+v (unit %s), want %+v", tc.expr, g, g.unitOf(), tc.want)
		}
	}
	for _, tc := range []struct{ expr, problem string }{
		{"replicate[*].p99 < 2ms", `unknown quantity "p99" for replicate: use one of writes_per_s, commit.p50`},
		{"replicate[*].lag.p99 < 40%", `"%" does not fit a time`},
		{"replicate[*].writes_per_s > 3ms", "does not fit writes_per_s, per second"},
		{"advise[tls1.3].overhead.saved.setup < 40%", "drop overhead."},
		{"advise[tls1.3].saved.p99 > 1ms", `unknown quantity "saved.p99" for advise: use saved.FIGURE (predicted), measured.FIGURE or error_pct.FIGURE (--confirm), FIGURE one of setup, p95_setup`},
		{"advise[tls1.3].saved.round_trips >= 1ms", "does not fit round trips, a count"},
		{"advise[tls1.3].error_pct.setup < 10ms", "does not fit error_pct.setup, in percent"},
		{"compare: replicate[*].commit.p99.delta < 10%", "compare judges connect, pool, stream or storm"},
		{"wire[*].rate > 1", `unknown experiment "wire": gate connect, pool, stream, storm, replicate or advise`},
	} {
		_, err := Parse(tc.expr)
		var ge *Error
		if !errors.As(err, &ge) || !strings.Contains(err.Error(), tc.problem) {
			t.Errorf("Parse(%q) = %v, want an *Error with %q", tc.expr, err, tc.problem)
		}
	}
}

func TestCheckReplicate(t *testing.T) {
	p, err := plan.NewReplication(plan.Replication{TLS: []string{"off", "1.3"}, Sync: []string{"off", "remote_apply"}, Trials: 3})
	if err != nil {
		t.Fatal(err)
	}
	one, resync := p, p
	one.Trials, resync.Resync = 1, true
	for _, tc := range []struct {
		expr    string
		p       plan.Replication
		want    []string
		problem string
	}{
		{"replicate[tls1.3 async].overhead.commit.p99 < 20% @ci95", p, []string{"tls1.3 async"}, ""},
		{"replicate[*].lag.p99 < 1s", p, []string{"plain async", "tls1.3 async", "plain sync=remote_apply", "tls1.3 sync=remote_apply"}, ""},
		{"replicate[tls1.3].lag.p99 < 1s", p, nil, `[tls1.3] is ambiguous: it names [tls1.3 async], [tls1.3 sync=remote_apply]`},
		{"replicate[tls1.2].lag.p99 < 1s", p, nil, `no variant "tls1.2": the run's variants are [plain async], [tls1.3 async], [plain sync=remote_apply], [tls1.3 sync=remote_apply] (or [*])`},
		{"replicate[plain async].overhead.lag.p99 < 5%", p, nil, "is the baseline"},
		{"replicate[*].lag.p99 < 1s @ci95", one, nil, "at least 2 trials"},
		{"replicate[*].resync.mb_per_s > 10", p, nil, "give --resync"},
		{"replicate[*].resync.mb_per_s > 10 @ci95", resync, nil, "no interval: drop @ci95"},
		{"replicate[*].resync.mb_per_s > 10", resync, []string{"plain async", "tls1.3 async", "plain sync=remote_apply", "tls1.3 sync=remote_apply"}, ""},
		{"connect[*].p99 < 1ms", p, nil, "the run has no connect experiment (it runs replicate)"},
		{"advise[*].saved.setup > 0ms", p, nil, "the run has no advise experiment (it runs replicate)"},
	} {
		g, err := Parse(tc.expr)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.expr, err)
		}
		got, err := CheckReplicate([]Gate{g}, tc.p)
		switch {
		case tc.problem != "":
			if err == nil || !strings.Contains(err.Error(), tc.problem) {
				t.Errorf("CheckReplicate(%q) = %v, want %q", tc.expr, err, tc.problem)
			}
		case err != nil:
			t.Errorf("CheckReplicate(%q): %v", tc.expr, err)
		case strings.Join(got[0].Variants, "|") != strings.Join(tc.want, "|"):
			t.Errorf("CheckReplicate(%q) variants %q, want %q", tc.expr, got[0].Variants, tc.want)
		}
	}
}

func TestCheckAdvise(t *testing.T) {
	for _, tc := range []struct {
		expr    string
		confirm bool
		trials  int
		problem string
	}{
		{"advise[tls1.3].saved.setup > 1ms @ci95", false, 3, ""},
		{"advise[*].saved.round_trips >= 0", false, 3, ""},
		{"advise[ecdsa-p256].error_pct.server_cpu < 10", true, 3, ""},
		{"advise[tls1.3].measured.setup > 0ms @ci95", true, 2, ""},
		{"advise[tls13].saved.setup > 1ms", false, 3, `no change "tls13": advise's changes are [tls1.3], [ecdsa-p256], [resumption]`},
		{"advise[tls1.3].measured.setup > 0ms", false, 3, "measured figures come from the lab replay: give --confirm, or gate the prediction (saved.setup)"},
		{"advise[tls1.3].error_pct.setup < 10", false, 3, "error_pct figures come from the lab replay"},
		{"advise[tls1.3].error_pct.setup < 10 @ci95", true, 3, "has no interval"},
		{"advise[tls1.3].saved.round_trips >= 1 @ci95", true, 3, "has no interval"},
		{"advise[tls1.3].measured.setup > 0ms @ci95", true, 1, "at least 2 trials of the replay"},
		{"connect[*].p99 < 1ms", false, 3, "the run has no connect experiment (it runs advise)"},
	} {
		g, err := Parse(tc.expr)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.expr, err)
		}
		got, err := CheckAdvise([]Gate{g}, tc.confirm, tc.trials)
		switch {
		case tc.problem != "":
			if err == nil || !strings.Contains(err.Error(), tc.problem) {
				t.Errorf("CheckAdvise(%q) = %v, want %q", tc.expr, err, tc.problem)
			}
		case err != nil:
			t.Errorf("CheckAdvise(%q): %v", tc.expr, err)
		case g.Variant == "*" && len(got[0].Variants) != len(report.AdviceIDs):
			t.Errorf("CheckAdvise(%q) variants %q", tc.expr, got[0].Variants)
		}
	}
}

// The verdict names the cell a quantity names itself (an advice's
// endpoint, a replicate's resync), and [*] takes a change the gate's
// list does not know.
func TestEvaluateNamedCells(t *testing.T) {
	nan := math.NaN()
	none := stats.Delta{Pct: nan, CI95: nan}
	qs := []report.Quantity{
		{Experiment: plan.Advise, Variant: "tls1.3", Name: "saved.setup", Mean: 2.5, CI95: 0.5, Overhead: none, Cell: "advise tls1.3 on 10.0.0.5:5432"},
		{Experiment: plan.Advise, Variant: "tls1.3", Name: "saved.setup", Mean: 0.8, CI95: 0.1, Overhead: none, Cell: "advise tls1.3 on 10.0.0.6:5432"},
		{Experiment: plan.Advise, Variant: "a-new-change", Name: "saved.round_trips", Mean: -1, CI95: nan, Overhead: none, Cell: "advise a-new-change on 10.0.0.5:5432"},
		{Experiment: plan.Replicate, Variant: "tls1.3 async", Concurrency: 4, Name: "commit.p99", Mean: 7.2, CI95: 0.3, Overhead: stats.Delta{N: 3, Pct: 41, CI95: 2}},
	}
	for _, tc := range []struct {
		gate  Gate
		pass  bool
		cell  string
		value float64
	}{
		{mustGate(t, "advise[tls1.3].saved.setup > 1ms", "tls1.3"), false, "advise tls1.3 on 10.0.0.6:5432", 0.8},
		{mustGate(t, "advise[tls1.3].saved.setup > 0.5ms @ci95", "tls1.3"), true, "advise tls1.3 on 10.0.0.6:5432", 0.7},
		{mustGate(t, "advise[*].saved.round_trips >= 0", report.AdviceIDs...), false, "advise a-new-change on 10.0.0.5:5432", -1},
		{mustGate(t, "replicate[tls1.3].overhead.commit.p99 < 40% @ci95", "tls1.3 async"), false, "replicate tls1.3 async c=4", 43},
	} {
		v := Evaluate([]Gate{tc.gate}, qs)[0]
		if v.Pass != tc.pass || v.Cell != tc.cell || math.Abs(v.Value-tc.value) > 1e-9 {
			t.Errorf("%s: %+v, want pass %v cell %q value %g", tc.gate.Expr, v, tc.pass, tc.cell, tc.value)
		}
	}
}
