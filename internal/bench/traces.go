package bench

import (
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/result"
)

// TracesTrial fills a trial's Latency (each trace's whole time), Phases
// (time and round trips per phase) and bytes from connections timed
// elsewhere (a packet capture), with the same tally a run uses; Ops and
// Conns are the number of traces.
func TracesTrial(tr *result.Trial, traces []netx.Trace) {
	t := newTally()
	for _, x := range traces {
		t.trace(x)
		t.ops++
		t.conns++
	}
	_ = t.fill(tr) // no failures to report: every trace is a connection
}
