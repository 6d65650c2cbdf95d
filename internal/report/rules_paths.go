package report

import (
	"cmp"
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
// plain's beside them (NaN if it was not measured). Tiers holds the paths
// that use no legacy cipher, cheapest first, in tiers: a path starts a new
// tier when its connections/s (or requests/s) differ measurably, paired by
// round, from those of every path of the tier before; else it joins that
// tier. One tier is no ranking.
// Legacy are the paths through a legacy cipher (CBC, 3DES, RC4): named,
// never ranked, however fast.
type PathRanking struct {
	Experiment plan.Experiment
	C          int
	Tiers      [][]PathCost
	Legacy     []PathCost
	PlainMS    float64
}

// Ranked reports whether some path was measurably cheaper than another.
func (f PathRanking) Ranked() bool { return len(f.Tiers) > 1 }

// PathCost is one path's mean time and server CPU per operation, ms.
type PathCost struct {
	Variant       string
	MS, ServerCPU float64
}

// PreferAEAD recommends modern AEAD ciphers over the Legacy paths
// measured: for their security, since the run measured no path cheaper
// than another.
type PreferAEAD struct{ Legacy []string }

func (PathRanking) isFact() {}
func (PreferAEAD) isFact()  {}

// legacy names the legacy cipher a variant's connections use ("" for
// none): CBC modes (SSH's aes256-cbc, TLS 1.2's *_CBC_* suites), 3DES and
// RC4, which current OpenSSH and TLS 1.3 no longer offer.
func legacy(info plan.Variant) string {
	for _, s := range []string{info.Cipher, info.Route.Arg, info.Tunnel} {
		l := strings.ToLower(s)
		if strings.Contains(l, "cbc") || strings.Contains(l, "3des") || strings.Contains(l, "rc4") {
			return s
		}
	}
	return ""
}

// paths ranks the ways to protect connections where a run measured paths
// through intermediaries, per new connection and per query: only where
// the difference is measurable, never a legacy cipher.
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
		var paths []PathCost
		for _, n := range ix.measured(e) {
			info := ix.info[n]
			all := ix.trials[cellKey{e, n, c}]
			ts := dropRounds(all, ix.outlierRounds(e, c, n))
			if len(ts) == 0 {
				// Every round an outlier (one trial, one stalled
				// connection): the path as measured, which the outliers'
				// caveat names, rather than no place in the list.
				ts = all
			}
			if info.RTT != 0 || len(ts) == 0 {
				continue
			}
			ms := stats.Summarize(collect(withLatency(ts), func(t result.Trial) float64 { return t.Latency.Mean })).Mean
			switch {
			case direct(info):
				f.PlainMS = ms
			case ix.protected(n) && !info.Resume:
				paths = append(paths, PathCost{Variant: n, MS: ms, ServerCPU: cpuMS(ts, serverCPU)})
			}
		}
		if len(paths) < 2 {
			continue
		}
		slices.SortStableFunc(paths, func(a, b PathCost) int { return cmp.Compare(a.MS, b.MS) })
		apart := func(tier []PathCost, p PathCost) bool {
			return !slices.ContainsFunc(tier, func(q PathCost) bool { return !ix.contrast(e, q.Variant, p.Variant, c).Measurable() })
		}
		for _, p := range paths {
			switch k := len(f.Tiers) - 1; {
			case legacy(ix.info[p.Variant]) != "":
				f.Legacy = append(f.Legacy, p)
			case k < 0 || apart(f.Tiers[k], p):
				f.Tiers = append(f.Tiers, []PathCost{p})
			default:
				f.Tiers[k] = append(f.Tiers[k], p)
			}
		}
		if len(f.Tiers) == 0 {
			continue
		}
		if f.Ranked() {
			r.add(KindRecommendation, TopicPaths, f)
			continue
		}
		r.add(KindFinding, TopicPaths, f)
		if len(f.Legacy) > 0 {
			var names []string
			for _, p := range f.Legacy {
				names = append(names, p.Variant)
			}
			r.add(KindRecommendation, TopicPaths, PreferAEAD{Legacy: names})
		}
	}
}

// pathWords says a PathRanking in one sentence: the ranking, or that
// there is none.
func pathWords(f PathRanking) string {
	per := "per new connection"
	if f.Experiment != plan.Connect {
		per = "per operation on open connections (" + string(f.Experiment) + ")"
	}
	cost := func(ps []PathCost) string {
		var parts []string
		for _, p := range ps {
			s := p.Variant + " " + msWords(p.MS)
			if !math.IsNaN(p.ServerCPU) {
				s += fmt.Sprintf(" (server CPU %s)", msWords(p.ServerCPU))
			}
			parts = append(parts, s)
		}
		return listWords(parts)
	}
	var b strings.Builder
	if f.Ranked() {
		var tiers []string
		for _, t := range f.Tiers {
			s := cost(t)
			if len(t) > 1 {
				s += ", within the noise of each other"
			}
			tiers = append(tiers, s)
		}
		fmt.Fprintf(&b, "Where to protect connections, measured here %s at c=%d, cheapest first (\"then\" marks a measurable step): %s", per, f.C, strings.Join(tiers, "; then "))
	} else {
		fmt.Fprintf(&b, "No way to protect connections measured here was measurably cheaper than another %s at c=%d, so this run ranks none: %s", per, f.C, cost(f.Tiers[0]))
	}
	if len(f.Legacy) > 0 {
		fmt.Fprintf(&b, "; %s uses a legacy cipher and is not ranked, whatever its speed", cost(f.Legacy))
	}
	if !math.IsNaN(f.PlainMS) {
		fmt.Fprintf(&b, "; plain, unprotected, took %s", msWords(f.PlainMS))
	}
	b.WriteString(". Server CPU includes the intermediary's.")
	return b.String()
}

// aeadWords says a PreferAEAD.
func aeadWords(f PreferAEAD) string {
	return fmt.Sprintf("Prefer TLS 1.3 or an AEAD cipher (AES-GCM, ChaCha20-Poly1305) to %s: not for speed, since no path was measurably cheaper here, but because CBC, 3DES and RC4 are legacy ciphers that current OpenSSH and TLS 1.3 no longer offer.", listWords(f.Legacy))
}
