package report

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// Quantity is one figure of one cell as numbers, for machines that judge
// a run (package gate): its mean over the cell's trials with the 95%
// interval, and its change against the variant's baseline, trials paired
// by round as the tables pair them.
type Quantity struct {
	Experiment  plan.Experiment
	Variant     string
	Concurrency int
	// Rate is the offered arrival rate of an open-loop cell (--rate), 0
	// for a closed loop's.
	Rate float64
	// Name is the figure (QuantityNames, or phase.NAME and
	// roundtrips.NAME; ReplicateQuantityNames, AdviseQuantityNames), Unit
	// what Mean counts: "/s", "ms", "us" (CPU per operation or write),
	// "count" (round trips, cores, bytes), "ratio" (failed operations), "%"
	// (an advice's error). Variant is an advice's change ID (AdviceIDs).
	Name, Unit string
	Trials     int
	Mean, CI95 float64 // CI95 is NaN with one trial
	// Overhead is the paired change against Baseline in percent (N is 0
	// on the baseline itself and where no round pairs), without the
	// rounds the findings leave out as outliers, unless that leaves fewer
	// than two pairs (no interval).
	Overhead stats.Delta
	Baseline string
	// Cell names a cell that is no experiment, variant and concurrency
	// ("advise tls1.3 on 10.0.0.5:5432", a replicate's resync); "" for
	// those that are.
	Cell string
}

// figureDef is how a quantity is taken from one trial; ok is false for a
// trial that has no such figure (no latency recorded, no CPU measured).
type figureDef struct {
	name, unit string
	value      func(ix *index, e plan.Experiment) func(result.Trial) (float64, bool)
}

// figureDefs are the quantities every cell may have; phases add
// phase.NAME and roundtrips.NAME.
var figureDefs = []figureDef{
	{"rate", "/s", measures[0].value},
	{"p50", "ms", latency(func(h result.Hist) float64 { return h.P50 })},
	{"p95", "ms", latency(func(h result.Hist) float64 { return h.P95 })},
	{"p99", "ms", latency(func(h result.Hist) float64 { return h.P99 })},
	{"mean", "ms", latency(func(h result.Hist) float64 { return h.Mean })},
	{"client_cpu_per_op", "us", cpuPerOp(func(t result.Trial) time.Duration { return t.ClientCPU })},
	{"server_cpu_per_op", "us", cpuPerOp(func(t result.Trial) time.Duration { return t.ServerCPU })},
	{"error_rate", "ratio", func(*index, plan.Experiment) func(result.Trial) (float64, bool) { return errorRate }},
	{"offered_rate", "/s", openLoop(func(o result.OpenLoop) float64 { return o.Offered })},
	{"achieved_rate", "/s", openLoop(result.OpenLoop.Achieved)},
	{"storm.all_connected", "ms", stormTime(func(s *result.Storm) time.Duration { return s.AllConnected })},
	{"storm.last_first_op", "ms", stormTime(func(s *result.Storm) time.Duration { return s.LastFirstOp })},
}

// QuantityNames are the names of the quantities every cell may have, in
// the order Quantities lists them, and capacity: a rate search's highest
// rate sustained within the SLO, per variant (/s, no interval).
var QuantityNames = func() []string {
	names := make([]string, len(figureDefs))
	for i, d := range figureDefs {
		names[i] = d.name
	}
	return append(names, "capacity")
}()

// QuantityUnit is the unit of experiment e's quantity name, as Quantity
// has it; "" for a name e has none of. A phase's name is not checked.
func QuantityUnit(e plan.Experiment, name string) string {
	switch {
	case e == plan.Replicate && name == resyncQuantity:
		return "/s"
	case e == plan.Replicate:
		for _, q := range replQuantities {
			if q.name == name {
				return q.unit
			}
		}
		return ""
	case e == plan.Advise:
		return adviceUnit(name)
	case name == "capacity":
		return "/s"
	case strings.HasPrefix(name, "phase."):
		return "ms"
	case strings.HasPrefix(name, "roundtrips."):
		return "count"
	}
	for _, d := range figureDefs {
		if d.name == name {
			return d.unit
		}
	}
	return ""
}

// errorRate is a trial's failed operations over all, false for a trial
// that tried none.
func errorRate(t result.Trial) (float64, bool) {
	var failed int64
	for _, n := range t.Errors {
		failed += n
	}
	if t.Ops+failed == 0 {
		return 0, false
	}
	return float64(failed) / float64(t.Ops+failed), true
}

func openLoop(f func(result.OpenLoop) float64) func(*index, plan.Experiment) func(result.Trial) (float64, bool) {
	return func(*index, plan.Experiment) func(result.Trial) (float64, bool) {
		return func(t result.Trial) (float64, bool) {
			if t.Open == nil {
				return 0, false
			}
			return f(*t.Open), true
		}
	}
}

func stormTime(f func(*result.Storm) time.Duration) func(*index, plan.Experiment) func(result.Trial) (float64, bool) {
	return func(*index, plan.Experiment) func(result.Trial) (float64, bool) {
		return func(t result.Trial) (float64, bool) {
			if t.Storm == nil || f(t.Storm) <= 0 {
				return 0, false
			}
			return float64(f(t.Storm)) / float64(time.Millisecond), true
		}
	}
}

