package report

import (
	"fmt"
	"slices"

	"github.com/tlsbench/tlsbench/internal/plan"
)

// warnings are what the figures themselves say about their own limits.
func (ix *index) warnings() []string {
	var out []string
	warn := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	r := ix.r
	out = append(out, r.Warnings...) // the run's own, about its setup
	if len(r.Trials) == 0 && isAdvise(r) {
		return out // an advise result has predictions, no trials
	}
	if len(r.Trials) == 0 {
		return append(out, "no trial finished: there is nothing to report")
	}
	for _, e := range ix.experiments {
		for _, name := range ix.variants {
			for _, c := range ix.conc[e] {
				// A client near its CPU limit measures itself, not the server.
				used, limit := ix.clientLoad(cellKey{e, name, c})
				if used > clientBound*float64(limit) {
					who := "tlsbench"
					if s := ix.stackOf(name); s != goStack {
						who = "the " + s + " client"
					}
					warn("the client used %.2f of %s in %s %s %s: the figures may be limited by %s, not the server",
						used, plural(limit, "core"), e, name, plan.Label(c), who)
				}
			}
		}
	}
	for _, e := range ix.experiments {
		for _, name := range ix.variants {
			for _, c := range ix.conc[e] {
				errs, first := map[string]int64{}, map[string]string{}
				for _, t := range ix.trials[cellKey{e, name, c}] {
					for kind, n := range t.Errors {
						errs[kind] += n
						if first[kind] == "" {
							first[kind] = t.ErrorSamples[kind]
						}
					}
				}
				kinds := make([]string, 0, len(errs))
				for k := range errs {
					kinds = append(kinds, k)
				}
				slices.Sort(kinds)
				for _, k := range kinds {
					msg := ""
					if first[k] != "" {
						msg = ", the first: " + first[k]
					}
					warn("%s %s %s: %d %s%s", e, name, plan.Label(c), errs[k], errorWord(errs[k], k), msg)
				}
			}
		}
	}
	out = append(out, ix.rateWarnings()...)
	// Resumption asked for but refused is a property of the server, and
	// it changes what the resume variant measures.
	for _, name := range ix.variants {
		if info, ok := ix.info[name]; !ok || !info.Resume {
			continue
		}
		var resumed, conns int64
		for _, e := range ix.experiments {
			for _, c := range ix.conc[e] {
				for _, t := range ix.trials[cellKey{e, name, c}] {
					resumed += t.Resumed
					conns += t.Conns
				}
			}
		}
		if conns > 0 && resumed*2 < conns {
			warn("%s: the server resumed %s of the sessions the client offered to resume: it refuses or limits resumption", name, percent(resumed, conns))
		}
	}
	single, all := 0, 0
	for _, e := range ix.experiments {
		if e == plan.Wire {
			continue // one trial per variant, its figures over connections
		}
		for _, k := range ix.cells(e) {
			all++
			if len(ix.trials[k]) < 2 {
				single++
			}
		}
	}
	// A cell at a rate is one too (a search runs each step once).
	for _, ts := range ix.rt.trials {
		all++
		if len(ts) < 2 {
			single++
		}
	}
	switch {
	case all == 0 && isWire(r):
	case single == all:
		warn("one trial: no stddev or confidence interval")
	case single > 0:
		warn("one trial in %d of %d cells: no stddev or confidence interval there", single, all)
	}
	return out
}

func errorWord(n int64, kind string) string {
	if n == 1 {
		return kind + " error"
	}
	return kind + " errors"
}
