package report

import (
	"math"
	"strconv"
	"strings"
)

// number is a figure of the csv and json summaries: about five significant
// digits, never an exponent, and unknown (NaN, Inf) as an empty cell or null.
type number float64

func (n number) known() bool { return !math.IsNaN(float64(n)) && !math.IsInf(float64(n), 0) }

func (n number) String() string {
	if !n.known() {
		return ""
	}
	v := float64(n)
	decimals := 0
	if v != 0 {
		decimals = min(max(4-int(math.Floor(math.Log10(math.Abs(v)))), 0), 6)
	}
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		return "0"
	}
	return s
}

func (n number) MarshalJSON() ([]byte, error) {
	if !n.known() {
		return []byte("null"), nil
	}
	return []byte(n.String()), nil
}

// finite reports whether every x is a number (not NaN or infinite).
func finite(xs ...float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}
