package chart

import (
	"bytes"
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Width is every chart's, in points: a page scales them all alike, and
// their text has one size.
const Width = chartWidth

// PNGDPI is the resolution of PNG charts: sharp on a wiki page at full width.
const PNGDPI = 144

// chart is a figure laid out by gonum: its plot, the legend drawn at its
// right, and its height.
type chart struct {
	id     string
	plot   *plot.Plot
	legend []legendEntry
	height vg.Length
}

type legendEntry struct {
	name   string
	thumbs []plot.Thumbnailer
}

// layout turns f into a gonum plot. It fails on points gonum refuses (not
// finite).
func layout(f Figure) (chart, error) {
	c := chart{id: f.ID}
	p := newPlot(f.Title, f.X.Label, f.Y.Label)
	switch f.Kind {
	case Bars:
		grid(p, true)
		h := &hbars{bars: f.Bars, log: f.X.Log}
		p.Add(h)
		h.nominal(p)
	case Lines:
		grid(p, false)
		floor := 0.0
		if f.Y.Log && f.Y.Min != nil {
			floor = *f.Y.Min
		}
		for _, s := range f.Series {
			e, err := addSeries(p, s, floor)
			if err != nil {
				return c, fmt.Errorf("chart %s: %w", f.ID, err)
			}
			c.legend = append(c.legend, e)
		}
		for _, g := range f.Guides {
			l, err := plotter.NewLine(plotter.XYs{{X: g.From, Y: g.Y}, {X: g.To, Y: g.Y}})
			if err != nil {
				return c, fmt.Errorf("chart %s: %w", f.ID, err)
			}
			l.Color, l.Width, l.Dashes = Limit, vg.Points(1.2), []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(l)
			c.legend = append(c.legend, legendEntry{g.Name, []plot.Thumbnailer{l}})
		}
	default:
		return c, fmt.Errorf("chart %s: unknown kind %q", f.ID, f.Kind)
	}
	for _, k := range f.Key {
		c.legend = append(c.legend, legendEntry{k.Name, []plot.Thumbnailer{square{k.Color}}})
	}
	f.X.apply(&p.X)
	f.Y.apply(&p.Y)
	c.plot = p
	switch f.Kind {
	case Bars:
		most := 1
		for _, b := range f.Bars {
			most = max(most, lines(b.Label))
		}
		c.height = barsHeight(len(f.Bars), most)
		if len(c.legend) > 0 {
			c.height = max(c.height, c.legendHeight())
		}
	default:
		c.height = max(chartHeight, c.legendHeight())
	}
	return c, nil
}

// addSeries adds s to p: a line through its points with error bars and
// marks, or, for a model, the predicted line and the measured marks.
func addSeries(p *plot.Plot, s Series, floor float64) (legendEntry, error) {
	if s.Model {
		line, err := plotter.NewLine(errPoints(s.Predicted))
		if err != nil {
			return legendEntry{}, err
		}
		line.Color, line.Width, line.Dashes = s.Style.Color, vg.Points(1.4), []vg.Length{vg.Points(4), vg.Points(2)}
		sc, err := plotter.NewScatter(errPoints(s.Points))
		if err != nil {
			return legendEntry{}, err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: s.Style.Color, Radius: vg.Points(3.5), Shape: s.Style.glyph()}
		p.Add(line, sc)
		return legendEntry{s.Name, []plot.Thumbnailer{line, sc}}, nil
	}
	pts := errPoints(s.Points)
	line, err := plotter.NewLine(pts)
	if err != nil {
		return legendEntry{}, err
	}
	line.Color, line.Width, line.Dashes = s.Style.Color, vg.Points(1.6), s.Style.dashes()
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return legendEntry{}, err
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: s.Style.Color, Radius: vg.Points(3), Shape: s.Style.glyph()}
	var bars interface {
		plotter.XYer
		plotter.YErrorer
	} = pts
	if floor > 0 {
		bars = floored{pts, floor}
	}
	eb, err := plotter.NewYErrorBars(bars)
	if err != nil {
		return legendEntry{}, err
	}
	eb.Color, eb.Width, eb.CapWidth = s.Style.Color, vg.Points(1), vg.Points(6)
	p.Add(line, eb, sc)
	return legendEntry{s.Name, []plot.Thumbnailer{line, sc}}, nil
}

