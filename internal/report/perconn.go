package report

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/report/chart"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// Work per connection (connect --per-conn N): each new connection ran N
// operations before it closed. Trials of N > 1 are kept apart from the
// connect cells (whose figures are one operation per connection) and
// reported here: tables by N, the break-even finding and its chart.

// perConnBudget is the share of time per operation TLS's setup may add
// for the break-even finding: beyond it, pooling is worth its trouble.
const perConnBudget = 10.0

// perConnKey names the trials of one variant at concurrency c and N
// operations per connection.
type perConnKey struct {
	variant string
	c, n    int
}

// perConnIndex holds the connect trials with more than one operation per
// connection.
type perConnIndex struct {
	trials map[perConnKey][]result.Trial // by round
	ns     []int                         // N > 1 measured, ascending
	conc   []int                         // concurrencies they ran at, ascending
}

// perConnTrial takes t into the index of work per connection if it ran
// more than one operation per connection, and reports whether it did.
func (ix *index) perConnTrial(t result.Trial) bool {
	if t.PerConn <= 1 {
		return false
	}
	pc := &ix.pc
	if pc.trials == nil {
		pc.trials = map[perConnKey][]result.Trial{}
	}
	k := perConnKey{t.Variant, t.Concurrency, t.PerConn}
	pc.trials[k] = append(pc.trials[k], t)
	pc.ns = addNew(pc.ns, t.PerConn)
	pc.conc = addNew(pc.conc, t.Concurrency)
	slices.Sort(pc.ns)
	slices.Sort(pc.conc)
	ix.variants = addNew(ix.variants, t.Variant)
	return true
}

// perConnMeasured reports whether name has trials of N > 1 operations per
// connection.
func (ix *index) perConnMeasured(name string) bool {
	for k := range ix.pc.trials {
		if k.variant == name {
			return true
		}
	}
	return false
}

// perConnNs lists the N of a per-conn table at c, ascending: 1 (the connect
// cells) where measured at c, then every N > 1.
func (ix *index) perConnNs(c int) []int {
	var out []int
	if slices.Contains(ix.conc[plan.Connect], c) {
		out = append(out, 1)
	}
	return append(out, ix.pc.ns...)
}

// perConnCell is the trials of name at c with n operations per connection,
// sorted by round.
func (ix *index) perConnCell(name string, c, n int) []result.Trial {
	if n == 1 {
		return ix.trials[cellKey{plan.Connect, name, c}]
	}
	ts := ix.pc.trials[perConnKey{name, c, n}]
	slices.SortStableFunc(ts, func(a, b result.Trial) int { return a.Round - b.Round })
	return ts
}

// msPerOp is the time an operation took with its share of its
// connection's setup and close: c workers' time over the operations done.
func msPerOp(t result.Trial) float64 {
	if t.Ops <= 0 || t.Elapsed <= 0 {
		return math.NaN()
	}
	return float64(t.Concurrency) * t.Elapsed.Seconds() * 1000 / float64(t.Ops)
}

func connRate(t result.Trial) float64 {
	if t.Elapsed <= 0 {
		return 0
	}
	return float64(t.Conns) / t.Elapsed.Seconds()
}

// perConnDelta is name's time per operation against from's at c and n,
// trials paired by round.
func (ix *index) perConnDelta(from, name string, c, n int) stats.Delta {
	base := map[int]float64{}
	for _, t := range ix.perConnCell(from, c, n) {
		base[t.Round] = msPerOp(t)
	}
	var xs, ys []float64
	for _, t := range ix.perConnCell(name, c, n) {
		if x, ok := base[t.Round]; ok && !math.IsNaN(x) && !math.IsNaN(msPerOp(t)) {
			xs, ys = append(xs, x), append(ys, msPerOp(t))
		}
	}
	return stats.Paired(xs, ys)
}

