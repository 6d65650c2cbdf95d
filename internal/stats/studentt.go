package stats

import "math"

// TTwoSided is the two-sided p-value of Student's t statistic t with df
// degrees of freedom, df not necessarily whole (Welch's): the probability of
// a |T| at least |t|. NaN for df <= 0 or a NaN t.
func TTwoSided(t, df float64) float64 {
	if !(df > 0) || math.IsNaN(t) {
		return math.NaN()
	}
	if math.IsInf(t, 0) {
		return 0
	}
	return betaInc(df/2, 0.5, df/(df+t*t))
}

// TQuantile975F is TQuantile975 for a df that need not be whole, as
// Welch-Satterthwaite gives it: the t with TTwoSided(t, df) = 0.05, found by
// bisection (NaN for df <= 0).
func TQuantile975F(df float64) float64 {
	if !(df > 0) || math.IsInf(df, 0) {
		if math.IsInf(df, 1) {
			return 1.959963984540054
		}
		return math.NaN()
	}
	// TTwoSided falls as t grows; x = df/(df+t²) rises with it, so bisect
	// on x in (0, 1), where I_x(df/2, 1/2) = 0.05.
	lo, hi := 0.0, 1.0
	for range 200 {
		mid := (lo + hi) / 2
		if betaInc(df/2, 0.5, mid) < 0.05 {
			lo = mid
		} else {
			hi = mid
		}
		if hi-lo < 1e-16 {
			break
		}
	}
	x := (lo + hi) / 2
	return math.Sqrt(df * (1 - x) / x)
}

// betaInc is the regularized incomplete beta function I_x(a, b), by its
// continued fraction (Numerical Recipes 6.4).
func betaInc(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(lab - la - lb + a*math.Log(x) + b*math.Log1p(-x))
	if x < (a+1)/(a+b+2) {
		return front * betaCF(a, b, x) / a
	}
	return 1 - front*betaCF(b, a, 1-x)/b
}

func betaCF(a, b, x float64) float64 {
	const tiny = 1e-300
	clamp := func(v float64) float64 {
		if math.Abs(v) < tiny {
			return tiny
		}
		return v
	}
	c, d := 1.0, 1/clamp(1-(a+b)*x/(a+1))
	h := d
	for m := 1.0; m <= 500; m++ {
		aa := m * (b - m) * x / ((a + 2*m - 1) * (a + 2*m))
		d = 1 / clamp(1+aa*d)
		c = clamp(1 + aa/c)
		h *= d * c
		aa = -(a + m) * (a + b + m) * x / ((a + 2*m) * (a + 2*m + 1))
		d = 1 / clamp(1+aa*d)
		c = clamp(1 + aa/c)
		del := d * c
		h *= del
		if math.Abs(del-1) < 1e-15 {
			break
		}
	}
	return h
}
