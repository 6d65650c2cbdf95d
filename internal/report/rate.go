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
)

// Open loops (--rate): trials at an arrival rate are kept apart from the
// closed-loop cells (their latency counts from each arrival's intended
// start) and reported here: offered against achieved rate, drops and
// both latencies per rate, the capacity finding of a rate search (the
// knee) and its chart of p99 against the offered rate.

// rateKey names the trials of one variant of experiment e (connect: at n
// operations per connection) at an offered rate.
type rateKey struct {
	e       plan.Experiment
	n       int
	variant string
	rate    float64
}

// rateIndex holds the open-loop trials.
type rateIndex struct {
	trials map[rateKey][]result.Trial
	cells  []rateCell // experiment and per-conn, as measured
	rates  []float64  // offered, ascending
}

type rateCell struct {
	e plan.Experiment
	n int
}

// rateTrial takes t into the open-loop index if it ran at a rate, and
// reports whether it did.
func (ix *index) rateTrial(t result.Trial) bool {
	if t.Open == nil {
		return false
	}
	ri := &ix.rt
	if ri.trials == nil {
		ri.trials = map[rateKey][]result.Trial{}
	}
	n := max(t.PerConn, 1)
	k := rateKey{t.Experiment, n, t.Variant, t.Open.Offered}
	ri.trials[k] = append(ri.trials[k], t)
	ri.cells = addNew(ri.cells, rateCell{t.Experiment, n})
	ri.rates = addNew(ri.rates, t.Open.Offered)
	slices.Sort(ri.rates)
	ix.variants = addNew(ix.variants, t.Variant)
	return true
}

// rateMeasured reports whether name has open-loop trials.
func (ix *index) rateMeasured(name string) bool {
	for k := range ix.rt.trials {
		if k.variant == name {
			return true
		}
	}
	return false
}

// rateTrialsOf lists name's open-loop trials, for the tables of all
// trials (what was negotiated).
func (ix *index) rateTrialsOf(name string) []result.Trial {
	var out []result.Trial
	for _, c := range ix.rt.cells {
		for _, r := range ix.rt.rates {
			out = append(out, ix.rt.trials[rateKey{c.e, c.n, name, r}]...)
		}
	}
	return out
}

// rateSum is a variant's trials at one offered rate, added up: counts
// summed, percentiles their mean over trials.
type rateSum struct {
	trials                    int
	achieved                  float64 // mean
	arrivals, dropped, failed int64
	p50, p99, max, sp50, sp99 float64 // ms, means over trials
	ops                       int64
	server                    time.Duration
	over                      string // why the last trial is not sustained, "" if it is
	overs                     int    // trials not sustained
	// sched sums the schedules of the trials that have one (lagged of
	// them): counts added, lag mean and p99 their means over trials, lag
	// max the largest.
	sched  result.Schedule
	lagged int
}

// verdict says whether the rate was sustained in a search's table: "yes",
// "no: why", or "yes (1 of 2 trials over)" when a step over the bound
// passed on its repeat.
func (s rateSum) verdict() string {
	switch {
	case s.over != "":
		return "no: " + s.over
	case s.overs > 0:
		return fmt.Sprintf("yes (%d of %d trials over)", s.overs, s.trials)
	}
	return "yes"
}

// behind says how the client missed the schedule over these trials, ""
// when it kept it or the trials do not say.
func (s rateSum) behind() string {
	if s.lagged == 0 {
		return ""
	}
	return result.OpenLoop{Schedule: &s.sched}.Behind()
}

func (ix *index) rateSum(k rateKey, slo time.Duration) (rateSum, bool) {
	return sumRates(ix.rt.trials[k], func(t result.Trial) string { return t.OverSLO(slo) })
}

