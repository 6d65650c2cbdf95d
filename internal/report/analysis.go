package report

import (
	"math"
	"slices"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// The analysis behind the findings: which variants were measured, which
// differ along one field, and what one costs against another, trials
// paired by round.

// Contrast is one variant against another in one experiment and
// concurrency, their trials paired by round.
type Contrast struct {
	Experiment  plan.Experiment
	From, To    string // variants: To is compared with From
	Concurrency int
	// Delta is the change of the experiment's main figure (connections/s,
	// queries/s, MB/s), To against From, with its 95% interval.
	Delta stats.Delta
	// FromMean and ToMean are the means of that figure over the paired
	// trials (NaN without a pair): with one pair, all there is to say.
	FromMean, ToMean float64
	// MS is the change of the mean operation latency; RoundTrips and Local
	// that of the setup round trips and setup time (connect); ClientCPU
	// and ServerCPU that of the CPU per operation, ms. NaN where unknown.
	MS, RoundTrips, Local float64
	ClientCPU, ServerCPU  float64
}

// Measurable reports whether the change's 95% interval excludes 0.
func (c Contrast) Measurable() bool { return c.Delta.N >= 2 && c.Delta.Significant }

// Single reports whether one pair of trials is all the change rests on:
// it has no interval, so it is neither measurable nor shown to be absent.
func (c Contrast) Single() bool { return c.Delta.N == 1 }

// contrast is to against from in e at c, without the rounds that hold an
// outlier in either (outliers.go).
func (ix *index) contrast(e plan.Experiment, from, to string, c int) Contrast {
	a, b := ix.pairedTrials(e, c, from, to)
	out := Contrast{Experiment: e, From: from, To: to, Concurrency: c,
		MS: math.NaN(), RoundTrips: math.NaN(), Local: math.NaN(), ClientCPU: math.NaN(), ServerCPU: math.NaN()}
	metric := ix.metric(e)
	base := map[int]float64{}
	for _, t := range a {
		base[t.Round] = metric(t)
	}
	var xs, ys []float64
	for _, t := range b {
		if x, ok := base[t.Round]; ok {
			xs, ys = append(xs, x), append(ys, metric(t))
		}
	}
	out.Delta = stats.Paired(xs, ys)
	out.FromMean, out.ToMean = stats.Summarize(xs).Mean, stats.Summarize(ys).Mean
	meanLat := func(ts []result.Trial) float64 {
		return stats.Summarize(collect(withLatency(ts), func(t result.Trial) float64 { return t.Latency.Mean })).Mean
	}
	out.MS = meanLat(b) - meanLat(a)
	if sa, sb := setupOf(a), setupOf(b); sa.ok && sb.ok {
		out.RoundTrips, out.Local = sb.rt-sa.rt, sb.ms-sa.ms
	}
	// Round trips are counted, not timed: a round left out as an outlier
	// (a stall) still counted them right.
	if sa, sb := setupOf(ix.trials[cellKey{e, from, c}]), setupOf(ix.trials[cellKey{e, to, c}]); math.IsNaN(out.RoundTrips) && sa.ok && sb.ok {
		out.RoundTrips = sb.rt - sa.rt
	}
	out.ClientCPU = cpuMS(b, clientCPU) - cpuMS(a, clientCPU)
	out.ServerCPU = cpuMS(b, serverCPU) - cpuMS(a, serverCPU)
	return out
}

func clientCPU(t result.Trial) time.Duration { return t.ClientCPU }
func serverCPU(t result.Trial) time.Duration { return t.ServerCPU }

// cpuMS is the CPU per operation over trials, ms; NaN when none was recorded.
func cpuMS(ts []result.Trial, f func(result.Trial) time.Duration) float64 {
	var ops int64
	var cpu time.Duration
	for _, t := range ts {
		ops += t.Ops
		cpu += f(t)
	}
	if ops <= 0 || cpu <= 0 {
		return math.NaN()
	}
	return cpu.Seconds() * 1000 / float64(ops)
}

// meanRate is the mean of e's main figure over the trials of a cell.
func (ix *index) meanRate(e plan.Experiment, name string, c int) float64 {
	return stats.Summarize(collect(ix.trials[cellKey{e, name, c}], ix.metric(e))).Mean
}

// phaseMean is a phase's mean latency over trials, ms (NaN if none has it).
func phaseMean(ts []result.Trial, name string) float64 {
	var ms []float64
	for _, t := range ts {
		if x, ok := phaseMS(t, name); ok {
			ms = append(ms, x)
		}
	}
	return stats.Summarize(ms).Mean
}

// phaseMS is a phase's mean latency in one trial, ms.
func phaseMS(t result.Trial, name string) (float64, bool) {
	for _, p := range t.Phases {
		if p.Name == name && p.Latency.Count > 0 {
			return p.Latency.Mean, true
		}
	}
	return 0, false
}

// margin is how one figure compares with another: measurably more,
// measurably less, or about the same.
type margin int

const (
	about margin = iota
	more
	less
)

// compareRounds compares two figures round by round, as the trials of a
// contrast are paired: f is x−y from the trials of one round, one per
// cell of cells (false where a trial lacks a figure), for each round every
// cell has a trial with latency in. It is more (less) when the 95%
// interval of those differences lies above (below) 0, and about the same
// otherwise: with one round, which has no interval, too. d summarizes
// the differences.
func compareRounds(f func(ts []result.Trial) (float64, bool), cells ...[]result.Trial) (m margin, d stats.Summary) {
	byRound := make([]map[int]result.Trial, len(cells))
	for i, ts := range cells {
		byRound[i] = map[int]result.Trial{}
		for _, t := range withLatency(ts) {
			byRound[i][t.Round] = t
		}
	}
	var ds []float64
	for _, t := range withLatency(cells[0]) {
		ts := []result.Trial{t}
		for _, other := range byRound[1:] {
			if o, ok := other[t.Round]; ok {
				ts = append(ts, o)
			}
		}
		if len(ts) < len(cells) {
			continue
		}
		if x, ok := f(ts); ok {
			ds = append(ds, x)
		}
	}
	d = stats.Summarize(ds)
	switch {
	case d.N >= 2 && d.Mean-d.CI95 > 0:
		return more, d
	case d.N >= 2 && d.Mean+d.CI95 < 0:
		return less, d
	}
	return about, d
}

// resumed counts the connections of a cell and those that resumed a session.
func (ix *index) resumed(k cellKey) (resumed, conns int64) {
	for _, t := range ix.trials[k] {
		resumed, conns = resumed+t.Resumed, conns+t.Conns
	}
	return resumed, conns
}

// measured lists the variants with trials in experiment e, in result order.
func (ix *index) measured(e plan.Experiment) []string {
	var out []string
	for _, name := range ix.variants {
		for _, c := range ix.conc[e] {
			if len(ix.trials[cellKey{e, name, c}]) > 0 {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// measuredAny lists the variants with trials in any experiment.
func (ix *index) measuredAny() []string {
	var out []string
	for _, name := range ix.variants {
		if ix.perConnMeasured(name) || ix.rateMeasured(name) {
			out = append(out, name)
			continue
		}
		for _, e := range ix.experiments {
			if slices.Contains(ix.measured(e), name) {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// comparable reports whether the run measured two variants or more.
func (ix *index) comparable() bool { return len(ix.measuredAny()) > 1 }

// fullTLS lists the TLS variants of e that make full handshakes, at any RTT.
func (ix *index) fullTLS(e plan.Experiment) []string {
	var out []string
	for _, n := range ix.measured(e) {
		if info, ok := ix.info[n]; ok && !info.Plain() && !info.Resume {
			out = append(out, n)
		}
	}
	return out
}

// sibling is the variant measured like name but for what change changes
// ("" when the run has none).
func (ix *index) sibling(name string, change func(*plan.Variant)) string {
	info, ok := ix.info[name]
	if !ok {
		return ""
	}
	want := info
	change(&want)
	want.ID, want.Baseline = "", false
	for _, n := range ix.variants {
		o, ok := ix.info[n]
		if !ok || n == name {
			continue
		}
		o.ID, o.Baseline = "", false
		if o == want {
			return n
		}
	}
	return ""
}

// plainOf is the direct plain variant measured like a TLS or tunnelled one.
func (ix *index) plainOf(name string) string {
	return ix.sibling(name, func(p *plan.Variant) {
		p.TLS, p.Cipher, p.Group, p.Resume, p.Key, p.Tunnel, p.Route = "off", "", "", false, "", "", plan.RouteInfo{}
	})
}

// direct reports whether a variant is plain and untunnelled: the baseline
// kind, drawn in plain's grey.
func direct(info plan.Variant) bool { return info.Plain() && info.Tunnel == "" }

// lowest is the lowest concurrency of e: one connection at a time where the
// run has it, where a connection waits for no other.
func (ix *index) lowest(e plan.Experiment) (int, bool) {
	cs := ix.conc[e]
	if len(cs) == 0 {
		return 0, false
	}
	return cs[0], true
}

// has reports whether all the variants have trials in e at c.
func (ix *index) has(e plan.Experiment, c int, names ...string) bool {
	for _, n := range names {
		if len(ix.trials[cellKey{e, n, c}]) == 0 {
			return false
		}
	}
	return true
}

// pairs contrasts, at the lowest connect concurrency, every measured
// variant that from selects with its sibling along change.
func (ix *index) pairs(from func(plan.Variant) bool, change func(*plan.Variant)) []Contrast {
	c, ok := ix.lowest(plan.Connect)
	if !ok {
		return nil
	}
	var out []Contrast
	for _, n := range ix.measured(plan.Connect) {
		info, ok := ix.info[n]
		if !ok || !from(info) {
			continue
		}
		to := ix.sibling(n, change)
		if to == "" || !ix.has(plan.Connect, c, n, to) {
			continue
		}
		out = append(out, ix.contrast(plan.Connect, n, to, c))
	}
	return out
}

// roundRT keeps a whole number of round trips whole despite float sums.
func roundRT(x float64) float64 {
	if math.Abs(x-math.Round(x)) < 0.05 {
		return math.Round(x)
	}
	return math.Round(x*100) / 100
}

// predictionRT is the round trips of the named prediction.
func predictionRT(ps []Prediction, name string) float64 {
	for _, p := range ps {
		if p.Variant == name {
			return p.RoundTrips
		}
	}
	return math.NaN()
}
