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

// The key-exchange group: what a group (above all the post-quantum hybrid)
// costs a TLS handshake against another, measured on connections (--group)
// and on the primitives (tlsbench crypto).

// GroupChange is key-exchange group Group instead of Ref ("" is the TLS
// library's default offer) in one setting: Contrast is between their
// variants (Ref to Group) at the lowest connect concurrency; Handshake
// the change of the TLS handshake's time, ms, paired by round (N 0 when
// unknown); Hello the ClientHello's bytes with each (0 unknown); Retry
// whether the server answered each with a HelloRetryRequest.
type GroupChange struct {
	Group, Ref           string
	Contrast             Contrast
	Handshake            stats.Summary
	HelloRef, HelloGroup int
	RetryRef, RetryGroup bool
}

// HybridKex is one side of a TLS 1.3 handshake's key exchange, as a
// library computes it on one core, with the post-quantum hybrid
// (Hybrid) against a classical group (Classic): µs per handshake and the
// key share each sends, client then server.
type HybridKex struct {
	Library                  string
	Hybrid, Classic          string
	ClientUS, ServerUS       [2]float64 // hybrid, classic
	ClientShare, ServerShare [2]int     // hybrid, classic
}

func (GroupChange) isFact() {}
func (HybridKex) isFact()   {}

// groups: in each setting measured with several groups, every group
// against the reference: the first measured, unless that is the hybrid,
// whose cost is the question (then the first other one).
func (r *rules) groups() {
	ix := r.ix
	c, ok := ix.lowest(plan.Connect)
	if !ok {
		return
	}
	type setting struct {
		info   plan.Variant // Group cleared
		groups map[string]string
	}
	var settings []*setting
	var order []string
	for _, n := range ix.fullTLS(plan.Connect) {
		info := ix.info[n]
		if !ix.has(plan.Connect, c, n) {
			continue
		}
		if !slices.Contains(order, info.Group) {
			order = append(order, info.Group)
		}
		k := info
		k.ID, k.Baseline, k.Group = "", false, ""
		i := slices.IndexFunc(settings, func(s *setting) bool { return s.info == k })
		if i < 0 {
			settings = append(settings, &setting{info: k, groups: map[string]string{}})
			i = len(settings) - 1
		}
		settings[i].groups[info.Group] = n
	}
	if len(order) < 2 {
		return
	}
	ref := order[0]
	if ref == plan.GroupX25519MLKEM768 {
		ref = order[1]
	}
	for _, s := range settings {
		from := s.groups[ref]
		if from == "" {
			continue
		}
		for _, g := range order {
			to := s.groups[g]
			if g == ref || to == "" {
				continue
			}
			a, b := ix.pairedTrials(plan.Connect, c, from, to)
			f := GroupChange{Group: g, Ref: ref, Contrast: ix.contrast(plan.Connect, from, to, c),
				Handshake:  pairedPhase(a, b, "tls-handshake"),
				HelloRef:   helloBytes(a),
				HelloGroup: helloBytes(b),
				RetryRef:   helloRetried(a),
				RetryGroup: helloRetried(b),
			}
			r.add(KindFinding, TopicGroup, f)
		}
	}
}

// pairedPhase is the change of a phase's mean time from trials a to trials
// b, ms, paired by round: mean and 95% interval over the rounds both have.
func pairedPhase(a, b []result.Trial, phase string) stats.Summary {
	at := map[int]float64{}
	for _, t := range a {
		if ms := phaseMean([]result.Trial{t}, phase); !math.IsNaN(ms) {
			at[t.Round] = ms
		}
	}
	var ds []float64
	for _, t := range b {
		x, ok := at[t.Round]
		if ms := phaseMean([]result.Trial{t}, phase); ok && !math.IsNaN(ms) {
			ds = append(ds, ms-x)
		}
	}
	return stats.Summarize(ds)
}

// helloBytes is the ClientHello's size the trials recorded (0 if none).
func helloBytes(ts []result.Trial) int {
	for _, t := range ts {
		if t.Negotiated != nil && t.Negotiated.ClientHelloBytes > 0 {
			return t.Negotiated.ClientHelloBytes
		}
	}
	return 0
}

// helloRetried reports whether a server answered any of the trials with a
// HelloRetryRequest.
func helloRetried(ts []result.Trial) bool {
	return slices.ContainsFunc(ts, func(t result.Trial) bool { return t.Negotiated != nil && t.Negotiated.HelloRetry })
}

