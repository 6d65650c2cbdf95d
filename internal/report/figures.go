package report

import (
	"cmp"
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/report/chart"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// figures are the charts a result has data for, in the order of the text
// report: per experiment its rates (bars per concurrency, lines over
// concurrency), p95 latency and connection phases; then the round-trip
// model, the signing ceilings and the crypto primitives. Package chart
// draws them.
func (ix *index) figures() []chart.Figure {
	b := &figurer{ix: ix}
	b.styles = styles(b.ix)
	for _, e := range b.ix.experiments {
		if e == plan.Storm || e == plan.Wire {
			continue // their own tables and charts say it
		}
		b.rates(e)
		if e == plan.Connect {
			b.phases()
		} else {
			b.p95(e)
		}
	}
	b.perConnChart()
	b.stormChart()
	b.wireChart()
	b.rateChart()
	b.replicateCharts()
	b.rttOverhead()
	b.ceilings()
	b.crypto()
	b.adviceChart()
	return b.out
}

// figurer builds the figures of one result.
type figurer struct {
	ix     *index
	styles map[string]chart.Style
	out    []chart.Figure
}

// add keeps a figure that shows something (chart.Figure.Shows: a single
// point says no more than its table's row) and that chart can draw (see
// chart.Drawable): a figure of absurd figures is left out, not drawn
// wrong.
func (b *figurer) add(f chart.Figure) {
	if f.Shows() && chart.Drawable(f) {
		b.out = append(b.out, f)
	}
}

// logNote is what a caption says of a value axis drawn on a log scale
// (chart.Dwarfs).
const logNote = " The value axis is logarithmic: the largest value is over 10 times the smallest, which a linear axis would squash to the bottom."

// trialsPhrase says over how many trials the figures of e are means.
func (b *figurer) trialsPhrase(e plan.Experiment) string {
	return "mean over " + b.ix.trialCount(e, b.ix.conc[e]...)
}

// rttGroups splits the variants with trials in e by emulated RTT, bare
// link first: a round trip of milliseconds would dwarf the bare link's
// figures on a shared axis.
func (b *figurer) rttGroups(e plan.Experiment) []rttGroup {
	var out []rttGroup
	for _, name := range b.ix.measured(e) {
		rtt := b.ix.info[name].RTT
		i := slices.IndexFunc(out, func(g rttGroup) bool { return g.rtt == rtt })
		if i < 0 {
			out = append(out, rttGroup{rtt: rtt})
			i = len(out) - 1
		}
		out[i].names = append(out[i].names, name)
	}
	slices.SortStableFunc(out, func(a, b rttGroup) int { return cmp.Compare(a.rtt, b.rtt) })
	return out
}

type rttGroup struct {
	rtt   time.Duration
	names []string
}

// suffixes name a group's chart: "" and "", or "-rtt20ms" and " at 20ms RTT".
func (g rttGroup) suffixes() (id, title string) {
	if g.rtt == 0 {
		return "", ""
	}
	return "-rtt" + plan.RTTLabel(g.rtt), " at " + plan.RTTLabel(g.rtt) + " RTT"
}

// rates charts an experiment's main figure: bars per variant at each
// concurrency (the lowest and highest of a sweep), and one line per
// variant over concurrency when the run has several; per emulated RTT.
func (b *figurer) rates(e plan.Experiment) {
	v := b.ix
	unit := v.metricName(e)
	metric := v.metric(e)
	value := func(t result.Trial) (float64, bool) { return metric(t), t.Elapsed > 0 }
	cs := v.conc[e]
	for _, g := range b.rttGroups(e) {
		id, at := g.suffixes()
		switch {
		case len(cs) > 1 && v.stacks != nil:
			b.perStack(e, g.names, string(e)+"-rate"+id, fmt.Sprintf("%s: %s by concurrency%s", e, unit, at), unit, value)
			if e == plan.Connect {
				b.perStack(e, g.names, "connect-client-cpu"+id, "connect: client CPU per connection by concurrency"+at, "client CPU, ms per connection", clientMS)
			}
		case len(cs) > 1:
			b.lines(e, g.names, string(e)+"-rate"+id, fmt.Sprintf("%s: %s by concurrency%s", e, unit, at), unit, value)
		}
		shown := cs
		if len(cs) > 2 {
			shown = []int{cs[0], cs[len(cs)-1]}
		}
		for _, c := range shown {
			b.bars(e, g.names, c, fmt.Sprintf("%s-rate-c%d%s", e, c, id), fmt.Sprintf("%s %s: %s per variant%s", e, plan.Label(c), unit, at),
				fmt.Sprintf("%s (%s)", unit, b.trialsPhrase(e)), value, func(x float64) string { return num(x, rate) },
				fmt.Sprintf("Bars: %s, whiskers: ±1 standard deviation over trials.", b.trialsPhrase(e)))
		}
	}
}

// p95 charts the pool's or stream's p95 latency: over concurrency when the
// run has several, else per variant.
func (b *figurer) p95(e plan.Experiment) {
	v := b.ix
	value := func(t result.Trial) (float64, bool) { return t.Latency.P95, t.Latency.Count > 0 }
	for _, g := range b.rttGroups(e) {
		id, at := g.suffixes()
		if len(v.conc[e]) > 1 {
			b.lines(e, g.names, string(e)+"-p95"+id, fmt.Sprintf("%s: p95 latency by concurrency%s", e, at), "p95 latency, ms", value)
			continue
		}
		c := v.conc[e][0]
		b.bars(e, g.names, c, string(e)+"-p95"+id, fmt.Sprintf("%s %s: p95 latency per variant%s", e, plan.Label(c), at),
			fmt.Sprintf("p95 latency, ms (%s)", b.trialsPhrase(e)), value, func(x float64) string { return num(x, millis) + " ms" },
			"Bars: each trial's p95, averaged over trials; whiskers: ±1 standard deviation.")
	}
}

// bars draws one bar per variant of a figure at one concurrency: the mean
// over trials with a ±1 stddev whisker, in the variant's colour.
func (b *figurer) bars(e plan.Experiment, names []string, c int, id, title, xlabel string, value func(result.Trial) (float64, bool), note func(float64) string, caption string) {
	var bs []chart.Bar
	for _, name := range names {
		xs := trialValues(b.ix.trials[cellKey{e, name, c}], value)
		if len(xs) == 0 {
			continue
		}
		s := stats.Summarize(xs)
		if !finite(s.Mean, s.StdDev) {
			continue
		}
		bs = append(bs, chart.Bar{Label: name, Value: s.Mean, Err: s.StdDev, Color: b.styles[name].Color, Note: note(s.Mean)})
	}
	if len(bs) == 0 {
		return
	}
	// A linear axis even where one bar dwarfs the others: a bar's length
	// is its value (on a log axis it is not), and its note says it.
	b.add(chart.Figure{ID: id, Title: title, Caption: caption, Kind: chart.Bars, X: chart.Axis{Label: xlabel, Min: chart.At(0)}, Bars: bs})
}

// lines draws one line per variant of a figure over concurrency, with
// ±1 stddev error bars, on a log axis that spaces 1, 2, 4, ... evenly.
// Variants are nudged apart sideways so that their error bars do not hide
// each other.
func (b *figurer) lines(e plan.Experiment, names []string, id, title, ylabel string, value func(result.Trial) (float64, bool)) {
	series, ys, top := b.lineSeries(e, names, value)
	if len(series) == 0 {
		return
	}
	b.add(b.lineFigure(e, id, title, ylabel, series, ys, top))
}

// lineSeries are the series of lines, the values of their points and the
// top of their error bars.
func (b *figurer) lineSeries(e plan.Experiment, names []string, value func(result.Trial) (float64, bool)) (series []chart.Series, ys []float64, top float64) {
	v := b.ix
	cs := v.conc[e]
	for i, name := range names {
		nudge := math.Pow(1.02, float64(i)-float64(len(names)-1)/2)
		var pts []chart.Point
		for _, c := range cs {
			xs := trialValues(v.trials[cellKey{e, name, c}], value)
			if len(xs) == 0 {
				continue
			}
			s := stats.Summarize(xs)
			if !finite(s.Mean, s.StdDev, s.Mean+s.StdDev) {
				continue // gonum's plotters refuse it
			}
			pts = append(pts, chart.Point{X: float64(c) * nudge, Y: s.Mean, Err: s.StdDev})
			ys = append(ys, s.Mean)
			top = max(top, s.Mean+s.StdDev)
		}
		series = b.addSeries(series, name, pts)
	}
	return series, ys, top
}

// lineFigure is a lines figure over e's concurrencies whose value axis
// fits ys and top: logarithmic where the largest of ys dwarfs the
// smallest (chart.Dwarfs). Small multiples pass the values of all their
// figures, so that they share one axis.
func (b *figurer) lineFigure(e plan.Experiment, id, title, ylabel string, series []chart.Series, ys []float64, top float64) chart.Figure {
	cs := b.ix.conc[e]
	var ticks []chart.Tick
	for _, c := range cs {
		ticks = append(ticks, chart.Tick{Value: float64(c), Label: fmt.Sprint(c)})
	}
	caption := "Points: " + b.trialsPhrase(e) + " at each concurrency; error bars: ±1 standard deviation over trials."
	y := chart.Axis{Label: ylabel + " (" + b.trialsPhrase(e) + ")", Min: chart.At(0), Max: chart.At(top * 1.08)}
	if chart.Dwarfs(ys) {
		lo := math.Inf(1)
		for _, v := range ys {
			if v > 0 {
				lo = min(lo, v)
			}
		}
		y = chart.Axis{Label: ylabel + ", log scale (" + b.trialsPhrase(e) + ")", Log: true, Min: chart.At(lo / 1.6), Max: chart.At(top * 1.6)}
		caption += logNote
	}
	return chart.Figure{
		ID:      id,
		Title:   title,
		Caption: caption,
		Kind:    chart.Lines,
		X:       chart.Axis{Label: "concurrency (connections in use at once)", Log: true, Ticks: ticks, Min: chart.At(float64(cs[0]) / 1.25), Max: chart.At(float64(cs[len(cs)-1]) * 1.25)},
		Y:       y,
		Series:  series,
	}
}

// perStack draws a figure over concurrency as small multiples, one chart
// per client stack with its variants, all on one value axis so that the
// stacks compare by eye: the threads study.
func (b *figurer) perStack(e plan.Experiment, names []string, id, title, ylabel string, value func(result.Trial) (float64, bool)) {
	type multiple struct {
		stack  string
		series []chart.Series
	}
	var ms []multiple
	var ys []float64
	top := 0.0
	for _, s := range b.ix.stacks {
		mine := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return b.ix.stackOf(n) != s })
		series, y, t := b.lineSeries(e, mine, value)
		if len(series) == 0 {
			continue
		}
		ms, ys, top = append(ms, multiple{s, series}), append(ys, y...), max(top, t)
	}
	for _, m := range ms {
		f := b.lineFigure(e, id+"-"+m.stack, title+", "+m.stack, ylabel, m.series, ys, top)
		f.Caption += fmt.Sprintf(" One chart per client stack (%d), on the same axes.", len(ms))
		b.add(f)
	}
}

