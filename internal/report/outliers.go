package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// Outliers: a trial, or one connection in it, so far from the rest that
// a mean over it says more about a stall on a loaded machine (a fork, a
// page-in, a scheduler hiccup) than about the variant. The findings leave
// such trials out of the comparisons of variants (contrasts, the paired
// phase of the group rule, the ranking of paths), with the round paired to
// them, and name them in a caveat; the tables keep every trial.
//
// The rules, both robust to the outlier itself:
//   - a trial is an outlier when its main figure (connections/s, requests/s,
//     MB/s) lies more than outlierMADs scaled median absolute deviations
//     (1.4826·MAD, at least 5% of the median) from the median of its
//     cell's trials; this takes outlierTrials trials or more, since the
//     MAD of fewer says little;
//   - a connection (an operation) is an outlier when it took more than
//     outlierSlowest times the trial's median and alone made up more
//     than outlierShare of the trial's total time: without it, the mean
//     would drop by that share. Its trial is left out.

const (
	outlierMADs    = 5
	outlierTrials  = 5
	outlierSlowest = 10
	outlierShare   = 0.25
)

// Outlier is a trial of a cell that the findings leave out. Conn is set
// for one slow operation (Value its time, ms, Typical the trial's median);
// else the trial's main figure was off (Value, Typical the cell's median,
// in Unit).
type Outlier struct {
	Experiment     plan.Experiment
	Variant        string
	Concurrency    int
	Round          int
	Conn           bool
	Value, Typical float64
	Unit           string
}

// Outliers lists what the findings leave out as outliers.
type Outliers struct{ List []Outlier }

func (Outliers) isFact() {}

// outliers are the outlying trials of a cell, by the rules above.
func (ix *index) outliers(k cellKey) []Outlier {
	if k.exp == plan.Wire || k.exp == plan.Storm {
		return nil // a capture is what it is; a storm has its own figure
	}
	ts := ix.trials[k]
	var out []Outlier
	metric := ix.metric(k.exp)
	var xs []float64
	for _, t := range ts {
		xs = append(xs, metric(t))
	}
	med := median(xs)
	var dev []float64
	for _, x := range xs {
		dev = append(dev, math.Abs(x-med))
	}
	scale := max(1.4826*median(dev), 0.05*math.Abs(med))
	for i, t := range ts {
		o := Outlier{Experiment: k.exp, Variant: k.variant, Concurrency: k.c, Round: t.Round}
		h := t.Latency
		switch {
		case len(ts) >= outlierTrials && math.Abs(xs[i]-med) > outlierMADs*scale:
			o.Value, o.Typical, o.Unit = xs[i], med, ix.metricName(k.exp)
		case h.Count > 1 && h.P50 > 0 && h.Max > outlierSlowest*h.P50 && (h.Max-h.P50)/float64(h.Count) > outlierShare*h.Mean:
			o.Conn, o.Value, o.Typical, o.Unit = true, h.Max, h.P50, "ms"
		default:
			continue
		}
		out = append(out, o)
	}
	return out
}

// median of xs (NaN for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// outlierRounds are the rounds of the cells of a and b at c in e that
// hold an outlier: a contrast of a and b leaves them out.
func (ix *index) outlierRounds(e plan.Experiment, c int, names ...string) map[int]bool {
	out := map[int]bool{}
	for _, n := range names {
		for _, o := range ix.outliers(cellKey{e, n, c}) {
			out[o.Round] = true
		}
	}
	return out
}

// pairedTrials are the trials of from and to at c in e, without the
// rounds that hold an outlier in either.
func (ix *index) pairedTrials(e plan.Experiment, c int, from, to string) (a, b []result.Trial) {
	out := ix.outlierRounds(e, c, from, to)
	return dropRounds(ix.trials[cellKey{e, from, c}], out), dropRounds(ix.trials[cellKey{e, to, c}], out)
}

// dropRounds is ts without the trials of rounds.
func dropRounds(ts []result.Trial, rounds map[int]bool) []result.Trial {
	if len(rounds) == 0 {
		return ts
	}
	return slices.DeleteFunc(slices.Clone(ts), func(t result.Trial) bool { return rounds[t.Round] })
}

// outlierCaveat names every outlier the findings leave out.
func (r *rules) outlierCaveat() {
	var f Outliers
	for _, e := range r.ix.experiments {
		for _, k := range r.ix.cells(e) {
			f.List = append(f.List, r.ix.outliers(k)...)
		}
	}
	if len(f.List) > 0 {
		slices.SortStableFunc(f.List, func(a, b Outlier) int { return cmp.Compare(a.Round, b.Round) })
		r.add(KindCaveat, TopicRun, f)
	}
}

// outlierWords says an Outliers caveat.
func outlierWords(f Outliers) string {
	var parts []string
	for _, o := range f.List {
		where := fmt.Sprintf("round %d of %s %s", o.Round+1, o.Variant, plan.Label(o.Concurrency))
		if o.Conn {
			parts = append(parts, fmt.Sprintf("%s, where one connection took %s against a median of %s", where, msWords(o.Value), msWords(o.Typical)))
		} else {
			parts = append(parts, fmt.Sprintf("%s, at %s %s against a median of %s over its trials", where, num(o.Value, sig3), o.Unit, num(o.Typical, sig3)))
		}
	}
	return fmt.Sprintf("Outliers, left out of the comparisons below with the rounds paired to them (the tables keep them): %s. A stall on a loaded machine (a fork, a page-in, the scheduler) looks like this; it is not what the variant costs.", listWords(parts))
}
