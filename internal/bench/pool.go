package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/script"
)

func init() {
	experiments[plan.Pool] = experiment{open: keptConns,
		run: func(ctx context.Context, r *Runner, t *trial) (result.Trial, error) {
			if t.rate > 0 {
				return r.openPool(ctx, t.d, t.c, t.rate, r.scheduleSeed(t.where))
			}
			return r.pool(ctx, t.d, t.c)
		}}
	// stream is pool's loop over an operation that reads one large result.
	experiments[plan.Stream] = experiment{open: keptConns,
		run: func(ctx context.Context, r *Runner, t *trial) (result.Trial, error) { return r.pool(ctx, t.d, t.c) }}
}

// pool opens c persistent sessions, warms them up, then runs operations on
// them for the trial's time or count; only the measured window is recorded.
// A session that fails is counted, closed and opened again. The warm-up's
// failures are counted apart, under the same policy (warmedUp).
func (r *Runner) pool(ctx context.Context, d driver.Driver, c int) (result.Trial, error) {
	idle, kind, memErr := r.idleMemory(ctx)
	sessions, closeAll, err := openSessions(ctx, d, c)
	defer closeAll()
	if err != nil {
		return result.Trial{}, err
	}
	mem := r.heldMemory(idle, kind, memErr, int64(c))
	var wg sync.WaitGroup

	warmEnd := time.Now().Add(r.Spec.WarmupTime())
	lim := &limits{ctx: ctx, count: r.Spec.Count, deadline: warmEnd.Add(r.Spec.Duration)}
	cpu := r.span()
	cpuStarted := make(chan struct{})
	go func() {
		select {
		case <-time.After(time.Until(warmEnd)):
		case <-ctx.Done():
		}
		cpu.start()
		close(cpuStarted)
	}()
	tallies, warms := make([]*workerTally, c), make([]*workerTally, c)
	ends := make([]time.Time, c)
	probe, undoProcs := newWaitProbe(ctx, r.waitModes(c), warmEnd)
	defer undoProcs()
	for i := range sessions {
		tl, warm := newTally(), newTally()
		tallies[i], warms[i] = tl, warm
		tl.recordSession(sessions[i])
		wg.Go(func() {
			s := sessions[i]
			defer func() { sessions[i] = s; ends[i] = time.Now() }()
			guard(tl, func() { r.poolWorker(ctx, d, &s, tl, warm, lim, warmEnd, probe) })
		})
	}
	wg.Wait()
	<-cpuStarted
	<-probe.decided
	last := warmEnd
	for _, e := range ends {
		if e.After(last) {
			last = e
		}
	}
	t, err := finish(ctx, result.Trial{Start: warmEnd, Elapsed: last.Sub(warmEnd), ServerMemory: mem, ClientWait: probe.chosen.String()}, &cpu, tallies)
	return warmedUp(r.Spec, warms, t, err)
}

// warmUp runs s's warm-up until end, one operation at a time with do
// (Session.Do, and whatever the caller does around it), and returns the
// session it ends with (nil: it gave up). Its operations are not the
// trial's but meet the trial's failure policy, counted in warm: a failed
// session is reopened, a success ends a run of failures,
// maxConsecutiveErrors in a row give up. A script's \sleep ends at end;
// that pass neither finished nor failed.
func (r *Runner) warmUp(ctx context.Context, d driver.Driver, s driver.Session, warm *workerTally, end time.Time, do func(context.Context, driver.Session) error) driver.Session {
	wctx := script.WithEnd(ctx, end)
	for s != nil && time.Now().Before(end) && ctx.Err() == nil {
		switch err := do(wctx, s); {
		case err == nil:
			warm.Ops++
			warm.errRun = 0
		case errors.Is(err, script.ErrCut):
		default:
			s = r.reopen(ctx, d, s, warm, err)
		}
	}
	return s
}

