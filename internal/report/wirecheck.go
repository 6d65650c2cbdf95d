package report

import (
	"fmt"
	"math"
	"slices"

	"github.com/tlsbench/tlsbench/internal/result"
)

// The self-check of connect --wire: tlsbench's phase times beside the
// wire's on the same connections (Result.WireChecks), and a finding for
// each phase where they part.

// Where tlsbench and the wire part: a phase's means differ by more than
// wireCheckPct percent and wireCheckMS ms (both: a few µs on a 50 µs phase
// is noise), or their round trips by more than wireCheckRT.
const (
	wireCheckPct = 5.0
	wireCheckMS  = 0.05
	wireCheckRT  = 0.05
)

// WireCheckDiff is one variant's phase where tlsbench's figure and the
// wire's differ: times in ms, Pct the difference against the wire's.
type WireCheckDiff struct {
	Variant, Phase   string
	Conns            int64
	Tool, Wire, Pct  float64
	ToolRTs, WireRTs float64
}

// WireCheckAgree: every phase checked (Phases, over Conns connections)
// agreed with the wire within Worst percent and in round trips.
type WireCheckAgree struct {
	Phases int
	Conns  int64
	Worst  float64
}

func (WireCheckDiff) isFact()  {}
func (WireCheckAgree) isFact() {}

// wireCheckPct is tlsbench's time against the wire's, in percent (NaN
// when the wire saw none).
func wireCheckDelta(tool, wire float64) float64 {
	if wire <= 0 {
		return math.NaN()
	}
	return (tool/wire - 1) * 100
}

// parts reports whether a check's figures part (see wireCheckPct).
func parts(tool, wire, toolRT, wireRT float64) bool {
	d := wireCheckDelta(tool, wire)
	return (!math.IsNaN(d) && math.Abs(d) > wireCheckPct && math.Abs(tool-wire) > wireCheckMS) ||
		math.Abs(toolRT-wireRT) > wireCheckRT
}

// wireCheckTable writes the self-check, variant by variant and phase by
// phase.
func (ix *index) wireCheckTable(b *body) {
	cs := ix.r.WireChecks
	if len(cs) == 0 {
		return
	}
	split := slices.ContainsFunc(cs, func(c result.WireCheck) bool { return c.Split != nil })
	stacks := slices.ContainsFunc(cs, func(c result.WireCheck) bool { return c.Client != "" })
	t := Table{
		Title:  "tlsbench vs the wire on the same connections (--wire): phases, ms, mean [round trips]",
		Left:   2,
		Header: []string{"variant", "phase", "conns", "tlsbench", "wire", "diff", "tlsbench RT", "wire RT", ""},
	}
	if split {
		t.Header = append(t.Header, "client", "server", "network")
	}
	last := ""
	for _, c := range cs {
		name := c.Variant
		if name == last {
			name = ""
		}
		last = c.Variant
		row := []Cell{textCell(name), textCell(c.Phase), countCell(int64(c.Conns), "connections")}
		if c.Client != "" {
			// A stack's phases are the wire's alone: tlsbench timed none.
			row = append(row, textCell(""), numCell(c.Wire, millis, "ms"), textCell(""), textCell(""), rtCell(c.WireRoundTrips), textCell(""))
		} else {
			diff := textCell("-")
			if d := wireCheckDelta(c.Tool, c.Wire); !math.IsNaN(d) {
				diff = Cell{Text: fmt.Sprintf("%+.1f%%", d), Unit: "%", Value: d, StdDev: math.NaN(), CI: math.NaN()}
			}
			mark := ""
			if parts(c.Tool, c.Wire, c.ToolRoundTrips, c.WireRoundTrips) {
				mark = "differs"
			}
			row = append(row, numCell(c.Tool, millis, "ms"), numCell(c.Wire, millis, "ms"), diff,
				rtCell(c.ToolRoundTrips), rtCell(c.WireRoundTrips), textCell(mark))
		}
		if split {
			if sp := c.Split; sp != nil {
				row = append(row, numCell(sp.Client, millis, "ms"), numCell(sp.Server, millis, "ms"), numCell(sp.Network, millis, "ms"))
			} else {
				row = append(row, textCell("-"), textCell("-"), textCell("-"))
			}
		}
		t.addCells(row...)
	}
	t.Foot = []string{fmt.Sprintf("the connections the capture shows starting within each trial; differs: by more than %.0f%% and %s ms, or in round trips", wireCheckPct, num(wireCheckMS, millis))}
	if stacks {
		t.Foot = append(t.Foot, "a client stack other than Go's reports only each connection's start and end: its phases are the wire's alone (tlsbench's columns empty), its trial's connections those within the stack's run, from its warm-up's end to its done")
	}
	if split {
		t.Foot = append(t.Foot, "client, server, network: the wire's time split by whose turn it was (the server's answer time less the network's round trip)")
	}
	b.table(t)
	ix.wireStacksTable(b)
}