// addSeries appends a variant's series in its style, unless it has no
// point.
func (b *figurer) addSeries(series []chart.Series, name string, pts []chart.Point) []chart.Series {
	if len(pts) == 0 {
		return series
	}
	return append(series, chart.Series{Name: name, Style: b.styles[name], Points: pts})
}

// phases stacks the mean time of each phase of a new connection per
// variant, at the lowest concurrency, one chart per emulated RTT (whose
// round trips would dwarf the bare link's phases).
func (b *figurer) phases() {
	v := b.ix
	c, ok := v.lowest(plan.Connect)
	if !ok {
		return
	}
	var rtts []time.Duration
	for _, name := range v.variants {
		if rtt := v.info[name].RTT; !slices.Contains(rtts, rtt) {
			rtts = append(rtts, rtt)
		}
	}
	slices.Sort(rtts)
	var colors chart.PhaseColors
	for _, rtt := range rtts {
		var names, phases []string
		for _, name := range v.variants {
			ts := withLatency(v.trials[cellKey{plan.Connect, name, c}])
			if v.info[name].RTT != rtt || len(ts) == 0 {
				continue
			}
			names = append(names, name)
			for _, t := range ts {
				phases = mergeOrder(phases, t.Phases)
			}
		}
		if len(names) == 0 || len(phases) == 0 {
			continue
		}
		var bars []chart.Bar
		for _, name := range names {
			ts := withLatency(v.trials[cellKey{plan.Connect, name, c}])
			br := chart.Bar{Label: name}
			for _, ph := range phases {
				ms := phaseMean(ts, ph)
				if math.IsNaN(ms) {
					ms = 0
				}
				br.Segments = append(br.Segments, chart.Segment{Value: ms, Color: colors.Of(ph)})
				br.Value += ms
			}
			if !finite(br.Value) {
				continue // sums of absurd figures overflow
			}
			br.Note = num(br.Value, millis) + " ms"
			bars = append(bars, br)
		}
		var key []chart.Swatch
		for _, ph := range phases {
			key = append(key, chart.Swatch{Name: ph, Color: colors.Of(ph)})
		}
		id, title := "connect-phases", fmt.Sprintf("connect %s: where a new connection's time goes", plan.Label(c))
		if rtt != 0 {
			id += "-rtt" + plan.RTTLabel(rtt)
			title += " at " + plan.RTTLabel(rtt) + " RTT"
		}
		b.add(chart.Figure{
			ID:      id,
			Title:   title,
			Caption: "Each bar is one variant's connection, open to close: the mean time of each phase, stacked; the TLS and tunnel phases are the warm colours.",
			Kind:    chart.Bars,
			X:       chart.Axis{Label: "ms per connection, by phase (" + b.trialsPhrase(plan.Connect) + ")", Min: chart.At(0)},
			Bars:    bars,
			Key:     key,
		})
	}
}

