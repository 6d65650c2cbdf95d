package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// cellKey names the trials behind one cell of the tables: one experiment,
// variant and concurrency (a CellSummary summarizes them).
type cellKey struct {
	exp     plan.Experiment
	variant string
	c       int
}

// index is a result's trials by cellKey, and the orders the tables list
// experiments, variants and concurrencies in.
type index struct {
	r           *result.Result
	experiments []plan.Experiment // connect, pool, then any other, as measured
	variants    []string          // r.Variants order, then variants only trials name
	info        map[string]plan.Variant
	baseline    string
	conc        map[plan.Experiment][]int
	trials      map[cellKey][]result.Trial // by round
	pc          perConnIndex               // connect --per-conn N > 1 (perconn.go)
	rt          rateIndex                  // trials at an arrival rate (rate.go)
	stacks      []string                   // client stacks compared (clients.go), nil for Go's alone
}

func newIndex(r *result.Result) *index {
	v := &index{
		r:      r,
		info:   map[string]plan.Variant{},
		conc:   map[plan.Experiment][]int{},
		trials: map[cellKey][]result.Trial{},
	}
	for _, pv := range r.Variants {
		v.variants = append(v.variants, pv.ID)
		v.info[pv.ID] = pv
		if pv.Baseline && v.baseline == "" {
			v.baseline = pv.ID
		}
	}
	for _, t := range r.Trials {
		if t.Experiment == plan.Replicate && t.Open != nil {
			continue // replicate_rate.go's: a search's steps are no cells
		}
		if v.rateTrial(t) || v.perConnTrial(t) {
			continue
		}
		k := cellKey{t.Experiment, t.Variant, t.Concurrency}
		v.trials[k] = append(v.trials[k], t)
		v.experiments = addNew(v.experiments, t.Experiment)
		v.conc[t.Experiment] = addNew(v.conc[t.Experiment], t.Concurrency)
		v.variants = addNew(v.variants, t.Variant)
	}
	if v.baseline == "" && len(v.variants) > 0 {
		v.baseline = v.variants[0]
	}
	for _, ts := range v.trials {
		slices.SortStableFunc(ts, func(a, b result.Trial) int { return cmp.Compare(a.Round, b.Round) })
	}
	for _, cs := range v.conc {
		slices.Sort(cs)
	}
	slices.SortFunc(v.experiments, expOrder)
	v.stacks = v.clientStacks()
	return v
}

// cells lists the cells of an experiment that hold trials, column by column.
func (ix *index) cells(e plan.Experiment) []cellKey {
	var out []cellKey
	for _, c := range ix.conc[e] {
		for _, name := range ix.variants {
			if k := (cellKey{e, name, c}); len(ix.trials[k]) > 0 {
				out = append(out, k)
			}
		}
	}
	return out
}

// trialCount says over how many trials the cells of an experiment's columns
// cs were averaged: "3 trials", or "1-3 trials" after an interrupted run.
func (ix *index) trialCount(e plan.Experiment, cs ...int) string {
	lo, hi := math.MaxInt, 0
	for _, c := range cs {
		for _, name := range ix.variants {
			if n := len(ix.trials[cellKey{e, name, c}]); n > 0 {
				lo, hi = min(lo, n), max(hi, n)
			}
		}
	}
	if lo >= hi {
		return plural(hi, "trial")
	}
	return fmt.Sprintf("%d-%d trials", lo, hi)
}

// unit names what an experiment's main table counts, and metric computes
// it from a trial: the seed's figures (connections/s, queries/s) and MB/s
// for streams.
func (ix *index) unit(e plan.Experiment) string {
	switch {
	case e == plan.Connect:
		return "connections/s"
	case e == plan.Stream:
		return "MB/s received"
	case e == plan.Storm:
		return "clients back/s (clients over the time until the last was back)"
	case e == plan.Wire:
		return "connections/s (over the span of the capture's connections)"
	case e == plan.Replicate:
		return "writes/s"
	case ix.r.Spec.Workload == "read-only":
		return "queries/s (16 per read-only transaction, as sysbench counts)"
	case ix.r.Spec.Workload == "point-select":
		return "queries/s"
	}
	return ix.opsUnit()
}