// phaseFigure is a phase's mean time (ms) or its round trips in a trial.
func phaseFigure(name string, roundTrips bool) func(*index, plan.Experiment) func(result.Trial) (float64, bool) {
	return func(*index, plan.Experiment) func(result.Trial) (float64, bool) {
		return func(t result.Trial) (float64, bool) {
			for _, p := range t.Phases {
				if p.Name != name || p.Latency.Count == 0 {
					continue
				}
				if roundTrips {
					return p.RoundTrips.Mean, true
				}
				return p.Latency.Mean, true
			}
			return 0, false
		}
	}
}

// Quantities lists the quantities of r's cells, as Build's model has
// them, without the rest of the model: for a check between trials.
func Quantities(r *result.Result) []Quantity { return newIndex(r).quantities() }

// quantities lists every figure of every cell of the run's trials, in the
// order of the tables: experiment, concurrency, variant, then figure; a
// replicate's or an advise's own.
func (ix *index) quantities() []Quantity {
	switch {
	case isReplicate(ix.r):
		return ix.replicateQuantities() // quantities_replicate.go
	case isAdvise(ix.r):
		return ix.adviceQuantities() // quantities_advise.go
	}
	var out []Quantity
	for _, e := range ix.experiments {
		var phases []string
		for _, k := range ix.cells(e) {
			for _, t := range ix.trials[k] {
				phases = mergeOrder(phases, t.Phases)
			}
		}
		defs := slices.Clone(figureDefs)
		for _, p := range phases {
			defs = append(defs, figureDef{"phase." + p, "ms", phaseFigure(p, false)},
				figureDef{"roundtrips." + p, "count", phaseFigure(p, true)})
		}
		for _, k := range ix.cells(e) {
			base := ix.baselineOf(k.variant)
			for _, d := range defs {
				f := d.value(ix, e)
				xs := values(ix.trials[k], f)
				if len(xs) == 0 {
					continue
				}
				s := stats.Summarize(xs)
				q := Quantity{Experiment: e, Variant: k.variant, Concurrency: k.c, Name: d.name, Unit: d.unit,
					Trials: s.N, Mean: s.Mean, CI95: s.CI95, Overhead: stats.Delta{Pct: math.NaN(), CI95: math.NaN()}, Baseline: base}
				if base != "" && base != k.variant {
					// As the findings compare: without the rounds
					// that hold an outlier (outliers.go), unless
					// that leaves no interval (two pairs).
					a, b := ix.pairedTrials(e, k.c, base, k.variant)
					if min(len(a), len(b)) < min(2, len(ix.trials[k])) {
						a, b = ix.trials[cellKey{e, base, k.c}], ix.trials[k]
					}
					q.Overhead = pairTrials(a, b, f)
				}
				out = append(out, q)
			}
		}
	}
	return append(out, ix.openLoopQuantities()...)
}

// openLoopQuantities are the quantities of the open-loop cells (--rate,
// each offered rate a cell; Concurrency is -c) and, for a rate search,
// each variant's capacity.
func (ix *index) openLoopQuantities() []Quantity {
	var out []Quantity
	nan := stats.Delta{Pct: math.NaN(), CI95: math.NaN()}
	for _, c := range ix.rt.cells {
		for _, rate := range ix.rt.rates {
			for _, name := range ix.variants {
				ts := ix.rt.trials[rateKey{c.e, c.n, name, rate}]
				if len(ts) == 0 {
					continue
				}
				base := ix.baselineOf(name)
				for _, d := range figureDefs {
					f := d.value(ix, c.e)
					s := stats.Summarize(values(ts, f))
					if s.N == 0 {
						continue
					}
					q := Quantity{Experiment: c.e, Variant: name, Concurrency: ts[0].Concurrency, Rate: rate, Name: d.name, Unit: d.unit,
						Trials: s.N, Mean: s.Mean, CI95: s.CI95, Overhead: nan, Baseline: base}
					if base != "" && base != name {
						q.Overhead = pairTrials(ix.rt.trials[rateKey{c.e, c.n, base, rate}], ts, f)
					}
					out = append(out, q)
				}
			}
		}
	}
	for _, f := range ix.capacities() {
		for _, at := range f.At {
			out = append(out, Quantity{Experiment: f.exp, Variant: at.Variant, Name: "capacity", Unit: "/s",
				Trials: 1, Mean: at.Rate, CI95: math.NaN(), Overhead: nan, Baseline: ix.baselineOf(at.Variant)})
		}
	}
	return out
}

// pairedBy is name's figure f against from's in e at c, trials paired by
// round (pairedWith for any figure).
func (ix *index) pairedBy(e plan.Experiment, from, name string, c int, f func(result.Trial) (float64, bool)) stats.Delta {
	return pairTrials(ix.trials[cellKey{e, from, c}], ix.trials[cellKey{e, name, c}], f)
}

// pairTrials is figure f of the trials vs against that of the trials
// base of the same rounds.
func pairTrials(base, vs []result.Trial, f func(result.Trial) (float64, bool)) stats.Delta {
	at := map[int]float64{}
	for _, t := range base {
		if x, ok := f(t); ok {
			at[t.Round] = x
		}
	}
	var bs, xs []float64
	for _, t := range vs {
		x, ok := f(t)
		if b, bok := at[t.Round]; ok && bok {
			bs, xs = append(bs, b), append(xs, x)
		}
	}
	return stats.Paired(bs, xs)
}
