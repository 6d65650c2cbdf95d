package bench

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/script"
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
// seeded generator. Each start is the trial's start plus the gaps' sum in
// seconds, rounded once, so that nanosecond truncations do not add up:
// 150/s's 750th arrival is due at 5 s, not 500 ns before it.
type schedule struct {
	rng     *rand.Rand
	rate    float64
	poisson bool
	start   time.Time
	n       int     // arrivals so far
	sum     float64 // seconds since start
	next    time.Time
}

func newSchedule(start time.Time, rate float64, process string, seed uint64) *schedule {
	s := &schedule{rng: rand.New(rand.NewPCG(seed, 0x7e57)), rate: rate, poisson: process != plan.ArrivalsUniform, start: start}
	s.advance()
	return s
}

// advance moves to the next arrival.
func (s *schedule) advance() {
	s.n++
	if s.poisson {
		s.sum += s.rng.ExpFloat64() / s.rate
	} else {
		s.sum = float64(s.n) / s.rate
	}
	s.next = s.start.Add(time.Duration(math.Round(s.sum * float64(time.Second))))
}

// openTally is one open-loop worker's: the workerTally every experiment keeps
// (its latency unused), each arrival's time from its intended and from
// its actual start, and the schedule's account of the arrivals it started.
type openTally struct {
	*workerTally
	corrected, service *stats.Recorder
	lag                lagTally
}

func newOpenTally() *openTally {
	return &openTally{workerTally: newTally(), corrected: stats.NewRecorder(), service: stats.NewRecorder(), lag: newLagTally()}
}

// done records an arrival served from start to now, intended at at.
func (o *openTally) done(at, start time.Time) {
	end := time.Now()
	o.corrected.Record(end.Sub(at))
	o.service.Record(end.Sub(start))
}

// lagTally counts the arrivals that started and how late each did
// (pgbench --rate's schedule lag).
type lagTally struct {
	started, late1, late10 int64
	rec                    *stats.Recorder
}

func newLagTally() lagTally { return lagTally{rec: stats.NewRecorder()} }

// start records an arrival intended at at that started at now.
func (l *lagTally) start(at, now time.Time) {
	lag := max(now.Sub(at), 0)
	l.started++
	l.rec.Record(lag)
	if lag > time.Millisecond {
		l.late1++
	}
	if lag > 10*time.Millisecond {
		l.late10++
	}
}

func (l *lagTally) merge(o lagTally) {
	l.started += o.started
	l.late1 += o.late1
	l.late10 += o.late10
	l.rec.Merge(o.rec)
}

// arrival is one arrival handed to a worker: its intended start, and when
// the dispatcher sent it.
type arrival struct{ at, sent time.Time }

// dispatcher hands a trial's arrivals to idle workers until the trial's
// time or count is used up.
type dispatcher struct {
	lim   *limits
	per   int64 // operations an arrival takes from the count
	sched *schedule
	work  chan arrival
	// spawn starts a worker with its first arrival; false when no more
	// may start (the slots are full).
	spawn func(a arrival) bool
	// stop is set by a worker that saw too many failures in a row.
	stop atomic.Bool
	// arrived, when set, sees every intended start before it is sent (a
	// test's seam: it runs on the dispatcher, so a test can hold the
	// generator up and make arrivals late).
	arrived func(at time.Time)

	// arrivals were dispatched; due were in the schedule before the
	// window's end, dispatched or not.
	arrivals, dropped, due int64
}

// run dispatches arrivals, sleeping until each is due; arrivals already
// due when it wakes go out at once (a batch: sleep is not precise to the
// microsecond). It closes work when done and returns the arrivals'
// window: the trial's time, or the span of the count's arrivals.
func (d *dispatcher) run(start time.Time) (window time.Duration) {
	defer close(d.work)
	defer func() { d.due += d.arrivals }()
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
				// Woken past the trial's end: the arrivals left were
				// due, and the client fell too far behind to send them.
				for ; d.sched.next.Before(d.lim.deadline); d.sched.advance() {
					d.due++
				}
				return d.lim.deadline.Sub(start)
			}
			return last.Sub(start) // the count is used up
		}
		last = at
		d.arrivals++
		if d.arrived != nil {
			d.arrived(at)
		}
		a := arrival{at: at, sent: time.Now()}
		select {
		case d.work <- a:
		default:
			if !d.spawn(a) {
				d.dropped++
			}
		}
		d.sched.advance()
	}
}

