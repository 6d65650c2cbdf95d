package bench

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// Open loops (--rate): arrivals come on a schedule, whether or not the
// server has answered the ones before, and each is timed from its
// intended start, so that a server that stalls is charged for every
// arrival queued behind the stall (coordinated omission corrected, as
// wrk2 and pgbench --rate do). An arrival that finds no free slot is
// dropped and counted, never delayed.

// schedule yields the intended starts of a trial's arrivals: gaps of
// 1/rate (uniform) or exponential with mean 1/rate (poisson), from a
// seeded generator.
type schedule struct {
	rng     *rand.Rand
	rate    float64
	poisson bool
	next    time.Time
}

func newSchedule(start time.Time, rate float64, process string, seed uint64) *schedule {
	s := &schedule{rng: rand.New(rand.NewPCG(seed, 0x7e57)), rate: rate, poisson: process != plan.ArrivalsUniform, next: start}
	s.advance()
	return s
}

// advance moves to the next arrival.
func (s *schedule) advance() {
	gap := 1 / s.rate
	if s.poisson {
		gap = s.rng.ExpFloat64() / s.rate
	}
	s.next = s.next.Add(time.Duration(gap * float64(time.Second)))
}

// openTally is one open-loop worker's: the tally every experiment keeps
// (its latency unused) and each arrival's time from its intended and from
// its actual start.
type openTally struct {
	*tally
	corrected, service *stats.Recorder
}

func newOpenTally() *openTally {
	return &openTally{tally: newTally(), corrected: stats.NewRecorder(), service: stats.NewRecorder()}
}

// done records an arrival served from start to now, intended at at.
func (o *openTally) done(at, start time.Time) {
	end := time.Now()
	o.corrected.Record(end.Sub(at))
	o.service.Record(end.Sub(start))
}

// dispatcher hands a trial's arrivals to idle workers until the trial's
// time or count is used up.
type dispatcher struct {
	lim   *limits
	per   int64 // operations an arrival takes from the count
	sched *schedule
	work  chan time.Time
	// spawn starts a worker with its first arrival; false when no more
	// may start (the slots are full).
	spawn func(at time.Time) bool
	// stop is set by a worker that saw too many failures in a row.
	stop atomic.Bool
	// arrived, when set, sees every intended start (a test's seam).
	arrived func(at time.Time)

	arrivals, dropped int64
	lag               time.Duration // the last dispatch's, behind its intended start
}

// run dispatches arrivals, sleeping until each is due; arrivals already
// due when it wakes go out at once (a batch: sleep is not precise to the
// microsecond). It closes work when done and returns the arrivals'
// window: the trial's time, or the span of the count's arrivals.
func (d *dispatcher) run(start time.Time) (window time.Duration) {
	defer close(d.work)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	last := start
	for {
		at := d.sched.next
		if !at.Before(d.lim.deadline) || d.stop.Load() {
			return d.lim.deadline.Sub(start)
		}
		if wait := time.Until(at); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-d.lim.ctx.Done():
				return time.Since(start)
			}
		}
		if !d.lim.take(d.per) {
			switch {
			case d.lim.ctx.Err() != nil:
				return time.Since(start)
			case !time.Now().Before(d.lim.deadline):
				// Woken past the trial's end: the arrivals left are
				// the client's, not dispatched.
				d.lag = time.Since(at)
				return d.lim.deadline.Sub(start)
			}
			return last.Sub(start) // the count is used up
		}
		// Behind schedule: 0 while the client keeps pace (sleep's
		// overshoot aside), growing when it cannot.
		d.lag = time.Since(at)
		last = at
		d.arrivals++
		if d.arrived != nil {
			d.arrived(at)
		}
		select {
		case d.work <- at:
		default:
			if !d.spawn(at) {
				d.dropped++
			}
		}
		d.sched.advance()
	}
}

