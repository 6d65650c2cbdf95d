package report

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// The round-trip model: a connection's setup time (every phase up to and
// including the first operation, that is all but "close") is its time on
// the bare link plus its round trips times the RTT. Both come from the
// connect variants measured at RTT 0; variants measured with emulated
// latency check the prediction.

// Prediction is the model of one connect variant measured at RTT 0.
type Prediction struct {
	Variant     string       // ID of the variant at RTT 0
	Info        plan.Variant // its fields
	Concurrency int          // the connect concurrency modelled (the lowest)
	// RoundTrips is the mean round trips of the setup phases; Local the
	// mean time of those phases on the bare link, ms.
	RoundTrips float64
	Local      float64
	// Plain is the plain variant the TLS overhead is taken against ("" for
	// a plain variant or when the run has none).
	Plain string
	At    []Point // one per RTT, ascending
}

// Point is a prediction at one RTT, and the emulated measurement when the
// run has the same variant at that RTT.
type Point struct {
	RTT       time.Duration
	Predicted float64 // ms
	// Measured is the setup time of the variant measured at RTT (NaN when
	// none was); Variant names it.
	Measured float64
	Variant  string
	// Overhead and MeasuredOverhead are the setup time against the plain
	// variant's, predicted and measured (NaN when unknown).
	Overhead, MeasuredOverhead float64
}

// Error is the prediction's error relative to the measurement: +0.05 when
// it predicted 5% too much; NaN without a measurement.
func (p Point) Error() float64 {
	if math.IsNaN(p.Measured) || p.Measured <= 0 {
		return math.NaN()
	}
	return (p.Predicted - p.Measured) / p.Measured
}

