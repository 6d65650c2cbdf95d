package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/tlsbench/tlsbench/internal/stats"
)

// precision is how many decimals a figure of a given size deserves (num,
// meanStd); a negative count rounds to tens, hundreds and so on.
type precision func(v float64) int

// sig3 is the precision of every figure the report prints: three
// significant digits (0.0523, 1.23, 45.6, 312, 1360), so that a figure
// never claims more than a benchmark on a shared machine can tell.
func sig3(v float64) int {
	v = math.Abs(v)
	if v == 0 || !finite(v) {
		return 0
	}
	d := 2 - int(math.Floor(math.Log10(v)))
	if roundTo(v, d) >= math.Pow(10, float64(3-d)) {
		d-- // 9.996 rounds to 10.0, not 10.00
	}
	return d
}

// pct is the precision of percentages: three significant digits, at most
// one decimal (-41.7%, +141%, +0.5%).
func pct(v float64) int { return min(sig3(v), 1) }

// rate and millis name what a figure is where it is printed (throughput,
// times in ms); both are sig3.
var rate, millis precision = sig3, sig3

// roundTo rounds v to d decimals (d < 0: to tens, hundreds...).
func roundTo(v float64, d int) float64 {
	p := math.Pow(10, float64(d))
	return math.Round(v*p) / p
}

// fixed renders v with d decimals, or rounded to tens, hundreds... for d < 0.
func fixed(v float64, d int) string {
	if d < 0 {
		v, d = roundTo(v, d), 0
	}
	s := strconv.FormatFloat(v, 'f', d, 64)
	if strings.TrimLeft(s, "-0.") == "" {
		return strings.TrimPrefix(s, "-") // no "-0.00"
	}
	return s
}

// num renders v at precision f, "-" when it is unknown.
func num(v float64, f precision) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return fixed(v, f(v))
}

// meanStd renders "mean (stddev)", both at the precision of the mean; with a
// single value, the mean alone, since there is no spread to show.
func meanStd(xs []float64, f precision) string { return meanCell(xs, f, "").Text }

// meanCell is the mean of xs as a figure in unit: its text as meanStd
// writes it, "-" without a value.
func meanCell(xs []float64, f precision, unit string) Cell {
	if len(xs) == 0 {
		return textCell("-")
	}
	s := stats.Summarize(xs)
	c := Cell{Text: num(s.Mean, f), Unit: unit, Value: s.Mean, StdDev: math.NaN(), CI: s.CI95}
	if s.N >= 2 {
		c.Text = fmt.Sprintf("%s (%s)", num(s.Mean, f), fixed(s.StdDev, f(s.Mean)))
		c.StdDev = s.StdDev
	}
	return c
}

// delta renders "-45.2% ±3.1 *": the change, the half-width of its 95%
// interval and a star when the interval excludes 0. Cells without a star end
// in two spaces so that the figures of a column line up.
func delta(d stats.Delta) string {
	if d.N == 0 {
		return "-"
	}
	if d.Significant {
		return pctCI(d) + " *"
	}
	return pctCI(d) + "  "
}

// pctCI renders a change in percent with the half-width of its 95%
// interval, "-45.2% ±3.1", the change alone without an interval.
func pctCI(d stats.Delta) string {
	s := signed(d.Pct, pct) + "%"
	if !math.IsNaN(d.CI95) {
		s += " ±" + num(d.CI95, pct)
	}
	return s
}

// signed renders v at precision f with its sign, "+1.23", "-0.5".
func signed(v float64, f precision) string {
	s := num(v, f)
	if v > 0 && strings.Trim(s, "0.") != "" {
		return "+" + s
	}
	return s
}

// deltaCell is a change as a figure in percent, its text as delta writes
// it.
func deltaCell(d stats.Delta) Cell {
	if d.N == 0 {
		return textCell("-")
	}
	return Cell{Text: delta(d), Unit: "%", Value: d.Pct, StdDev: math.NaN(), CI: d.CI95}
}

// percent renders a share as a percentage with one decimal.
func percent(part, whole int64) string {
	if whole <= 0 {
		return "-"
	}
	return num(float64(part)/float64(whole)*100, pct) + "%"
}

// roundTrips renders a phase's round trips over trials: "1", or "1-2" when
// connections differed.
func roundTrips(lo, hi int) string {
	if lo == hi {
		return strconv.Itoa(lo)
	}
	return fmt.Sprintf("%d-%d", lo, hi)
}

func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}
