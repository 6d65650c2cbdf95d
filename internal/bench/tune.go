package bench

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/host"
)

// The Go runtime is fitted to each trial so that the client's own CPU per
// operation stays low (on a machine it shares with the server, that CPU is
// taken from the server being measured): GOMAXPROCS (fitProcs, the wait
// probe) and the collector (holdGC). Runner.Untuned turns them all off.

// fitProcs is fitProcs, unless r is Untuned.
func (r *Runner) fitProcs(c int) (undo func()) {
	if r.Untuned {
		return func() {}
	}
	return fitProcs(c)
}

// waitModes is waitModes, unless r is Untuned: then the one mode the
// runtime is in, the poller with the Ps it has.
func (r *Runner) waitModes(c int) []waitMode {
	if r.Untuned {
		return []waitMode{{procs: runtime.GOMAXPROCS(0)}}
	}
	return waitModes(c)
}

// span is a span's CPU meter, holding the collector off unless r is
// Untuned.
func (r *Runner) span() spanCPU {
	return spanCPU{serverCPU: r.ServerCPU, keepGC: r.Untuned}
}

// fitProcs sets GOMAXPROCS to the trial's c workers, at most the CPUs the
// process may run on, and returns the undo. With one ping-pong connection
// and a second P, every wake-up of the worker also wakes a spinning thread
// that finds nothing to do (futex and nanosleep calls per request); with
// as many Ps as workers the thread that waits for the socket runs it.
func fitProcs(c int) (undo func()) {
	n := max(1, min(c, host.NumCPU()))
	old := runtime.GOMAXPROCS(n)
	return func() { runtime.GOMAXPROCS(old) }
}

// waitMode is how a pool's workers wait for their answers: in their own
// threads (netx.Conn.WaitInThread), as pgbench's and sysbench's threads
// do, or in Go's network poller, which gathers the answers of several
// connections in one wake-up, as wrk's event loop does; and with how many
// Ps (GOMAXPROCS). locked: each worker's goroutine is locked to its thread.
type waitMode struct {
	thread, locked bool
	procs          int
}

func (m waitMode) String() string {
	where, ps := "poller", "Ps"
	switch {
	case m.locked:
		where = "locked thread"
	case m.thread:
		where = "thread"
	}
	if m.procs == 1 {
		ps = "P"
	}
	return fmt.Sprintf("%s, %d %s", where, m.procs, ps)
}

// waitModes are the ways c pool connections may wait, the default first.
//
// While there is a CPU for each connection the workers wait in their
// threads. Measured on 2 CPUs, point selects: at 1 connection the threads
// take 30-40% less client CPU per statement on PostgreSQL and MariaDB, at
// 2 PostgreSQL runs 60% faster. They get a P each and one that stays idle:
// a worker waiting in poll(2) keeps its P, in a system call; while some P
// is idle, sysmon leaves such a P alone, but with none idle it takes it
// away after 20µs whenever another goroutine (a timer) is to run, and the
// worker then returns from every wait to no P: on another thread, through
// the run queue, with sysmon polling at its fastest. On 2 CPUs this
// doubled the client's CPU per statement in half the runs.
//
// With more connections than CPUs no mode won everywhere: at 4 on 2 CPUs,
// before netx's pollSocket, the poller with a P per CPU was fastest on
// PostgreSQL (55k statements/s against 48k in threads), the poller with one
// P on HTTP (50k requests/s against 46k), the threads on MariaDB (43k
// against 34k). The pool tries each during its warm-up (waitProbe). There
// the workers' goroutines are also locked to their threads: a worker that
// yields (see netx's threadConn.wait) would otherwise come back on another
// thread, and the kernel, which saw each thread wake a different server
// process, no longer keeps a client and its server side by side (5 pairs of
// runs at 4 connections: PostgreSQL 55k statements/s unlocked, 60k locked;
// MariaDB 48k and 50k; HTTP lost, 60k requests/s against 57k, but there the
// poller with one P does as well). With a CPU each they are not locked: at
// 1 connection locking cost PostgreSQL 10%.
//
// Beyond maxThreadWaits connections the threads are not tried: a thread
// and a P for each of thousands of connections would cost more memory and
// scheduling than any wake-up they save.
func waitModes(c int) []waitMode {
	cpus := host.NumCPU()
	if c <= cpus {
		return []waitMode{{thread: true, procs: c + 1}}
	}
	modes := []waitMode{{procs: cpus}}
	if cpus > 1 {
		modes = append(modes, waitMode{procs: 1})
	}
	if c <= maxThreadWaits {
		modes = append(modes, waitMode{thread: true, locked: true, procs: c + 1})
	}
	return modes
}

// maxThreadWaits is the most pool connections whose workers may wait in
// threads of their own.
const maxThreadWaits = 64

// waitProbe chooses a pool's waitMode in its warm-up, by the operations
// each mode completes in equal time on the same connections and the client
// CPU they take (see choose). The first eighth of the warm-up settles in
// the default mode; the next three quarters try each mode in two rounds,
// the second in reverse order, so that a drift of the machine's load
// favours none; the last eighth runs in the mode chosen. The workers move
// their connections between the poller and their threads as the probe
// says (follow); it sets GOMAXPROCS.
type waitProbe struct {
	modes   []waitMode
	want    atomic.Int32 // the mode the workers should be in now
	ops     atomic.Int64 // operations completed in the current slot
	decided chan struct{}
	chosen  waitMode // once decided is closed
}

// minProbeWarmup is the least warm-up a probe is run in: a slot (of six)
// is then 1/8 of it, 50ms.
const minProbeWarmup = 400 * time.Millisecond