// apply sets a's scale, ticks and bounds on the plot's axis.
func (a Axis) apply(pa *plot.Axis) {
	if a.Log {
		pa.Scale = plot.LogScale{}
		pa.Tick.Marker = logTicks{}
	}
	if len(a.Ticks) > 0 {
		ticks := make([]plot.Tick, len(a.Ticks))
		for i, t := range a.Ticks {
			ticks[i] = plot.Tick{Value: t.Value, Label: t.Label}
		}
		pa.Tick.Marker = plot.ConstantTicks(ticks)
	}
	if a.Min != nil {
		pa.Min = *a.Min
	}
	if a.Max != nil {
		pa.Max = *a.Max
	}
}

// grid draws light lines at the ticks of the value axis.
func grid(p *plot.Plot, vertical bool) {
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

// barsHeight fits n bars whose labels take up to lines lines each.
func barsHeight(n, lines int) vg.Length {
	return vg.Points(78) + (barPitch+lineHeight*vg.Length(lines-1))*vg.Length(n)
}

// legendHeight fits the legend's entries, each as high as the one of
// most lines (gonum gives every entry one height).
func (c chart) legendHeight() vg.Length {
	most := 1
	for _, e := range c.legend {
		most = max(most, lines(e.name))
	}
	return vg.Points(60) + (vg.Points(13)+lineHeight*vg.Length(most-1))*vg.Length(len(c.legend))
}

// lineHeight is what a label's second line adds.
const lineHeight = vg.Length(10)

// Drawable reports whether gonum can draw f: finite points, finite axis
// ranges (gonum would draw an infinite one as 0), and above zero on a log
// scale (it panics). Results built in memory are not validated, and even
// a valid file's figures can overflow once summed (1e308 ms twice): a
// report leaves such a figure out rather than draw it wrong.
func Drawable(f Figure) bool {
	c, err := layout(f)
	return err == nil && drawable(c.plot)
}

// draw lays the plot out with its legend at the right.
func (c chart) draw(dc draw.Canvas) {
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
		l.Add(wrap(e.name), e.thumbs...)
		w = max(w, l.TextStyle.Width(wrap(e.name)))
	}
	lw := w + l.ThumbnailWidth + vg.Points(18)
	c.plot.Draw(draw.Crop(dc, 0, -lw, 0, 0))
	top := c.plot.Title.TextStyle.Height(c.plot.Title.Text) + c.plot.Title.Padding + vg.Points(4)
	l.Draw(draw.Crop(dc, dc.Max.X-dc.Min.X-lw+vg.Points(10), 0, 0, -top))
}

// render lays f out and draws it on a canvas of its size, turning a panic
// of the plotting library (it panics on ranges it cannot draw) into an
// error.
func render(f Figure, canvas func(height vg.Length) vg.CanvasSizer) (cv vg.CanvasSizer, err error) {
	c, err := layout(f)
	if err != nil {
		return nil, err
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("drawing chart %s: %v", c.id, p)
		}
	}()
	cv = canvas(c.height)
	c.draw(draw.New(cv))
	return cv, nil
}

// SVG draws f as a standalone SVG file.
func SVG(f Figure) ([]byte, error) {
	cv, err := render(f, func(h vg.Length) vg.CanvasSizer { return vgsvg.New(chartWidth, h) })
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := cv.(*vgsvg.Canvas).WriteTo(&buf); err != nil {
		return nil, err
	}
	// Name fonts that have Liberation's metrics, for machines without it.
	return bytes.ReplaceAll(buf.Bytes(), []byte("font-family:Liberation Sans;"), []byte(svgFonts)), nil
}

const svgFonts = "font-family:'Liberation Sans',Arial,Helvetica,'DejaVu Sans Condensed',sans-serif;"

// PNG draws f as a PNG image.
func PNG(f Figure) ([]byte, error) {
	cv, err := render(f, func(h vg.Length) vg.CanvasSizer {
		return vgimg.NewWith(vgimg.UseWH(chartWidth, h), vgimg.UseDPI(PNGDPI), vgimg.UseBackgroundColor(color.White))
	})
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: cv.(*vgimg.Canvas)}).WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
