package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// An advise result (tlsbench advise): per server endpoint, the profile a
// capture showed, and the changes that apply with what each is predicted
// to save. Its figures are predictions from the round-trip model and, for
// CPU, from a lab calibration; nothing here was measured by a replay yet.

// isAdvise reports whether r is an advise result.
func isAdvise(r *result.Result) bool { return len(r.Advise) > 0 }

// AdviceFact: one change that applies to one endpoint, with what it is
// predicted to save (a finding of its own).
type AdviceFact struct {
	Server string
	Engine string
	Rate   float64 // the observed connections/s
	RTT    float64 // the observed median RTT, ms
	Change result.Change
	Cal    *result.Calibration
}

func (AdviceFact) isFact() {}

// adviseTables writes each endpoint's profile, where its time went, and
// its advice ranked by the setup time each change saves.
func (ix *index) adviseTables(b *body) {
	for _, a := range ix.r.Advise {
		p := a.Profile
		who := strings.TrimSpace(p.Engine + " " + p.Server)
		t := Table{Title: "advise: the observed profile of " + who, Left: 1, Header: []string{"figure", "mean", "p50", "p95", "min", "max"}}
		dist := func(name string, d result.Dist, unit string) {
			t.addCells(textCell(name), numCell(d.Mean, millis, unit), numCell(d.P50, millis, unit), numCell(d.P95, millis, unit), numCell(d.Min, millis, unit), numCell(d.Max, millis, unit))
		}
		dist("RTT at the capture point, ms", p.RTT, "ms")
		dist("setup per connection (all but close), ms", p.Setup, "ms")
		dist("operations per connection", p.Ops, "operations")
		dist("bytes per connection", p.Bytes, "bytes")
		t.Foot = append(t.Foot, profileLines(p)...)
		b.table(t)
		if len(p.Split) > 0 {
			s := Table{Title: "advise: where each phase's time went, ms per connection (mean), at the capture point", Left: 1, Header: []string{"phase", "client", "server", "network"}}
			for _, sp := range p.Split {
				s.addCells(textCell(sp.Phase), numCell(sp.Client, millis, "ms"), numCell(sp.Server, millis, "ms"), numCell(sp.Network, millis, "ms"))
			}
			b.table(s)
		}
		b.table(adviceTable(a))
		if confirmed(a) {
			b.table(confirmTable(a))
		}
		b.prose(append(adviceLines(a), replayLines(a)...)...)
	}
}

// profileLines are the profile's counts and shares in words.
func profileLines(p result.Profile) []string {
	conns := fmt.Sprintf("connections: %d over %s s, %s/s", p.Conns, num(p.Span, rate), num(p.Rate.Mean, rate))
	if p.Rate.Peak > 0 {
		conns += fmt.Sprintf(" (peak second %s)", num(p.Rate.Peak, rate))
	} else {
		conns += " (a span under 2 s: too short for a peak second)"
	}
	out := []string{conns, "operations: " + p.OpsKind}
	if p.EngineFrom != "" {
		out = append(out, "engine: "+p.Engine+", as "+p.EngineFrom+" says (the capture does not tell it)")
	}
	if p.TLSConns == 0 {
		return append(out, "TLS: none of the connections")
	}
	shares := func(name string, ss []result.Share) {
		var parts []string
		for _, s := range ss {
			parts = append(parts, fmt.Sprintf("%s %d", s.Name, s.Conns))
		}
		out = append(out, name+": "+strings.Join(parts, ", "))
	}
	out = append(out, fmt.Sprintf("TLS: %d of %d connections; HelloRetryRequest %d, resumed %d, client certificate %d", p.TLSConns, p.Conns, p.HelloRetries, p.Resumed, p.ClientCerts))
	shares("versions", p.Versions)
	shares("suites", p.Suites)
	shares("groups", p.Groups)
	if len(p.Login) > 0 {
		shares("login after the handshake", p.Login)
	}
	if p.ClientTLS != "" {
		out = append(out, "client TLS library: "+p.ClientTLS+", by the groups its ClientHello offers")
	}
	key := "server key: " + p.ServerKey + " (" + p.ServerKeyFrom + ")"
	if p.CertChainBytes > 0 {
		key += fmt.Sprintf(", certificate chain %d bytes", p.CertChainBytes)
	}
	return append(out, key)
}

