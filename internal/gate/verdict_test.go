package gate

import (
	"encoding/xml"
	"math"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/report"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// verdictQuantities are one cell of each kind a @ci95 gate judges: a
// paired overhead over 5 rounds and over 10, a mean over 3 trials and over
// 12, round trips that never varied, and an advice's prediction.
func verdictQuantities() []report.Quantity {
	nan := stats.Delta{Pct: math.NaN(), CI95: math.NaN()}
	return []report.Quantity{
		{Experiment: plan.Connect, Variant: "tls1.3", Concurrency: 1, Name: "p50", Unit: "ms", Trials: 5, Mean: 1.3, CI95: 0.1, Overhead: stats.Delta{N: 5, Pct: 45, CI95: 18.2}},
		{Experiment: plan.Connect, Variant: "tls1.3", Concurrency: 1, Name: "p99", Unit: "ms", Trials: 10, Mean: 2, CI95: 0.2, Overhead: stats.Delta{N: 10, Pct: 45, CI95: 18.2}},
		{Experiment: plan.Connect, Variant: "tls1.3", Concurrency: 1, Name: "mean", Unit: "ms", Trials: 3, Mean: 1.3, CI95: 0.1, Overhead: nan},
		{Experiment: plan.Connect, Variant: "tls1.3", Concurrency: 1, Name: "rate", Unit: "/s", Trials: 12, Mean: 500, CI95: 50, Overhead: nan},
		{Experiment: plan.Connect, Variant: "tls1.3", Concurrency: 1, Name: "roundtrips.tls-handshake", Unit: "count", Trials: 4, Mean: 1, CI95: 0, Overhead: nan},
		{Experiment: plan.Advise, Variant: "tls1.3", Name: "saved.setup", Unit: "ms", Trials: 1, Mean: 0.8, CI95: 0.1, Overhead: nan, Cell: "advise tls1.3 on 10.0.0.5:5432"},
	}
}

// TestVerdictSaysItsInterval: a @ci95 verdict says which end of which
// interval it judged and over how many rounds, in the report's table,
// the JUnit message and the Markdown summary (all from Measured) and in
// the JSON (Interval, Rounds); one judged on fewer than 10 rounds gets
// the note, which is no failure.
func TestVerdictSaysItsInterval(t *testing.T) {
	qs := verdictQuantities()
	for _, tc := range []struct {
		expr     string
		pass     bool
		interval string
		rounds   int
		measured string
		note     bool
	}{
		{"connect[tls1.3].overhead.p50 < 40% @ci95", false, "paired", 5,
			"45%; upper end 63.2% of the 95% t-interval over 5 paired rounds (26.8 to 63.2%)", true},
		{"connect[tls1.3].overhead.p50 < 70% @ci95", true, "paired", 5,
			"45%; upper end 63.2% of the 95% t-interval over 5 paired rounds (26.8 to 63.2%)", true},
		{"connect[tls1.3].overhead.p99 < 70% @ci95", true, "paired", 10,
			"45%; upper end 63.2% of the 95% t-interval over 10 paired rounds (26.8 to 63.2%)", false},
		{"connect[tls1.3].mean < 2ms @ci95", true, "trials", 3,
			"1.3 ms; upper end 1.4 ms of the 95% t-interval over 3 trials (1.2 to 1.4 ms)", true},
		{"connect[tls1.3].rate > 100 @ci95", true, "trials", 12,
			"500/s; lower end 450/s of the 95% t-interval over 12 trials (450 to 550/s)", false},
		{"connect[tls1.3].roundtrips.tls-handshake <= 1 @ci95", true, "trials", 4,
			"1 round trip; the 95% t-interval over 4 trials of no width", false},
		{"advise[tls1.3].saved.setup > 1ms @ci95", false, "prediction", 0,
			"0.8 ms; lower end 0.7 ms of the prediction's 95% interval (0.7 to 0.9 ms)", false},
		// Without @ci95 the mean is judged: no interval, no note.
		{"connect[tls1.3].overhead.p50 < 50%", true, "", 0, "45%", false},
	} {
		v := Evaluate([]Gate{mustGate(t, tc.expr, "tls1.3")}, qs)[0]
		if v.Pass != tc.pass || v.Interval != tc.interval || v.Rounds != tc.rounds || v.Measured() != tc.measured {
			t.Errorf("%s: pass %v, interval %q over %d, measured %q; want %v, %q over %d, %q", tc.expr, v.Pass, v.Interval, v.Rounds, v.Measured(), tc.pass, tc.interval, tc.rounds, tc.measured)
		}
		note := result.RoundsNote([]result.Gate{v})
		if (note != "") != tc.note {
			t.Errorf("%s: note %q, want one: %v", tc.expr, note, tc.note)
		}
		md := string(Markdown([]result.Gate{v}, "tlsbench connect"))
		for what, out := range map[string]string{"JUnit": junitOut(t, v), "Markdown": md} {
			if !strings.Contains(out, tc.measured) || strings.Contains(out, "fewer than 10") != tc.note {
				t.Errorf("%s: the %s output lacks %q or has the note wrongly (want %v):\n%s", tc.expr, what, tc.measured, tc.note, out)
			}
		}
	}
}

// junitOut is the output JUnit gives v's test case, unescaped.
func junitOut(t *testing.T, v result.Gate) string {
	t.Helper()
	data, err := JUnit([]result.Gate{v}, "tlsbench connect", "")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suites []struct {
			Cases []struct {
				Out string `xml:"system-out"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil || len(doc.Suites) != 1 || len(doc.Suites[0].Cases) != 1 {
		t.Fatalf("JUnit: %v\n%s", err, data)
	}
	return doc.Suites[0].Cases[0].Out
}

func TestRoundsNote(t *testing.T) {
	qs := verdictQuantities()
	vs := Evaluate([]Gate{
		mustGate(t, "connect[tls1.3].overhead.p50 < 40% @ci95", "tls1.3"),
		mustGate(t, "connect[tls1.3].mean < 2ms @ci95", "tls1.3"),
		mustGate(t, "connect[tls1.3].overhead.p99 < 70% @ci95", "tls1.3"),
	}, qs)
	want := "note: @ci95 judged an interval over 3 rounds, fewer than 10: one wild round widens a t-interval over few rounds (t = 2.78 over 5, 2.26 over 10), which makes a false failure likelier; see docs/gates.md#rounds-for-ci95"
	if got := result.RoundsNote(vs); got != want {
		t.Errorf("RoundsNote = %q, want %q", got, want)
	}
	// One note under the table, however many gates it concerns.
	if md := string(Markdown(vs, "tlsbench connect")); strings.Count(md, "fewer than 10") != 1 {
		t.Errorf("the Markdown summary has the note %d times, want once:\n%s", strings.Count(md, "fewer than 10"), md)
	}
	// A gate without a figure, and a verdict recorded before the interval
	// was named, get none.
	if note := result.RoundsNote([]result.Gate{{Why: "no cell of connect [plain] measured roundtrips.tls-handshake"}, {Mean: 45, Low: 26.8, High: 63.2, Value: 63.2}}); note != "" {
		t.Errorf("note %q, want none", note)
	}
	if m := (result.Gate{Mean: 45, Low: 38, High: 52, Value: 52, Unit: "%"}).Measured(); m != "45% (95% interval 38 to 52%)" {
		t.Errorf("an older verdict reads %q", m)
	}
}

func TestCompareVerdictSaysWelch(t *testing.T) {
	c := &report.Comparison{Tables: []report.Figure{{Experiment: plan.Pool, Quantity: "server_cpu_per_op",
		Rows: []report.Row{{Variant: "tls1.3", Concurrency: 4, Delta: stats.Delta{N: 3, Pct: 5, CI95: 12}}}}}}
	v := EvaluateCompare([]Gate{mustGate(t, "compare: pool[*].server_cpu_per_op.delta < +10% @ci95", "tls1.3")}, c)[0]
	if want := "5%; upper end 17% of the 95% Welch interval over two results of at least 3 trials (-7 to 17%)"; v.Pass || v.Interval != "welch" || v.Rounds != 3 || v.Measured() != want {
		t.Errorf("%+v: measured %q, want a failure, %q", v, v.Measured(), want)
	}
	if result.RoundsNote([]result.Gate{v}) == "" {
		t.Error("no note on a Welch interval over 3 trials a side")
	}
}

// TestCannotPass: --gate-abort stops where a gate can no longer pass on
// the trials so far: a point estimate that fails, a @ci95 interval wholly
// past the bound; not where only the far end of a wide interval fails,
// nor on a gate with no figure or interval yet, nor on an advice's error
// or a rate search's capacity, which only the end settles.
func TestCannotPass(t *testing.T) {
	nan := stats.Delta{Pct: math.NaN(), CI95: math.NaN()}
	qs := []report.Quantity{
		{Experiment: plan.Connect, Variant: "plain", Concurrency: 1, Name: "roundtrips.tcp", Trials: 1, Mean: 1, CI95: math.NaN(), Overhead: nan},
		{Experiment: plan.Connect, Variant: "tls1.3", Concurrency: 1, Name: "roundtrips.tls-handshake", Trials: 1, Mean: 2, CI95: math.NaN(), Overhead: nan},
		{Experiment: plan.Connect, Variant: "tls1.3", Concurrency: 1, Name: "p99", Trials: 2, Mean: 1.3, CI95: 1, Overhead: stats.Delta{N: 2, Pct: 30, CI95: 250}},
		{Experiment: plan.Connect, Variant: "tls1.3", Concurrency: 4, Name: "p99", Trials: 3, Mean: 3, CI95: 0.1, Overhead: stats.Delta{N: 3, Pct: 200, CI95: 40}},
		{Experiment: plan.Connect, Variant: "tls1.3", Concurrency: 1, Name: "p50", Trials: 1, Mean: 1, CI95: math.NaN(), Overhead: stats.Delta{N: 1, Pct: 90, CI95: math.NaN()}},
		{Experiment: plan.Connect, Variant: "tls1.3", Name: "capacity", Trials: 1, Mean: 100, CI95: math.NaN(), Overhead: nan},
		{Experiment: plan.Advise, Variant: "tls1.3", Name: "error_pct.setup", Unit: "%", Trials: 2, Mean: 40, CI95: math.NaN(), Overhead: nan, Cell: "advise tls1.3 on 10.0.0.5:5432"},
		{Experiment: plan.Advise, Variant: "tls1.3", Name: "measured.round_trips", Unit: "count", Trials: 1, Mean: 1, CI95: math.NaN(), Overhead: nan, Cell: "advise tls1.3 on 10.0.0.5:5432"},
	}
	for _, tc := range []struct {
		expr  string
		stops bool
		cell  string
	}{
		{"connect[*].roundtrips.tls-handshake <= 1", true, "connect tls1.3 c=1"},
		{"connect[*].roundtrips.tcp <= 1", false, ""},
		{"connect[tls1.3].roundtrips.tls-handshake == 1", true, "connect tls1.3 c=1"},
		// @ci95: the far end fails at c=1 (-220 to 280%), the near end
		// too only at c=4 (160 to 240%).
		{"connect[tls1.3].overhead.p99 < 100% @ci95", true, "connect tls1.3 c=4"},
		{"connect[tls1.3].overhead.p99 < 170% @ci95", false, ""},
		{"connect[tls1.3].overhead.p99 > 250% @ci95", true, "connect tls1.3 c=4"},
		{"connect[tls1.3].overhead.p99 == 200% @ci95", false, ""},
		// Without @ci95 the mean decides, as at the end.
		{"connect[tls1.3].overhead.p99 < 100%", true, "connect tls1.3 c=4"},
		// One pair: no interval yet, the @ci95 gate waits.
		{"connect[tls1.3].overhead.p50 < 50% @ci95", false, ""},
		{"connect[tls1.3].overhead.p50 < 50%", true, "connect tls1.3 c=1"},
		// Not measured yet: wait.
		{"connect[tls1.3].roundtrips.auth <= 1", false, ""},
		// Settled only at the end.
		{"connect[tls1.3].capacity >= 300/s", false, ""},
		{"advise[tls1.3].error_pct.setup < 10", false, ""},
		{"advise[tls1.3].measured.round_trips > 1", true, "advise tls1.3 on 10.0.0.5:5432"},
	} {
		g := mustGate(t, tc.expr, "plain", "tls1.3")
		v, ok := CannotPass([]Gate{g}, qs)
		if ok != tc.stops || v.Cell != tc.cell || (ok && (v.Pass || v.Name != tc.expr)) {
			t.Errorf("%s: stops %v at %q (%+v), want %v at %q", tc.expr, ok, v.Cell, v, tc.stops, tc.cell)
		}
		// What stops a run fails it at the end.
		if ok && Evaluate([]Gate{g}, qs)[0].Pass {
			t.Errorf("%s: stopped a run that it passes", tc.expr)
		}
	}
}
