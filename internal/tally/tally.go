// Package tally counts what connections and operations took (latency, the
// time and round trips of each phase, bytes) in memory that does not grow
// with their number, and writes the count into a result.Trial.
package tally

import (
	"time"

	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// Tally is what one worker counts; workers merge theirs at the end, so
// the measuring loop takes no lock. It is not safe for concurrent use.
type Tally struct {
	// Latency holds one sample per operation (or per connection, when
	// a connection is the operation).
	Latency *stats.Recorder
	// Ops and Conns count the operations and connections.
	Ops, Conns int64
	// Sent and Received count the bytes written and read.
	Sent, Received int64
	phases         []phase
}

// phase is the tally of one phase: its time and round trips.
type phase struct {
	name           string
	rec            *stats.Recorder
	rtMin, rtMax   int
	rtSum, samples int64
}

// New returns an empty tally.
func New() *Tally { return &Tally{Latency: stats.NewRecorder()} }

// RecordTrace adds a connection's time as a whole to Latency, and its
// bytes and phases.
func (t *Tally) RecordTrace(tr netx.Trace) {
	t.Latency.Record(tr.Total())
	t.RecordPhases(tr)
}

// RecordPhases adds a connection's bytes and phases, not its time as a
// whole (its operations are timed on their own).
func (t *Tally) RecordPhases(tr netx.Trace) {
	t.Sent += tr.Sent
	t.Received += tr.Received
	for _, p := range tr.Phases {
		t.RecordPhase(p.Name, p.Duration, p.RoundTrips)
	}
}

// RecordPhase adds one sample of a phase: its time and round trips.
func (t *Tally) RecordPhase(name string, d time.Duration, roundTrips int) {
	p := t.phase(name)
	p.rec.Record(d)
	if p.samples == 0 || roundTrips < p.rtMin {
		p.rtMin = roundTrips
	}
	p.rtMax = max(p.rtMax, roundTrips)
	p.rtSum += int64(roundTrips)
	p.samples++
}

func (t *Tally) phase(name string) *phase {
	for i := range t.phases {
		if t.phases[i].name == name {
			return &t.phases[i]
		}
	}
	t.phases = append(t.phases, phase{name: name, rec: stats.NewRecorder()})
	return &t.phases[len(t.phases)-1]
}

// Merge adds o's counts to t's; phases new to t come after t's own.
func (t *Tally) Merge(o *Tally) {
	t.Latency.Merge(o.Latency)
	t.Ops += o.Ops
	t.Conns += o.Conns
	t.Sent += o.Sent
	t.Received += o.Received
	for _, op := range o.phases {
		p := t.phase(op.name)
		if p.samples == 0 || (op.samples > 0 && op.rtMin < p.rtMin) {
			p.rtMin = op.rtMin
		}
		p.rtMax = max(p.rtMax, op.rtMax)
		p.rtSum += op.rtSum
		p.samples += op.samples
		p.rec.Merge(op.rec)
	}
}

// Fill writes the counts into a trial: Ops, Conns, bytes, Latency and
// Phases (appended, in the order they were first recorded).
func (t *Tally) Fill(tr *result.Trial) {
	tr.Ops, tr.Conns = t.Ops, t.Conns
	tr.BytesSent, tr.BytesReceived = t.Sent, t.Received
	tr.Latency = result.Hist(t.Latency.Hist())
	for _, p := range t.phases {
		rt := result.RoundTrips{Min: p.rtMin, Max: p.rtMax}
		if p.samples > 0 {
			rt.Mean = float64(p.rtSum) / float64(p.samples)
		}
		tr.Phases = append(tr.Phases, result.Phase{Name: p.name, RoundTrips: rt, Latency: result.Hist(p.rec.Hist())})
	}
}