// wireStacksTable writes what the wire shows each client stack's variant
// negotiated, and how that checked against the variant.
func (ix *index) wireStacksTable(b *body) {
	ws := ix.r.WireStacks
	if len(ws) == 0 {
		return
	}
	t := Table{
		Title:  "negotiated, as the wire shows each client stack's connections (--wire)",
		Left:   2,
		Header: []string{"variant", "conns", "TLS", "version", "suite", "group", "HRR", "resumed", "client cert", "check"},
		Foot: []string{
			"HRR: connections whose server asked for another key share (a HelloRetryRequest, one more round trip); client cert: sent or none as TLS 1.2 shows it, hidden where TLS 1.3 encrypts it",
			"check: the connections against what the variant asks for (version, group without a HelloRetryRequest, client certificate); a failed check fails the run",
		},
	}
	for _, w := range ws {
		version, suite, group := "-", "-", "-"
		if n := w.Negotiated; n != nil {
			version, suite, group = dash(n.Version), dash(n.Suite), dash(n.Group)
		}
		check := "ok"
		if w.Failed != "" {
			check = "failed: " + w.Failed
		}
		t.addCells(textCell(w.Variant), countCell(w.Conns, "connections"), countCell(w.TLS, "connections"), textCell(version), textCell(suite), textCell(group),
			countCell(w.HelloRetries, "connections"), countCell(w.Resumed, "connections"), textCell(dash(w.ClientCert)), textCell(check))
	}
	b.table(t)
}

// rtCell is a mean round-trip count: "2", or "1.50".
func rtCell(x float64) Cell {
	c := Cell{Text: fmt.Sprintf("%.2f", x), Unit: "round trips", Value: x, StdDev: math.NaN(), CI: math.NaN()}
	if !finite(x) {
		return textCell(c.Text)
	}
	if x == math.Round(x) {
		c.Text = fmt.Sprint(int(x))
	}
	return c
}

// wireChecks: each phase where tlsbench and the wire part, or that every
// phase agreed.
func (r *rules) wireChecks() {
	// A client stack's phases are the wire's alone: nothing to check.
	cs := slices.DeleteFunc(slices.Clone(r.ix.r.WireChecks), func(c result.WireCheck) bool { return c.Client != "" })
	if len(cs) == 0 {
		return
	}
	agree := WireCheckAgree{}
	vars := map[string]int64{}
	for _, c := range cs {
		vars[c.Variant] = max(vars[c.Variant], c.Conns)
		if parts(c.Tool, c.Wire, c.ToolRoundTrips, c.WireRoundTrips) {
			r.add(KindFinding, TopicWire, WireCheckDiff{Variant: c.Variant, Phase: c.Phase, Conns: c.Conns, Tool: c.Tool, Wire: c.Wire,
				Pct: wireCheckDelta(c.Tool, c.Wire), ToolRTs: c.ToolRoundTrips, WireRTs: c.WireRoundTrips})
			agree.Phases = -1
			continue
		}
		if agree.Phases >= 0 {
			agree.Phases++
			if d := wireCheckDelta(c.Tool, c.Wire); !math.IsNaN(d) {
				agree.Worst = max(agree.Worst, math.Abs(d))
			}
		}
	}
	if agree.Phases > 0 {
		for _, n := range vars {
			agree.Conns += n
		}
		r.add(KindFinding, TopicWire, agree)
	}
}

// wireCheckWords says a self-check's fact.
func wireCheckWords(f Fact) string {
	switch f := f.(type) {
	case WireCheckAgree:
		return fmt.Sprintf("tlsbench's phases matched the wire's on the same %s: every one of the %d phases checked within %.1f%%, with the same round trips.",
			plural(int(f.Conns), "connection"), f.Phases, f.Worst)
	case WireCheckDiff:
		rt := ""
		if math.Abs(f.ToolRTs-f.WireRTs) > wireCheckRT {
			rt = fmt.Sprintf(", and %s against the wire's %s", pluralFloat(roundRT(f.ToolRTs), "round trip"), pluralFloat(roundRT(f.WireRTs), "round trip"))
		}
		pct := ""
		if !math.IsNaN(f.Pct) {
			pct = fmt.Sprintf(" (%+.0f%%)", f.Pct)
		}
		return fmt.Sprintf("For %s, tlsbench's %s phase took %s against %s on the wire%s over %s%s: tlsbench's phase does not begin or end where the wire shows it.",
			f.Variant, f.Phase, msWords(f.Tool), msWords(f.Wire), pct, plural(int(f.Conns), "connection"), rt)
	}
	panic(fmt.Sprintf("report: no wording for %T", f))
}
