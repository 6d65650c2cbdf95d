package stats

import (
	"math"
	"testing"
)

func TestTQuantile975F(t *testing.T) {
	// Whole df agree with the table and its expansion.
	for df := 1; df <= 200; df++ {
		if got, want := TQuantile975F(float64(df)), TQuantile975(df); !near(got, want, 0.0006) {
			t.Errorf("TQuantile975F(%d) = %.5f, TQuantile975 = %.5f", df, got, want)
		}
	}
	// Fractional df: the density integrated from 0 to q is 0.475.
	for _, df := range []float64{1.3, 2.5, 3.7, 4.02, 9.9, 24.9, 57.5} {
		q := TQuantile975F(df)
		if p := tIntegralF(df, q); !near(p, 0.475, 1e-6) {
			t.Errorf("df %.2f: P(0 < T < %.5f) = %.7f, want 0.475", df, q, p)
		}
		if lo, hi := TQuantile975(int(math.Ceil(df))), TQuantile975(int(df)); q < lo || q > hi {
			t.Errorf("TQuantile975F(%.2f) = %.4f, not between %.4f and %.4f", df, q, lo, hi)
		}
	}
	for _, df := range []float64{0, -1, math.NaN()} {
		if got := TQuantile975F(df); !math.IsNaN(got) {
			t.Errorf("TQuantile975F(%v) = %v, want NaN", df, got)
		}
	}
}

func TestTTwoSided(t *testing.T) {
	tests := []struct{ t, df, want float64 }{
		{0, 5, 1},
		{TQuantile975(5), 5, 0.05},
		{-TQuantile975(12), 12, 0.05},
		{2.5, 3.5, 1 - 2*tIntegralF(3.5, 2.5)},
		{math.Inf(1), 4, 0},
	}
	for _, tt := range tests {
		if got := TTwoSided(tt.t, tt.df); !near(got, tt.want, 1e-5) {
			t.Errorf("TTwoSided(%v, %v) = %.6f, want %.6f", tt.t, tt.df, got, tt.want)
		}
	}
}

func TestWelch(t *testing.T) {
	nan := math.NaN()
	// Wikipedia's first Welch's t-test example: t = -2.46, df = 24.9,
	// p = 0.021. "halved": df = 2.94 by Welch-Satterthwaite, t(2.94) = 3.219.
	a1 := []float64{27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4}
	a2 := []float64{27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4}
	tests := []struct {
		name     string
		old, new []float64
		want     Delta
		tol      float64
	}{
		{"wikipedia", a1, a2, Delta{N: 15, Pct: (344.8/312.3 - 1) * 100, CI95: 8.73, Significant: true, P: 0.021}, 0.001},
		{"halved", []float64{100, 104, 96}, []float64{50, 52, 48}, Delta{N: 3, Pct: -50, CI95: 8.3108, Significant: true, P: 0.00034}, 1e-4},
		{"same", []float64{10, 12, 11}, []float64{11, 10, 12}, Delta{N: 3, Pct: 0, CI95: 2.776445 * math.Sqrt(2.0/3) / 11 * 100, P: 1}, 1e-4},
		{"unequal sizes", []float64{1, 2, 3, 4}, []float64{5}, Delta{N: 1, Pct: 100, CI95: nan, P: nan}, 1e-9},
		{"constant, different", []float64{5, 5}, []float64{6, 6}, Delta{N: 2, Pct: 20, CI95: 0, Significant: true, P: 0}, 1e-9},
		{"constant, equal", []float64{5, 5}, []float64{5, 5, 5}, Delta{N: 2, Pct: 0, CI95: 0, P: 1}, 1e-9},
		{"old empty", nil, []float64{1, 2}, Delta{Pct: nan, CI95: nan, P: nan}, 0},
		{"old zero", []float64{0, 0}, []float64{1, 2}, Delta{Pct: nan, CI95: nan, P: nan}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Welch(tt.old, tt.new)
			if got.N != tt.want.N || got.Significant != tt.want.Significant ||
				!near(got.Pct, tt.want.Pct, 1e-9) || !near(got.CI95, tt.want.CI95, tt.tol*math.Max(1, tt.want.CI95)) ||
				!near(got.P, tt.want.P, tt.tol) {
				t.Errorf("Welch(%v, %v) = %+v, want %+v", tt.old, tt.new, got, tt.want)
			}
		})
	}
}

func TestPairedP(t *testing.T) {
	// Per-round changes of +10% ±0: certain; of -1, +1: none.
	if d := Paired([]float64{10, 20}, []float64{11, 22}); d.P != 0 {
		t.Errorf("constant change: P = %v, want 0", d.P)
	}
	if d := Paired([]float64{100, 100}, []float64{99, 101}); !near(d.P, 1, 1e-9) {
		t.Errorf("no change: P = %v, want 1", d.P)
	}
	if d := Paired([]float64{1}, []float64{2}); !math.IsNaN(d.P) {
		t.Errorf("one pair: P = %v, want NaN", d.P)
	}
}

// tIntegralF integrates the t density with df (not necessarily whole)
// degrees of freedom over [0, q] by Simpson's rule.
func tIntegralF(df, q float64) float64 {
	density := func(x float64) float64 {
		lg1, _ := math.Lgamma((df + 1) / 2)
		lg2, _ := math.Lgamma(df / 2)
		return math.Exp(lg1-lg2-0.5*math.Log(df*math.Pi)) * math.Pow(1+x*x/df, -(df+1)/2)
	}
	const steps = 20000
	h := q / steps
	sum := density(0) + density(q)
	for i := 1; i < steps; i++ {
		w := 2.0
		if i%2 == 1 {
			w = 4
		}
		sum += w * density(float64(i)*h)
	}
	return sum * h / 3
}