// PredictRTTs are the RTTs the model is evaluated at: --predict-rtt and
// every emulated RTT of the run, ascending.
func PredictRTTs(r *result.Result) []time.Duration {
	var out []time.Duration
	for _, d := range append(slices.Clone(r.Spec.PredictRTT), r.Spec.RTT...) {
		if d > 0 && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}

// setup is a variant's setup time and round trips over trials at one
// concurrency: the mean over trials of the sum over setup phases.
type setup struct {
	ms, rt float64
	rtMin  int
	rtMax  int
	ok     bool
}

func setupOf(ts []result.Trial) setup {
	var ms, rt []float64
	s := setup{rtMin: math.MaxInt, rtMax: math.MinInt}
	for _, t := range withLatency(ts) {
		var m, r float64
		lo, hi, n := 0, 0, 0
		for _, p := range t.Phases {
			if p.Name == "close" || p.Latency.Count == 0 {
				continue
			}
			m += p.Latency.Mean
			r += p.RoundTrips.Mean
			lo += p.RoundTrips.Min
			hi += p.RoundTrips.Max
			n++
		}
		if n == 0 {
			continue
		}
		ms, rt = append(ms, m), append(rt, r)
		s.rtMin, s.rtMax = min(s.rtMin, lo), max(s.rtMax, hi)
	}
	if len(ms) == 0 {
		return setup{}
	}
	s.ms, s.rt, s.ok = stats.Summarize(ms).Mean, stats.Summarize(rt).Mean, true
	return s
}

// modelled is the experiment the round-trip model is of: connect, or
// without it a capture's connections (wire); "" if neither was measured.
func (ix *index) modelled() plan.Experiment {
	for _, e := range []plan.Experiment{plan.Connect, plan.Wire} {
		if len(ix.conc[e]) > 0 {
			return e
		}
	}
	return ""
}

// modelWords are the model's words for the experiment e it is of: what
// its setup time without RTT is.
func modelWords(e plan.Experiment) (local, column string) {
	if e == plan.Wire {
		return "the capture's time less its network's", "no network"
	}
	return "loopback time", "loopback"
}

// Predict models every connect variant measured at RTT 0, at the lowest
// connect concurrency (where a connection waits for no other), at
// PredictRTTs(r). It returns nil when the run has no such variant.
func Predict(r *result.Result) []Prediction {
	v := newIndex(r)
	return v.predict()
}

func (ix *index) predict() []Prediction {
	e := ix.modelled()
	cs := ix.conc[e]
	if len(cs) == 0 {
		return nil
	}
	c := cs[0]
	rtts := PredictRTTs(ix.r)
	at := func(name string) setup {
		ts := ix.trials[cellKey{e, name, c}]
		s := setupOf(ts)
		// A capture's setup holds its own network's round trips: the
		// model adds the RTT's to what remains.
		s.ms -= wireNetwork(ts)
		return s
	}
	// find returns the variant measured like info but at rtt.
	find := func(info plan.Variant, rtt time.Duration) string {
		info.RTT, info.ID, info.Baseline = rtt, "", false
		for _, name := range ix.variants {
			o, ok := ix.info[name]
			if !ok {
				continue
			}
			o.ID, o.Baseline = "", false
			if o == info {
				return name
			}
		}
		return ""
	}
	var out []Prediction
	for _, name := range ix.variants {
		info, ok := ix.info[name]
		if !ok || info.RTT != 0 {
			continue
		}
		s := at(name)
		if !s.ok {
			continue
		}
		p := Prediction{Variant: name, Info: info, Concurrency: c, RoundTrips: s.rt, Local: s.ms}
		if !info.Plain() {
			plain := info
			plain.TLS, plain.Cipher, plain.Resume, plain.Key = "off", "", false, ""
			if n := find(plain, 0); n != "" && at(n).ok {
				p.Plain = n
			}
		}
		for _, rtt := range rtts {
			pt := Point{RTT: rtt, Predicted: predicted(s, rtt), Measured: math.NaN(), Overhead: math.NaN(), MeasuredOverhead: math.NaN()}
			if n := find(info, rtt); n != "" {
				if m := at(n); m.ok {
					pt.Measured, pt.Variant = m.ms, n
				}
			}
			if p.Plain != "" {
				pi := ix.info[p.Plain]
				pt.Overhead = pt.Predicted - predicted(at(p.Plain), rtt)
				if n := find(pi, rtt); n != "" && !math.IsNaN(pt.Measured) {
					if m := at(n); m.ok {
						pt.MeasuredOverhead = pt.Measured - m.ms
					}
				}
			}
			p.At = append(p.At, pt)
		}
		out = append(out, p)
	}
	return out
}

func predicted(s setup, rtt time.Duration) float64 {
	return s.ms + s.rt*float64(rtt)/float64(time.Millisecond)
}

// rttModel writes the round-trip model of the connect variants: only for runs
// that ask for it (--predict-rtt) or emulate latency, so that the output of
// any other run stays as it was.
func (ix *index) rttModel(b *body) {
	if len(PredictRTTs(ix.r)) == 0 {
		return
	}
	ps := ix.predict()
	if len(ps) > 0 {
		ix.rttTables(b, ps)
	}
	if un := ix.unmodelled(); len(un) > 0 {
		b.prose(fmt.Sprintf("%s: not in the round-trip model: a client stack other than Go's is timed a whole connection at a time, without phases or round trips, so there is nothing to predict from; its connections at each emulated RTT (through tlsbench's relay) are in the connect table",
			strings.Join(un, ", ")))
	}
}

// unmodelled lists the variants at RTT 0 of client stacks other than
// Go's that the model has no phases of, where it models connect.
func (ix *index) unmodelled() []string {
	e := ix.modelled()
	if e != plan.Connect {
		return nil
	}
	c := ix.conc[e][0]
	var out []string
	for _, name := range ix.variants {
		info, ok := ix.info[name]
		if !ok || info.Client == "" || info.RTT != 0 {
			continue
		}
		if ts := ix.trials[cellKey{e, name, c}]; len(ts) > 0 && !setupOf(ts).ok {
			out = append(out, name)
		}
	}
	return out
}

// rttTables writes the model's tables and what they say, for the
// variants it models (ps).
func (ix *index) rttTables(b *body, ps []Prediction) {
	c := ps[0].Concurrency
	rtts := PredictRTTs(ix.r)
	e := ix.modelled()
	local, column := modelWords(e)
	t := Table{
		Title: fmt.Sprintf("%s %s: setup time (all phases but close), ms: predicted = %s + round trips × RTT, vs measured with emulated RTT", e, plan.Label(c), local),
		Left:  1,
	}
	t.Header = []string{"variant", "round trips", column}
	o := Table{
		Title: fmt.Sprintf("%s %s: TLS overhead on setup time vs plain, ms: predicted, measured with emulated RTT", e, plan.Label(c)),
		Left:  1,
	}
	o.Header = []string{"variant", "vs", column}
	for _, rtt := range rtts {
		l := plan.RTTLabel(rtt)
		t.Header = append(t.Header, "predicted@"+l, "measured@"+l, "error@"+l)
		o.Header = append(o.Header, "predicted@"+l, "measured@"+l)
	}
	for _, p := range ps {
		ms := func(v float64) Cell { return numCell(v, millis, "ms") }
		row := []Cell{textCell(p.Variant), rtCell(p.RoundTrips), ms(p.Local)}
		orow := []Cell{textCell(p.Variant), textCell(p.Plain)}
		if p.Plain != "" {
			orow = append(orow, ms(p.Local-ix.local(ps, p.Plain)))
		}
		for _, pt := range p.At {
			e := textCell("-")
			if x := pt.Error(); !math.IsNaN(x) {
				e = Cell{Text: fmt.Sprintf("%+.1f%%", 100*x), Unit: "%", Value: 100 * x, StdDev: math.NaN(), CI: math.NaN()}
			}
			row = append(row, ms(pt.Predicted), ms(pt.Measured), e)
			orow = append(orow, ms(pt.Overhead), ms(pt.MeasuredOverhead))
		}
		t.addCells(row...)
		if p.Plain != "" {
			o.addCells(orow...)
		}
	}
	t.Foot = []string{"error: (predicted - measured) / measured; - where the run did not measure the variant at that RTT (--rtt)"}
	b.table(t)
	if len(o.Rows) > 0 {
		b.table(o)
	}
	var lines []string
	for _, p := range ps {
		line := fmt.Sprintf("%s: setup = %s + %s ms of local time (crypto, protocol, scheduling)", p.Variant, pluralFloat(p.RoundTrips, "round trip"), num(p.Local, millis))
		if p.Plain != "" {
			var plain Prediction
			for _, q := range ps {
				if q.Variant == p.Plain {
					plain = q
				}
			}
			line += fmt.Sprintf("; TLS adds %s + %s ms", pluralFloat(p.RoundTrips-plain.RoundTrips, "round trip"), num(p.Local-plain.Local, millis))
		}
		lines = append(lines, line)
	}
	b.prose(append(lines, ix.savings(ps, rtts)...)...)
}

// local is the loopback setup time of the named prediction.
func (ix *index) local(ps []Prediction, name string) float64 {
	for _, p := range ps {
		if p.Variant == name {
			return p.Local
		}
	}
	return math.NaN()
}

// savings says what TLS 1.3 instead of 1.2, and resumption instead of a
// full handshake, save per connection at each RTT, where the run measured
// both sides of the comparison at RTT 0.
func (ix *index) savings(ps []Prediction, rtts []time.Duration) []string {
	var out []string
	same := func(a, c plan.Variant) bool {
		a.ID, a.Baseline, a.Cipher, a.TLS = "", false, "", ""
		c.ID, c.Baseline, c.Cipher, c.TLS = "", false, "", ""
		return a == c
	}
	compare := func(from, to Prediction, what string) {
		drt := from.RoundTrips - to.RoundTrips
		dms := from.Local - to.Local
		if drt < 0.5 {
			out = append(out, fmt.Sprintf("%s saves no round trip here (%s: %s, %s: %s)", what,
				from.Variant, pluralFloat(from.RoundTrips, "round trip"), to.Variant, pluralFloat(to.RoundTrips, "round trip")))
			return
		}
		local := fmt.Sprintf("%s ms less local time", num(dms, millis))
		if dms < 0 {
			local = fmt.Sprintf("%s ms more local time", num(-dms, millis))
		}
		for _, rtt := range rtts {
			save := dms + drt*float64(rtt)/float64(time.Millisecond)
			out = append(out, fmt.Sprintf("at %s, %s saves ≈ %s ms per connection (%s → %s: %s less, %s)", plan.RTTLabel(rtt), what,
				num(save, millis), from.Variant, to.Variant, pluralFloat(drt, "round trip"), local))
		}
	}
	for _, p12 := range ps {
		if p12.Info.TLS != "1.2" {
			continue
		}
		for _, p13 := range ps {
			if p13.Info.TLS == "1.3" && same(p12.Info, p13.Info) {
				compare(p12, p13, "TLS 1.3 instead of 1.2")
			}
		}
	}
	for _, full := range ps {
		if full.Info.Plain() || full.Info.Resume {
			continue
		}
		for _, res := range ps {
			r := res.Info
			r.Resume = false
			if !res.Info.Resume || r.TLS != full.Info.TLS || !same(r, full.Info) || r.Cipher != full.Info.Cipher {
				continue
			}
			// Only connections that really resumed show what resumption saves.
			var resumed, conns int64
			for _, t := range ix.trials[cellKey{ix.modelled(), res.Variant, res.Concurrency}] {
				resumed, conns = resumed+t.Resumed, conns+t.Conns
			}
			if conns == 0 || resumed*10 < conns*9 {
				continue
			}
			compare(full, res, "resumption")
		}
	}
	return out
}

// pluralFloat is plural for a count that need not be whole (a mean, a
// difference): "1 round trip", "2 round trips", "1.50 round trips".
func pluralFloat(n float64, word string) string {
	if n == math.Round(n) {
		return plural(int(n), word)
	}
	return fmt.Sprintf("%.2f %ss", n, word)
}
