package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tlsbench/tlsbench/internal/cluster"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// Replicate's open loop (--rate) and its write-rate search (--rate auto,
// --lag-slo): the writes come on a poisson schedule, as connect's and
// pool's arrivals do (rate.go), whatever the primary has answered.

// errQueued is a write still queued --timeout after its trial's end.
var errQueued = errors.New("the write was still queued --timeout after the trial's end: the primary stopped answering in time")

// openWrites is a replicate trial's writes at a rate: arrivals on a
// poisson schedule served by the trial's writers, each timed from its
// intended start (coordinated omission corrected, as pool's open loop is),
// queued for a free writer up to plan.DefaultMaxInflight, dropped beyond
// it. The warm-up runs at the same rate, unrecorded: a closed loop's
// would leave the replica a backlog that the measured span's lag would
// carry.
type openWrites struct {
	rate    float64
	disp    *dispatcher
	tallies []*openTally
	window  time.Duration
	// queued counts the arrivals still queued at the trial's end plus
	// --timeout, failed unserved.
	queued atomic.Int64
	wg     sync.WaitGroup
}

// startOpenWrites starts load's writers (write(i) commits one on writer
// i), fed from begin to start by the warm-up's schedule, then to end by
// the measured one; an arrival that a writer takes after late fails
// unserved.
func startOpenWrites(ctx context.Context, load replLoad, begin, start, end, late time.Time, write func(i int) bool) *openWrites {
	o := &openWrites{rate: load.rate}
	newDisp := func(from, to time.Time, seed uint64) *dispatcher {
		return &dispatcher{lim: &limits{ctx: ctx, deadline: to}, per: 1,
			sched: newSchedule(from, load.rate, plan.ArrivalsPoisson, seed),
			work:  make(chan arrival, plan.DefaultMaxInflight), spawn: func(arrival) bool { return false }}
	}
	warm, disp := newDisp(begin, start, ^load.seed), newDisp(start, end, load.seed)
	o.disp = disp
	o.wg.Go(func() {
		warm.run(begin)
		o.window = disp.run(start)
	})
	for i := range load.writers {
		ot := newOpenTally()
		o.tallies = append(o.tallies, ot)
		o.wg.Go(func() {
			for range warm.work {
				write(i)
			}
			for a := range disp.work {
				t0 := time.Now()
				if t0.After(late) {
					o.queued.Add(1)
					continue
				}
				// The arrival started when it was queued: its wait for a
				// writer is queueing, in its latency, not schedule lag.
				ot.lag.start(a.at, a.sent)
				if write(i) {
					ot.done(a.at, t0)
				}
			}
		})
	}
	return o
}

// wait waits for the dispatchers and the writers to finish.
func (o *openWrites) wait() { o.wg.Wait() }

// figures are the commits' latencies from their intended starts and the
// open loop's account; after wait.
func (o *openWrites) figures() (*stats.Recorder, *result.OpenLoop) {
	return openFigures(o.tallies, o.disp, o.rate, plan.ArrivalsPoisson, plan.DefaultMaxInflight, o.window)
}

// replicateKnee runs the write-rate search of res's plan (searchKnee):
// per count of writers, every variant at each step's rate, until its
// trial breaks the heartbeat lag p99 bound (and, synchronous, the commit
// p99 bound) twice in a row; each variant's capacity and the step that
// broke it go into res. begin is told each trial's label before it runs.
func replicateKnee(ctx context.Context, res *result.Result, c Cluster, vs []plan.ReplicaVariant, link func(plan.ReplicaVariant) cluster.Link, begin func(label string)) error {
	p := res.Replicate.Plan
	for _, n := range p.Concurrency {
		caps := make([]result.LagCapacity, len(vs))
		for i, v := range vs {
			caps[i] = result.LagCapacity{Variant: v.ID, Writers: n}
		}
		// A step over the bounds runs twice; the second time over, it
		// broke them.
		overAt := map[int]float64{}
		err := searchKnee(p.Knee.Steps(), indices(len(vs)), func(step int, rate float64, i int) (string, error) {
			v := vs[i]
			load := replLoad{writers: n, rate: rate}
			label := load.label(p, v.ID)
			begin(label)
			load.seed = seedOf(label, caps[i].Trials)
			t, err := replicateTrial(ctx, p, c, v, link(v), step, load)
			if err != nil {
				if ctx.Err() != nil {
					return "", ctx.Err()
				}
				return "", fmt.Errorf("%s: %w", label, err)
			}
			res.Trials = append(res.Trials, t)
			caps[i].Trials++
			over := t.OverLag(p.LagSLO, p.SLOFor(v))
			switch {
			case over == "":
				caps[i].Rate = rate
			case overAt[i] == rate:
				caps[i].Next, caps[i].Why = rate, over
			default:
				overAt[i] = rate
			}
			return over, nil
		})
		res.Replicate.Capacities = append(res.Replicate.Capacities, caps...)
		if err != nil {
			return err
		}
	}
	return nil
}

// indices is 0..n-1.
func indices(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
