package report

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// Chart is one figure of a report: a plot with its own title and axis
// labels, and the legend drawn at its right.
type Chart struct {
	// ID names the chart in a page and its file: connect-rate-c1.
	ID    string
	Title string
	// Caption says how to read the chart: what a bar, whisker or line is.
	Caption string

	plot   *plot.Plot
	legend []legendEntry
	height vg.Length
}

type legendEntry struct {
	name   string
	thumbs []plot.Thumbnailer
}

// Charts draws the charts a result has data for, in the order of the text
// report: per experiment its rates (bars per concurrency, lines over
// concurrency), p95 latency and connection phases; then the round-trip
// model, the signing ceilings and the crypto primitives.
func Charts(r *result.Result) []Chart { return newIndex(r).charts() }

func (ix *index) charts() []Chart {
	b := &charter{ix: ix}
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
	b.rttOverhead()
	b.ceilings()
	b.crypto()
	return b.out
}

// charter builds the charts of one result.
type charter struct {
	ix     *index
	styles map[string]style
	out    []Chart
}

// add keeps a chart whose axes gonum can draw: finite ranges, and above
// zero on a log scale. Results built in memory are not validated, and even
// a valid file's figures can overflow once summed (1e308 ms twice): such a
// chart is left out, not drawn wrong or panicking.
func (b *charter) add(c Chart) {
	if !drawable(c.plot) {
		return
	}
	if c.height == 0 {
		c.height = chartHeight
	}
	b.out = append(b.out, c)
}

// trialsPhrase says over how many trials the figures of e are means.
func (b *charter) trialsPhrase(e plan.Experiment) string {
	return "mean over " + b.ix.trialCount(e, b.ix.conc[e]...)
}