// rttOverhead draws what TLS adds to connection setup against the RTT: the
// round-trip model's prediction as lines, measurements as points.
func (b *figurer) rttOverhead() {
	v := b.ix
	rtts := PredictRTTs(v.r)
	ps := v.predict()
	if len(rtts) == 0 || len(ps) == 0 {
		return
	}
	local := map[string]float64{}
	for _, p := range ps {
		local[p.Variant] = p.Local
	}
	title := fmt.Sprintf("%s %s: TLS overhead on connection setup by round-trip time", v.modelled(), plan.Label(ps[0].Concurrency))
	var series []chart.Series
	top, right := 0.0, 0.0
	for _, p := range ps {
		if p.Plain == "" {
			continue
		}
		var pred, meas []chart.Point
		if at0 := p.Local - local[p.Plain]; finite(at0) {
			pred = append(pred, chart.Point{X: 0, Y: at0})
			meas = append(meas, chart.Point{X: 0, Y: at0})
		}
		for _, pt := range p.At {
			x := float64(pt.RTT) / float64(time.Millisecond)
			right = max(right, x)
			if finite(pt.Overhead) {
				pred = append(pred, chart.Point{X: x, Y: pt.Overhead})
				top = max(top, pt.Overhead)
			}
			if finite(pt.MeasuredOverhead) {
				meas = append(meas, chart.Point{X: x, Y: pt.MeasuredOverhead})
				top = max(top, pt.MeasuredOverhead)
			}
		}
		if len(pred) == 0 && len(meas) == 0 {
			continue
		}
		series = append(series, chart.Series{Name: p.Variant, Style: b.styles[p.Variant], Points: meas, Model: true, Predicted: pred})
	}
	if len(series) == 0 {
		return
	}
	b.add(chart.Figure{
		ID:      "rtt-overhead",
		Title:   title,
		Caption: "Dashed lines: the round-trip model's prediction (loopback time + round trips × RTT, against plain's); points: measured, on loopback at RTT 0 and with emulated latency beyond.",
		Kind:    chart.Lines,
		X:       chart.Axis{Label: "round-trip time, ms", Min: chart.At(0), Max: chart.At(right * 1.05)},
		Y:       chart.Axis{Label: "setup time minus plain's, ms", Min: chart.At(0), Max: chart.At(top * 1.1)},
		Series:  series,
	})
}