// opsUnit names a trial's operations per second where they are not SQL
// queries, as the docs name them: passes through a pgbench script,
// operations on Redis (a GET, or the --command pipeline) and MongoDB (a
// find), requests on HTTP.
func (ix *index) opsUnit() string {
	s := ix.r.Spec
	switch s.Workload {
	case "script":
		return "passes/s"
	case plan.WorkloadCommand, plan.WorkloadFilter, "find-one-id", "find-one":
		return "operations/s"
	}
	if t, err := plan.ParseTarget(s.Target); err == nil && t.Engine() == "redis" {
		return "operations/s"
	}
	return "requests/s"
}

func (ix *index) metric(e plan.Experiment) func(result.Trial) float64 {
	switch {
	case e == plan.Stream:
		return func(t result.Trial) float64 {
			if t.Elapsed <= 0 {
				return 0
			}
			return float64(t.BytesReceived) / 1e6 / t.Elapsed.Seconds()
		}
	case e == plan.Pool && ix.r.Spec.Workload == "read-only":
		return func(t result.Trial) float64 {
			if t.Elapsed <= 0 {
				return 0
			}
			return float64(t.Queries) / t.Elapsed.Seconds()
		}
	}
	return result.Trial.Throughput
}

// baselineOf is the variant name's changes are measured against: the
// run's baseline, or for a variant of another client stack (--client) the
// plain variant of that stack measured like the baseline (the same server
// and RTT), which the run marks as a baseline too; "" when the run
// measured none, so that no stack is set against another's plain.
func (ix *index) baselineOf(name string) string {
	if isReplicate(ix.r) {
		return replBaseline(ix.r, name)
	}
	info, ok := ix.info[name]
	base, bok := ix.info[ix.baseline]
	if !ok || !bok || info.Client == base.Client {
		return ix.baseline
	}
	for _, n := range ix.variants {
		if o, ok := ix.info[n]; ok && o.Baseline && o.Client == info.Client {
			return n
		}
	}
	return ix.sibling(ix.baseline, func(p *plan.Variant) { p.Client = info.Client })
}

// paired is that change as figures.
func (ix *index) paired(e plan.Experiment, name string, c int) stats.Delta {
	return ix.pairedWith(e, ix.baselineOf(name), name, c)
}

// pairedWith is name's main figure against from's in e at c, trials
// paired by round.
func (ix *index) pairedWith(e plan.Experiment, from, name string, c int) stats.Delta {
	metric := ix.metric(e)
	return ix.pairedBy(e, from, name, c, func(t result.Trial) (float64, bool) { return metric(t), true })
}

// mergeOrder adds the phase names of one trial to names, each new one right
// after the phase that precedes it in the trial, so that plain's tcp, request
// and TLS's tcp, tls-handshake, request merge into tcp, tls-handshake, request.
func mergeOrder(names []string, phases []result.Phase) []string {
	at := 0
	for _, p := range phases {
		if i := slices.Index(names, p.Name); i >= 0 {
			at = i + 1
			continue
		}
		names = slices.Insert(names, at, p.Name)
		at++
	}
	return names
}

// addNew appends x to xs unless xs holds it already: the orders of the
// index are first seen, first listed.
func addNew[T comparable](xs []T, x T) []T {
	if slices.Contains(xs, x) {
		return xs
	}
	return append(xs, x)
}

// collect maps trials to one figure each.
func collect(ts []result.Trial, f func(result.Trial) float64) []float64 {
	xs := make([]float64, len(ts))
	for i, t := range ts {
		xs[i] = f(t)
	}
	return xs
}

// withLatency drops trials that recorded no latency (every operation failed),
// whose zeros would pull the means down.
func withLatency(ts []result.Trial) []result.Trial {
	var out []result.Trial
	for _, t := range ts {
		if t.Latency.Count > 0 {
			out = append(out, t)
		}
	}
	return out
}