// scheduleSeed is a trial's schedule seed: the same cell gets the same arrivals
// in every run; rounds differ by the count of open trials run before.
func (r *Runner) scheduleSeed(where string) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s#%d", where, r.openTrials)
	r.openTrials++
	return h.Sum64()
}

// openConnect serves connect's arrivals at rate: each a new connection
// running n operations, on as many workers as arrivals need up to
// Spec.MaxInflight.
func (r *Runner) openConnect(ctx context.Context, d driver.Driver, n int, rate float64, seed uint64) (result.Trial, error) {
	once := connectOnce
	if n > 1 {
		once = func(ctx context.Context, d driver.Driver, tl *tally) error { return connectN(ctx, d, n, tl) }
	}
	start := time.Now()
	lim := &limits{ctx: ctx, count: r.Spec.Count, deadline: start.Add(r.Spec.Duration)}
	disp := &dispatcher{lim: lim, per: int64(n), sched: newSchedule(start, rate, r.Spec.Arrivals, seed), work: make(chan time.Time), arrived: r.arrived}
	var tallies []*openTally
	var wg sync.WaitGroup
	serve := func(ot *openTally, at time.Time) {
		t0 := time.Now()
		if err := once(ctx, d, ot.tally); err != nil {
			if ctx.Err() == nil && ot.fail(err) {
				disp.stop.Store(true)
			}
			return
		}
		ot.errRun = 0
		ot.done(at, t0)
	}
	disp.spawn = func(at time.Time) bool {
		if len(tallies) >= r.Spec.MaxInflight {
			return false
		}
		ot := newOpenTally()
		tallies = append(tallies, ot)
		wg.Go(func() {
			guard(ot.tally, func() {
				serve(ot, at)
				for at := range disp.work {
					serve(ot, at)
				}
			})
		})
		return true
	}
	cpu := spanCPU{serverCPU: r.ServerCPU}
	cpu.start()
	window := disp.run(start)
	wg.Wait()
	return r.openFinish(ctx, result.Trial{Start: start, Elapsed: time.Since(start)}, &cpu, tallies, disp, rate, r.Spec.MaxInflight, window)
}

