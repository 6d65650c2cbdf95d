package chart

import (
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Chart sizes, in points. Every chart has the same width, so that a page
// scales them all alike and their text has one size.
const (
	chartWidth  = vg.Length(600)
	chartHeight = vg.Length(300)
	barPitch    = vg.Length(17) // height per bar of a horizontal bar chart
)

// sans is the typeface of every chart: gonum embeds Liberation, so PNGs
// render without system fonts; SVGs name it and the page falls back to
// metric-compatible Arial (see html.tmpl).
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

var (
	black     = color.RGBA{0x22, 0x22, 0x22, 0xff}
	gridColor = color.RGBA{0xdd, 0xdd, 0xdd, 0xff}
	// plainColor is every plain variant's, in every chart.
	plainColor = color.RGBA{0x70, 0x70, 0x70, 0xff}
)

// Limit is the colour of computed limits (a signing ceiling, a budget, an
// SLO), which are not measurements.
var Limit = color.RGBA{0xc8, 0xc8, 0xc8, 0xff}

// variantPalette colours TLS variants (Tableau 10 without its grey, which
// plain has): distinct on screen and apart in print.
var variantPalette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, // blue
	{0xff, 0x7f, 0x0e, 0xff}, // orange
	{0x2c, 0xa0, 0x2c, 0xff}, // green
	{0xd6, 0x27, 0x28, 0xff}, // red
	{0x94, 0x67, 0xbd, 0xff}, // purple
	{0x8c, 0x56, 0x4b, 0xff}, // brown
	{0xe3, 0x77, 0xc2, 0xff}, // pink
	{0xbc, 0xbd, 0x22, 0xff}, // olive
	{0x17, 0xbe, 0xcf, 0xff}, // cyan
}

// glyphs tell series apart where colours repeat or print in grey.
var glyphs = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PyramidGlyph{},
	draw.CrossGlyph{}, draw.PlusGlyph{}, draw.RingGlyph{}, draw.BoxGlyph{},
}

// phaseColors are the connection phases': the TLS and tunnel phases warm,
// the rest cool and muted, so that the cost of encryption stands out in a
// stacked bar.
var phaseColors = map[string]color.RGBA{
	"tcp":             {0x9e, 0xc5, 0xe0, 0xff},
	"greeting":        {0xc7, 0xd9, 0xa8, 0xff},
	"startup":         {0xd9, 0xc9, 0x9a, 0xff}, // PostgreSQL's backend fork, plain and TLS alike
	"tls-negotiation": {0xf5, 0xb0, 0x57, 0xff}, // results from before the phase rule
	"tls-handshake":   {0xd6, 0x3b, 0x2f, 0xff},
	"tunnel":          {0xa8, 0x4c, 0x9e, 0xff}, // an SSH channel's opening: encryption's cost too
	"auth":            {0x7f, 0xb0, 0x7a, 0xff},
	"query":           {0x4a, 0x76, 0xa8, 0xff},
	"request":         {0x4a, 0x76, 0xa8, 0xff},
	"response":        {0x8a, 0xa4, 0xc8, 0xff},
	"close":           {0xbd, 0xbd, 0xbd, 0xff},
}

// otherPhaseColors serve phases with no colour of their own, in order.
var otherPhaseColors = []color.RGBA{
	{0xb3, 0x9d, 0xdb, 0xff}, {0xe6, 0xc2, 0x8a, 0xff}, {0x99, 0x99, 0x66, 0xff}, {0xd9, 0x8c, 0xb3, 0xff},
}

// Style is how one series is drawn in every chart: a colour, a glyph
// for its points (an index into the glyphs, which repeat) and, for a
// variant measured with emulated latency, which shares its colour with
// the same variant on the bare link, dashes.
type Style struct {
	Color  color.RGBA
	Glyph  int
	Dashed bool
}

// VariantStyle is the style of the i-th kind of TLS variant: the next
// palette colour and glyph.
func VariantStyle(i int, dashed bool) Style {
	return Style{Color: variantPalette[i%len(variantPalette)], Glyph: i, Dashed: dashed}
}