// rttGroups splits the variants with trials in e by emulated RTT, bare
// link first: a round trip of milliseconds would dwarf the bare link's
// figures on a shared axis.
func (b *charter) rttGroups(e plan.Experiment) []rttGroup {
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
func (b *charter) rates(e plan.Experiment) {
	v := b.ix
	unit := v.metricName(e)
	metric := v.metric(e)
	value := func(t result.Trial) (float64, bool) { return metric(t), t.Elapsed > 0 }
	cs := v.conc[e]
	for _, g := range b.rttGroups(e) {
		id, at := g.suffixes()
		if len(cs) > 1 {
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
func (b *charter) p95(e plan.Experiment) {
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
func (b *charter) bars(e plan.Experiment, names []string, c int, id, title, xlabel string, value func(result.Trial) (float64, bool), note func(float64) string, caption string) {
	var bs []bar
	for _, name := range names {
		xs := trialValues(b.ix.trials[cellKey{e, name, c}], value)
		if len(xs) == 0 {
			continue
		}
		s := stats.Summarize(xs)
		if !finite(s.Mean, s.StdDev) {
			continue
		}
		bs = append(bs, bar{label: name, value: s.Mean, err: s.StdDev, color: b.styles[name].color, note: note(s.Mean)})
	}
	if len(bs) == 0 {
		return
	}
	h := &hbars{bars: bs}
	p := newPlot(title, xlabel, "")
	b.grid(p, true)
	p.Add(h)
	h.nominal(p)
	p.X.Min = 0
	b.add(Chart{ID: id, Title: title, Caption: caption, plot: p, height: barsHeight(len(bs))})
}

func barsHeight(n int) vg.Length { return vg.Points(78) + barPitch*vg.Length(n) }

// grid draws light lines at the ticks of the value axis.
func (b *charter) grid(p *plot.Plot, vertical bool) {
	g := plotter.NewGrid()
	g.Vertical.Color, g.Horizontal.Color = gridColor, gridColor
	g.Vertical.Width, g.Horizontal.Width = vg.Points(0.5), vg.Points(0.5)
	if vertical {
		g.Horizontal.Color = nil
	} else {
		g.Vertical.Color = nil
	}
	p.Add(g)
}

// lines draws one line per variant of a figure over concurrency, with
// ±1 stddev error bars, on a log axis that spaces 1, 2, 4, ... evenly.
// Variants are nudged apart sideways so that their error bars do not hide
// each other.
func (b *charter) lines(e plan.Experiment, names []string, id, title, ylabel string, value func(result.Trial) (float64, bool)) {
	v := b.ix
	cs := v.conc[e]
	p := newPlot(title, "concurrency (connections in use at once)", ylabel+" ("+b.trialsPhrase(e)+")")
	b.grid(p, false)
	var legend []legendEntry
	top := 0.0
	for i, name := range names {
		nudge := math.Pow(1.02, float64(i)-float64(len(names)-1)/2)
		var pts errPoints
		for _, c := range cs {
			xs := trialValues(v.trials[cellKey{e, name, c}], value)
			if len(xs) == 0 {
				continue
			}
			s := stats.Summarize(xs)
			if !finite(s.Mean, s.StdDev, s.Mean+s.StdDev) {
				continue // gonum's plotters refuse it
			}
			pts = append(pts, struct{ x, y, err float64 }{float64(c) * nudge, s.Mean, s.StdDev})
			top = max(top, s.Mean+s.StdDev)
		}
		legend = b.addSeries(p, legend, name, pts)
	}
	if len(legend) == 0 {
		return
	}
	var ticks []plot.Tick
	for _, c := range cs {
		ticks = append(ticks, plot.Tick{Value: float64(c), Label: fmt.Sprint(c)})
	}
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = float64(cs[0])/1.25, float64(cs[len(cs)-1])*1.25
	p.Y.Min, p.Y.Max = 0, top*1.08
	b.add(Chart{
		ID:      id,
		Title:   title,
		Caption: "Points: " + b.trialsPhrase(e) + " at each concurrency; error bars: ±1 standard deviation over trials.",
		plot:    p,
		legend:  legend,
		height:  max(chartHeight, legendHeight(len(legend))),
	})
}

// addSeries adds a variant's series to p and its entry to the legend, unless
// it has no point.
func (b *charter) addSeries(p *plot.Plot, legend []legendEntry, name string, pts errPoints) []legendEntry {
	if len(pts) == 0 {
		return legend
	}
	line, sc, eb := b.series(pts, b.styles[name])
	p.Add(line, eb, sc)
	return append(legend, legendEntry{name, []plot.Thumbnailer{line, sc}})
}

// series is a variant's line, points and error bars; pts are finite.
func (b *charter) series(pts errPoints, st style) (*plotter.Line, *plotter.Scatter, *plotter.YErrorBars) {
	line, err := plotter.NewLine(pts)
	if err != nil {
		panic(err) // lines lets no NaN or infinity through
	}
	line.Color, line.Width, line.Dashes = st.color, vg.Points(1.6), st.dashes
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		panic(err)
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: st.color, Radius: vg.Points(3), Shape: st.glyph}
	eb, err := plotter.NewYErrorBars(pts)
	if err != nil {
		panic(err)
	}
	eb.Color, eb.Width, eb.CapWidth = st.color, vg.Points(1), vg.Points(6)
	return line, sc, eb
}

func legendHeight(n int) vg.Length { return vg.Points(60) + vg.Points(13)*vg.Length(n) }

// phases stacks the mean time of each phase of a new connection per
// variant, at the lowest concurrency, one chart per emulated RTT (whose
// round trips would dwarf the bare link's phases).
func (b *charter) phases() {
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
	others := map[string]int{}
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
		var bars []bar
		for _, name := range names {
			ts := withLatency(v.trials[cellKey{plan.Connect, name, c}])
			br := bar{label: name}
			for _, ph := range phases {
				ms := phaseMean(ts, ph)
				if math.IsNaN(ms) {
					ms = 0
				}
				br.segments = append(br.segments, segment{ms, phaseColor(ph, others)})
				br.value += ms
			}
			if !finite(br.value) {
				continue // sums of absurd figures overflow
			}
			br.note = num(br.value, millis) + " ms"
			bars = append(bars, br)
		}
		var legend []legendEntry
		for _, ph := range phases {
			legend = append(legend, legendEntry{ph, []plot.Thumbnailer{swatch{phaseColor(ph, others)}}})
		}
		id, title := "connect-phases", fmt.Sprintf("connect %s: where a new connection's time goes", plan.Label(c))
		if rtt != 0 {
			id += "-rtt" + plan.RTTLabel(rtt)
			title += " at " + plan.RTTLabel(rtt) + " RTT"
		}
		h := &hbars{bars: bars}
		p := newPlot(title, "ms per connection, by phase ("+b.trialsPhrase(plan.Connect)+")", "")
		b.grid(p, true)
		p.Add(h)
		h.nominal(p)
		p.X.Min = 0
		b.add(Chart{
			ID:      id,
			Title:   title,
			Caption: "Each bar is one variant's connection, open to close: the mean time of each phase, stacked; the TLS and tunnel phases are the warm colours.",
			plot:    p,
			legend:  legend,
			height:  max(barsHeight(len(bars)), legendHeight(len(legend))),
		})
	}
}

// rttOverhead draws what TLS adds to connection setup against the RTT: the
// round-trip model's prediction as lines, measurements as points.
func (b *charter) rttOverhead() {
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
	pl := newPlot(fmt.Sprintf("%s %s: TLS overhead on connection setup by round-trip time", v.modelled(), plan.Label(ps[0].Concurrency)),
		"round-trip time, ms", "setup time minus plain's, ms")
	b.grid(pl, false)
	var legend []legendEntry
	top, right := 0.0, 0.0
	for _, p := range ps {
		if p.Plain == "" {
			continue
		}
		st := b.styles[p.Variant]
		var pred, meas errPoints
		if at0 := p.Local - local[p.Plain]; finite(at0) {
			pred = append(pred, struct{ x, y, err float64 }{0, at0, 0})
			meas = append(meas, struct{ x, y, err float64 }{0, at0, 0})
		}
		for _, pt := range p.At {
			x := float64(pt.RTT) / float64(time.Millisecond)
			right = max(right, x)
			if finite(pt.Overhead) {
				pred = append(pred, struct{ x, y, err float64 }{x, pt.Overhead, 0})
				top = max(top, pt.Overhead)
			}
			if finite(pt.MeasuredOverhead) {
				meas = append(meas, struct{ x, y, err float64 }{x, pt.MeasuredOverhead, 0})
				top = max(top, pt.MeasuredOverhead)
			}
		}
		if len(pred) == 0 && len(meas) == 0 {
			continue
		}
		line, err := plotter.NewLine(pred)
		if err != nil {
			panic(err)
		}
		line.Color, line.Width, line.Dashes = st.color, vg.Points(1.4), []vg.Length{vg.Points(4), vg.Points(2)}
		sc, err := plotter.NewScatter(meas)
		if err != nil {
			panic(err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: st.color, Radius: vg.Points(3.5), Shape: st.glyph}
		pl.Add(line, sc)
		legend = append(legend, legendEntry{p.Variant, []plot.Thumbnailer{line, sc}})
	}
	if len(legend) == 0 {
		return
	}
	pl.X.Min, pl.X.Max = 0, right*1.05
	pl.Y.Min, pl.Y.Max = 0, top*1.1
	b.add(Chart{
		ID:      "rtt-overhead",
		Title:   pl.Title.Text,
		Caption: "Dashed lines: the round-trip model's prediction (loopback time + round trips × RTT, against plain's); points: measured, on loopback at RTT 0 and with emulated latency beyond.",
		plot:    pl,
		legend:  legend,
		height:  max(chartHeight, legendHeight(len(legend))),
	})
}

// ceilings sets the most new TLS connections per second measured with each
// key against the ceiling its signatures put on the server's cores.
func (b *charter) ceilings() {
	v := b.ix
	if len(v.r.Ceilings) == 0 {
		return
	}
	var bars []bar
	for _, cl := range v.r.Ceilings {
		if !(cl.ConnPerSec() > 0) || !finite(cl.ConnPerSec()) {
			continue
		}
		bars = append(bars, bar{
			label: cl.Key + " ceiling",
			value: cl.ConnPerSec(),
			color: ceilingColor,
			note:  fmt.Sprintf("%s/s (%d × %s)", num(cl.ConnPerSec(), rate), cl.Cores, num(cl.SignPerSec, rate)),
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
			bars = append(bars, bar{
				label: fmt.Sprintf("%s %s", name, plan.Label(at)),
				value: best.Mean, err: best.StdDev,
				color: b.styles[name].color,
				note:  fmt.Sprintf("%s/s, %s of the ceiling", num(best.Mean, rate), pctWords(100*best.Mean/cl.ConnPerSec())),
			})
		}
	}
	if len(bars) == 0 {
		return
	}
	h := &hbars{bars: bars, log: true}
	p := newPlot("new TLS connections per second: measured against the signing ceiling", "new connections per second (log scale)", "")
	b.grid(p, true)
	p.Add(h)
	h.nominal(p)
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = logTicks{}
	b.add(Chart{
		ID:      "ceilings",
		Title:   p.Title.Text,
		Caption: "Grey: the most full handshakes the server's cores can sign per second (cores × signatures per second per core); coloured: the best rate measured with that key (mean over trials at its best concurrency, whiskers ±1 standard deviation).",
		plot:    p,
		height:  barsHeight(len(bars)),
	})
}

// libraryPalette colours crypto libraries, which are not variants.
var libraryPalette = []color.RGBA{{0x4e, 0x79, 0xa7, 0xff}, {0xb0, 0x7a, 0xa1, 0xff}, {0x59, 0xa1, 0x4f, 0xff}, {0xed, 0xc9, 0x48, 0xff}}

// crypto charts the primitives of a crypto run: public-key operations per
// second, and cipher throughput at the largest record size.
func (b *charter) crypto() {
	prims := b.ix.r.Crypto
	if len(prims) == 0 {
		return
	}
	libs := libraries(prims)
	libColor := func(lib string) color.RGBA {
		return libraryPalette[slices.Index(libs, lib)%len(libraryPalette)]
	}
	var pub, ciphers []bar
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
						ciphers = append(ciphers, bar{label: label, value: p.PerCore / 1e6, color: libColor(lib), note: num(p.PerCore/1e6, rate) + " MB/s"})
						label = ""
					}
					continue
				}
				if p, ok := find(lib, kind, name, 0); ok {
					pub = append(pub, bar{label: label, value: p.PerCore, color: libColor(lib), note: num(p.PerCore, rate) + "/s"})
					label = ""
				}
			}
		}
	}
	legend := func() []legendEntry {
		if len(libs) < 2 {
			return nil
		}
		var out []legendEntry
		for _, l := range libs {
			out = append(out, legendEntry{l, []plot.Thumbnailer{swatch{libColor(l)}}})
		}
		return out
	}
	if len(pub) > 0 {
		h := &hbars{bars: pub, log: true}
		p := newPlot("public-key operations per second on one core", "operations per second (log scale)", "")
		b.grid(p, true)
		p.Add(h)
		h.nominal(p)
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = logTicks{}
		b.add(Chart{ID: "crypto-public-key", Title: p.Title.Text, Caption: "Signatures, verifications and key agreements per second on one core; a full handshake costs the server one signature.", plot: p, legend: legend(), height: barsHeight(len(pub))})
	}
	if len(ciphers) > 0 {
		h := &hbars{bars: ciphers}
		p := newPlot(fmt.Sprintf("cipher throughput on one core, %d-byte records", size), "MB/s", "")
		b.grid(p, true)
		p.Add(h)
		h.nominal(p)
		p.X.Min = 0
		b.add(Chart{ID: "crypto-ciphers", Title: p.Title.Text, Caption: "Bulk encryption speed of one core at the largest record size measured.", plot: p, legend: legend(), height: barsHeight(len(ciphers))})
	}
}