// warmedUp applies the failure policy to a trial's warm-up once the trial
// t (and its err) is done: a warm-up in which every operation failed, or
// more than Spec.MaxErrorRate of them (a *TooManyErrors: t is kept), fails
// the trial, as the trial's own would; a panic or the ctx's end still
// comes first.
func warmedUp(spec plan.Spec, warms []*workerTally, t result.Trial, err error) (result.Trial, error) {
	var pe *PanicError
	if errors.As(err, &pe) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return t, err
	}
	all := newTally()
	for _, w := range warms {
		all.merge(w)
	}
	if len(all.errors) == 0 {
		return t, err
	}
	if all.Ops == 0 {
		return t, fmt.Errorf("every operation of the warm-up failed, the first with: %w", all.firstErr)
	}
	var many *TooManyErrors
	if errors.As(checkErrors(spec, result.Trial{Ops: all.Ops, Errors: all.errors, ErrorSamples: all.samples}), &many) {
		many.Warmup = true
		return t, many
	}
	return t, err
}

// poolWorker runs one pool connection's warm-up and measured operations;
// *sp is the session it ends with (nil if it had to give up), also after a
// panic, so that the pool closes the right one. The probe says where the
// session's reads wait (see waitProbe).
func (r *Runner) poolWorker(ctx context.Context, d driver.Driver, sp *driver.Session, tl, warm *workerTally, lim *limits, warmEnd time.Time, probe *waitProbe) {
	s := *sp
	defer func() { *sp = s }()
	var w waiter // a session opens in the poller
	defer w.release()
	reopen := func(err error) bool {
		if s = r.reopen(ctx, d, s, tl, err); s != nil {
			w.thread = false
			probe.follow(s, &w)
		}
		return s != nil
	}
	moved := s // the session w describes
	s = r.warmUp(ctx, d, s, warm, warmEnd, func(ctx context.Context, s driver.Session) error {
		if s != moved {
			w.thread, moved = false, s // a reopened session opens in the poller
		}
		probe.follow(s, &w)
		err := s.Do(ctx)
		if err == nil {
			probe.done()
		}
		return err
	})
	if s == nil {
		return
	}
	if s != moved {
		w.thread = false
	}
	probe.final(ctx, s, &w)
	// Bytes count from here: the measured window only.
	sent0, recv0 := s.Conn().Counters()
	bytes := func() {
		sent, recv := s.Conn().Counters()
		tl.Sent += sent - sent0
		tl.Received += recv - recv0
		sent0, recv0 = 0, 0
	}
	defer func() {
		if s != nil {
			bytes()
		}
	}()
	mctx := script.WithEnd(ctx, lim.deadline)
	for lim.next() {
		t0 := time.Now()
		if err := s.Do(mctx); err != nil {
			if errors.Is(err, script.ErrCut) {
				return // the trial ended in a \sleep
			}
			bytes()
			if !reopen(err) {
				return
			}
			continue
		}
		tl.Latency.Record(time.Since(t0))
		tl.Ops++
		tl.errRun = 0
	}
}

// reopen replaces a failed session; nil means the worker should stop.
func (r *Runner) reopen(ctx context.Context, d driver.Driver, s driver.Session, tl *workerTally, err error) driver.Session {
	s.Close()
	if ctx.Err() != nil || tl.fail(err) {
		return nil
	}
	ns, err := d.Open(ctx)
	if err != nil {
		if ctx.Err() == nil {
			tl.fail(err)
			tl.quit = "a connection failed and could not be reopened"
		}
		return nil
	}
	tl.recordSession(ns)
	return ns
}

// openSessions opens a pool's c sessions at once; closeAll closes the
// ones open when it is called (a worker may have replaced some).
func openSessions(ctx context.Context, d driver.Driver, c int) (sessions []driver.Session, closeAll func(), err error) {
	sessions = make([]driver.Session, c)
	var openErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Go(func() {
			s, err := d.Open(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && openErr == nil {
				openErr = err
			}
			sessions[i] = s
		})
	}
	wg.Wait()
	closeAll = func() {
		for _, s := range sessions {
			if s != nil {
				s.Close()
			}
		}
	}
	if openErr != nil {
		return sessions, closeAll, fmt.Errorf("%w: %w", errPoolOpen, openErr)
	}
	return sessions, closeAll, nil
}
