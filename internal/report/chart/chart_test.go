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
