package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

func init() {
	experiments[plan.Storm] = experiment{open: keptConns,
		run: func(ctx context.Context, r *Runner, t *trial) (result.Trial, error) { return r.storm(ctx, t.d, t.c) }}
}

// stormClient is one client of a storm: its session, when it got there,
// and how it failed.
type stormClient struct {
	s         driver.Session
	connected time.Time // zero if it did not connect
	done      time.Time // connected, or its first operation done
	err       error
	// panicked is a panic in its Open, Do or Close (a bug): the trial
	// fails.
	panicked error
	// trace is its connection's, finished as its close was done (a
	// client whose first operation failed: as it failed).
	trace netx.Trace
}

// PhaseHold is a storm client's wait, from its last answer (with
// --first-op: its operation done) until its close begins, while the other
// clients come back: the storm's own, not the connection's, so it is
// reported apart from the phases (result.Storm.Hold).
const PhaseHold = "hold"

// storm releases n clients at one instant: each opens a session and, with
// Spec.FirstOp, runs one operation. All are held open until the last is
// done, while the server's memory is read, then closed. The trial takes
// as long as its slowest client; each step is bounded by Spec.Timeout.
//
// Each phase ends as in every other experiment, where its answer arrived
// (netx.Conn.MarkAnswer); the hold that follows is marked as a phase of
// its own, taken out of the phases when they are counted; the close is
// timed by each client until it is done.
func (r *Runner) storm(ctx context.Context, d driver.Driver, n int) (result.Trial, error) {
	idle, kind, memErr := r.idleMemory(ctx)
	listen0, listenErr := readListen()
	clients := make([]stormClient, n)
	release := make(chan struct{})
	var wg sync.WaitGroup
	for i := range clients {
		c := &clients[i]
		wg.Go(func() {
			defer c.recover()
			<-release
			r.stormClient(ctx, d, c)
		})
	}
	cpu := r.span()
	cpu.start()
	start := time.Now()
	close(release)
	wg.Wait()
	t := result.Trial{Start: start}
	cpu.stop(&t)
	st := &result.Storm{Clients: n}
	var last time.Time
	var held int64
	for _, c := range clients {
		last = latest(last, c.done)
		if !c.connected.IsZero() {
			st.Connected++
			st.AllConnected = max(st.AllConnected, c.connected.Sub(start))
		}
		if r.Spec.FirstOp && c.err == nil && c.panicked == nil {
			st.FirstOps++
			st.LastFirstOp = max(st.LastFirstOp, c.done.Sub(start))
		}
		if c.s != nil {
			held++
		}
	}
	t.Elapsed = max(last.Sub(start), 0)
	if listenErr == nil {
		if listen1, err := readListen(); err == nil {
			st.Listen = &result.ListenQueue{Overflows: listen1.Overflows - listen0.Overflows, Drops: listen1.Drops - listen0.Drops, Somaxconn: somaxconn()}
		}
	}
	t.Storm = st
	t.ServerMemory = r.heldMemory(idle, kind, memErr, held)
	closeAll(clients)
	if err := ctx.Err(); err != nil {
		return t, err
	}
	tl := newTally()
	hold, toDial := stats.NewRecorder(), stats.NewRecorder()
	var first, lastDial time.Time
	for _, c := range clients {
		switch {
		case c.panicked != nil:
			tl.panicked = c.panicked
		case c.err != nil:
			tl.fail(c.err)
		default:
			tl.Ops++
			tl.Latency.Record(c.done.Sub(start))
		}
		if !c.connected.IsZero() && !c.trace.Start.IsZero() {
			if first.IsZero() || c.trace.Start.Before(first) {
				first = c.trace.Start
			}
			lastDial = latest(lastDial, c.trace.Start)
			toDial.Record(max(c.trace.Start.Sub(start), 0))
		}
		if c.s != nil {
			tl.recordSession(c.s)
			tr, h := withoutHold(c.trace)
			hold.Record(h)
			tl.RecordPhases(tr)
		}
	}
	st.DialSpread = lastDial.Sub(first)
	if !first.IsZero() {
		h := result.Hist(toDial.Hist())
		st.ToDial = &h
	}
	if held > 0 {
		h := result.Hist(hold.Hist())
		st.Hold = &h
	}
	return t, tl.fill(&t)
}

