package report

import (
	"fmt"
	"math"
	"strconv"

	"github.com/tlsbench/tlsbench/internal/stats"
)

// precision is how many decimals a number of a given size deserves (num,
// meanStd): rate for throughput, millis for times.
type precision func(v float64) int

// rate is for throughput: one decimal below 1000, none above.
func rate(v float64) int {
	if math.Abs(v) < 1000 {
		return 1
	}
	return 0
}

// millis keeps about three significant digits: 0.052, 1.23, 45.6, 312.
func millis(v float64) int {
	switch v = math.Abs(v); {
	case v < 1:
		return 3
	case v < 10:
		return 2
	case v < 100:
		return 1
	}
	return 0
}

func num(v float64, f precision) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', f(v), 64)
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
		c.Text = fmt.Sprintf("%s (%s)", num(s.Mean, f), strconv.FormatFloat(s.StdDev, 'f', f(s.Mean), 64))
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
	s := fmt.Sprintf("%+.1f%%", d.Pct)
	if !math.IsNaN(d.CI95) {
		s += fmt.Sprintf(" ±%.1f", d.CI95)
	}
	if d.Significant {
		return s + " *"
	}
	return s + "  "
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
	return fmt.Sprintf("%.1f%%", float64(part)/float64(whole)*100)
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