// PlainStyle is the style of the i-th plain variant: plain's grey, with
// glyphs of its own.
func PlainStyle(i int, dashed bool) Style {
	return Style{Color: plainColor, Glyph: len(glyphs) - 2 + i, Dashed: dashed}
}

func (s Style) glyph() draw.GlyphDrawer { return glyphs[s.Glyph%len(glyphs)] }

func (s Style) dashes() []vg.Length {
	if !s.Dashed {
		return nil
	}
	return []vg.Length{vg.Points(5), vg.Points(3)}
}

// PhaseColors colours the phases of a connection, the TLS and tunnel
// phases warm; phases without a colour of their own take the next of a
// few others. The zero value is ready to use, one per figure or page.
type PhaseColors struct{ others map[string]int }

// Of is the colour of the phase name.
func (pc *PhaseColors) Of(name string) color.RGBA {
	if c, ok := phaseColors[name]; ok {
		return c
	}
	if pc.others == nil {
		pc.others = map[string]int{}
	}
	if _, ok := pc.others[name]; !ok {
		pc.others[name] = len(pc.others)
	}
	return otherPhaseColors[pc.others[name]%len(otherPhaseColors)]
}

// libraryPalette colours crypto libraries, which are not variants.
var libraryPalette = []color.RGBA{{0x4e, 0x79, 0xa7, 0xff}, {0xb0, 0x7a, 0xa1, 0xff}, {0x59, 0xa1, 0x4f, 0xff}, {0xed, 0xc9, 0x48, 0xff}}

// LibraryColor is the colour of the i-th crypto library.
func LibraryColor(i int) color.RGBA { return libraryPalette[i%len(libraryPalette)] }

// Hex is c as CSS writes it.
func Hex(c color.RGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

// newPlot is a plot in the report's typeface and sizes, with a title and
// axis labels (units in the labels).
func newPlot(title, xlabel, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(sans, 11)
	p.Title.TextStyle.Color = black
	p.Title.Padding = vg.Points(8)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, 9.5)
		a.Label.TextStyle.Color = black
		a.Tick.Label.Font = font.From(sans, 8.5)
		a.Tick.Label.Color = black
		a.Color = black
		a.Tick.Color = black
		a.Tick.Length = vg.Points(4)
		a.Padding = vg.Points(2)
	}
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	p.X.Tick.Marker = numberTicks{}
	p.Y.Tick.Marker = numberTicks{}
	return p
}

// numberTicks are gonum's default ticks, labelled without exponents: a
// rate of 20000/s reads "20000", not "2e+04".
type numberTicks struct{}

func (numberTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	var labelled []float64
	for _, t := range ts {
		if t.Label != "" {
			labelled = append(labelled, t.Value)
		}
	}
	decimals := 0
	if len(labelled) > 1 {
		step := math.Abs(labelled[1] - labelled[0])
		if step > 0 {
			decimals = max(0, int(math.Ceil(-math.Log10(step)-1e-9)))
		}
	}
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'f', decimals, 64)
		}
	}
	return ts
}

// logTicks label the powers of ten of a log axis, and 2 and 5 times them
// when the axis spans little.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !finite(lo, hi) {
		return nil // no log axis to mark (add keeps such charts out)
	}
	var ts []plot.Tick
	for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi*1.0001; e++ {
		base := math.Pow(10, e)
		for i := 1; i < 10; i++ {
			v := base * float64(i)
			if v < lo*0.9999 || v > hi*1.0001 {
				continue
			}
			t := plot.Tick{Value: v}
			if i == 1 || (hi/lo < 100 && (i == 2 || i == 5)) {
				t.Label = strconv.FormatFloat(v, 'f', max(0, int(-e)), 64)
			}
			ts = append(ts, t)
		}
	}
	return ts
}

// finite reports whether every x is a number gonum can draw.
func finite(xs ...float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// drawable reports whether gonum can draw p's axes: finite ranges (gonum
// would draw an infinite one as 0), above zero on a log scale (it panics).
func drawable(p *plot.Plot) bool {
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		if !finite(a.Min, a.Max) {
			return false
		}
		if _, log := a.Scale.(plot.LogScale); log && !(a.Min > 0 && a.Max > 0) {
			return false
		}
	}
	return true
}