// stormClient opens c's session and runs its first operation if asked,
// then marks the hold: where the answer that ended the last phase
// arrived, as the next step of a connect would (the first operation's
// MarkAnswer), or when the first operation was done, as a connect's close
// would. A session whose operation failed is closed at once (it is not
// held).
func (r *Runner) stormClient(ctx context.Context, d driver.Driver, c *stormClient) {
	s, err := d.Open(ctx)
	if err != nil {
		c.err, c.done = err, time.Now()
		return
	}
	c.s, c.connected = s, time.Now()
	c.done = c.connected
	if !r.Spec.FirstOp {
		s.Conn().MarkAnswer(PhaseHold)
		return
	}
	err = s.Do(ctx)
	c.done = time.Now()
	if err != nil {
		c.err = err
		c.trace = s.Conn().Finish() // for its dial start
		s.Close()
		c.s = nil
		return
	}
	s.Conn().MarkAt(c.done, PhaseHold)
}

// recover turns a panic of the client's (a bug, in tlsbench or a driver)
// into its failure.
func (c *stormClient) recover() {
	if p := recover(); p != nil {
		c.panicked = &PanicError{Value: p, Stack: debug.Stack()}
	}
}

// closeAll closes the clients' sessions, each in its own goroutine as
// they were opened, and finishes each one's trace as its close is done:
// the close phase is its own, not the wait for the others'.
func closeAll(clients []stormClient) {
	var wg sync.WaitGroup
	for i := range clients {
		c := &clients[i]
		if c.s == nil {
			continue
		}
		wg.Go(func() {
			defer c.recover()
			c.s.Close()
			c.trace = c.s.Conn().Finish()
		})
	}
	wg.Wait()
}

// withoutHold is tr without its hold phase, and the hold's time (0 if it
// has none).
func withoutHold(tr netx.Trace) (netx.Trace, time.Duration) {
	i := slices.IndexFunc(tr.Phases, func(p netx.Phase) bool { return p.Name == PhaseHold })
	if i < 0 {
		return tr, 0
	}
	h := tr.Phases[i].Duration
	tr.Phases = slices.Delete(slices.Clone(tr.Phases), i, i+1)
	return tr, h
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// serverMemory reads the server's memory, if tlsbench runs it.
func (r *Runner) serverMemory() (int64, string, error) {
	if r.ServerMemory == nil {
		return 0, "", ErrNoServerCPU
	}
	return r.ServerMemory()
}

// idleMemory reads the server's memory before a trial opens its
// connections, once it stopped shrinking: the processes of the previous
// trial's connections (PostgreSQL's backends) end a moment after their
// close. It waits at most a second.
func (r *Runner) idleMemory(ctx context.Context) (int64, string, error) {
	b, kind, err := r.serverMemory()
	for range 20 {
		if err != nil || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
		now, k, err := r.serverMemory()
		if err != nil || now >= b-b/100 {
			return now, k, err
		}
		b, kind = now, k
	}
	return b, kind, err
}

// heldMemory is the server's memory with conns connections held, beside
// idle, read before they were opened; nil if either could not be read.
func (r *Runner) heldMemory(idle int64, kind string, idleErr error, conns int64) *result.ServerMemory {
	if idleErr != nil || conns == 0 {
		return nil
	}
	busy, _, err := r.serverMemory()
	if err != nil {
		return nil
	}
	return &result.ServerMemory{Kind: kind, IdleBytes: idle, HeldBytes: busy, Conns: conns}
}

// listenCounters are /proc/net/netstat's TcpExt listen-queue counters.
type listenCounters struct{ Overflows, Drops int64 }

// readListen reads ListenOverflows and ListenDrops from /proc/net/netstat,
// where TcpExt is a line of names followed by a line of values.
func readListen() (listenCounters, error) {
	data, err := os.ReadFile("/proc/net/netstat")
	if err != nil {
		return listenCounters{}, err
	}
	return parseListen(data)
}

func parseListen(data []byte) (listenCounters, error) {
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "TcpExt:" {
			continue
		}
		if names == nil {
			names = f
			continue
		}
		var c listenCounters
		found := 0
		for i := 1; i < len(f) && i < len(names); i++ {
			var dst *int64
			switch names[i] {
			case "ListenOverflows":
				dst = &c.Overflows
			case "ListenDrops":
				dst = &c.Drops
			default:
				continue
			}
			v, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil {
				return c, fmt.Errorf("/proc/net/netstat: %s: %w", names[i], err)
			}
			*dst = v
			found++
		}
		if found < 2 {
			return c, errors.New("/proc/net/netstat: no ListenOverflows and ListenDrops in TcpExt")
		}
		return c, nil
	}
	return listenCounters{}, errors.New("/proc/net/netstat: no TcpExt lines")
}

// somaxconn is net.core.somaxconn, the cap of every listen backlog; 0 if
// unknown.
func somaxconn() int {
	data, err := os.ReadFile("/proc/sys/net/core/somaxconn")
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return n
}