// draw lays the plot out with its legend at the right.
func (c Chart) draw(dc draw.Canvas) {
	if len(c.legend) == 0 {
		c.plot.Draw(dc)
		return
	}
	l := plot.NewLegend()
	l.TextStyle.Font = font.From(sans, 8.5)
	l.TextStyle.Color = black
	l.Top, l.Left = true, true
	l.ThumbnailWidth = vg.Points(20)
	l.Padding = vg.Points(3)
	var w vg.Length
	for _, e := range c.legend {
		l.Add(e.name, e.thumbs...)
		w = max(w, l.TextStyle.Width(e.name))
	}
	lw := w + l.ThumbnailWidth + vg.Points(18)
	c.plot.Draw(draw.Crop(dc, 0, -lw, 0, 0))
	top := c.plot.Title.TextStyle.Height(c.plot.Title.Text) + c.plot.Title.Padding + vg.Points(4)
	l.Draw(draw.Crop(dc, dc.Max.X-dc.Min.X-lw+vg.Points(10), 0, 0, -top))
}

// render draws c on a canvas, turning a panic of the plotting library
// (it panics on ranges it cannot draw) into an error.
func (c Chart) render(cv vg.CanvasSizer) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("drawing chart %s: %v", c.ID, p)
		}
	}()
	c.draw(draw.New(cv))
	return nil
}

