package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tlsbench/tlsbench/internal/report/chart"
	"github.com/tlsbench/tlsbench/internal/result"
)

// An advise result checked by a lab replay (advise --confirm): each
// change's figures measured beside the predicted ones, as savings per
// connection with the error of the prediction.

// adviceFigures are a change's figures in the order tables show them.
func adviceFigures(c result.Change) []struct {
	name, unit string
	f          result.Figure
} {
	return []struct {
		name, unit string
		f          result.Figure
	}{{"setup ms", "ms", c.Setup}, {"p95 setup ms", "ms", c.P95}, {"server CPU ms", "ms", c.Server}, {"client CPU ms", "ms", c.Client},
		{"server cores", "cores", c.Cores}, {"bytes", "bytes", c.Bytes}, {"new conn/s per core", "connections/s", c.Capacity}}
}

// measuredSaving is now − measured, false without a measurement.
func measuredSaving(f result.Figure) (float64, bool) {
	if f.Now == nil || f.Measured == nil {
		return 0, false
	}
	return *f.Now - *f.Measured, true
}

// confirmed reports whether a replay measured any of a's changes.
func confirmed(a result.Advised) bool {
	return slices.ContainsFunc(a.Advice, anyMeasured)
}

// anyMeasured reports whether a replay measured any of c's figures: a
// client stack's replay measures no round trips, but times and CPU.
func anyMeasured(c result.Change) bool {
	if c.RoundTripsMeasured != nil {
		return true
	}
	for _, fig := range adviceFigures(c) {
		if fig.f.Measured != nil {
			return true
		}
	}
	return false
}

// confirmTable sets each change's predicted saving per connection beside
// the one the lab replay measured, with the error.
func confirmTable(a result.Advised) Table {
	t := Table{Title: "advise: predicted vs measured in the lab replay, saved per connection (±95% interval); error: the measured saving's difference from the predicted, % of the predicted",
		Left: 2, Header: []string{"change", "figure", "predicted", "measured", "error"}}
	saved := func(x float64, ci *float64, unit string) Cell {
		text := num(x, millis)
		c := math.NaN()
		if ci != nil {
			c = *ci
			text += " ±" + num(c, millis)
		}
		return Cell{Text: text, Unit: unit, Value: x, StdDev: math.NaN(), CI: c}
	}
	for _, c := range a.Advice {
		if c.NotApplicable {
			continue
		}
		rt := func(x float64) Cell {
			return Cell{Text: trips(x), Unit: "round trips", Value: x, StdDev: math.NaN(), CI: math.NaN()}
		}
		switch {
		case !anyMeasured(c):
			t.addCells(textCell(c.Change), textCell("round trips"), rt(c.RoundTripsSaved), textCell("not measured: "+orElse(c.Unmeasured, "no replay")), textCell("-"))
			continue
		case c.RoundTripsMeasured == nil:
			t.addCells(textCell(c.Change), textCell("round trips"), rt(c.RoundTripsSaved), textCell("not measured by the client stack"), textCell("-"))
		default:
			rtErr := textCell("exact")
			if *c.RoundTripsMeasured != c.RoundTripsSaved {
				rtErr = textCell("missed")
			}
			t.addCells(textCell(c.Change), textCell("round trips"), rt(c.RoundTripsSaved), rt(*c.RoundTripsMeasured), rtErr)
		}
		for _, fig := range adviceFigures(c) {
			meas, ok := measuredSaving(fig.f)
			if !ok || fig.unit == "connections/s" { // a capacity's "saving" reads backwards: in the json and csv
				continue
			}
			pred := textCell("-")
			if p, ok := fig.f.Saved(); ok {
				pred = saved(p, fig.f.PredictedCI, fig.unit)
			}
			errCell := textCell("-")
			if fig.f.ErrorPct != nil {
				errCell = Cell{Text: signedPct(*fig.f.ErrorPct), Unit: "%", Value: *fig.f.ErrorPct, StdDev: math.NaN(), CI: math.NaN()}
			}
			t.addCells(textCell(""), textCell(fig.name), pred, saved(meas, fig.f.MeasuredCI, fig.unit), errCell)
		}
	}
	return t
}

// replayLines say what each replay ran and where it departs from the
// profile.
func replayLines(a result.Advised) []string {
	var out []string
	for _, r := range a.Replays {
		if r.Error != "" && r.Lab == "" {
			out = append(out, "lab replay: none: "+r.Error)
			continue
		}
		load := "closed loop, one connection at a time"
		if r.Rate > 0 {
			load = fmt.Sprintf("%s connections/s (Poisson arrivals)", num(r.Rate, rate))
		}
		rtt := "the bare loopback link"
		if r.RTT > 0 {
			rtt = fmt.Sprintf("an emulated RTT of %s ms", num(r.RTT, millis))
		}
		line := fmt.Sprintf("lab replay on %s: %s, %d operation(s) per connection, over %s, %d interleaved trials of %s; client: %s",
			strings.TrimSpace(r.Lab+" "+r.Server), load, r.PerConn, rtt, r.Trials, strings.Join(r.Variants, ", "), r.Client)
		if r.Error != "" {
			line += "; it failed: " + r.Error
		}
		out = append(out, line)
		for _, n := range r.Notes {
			out = append(out, "  "+n)
		}
	}
	return out
}

