package tally

import (
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/result"
)

func trace(start time.Time, bytes int64, phases ...netx.Phase) netx.Trace {
	tr := netx.Trace{Start: start, End: start, Phases: phases, Sent: bytes, Received: 2 * bytes}
	for _, p := range phases {
		tr.End = tr.End.Add(p.Duration)
	}
	return tr
}

// TestMerge: two workers' tallies merge into the sums, round trips' minimum
// and maximum across both, phases in the order first recorded.
func TestMerge(t *testing.T) {
	t0 := time.Now()
	a, b := New(), New()
	a.RecordTrace(trace(t0, 10, netx.Phase{Name: "tcp", Duration: time.Millisecond, RoundTrips: 1}))
	a.Ops, a.Conns = 1, 1
	b.RecordTrace(trace(t0, 5, netx.Phase{Name: "tcp", Duration: 3 * time.Millisecond, RoundTrips: 1},
		netx.Phase{Name: "tls-handshake", Duration: time.Millisecond, RoundTrips: 2}))
	b.RecordPhase("tcp", time.Millisecond, 3)
	b.Ops, b.Conns = 2, 1
	a.Merge(b)
	var tr result.Trial
	a.Fill(&tr)
	if tr.Ops != 3 || tr.Conns != 2 || tr.BytesSent != 15 || tr.BytesReceived != 30 || tr.Latency.Count != 2 {
		t.Errorf("ops %d conns %d bytes %d/%d latency samples %d, want 3 2 15/30 2", tr.Ops, tr.Conns, tr.BytesSent, tr.BytesReceived, tr.Latency.Count)
	}
	if len(tr.Phases) != 2 || tr.Phases[0].Name != "tcp" || tr.Phases[1].Name != "tls-handshake" {
		t.Fatalf("phases %+v, want tcp, tls-handshake", tr.Phases)
	}
	if rt := tr.Phases[0].RoundTrips; rt.Min != 1 || rt.Max != 3 || rt.Mean != 5.0/3 || tr.Phases[0].Latency.Count != 3 {
		t.Errorf("tcp round trips %+v over %d samples, want 1..3 mean 5/3 over 3", rt, tr.Phases[0].Latency.Count)
	}
}

// TestTraces: a phase some connections lack counts as zero for them, the
// phases keep the connections' order, and the means are exact.
func TestTraces(t *testing.T) {
	t0 := time.Now()
	x := NewTraces()
	x.Add(trace(t0, 1, netx.Phase{Name: "tcp", Duration: 2 * time.Millisecond, RoundTrips: 1},
		netx.Phase{Name: "close", Duration: time.Millisecond}))
	x.Add(trace(t0, 1, netx.Phase{Name: "tcp", Duration: 4 * time.Millisecond, RoundTrips: 1},
		netx.Phase{Name: "query", Duration: 2 * time.Millisecond, RoundTrips: 1},
		netx.Phase{Name: "close", Duration: time.Millisecond}))
	var tr result.Trial
	x.Fill(&tr)
	if x.Conns() != 2 || tr.Ops != 2 || tr.Conns != 2 {
		t.Errorf("conns %d, trial ops %d conns %d, want 2", x.Conns(), tr.Ops, tr.Conns)
	}
	var names []string
	var sum float64
	for _, p := range tr.Phases {
		names = append(names, p.Name)
		sum += p.Latency.Mean
	}
	if want := []string{"tcp", "query", "close"}; len(names) != 3 || names[0] != want[0] || names[1] != want[1] || names[2] != want[2] {
		t.Errorf("phases %v, want %v", names, want)
	}
	if tr.Latency.Mean != 5 || sum != tr.Latency.Mean {
		t.Errorf("mean %v ms, phases add up to %v ms, want 5 both", tr.Latency.Mean, sum)
	}
	if q := tr.Phases[1]; q.Latency.Count != 2 || q.RoundTrips.Min != 0 || q.RoundTrips.Mean != 0.5 {
		t.Errorf("query %+v, want 2 samples, round trips 0..1 mean 0.5", q)
	}
}
