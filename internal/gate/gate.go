// Package gate parses gate expressions (--gate, --gates FILE), checks them
// against a run's plan before it runs, and judges them on the report
// model's quantities or on a comparison's Welch changes.
package gate

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/report"
)

// Gate is one parsed expression:
//
//	[compare:] EXPERIMENT[VARIANT|*].QUANTITY[.STAT] OP BOUND [UNIT] [@ci95]
type Gate struct {
	// Name is the name a --gates file gave, else the expression.
	Name, Expr string
	// Compare marks a gate on a comparison of two results (compare:).
	Compare    bool
	Experiment plan.Experiment
	// Variant is the selector as given ("*" for every variant), Variants
	// the variant IDs it stands for once checked against a plan.
	Variant  string
	Variants []string
	// Quantity is the figure (report.Quantity.Name); Overhead its paired
	// change against the baseline (overhead.QUANTITY), Delta its Welch
	// change from OLD to NEW (compare: QUANTITY.delta); both in percent.
	Quantity        string
	Overhead, Delta bool
	Op              string // <, <=, >, >=, ==
	// Bound is in the quantity's unit (Unit): ms, us, /s, count, ratio or
	// % for a change.
	Bound float64
	Unit  string
	// CI95: the far end of the 95% interval must satisfy the comparison,
	// not the point estimate.
	CI95 bool
}

// Error is a gate that cannot be: malformed, or naming what the run does
// not have. It is the user's to fix.
type Error struct {
	Expr, Problem string
}

func (e *Error) Error() string { return fmt.Sprintf("--gate %q: %s", e.Expr, e.Problem) }

// Phases are the phase names tlsbench's drivers time (netx's and each
// engine's): a phase. or roundtrips. quantity must name one of them.
var Phases = []string{
	"tcp", "tunnel", "ssh-kex", "ssh-auth", "tls-negotiation", "tls-handshake", "startup", "greeting", "hello",
	"auth", "query", "request", "response", "more-ops", "hold", "close",
}

// syntax is the whole grammar; the parts are checked after.
var syntax = regexp.MustCompile(`^(compare:)?\s*([a-z]+)\[([^\]]*)\]\.([A-Za-z0-9_.-]+)\s*(<=|>=|==|<|>)\s*([+-]?[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*(%|ms|us|µs|s|/s)?\s*(@\S+)?$`)

// Parse reads one expression.
func Parse(expr string) (Gate, error) {
	e := strings.TrimSpace(expr)
	bad := func(format string, a ...any) (Gate, error) {
		return Gate{}, &Error{Expr: expr, Problem: fmt.Sprintf(format, a...)}
	}
	m := syntax.FindStringSubmatch(e)
	if m == nil {
		return bad("not a gate: write EXPERIMENT[VARIANT|*].QUANTITY OP BOUND [UNIT] [@ci95], e.g. 'connect[tls1.3].overhead.p99 < 40%% @ci95' (see docs/gates.md)")
	}
	g := Gate{Name: e, Expr: e, Compare: m[1] != "", Experiment: plan.Experiment(m[2]), Variant: strings.TrimSpace(m[3]), Op: m[5], Unit: m[7]}
	runs := []plan.Experiment{plan.Connect, plan.Pool, plan.Stream, plan.Storm}
	switch {
	case g.Compare && !slices.Contains(runs, g.Experiment):
		return bad("compare judges connect, pool, stream or storm: %q is none of them", m[2])
	case !slices.Contains(append(runs, plan.Replicate, plan.Advise), g.Experiment):
		return bad("unknown experiment %q: gate connect, pool, stream, storm, replicate or advise", m[2])
	}
	if g.Variant == "" {
		return bad("the variant selector is empty: name a variant as the report does (e.g. [tls1.3]) or [*] for all")
	}
	if g.Unit == "µs" {
		g.Unit = "us"
	}
	switch m[8] {
	case "":
	case "@ci95":
		g.CI95 = true
	default:
		return bad("unknown qualifier %q: the only one is @ci95 (the far end of the 95%% interval must hold)", m[8])
	}
	path := m[4]
	switch {
	case g.Compare:
		q, ok := strings.CutSuffix(path, ".delta")
		if !ok {
			return bad("a compare: gate judges a change: write QUANTITY.delta, e.g. 'compare: pool[*].server_cpu_per_op.delta < +10%% @ci95'")
		}
		if !slices.Contains(report.CompareQuantities, q) {
			return bad("unknown quantity %q for compare: use one of %s", q, strings.Join(report.CompareQuantities, ", "))
		}
		g.Quantity, g.Delta = q, true
	default:
		q, over := strings.CutPrefix(path, "overhead.")
		switch {
		case strings.HasSuffix(q, ".delta"):
			return bad(".delta is a change between two results: put 'compare:' in front and give it to tlsbench compare OLD NEW")
		case over && g.Experiment == plan.Advise:
			return bad("advise's figures are savings already, with no baseline to compare with: drop overhead. (e.g. 'advise[tls1.3].saved.setup > 1ms')")
		}
		if err := knownQuantity(g.Experiment, q); err != "" {
			return bad("%s", err)
		}
		g.Quantity, g.Overhead = q, over
	}
	bound, err := strconv.ParseFloat(m[6], 64)
	if err != nil {
		return bad("the bound %q is not a number", m[6])
	}
	if g.Bound, g.Unit, err = g.scale(bound); err != nil {
		return bad("%v", err)
	}
	return g, nil
}

