package gate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/report"
	"github.com/tlsbench/tlsbench/internal/result"
)

// Check resolves each gate's variants against the run spec plans and
// refuses what the run cannot measure: another experiment, a variant it
// does not have, an overhead of the baseline, @ci95 with one trial, a
// compare: gate. The gates returned carry their variants.
func Check(gates []Gate, spec plan.Spec) ([]Gate, error) {
	return checkEach(gates, spec.Experiments, spec.Trials, spec.Variants(), nil)
}

// CheckReplicate is Check for a replicate run of plan p: its variants are
// the replication links; a resync's figure needs --resync and, one copy,
// has no interval.
func CheckReplicate(gates []Gate, p plan.Replication) ([]Gate, error) {
	var vs []plan.Variant
	for _, v := range p.Variants() {
		vs = append(vs, v.Variant())
	}
	return checkEach(gates, []plan.Experiment{plan.Replicate}, p.Trials, vs, func(g Gate) string {
		switch {
		case g.Quantity != "resync.mb_per_s":
		case !p.Resync:
			return "resync.mb_per_s is the copy --resync times before the trials: give --resync, or gate another quantity"
		case g.CI95:
			return "a resync is one copy per link, with no interval: drop @ci95"
		}
		return ""
	})
}

// CheckAdvise is Check for advise: a gate names a change (report.AdviceIDs)
// or [*], every change that applies; measured figures and errors need a
// lab replay (--confirm, of trials trials each), and round trips and
// errors have no interval.
func CheckAdvise(gates []Gate, confirm bool, trials int) ([]Gate, error) {
	vs := make([]plan.Variant, len(report.AdviceIDs))
	for i, id := range report.AdviceIDs {
		vs[i] = plan.Variant{ID: id}
	}
	for _, g := range gates {
		if g.Experiment == plan.Advise && g.Variant != "*" && !slices.Contains(report.AdviceIDs, g.Variant) {
			return nil, &Error{Expr: g.Expr, Problem: fmt.Sprintf("no change %q: advise's changes are %s (or [*], every change that applies)", g.Variant, quoted(report.AdviceIDs))}
		}
	}
	if !confirm {
		trials = 0 // no replay: no measured figure has an interval
	}
	return checkEach(gates, []plan.Experiment{plan.Advise}, max(trials, 2), vs, func(g Gate) string {
		what, fig, _ := strings.Cut(g.Quantity, ".")
		switch {
		case what != "saved" && !confirm:
			return what + " figures come from the lab replay: give --confirm, or gate the prediction (saved." + fig + ")"
		case g.CI95 && (what == "error_pct" || fig == "round_trips"):
			return g.Quantity + " has no interval (a round trip count, or a prediction's error): drop @ci95"
		case g.CI95 && what == "measured" && trials < 2:
			return "@ci95 needs an interval, which needs at least 2 trials of the replay: give --trials 2 or more, or drop @ci95"
		}
		return ""
	})
}

// checkEach checks gates against a run of experiments, of trials trials
// per variant, with the variants vs; more says what else a gate cannot
// be ("" if nothing).
func checkEach(gates []Gate, experiments []plan.Experiment, trials int, vs []plan.Variant, more func(Gate) string) ([]Gate, error) {
	out := make([]Gate, 0, len(gates))
	for _, g := range gates {
		bad := func(format string, a ...any) error {
			return &Error{Expr: g.Expr, Problem: fmt.Sprintf(format, a...)}
		}
		if g.Compare {
			return nil, bad("a compare: gate judges two results: give it to tlsbench compare OLD NEW --gate")
		}
		if !slices.Contains(experiments, g.Experiment) {
			return nil, bad("the run has no %s experiment (it runs %s)", g.Experiment, joinExperiments(experiments))
		}
		if g.CI95 && trials < 2 {
			return nil, bad("@ci95 needs an interval, which needs at least 2 trials: give --trials 2 or more, or drop @ci95")
		}
		if more != nil {
			if why := more(g); why != "" {
				return nil, bad("%s", why)
			}
		}
		var err error
		if g.Variants, err = resolve(g, vs); err != nil {
			return nil, err
		}
		if g.Overhead && g.Variant != "*" && slices.ContainsFunc(vs, func(v plan.Variant) bool { return v.Baseline && v.ID == g.Variants[0] }) {
			return nil, bad("%q is the baseline: its overhead is against itself; gate another variant or [*]", g.Variants[0])
		}
		out = append(out, g)
	}
	return out, nil
}

// CheckCompare is Check for compare: gates on two results: the experiment
// and the variant must be in both.
func CheckCompare(gates []Gate, old, new *result.Result) ([]Gate, error) {
	out := make([]Gate, 0, len(gates))
	for _, g := range gates {
		bad := func(format string, a ...any) error {
			return &Error{Expr: g.Expr, Problem: fmt.Sprintf(format, a...)}
		}
		if !g.Compare {
			return nil, bad("compare judges changes between two results: write 'compare: EXPERIMENT[VARIANT].QUANTITY.delta < BOUND%%'")
		}
		var both []plan.Variant
		for _, v := range old.Variants {
			if slices.ContainsFunc(new.Variants, func(n plan.Variant) bool { return n.ID == v.ID }) {
				both = append(both, v)
			}
		}
		for _, r := range []*result.Result{old, new} {
			if !slices.Contains(r.Spec.Experiments, g.Experiment) {
				return nil, bad("a result has no %s experiment (it ran %s)", g.Experiment, joinExperiments(r.Spec.Experiments))
			}
			if g.CI95 && r.Spec.Trials < 2 {
				return nil, bad("@ci95 needs an interval, which needs at least 2 trials in each result (one ran %d): drop @ci95", r.Spec.Trials)
			}
		}
		var err error
		if g.Variants, err = resolve(g, both); err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

// resolve is the IDs of the variants g's selector names: "*" every one, an
// ID itself, or the one variant whose ID has every word of the selector
// (tls1.3 for "tls1.3 rsa2048" when no other variant is TLS 1.3).
func resolve(g Gate, vs []plan.Variant) ([]string, error) {
	ids := make([]string, len(vs))
	for i, v := range vs {
		ids[i] = v.ID
	}
	if g.Variant == "*" {
		return ids, nil
	}
	if slices.Contains(ids, g.Variant) {
		return []string{g.Variant}, nil
	}
	words := strings.Fields(g.Variant)
	var hits []string
	for _, id := range ids {
		have := strings.Fields(id)
		if !slices.ContainsFunc(words, func(w string) bool { return !slices.Contains(have, w) }) {
			hits = append(hits, id)
		}
	}
	switch len(hits) {
	case 1:
		return hits, nil
	case 0:
		return nil, &Error{Expr: g.Expr, Problem: fmt.Sprintf("no variant %q: the run's variants are %s (or [*])", g.Variant, quoted(ids))}
	}
	return nil, &Error{Expr: g.Expr, Problem: fmt.Sprintf("[%s] is ambiguous: it names %s; give the whole ID or [*]", g.Variant, quoted(hits))}
}

func quoted(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = "[" + id + "]"
	}
	return strings.Join(q, ", ")
}

func joinExperiments(es []plan.Experiment) string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = string(e)
	}
	return strings.Join(s, ", ")
}