// SVG renders the chart as a standalone SVG file.
func (c Chart) SVG() ([]byte, error) {
	cv := vgsvg.New(chartWidth, c.height)
	if err := c.render(cv); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := cv.WriteTo(&buf); err != nil {
		return nil, err
	}
	// Name fonts that have Liberation's metrics, for machines without it.
	return bytes.ReplaceAll(buf.Bytes(), []byte("font-family:Liberation Sans;"), []byte(svgFonts)), nil
}

const svgFonts = "font-family:'Liberation Sans',Arial,Helvetica,'DejaVu Sans Condensed',sans-serif;"

// PNGDPI is the resolution of PNG charts: sharp on a wiki page at full width.
const PNGDPI = 144

// PNG renders the chart as a PNG image.
func (c Chart) PNG() ([]byte, error) {
	cv := vgimg.NewWith(vgimg.UseWH(chartWidth, c.height), vgimg.UseDPI(PNGDPI), vgimg.UseBackgroundColor(color.White))
	if err := c.render(cv); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: cv}).WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteCharts writes every chart into dir (created if missing) as ID.svg
// or ID.png, by format, and returns the paths written.
func (m *Model) WriteCharts(dir, format string) ([]string, error) {
	var render func(Chart) ([]byte, error)
	switch format {
	case "svg":
		render = Chart.SVG
	case "png":
		render = Chart.PNG
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
	for _, c := range m.ix.charts() {
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

// variantColors are the variants' colours as CSS writes them, for the
// page's key; variant order.
func variantColors(ix *index) []struct{ Name, Color string } {
	st := styles(ix)
	var out []struct{ Name, Color string }
	for _, name := range ix.variants {
		out = append(out, struct{ Name, Color string }{name, hexColor(st[name].color)})
	}
	return out
}