// openPool serves pool's arrivals at rate on c persistent sessions, warmed
// up first as a closed loop: an arrival goes to the next idle session,
// waiting for one in a queue of up to Spec.MaxInflight arrivals (the wait
// is in Latency, not in Open.Service); one that finds the queue full is
// dropped.
func (r *Runner) openPool(ctx context.Context, d driver.Driver, c int, rate float64, seed uint64) (result.Trial, error) {
	sessions, closeAll, err := openSessions(ctx, d, c)
	defer closeAll()
	if err != nil {
		return result.Trial{}, err
	}
	tallies := make([]*openTally, c)
	warmEnd := time.Now().Add(r.Spec.WarmupTime())
	var wg sync.WaitGroup
	for i := range sessions {
		tallies[i] = newOpenTally()
		tallies[i].session(sessions[i])
		wg.Go(func() {
			ot := tallies[i]
			guard(ot.tally, func() {
				for time.Now().Before(warmEnd) && ctx.Err() == nil && sessions[i] != nil {
					if err := sessions[i].Do(ctx); err != nil {
						sessions[i] = r.reopen(ctx, d, sessions[i], ot.tally, err)
					}
				}
			})
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return result.Trial{}, err
	}
	start := time.Now()
	lim := &limits{ctx: ctx, count: r.Spec.Count, deadline: start.Add(r.Spec.Duration)}
	disp := &dispatcher{lim: lim, per: 1, sched: newSchedule(start, rate, r.Spec.Arrivals, seed), work: make(chan time.Time, r.Spec.MaxInflight),
		spawn: func(time.Time) bool { return false }, arrived: r.arrived}
	// Arrivals still queued --timeout after the trial's end fail unserved.
	late := lim.deadline.Add(r.Spec.Timeout)
	queuedErr := &driver.OpError{Phase: "queue", Err: fmt.Errorf("the arrival was still queued --timeout %v after the trial's end: the server stopped answering in time (%w)", r.Spec.Timeout, os.ErrDeadlineExceeded)}
	cpu := spanCPU{serverCPU: r.ServerCPU}
	cpu.start()
	for i := range sessions {
		if sessions[i] == nil {
			continue
		}
		wg.Go(func() {
			ot := tallies[i]
			guard(ot.tally, func() {
				s := sessions[i]
				defer func() { sessions[i] = s }()
				sent0, recv0 := s.Conn().Counters()
				bytes := func() {
					sent, recv := s.Conn().Counters()
					ot.sent += sent - sent0
					ot.recv += recv - recv0
					sent0, recv0 = 0, 0
				}
				defer func() {
					if s != nil {
						bytes()
					}
				}()
				for at := range disp.work {
					if time.Now().After(late) {
						// A server that hangs each operation
						// until --timeout would take that long
						// for every arrival still queued.
						ot.fail(queuedErr)
						continue
					}
					t0 := time.Now()
					if err := s.Do(ctx); err != nil {
						bytes()
						if s = r.reopen(ctx, d, s, ot.tally, err); s == nil {
							disp.stop.Store(true)
							return
						}
						continue
					}
					ot.ops++
					ot.errRun = 0
					ot.done(at, t0)
				}
			})
		})
	}
	window := disp.run(start)
	wg.Wait()
	return r.openFinish(ctx, result.Trial{Start: start, Elapsed: time.Since(start)}, &cpu, tallies, disp, rate, r.Spec.MaxInflight, window)
}

// openFinish is finish for an open loop: Latency from the intended
// starts, Open with the service times and what was offered and dropped.
func (r *Runner) openFinish(ctx context.Context, t result.Trial, cpu *spanCPU, ots []*openTally, disp *dispatcher, rate float64, slots int, window time.Duration) (result.Trial, error) {
	tallies := make([]*tally, len(ots))
	corrected, service := stats.NewRecorder(), stats.NewRecorder()
	for i, ot := range ots {
		tallies[i] = ot.tally
		corrected.Merge(ot.corrected)
		service.Merge(ot.service)
	}
	t, err := finish(ctx, t, cpu, tallies)
	t.Latency = corrected.Hist()
	t.Open = &result.OpenLoop{Offered: rate, Process: r.Spec.Arrivals, Slots: slots, Arrivals: disp.arrivals,
		Dropped: disp.dropped, Window: window, Lag: disp.lag, Service: service.Hist()}
	return t, err
}

// knee runs the rate search (Spec.Knee): for each cell, every variant at
// each step's rate, interleaved, until its trial is over Spec.SLO twice
// in a row (the step once more); a variant over it runs no higher rate.
func (r *Runner) knee(ctx context.Context) error {
	total, done := r.Total(), 0
	for _, e := range r.Spec.Experiments {
		for _, n := range r.Spec.PerConnections(e) {
			for _, c := range r.Spec.ConcurrencyFor(e) {
				going := append([]plan.Variant(nil), r.Variants...)
				for step, rate := range r.Spec.Knee.Steps() {
					if len(going) == 0 {
						break
					}
					var next, again []plan.Variant
					for try := range 2 {
						for _, v := range going {
							t, err := r.TrialAt(ctx, e, v, c, n, rate)
							if err != nil && (!Kept(err) || t.Open == nil) {
								return err
							}
							t.Round = step
							done++
							if r.Done != nil {
								r.Done(t, done, total)
							}
							switch {
							case t.OverSLO(r.Spec.SLO) == "":
								next = append(next, v)
							case try == 0:
								again = append(again, v)
							}
						}
						// A step over the SLO runs once more: a moment's
						// stall of a shared machine is not the knee.
						going, again = again, nil
					}
					going = next
				}
			}
		}
	}
	return nil
}