// sumRates adds up open-loop trials of one cell; over says why a trial's
// rate was not sustained, "" when it was.
func sumRates(ts []result.Trial, over func(result.Trial) string) (rateSum, bool) {
	if len(ts) == 0 {
		return rateSum{}, false
	}
	var s rateSum
	for _, t := range ts {
		o := t.Open
		s.trials++
		s.achieved += o.Achieved()
		s.arrivals += o.Arrivals
		s.dropped += o.Dropped
		for _, n := range t.Errors {
			s.failed += n
		}
		s.p50 += t.Latency.P50
		s.p99 += t.Latency.P99
		s.max += t.Latency.Max
		s.sp50 += o.Service.P50
		s.sp99 += o.Service.P99
		s.ops += t.Ops
		s.server += t.ServerCPU
		if s.over = over(t); s.over != "" {
			s.overs++
		}
		if sc := o.Schedule; sc != nil {
			s.lagged++
			s.sched.Due += sc.Due
			s.sched.Started += sc.Started
			s.sched.Late1ms += sc.Late1ms
			s.sched.Late10ms += sc.Late10ms
			s.sched.Lag.Count += sc.Lag.Count
			s.sched.Lag.Mean += sc.Lag.Mean
			s.sched.Lag.P99 += sc.Lag.P99
			s.sched.Lag.Max = max(s.sched.Lag.Max, sc.Lag.Max)
		}
	}
	n := float64(s.trials)
	s.achieved, s.p50, s.p99, s.max, s.sp50, s.sp99 = s.achieved/n, s.p50/n, s.p99/n, s.max/n, s.sp50/n, s.sp99/n
	if s.lagged > 0 {
		s.sched.Lag.Mean /= float64(s.lagged)
		s.sched.Lag.P99 /= float64(s.lagged)
	}
	return s, true
}

// rateTitle names an open-loop table's experiment: "connect", "pool",
// "connect per-conn 5".
func rateTitle(c rateCell) string {
	if c.n > 1 {
		return fmt.Sprintf("%s %s", c.e, plan.PerConnLabel(c.n))
	}
	return string(c.e)
}

// arrivalWord is what an arrival is in experiment e.
func arrivalWord(e plan.Experiment) string {
	if e == plan.Connect {
		return "new connections"
	}
	return "operations"
}

// rateTables writes, per experiment, each offered rate's figures by
// variant: what the client achieved, what was dropped or failed, the
// latency from the intended start and the service time.
func (ix *index) rateTables(b *body) {
	slo := ix.r.Spec.SLO
	for _, c := range ix.rt.cells {
		server := slices.ContainsFunc(ix.r.Trials, func(t result.Trial) bool { return t.ServerCPU > 0 })
		t := Table{
			Title: fmt.Sprintf("%s at arrival rates (--rate, %s arrivals): %s per second offered and achieved, latency in ms", rateTitle(c), ix.r.Spec.Arrivals, arrivalWord(c.e)),
			Left:  2,
			Header: []string{"offered", "variant", "achieved", "dropped", "failed",
				"p50", "p99", "max", "service p50", "service p99"},
		}
		if server {
			t.Header = append(t.Header, "server µs/op")
		}
		if ix.r.Spec.Knee != nil {
			t.Header = append(t.Header, "p99 < "+slo.String())
		}
		for _, rate := range ix.rt.rates {
			label := plan.RateLabel(rate)
			for _, name := range ix.variants {
				s, ok := ix.rateSum(rateKey{c.e, c.n, name, rate}, slo)
				if !ok {
					continue
				}
				ms := func(v float64) Cell { return numCell(v, millis, "ms") }
				row := []Cell{textCell(label), textCell(name), numCell(s.achieved, ratePrecision, "arrivals/s"), shareCount(s.dropped, s.arrivals), shareCount(s.failed, s.arrivals),
					ms(s.p50), ms(s.p99), ms(s.max), ms(s.sp50), ms(s.sp99)}
				if server {
					row = append(row, perOp(s.server, s.ops))
				}
				if ix.r.Spec.Knee != nil {
					row = append(row, textCell(s.verdict()))
				}
				t.addCells(row...)
				label = ""
			}
		}
		t.Foot = []string{
			"achieved: the arrivals that started (reached the server) per second of the trial; below offered when arrivals were dropped or the client could not keep its schedule (a poisson schedule's own count also varies around offered)",
			"dropped: arrivals that found no free slot (--max-inflight), counted, never delayed; p50, p99, max: from each arrival's intended start (coordinated omission corrected); service: from its actual start",
		}
		if s := len(ix.rt.trials[rateKey{c.e, c.n, ix.variants[0], ix.rt.rates[0]}]); s > 1 {
			t.Foot = append(t.Foot, fmt.Sprintf("percentiles: the mean over %s", plural(s, "trial")))
		}
		b.table(t)
		ix.lagTable(b, c)
	}
}

