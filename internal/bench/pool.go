package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/result"
)

// pool opens c persistent sessions, warms them up, then runs operations on
// them for the trial's time or count; only the measured window is recorded.
// A session that fails is counted, closed and opened again.
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
	cpu := spanCPU{serverCPU: r.ServerCPU}
	cpuStarted := make(chan struct{})
	go func() {
		select {
		case <-time.After(time.Until(warmEnd)):
		case <-ctx.Done():
		}
		cpu.start()
		close(cpuStarted)
	}()
	tallies := make([]*tally, c)
	ends := make([]time.Time, c)
	probe, undoProcs := newWaitProbe(ctx, waitModes(c), warmEnd)
	defer undoProcs()
	for i := range sessions {
		tl := newTally()
		tallies[i] = tl
		tl.session(sessions[i])
		wg.Go(func() {
			s := sessions[i]
			defer func() { sessions[i] = s; ends[i] = time.Now() }()
			guard(tl, func() { r.poolWorker(ctx, d, &s, tl, lim, warmEnd, probe) })
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
	return finish(ctx, result.Trial{Start: warmEnd, Elapsed: last.Sub(warmEnd), ServerMemory: mem, ClientWait: probe.chosen.String()}, &cpu, tallies)
}

// poolWorker runs one pool connection's warm-up and measured operations;
// *sp is the session it ends with (nil if it had to give up), also after a
// panic, so that the pool closes the right one. The probe says where the
// session's reads wait (see waitProbe).
func (r *Runner) poolWorker(ctx context.Context, d driver.Driver, sp *driver.Session, tl *tally, lim *limits, warmEnd time.Time, probe *waitProbe) {
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
	for time.Now().Before(warmEnd) && ctx.Err() == nil {
		probe.follow(s, &w)
		if err := s.Do(ctx); err != nil && !reopen(err) {
			return
		}
		probe.done()
	}
	probe.final(ctx, s, &w)
	// Bytes count from here: the measured window only.
	sent0, recv0 := s.Conn().Counters()
	bytes := func() {
		sent, recv := s.Conn().Counters()
		tl.sent += sent - sent0
		tl.recv += recv - recv0
		sent0, recv0 = 0, 0
	}
	defer func() {
		if s != nil {
			bytes()
		}
	}()
	for lim.next() {
		t0 := time.Now()
		if err := s.Do(ctx); err != nil {
			bytes()
			if !reopen(err) {
				return
			}
			continue
		}
		tl.latency.Record(time.Since(t0))
		tl.ops++
		tl.errRun = 0
	}
}

// reopen replaces a failed session; nil means the worker should stop.
func (r *Runner) reopen(ctx context.Context, d driver.Driver, s driver.Session, tl *tally, err error) driver.Session {
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
	tl.session(ns)
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