// ceilings sets the most new TLS connections per second measured with each
// key against the ceiling its signatures put on the server's cores.
func (b *figurer) ceilings() {
	v := b.ix
	if len(v.r.Ceilings) == 0 {
		return
	}
	var bars []chart.Bar
	for _, cl := range v.r.Ceilings {
		if !(cl.ConnPerSec() > 0) || !finite(cl.ConnPerSec()) {
			continue
		}
		bars = append(bars, chart.Bar{
			Label: cl.Key + " ceiling",
			Value: cl.ConnPerSec(),
			Color: chart.Limit,
			Note:  fmt.Sprintf("%s/s (%d × %s)", num(cl.ConnPerSec(), rate), cl.Cores, num(cl.SignPerSec, rate)),
		})
		for _, name := range v.variants {
			info, ok := v.info[name]
			if !ok || info.Plain() || info.Resume || info.RTT != 0 || info.Key != cl.Key {
				continue
			}
			best, at := stats.Summary{}, 0
			for _, c := range v.conc[plan.Connect] {
				s := stats.Summarize(collect(v.trials[cellKey{plan.Connect, name, c}], v.metric(plan.Connect)))
				if s.N > 0 && s.Mean > best.Mean && finite(s.Mean, s.StdDev) {
					best, at = s, c
				}
			}
			if best.N == 0 {
				continue
			}
			bars = append(bars, chart.Bar{
				Label: fmt.Sprintf("%s %s", name, plan.Label(at)),
				Value: best.Mean, Err: best.StdDev,
				Color: b.styles[name].Color,
				Note:  fmt.Sprintf("%s/s, %s of the ceiling", num(best.Mean, rate), pctWords(100*best.Mean/cl.ConnPerSec())),
			})
		}
	}
	if len(bars) == 0 {
		return
	}
	b.add(chart.Figure{
		ID:      "ceilings",
		Title:   "new TLS connections per second: measured against the signing ceiling",
		Caption: "Grey: the most full handshakes the server's cores can sign per second (cores × signatures per second per core); coloured: the best rate measured with that key (mean over trials at its best concurrency, whiskers ±1 standard deviation).",
		Kind:    chart.Bars,
		X:       chart.Axis{Label: "new connections per second (log scale)", Log: true},
		Bars:    bars,
	})
}