// confirmWords ends a finding with what the change's replay measured: the savings
// measured, their errors, and which part of the model missed.
func confirmWords(c result.Change) string {
	if !anyMeasured(c) {
		if c.Unmeasured != "" {
			return ". Not measured in the lab replay: " + c.Unmeasured + "."
		}
		return ". A prediction, not yet checked by a lab replay."
	}
	var parts []string
	if c.RoundTripsMeasured != nil && (*c.RoundTripsMeasured != 0 || c.RoundTripsSaved != 0) {
		parts = append(parts, plural1(trips(*c.RoundTripsMeasured), "round trip"))
	}
	for _, fig := range []struct {
		name string
		f    result.Figure
	}{{"setup", c.Setup}, {"server CPU", c.Server}} {
		if m, ok := measuredSaving(fig.f); ok {
			s := fmt.Sprintf("%s %s ms", fig.name, num(m, millis))
			if fig.f.ErrorPct != nil {
				s += " (" + signedPct(*fig.f.ErrorPct) + ")"
			}
			parts = append(parts, s)
		}
	}
	out := "; measured in the lab replay: " + strings.Join(parts, ", ") + " saved."
	switch {
	case c.RoundTripsMeasured == nil:
		if missed(c.Setup) {
			out += " The time missed (round trips are not measured through a client stack)."
		}
	case *c.RoundTripsMeasured != c.RoundTripsSaved:
		out += fmt.Sprintf(" The round trips missed: predicted %s, measured %s.", trips(c.RoundTripsSaved), trips(*c.RoundTripsMeasured))
	case missed(c.Setup):
		out += " The round trips matched: the time missed (the client's and server's own time, which the lab's client and load set, or queueing)."
	}
	if missed(c.Server) {
		out += " The server CPU missed (the calibration's load against the replay's)."
	}
	return out
}

// missed reports whether a measured saving is off the predicted one by
// more than 10% and outside the measured interval.
func missed(f result.Figure) bool {
	p, okP := f.Saved()
	m, okM := measuredSaving(f)
	if !okP || !okM || f.ErrorPct == nil || math.Abs(*f.ErrorPct) <= 10 {
		return false
	}
	return f.MeasuredCI == nil || math.Abs(p-m) > *f.MeasuredCI
}

func signedPct(x float64) string {
	if x > 0 {
		return "+" + num(x, rate) + "%"
	}
	return strings.Replace(num(x, rate), "-", "−", 1) + "%"
}

// adviceChart draws what each change would save of the setup time per
// connection, predicted and (with --confirm) measured side by side, each
// with its 95% interval. Bars run from 0 (chart draws no negative bar): a
// negative saving, a cost, is drawn by its size and marked.
func (b *figurer) adviceChart() {
	for i, a := range b.ix.r.Advise {
		var bars []chart.Bar
		add := func(label string, v float64, ci *float64, style int) {
			note := num(v, millis) + " ms"
			if v < 0 {
				label, v = label+" (a cost)", -v
			}
			bars = append(bars, chart.Bar{Label: label, Value: v, Err: orZero(ci), Color: chart.VariantStyle(style, false).Color, Note: note})
		}
		for _, c := range a.Advice {
			if c.NotApplicable {
				continue
			}
			if p, ok := c.Setup.Saved(); ok {
				add(c.Change+" predicted", p, c.Setup.PredictedCI, 0)
			}
			if m, ok := measuredSaving(c.Setup); ok {
				add(c.Change+" measured", m, c.Setup.MeasuredCI, 1)
			}
		}
		if len(bars) == 0 {
			continue
		}
		caption := "Bars: the setup time each change would save per connection, predicted from the capture's round trips at its RTTs; whiskers: the 95% interval; a bar marked (a cost) is a negative saving, drawn by its size."
		if confirmed(a) {
			caption += " Measured: the saving a lab replay of the profile measured, paired round by round against now, with its 95% interval over rounds."
		}
		b.add(chart.Figure{ID: fmt.Sprintf("advise-%d", i), Title: "advise: what each change would save, " + strings.TrimSpace(a.Profile.Engine+" "+a.Profile.Server),
			Caption: caption, Kind: chart.Bars, X: chart.Axis{Label: "setup time saved per connection, ms", Min: chart.At(0)}, Bars: bars})
	}
}

func orZero(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}