// adviceTable is the changes that apply, ranked by the setup time they
// save: each figure now → predicted (± its 95% interval).
func adviceTable(a result.Advised) Table {
	t := Table{Title: "advise: what each change would save, per connection: now → predicted (±95% interval); CPU from the lab calibration only",
		Left: 1, Header: []string{"change", "round trips saved", "setup ms", "p95 setup ms", "server CPU ms", "client CPU ms", "server cores", "bytes", "new conn/s per core"}}
	for _, c := range a.Advice {
		if c.NotApplicable {
			continue
		}
		t.addCells(textCell(c.Change), Cell{Text: trips(c.RoundTripsSaved), Unit: "round trips", Value: c.RoundTripsSaved, StdDev: math.NaN(), CI: math.NaN()},
			figureCell(c.Setup, "ms"), figureCell(c.P95, "ms"), figureCell(c.Server, "ms"), figureCell(c.Client, "ms"),
			figureCell(c.Cores, "cores"), figureCell(c.Bytes, "bytes"), figureCell(c.Capacity, "connections/s"))
	}
	return t
}

// figureCell writes a figure as "now → predicted ±ci"; "-" without a
// prediction. Its value is the prediction.
func figureCell(f result.Figure, unit string) Cell {
	if f.Predicted == nil {
		if f.Now != nil { // now from a replay, without a calibration's prediction
			return Cell{Text: num(*f.Now, millis) + " → -", Unit: unit, Value: *f.Now, StdDev: math.NaN(), CI: math.NaN()}
		}
		return textCell("-")
	}
	text := num(*f.Predicted, millis)
	if f.Now != nil {
		text = num(*f.Now, millis) + " → " + text
	}
	ci := math.NaN()
	if f.PredictedCI != nil {
		ci = *f.PredictedCI
		text += " ±" + num(ci, millis)
	}
	return Cell{Text: text, Unit: unit, Value: *f.Predicted, StdDev: math.NaN(), CI: ci}
}

// adviceLines say why each change applies (or not), how the figures were
// made, and where CPU figures come from.
func adviceLines(a result.Advised) []string {
	var out []string
	for _, c := range a.Advice {
		word := "applies"
		if c.NotApplicable {
			word = "does not apply"
		}
		line := fmt.Sprintf("%s %s: %s", c.Change, word, c.Applies)
		if !c.NotApplicable && c.Model != "" {
			line += " (model: " + c.Model + ")"
		}
		out = append(out, line)
		if len(c.Missing) > 0 {
			out = append(out, fmt.Sprintf("  CPU: the calibration lacks %s (needs %s)", strings.Join(c.Missing, " and "), c.Needs))
		}
		for _, sub := range c.Substituted {
			out = append(out, "  CPU and bytes: "+sub)
		}
	}
	switch {
	case a.Calibration != nil && a.Calibration.Lab:
		cal := a.Calibration
		out = append(out, fmt.Sprintf("CPU figures: from the lab calibration advise --lab ran on this machine just before the advice (%s, %s, %s), %s; \"now\" is its variant like what the capture shows. client CPU and bytes are tlsbench's Go client's there, not your client's. CPU costs transfer between machines only as ratios: read them as ratios on your server", cal.Engine, orElse(cal.Server, "a server it did not start"), cal.Started, calibrationLoad(*cal)))
	case a.Calibration != nil:
		cal := a.Calibration
		out = append(out, fmt.Sprintf("CPU figures: from the lab calibration %s (%s, %s, %s), %s; \"now\" is its variant like what the capture shows. client CPU and bytes are tlsbench's Go client's there, not your client's. CPU costs transfer between machines only as ratios: read them as ratios on your server", cal.Source, cal.Engine, orElse(cal.Server, "a server it did not start"), cal.Started, calibrationLoad(*cal)))
		if far(cal.Rate, a.Profile.Rate.Mean) || far(cal.RTT, a.Profile.RTT.P50) {
			out = append(out, fmt.Sprintf("the calibration's load is not the capture's (%s/s new connections, median RTT %s ms): a connection's CPU depends on both (MariaDB here: 0.21 ms a plain connection one at a time on loopback, 0.88 at 44/s over 44 ms); advise --lab calibrates at the capture's", num(a.Profile.Rate.Mean, sig3), num(a.Profile.RTT.P50, sig3)))
		}
	case a.Calibrate != "":
		out = append(out, "CPU figures: none without a lab calibration (never a constant); measure one on this machine and give it as --calibration: "+a.Calibrate)
	default:
		out = append(out, "CPU figures: none without a lab calibration, and the engine has no lab server to calibrate on")
	}
	if a.Calibration != nil && a.Calibrate != "" {
		out = append(out, "to calibrate what is missing: "+a.Calibrate)
	}
	return out
}