// crypto charts the primitives of a crypto run: public-key operations per
// second, and cipher throughput at the largest record size.
func (b *figurer) crypto() {
	prims := b.ix.r.Crypto
	if len(prims) == 0 {
		return
	}
	libs := libraries(prims)
	libColor := func(lib string) color.RGBA { return chart.LibraryColor(slices.Index(libs, lib)) }
	var pub, ciphers []chart.Bar
	size := 0
	for _, p := range prims {
		if p.Kind == result.KindCipher {
			size = max(size, p.Size)
		}
	}
	// One operation's libraries side by side, named once: the colour tells
	// the library.
	var names []string
	for _, p := range prims {
		if !slices.Contains(names, p.Name) {
			names = append(names, p.Name)
		}
	}
	find := func(lib, kind, name string, size int) (result.Primitive, bool) {
		for _, p := range prims {
			if p.Library == lib && p.Kind == kind && p.Name == name && p.Size == size && p.PerCore > 0 && finite(p.PerCore) {
				return p, true
			}
		}
		return result.Primitive{}, false
	}
	for _, name := range names {
		for _, kind := range primitiveKinds {
			label := name + " " + kind
			if kind == result.KindCipher {
				label = name
			}
			for _, lib := range libs {
				if kind == result.KindCipher {
					if p, ok := find(lib, kind, name, size); ok {
						ciphers = append(ciphers, chart.Bar{Label: label, Value: p.PerCore / 1e6, Color: libColor(lib), Note: num(p.PerCore/1e6, rate) + " MB/s"})
						label = ""
					}
					continue
				}
				if p, ok := find(lib, kind, name, 0); ok {
					pub = append(pub, chart.Bar{Label: label, Value: p.PerCore, Color: libColor(lib), Note: num(p.PerCore, rate) + "/s"})
					label = ""
				}
			}
		}
	}
	var key []chart.Swatch
	if len(libs) >= 2 {
		for _, l := range libs {
			key = append(key, chart.Swatch{Name: l, Color: libColor(l)})
		}
	}
	if len(pub) > 0 {
		b.add(chart.Figure{
			ID:      "crypto-public-key",
			Title:   "public-key operations per second on one core",
			Caption: "Signatures, verifications and key agreements per second on one core; a full handshake costs the server one signature.",
			Kind:    chart.Bars,
			X:       chart.Axis{Label: "operations per second (log scale)", Log: true},
			Bars:    pub,
			Key:     key,
		})
	}
	if len(ciphers) > 0 {
		b.add(chart.Figure{
			ID:      "crypto-ciphers",
			Title:   fmt.Sprintf("cipher throughput on one core, %d-byte records", size),
			Caption: "Bulk encryption speed of one core at the largest record size measured.",
			Kind:    chart.Bars,
			X:       chart.Axis{Label: "MB/s", Min: chart.At(0)},
			Bars:    ciphers,
			Key:     key,
		})
	}
}

