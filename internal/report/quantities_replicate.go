package report

import (
	"fmt"
	"math"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// The quantities of a replicate result, for gates: each figure the
// replicate tables show, per variant of the link and writers' count, with
// its change against the plain link of the same commit mode, trials
// paired by round as the tables pair them.

// replQuantities are a replicate cell's figures, in the tables' order.
var replQuantities = []struct {
	name, unit string
	f          replFigure
}{
	{"writes_per_s", "/s", writesPerSec},
	{"commit.p50", "ms", commitP50},
	{"commit.p95", "ms", commitP95},
	{"commit.p99", "ms", commitP99},
	{"lag.p50", "ms", lagP50},
	{"lag.p95", "ms", lagP95},
	{"lag.p99", "ms", lagP99},
	{"lag.max", "ms", lagMax},
	{"server_lag.p50", "ms", serverLagP50},
	{"link_mb_per_s", "/s", linkMBps},
	{"primary_cpu_per_write", "us", primaryUs},
	{"replica_cpu_per_write", "us", replicaUs},
	{"error_rate", "ratio", func(t result.Trial) float64 {
		x, ok := errorRate(t)
		if !ok {
			return math.NaN()
		}
		return x
	}},
}

// resyncQuantity is a resync's rate over a link (--resync; Galera: its IST): one copy,
// no trials, so no interval.
const resyncQuantity = "resync.mb_per_s"

// ReplicateQuantityNames are the quantities a replicate result has.
var ReplicateQuantityNames = func() []string {
	var names []string
	for _, q := range replQuantities {
		names = append(names, q.name)
	}
	return append(names, resyncQuantity)
}()

// replicateQuantities lists each variant's figures per writers' count
// (-c), then each resync's.
func (ix *index) replicateQuantities() []Quantity {
	x := newReplIndex(ix.r)
	nan := stats.Delta{Pct: math.NaN(), CI95: math.NaN()}
	var out []Quantity
	// Each writers' count (-c) alone, so that a sweep pairs like with like.
	for _, c := range x.writers {
		for _, v := range x.vs {
			ts := x.trials[replKey{v.ID, c}]
			if len(ts) == 0 {
				continue
			}
			base := x.baseline(v)
			for _, d := range replQuantities {
				var xs []float64
				for _, t := range ts {
					if y := d.f(t); finite(y) {
						xs = append(xs, y)
					}
				}
				if len(xs) == 0 {
					continue
				}
				s := stats.Summarize(xs)
				q := Quantity{Experiment: plan.Replicate, Variant: v.ID, Concurrency: c, Name: d.name, Unit: d.unit,
					Trials: s.N, Mean: s.Mean, CI95: s.CI95, Overhead: nan, Baseline: base}
				if ch := x.change(v, c, d.f); ch.N > 0 {
					q.Overhead = ch
				}
				out = append(out, q)
			}
		}
	}
	return append(out, ix.resyncQuantities(x)...)
}

// resyncQuantities are the full resyncs' rates (--resync), one for each
// variant whose link was copied over, against the plain link's copy.
func (ix *index) resyncQuantities(x *replIndex) []Quantity {
	mbps := map[string]float64{}
	for _, r := range ix.r.Replicate.Resyncs {
		// A link's first copy: Galera's IST, over the group link's
		// TLS, not its plain SST.
		if _, ok := mbps[r.Link]; !ok && r.Elapsed > 0 {
			mbps[r.Link] = r.MBPerSec()
		}
	}
	var out []Quantity
	for _, v := range x.vs {
		rate, ok := mbps[v.LinkID]
		if !ok {
			continue
		}
		q := Quantity{Experiment: plan.Replicate, Variant: v.ID, Name: resyncQuantity, Unit: "/s", Cell: fmt.Sprintf("replicate %s (the resync over %s)", v.ID, v.LinkID),
			Trials: 1, Mean: rate, CI95: math.NaN(), Overhead: stats.Delta{Pct: math.NaN(), CI95: math.NaN()}}
		for _, b := range x.vs {
			if b.Baseline && b.Sync == v.Sync && b.ID != v.ID && mbps[b.LinkID] > 0 {
				q.Baseline, q.Overhead = b.ID, stats.Paired([]float64{mbps[b.LinkID]}, []float64{rate})
			}
		}
		out = append(out, q)
	}
	return out
}
