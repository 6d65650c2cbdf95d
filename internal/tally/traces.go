package tally

import (
	"slices"
	"time"

	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/result"
)

// Traces tallies connections timed elsewhere (a packet capture), one at
// a time and in memory that does not grow with their number, with the
// same Tally a run uses: a trial's Latency (each connection's whole
// time), Phases (time and round trips) and bytes; Ops and Conns count
// the connections.
//
// Every mean is over all the connections added, a phase a connection
// lacks (a client's first connection without a query) counting as zero
// time and round trips, and is exact (HdrHistogram's means are bucket
// midpoints, its lowest value 100 ns): the phases of connections that
// tile their time add up to the trial's mean, never past it.
type Traces struct {
	t     *Tally
	order []string // phases in the connections' order, merged
	total time.Duration
	sums  map[string]time.Duration
}

// NewTraces returns an empty tally of traces.
func NewTraces() *Traces { return &Traces{t: New(), sums: map[string]time.Duration{}} }

// Add tallies one connection.
func (x *Traces) Add(tr netx.Trace) {
	x.t.RecordTrace(tr)
	x.t.Ops++
	x.t.Conns++
	x.total += tr.Total()
	at := 0
	for _, p := range tr.Phases {
		x.sums[p.Name] += p.Duration
		if i := slices.Index(x.order, p.Name); i >= 0 {
			at = i + 1
			continue
		}
		x.order = slices.Insert(x.order, at, p.Name)
		at++
	}
}

// Conns is the number of connections added.
func (x *Traces) Conns() int64 { return x.t.Conns }

// Fill writes the tally into tr; it may be called again after more Adds.
func (x *Traces) Fill(tr *result.Trial) {
	n := x.t.Conns
	for _, name := range x.order {
		for x.t.phase(name).samples < n {
			x.t.RecordPhase(name, 0, 0)
		}
	}
	slices.SortStableFunc(x.t.phases, func(a, b phase) int {
		return slices.Index(x.order, a.name) - slices.Index(x.order, b.name)
	})
	x.t.Fill(tr)
	if n == 0 {
		return
	}
	mean := func(d time.Duration) float64 { return float64(d) / float64(n) / float64(time.Millisecond) }
	tr.Latency.Mean = mean(x.total)
	for i := range tr.Phases {
		tr.Phases[i].Latency.Mean = mean(x.sums[tr.Phases[i].Name])
	}
}
