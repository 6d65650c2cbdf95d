package report

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// A replicate run's writes at rates (--rate): each offered rate's writes
// achieved, commit latency from the intended starts and the replica's lag
// per variant, and a search's (--rate auto, --lag-slo) capacities, which
// the run recorded as it bracketed them (result.LagCapacity).

// replRated is a replicate result's trials at write rates.
type replRated struct {
	trials  map[replRateKey][]result.Trial
	writers []int     // ascending
	rates   []float64 // offered, ascending
}

type replRateKey struct {
	id      string
	writers int
	rate    float64
}

func (x *replRated) add(t result.Trial) {
	if x.trials == nil {
		x.trials = map[replRateKey][]result.Trial{}
	}
	k := replRateKey{t.Variant, t.Concurrency, t.Open.Offered}
	x.trials[k] = append(x.trials[k], t)
	x.writers = addNew(x.writers, t.Concurrency)
	x.rates = addNew(x.rates, t.Open.Offered)
	slices.Sort(x.writers)
	slices.Sort(x.rates)
}

func (x *replRated) measured(id string) bool {
	for k := range x.trials {
		if k.id == id {
			return true
		}
	}
	return false
}

// overLag is why trial t of variant v was not sustained within p's
// bounds (result.Trial.OverLag), "" when it was.
func overLag(p plan.Replication, v plan.ReplicaVariant) func(result.Trial) string {
	return func(t result.Trial) string { return t.OverLag(p.LagSLO, p.SLOFor(v)) }
}

// boundsWords says a search's bounds: "lag p99 < 1s", with "; commit p99
// < 50ms (synchronous)" when a synchronous mode has one.
func boundsWords(p plan.Replication) string {
	out := "lag p99 < " + p.LagSLO.String()
	if p.SLO > 0 {
		out += "; commit p99 < " + p.SLO.String() + " (synchronous)"
	}
	return out
}

// rateTables writes the table of the writes at rates: per offered rate
// (and writers, when swept), each variant's achieved rate, drops and
// failures, commit latency from the intended start, the service time
// and the heartbeat lag, and in a search whether the rate was sustained.
func (x *replIndex) rateTables(b *body, p plan.Replication, eng replEngine) {
	rt := &x.rated
	if len(rt.trials) == 0 {
		return
	}
	sweep := len(rt.writers) > 1
	t := Table{
		Title: "replicate at write rates (--rate, poisson arrivals): writes per second offered and achieved, latency in ms",
		Left:  2,
		Header: []string{"offered", "variant", "achieved", "dropped", "failed",
			"commit p50", "commit p99", "service p99", "lag p99", "lag max"},
	}
	if sweep {
		t.Header, t.Left = append([]string{"writers"}, t.Header...), 3
	}
	if p.Knee != nil {
		t.Header = append(t.Header, boundsWords(p))
	}
	trials := 0
	for _, c := range rt.writers {
		wlabel := plan.Label(c)
		for _, rate := range rt.rates {
			label := plan.RateLabel(rate)
			for _, v := range x.vs {
				ts := rt.trials[replRateKey{v.ID, c, rate}]
				s, ok := sumRates(ts, overLag(p, v))
				if !ok {
					continue
				}
				trials = max(trials, s.trials)
				var lagP99, lagMax float64
				for _, tr := range ts {
					lagP99 += lagShown(tr.Replication.Lag.P99) / float64(len(ts))
					lagMax = max(lagMax, lagShown(tr.Replication.Lag.Max))
				}
				ms := func(v float64) Cell { return numCell(v, millis, "ms") }
				row := []Cell{textCell(label), textCell(v.ID), numCell(s.achieved, ratePrecision, "writes/s"), shareCount(s.dropped, s.arrivals), shareCount(s.failed, s.arrivals),
					ms(s.p50), ms(s.p99), ms(s.sp99), ms(lagP99), ms(lagMax)}
				if sweep {
					row = append([]Cell{textCell(wlabel)}, row...)
					wlabel = ""
				}
				if p.Knee != nil {
					row = append(row, textCell(s.verdict()))
				}
				t.addCells(row...)
				label = ""
			}
		}
	}
	t.Foot = []string{
		"each write is " + eng.write + "; achieved: the writes that started per second of the trial; dropped: arrivals that found " + fmt.Sprint(plan.DefaultMaxInflight) + " already queued for the writers (-c), counted, never delayed",
		"commit p50, p99: from each write's intended start (coordinated omission corrected: queueing behind a slow primary counts); service: from its actual start; lag: the heartbeat's, as in the closed loop's table",
	}
	if p.Knee != nil {
		t.Foot = append(t.Foot, "a search steps the rate ×"+num(p.Knee.Factor, millis)+" per variant until a trial breaks the bounds twice in a row (a step over them runs once more: a moment's stall of a shared machine is not the knee); the asynchronous modes' commit is not bounded: it does not wait for the replica")
	}
	if trials > 1 {
		t.Foot = append(t.Foot, fmt.Sprintf("percentiles: the mean over %s; lag max: the largest", plural(trials, "trial")))
	}
	b.table(t)
}

