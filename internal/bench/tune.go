package bench

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"

	"golang.org/x/sys/unix"
)

// The Go runtime is fitted to each trial so that the client's own CPU per
// operation stays low (on a machine it shares with the server, that CPU is
// taken from the server being measured).

// fitProcs sets GOMAXPROCS to the trial's c workers, at most the CPUs the
// process may run on, and returns the undo. With one ping-pong connection
// and a second P, every wake-up of the worker also wakes a spinning thread
// that finds nothing to do (futex and nanosleep calls per request); with
// as many Ps as workers the thread that waits for the socket runs it.
func fitProcs(c int) (undo func()) {
	n := max(1, min(c, usableCPUs()))
	old := runtime.GOMAXPROCS(n)
	return func() { runtime.GOMAXPROCS(old) }
}

// waitInThreads says whether a pool of c connections waits for its
// answers in the workers' own threads (netx.Conn.WaitInThread), as
// pgbench's and sysbench's threads do, rather than in Go's network poller:
// while there is a CPU for each connection. Measured on 2 CPUs, point
// selects: at 1 connection the threads take 30-40% less client CPU per
// statement on PostgreSQL and MariaDB, at 2 PostgreSQL runs 60% faster;
// at 4 the poller, which gathers the answers of several connections in one
// wake-up, was faster on PostgreSQL and HTTP, and at 8 on MariaDB too.
func waitInThreads(c int) bool { return c <= usableCPUs() }

// threadProcs sets GOMAXPROCS for c workers that wait in their threads
// and returns the undo: a P each, and one that stays idle. A worker
// waiting in poll(2) keeps its P, in a system call; while some P is idle,
// sysmon leaves such a P alone, but with none idle it takes it away after
// 20µs whenever another goroutine (a timer) is to run, and the worker
// then returns from every wait to no P: on another thread, through the
// run queue, with sysmon polling at its fastest. On 2 CPUs this doubled
// the client's CPU per statement in half the runs.
func threadProcs(c int) (undo func()) {
	old := runtime.GOMAXPROCS(c + 1)
	return func() { runtime.GOMAXPROCS(old) }
}

// usableCPUs is the number of CPUs in the process's affinity mask (which
// --client-cpus may have narrowed after the start, when runtime.NumCPU was
// taken).
func usableCPUs() int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil || set.Count() == 0 {
		return runtime.NumCPU()
	}
	return set.Count()
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
