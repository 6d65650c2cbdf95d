// Package chart draws a report's figures as SVG or PNG with gonum/plot. A
// Figure is plain data (bars, or series of points, with their colours and
// words), filled by package report; this package decides only how it looks.
package chart

import (
	"image/color"
	"math"
	"slices"
)

// Kind is how a figure is drawn.
type Kind string

const (
	// Bars is one horizontal bar per row, the first at the top, labelled
	// on the Y axis: a value with a whisker, or a stack of segments.
	Bars Kind = "bars"
	// Lines is series of points over the X axis, each point with its error
	// bar, and horizontal guides (an SLO, a budget).
	Lines Kind = "lines"
)

// Figure is one chart of a report: what it shows and how to read it.
type Figure struct {
	// ID names the figure in a page and its file: connect-rate-c1.
	ID    string
	Title string
	// Caption says how to read the figure: what a bar, whisker or line is.
	Caption string
	Kind    Kind
	// X and Y are the axes; a Bars figure labels its Y axis with its bars.
	X, Y Axis

	Bars   []Bar    // Kind Bars
	Series []Series // Kind Lines
	Guides []Guide  // Kind Lines, drawn over the series
	// Key is legend entries drawn as colour squares (phases, libraries),
	// after the series' and guides' own.
	Key []Swatch
}

// Axis is one axis of a figure.
type Axis struct {
	Label string
	// Log draws the axis on a log scale, labelled at powers of ten unless
	// Ticks are given.
	Log bool
	// Min and Max bound the axis; nil takes the bound from the data.
	Min, Max *float64
	// Ticks are fixed marks (the concurrencies of a sweep), if any.
	Ticks []Tick
}

// Tick is one labelled mark of an axis.
type Tick struct {
	Value float64
	Label string
}

// At is a bound of an axis: chart.Axis{Min: chart.At(0)}.
func At(x float64) *float64 { return &x }

// Bar is one row of a Bars figure: a single value with its spread, or a
// stack of segments (then Value is their sum).
type Bar struct {
	Label string
	Value float64
	// Err is the spread drawn as a whisker (a standard deviation), 0 for
	// none.
	Err      float64
	Color    color.RGBA
	Segments []Segment
	// Note is printed right of the bar: its value, or what it is.
	Note string
}

// Segment is one part of a stacked bar.
type Segment struct {
	Value float64
	Color color.RGBA
}

// Series is one named line of a Lines figure, with a legend entry.
type Series struct {
	Name   string
	Style  Style
	Points []Point
	// Model sets measurements against a model's prediction: Predicted is
	// drawn as a thin dashed line, and Points as marks alone, without a
	// line or error bars. Otherwise Points are joined by a line, each
	// with its error bar.
	Model     bool
	Predicted []Point
}

// Point is a mean and its symmetric spread (Err, 0 for none).
type Point struct{ X, Y, Err float64 }

// Guide is a horizontal dashed line across a Lines figure, from X From to
// To at Y, with a legend entry.
type Guide struct {
	Name        string
	Y, From, To float64
}

// Swatch is a named colour: a legend entry, or a variant's colour in a
// page's key.
type Swatch struct {
	Name  string
	Color color.RGBA
}

// Shows reports whether f shows something a table does not say as well:
// lines need two places on their X axis (one is a table's row), bars two
// bars, or one bar split into segments (its parts are the point). A
// report leaves other figures out; its tables hold their figures.
func (f Figure) Shows() bool {
	switch f.Kind {
	case Lines:
		var xs []float64
		for _, s := range f.Series {
			for _, p := range append(s.Points, s.Predicted...) {
				if !slices.Contains(xs, p.X) {
					xs = append(xs, p.X)
				}
			}
		}
		return len(xs) >= 2
	case Bars:
		return len(f.Bars) >= 2 || len(f.Bars) == 1 && len(f.Bars[0].Segments) >= 2
	}
	return false
}

// DwarfRatio is how many times the largest point of a line chart may be
// its smallest on a linear axis: beyond it, the small ones are squashed
// into the bottom tenth of the chart (plain's connections/s over TLS's),
// and the report draws the axis on a log scale instead (Dwarfs). Bars
// stay linear: a bar's length is its value, and its note says it.
const DwarfRatio = 10

// Dwarfs reports whether the largest of vs is more than DwarfRatio times
// the smallest; never where one is not above zero, which a log axis
// cannot show.
func Dwarfs(vs []float64) bool {
	lo, hi := math.Inf(1), 0.0
	for _, v := range vs {
		if !(v > 0) || math.IsInf(v, 0) {
			return false
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	return hi > DwarfRatio*lo
}
