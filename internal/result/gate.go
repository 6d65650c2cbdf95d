package result

import (
	"math"
	"strconv"
)

// Gate is the verdict of one --gate expression on a run (or on a
// comparison of two): whether it held, and the figure that decided it.
type Gate struct {
	// Name is the gate's name from a --gates file, else its expression.
	Name string `json:"name"`
	Expr string `json:"expr"`
	Pass bool   `json:"pass"`
	// Cell is the cell that decided the verdict: the first that failed,
	// else the one nearest its bound ("connect tls1.3 c=4").
	Cell string `json:"cell,omitempty"`
	// Value is the figure compared with Bound, in Unit: the point
	// estimate, or with @ci95 the far end of its 95% interval; Mean is the
	// point estimate and Low, High the interval (equal to Mean where no
	// interval was asked for).
	Value float64 `json:"value"`
	Mean  float64 `json:"mean"`
	Low   float64 `json:"low"`
	High  float64 `json:"high"`
	Bound float64 `json:"bound"`
	Unit  string  `json:"unit"`
	// Cells is how many cells the gate was checked on.
	Cells int `json:"cells"`
	// Why says in a sentence why a gate failed without a figure (no cell
	// measured its quantity), "" otherwise.
	Why string `json:"why,omitempty"`
}

// Measured says what the gate measured, as reports show it: "12.3%
// (95% interval 10.1 to 14.5%)", "1 count", or why there is no figure.
func (g Gate) Measured() string {
	if g.Why != "" {
		return g.Why
	}
	s := gateFigure(g.Mean, g.Unit)
	if g.Low != g.High {
		s += " (95% interval " + gateFigure(g.Low, "") + " to " + gateFigure(g.High, g.Unit) + ")"
	}
	return s
}

// gateFigure writes a gate's figure with its unit: "12.3%", "0.75 ms",
// "2 round trips".
func gateFigure(v float64, unit string) string {
	s := strconv.FormatFloat(v, 'g', 4, 64)
	if math.Abs(v) >= 1e4 {
		s = strconv.FormatFloat(v, 'f', 0, 64)
	}
	switch unit {
	case "", "ratio":
		return s
	case "%", "/s":
		return s + unit
	case "count":
		if v == 1 {
			return s + " round trip"
		}
		return s + " round trips"
	}
	return s + " " + unit
}
