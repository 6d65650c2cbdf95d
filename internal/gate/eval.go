package gate

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/report"
	"github.com/tlsbench/tlsbench/internal/result"
)

// figure is what one cell says of a gate's quantity: its point estimate
// and the half-width of its 95% interval (NaN: none), which interval that
// is (result.Gate's Interval) and over how many rounds or trials.
type figure struct {
	cell       string
	mean, ci95 float64
	interval   string
	n          int
}

// Evaluate judges gates (checked by Check) on a run's quantities
// (report.Model.Quantities), one verdict per gate. A gate that no cell has
// a figure for fails: a quantity the run did not measure never passes.
func Evaluate(gates []Gate, qs []report.Quantity) []result.Gate {
	out := make([]result.Gate, len(gates))
	for i, g := range gates {
		out[i] = judge(g, g.figures(qs))
	}
	return out
}

// figures are the figures of g's quantity in the cells g selects.
func (g Gate) figures(qs []report.Quantity) []figure {
	var figs []figure
	for _, q := range qs {
		if q.Experiment != g.Experiment || q.Name != g.Quantity || !g.selects(q.Variant) {
			continue
		}
		f := figure{cell: cellName(q), mean: q.Mean, ci95: q.CI95, interval: "trials", n: q.Trials}
		switch {
		case g.Overhead:
			if q.Overhead.N == 0 { // the baseline, or no round paired
				continue
			}
			f.mean, f.ci95, f.interval, f.n = q.Overhead.Pct, q.Overhead.CI95, "paired", q.Overhead.N
		case q.Experiment == plan.Advise && strings.HasPrefix(q.Name, "saved."):
			f.interval, f.n = "prediction", 0
		}
		figs = append(figs, f)
	}
	return figs
}

// CannotPass is the first of gates that can no longer pass on qs, the
// quantities of the trials so far, with its verdict in the cell that
// shows it; ok is false while every gate still can. A gate on the point
// estimate can no longer pass once the estimate fails it (as k6's
// abortOnFail: more trials could still move a mean, never a round trip
// count); a @ci95 gate once its whole interval does: its far end alone
// is no evidence, as a few rounds give a wide interval that more rounds
// narrow. Gates without a figure yet, and those not Early, wait.
func CannotPass(gates []Gate, qs []report.Quantity) (v result.Gate, ok bool) {
	for _, g := range gates {
		if !g.Early() {
			continue
		}
		for _, f := range g.figures(qs) {
			lo, hi := f.mean, f.mean
			if g.CI95 {
				if math.IsNaN(f.ci95) {
					continue
				}
				lo, hi = f.mean-f.ci95, f.mean+f.ci95
			}
			if !near(g.Op, lo, hi, g.Bound) {
				return judge(g, []figure{f}), true
			}
		}
	}
	return result.Gate{}, false
}

// Early reports whether g can be decided before its run ends, on the
// trials so far: not an advice's error, which compares the prediction
// with the saving over every trial of the replay, nor a rate search's
// capacity, which the search settles at its end.
func (g Gate) Early() bool {
	return !strings.HasPrefix(g.Quantity, "error_pct.") && g.Quantity != "capacity"
}

// selects reports whether g judges the variant named id: [*] every one
// (an advice's change the gate's list does not know yet too).
func (g Gate) selects(id string) bool {
	return g.Variant == "*" || slices.Contains(g.Variants, id)
}

// cellName names a quantity's cell as verdicts show it: "connect tls1.3
// c=4", "pool tls1.3 at 300/s" (an open loop's offered rate), "connect
// tls1.3 (rate search)", or the name the quantity gives its cell.
func cellName(q report.Quantity) string {
	switch {
	case q.Cell != "":
		return q.Cell
	case q.Name == "capacity":
		return fmt.Sprintf("%s %s (rate search)", q.Experiment, q.Variant)
	case q.Rate > 0:
		return fmt.Sprintf("%s %s at %g/s", q.Experiment, q.Variant, q.Rate)
	}
	return fmt.Sprintf("%s %s c=%d", q.Experiment, q.Variant, q.Concurrency)
}

// EvaluateCompare judges compare: gates (checked by CheckCompare) on the
// Welch changes of a comparison.
func EvaluateCompare(gates []Gate, c *report.Comparison) []result.Gate {
	out := make([]result.Gate, len(gates))
	for i, g := range gates {
		var figs []figure
		for _, t := range c.Tables {
			if t.Experiment != g.Experiment || t.Quantity != g.Quantity {
				continue
			}
			for _, r := range t.Rows {
				if r.Only != "" || !g.selects(r.Variant) || math.IsNaN(r.Delta.Pct) {
					continue
				}
				figs = append(figs, figure{cell: fmt.Sprintf("%s %s c=%d", t.Experiment, r.Variant, r.Concurrency), mean: r.Delta.Pct, ci95: r.Delta.CI95,
					interval: "welch", n: r.Delta.N})
			}
		}
		out[i] = judge(g, figs)
	}
	return out
}

// judge is g's verdict over its cells' figures: it holds when it holds in
// every cell. The verdict shows the first cell that failed, else the one
// nearest its bound.
func judge(g Gate, figs []figure) result.Gate {
	v := result.Gate{Name: g.Name, Expr: g.Expr, Bound: g.Bound, Unit: g.unitOf(), Cells: len(figs), Pass: true}
	if len(figs) == 0 {
		v.Pass = false
		what := g.Quantity
		if g.Overhead {
			what = "overhead." + what + " (a change against the baseline)"
		}
		v.Why = fmt.Sprintf("no cell of %s %s measured %s", g.Experiment, quoted(g.Variants), what)
		return v
	}
	margin := math.Inf(1)
	for _, f := range figs {
		lo, hi := f.mean, f.mean
		if g.CI95 {
			if math.IsNaN(f.ci95) {
				v.Pass, v.Cell = false, f.cell
				v.Why = f.cell + ": no 95% interval (one trial, or one pair of trials)"
				return v
			}
			lo, hi = f.mean-f.ci95, f.mean+f.ci95
		}
		value, ok := far(g.Op, lo, hi, g.Bound)
		m := math.Abs(value - g.Bound)
		if !ok || m < margin {
			margin = m
			v.Cell, v.Value, v.Mean, v.Low, v.High = f.cell, value, f.mean, lo, hi
			if g.CI95 {
				v.Interval, v.Rounds = f.interval, f.n
			}
		}
		if !ok {
			v.Pass = false
			return v
		}
	}
	return v
}

// far is the end of [lo, hi] that decides op against bound, and whether
// it holds: the upper end for < and <=, the lower for > and >=; == needs
// both ends at the bound.
func far(op string, lo, hi, bound float64) (float64, bool) {
	switch op {
	case "<":
		return hi, hi < bound
	case "<=":
		return hi, hi <= bound
	case ">":
		return lo, lo > bound
	case ">=":
		return lo, lo >= bound
	}
	if lo != bound {
		return lo, false
	}
	return hi, hi == bound
}

// near reports whether the end of [lo, hi] nearest to passing meets op
// against bound: the lower end for < and <=, the upper for > and >=; for
// == whether the bound is within [lo, hi].
func near(op string, lo, hi, bound float64) bool {
	switch op {
	case "<":
		return lo < bound
	case "<=":
		return lo <= bound
	case ">":
		return hi > bound
	case ">=":
		return hi >= bound
	}
	return lo <= bound && bound <= hi
}

// Failed counts the verdicts that failed.
func Failed(vs []result.Gate) int {
	n := 0
	for _, v := range vs {
		if !v.Pass {
			n++
		}
	}
	return n
}