// perConnTables writes, per concurrency, the figures of each N: rates,
// time per operation against the baseline, the operations' latency and
// CPU, then each N's connection phases.
func (ix *index) perConnTables(b *body) {
	if len(ix.pc.ns) == 0 {
		return
	}
	for _, c := range ix.pc.conc {
		ns := ix.perConnNs(c)
		server := slices.ContainsFunc(ix.r.Trials, func(t result.Trial) bool { return t.ServerCPU > 0 })
		t := Table{
			Title: fmt.Sprintf("connect %s by operations per connection (--per-conn), mean (stddev) over %s", plan.Label(c), ix.perConnTrialCount(c, ns)),
			Left:  2,
			Header: []string{"per conn", "variant", "conn/s", "ops/s", "ms/op", "vs baseline",
				"op p50", "op p95", "client µs/op"},
		}
		if server {
			t.Header = append(t.Header, "server µs/op", "server µs/conn")
		}
		for _, n := range ns {
			label := fmt.Sprint(n)
			for _, name := range ix.variants {
				ts := ix.perConnCell(name, c, n)
				if len(ts) == 0 {
					continue
				}
				vs := textCell("baseline")
				if base := ix.baselineOf(name); base != name {
					vs = deltaCell(ix.perConnDelta(base, name, c, n))
				}
				var ops, conns int64
				var client, srv time.Duration
				for _, tr := range ts {
					ops, conns = ops+tr.Ops, conns+tr.Conns
					client, srv = client+tr.ClientCPU, srv+tr.ServerCPU
				}
				row := []Cell{textCell(label), textCell(name),
					meanCell(collect(ts, connRate), rate, "connections/s"), meanCell(collect(ts, result.Trial.Throughput), rate, "operations/s"),
					meanCell(collect(ts, msPerOp), millis, "ms/op"), vs,
					latencyCell(ts, func(h result.Hist) float64 { return h.P50 }), latencyCell(ts, func(h result.Hist) float64 { return h.P95 }),
					perOp(client, ops)}
				if server {
					row = append(row, perOp(srv, ops), perOp(srv, conns).unit("µs/conn"))
				}
				t.addCells(row...)
				label = ""
			}
		}
		t.Foot = []string{
			"ms/op: each operation's share of the workers' time, its connection's setup and close included; vs baseline: that time, paired by round (± 95% CI, * when it excludes 0)",
			"op p50, op p95: per-conn 1, the whole connection (dial to close); more, each operation on its open connection",
		}
		b.table(t)
		for _, n := range ix.pc.ns {
			ix.perConnPhases(b, c, n)
		}
	}
}

// perConnTrialCount is trialCount for the cells of a per-conn table.
func (ix *index) perConnTrialCount(c int, ns []int) string {
	lo, hi := math.MaxInt, 0
	for _, n := range ns {
		for _, name := range ix.variants {
			if k := len(ix.perConnCell(name, c, n)); k > 0 {
				lo, hi = min(lo, k), max(hi, k)
			}
		}
	}
	if lo >= hi {
		return plural(hi, "trial")
	}
	return fmt.Sprintf("%d-%d trials", lo, hi)
}

// perConnPhases writes where the connections of N operations spent their
// time: setup and the first operation as with one, then the other
// operations and the close.
func (ix *index) perConnPhases(b *body, c, n int) {
	var names []string
	for _, name := range ix.variants {
		for _, t := range ix.perConnCell(name, c, n) {
			names = mergeOrder(names, t.Phases)
		}
	}
	t := Table{
		Title: fmt.Sprintf("connect %s per-conn %d: phases of a connection, ms, mean over %s [round trips]", plan.Label(c), n, ix.perConnTrialCount(c, []int{n})),
		Left:  1,
	}
	t.Header = append([]string{"variant"}, names...)
	for _, name := range ix.variants {
		ts := withLatency(ix.perConnCell(name, c, n))
		if len(ts) == 0 {
			continue
		}
		row := []Cell{textCell(name)}
		for _, p := range names {
			row = append(row, phaseCell(ts, p))
		}
		t.addCells(row...)
	}
	b.table(t)
}

// PerConnPoint is TLS's time per operation against plain's at N
// operations per connection, in percent with its 95% interval.
type PerConnPoint struct {
	N     int
	Delta stats.Delta
}

// below reports whether the point's interval lies below the budget.
func (p PerConnPoint) below() bool {
	return p.Delta.N >= 2 && !math.IsNaN(p.Delta.CI95) && p.Delta.Pct+p.Delta.CI95 < perConnBudget
}

// PerConnBreakEven is a TLS variant against its plain sibling (Plain) at
// Concurrency over operations per connection (At, ascending N): From is
// the least N from which on every N measured kept TLS's extra time per
// operation below perConnBudget percent (its 95% interval included); 0 if
// none did.
type PerConnBreakEven struct {
	Variant, Plain string
	Concurrency    int
	At             []PerConnPoint
	From           int
}

func (PerConnBreakEven) isFact() {}