// LagCapacityFact is a replicate write-rate search's outcome at one count
// of writers: each variant's highest rate within the bounds, bracketed by
// the step that broke them.
type LagCapacityFact struct {
	Writers int
	// LagSLO bounds the heartbeat lag p99; SLO the commit p99 of the
	// synchronous modes, 0 for none.
	LagSLO, SLO time.Duration
	From        float64 // the search's first rate
	Factor      float64 // its step
	At          []result.LagCapacity
	base        map[string]string // each variant's baseline, "" for none
}

func (LagCapacityFact) isFact() {}

// capacity: the write rate each variant sustains within the lag bound,
// per count of writers (a search).
func (x *replIndex) capacity(r *rules) {
	rp := r.ix.r.Replicate
	p := rp.Plan
	if p.Knee == nil || len(rp.Capacities) == 0 {
		return
	}
	var ws []int
	for _, c := range rp.Capacities {
		ws = addNew(ws, c.Writers)
	}
	for _, n := range ws {
		f := LagCapacityFact{Writers: n, LagSLO: p.LagSLO, SLO: p.SLO, From: p.Knee.From, Factor: p.Knee.Factor, base: map[string]string{}}
		for _, c := range rp.Capacities {
			if c.Writers == n && c.Trials > 0 {
				f.At = append(f.At, c)
			}
		}
		for _, v := range x.vs {
			f.base[v.ID] = x.baseline(v)
		}
		if len(f.At) > 0 {
			r.add(KindFinding, TopicReplica, f)
		}
	}
}

// lagCapacityWords: "Write capacity with 4 writers, the replica's lag p99
// under 1s: plain async sustains 2300 writes/s (3400/s broke it: ...),
// tls1.3 async 1500 (-35% against plain async; 2300/s broke it: ...)."
func lagCapacityWords(f LagCapacityFact) string {
	rates := map[string]float64{}
	for _, at := range f.At {
		rates[at.Variant] = at.Rate
	}
	var parts []string
	for i, at := range f.At {
		var s string
		switch {
		case at.Rate == 0:
			s = fmt.Sprintf("%s not even %s writes/s", at.Variant, perSecond(f.From))
		case i == 0:
			s = fmt.Sprintf("%s sustains %s writes/s", at.Variant, perSecond(at.Rate))
		default:
			s = fmt.Sprintf("%s %s", at.Variant, perSecond(at.Rate))
		}
		var notes []string
		if b := f.base[at.Variant]; b != "" && b != at.Variant && rates[b] > 0 && at.Rate > 0 {
			notes = append(notes, fmt.Sprintf("%s%% against %s", signed(100*(at.Rate/rates[b]-1), pct), b))
		}
		switch {
		case at.Next > 0:
			notes = append(notes, fmt.Sprintf("%s broke it: %s", plan.RateLabel(at.Next), at.Why))
		case at.Rate > 0:
			notes = append(notes, "the search's last step: at least that")
		}
		if len(notes) > 0 {
			s += " (" + strings.Join(notes, "; ") + ")"
		}
		parts = append(parts, s)
	}
	bound := "the replica's heartbeat lag p99 under " + f.LagSLO.String()
	if f.SLO > 0 {
		bound += " (and, synchronous, the commit p99 under " + f.SLO.String() + ")"
	}
	step := ""
	if f.Factor > 1 && !math.IsInf(f.Factor, 0) {
		step = fmt.Sprintf(" The steps are ×%s apart: a capacity lies between the rate sustained and the one that broke it, so one step of difference is within the search's resolution.", num(f.Factor, millis))
	}
	return fmt.Sprintf("Write capacity with %s, %s: %s.%s", plural(f.Writers, "writer"), bound, strings.Join(parts, ", "), step)
}
