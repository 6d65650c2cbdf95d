package chart

import (
	"bytes"
	"math"
	"testing"
)

// TestDrawable: a figure gonum cannot draw is refused before drawing, and
// one it can draw renders as SVG and PNG.
func TestDrawable(t *testing.T) {
	bars := Figure{ID: "bars", Title: "bars", Kind: Bars, X: Axis{Label: "ms", Min: At(0)},
		Bars: []Bar{{Label: "plain", Value: 1, Err: 0.1, Color: PlainStyle(0, false).Color, Note: "1 ms"}}}
	lines := Figure{ID: "lines", Title: "lines", Kind: Lines, X: Axis{Log: true, Min: At(0.5), Max: At(8)},
		Series: []Series{{Name: "tls", Style: VariantStyle(0, true), Points: []Point{{1, 2, 0.5}, {4, 3, 0}}}},
		Guides: []Guide{{Name: "SLO", Y: 2.5, From: 0.5, To: 8}}}
	for _, f := range []Figure{bars, lines} {
		if !Drawable(f) {
			t.Errorf("%s: not drawable", f.ID)
		}
		svg, err := SVG(f)
		if err != nil || !bytes.Contains(svg, []byte("</svg>")) {
			t.Errorf("%s: SVG: %v", f.ID, err)
		}
		if _, err := PNG(f); err != nil {
			t.Errorf("%s: PNG: %v", f.ID, err)
		}
	}
	overflow := bars
	overflow.Bars = []Bar{{Label: "x", Value: 1e308, Err: 1e308}}
	nan := lines
	nan.Series = []Series{{Name: "x", Points: []Point{{1, math.NaN(), 0}}}}
	logZero := lines
	logZero.X.Min = At(0)
	unknown := bars
	unknown.Kind = "pie"
	for name, f := range map[string]Figure{"overflow": overflow, "NaN": nan, "log from 0": logZero, "unknown kind": unknown} {
		if Drawable(f) {
			t.Errorf("%s: drawable", name)
		}
	}
}

// TestShows: a chart is drawn only where it shows more than a table's
// row: two places on the X axis, two bars, or one bar's parts.
func TestShows(t *testing.T) {
	pts := func(xs ...float64) []Point {
		var out []Point
		for _, x := range xs {
			out = append(out, Point{X: x, Y: 1})
		}
		return out
	}
	for _, tt := range []struct {
		name string
		f    Figure
		want bool
	}{
		{"one point", Figure{Kind: Lines, Series: []Series{{Points: pts(100)}}}, false},
		{"one X, three series", Figure{Kind: Lines, Series: []Series{{Points: pts(100)}, {Points: pts(100)}, {Points: pts(100)}}}, false},
		{"two X", Figure{Kind: Lines, Series: []Series{{Points: pts(1, 2)}}}, true},
		{"a model and one measurement", Figure{Kind: Lines, Series: []Series{{Model: true, Points: pts(0), Predicted: pts(0, 20)}}}, true},
		{"one bar", Figure{Kind: Bars, Bars: []Bar{{Label: "plain", Value: 1}}}, false},
		{"one stacked bar", Figure{Kind: Bars, Bars: []Bar{{Label: "tls", Value: 2, Segments: []Segment{{Value: 1}, {Value: 1}}}}}, true},
		{"two bars", Figure{Kind: Bars, Bars: []Bar{{Label: "plain", Value: 1}, {Label: "tls", Value: 2}}}, true},
	} {
		if got := tt.f.Shows(); got != tt.want {
			t.Errorf("%s: Shows() = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestDwarfs(t *testing.T) {
	for _, tt := range []struct {
		vs   []float64
		want bool
	}{
		{[]float64{4134, 456, 2210, 370}, true}, // plain over TLS connect rates
		{[]float64{4134, 2210, 1088}, false},
		{[]float64{1718, 23.1}, true},
		{[]float64{1718, 0}, false}, // a log axis has no zero
		{[]float64{5}, false},
	} {
		if got := Dwarfs(tt.vs); got != tt.want {
			t.Errorf("Dwarfs(%v) = %v, want %v", tt.vs, got, tt.want)
		}
	}
}

func TestWrap(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                            "plain",
		"tls1.3 ecdsa-p256 resume":         "tls1.3 ecdsa-p256\nresume",
		"tls1.3 rsa2048 mtls-ecdsa-p256":   "tls1.3 rsa2048\nmtls-ecdsa-p256",
		"tls1.3 ecdsa-p256 x25519mlkem768": "tls1.3 ecdsa-p256\nx25519mlkem768",
		"x25519mlkem768-and-more-words":    "x25519mlkem768-and-more-words",
	} {
		if got := wrap(in); got != want {
			t.Errorf("wrap(%q) = %q, want %q", in, got, want)
		}
	}
}
