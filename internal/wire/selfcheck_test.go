package wire

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// TestChecks sets the run's mean phases beside the wire's per variant:
// the wire's connections are those starting within a connect trial's time;
// phases the wire sees only as encrypted flights are summed beside them;
// a count that differs is noted.
func TestChecks(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	phase := func(name string, ms float64, trips int) result.Phase {
		return result.Phase{Name: name, Latency: result.Hist{Count: 2, Mean: ms}, RoundTrips: result.RoundTrips{Mean: float64(trips)}}
	}
	trials := []result.Trial{
		{Experiment: plan.Connect, Variant: "plain", Start: t0, Elapsed: time.Second, Conns: 2,
			Phases: []result.Phase{phase("tcp", 0.1, 1), phase("query", 0.3, 1)}},
		{Experiment: plan.Connect, Variant: "tls1.3", Start: t0.Add(2 * time.Second), Elapsed: time.Second, Conns: 2,
			Phases: []result.Phase{phase("tcp", 0.1, 1), phase("tls-handshake", 1, 1), phase("query", 0.3, 1)}},
		// Not connect: not the wire check's.
		{Experiment: plan.Pool, Variant: "plain", Start: t0.Add(4 * time.Second), Elapsed: time.Second},
	}
	conn := func(at time.Duration, phases ...netx.Phase) netx.Trace {
		return netx.Trace{Start: t0.Add(at), Phases: phases}
	}
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	conns := []netx.Trace{
		conn(100*time.Millisecond, netx.Phase{Name: "tcp", Duration: ms(0.2), RoundTrips: 1}, netx.Phase{Name: "query", Duration: ms(0.4), RoundTrips: 1}),
		// One plain connection of two: noted.
		conn(2500*time.Millisecond, netx.Phase{Name: "tcp", Duration: ms(0.2), RoundTrips: 1}, netx.Phase{Name: "tls-handshake", Duration: ms(2), RoundTrips: 1},
			netx.Phase{Name: PhaseEncrypted, Duration: ms(0.5), RoundTrips: 1}),
		conn(2600*time.Millisecond, netx.Phase{Name: "tcp", Duration: ms(0.4), RoundTrips: 1}, netx.Phase{Name: "tls-handshake", Duration: ms(4), RoundTrips: 1},
			netx.Phase{Name: PhaseEncrypted, Duration: ms(0.7), RoundTrips: 1}),
		conn(10*time.Second, netx.Phase{Name: "tcp", Duration: ms(9)}), // in no connect trial
	}
	checks, notes := Checks(trials, conns)
	want := []result.WireCheck{
		{Variant: "plain", Phase: "tcp", Conns: 1, Tool: 0.1, Wire: 0.2, ToolRoundTrips: 1, WireRoundTrips: 1},
		{Variant: "plain", Phase: "query", Conns: 1, Tool: 0.3, Wire: 0.4, ToolRoundTrips: 1, WireRoundTrips: 1},
		{Variant: "tls1.3", Phase: "tcp", Conns: 2, Tool: 0.1, Wire: 0.3, ToolRoundTrips: 1, WireRoundTrips: 1},
		{Variant: "tls1.3", Phase: "tls-handshake", Conns: 2, Tool: 1, Wire: 3, ToolRoundTrips: 1, WireRoundTrips: 1},
		{Variant: "tls1.3", Phase: PhaseEncrypted, Conns: 2, Tool: 0.3, Wire: 0.6, ToolRoundTrips: 1, WireRoundTrips: 1},
	}
	near := func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
	if len(checks) != len(want) {
		t.Fatalf("checks %+v, want %+v", checks, want)
	}
	for i, c := range checks {
		w := want[i]
		if c.Variant != w.Variant || c.Phase != w.Phase || c.Conns != w.Conns || !near(c.Tool, w.Tool) || !near(c.Wire, w.Wire) ||
			!near(c.ToolRoundTrips, w.ToolRoundTrips) || !near(c.WireRoundTrips, w.WireRoundTrips) {
			t.Errorf("check %d: %+v, want %+v", i, c, w)
		}
	}
	wantNotes := []string{
		"--wire: plain opened 2 connections in its trials, the capture shows 1 starting within them",
		"--wire: tls1.3: the wire cannot see inside the encrypted flights after the handshake; tlsbench's query are summed beside them as encrypted",
	}
	for _, w := range wantNotes {
		if !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, w) }) {
			t.Errorf("notes %q: no %q", notes, w)
		}
	}
}
