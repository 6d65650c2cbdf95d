package stats

import "math"

// Welch compares two independent samples, new against old: trials of two
// different runs, which share no rounds to pair. Pct is the change of the
// mean, (mean(new)/mean(old)-1)*100; CI95 the half-width of the 95% Welch
// t-interval of the difference of the means (Welch-Satterthwaite degrees of
// freedom), relative to mean(old), which it treats as exact; P the two-sided
// p-value of Welch's t-test. N is the smaller sample's size. With fewer than
// two values on either side CI95 and P are NaN and the change is never
// significant; with no value, or a zero old mean, N is 0 and Pct NaN.
func Welch(old, new []float64) Delta {
	a, b := Summarize(old), Summarize(new)
	if a.N == 0 || b.N == 0 || a.Mean == 0 {
		return Delta{Pct: math.NaN(), CI95: math.NaN(), P: math.NaN()}
	}
	d := Delta{N: min(a.N, b.N), Pct: (b.Mean/a.Mean - 1) * 100, CI95: math.NaN(), P: math.NaN()}
	if a.N < 2 || b.N < 2 {
		return d
	}
	va, vb := a.StdDev*a.StdDev/float64(a.N), b.StdDev*b.StdDev/float64(b.N)
	se := math.Sqrt(va + vb)
	diff := b.Mean - a.Mean
	if se == 0 {
		// No spread on either side: any difference is certain.
		d.CI95 = 0
		d.P = 1
		if diff != 0 {
			d.P = 0
		}
		d.Significant = diff != 0
		return d
	}
	df := (va + vb) * (va + vb) / (va*va/float64(a.N-1) + vb*vb/float64(b.N-1))
	d.CI95 = TQuantile975F(df) * se / math.Abs(a.Mean) * 100
	d.P = TTwoSided(diff/se, df)
	d.Significant = math.Abs(d.Pct) > d.CI95
	return d
}