// scheduleSeed is a trial's schedule seed: the same cell gets the same arrivals
// in every run; rounds differ by the count of open trials run before.
func (r *Runner) scheduleSeed(where string) uint64 {
	defer func() { r.openTrials++ }()
	return seedOf(where, r.openTrials)
}

// seedOf is the schedule seed of the n-th open trial of a cell named where.
func seedOf(where string, n int) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s#%d", where, n)
	return h.Sum64()
}

// openConnect serves connect's arrivals at rate: each a new connection
// running n operations, on as many workers as arrivals need up to
// Spec.MaxInflight.
func (r *Runner) openConnect(ctx context.Context, d driver.Driver, n int, rate float64, seed uint64) (result.Trial, error) {
	once := connectOnce
	if n > 1 {
		once = func(ctx context.Context, d driver.Driver, tl *workerTally) error { return connectN(ctx, d, n, tl) }
	}
	start := time.Now()
	lim := &limits{ctx: ctx, count: r.Spec.Count, deadline: start.Add(r.Spec.Duration)}
	disp := &dispatcher{lim: lim, per: int64(n), sched: newSchedule(start, rate, r.Spec.Arrivals, seed), work: make(chan arrival), arrived: r.arrived}
	var tallies []*openTally
	var wg sync.WaitGroup
	serve := func(ot *openTally, a arrival) {
		t0 := time.Now()
		ot.lag.start(a.at, t0) // the arrival starts with its dial
		if err := once(ctx, d, ot.workerTally); err != nil {
			if ctx.Err() == nil && ot.fail(err) {
				disp.stop.Store(true)
			}
			return
		}
		ot.errRun = 0
		ot.done(a.at, t0)
	}
	disp.spawn = func(a arrival) bool {
		if len(tallies) >= r.Spec.MaxInflight {
			return false
		}
		ot := newOpenTally()
		tallies = append(tallies, ot)
		wg.Go(func() {
			guard(ot.workerTally, func() {
				serve(ot, a)
				for a := range disp.work {
					serve(ot, a)
				}
			})
		})
		return true
	}
	cpu := r.span()
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
	tallies, warms := make([]*openTally, c), make([]*workerTally, c)
	warmEnd := time.Now().Add(r.Spec.WarmupTime())
	var wg sync.WaitGroup
	for i := range sessions {
		tallies[i], warms[i] = newOpenTally(), newTally()
		tallies[i].recordSession(sessions[i])
		wg.Go(func() {
			guard(tallies[i].workerTally, func() {
				sessions[i] = r.warmUp(ctx, d, sessions[i], warms[i], warmEnd, func(ctx context.Context, s driver.Session) error { return s.Do(ctx) })
			})
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return result.Trial{}, err
	}
	start := time.Now()
	lim := &limits{ctx: ctx, count: r.Spec.Count, deadline: start.Add(r.Spec.Duration)}
	mctx := script.WithEnd(ctx, lim.deadline) // a \sleep ends with the window
	disp := &dispatcher{lim: lim, per: 1, sched: newSchedule(start, rate, r.Spec.Arrivals, seed), work: make(chan arrival, r.Spec.MaxInflight),
		spawn: func(arrival) bool { return false }, arrived: r.arrived}
	// Arrivals still queued --timeout after the trial's end fail unserved.
	late := lim.deadline.Add(r.Spec.Timeout)
	queuedErr := &driver.OpError{Phase: "queue", Err: fmt.Errorf("the arrival was still queued --timeout %v after the trial's end: the server stopped answering in time (%w)", r.Spec.Timeout, os.ErrDeadlineExceeded)}
	cpu := r.span()
	cpu.start()
	for i := range sessions {
		if sessions[i] == nil {
			continue
		}
		wg.Go(func() {
			ot := tallies[i]
			guard(ot.workerTally, func() {
				s := sessions[i]
				defer func() { sessions[i] = s }()
				sent0, recv0 := s.Conn().Counters()
				bytes := func() {
					sent, recv := s.Conn().Counters()
					ot.Sent += sent - sent0
					ot.Received += recv - recv0
					sent0, recv0 = 0, 0
				}
				defer func() {
					if s != nil {
						bytes()
					}
				}()
				for a := range disp.work {
					t0 := time.Now()
					if t0.After(late) {
						// A server that hangs each operation
						// until --timeout would take that long
						// for every arrival still queued.
						ot.fail(queuedErr)
						continue
					}
					// The arrival started when it was queued: its wait
					// for this connection is queueing, not lag.
					ot.lag.start(a.at, a.sent)
					if err := s.Do(mctx); err != nil {
						if errors.Is(err, script.ErrCut) {
							return // the trial ended in a \sleep
						}
						bytes()
						if s = r.reopen(ctx, d, s, ot.workerTally, err); s == nil {
							disp.stop.Store(true)
							return
						}
						continue
					}
					ot.Ops++
					ot.errRun = 0
					ot.done(a.at, t0)
				}
			})
		})
	}
	window := disp.run(start)
	wg.Wait()
	t, err := r.openFinish(ctx, result.Trial{Start: start, Elapsed: time.Since(start)}, &cpu, tallies, disp, rate, r.Spec.MaxInflight, window)
	return warmedUp(r.Spec, warms, t, err)
}

// openFinish is finish for an open loop: Latency from the intended
// starts, Open with the service times, what was offered and dropped, and
// how the schedule was kept.
func (r *Runner) openFinish(ctx context.Context, t result.Trial, cpu *spanCPU, ots []*openTally, disp *dispatcher, rate float64, slots int, window time.Duration) (result.Trial, error) {
	tallies := make([]*workerTally, len(ots))
	for i, ot := range ots {
		tallies[i] = ot.workerTally
	}
	corrected, open := openFigures(ots, disp, rate, r.Spec.Arrivals, slots, window)
	t, err := finish(ctx, t, cpu, tallies)
	t.Latency = result.Hist(corrected.Hist())
	t.Open = open
	return t, err
}

// openFigures are an open loop's latencies from the intended starts,
// merged, and its account of what was offered, started and dropped.
func openFigures(ots []*openTally, disp *dispatcher, rate float64, process string, slots int, window time.Duration) (*stats.Recorder, *result.OpenLoop) {
	corrected, service, lag := stats.NewRecorder(), stats.NewRecorder(), newLagTally()
	for _, ot := range ots {
		corrected.Merge(ot.corrected)
		service.Merge(ot.service)
		lag.merge(ot.lag)
	}
	return corrected, &result.OpenLoop{Offered: rate, Process: process, Slots: slots, Arrivals: disp.arrivals,
		Dropped: disp.dropped, Window: window, Service: result.Hist(service.Hist()),
		Schedule: &result.Schedule{Due: disp.due, Started: lag.started, Lag: result.Hist(lag.rec.Hist()), Late1ms: lag.late1, Late10ms: lag.late10}}
}

// knee runs the rate search (Spec.Knee) of every cell (searchKnee) over
// the variants, with the p99 bound Spec.SLO.
func (r *Runner) knee(ctx context.Context) error {
	total, done := r.Total(), 0
	for _, e := range r.Spec.Experiments {
		for _, n := range r.Spec.PerConnections(e) {
			for _, c := range r.Spec.ConcurrencyFor(e) {
				err := searchKnee(r.Spec.Knee.Steps(), r.variants(e), func(step int, rate float64, v plan.Variant) (string, error) {
					r.begin(e, v, c, n, rate, done, total)
					t, err := r.TrialAt(ctx, e, v, c, n, rate)
					if err != nil && (!Kept(err) || t.Open == nil) {
						return "", err
					}
					t.Round = step
					done++
					if r.Done != nil {
						r.Done(t, done, total)
					}
					return t.OverSLO(r.Spec.SLO), nil
				})
				if err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// searchKnee is the rate search of --rate auto and FROM..TO: every
// variant at each step's rate, interleaved, until its trial is over the
// bound twice in a row (the step once more: a moment's stall of a shared
// machine is not the knee); a variant over it runs no higher rate. trial
// runs v at rate, the step-th, and says why it was over the bound, ""
// when it was not. At most 2 × len(steps) trials per variant.
func searchKnee[V any](steps []float64, variants []V, trial func(step int, rate float64, v V) (over string, err error)) error {
	going := slices.Clone(variants)
	for step, rate := range steps {
		if len(going) == 0 {
			break
		}
		var next, again []V
		for try := range 2 {
			for _, v := range going {
				over, err := trial(step, rate, v)
				switch {
				case err != nil:
					return err
				case over == "":
					next = append(next, v)
				case try == 0:
					again = append(again, v)
				}
			}
			going, again = again, nil
		}
		going = next
	}
	return nil
}
