package export

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tlsbench/tlsbench/internal/report"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// The series a run exports, by name as Prometheus spells them (OTLP
// carries the same names). Names lists them for the dashboard's test.
const (
	LatencySeconds  = "tlsbench_latency_seconds"           // histogram: a whole operation
	PhaseSeconds    = "tlsbench_phase_seconds"             // histogram: a phase of a connection
	PhaseRoundTrips = "tlsbench_phase_round_trips"         // gauge: mean over the last trial's connections
	CPUPerOperation = "tlsbench_cpu_seconds_per_operation" // gauge: the last trial's, by side
	Rate            = "tlsbench_rate_per_second"           // gauge: the last trial's, achieved or offered
	Operations      = "tlsbench_operations_total"          // counter
	Errors          = "tlsbench_errors_total"              // counter, by kind
	Trials          = "tlsbench_trials_total"              // counter
	OverheadPercent = "tlsbench_overhead_percent"          // gauge at the end: point and 95% bounds
	GatePassed      = "tlsbench_gate_passed"               // gauge at the end: 1 pass, 0 fail
	Info            = "tlsbench_info"                      // gauge 1 (Prometheus only; OTLP has the resource)
)

// Names are the series the exporters emit; a histogram's Prometheus
// summary adds _count and _sum to its name.
var Names = []string{LatencySeconds, PhaseSeconds, PhaseRoundTrips, CPUPerOperation, Rate, Operations, Errors, Trials, OverheadPercent, GatePassed, Info}

// kind is how a series' values add up.
type kind int

const (
	gauge   kind = iota // the latest value
	counter             // a sum over the run so far
)

// label is one name and value of a series' labels.
type label struct{ name, value string }

// point is a gauge's or counter's value in a snapshot.
type point struct {
	name   string
	kind   kind
	labels []label
	value  float64
}

// hist is a duration histogram's value in a snapshot.
type hist struct {
	name   string
	labels []label
	exp    ExpHist
	// p50, p95 and p99 (seconds) are the HdrHistogram's own, for the
	// Prometheus summary.
	p50, p95, p99 float64
}

// snapshot is every series of a run so far, in a stable order.
type snapshot struct {
	points []point
	hists  []hist
}

// Verdict is one gate's outcome at the end of a run, as the gates of
// the report model give it (package gate).
type Verdict struct {
	Gate string
	Pass bool
}

// state accumulates the trials of a run into its series; one goroutine
// uses it.
type state struct {
	engine string
	points map[string]*point
	recs   map[string]*histRec
}

type histRec struct {
	name   string
	labels []label
	rec    *stats.Recorder
}

func newState(engine string) *state {
	return &state{engine: engine, points: map[string]*point{}, recs: map[string]*histRec{}}
}

func seriesKey(name string, labels []label) string {
	var b strings.Builder
	b.WriteString(name)
	for _, l := range labels {
		fmt.Fprintf(&b, "\x00%s=%s", l.name, l.value)
	}
	return b.String()
}

func (s *state) set(name string, k kind, value float64, labels ...label) {
	key := seriesKey(name, labels)
	p := s.points[key]
	if p == nil {
		p = &point{name: name, kind: k, labels: labels}
		s.points[key] = p
	}
	if k == counter {
		p.value += value
	} else {
		p.value = value
	}
}

// observe adds h's values to the histogram series; a histogram without
// its HDR encoding (a stand-in driver's) adds nothing.
func (s *state) observe(name string, h result.Hist, labels ...label) error {
	if h.Count == 0 || h.HDR == "" {
		return nil
	}
	r, err := stats.DecodeHist(stats.Hist(h))
	if err != nil {
		return err
	}
	key := seriesKey(name, labels)
	hr := s.recs[key]
	if hr == nil {
		s.recs[key] = &histRec{name: name, labels: labels, rec: r}
		return nil
	}
	hr.rec.Merge(r)
	return nil
}

// trial adds a finished trial's figures.
func (s *state) trial(t result.Trial) error {
	base := []label{{"engine", s.engine}, {"experiment", string(t.Experiment)}, {"variant", t.Variant}, {"concurrency", strconv.Itoa(t.Concurrency)}}
	with := func(l ...label) []label { return append(slices.Clone(base), l...) }
	s.set(Trials, counter, 1, base...)
	s.set(Operations, counter, float64(t.Ops), base...)
	for k, n := range t.Errors {
		s.set(Errors, counter, float64(n), with(label{"kind", k})...)
	}
	if t.Elapsed > 0 {
		s.set(Rate, gauge, float64(t.Ops)/t.Elapsed.Seconds(), with(label{"kind", "achieved"})...)
	}
	if t.Open != nil {
		s.set(Rate, gauge, t.Open.Offered, with(label{"kind", "offered"})...)
	}
	if t.Ops > 0 {
		s.set(CPUPerOperation, gauge, t.ClientCPU.Seconds()/float64(t.Ops), with(label{"side", "client"})...)
		if t.ServerCPU > 0 {
			s.set(CPUPerOperation, gauge, t.ServerCPU.Seconds()/float64(t.Ops), with(label{"side", "server"})...)
		}
	}
	if err := s.observe(LatencySeconds, t.Latency, base...); err != nil {
		return err
	}
	for _, p := range t.Phases {
		s.set(PhaseRoundTrips, gauge, p.RoundTrips.Mean, with(label{"phase", p.Name})...)
		if err := s.observe(PhaseSeconds, p.Latency, with(label{"phase", p.Name})...); err != nil {
			return err
		}
	}
	return nil
}

// end adds what only the whole run has: the overhead of each variant
// against the baseline with its 95% interval, from the report model, and
// the gates' verdicts.
func (s *state) end(m *report.Model, gates []Verdict) {
	if m != nil {
		for _, c := range m.Cells {
			pct, ci := float64(c.DeltaPct), float64(c.DeltaCI95)
			if !known(pct) {
				continue // the baseline, or a cell without pairs
			}
			l := []label{{"engine", s.engine}, {"experiment", c.Experiment}, {"variant", c.Variant}, {"concurrency", strconv.Itoa(c.Concurrency)}, {"metric", c.Metric}}
			s.set(OverheadPercent, gauge, pct, append(slices.Clone(l), label{"bound", "point"})...)
			if known(ci) {
				s.set(OverheadPercent, gauge, pct-ci, append(slices.Clone(l), label{"bound", "low"})...)
				s.set(OverheadPercent, gauge, pct+ci, append(slices.Clone(l), label{"bound", "high"})...)
			}
		}
	}
	for _, g := range gates {
		v := 0.0
		if g.Pass {
			v = 1
		}
		s.set(GatePassed, gauge, v, label{"gate", g.Gate})
	}
}

// snapshot is the series so far, each histogram converted once.
func (s *state) snapshot() snapshot {
	var snap snapshot
	for _, k := range sortedKeys(s.points) {
		snap.points = append(snap.points, *s.points[k])
	}
	for _, k := range sortedKeys(s.recs) {
		hr := s.recs[k]
		h := hr.rec.Hist()
		snap.hists = append(snap.hists, hist{name: hr.name, labels: hr.labels, exp: toExp(hr.rec),
			p50: h.P50 / 1e3, p95: h.P95 / 1e3, p99: h.P99 / 1e3})
	}
	return snap
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
