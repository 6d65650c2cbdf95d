package stats

import (
	"math"
	"testing"
)

func near(a, b, tol float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= tol
}

func TestSummarize(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name string
		xs   []float64
		want Summary
	}{
		{"empty", nil, Summary{Mean: nan, CI95: nan}},
		{"one", []float64{7}, Summary{N: 1, Mean: 7, CI95: nan}},
		{"four", []float64{1, 2, 3, 4}, Summary{N: 4, Mean: 2.5, StdDev: 1.290994, CI95: 3.182446 * 1.290994 / 2}},
		{"constant", []float64{5, 5, 5}, Summary{N: 3, Mean: 5}},
		{"two", []float64{10, 12}, Summary{N: 2, Mean: 11, StdDev: math.Sqrt2, CI95: 12.706205 * math.Sqrt2 / math.Sqrt2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Summarize(tt.xs)
			if got.N != tt.want.N || !near(got.Mean, tt.want.Mean, 1e-9) ||
				!near(got.StdDev, tt.want.StdDev, 1e-6) || !near(got.CI95, tt.want.CI95, 1e-5) {
				t.Errorf("Summarize(%v) = %+v, want %+v", tt.xs, got, tt.want)
			}
		})
	}
}

func TestTQuantile975Known(t *testing.T) {
	tests := []struct {
		df   int
		want float64
	}{
		{1, 12.706}, {2, 4.303}, {3, 3.182}, {5, 2.571}, {10, 2.228}, {20, 2.086},
		{30, 2.042}, {31, 2.040}, {40, 2.021}, {60, 2.000}, {120, 1.980}, {1000, 1.962},
	}
	for _, tt := range tests {
		if got := TQuantile975(tt.df); !near(got, tt.want, 0.0005) {
			t.Errorf("TQuantile975(%d) = %.5f, want %.3f", tt.df, got, tt.want)
		}
	}
	if got := TQuantile975(0); !math.IsNaN(got) {
		t.Errorf("TQuantile975(0) = %v, want NaN", got)
	}
}

// TestTQuantile975Integral checks every quantile against the t distribution
// itself: the density integrated from 0 to q must be 0.475.
func TestTQuantile975Integral(t *testing.T) {
	for _, df := range []int{1, 2, 3, 4, 7, 12, 19, 25, 29, 30, 31, 32, 35, 45, 70, 200, 5000} {
		q := TQuantile975(df)
		p := tIntegral(df, q)
		// 3 decimals in q: the probability error is at most density(q) * 0.0005.
		if tol := tDensity(df, q) * 0.0005; math.Abs(p-0.475) > tol {
			t.Errorf("df %d: P(0 < T < %.5f) = %.7f, want 0.475 ± %.7f", df, q, p, tol)
		}
	}
}

func tDensity(df int, x float64) float64 {
	n := float64(df)
	lg1, _ := math.Lgamma((n + 1) / 2)
	lg2, _ := math.Lgamma(n / 2)
	return math.Exp(lg1-lg2-0.5*math.Log(n*math.Pi)) * math.Pow(1+x*x/n, -(n+1)/2)
}

// tIntegral integrates the density over [0, q] by Simpson's rule.
func tIntegral(df int, q float64) float64 {
	const steps = 20000
	h := q / steps
	sum := tDensity(df, 0) + tDensity(df, q)
	for i := 1; i < steps; i++ {
		w := 2.0
		if i%2 == 1 {
			w = 4
		}
		sum += w * tDensity(df, float64(i)*h)
	}
	return sum * h / 3
}

func TestPaired(t *testing.T) {
	base := []float64{1000, 1040, 980, 1010, 995}
	tests := []struct {
		name    string
		base, v []float64
		pct     float64 // want, ±0.01
		signif  bool
		n       int
	}{
		{"doubled", base, []float64{2010, 2070, 1950, 2030, 1990}, 100, true, 5},
		{"halved", base, []float64{500, 520, 490, 505, 497.5}, -50, true, 5},
		// The same series with noise of both signs: no change can be claimed.
		{"noise", base, []float64{1012, 1031, 985, 998, 1001}, 0.0519, false, 5},
		// Drift shared by both series cancels in the pairs.
		{"drift", []float64{1000, 1200, 800}, []float64{900, 1080, 720}, -10, true, 3},
		{"one pair", []float64{1000}, []float64{500}, -50, false, 1},
		{"shorter variant", base, []float64{2000, 2080}, 100, true, 2},
		{"zero base skipped", []float64{0, 1000, 1000}, []float64{5, 1500, 1500}, 50, true, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Paired(tt.base, tt.v)
			if d.N != tt.n || !near(d.Pct, tt.pct, 0.01) || d.Significant != tt.signif {
				t.Errorf("Paired = %+v, want N %d, Pct %.2f, Significant %v", d, tt.n, tt.pct, tt.signif)
			}
		})
	}
	if d := Paired(nil, nil); d.N != 0 || !math.IsNaN(d.Pct) || d.Significant {
		t.Errorf("Paired(nil, nil) = %+v, want N 0, Pct NaN, not significant", d)
	}
}

func TestQuantile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3}
	for _, tt := range []struct{ p, want float64 }{{0.5, 3}, {0.95, 5}, {0.2, 1}, {0.21, 2}, {1, 5}, {0.01, 1}} {
		if got := Quantile(xs, tt.p); got != tt.want {
			t.Errorf("Quantile(%v) = %v, want %v", tt.p, got, tt.want)
		}
	}
	if !math.IsNaN(Quantile(nil, 0.5)) || xs[0] != 5 {
		t.Errorf("Quantile of none is not NaN, or xs changed: %v", xs)
	}
}