// knownQuantity is "" for a quantity a cell of experiment e can have,
// else why not.
func knownQuantity(e plan.Experiment, q string) string {
	switch e {
	case plan.Replicate:
		if slices.Contains(report.ReplicateQuantityNames, q) {
			return ""
		}
		return fmt.Sprintf("unknown quantity %q for replicate: use one of %s, or overhead. before one of them", q, strings.Join(report.ReplicateQuantityNames, ", "))
	case plan.Advise:
		if slices.Contains(report.AdviseQuantityNames, q) {
			return ""
		}
		return fmt.Sprintf("unknown quantity %q for advise: use saved.FIGURE (predicted), measured.FIGURE or error_pct.FIGURE (--confirm), FIGURE one of %s; or saved.round_trips, measured.round_trips", q, strings.Join(report.AdviceFigureNames, ", "))
	}
	if slices.Contains(report.QuantityNames, q) {
		return ""
	}
	for _, prefix := range []string{"phase.", "roundtrips."} {
		if p, ok := strings.CutPrefix(q, prefix); ok {
			if slices.Contains(Phases, p) {
				return ""
			}
			return fmt.Sprintf("unknown phase %q: use one of %s", p, strings.Join(Phases, ", "))
		}
	}
	return fmt.Sprintf("unknown quantity %q: use one of %s, phase.PHASE, roundtrips.PHASE, or overhead. before one of them", q, strings.Join(report.QuantityNames, ", "))
}

// unitOf is the unit the gate's figure is in: % for a change, else the
// quantity's (report.QuantityUnit).
func (g Gate) unitOf() string {
	if g.Overhead || g.Delta {
		return "%"
	}
	return report.QuantityUnit(g.Experiment, g.Quantity)
}

// scale converts a bound given in g.Unit to the quantity's unit; a unit
// that does not fit the quantity is an error.
func (g Gate) scale(v float64) (float64, string, error) {
	unit, want := g.Unit, g.unitOf()
	what := g.Quantity
	if strings.HasPrefix(what, "roundtrips.") || strings.HasSuffix(what, ".round_trips") {
		what = "round trips"
	}
	times := map[string]float64{"s": 1e3, "ms": 1, "us": 1e-3}
	switch want {
	case "%":
		switch {
		case unit == "%", unit == "" && !g.Overhead && !g.Delta: // an advice's error is in percent by name
			return v, want, nil
		case g.Overhead || g.Delta:
			return 0, "", fmt.Errorf("a change is in percent: write the bound with %%, e.g. 40%%")
		}
		return 0, "", fmt.Errorf("%s does not fit %s, in percent: write e.g. 10 or 10%%", unit, what)
	case "ratio":
		switch unit {
		case "%":
			return v / 100, want, nil
		case "":
			return v, want, nil
		}
		return 0, "", fmt.Errorf("%s does not fit %s, a share of operations: write e.g. 1%% or 0.01", unit, what)
	case "/s":
		if unit == "" || unit == "/s" {
			return v, want, nil
		}
		return 0, "", fmt.Errorf("%s does not fit %s, per second: give a number or N/s (overhead. before it for a change in %%)", unit, what)
	case "count":
		if unit == "" {
			return v, want, nil
		}
		return 0, "", fmt.Errorf("%s does not fit %s, a count: give a number, e.g. <= 1", unit, what)
	case "us":
		if f, ok := times[unit]; ok {
			return v * f * 1e3, want, nil
		}
		if unit == "" {
			return v, want, nil
		}
	case "ms":
		if f, ok := times[unit]; ok {
			return v * f, want, nil
		}
		if unit == "" {
			return 0, "", fmt.Errorf("a time needs its unit: ms, s or us, e.g. < 2ms (overhead. before the quantity for a change in %%)")
		}
	}
	return 0, "", fmt.Errorf("%q does not fit a time: give ms, s or us (overhead. before the quantity for a change in %%)", unit)
}
