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
	// Interval is the 95% interval a @ci95 gate judged: "paired" (a
	// t-interval over paired rounds: a change against the baseline),
	// "trials" (the t-interval of a mean over trials, or of a replay's
	// measured saving), "welch" (compare's, over two results' trials) or
	// "prediction" (an advice's predicted saving); "" without @ci95.
	// Rounds is how many rounds or trials it was over (for "welch" the
	// smaller result's count), 0 for a prediction's.
	Interval string `json:"interval,omitempty"`
	Rounds   int    `json:"rounds,omitempty"`
	// Why says in a sentence why a gate failed without a figure (no cell
	// measured its quantity), "" otherwise.
	Why string `json:"why,omitempty"`
}

// Measured says what the gate measured, as reports show it: "1 round
// trip"; with @ci95 the end judged and which interval it is of, "45%;
// upper end 63.2% of the 95% t-interval over 5 paired rounds (26.8 to
// 63.2%)"; or why there is no figure. A verdict recorded before Interval
// was reads "45% (95% interval 26.8 to 63.2%)".
func (g Gate) Measured() string {
	if g.Why != "" {
		return g.Why
	}
	s := gateFigure(g.Mean, g.Unit)
	span := gateFigure(g.Low, "") + " to " + gateFigure(g.High, g.Unit)
	switch {
	case g.Interval == "" && g.Low != g.High:
		s += " (95% interval " + span + ")"
	case g.Interval == "":
	case g.Low == g.High:
		s += "; " + g.interval() + " of no width"
	default:
		end := "upper end"
		if g.Value == g.Low {
			end = "lower end"
		}
		s += "; " + end + " " + gateFigure(g.Value, g.Unit) + " of " + g.interval() + " (" + span + ")"
	}
	return s
}

// interval names the interval a @ci95 gate judged: "the 95% t-interval
// over 5 paired rounds".
func (g Gate) interval() string {
	n := strconv.Itoa(g.Rounds)
	switch g.Interval {
	case "paired":
		return "the 95% t-interval over " + n + " paired rounds"
	case "trials":
		return "the 95% t-interval over " + n + " trials"
	case "welch":
		return "the 95% Welch interval over two results of at least " + n + " trials"
	}
	return "the prediction's 95% interval"
}

// SteadyRounds is the count of rounds below which a @ci95 verdict gets a
// note: the A/A study (docs/studies.md) saw one wild round of 5 widen the
// t-interval past a bound the other rounds kept far from.
const SteadyRounds = 10

// FewRounds reports whether g judged a t- or Welch interval over fewer
// than SteadyRounds rounds or trials; one of no width (round trips that
// never varied) has no wild round to fear.
func (g Gate) FewRounds() bool {
	return g.Why == "" && g.Rounds > 0 && g.Rounds < SteadyRounds && g.Interval != "prediction" && g.Low != g.High
}

// RoundsNote is the one note verdicts get when a @ci95 gate was judged
// on fewer than SteadyRounds rounds, whether it passed or failed; "" when
// none was. It is a note, not an error: 2 rounds make an interval.
func RoundsNote(gs []Gate) string {
	fewest := 0
	for _, g := range gs {
		if g.FewRounds() && (fewest == 0 || g.Rounds < fewest) {
			fewest = g.Rounds
		}
	}
	if fewest == 0 {
		return ""
	}
	return "note: @ci95 judged an interval over " + strconv.Itoa(fewest) + " rounds, fewer than " + strconv.Itoa(SteadyRounds) +
		": one wild round widens a t-interval over few rounds (t = 2.78 over 5, 2.26 over 10), which makes a false failure likelier; see docs/gates.md#rounds-for-ci95"
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