// calibrationLoad says how a calibration's connections arrived.
func calibrationLoad(c result.Calibration) string {
	out := "closed loop, one connection at a time"
	if c.Rate > 0 {
		out = fmt.Sprintf("%s/s new connections (Poisson arrivals)", num(c.Rate, sig3))
	}
	if c.RTT > 0 {
		return out + fmt.Sprintf(" over an emulated %s ms RTT", num(c.RTT, sig3))
	}
	return out + " on the bare link"
}

// far reports whether a calibration's load figure is off the capture's by
// more than half of it, or more than the least a replay keeps: its
// connections' CPU then differs measurably.
func far(cal, observed float64) bool {
	return math.Abs(cal-observed) > max(0.5*observed, 1)
}

func orElse(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

// adviceSummaries are the csv rows of an advise result: one per change and
// figure, its mean the prediction (and a row for now), ci95 its interval.
func (ix *index) adviceSummaries() []CellSummary {
	var out []CellSummary
	for _, a := range ix.r.Advise {
		for _, c := range a.Advice {
			if c.NotApplicable {
				continue
			}
			variant := c.Change
			if len(ix.r.Advise) > 1 {
				variant = a.Profile.Server + " " + variant
			}
			row := func(metric string, v, ci *float64) {
				if v == nil {
					return
				}
				s := CellSummary{Experiment: string(plan.Advise), Variant: variant, Concurrency: 1, Trials: 1, Metric: metric,
					Mean: number(*v), StdDev: number(math.NaN()), CI95: number(math.NaN()), DeltaPct: number(math.NaN()), DeltaCI95: number(math.NaN()),
					P50: number(math.NaN()), P95: number(math.NaN()), P99: number(math.NaN()), ClientCPU: number(math.NaN()), ServerCPU: number(math.NaN()),
					PerConn: number(math.NaN()), Offered: number(math.NaN())}
				if ci != nil {
					s.CI95 = number(*ci)
				}
				out = append(out, s)
			}
			rt := c.RoundTripsSaved
			row("round trips saved", &rt, nil)
			row("round trips saved measured", c.RoundTripsMeasured, nil)
			for _, f := range []struct {
				name string
				f    result.Figure
			}{{"setup ms", c.Setup}, {"p95 setup ms", c.P95}, {"server cpu ms", c.Server}, {"client cpu ms", c.Client},
				{"server cores", c.Cores}, {"bytes", c.Bytes}, {"capacity conn/s", c.Capacity}} {
				row(f.name+" now", f.f.Now, f.f.NowCI)
				row(f.name+" predicted", f.f.Predicted, f.f.PredictedCI)
				row(f.name+" measured", f.f.Measured, f.f.MeasuredCI)
				row(f.name+" error %", f.f.ErrorPct, nil)
			}
		}
	}
	return out
}

// advice adds a finding per change that applies, in the order of the
// advice (the most setup time saved first).
func (r *rules) advice() {
	for _, a := range r.ix.r.Advise {
		for _, c := range a.Advice {
			if !c.NotApplicable {
				r.add(KindFinding, TopicAdvice, AdviceFact{Server: a.Profile.Server, Engine: a.Profile.Engine, Rate: a.Profile.Rate.Mean, RTT: a.Profile.RTT.P50, Change: c, Cal: a.Calibration})
			}
		}
	}
}

// adviceWords says what a change would save, only as computed: round
// trips and setup time always, CPU with a calibration.
func adviceWords(f AdviceFact) string {
	c := f.Change
	at := strings.TrimSpace(f.Engine + " at " + f.Server)
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): ", c.Change, at)
	setup, _ := c.Setup.Saved()
	switch {
	case c.RoundTripsSaved > 0:
		fmt.Fprintf(&b, "would save %s per connection on average, %s ms of setup time (%s → %s ms", plural1(trips(c.RoundTripsSaved), "round trip"), num(setup, millis), num(*c.Setup.Now, millis), num(*c.Setup.Predicted, millis))
	case c.RoundTripsSaved < 0:
		fmt.Fprintf(&b, "would cost %s per connection on average, %s ms more setup time (%s → %s ms", plural1(trips(-c.RoundTripsSaved), "round trip"), num(-setup, millis), num(*c.Setup.Now, millis), num(*c.Setup.Predicted, millis))
	default:
		fmt.Fprintf(&b, "changes no round trip (setup %s ms", num(*c.Setup.Now, millis))
	}
	if c.Setup.PredictedCI != nil && c.RoundTripsSaved != 0 {
		fmt.Fprintf(&b, " ±%s", num(*c.Setup.PredictedCI, millis))
	}
	b.WriteString(")")
	if c.P95.Predicted != nil && c.RoundTripsSaved != 0 {
		fmt.Fprintf(&b, ", p95 %s → %s ms, at your RTTs at the capture point (p50 %s ms)", num(*c.P95.Now, millis), num(*c.P95.Predicted, millis), num(f.RTT, millis))
	}
	if saved, ok := c.Server.Saved(); ok {
		fmt.Fprintf(&b, "; %s %s ms of server CPU per connection", gain(saved), num(math.Abs(saved), millis))
		if c.Server.PredictedCI != nil {
			fmt.Fprintf(&b, " (±%s)", num(*c.Server.PredictedCI, millis))
		}
		if cores, ok := c.Cores.Saved(); ok {
			fmt.Fprintf(&b, ": %s cores at your %s connections/s", num(math.Abs(cores), millis), num(f.Rate, rate))
		}
		fmt.Fprintf(&b, " (lab calibration %s)", f.Cal.Source)
	}
	if saved, ok := c.Client.Saved(); ok {
		fmt.Fprintf(&b, "; %s %s ms of the client's CPU (tlsbench's Go client in the lab, not yours)", gain(saved), num(math.Abs(saved), millis))
	}
	if saved, ok := c.Bytes.Saved(); ok && saved != 0 {
		fmt.Fprintf(&b, "; %s %s bytes per connection", gain(saved), num(math.Abs(saved), rate))
	}
	b.WriteString(confirmWords(c))
	return b.String()
}

func gain(saved float64) string {
	if saved < 0 {
		return "costs"
	}
	return "saves"
}

// trips writes round trips per connection: whole where they are.
func trips(x float64) string {
	if x == math.Trunc(x) {
		return fmt.Sprint(int64(x))
	}
	return fmt.Sprintf("%.2f", x)
}

// plural1 is n (written) and word, plural unless n is "1".
func plural1(n, word string) string {
	if n == "1" {
		return n + " " + word
	}
	return n + " " + word + "s"
}