// perConnOverheads is what TLS adds per operation at each N, per TLS
// variant with a plain sibling, at the lowest concurrency of the
// per-conn trials: the figures of the break-even finding and its chart.
func (ix *index) perConnOverheads() []PerConnBreakEven {
	if len(ix.pc.conc) == 0 {
		return nil
	}
	c := ix.pc.conc[0]
	var out []PerConnBreakEven
	for _, name := range ix.variants {
		info, ok := ix.info[name]
		p := ix.plainOf(name)
		if !ok || info.Plain() || p == "" {
			continue
		}
		f := PerConnBreakEven{Variant: name, Plain: p, Concurrency: c}
		for _, n := range ix.perConnNs(c) {
			if d := ix.perConnDelta(p, name, c, n); d.N > 0 {
				f.At = append(f.At, PerConnPoint{N: n, Delta: d})
			}
		}
		if len(f.At) < 2 {
			continue
		}
		for i := len(f.At) - 1; i >= 0 && f.At[i].below(); i-- {
			f.From = f.At[i].N
		}
		out = append(out, f)
	}
	return out
}

// perConn: from how many operations per connection on TLS's setup adds
// less than perConnBudget percent to each operation.
func (r *rules) perConn() {
	for _, f := range r.ix.perConnOverheads() {
		r.add(KindFinding, TopicPerConn, f)
	}
}

// perConnWords says a PerConnBreakEven.
func perConnWords(f PerConnBreakEven) string {
	var parts []string
	single := true
	for _, p := range f.At {
		parts = append(parts, fmt.Sprintf("%s at %d", pctCI(p.Delta), p.N))
		single = single && p.Delta.N == 1
	}
	if single {
		return fmt.Sprintf("With %s, one trial each, TLS changed the time per operation against %s by %s operations per connection: one trial gives no interval, so this run cannot tell from how many operations per connection on TLS's setup stops mattering.",
			f.Variant, f.Plain, strings.Join(parts, ", "))
	}
	figures := fmt.Sprintf("time per operation against %s, 95%% CI: %s", f.Plain, strings.Join(parts, ", "))
	last := f.At[len(f.At)-1]
	switch {
	case f.From == f.At[0].N:
		return fmt.Sprintf("With %s, TLS adds less than %.0f%% to the time per operation already at %s per connection (%s): pooling saves little here.",
			f.Variant, perConnBudget, plural(f.From, "operation"), figures)
	case f.From > 0:
		return fmt.Sprintf("From %s per connection on, TLS's setup, shared over them, adds less than %.0f%% per operation with %s (%s); with fewer, pool connections or keep them alive.",
			plural(f.From, "operation"), perConnBudget, f.Variant, figures)
	}
	return fmt.Sprintf("Even at %s per connection, TLS with %s is not shown to add less than %.0f%% to the time per operation (%s): run more operations on each connection or pool them; what remains with many is TLS's cost on an open connection, which pooling keeps (the pool experiment measures it).",
		plural(last.N, "operation"), f.Variant, perConnBudget, figures)
}

// perConnChart draws TLS's extra time per operation against the
// operations per connection, one line per TLS variant, with the budget of
// the break-even finding.
func (b *figurer) perConnChart() {
	fs := b.ix.perConnOverheads()
	if len(fs) == 0 {
		return
	}
	var series []chart.Series
	lo, hi, top, bottom := math.Inf(1), 0.0, perConnBudget, 0.0
	for _, f := range fs {
		var pts []chart.Point
		for _, at := range f.At {
			d := at.Delta
			ci := d.CI95
			if math.IsNaN(ci) {
				ci = 0
			}
			if !finite(d.Pct, d.Pct+ci) {
				continue
			}
			pts = append(pts, chart.Point{X: float64(at.N), Y: d.Pct, Err: ci})
			lo, hi = min(lo, float64(at.N)), max(hi, float64(at.N))
			top, bottom = max(top, d.Pct+ci), min(bottom, d.Pct-ci)
		}
		series = b.addSeries(series, f.Variant, pts)
	}
	if len(series) == 0 {
		return
	}
	b.add(chart.Figure{
		ID:    fmt.Sprintf("connect-per-conn-c%d", fs[0].Concurrency),
		Title: fmt.Sprintf("connect %s: TLS overhead per operation by operations per connection", plan.Label(fs[0].Concurrency)),
		Caption: fmt.Sprintf("Points: TLS's time per operation (its connection's setup and close shared over its operations) against plain's, paired by round; error bars: 95%% confidence interval; dashed: the %.0f%% of the break-even finding.",
			perConnBudget),
		Kind:   chart.Lines,
		X:      chart.Axis{Label: "operations per connection (--per-conn)", Log: true, Min: chart.At(lo / 1.5), Max: chart.At(hi * 1.5)},
		Y:      chart.Axis{Label: "time per operation vs plain, %", Min: chart.At(min(0, bottom*1.08)), Max: chart.At(top * 1.08)},
		Series: series,
		Guides: []chart.Guide{{Name: fmt.Sprintf("+%.0f%%", perConnBudget), Y: perConnBudget, From: lo / 1.5, To: hi * 1.5}},
	})
}
