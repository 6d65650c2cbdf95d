package report

import (
	"math"
	"testing"

	"github.com/tlsbench/tlsbench/internal/stats"
)

// TestSig3 checks the one precision of the report's figures: three
// significant digits at every size, rounding that carries into a new digit,
// no "-0", and "-" for what is unknown.
func TestSig3(t *testing.T) {
	tests := []struct {
		v    float64
		want string
	}{
		{0, "0"},
		{0.0004999, "0.000500"},
		{0.04203, "0.0420"},
		{0.052, "0.0520"},
		{1.2345, "1.23"},
		{9.996, "10.0"},
		{45.64, "45.6"},
		{99.96, "100"},
		{312.4, "312"},
		{661.926, "662"},
		{999.7, "1000"},
		{1361, "1360"},
		{1920.4, "1920"},
		{8653, "8650"},
		{123456, "123000"},
		{-0.00001, "-0.0000100"},
		{-2.4517, "-2.45"},
		{-0.0004, "-0.000400"},
		{math.NaN(), "-"},
		{math.Inf(1), "-"},
	}
	for _, tt := range tests {
		if got := num(tt.v, sig3); got != tt.want {
			t.Errorf("num(%v, sig3) = %q, want %q", tt.v, got, tt.want)
		}
	}
	// Rates and times are printed alike.
	if num(90.84, rate) != "90.8" || num(1.2, millis) != "1.20" {
		t.Errorf("rate, millis: %q, %q", num(90.84, rate), num(1.2, millis))
	}
}

// TestPercentFigures checks changes in percent: three significant digits,
// at most one decimal, a sign, the interval at the same precision.
func TestPercentFigures(t *testing.T) {
	tests := []struct {
		d    stats.Delta
		want string
	}{
		{stats.Delta{N: 5, Pct: -41.72, CI95: 42.51}, "-41.7% ±42.5  "},
		{stats.Delta{N: 5, Pct: 140.84, CI95: 272.9}, "+141% ±273  "},
		{stats.Delta{N: 5, Pct: 0.04, CI95: 0.5, Significant: false}, "0.0% ±0.5  "},
		{stats.Delta{N: 5, Pct: -95.27, CI95: 1.04, Significant: true}, "-95.3% ±1.0 *"},
		{stats.Delta{N: 1, Pct: 77.4, CI95: math.NaN()}, "+77.4%  "},
		{stats.Delta{}, "-"},
	}
	for _, tt := range tests {
		if got := delta(tt.d); got != tt.want {
			t.Errorf("delta(%+v) = %q, want %q", tt.d, got, tt.want)
		}
	}
	for v, want := range map[float64]string{90.72: "90.7%", 4.7: "4.7%", 0.04: "0.0%", 100: "100%"} {
		if got := pctWords(v); got != want {
			t.Errorf("pctWords(%v) = %q, want %q", v, got, want)
		}
	}
}
