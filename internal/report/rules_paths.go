package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// TopicPaths is where encryption is terminated: natively, at a pooler or
// proxy, in a tunnel or a VPN.
const TopicPaths Topic = "paths"

// PathRanking ranks the protected paths of experiment e (native TLS
// variants with full handshakes, and every path through an intermediary)
// by their mean time per operation at concurrency C, cheapest first, with
// plain's beside them (NaN if it was not measured).
type PathRanking struct {
	Experiment plan.Experiment
	C          int
	Paths      []PathCost
	PlainMS    float64
}

// PathCost is one path's mean time and server CPU per operation, ms.
type PathCost struct {
	Variant       string
	MS, ServerCPU float64
}

func (PathRanking) isFact() {}

// paths ranks the ways to protect connections where a run measured paths
// through intermediaries, per new connection and per query.
func (r *rules) paths() {
	ix := r.ix
	if !slices.ContainsFunc(ix.variants, func(n string) bool { return ix.info[n].Tunnel != "" }) {
		return
	}
	for _, e := range []plan.Experiment{plan.Connect, plan.Pool} {
		c, ok := ix.lowest(e)
		if !ok {
			continue
		}
		f := PathRanking{Experiment: e, C: c, PlainMS: math.NaN()}
		for _, n := range ix.measured(e) {
			info := ix.info[n]
			ts := ix.trials[cellKey{e, n, c}]
			if info.RTT != 0 || len(ts) == 0 {
				continue
			}
			ms := stats.Summarize(collect(withLatency(ts), func(t result.Trial) float64 { return t.Latency.Mean })).Mean
			switch {
			case direct(info):
				f.PlainMS = ms
			case ix.protected(n) && !info.Resume:
				f.Paths = append(f.Paths, PathCost{Variant: n, MS: ms, ServerCPU: cpuMS(ts, serverCPU)})
			}
		}
		if len(f.Paths) < 2 {
			continue
		}
		slices.SortStableFunc(f.Paths, func(a, b PathCost) int {
			switch {
			case a.MS < b.MS:
				return -1
			case a.MS > b.MS:
				return 1
			}
			return 0
		})
		r.add(KindRecommendation, TopicPaths, f)
	}
}

// pathWords says a PathRanking in one sentence.
func pathWords(f PathRanking) string {
	per := "per new connection"
	if f.Experiment != plan.Connect {
		per = "per operation on open connections (" + string(f.Experiment) + ")"
	}
	var parts []string
	for _, p := range f.Paths {
		s := p.Variant + " " + msWords(p.MS)
		if !math.IsNaN(p.ServerCPU) {
			s += fmt.Sprintf(" (server CPU %s)", msWords(p.ServerCPU))
		}
		parts = append(parts, s)
	}
	plain := ""
	if !math.IsNaN(f.PlainMS) {
		plain = fmt.Sprintf("; plain, unprotected, took %s", msWords(f.PlainMS))
	}
	return fmt.Sprintf("Where to protect connections, measured here %s at c=%d, cheapest first: %s%s. Server CPU includes the intermediary's.", per, f.C, strings.Join(parts, ", "), plain)
}