// WriteCharts writes every chart into dir (created if missing) as ID.svg
// or ID.png, by format, and returns the paths written.
func (m *Model) WriteCharts(dir, format string) ([]string, error) {
	var render func(chart.Figure) ([]byte, error)
	switch format {
	case "svg":
		render = chart.SVG
	case "png":
		render = chart.PNG
	default:
		return nil, fmt.Errorf("unknown chart format %q: use svg or png", format)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("writing charts into %s: %w", dir, err)
	}
	var paths []string
	for _, c := range m.Figures {
		data, err := render(c)
		if err != nil {
			return paths, err
		}
		path := filepath.Join(dir, c.ID+"."+format)
		if err := result.WriteFile(path, data, "a chart"); err != nil {
			return paths, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// styles gives each variant of r its style, keyed by its position in
// r.Variants: a TLS variant takes the next palette colour, the same variant
// at another RTT the same colour, and plain variants plain's grey.
func styles(ix *index) map[string]chart.Style {
	out := map[string]chart.Style{}
	var keys []plan.Variant
	plain := 0
	for _, name := range ix.variants {
		info, known := ix.info[name]
		if known && direct(info) {
			out[name] = chart.PlainStyle(plain, info.RTT != 0)
			plain++
			continue
		}
		k := info
		k.ID, k.Baseline, k.RTT = "", false, 0
		if !known {
			k.ID = name // unknown variants are their own kind
		}
		i := -1
		for j, o := range keys {
			if o == k {
				i = j
			}
		}
		if i < 0 {
			keys = append(keys, k)
			i = len(keys) - 1
		}
		out[name] = chart.VariantStyle(i, info.RTT != 0)
	}
	return out
}

// colorKey is the colour of each variant with trials, in variant order:
// the key of the figures on a page.
func (ix *index) colorKey() []chart.Swatch {
	if len(ix.r.Trials) == 0 {
		return nil
	}
	st := styles(ix)
	var out []chart.Swatch
	for _, name := range ix.variants {
		if slices.ContainsFunc(ix.r.Trials, func(t result.Trial) bool { return t.Variant == name }) {
			out = append(out, chart.Swatch{Name: name, Color: st[name].Color})
		}
	}
	return out
}

// trialValues maps the trials of a cell to one figure each, dropping the
// trials that do not have it.
func trialValues(ts []result.Trial, f func(result.Trial) (float64, bool)) []float64 {
	var out []float64
	for _, t := range ts {
		if x, ok := f(t); ok && !math.IsNaN(x) && !math.IsInf(x, 0) {
			out = append(out, x)
		}
	}
	return out
}
