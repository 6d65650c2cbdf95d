package bench

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/script"
	"github.com/tlsbench/tlsbench/internal/stats"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// tally is what one worker counts; workers merge theirs at the end, so the
// measuring loop takes no lock.
type tally struct {
	latency    *stats.Recorder
	phases     []phaseTally
	ops, conns int64
	resumed    int64
	sent, recv int64
	errors     map[string]int64
	// samples keeps the first message of each error kind: "query: other"
	// alone does not tell anybody what went wrong.
	samples  map[string]string
	errRun   int // consecutive failures
	firstErr error
	lastErr  error
	// quit says why a worker stopped before its trial's end because its
	// server kept failing, "" if it did not (see GaveUp).
	quit string
	// panicked is set when a worker's operation panicked (a bug, in
	// tlsbench or a driver): the trial is an error, not a figure.
	panicked   error
	negotiated *result.Negotiated
}

type phaseTally struct {
	name           string
	rec            *stats.Recorder
	rtMin, rtMax   int
	rtSum, samples int64
}

func newTally() *tally {
	return &tally{latency: stats.NewRecorder(), errors: map[string]int64{}, samples: map[string]string{}}
}

// fail counts an error; it reports whether the worker should stop.
func (t *tally) fail(err error) bool {
	kind := driver.Kind(err)
	t.errors[kind]++
	if _, ok := t.samples[kind]; !ok {
		t.samples[kind] = ErrorSample(err)
	}
	if t.firstErr == nil {
		t.firstErr = err
	}
	t.lastErr = err
	t.errRun++
	return t.errRun >= maxConsecutiveErrors
}

func (t *tally) session(s driver.Session) {
	state, ok := s.TLS()
	t.connection(state, ok, s.Conn().ClientHelloBytes())
}

// connection counts one connection and, if it is secure, what it
// negotiated and the size of its ClientHello (0 if unknown).
func (t *tally) connection(state tls.ConnectionState, secure bool, hello int) {
	t.conns++
	if !secure {
		return
	}
	if state.DidResume {
		t.resumed++
	}
	if t.negotiated == nil {
		n := tlsx.Describe(state)
		n.ClientHelloBytes = hello
		t.negotiated = &n
	}
}

func (t *tally) trace(tr netx.Trace) {
	t.latency.Record(tr.Total())
	t.traced(tr)
}

// traced adds a connection's bytes and phases, not its time as a whole.
func (t *tally) traced(tr netx.Trace) {
	t.sent += tr.Sent
	t.recv += tr.Received
	for _, p := range tr.Phases {
		t.record(p.Name, p.Duration, p.RoundTrips)
	}
}

// record adds one sample of a phase: its time and round trips.
func (t *tally) record(phase string, d time.Duration, roundTrips int) {
	pt := t.phase(phase)
	pt.rec.Record(d)
	if pt.samples == 0 || roundTrips < pt.rtMin {
		pt.rtMin = roundTrips
	}
	pt.rtMax = max(pt.rtMax, roundTrips)
	pt.rtSum += int64(roundTrips)
	pt.samples++
}

func (t *tally) phase(name string) *phaseTally {
	for i := range t.phases {
		if t.phases[i].name == name {
			return &t.phases[i]
		}
	}
	t.phases = append(t.phases, phaseTally{name: name, rec: stats.NewRecorder()})
	return &t.phases[len(t.phases)-1]
}

func (t *tally) merge(o *tally) {
	t.latency.Merge(o.latency)
	t.ops += o.ops
	t.conns += o.conns
	t.resumed += o.resumed
	t.sent += o.sent
	t.recv += o.recv
	for k, n := range o.errors {
		t.errors[k] += n
	}
	for k, m := range o.samples {
		if _, ok := t.samples[k]; !ok {
			t.samples[k] = m
		}
	}
	if t.firstErr == nil {
		t.firstErr = o.firstErr
	}
	if t.panicked == nil {
		t.panicked = o.panicked
	}
	if o.quit == "" && o.errRun >= maxConsecutiveErrors {
		o.quit = fmt.Sprintf("%d operations in a row failed", o.errRun)
	}
	if t.quit == "" && o.quit != "" {
		t.quit, t.lastErr = o.quit, o.lastErr
	}
	if t.negotiated == nil {
		t.negotiated = o.negotiated
	}
	for _, op := range o.phases {
		pt := t.phase(op.name)
		if pt.samples == 0 || (op.samples > 0 && op.rtMin < pt.rtMin) {
			pt.rtMin = op.rtMin
		}
		pt.rtMax = max(pt.rtMax, op.rtMax)
		pt.rtSum += op.rtSum
		pt.samples += op.samples
		pt.rec.Merge(op.rec)
	}
}

// fill writes the tally into a trial; a trial with failures only is an error.
func (t *tally) fill(tr *result.Trial) error {
	tr.Ops, tr.Conns, tr.Resumed = t.ops, t.conns, t.resumed
	tr.BytesSent, tr.BytesReceived = t.sent, t.recv
	tr.Latency = t.latency.Hist()
	tr.Negotiated = t.negotiated
	if len(t.errors) > 0 {
		tr.Errors = t.errors
		tr.ErrorSamples = t.samples
	}
	for _, p := range t.phases {
		rt := result.RoundTrips{Min: p.rtMin, Max: p.rtMax}
		if p.samples > 0 {
			rt.Mean = float64(p.rtSum) / float64(p.samples)
		}
		tr.Phases = append(tr.Phases, result.Phase{Name: p.name, RoundTrips: rt, Latency: p.rec.Hist()})
	}
	switch {
	case t.panicked != nil:
		return t.panicked
	case t.ops == 0 && t.firstErr != nil:
		return fmt.Errorf("every operation failed, the first with: %w", t.firstErr)
	case t.ops == 0:
		return errNoOps
	case t.quit != "":
		var failed int64
		for _, n := range t.errors {
			failed += n
		}
		return &GaveUp{Why: t.quit, Failed: failed, Total: failed + t.ops, Kind: driver.Kind(t.lastErr), Last: ErrorSample(t.lastErr)}
	}
	return nil
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
func guard(t *tally, loop func()) {
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
	cpu := spanCPU{serverCPU: r.ServerCPU}
	tallies := make([]*tally, c)
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
					once = func(ctx context.Context, d driver.Driver, tl *tally) error { return connectN(ctx, d, n, tl) }
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
func finish(ctx context.Context, t result.Trial, cpu *spanCPU, tallies []*tally) (result.Trial, error) {
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

func connectOnce(ctx context.Context, d driver.Driver, tl *tally) error {
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
	tl.ops++
	tl.session(s)
	tl.trace(s.Conn().Finish())
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
func connectN(ctx context.Context, d driver.Driver, n int, tl *tally) error {
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
	tl.session(s)
	for i := range n {
		t0 := time.Now()
		if err = s.Do(ctx); err != nil {
			break
		}
		tl.latency.Record(time.Since(t0))
		tl.ops++
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
	tl.traced(s.Conn().Finish())
	return nil
}