// hybridKex: per library that measured both, the hybrid's key exchange
// against X25519's, each side of one handshake.
func (r *rules) hybridKex() {
	x := newPrimitives(r.ix.r.Crypto)
	const hybrid, classic = plan.GroupX25519MLKEM768, "x25519"
	for _, lib := range x.libs {
		get := func(kind, name string) (result.Primitive, bool) {
			p, ok := x.at[primKey{lib, kind, name, 0}]
			return p, ok && p.PerCore > 0
		}
		hc, ok1 := get(result.KindKexClient, hybrid)
		hs, ok2 := get(result.KindKexServer, hybrid)
		cc, ok3 := get(result.KindKexClient, classic)
		cs, ok4 := get(result.KindKexServer, classic)
		if !ok1 || !ok2 || !ok3 || !ok4 {
			continue
		}
		r.add(KindFinding, TopicGroup, HybridKex{Library: lib, Hybrid: hybrid, Classic: classic,
			ClientUS:    [2]float64{1e6 / hc.PerCore, 1e6 / cc.PerCore},
			ServerUS:    [2]float64{1e6 / hs.PerCore, 1e6 / cs.PerCore},
			ClientShare: [2]int{hc.KeyShare, cc.KeyShare},
			ServerShare: [2]int{hs.KeyShare, cs.KeyShare},
		})
	}
}

// groupName names a --group value in a sentence.
func groupName(g string) string {
	if g == "" {
		return "the TLS library's default offer"
	}
	return g
}

func (ix *index) groupWords(f GroupChange) string {
	x := f.Contrast
	var parts []string
	switch {
	case f.HelloRef > 0 && f.HelloGroup > 0 && f.HelloGroup != f.HelloRef:
		verb := "grows"
		if f.HelloGroup < f.HelloRef {
			verb = "shrinks"
		}
		parts = append(parts, fmt.Sprintf("the ClientHello %s from %d to %d bytes", verb, f.HelloRef, f.HelloGroup))
	case f.HelloRef > 0 && f.HelloGroup == f.HelloRef:
		parts = append(parts, fmt.Sprintf("the ClientHello stays %d bytes", f.HelloRef))
	}
	switch {
	case f.RetryRef && !f.RetryGroup:
		parts = append(parts, fmt.Sprintf("the server answered %s with a HelloRetryRequest and %s without one", groupName(f.Ref), groupName(f.Group)))
	case !f.RetryRef && f.RetryGroup:
		parts = append(parts, fmt.Sprintf("the server answered %s with a HelloRetryRequest and %s without one", groupName(f.Group), groupName(f.Ref)))
	}
	if rt := rtWords(x.RoundTrips, "more", "fewer"); rt != "" && rt != "no extra round trip" {
		parts = append(parts, rt)
	}
	if h := f.Handshake; h.N > 0 {
		parts = append(parts, "the TLS handshake "+diffWords(h))
	}
	if cpu := cpuWords(x); cpu != "" {
		parts = append(parts, cpu)
	}
	context := contextWords(ix.info[x.From], "group")
	return fmt.Sprintf("Key exchange %s instead of %s %s: %s: %s.", groupName(f.Group), groupName(f.Ref), context, strings.Join(parts, "; "), ix.outcome(x, "", false))
}

// diffWords says a change of time with its interval: "takes 0.31 ms more
// (±0.05 ms, 95% interval)", or that it is not measurable.
func diffWords(s stats.Summary) string {
	more, sign := "more", "+"
	if s.Mean < 0 {
		more, sign = "less", "-"
	}
	switch {
	case s.N < 2 || math.IsNaN(s.CI95):
		return fmt.Sprintf("takes %s %s (one pair of trials: no interval)", msWords(math.Abs(s.Mean)), more)
	case math.Abs(s.Mean) <= s.CI95:
		return fmt.Sprintf("takes no measurably different time (%s%s ±%s)", sign, msWords(math.Abs(s.Mean)), msWords(s.CI95))
	}
	return fmt.Sprintf("takes %s %s (±%s, 95%% interval)", msWords(math.Abs(s.Mean)), more, msWords(s.CI95))
}

func hybridKexWords(f HybridKex) string {
	us := func(v float64) string { return num(v, rate) + " µs" }
	return fmt.Sprintf("%s computes its side of a TLS 1.3 key exchange with %s in %s on the client and %s on the server (one core), against %s and %s with %s (%s× and %s×); its key shares are %d bytes from the client and %d from the server, against %d and %d.",
		f.Library, f.Hybrid, us(f.ClientUS[0]), us(f.ServerUS[0]), us(f.ClientUS[1]), us(f.ServerUS[1]), f.Classic,
		times(f.ClientUS[0]/f.ClientUS[1]), times(f.ServerUS[0]/f.ServerUS[1]),
		f.ClientShare[0], f.ServerShare[0], f.ClientShare[1], f.ServerShare[1])
}