// lagTable writes, for one experiment's rates, how the client kept its
// schedule (pgbench --rate's schedule lag): arrivals due and started, the
// lag's mean, p99 and max, and how many started over 1 ms and 10 ms late.
// Results of a tlsbench that did not measure it have no such table.
func (ix *index) lagTable(b *body, c rateCell) {
	t := Table{
		Title:  fmt.Sprintf("%s at arrival rates: schedule lag (from each arrival's intended start to its start), ms", rateTitle(c)),
		Left:   2,
		Header: []string{"offered", "variant", "due", "started", "lag mean", "lag p99", "lag max", "> 1 ms late", "> 10 ms late"},
	}
	trials := 0
	for _, rate := range ix.rt.rates {
		label := plan.RateLabel(rate)
		for _, name := range ix.variants {
			s, ok := ix.rateSum(rateKey{c.e, c.n, name, rate}, ix.r.Spec.SLO)
			if !ok || s.lagged == 0 {
				continue
			}
			trials = max(trials, s.lagged)
			sc := s.sched
			ms := func(v float64) Cell { return numCell(v, millis, "ms") }
			t.addCells(textCell(label), textCell(name), countCell(sc.Due, "arrivals"), countCell(sc.Started, "arrivals"), ms(sc.Lag.Mean), ms(sc.Lag.P99), ms(sc.Lag.Max),
				shareCount(sc.Late1ms, sc.Started), shareCount(sc.Late10ms, sc.Started))
			label = ""
		}
	}
	if len(t.Rows) == 0 {
		return
	}
	start := "started: those whose dial began (what reached the server); lag: until the dial began"
	if c.e != plan.Connect {
		start = "started: those a connection began (what reached the server); lag: until the arrival was queued for a connection (its wait there for a free one is queueing, in the latencies above, not lag)"
	}
	t.Foot = []string{
		"due: the schedule's arrivals in the window; " + start,
		"lag: about 0 while the client keeps its schedule; a client that cannot (CPU, other load) sends arrivals late and in bursts, and the latencies above, from the intended start, include it",
	}
	if trials > 1 {
		t.Foot = append(t.Foot, fmt.Sprintf("counts: over %s; lag mean and p99: means over trials, max: the largest", plural(trials, "trial")))
	}
	b.table(t)
}

// rateWarnings names each rate cell whose client did not keep its schedule
// (result.OpenLoop.Behind) and what to do about it.
func (ix *index) rateWarnings() []string {
	var out []string
	for _, c := range ix.rt.cells {
		for _, rate := range ix.rt.rates {
			for _, name := range ix.variants {
				s, ok := ix.rateSum(rateKey{c.e, c.n, name, rate}, ix.r.Spec.SLO)
				why := s.behind()
				if !ok || why == "" {
					continue
				}
				out = append(out, fmt.Sprintf("%s %s at %s: the client did not keep its %s schedule: %s (lag p99 %s ms, max %s ms), so the server saw fewer or burstier arrivals than asked for (the latencies count from the intended starts): lower --rate, give fewer workers (-c, --max-inflight), or split the arrivals over a second client machine with --shard",
					rateTitle(c), name, plan.RateLabel(rate), ix.r.Spec.Arrivals, why, num(s.sched.Lag.P99, millis), num(s.sched.Lag.Max, millis)))
			}
		}
	}
	return out
}

// perSecond writes a rate as --rate takes it: 337.5, 100.
func perSecond(r float64) string { return strings.TrimSuffix(plan.RateLabel(r), "/s") }

// ratePrecision is rate's precision for achieved rates.
func ratePrecision(v float64) int { return rate(v) }

// shareCount is the count n of total, written "12 (0.5%)", or "0".
func shareCount(n, total int64) Cell {
	c := countCell(n, "arrivals")
	if n == 0 || total == 0 {
		return c
	}
	return c.shown(fmt.Sprintf("%d (%.1f%%)", n, 100*float64(n)/float64(total)))
}

// KneeAt is one variant's outcome of a rate search.
type KneeAt struct {
	Variant string
	// Rate is the highest offered rate sustained within the SLO, 0 if
	// not even the first; ServerUsPerOp the server's CPU per operation
	// there (NaN when tlsbench did not run the server).
	Rate          float64
	ServerUsPerOp float64
	// Next is the first rate not sustained and Why, 0 and "" if the
	// search reached its end.
	Next float64
	Why  string
}

// Capacity is a rate search's finding for one experiment: per variant,
// the highest rate sustained with the p99 from the intended start below
// SLO and no more than 1% of arrivals dropped or failed.
type Capacity struct {
	exp        plan.Experiment
	Experiment string // rateTitle
	Arrival    string // arrivalWord
	SLO        time.Duration
	From       float64 // the search's first rate
	At         []KneeAt
}

func (Capacity) isFact() {}

