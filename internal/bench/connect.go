package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/script"
)

func init() {
	experiments[plan.Connect] = experiment{perConn: true, open: newConns,
		run: func(ctx context.Context, r *Runner, t *trial) (result.Trial, error) {
			if t.rate > 0 {
				return r.openConnect(ctx, t.d, t.n, t.rate, r.scheduleSeed(t.where))
			}
			return r.connect(ctx, t.d, t.c, t.n)
		}}
}

// GaveUp fails a trial in which a worker stopped before the trial's end
// because its server kept failing: a connection that failed and could not
// be reopened, or maxConsecutiveErrors operations failing in a row. The
// trial's figures are those of fewer connections or a shorter trial than
// asked for, however few of its operations failed: a server that stopped
// answering mid-trial fails the run. The trial is kept in the result, as
// with TooManyErrors; the run ends after it.
type GaveUp struct {
	Why           string
	Failed, Total int64
	// Kind and Last are those of the error the worker stopped at.
	Kind, Last string
}

func (e *GaveUp) Error() string {
	return fmt.Sprintf("%s before the trial's end (%d of %d operations failed, the last with %s: %s)", e.Why, e.Failed, e.Total, e.Kind, e.Last)
}

// errNoOps ends a trial in which no operation finished and none failed:
// its time or count was too small to measure anything.
var errNoOps = errors.New("no operation finished within the trial: give a longer -d/--duration or a larger -n/--count")

// ErrorSample is an error's message as a result keeps it: one line,
// bounded, secrets removed.
func ErrorSample(err error) string {
	msg := strings.Join(strings.Fields(err.Error()), " ")
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return plan.Redact(msg)
}

// guard runs one worker's loop; a panic in it (a bug, in tlsbench or a
// driver) ends that worker and fails the trial instead of the process, so
// that the finished trials are saved and the servers stopped.
func guard(t *workerTally, loop func()) {
	defer func() {
		if p := recover(); p != nil {
			t.panicked = &PanicError{Value: p, Stack: debug.Stack()}
		}
	}()
	loop()
}

// connect runs c workers that each open a connection, run n operations
// and close it, until the trial's time or count is used up.
func (r *Runner) connect(ctx context.Context, d driver.Driver, c, n int) (result.Trial, error) {
	lim := &limits{ctx: ctx, count: r.Spec.Count}
	cpu := r.span()
	tallies := make([]*workerTally, c)
	var wg sync.WaitGroup
	start := time.Now()
	lim.deadline = start.Add(r.Spec.Duration)
	mctx := script.WithEnd(ctx, lim.deadline) // a \sleep ends with the trial
	cpu.start()
	for i := range tallies {
		tl := newTally()
		tallies[i] = tl
		wg.Go(func() {
			guard(tl, func() {
				once := connectOnce
				if n > 1 {
					once = func(ctx context.Context, d driver.Driver, tl *workerTally) error { return connectN(ctx, d, n, tl) }
				}
				for lim.take(int64(n)) {
					if err := once(mctx, d, tl); err != nil {
						if errors.Is(err, script.ErrCut) || ctx.Err() != nil || tl.fail(err) {
							return
						}
						continue
					}
					tl.errRun = 0
				}
			})
		})
	}
	wg.Wait()
	return finish(ctx, result.Trial{Start: start, Elapsed: time.Since(start)}, &cpu, tallies)
}

// finish completes a trial once its workers are done: the CPU spent, and
// the workers' tallies merged, or the error that cut the trial short.
func finish(ctx context.Context, t result.Trial, cpu *spanCPU, tallies []*workerTally) (result.Trial, error) {
	cpu.stop(&t)
	if err := ctx.Err(); err != nil {
		return t, err
	}
	all := newTally()
	for _, tl := range tallies {
		all.merge(tl)
	}
	return t, all.fill(&t)
}

func connectOnce(ctx context.Context, d driver.Driver, tl *workerTally) error {
	s, err := d.Open(ctx)
	if err != nil {
		return err
	}
	closed := false
	defer func() {
		if !closed { // Do panicked
			s.Close()
		}
	}()
	err = s.Do(ctx)
	cerr := s.Close()
	closed = true
	if err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	tl.Ops++
	tl.recordSession(s)
	tl.RecordTrace(s.Conn().Finish())
	return nil
}

var errPoolOpen = errors.New("opening the pool's connections")

// PhaseMoreOps is the phase of a connection of connect --per-conn N from
// the end of its first operation to its close: operations 2 to N.
const PhaseMoreOps = "more-ops"

// connectN opens a connection, runs n operations on it and closes it: the
// pattern of "connect, run a few queries, disconnect" (connect --per-conn).
// Latency records each operation on its own; the connection's setup and
// first operation are its phases, as with one operation, then
// PhaseMoreOps and the close. A failed operation is counted and ends the
// connection (the ones before it count); only a connection that ran all n
// is traced.
func connectN(ctx context.Context, d driver.Driver, n int, tl *workerTally) error {
	s, err := d.Open(ctx)
	if err != nil {
		return err
	}
	closed := false
	defer func() {
		if !closed { // Do panicked
			s.Close()
		}
	}()
	tl.recordSession(s)
	for i := range n {
		t0 := time.Now()
		if err = s.Do(ctx); err != nil {
			break
		}
		tl.Latency.Record(time.Since(t0))
		tl.Ops++
		if i == 0 {
			s.Conn().Mark(PhaseMoreOps)
		}
	}
	cerr := s.Close()
	closed = true
	if err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	tl.RecordPhases(s.Conn().Finish())
	return nil
}
