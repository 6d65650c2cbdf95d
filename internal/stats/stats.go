// Package stats turns trial values into summaries, paired overheads and latency histograms.
package stats

import (
	"math"
	"slices"
)

// Summary describes trial values: mean, sample standard deviation (n-1) and
// the half-width of the 95% confidence interval of the mean (Student t).
// With one value StdDev is 0 and CI95 NaN; with none Mean and CI95 are NaN.
type Summary struct {
	N      int
	Mean   float64
	StdDev float64
	CI95   float64
}

// Summarize describes xs.
func Summarize(xs []float64) Summary {
	n := len(xs)
	if n == 0 {
		return Summary{Mean: math.NaN(), CI95: math.NaN()}
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	mean := sum / float64(n)
	if n == 1 {
		return Summary{N: 1, Mean: mean, CI95: math.NaN()}
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(ss / float64(n-1))
	return Summary{N: n, Mean: mean, StdDev: sd, CI95: TQuantile975(n-1) * sd / math.Sqrt(float64(n))}
}

// Delta is the relative change of a variant against the baseline in percent,
// from paired trials: round i of the variant against round i of the baseline,
// so that machine drift, which hits both alike, cancels. Pct is the mean over
// rounds of (v/base-1)*100 and CI95 the t-interval half-width of those
// per-round values (NaN with fewer than two pairs). Significant reports
// whether the interval excludes 0; P is the two-sided p-value of the same
// t-test (NaN where CI95 is). Welch fills it from unpaired trials.
type Delta struct {
	N           int
	Pct         float64
	CI95        float64
	Significant bool
	P           float64
}

// Paired compares v with base pair by pair. It uses the first min(len) pairs
// and skips pairs whose base is 0, which have no relative change.
func Paired(base, v []float64) Delta {
	n := min(len(base), len(v))
	pct := make([]float64, 0, n)
	for i := range n {
		if base[i] == 0 {
			continue
		}
		pct = append(pct, (v[i]/base[i]-1)*100)
	}
	s := Summarize(pct)
	p := math.NaN()
	switch {
	case s.N >= 2 && s.StdDev > 0:
		p = TTwoSided(s.Mean/(s.StdDev/math.Sqrt(float64(s.N))), float64(s.N-1))
	case s.N >= 2 && s.Mean != 0:
		p = 0
	case s.N >= 2:
		p = 1
	}
	return Delta{
		N:    s.N,
		Pct:  s.Mean,
		CI95: s.CI95,
		// A NaN interval (one pair) compares false: never significant.
		Significant: math.Abs(s.Mean) > s.CI95,
		P:           p,
	}
}

// t975 holds the two-sided 95% quantiles of Student's t for 1..30 degrees of freedom.
var t975 = [...]float64{
	12.706205, 4.302653, 3.182446, 2.776445, 2.570582,
	2.446912, 2.364624, 2.306004, 2.262157, 2.228139,
	2.200985, 2.178813, 2.160369, 2.144787, 2.131450,
	2.119905, 2.109816, 2.100922, 2.093024, 2.085963,
	2.079614, 2.073873, 2.068658, 2.063899, 2.059539,
	2.055529, 2.051831, 2.048407, 2.045230, 2.042272,
}

// TQuantile975 is the two-sided 95% quantile of Student's t with df degrees
// of freedom (NaN for df < 1), accurate to 3 decimals: a table up to 30, then
// the Cornish-Fisher expansion around the normal quantile 1.959964.
func TQuantile975(df int) float64 {
	if df < 1 {
		return math.NaN()
	}
	if df <= len(t975) {
		return t975[df-1]
	}
	const z = 1.959963984540054
	n := float64(df)
	z3, z5, z7 := z*z*z, z*z*z*z*z, z*z*z*z*z*z*z
	return z + (z3+z)/(4*n) + (5*z5+16*z3+3*z)/(96*n*n) + (3*z7+19*z5+17*z3-15*z)/(384*n*n*n)
}

// Quantile is the nearest-rank p-quantile of xs (0 < p ≤ 1): the smallest
// value with at least p of the values at or below it, always one of xs;
// NaN for none. xs is not changed.
func Quantile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}
