package chart

import (
	"image/color"
	"math"
	"strings"
	"unicode/utf8"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// hbars draws bars left to right, the first at the top, labelled on the Y
// axis (see nominal). gonum's BarChart colours a whole series alike; here
// every bar keeps its variant's colour.
type hbars struct {
	bars []Bar
	// log draws from the axis minimum, as a log axis has no zero.
	log bool
}

const barFill = 0.68 // of the pitch between bars

func (h *hbars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	half := vg.Length(math.Abs(float64(trY(barFill/2) - trY(0))))
	base := 0.0
	if h.log {
		base = p.X.Min
	}
	note := text.Style{Color: black, Font: font.From(sans, 8), XAlign: draw.XLeft, YAlign: draw.YCenter, Handler: p.TextHandler}
	whisker := draw.LineStyle{Color: black, Width: vg.Points(0.8)}
	n := len(h.bars)
	for i, b := range h.bars {
		y := trY(float64(n - 1 - i))
		x0 := trX(base)
		segs := b.Segments
		if len(segs) == 0 {
			segs = []Segment{{b.Value, b.Color}}
		}
		at := base
		for _, s := range segs {
			if s.Value <= 0 || math.IsNaN(s.Value) {
				continue
			}
			x1 := trX(at + s.Value)
			c.FillPolygon(s.Color, []vg.Point{{X: x0, Y: y - half}, {X: x1, Y: y - half}, {X: x1, Y: y + half}, {X: x0, Y: y + half}})
			at += s.Value
			x0 = x1
		}
		end := trX(at)
		if b.Err > 0 && len(b.Segments) == 0 {
			lo, hi := trX(math.Max(b.Value-b.Err, base)), trX(b.Value+b.Err)
			c.StrokeLine2(whisker, lo, y, hi, y)
			c.StrokeLine2(whisker, lo, y-half/2, lo, y+half/2)
			c.StrokeLine2(whisker, hi, y-half/2, hi, y+half/2)
			end = max(end, hi)
		}
		if b.Note != "" {
			c.FillText(note, vg.Point{X: end + vg.Points(4), Y: y}, b.Note)
		}
	}
}

// DataRange leaves room right of the longest bar for its note.
func (h *hbars) DataRange() (xmin, xmax, ymin, ymax float64) {
	top := 0.0
	xmin = math.Inf(1)
	for _, b := range h.bars {
		v := b.Value + max(b.Err, 0)
		if !(v >= 0) { // NaN: leave it out rather than poison the range
			continue
		}
		top = math.Max(top, v)
		if b.Value > 0 {
			xmin = math.Min(xmin, b.Value)
		}
	}
	if top <= 0 {
		top = 1
	}
	if h.log {
		if math.IsInf(xmin, 1) {
			xmin = top
		}
		return xmin / 2, top * 8, -0.6, float64(len(h.bars)) - 0.4
	}
	return 0, top * 1.16, -0.6, float64(len(h.bars)) - 0.4
}

// nominal labels the Y axis with the bars' labels, first at the top.
func (h *hbars) nominal(p *plot.Plot) {
	var ticks []plot.Tick
	n := len(h.bars)
	for i, b := range h.bars {
		ticks = append(ticks, plot.Tick{Value: float64(n - 1 - i), Label: wrap(b.Label)})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Tick.Length = 0
	p.Y.Width = 0
}

// square is a legend thumbnail: a filled square.
type square struct{ color color.Color }

func (s square) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}}
	c.FillPolygon(s.color, pts)
}

// errPoints are means with a symmetric spread, for plotter.YErrorBars.
type errPoints []Point

func (e errPoints) Len() int                    { return len(e) }
func (e errPoints) XY(i int) (float64, float64) { return e[i].X, e[i].Y }
func (e errPoints) YError(i int) (float64, float64) {
	return e[i].Err, e[i].Err
}

// floored are points whose error bars stop at floor below: a log axis
// has no zero to reach (gonum panics at it).
type floored struct {
	errPoints
	floor float64
}

func (f floored) YError(i int) (float64, float64) {
	p := f.errPoints[i]
	// Down to floor, or to a tenth of Y where floor is so far below that
	// Y-floor rounds to Y (gonum would reach 0).
	return min(p.Err, p.Y-f.floor, 0.9*p.Y), p.Err
}

// labelWidth is the longest line of a bar's or legend entry's label, in
// characters: beyond it a label wraps at its spaces (a variant's words:
// version, key, options), so that long labels do not take the plot's
// width. A word longer than that keeps a line of its own.
const labelWidth = 18

// wrap breaks s at spaces into lines of at most labelWidth characters.
func wrap(s string) string {
	words := strings.Fields(s)
	if utf8.RuneCountInString(s) <= labelWidth || len(words) < 2 {
		return s
	}
	var lines []string
	line := words[0]
	for _, w := range words[1:] {
		if utf8.RuneCountInString(line)+1+utf8.RuneCountInString(w) > labelWidth {
			lines = append(lines, line)
			line = w
			continue
		}
		line += " " + w
	}
	return strings.Join(append(lines, line), "\n")
}

// lines is how many lines s takes once wrapped.
func lines(s string) int { return strings.Count(wrap(s), "\n") + 1 }