// capacities are the knees of a rate search, per experiment.
func (ix *index) capacities() []Capacity {
	k := ix.r.Spec.Knee
	if k == nil {
		return nil
	}
	slo := ix.r.Spec.SLO
	var out []Capacity
	for _, c := range ix.rt.cells {
		f := Capacity{exp: c.e, Experiment: rateTitle(c), Arrival: arrivalWord(c.e), SLO: slo, From: k.From}
		for _, name := range ix.variants {
			at := KneeAt{Variant: name, ServerUsPerOp: math.NaN()}
			seen := false
			for _, rate := range ix.rt.rates {
				s, ok := ix.rateSum(rateKey{c.e, c.n, name, rate}, slo)
				if !ok {
					continue
				}
				seen = true
				if s.over != "" {
					at.Next, at.Why = rate, s.over
					break
				}
				at.Rate = rate
				if s.server > 0 && s.ops > 0 {
					at.ServerUsPerOp = float64(s.server) / float64(time.Microsecond) / float64(s.ops)
				}
			}
			if seen {
				f.At = append(f.At, at)
			}
		}
		if len(f.At) > 0 {
			out = append(out, f)
		}
	}
	return out
}

// capacity: how many arrivals per second each variant sustains within
// the SLO (a rate search).
func (r *rules) capacity() {
	for _, f := range r.ix.capacities() {
		r.add(KindFinding, TopicCapacity, f)
	}
}

// capacityWords says a Capacity: "connect: plain sustains 900 new
// connections/s at p99 < 50ms, tls1.3 rsa2048 300, ...".
func capacityWords(f Capacity) string {
	var parts, limits []string
	for i, at := range f.At {
		figure := fmt.Sprintf("%s %s", at.Variant, perSecond(at.Rate))
		if at.Rate == 0 {
			figure = fmt.Sprintf("%s not even %s", at.Variant, perSecond(f.From))
		}
		if i == 0 && at.Rate > 0 {
			figure = fmt.Sprintf("%s sustains %s %s/s", at.Variant, perSecond(at.Rate), f.Arrival)
		}
		switch {
		case math.IsNaN(at.ServerUsPerOp):
		case i == 0:
			figure += fmt.Sprintf(" (the server's CPU there: %s µs per operation)", num(at.ServerUsPerOp, millis))
		default:
			figure += fmt.Sprintf(" (%s µs)", num(at.ServerUsPerOp, millis))
		}
		parts = append(parts, figure)
		if at.Why != "" {
			limits = append(limits, fmt.Sprintf("%s at %s: %s", at.Variant, plan.RateLabel(at.Next), at.Why))
		}
	}
	text := fmt.Sprintf("%s: at p99 < %v from the intended start, %s.", f.Experiment, f.SLO, strings.Join(parts, ", "))
	if len(limits) > 0 {
		text += " The next step broke it: " + strings.Join(limits, "; ") + "."
	}
	return text
}

// rateChart draws each variant's p99 from the intended start against the
// offered rate, one chart per experiment, with the SLO of a search.
func (b *figurer) rateChart() {
	ix := b.ix
	slo := ix.r.Spec.SLO
	for _, c := range ix.rt.cells {
		var series []chart.Series
		lo, hi, top := math.Inf(1), 0.0, 0.0
		for _, name := range ix.variants {
			var pts []chart.Point
			for _, rate := range ix.rt.rates {
				s, ok := ix.rateSum(rateKey{c.e, c.n, name, rate}, slo)
				if !ok || !finite(s.p99) || s.p99 <= 0 {
					continue
				}
				pts = append(pts, chart.Point{X: rate, Y: s.p99})
				lo, hi, top = min(lo, rate), max(hi, rate), max(top, s.p99)
			}
			series = b.addSeries(series, name, pts)
		}
		if len(series) == 0 {
			continue
		}
		var guides []chart.Guide
		if slo > 0 {
			y := float64(slo) / float64(time.Millisecond)
			guides = append(guides, chart.Guide{Name: "SLO " + slo.String(), Y: y, From: lo / 1.5, To: hi * 1.5})
			top = max(top, y)
		}
		b.add(chart.Figure{
			ID:      "rate-" + strings.ReplaceAll(rateTitle(c), " ", "-"),
			Title:   fmt.Sprintf("%s: p99 latency against the offered rate", rateTitle(c)),
			Caption: "Points: each variant's p99, counted from each arrival's intended start, so that queueing behind a slow server counts; dashed: the SLO of a rate search. Log scales.",
			Kind:    chart.Lines,
			X:       chart.Axis{Label: fmt.Sprintf("offered %s per second (--rate)", arrivalWord(c.e)), Log: true, Min: chart.At(lo / 1.5), Max: chart.At(hi * 1.5)},
			Y:       chart.Axis{Label: "p99 from the intended start, ms", Log: true, Max: chart.At(top * 1.5)},
			Series:  series,
			Guides:  guides,
		})
	}
}