// newWaitProbe starts the choice among the modes for a warm-up from now
// to warmEnd; with one mode, or too short a warm-up, the first is chosen
// at once. undo restores GOMAXPROCS once the pool is done.
func newWaitProbe(ctx context.Context, modes []waitMode, warmEnd time.Time) (p *waitProbe, undo func()) {
	p = &waitProbe{modes: modes, decided: make(chan struct{})}
	old := runtime.GOMAXPROCS(modes[0].procs)
	undo = func() { runtime.GOMAXPROCS(old) }
	warmup := time.Until(warmEnd)
	if len(modes) == 1 || warmup < minProbeWarmup {
		p.chosen = modes[0]
		close(p.decided)
		return p, undo
	}
	go p.run(ctx, time.Now(), warmup)
	return p, undo
}

func (p *waitProbe) run(ctx context.Context, start time.Time, warmup time.Duration) {
	var order []int
	for i := range p.modes {
		order = append(order, i)
	}
	for i := range p.modes {
		order = append(order, len(p.modes)-1-i)
	}
	slot := warmup * 3 / 4 / time.Duration(len(order))
	ops := make([]int64, len(p.modes))
	cpu := make([]time.Duration, len(p.modes))
	at := start.Add(warmup / 8)
	wait := func(until time.Time) bool {
		select {
		case <-time.After(time.Until(until)):
			return true
		case <-ctx.Done():
			return false
		}
	}
	defer close(p.decided)
	p.chosen = p.modes[0]
	if !wait(at) {
		return
	}
	for _, m := range order {
		p.set(m)
		p.ops.Store(0)
		cpu0 := host.ProcessCPU()
		at = at.Add(slot)
		if !wait(at) {
			return
		}
		ops[m] += p.ops.Load()
		cpu[m] += host.ProcessCPU() - cpu0
	}
	best := choose(ops, cpu)
	p.chosen = p.modes[best]
	p.set(best)
}

// choose picks the mode that completed the most operations or, of those
// within tieBand of it, the one that took the least client CPU for each:
// slots of a 1s warm-up differ by 5-10% on a busy machine, and where the
// client shares the server's CPUs what it spares goes to the server (4
// keep-alive HTTP connections on 2 CPUs: 9µs of client CPU a request in
// the poller, 14 in locked threads, at rates a probe could not tell apart).
func choose(ops []int64, cpu []time.Duration) int {
	best := 0
	for m := range ops {
		if ops[m] > ops[best] {
			best = m
		}
	}
	perOp := func(m int) float64 { return float64(cpu[m]) / float64(ops[m]) }
	pick := best
	for m := range ops {
		if ops[m] > 0 && float64(ops[m]) >= (1-tieBand)*float64(ops[best]) && perOp(m) < perOp(pick) {
			pick = m
		}
	}
	return pick
}

// tieBand is how far below the most operations a probe's mode may fall and
// still win on client CPU.
const tieBand = 0.05

func (p *waitProbe) set(m int) {
	runtime.GOMAXPROCS(p.modes[m].procs)
	p.want.Store(int32(m))
}

// waiter is where one worker waits now.
type waiter struct {
	thread bool // its session's socket waits in its thread
	locked bool // its goroutine is locked to its thread
}

// follow moves s's connection to the mode the probe wants now, and locks
// or unlocks the calling worker's goroutine to its thread.
func (p *waitProbe) follow(s driver.Session, w *waiter) {
	m := p.modes[p.want.Load()]
	if m.thread != w.thread {
		var err error
		if m.thread {
			err = s.Conn().WaitInThread()
		} else {
			err = s.Conn().WaitInPoller()
		}
		// Should a move fail, the connection waits where it was: slower,
		// not wrong.
		if err == nil {
			w.thread = m.thread
		}
	}
	if m.locked != w.locked {
		if m.locked {
			runtime.LockOSThread()
		} else {
			runtime.UnlockOSThread()
		}
		w.locked = m.locked
	}
}

// release unlocks the worker's goroutine from its thread, if it was.
func (w *waiter) release() {
	if w.locked {
		runtime.UnlockOSThread()
		w.locked = false
	}
}

// done counts an operation of the warm-up.
func (p *waitProbe) done() { p.ops.Add(1) }

// final waits for the choice and moves s's connection to it.
func (p *waitProbe) final(ctx context.Context, s driver.Session, w *waiter) {
	select {
	case <-p.decided:
	case <-ctx.Done():
		return
	}
	p.follow(s, w)
}

// gcHeadroom is the least memory a measured span may allocate before the
// collector runs.
const gcHeadroom = 32 << 20

// holdGC holds the garbage collector off for a measured span: it runs only
// when the process's memory passes what it uses now plus as much again
// (at least gcHeadroom), the pace GOGC=100 sets for a large heap, but
// without the many small collections a small heap gets (a collection
// every few megabytes of TLS records and driver buffers). release
// restores the collector; calling it again does nothing.
func holdGC() (release func()) {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	var used int64
	if s[0].Value.Kind() == metrics.KindUint64 && s[1].Value.Kind() == metrics.KindUint64 {
		used = int64(s[0].Value.Uint64() - s[1].Value.Uint64())
	}
	oldLimit := debug.SetMemoryLimit(used + max(used, gcHeadroom))
	oldPercent := debug.SetGCPercent(-1)
	done := false
	return func() {
		if done {
			return
		}
		done = true
		debug.SetGCPercent(oldPercent)
		debug.SetMemoryLimit(oldLimit)
	}
}
