package bench

import (
	"context"
	"crypto/tls"
	"fmt"
	"math"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// The MongoDB seed study's loops (--preset mongodb-seed) on a driver that
// has driver.ClientLoops: new-client and reused-client, one client at a
// time, counted, timed and failed as the other experiments are.

func init() {
	open := func(r *Runner, t *trial) (err error) {
		t.loops, err = r.clientLoops(t.v)
		return err
	}
	experiments[plan.NewClient] = experiment{alone: true, open: open,
		run: func(ctx context.Context, r *Runner, t *trial) (result.Trial, error) { return r.newClient(ctx, t.loops) }}
	experiments[plan.ReusedClient] = experiment{alone: true, open: open,
		run: func(ctx context.Context, r *Runner, t *trial) (result.Trial, error) {
			return r.reusedClient(ctx, t.loops)
		}}
}

// Phases of the seed's trials, named as the seed named its figures.
const (
	phaseOnlyConnection = "only-connection"
	phaseFirstQuery     = "first-query"
	phaseFindOne        = "find_one"
)

// clientLoops returns variant v's driver as driver.ClientLoops.
func (r *Runner) clientLoops(v plan.Variant) (driver.ClientLoops, error) {
	d, err := r.driver(v, false, 0)
	if err != nil {
		return nil, err
	}
	loops, ok := d.(driver.ClientLoops)
	if !ok {
		return nil, fmt.Errorf("the %s driver cannot time whole clients (new-client, reused-client)", r.Scheme)
	}
	return loops, nil
}

// newClient runs new-client iterations for the trial's time or count: a
// new client each, its first find_one(), then an untimed disconnect. The
// trial's latency is the seed's connection-and-first-query; its phases are
// the seed's only-connection and first-query, which add up to it. Each
// client is two connections, the monitor's and the operation's.
func (r *Runner) newClient(ctx context.Context, s driver.ClientLoops) (result.Trial, error) {
	lim := &limits{ctx: ctx, count: r.Spec.Count}
	cpu := r.span()
	tl := newTally()
	start := time.Now()
	lim.deadline = start.Add(r.Spec.Duration)
	cpu.start()
	guard(tl, func() {
		for lim.next() {
			smp, err := s.NewClient(ctx)
			if err != nil {
				if ctx.Err() != nil || tl.fail(err) {
					return
				}
				continue
			}
			tl.errRun = 0
			tl.seedSample(smp)
		}
	})
	return finish(ctx, result.Trial{Start: start, Elapsed: time.Since(start)}, &cpu, []*workerTally{tl})
}

// seedSample counts one new client's iteration.
func (t *workerTally) seedSample(smp driver.ClientSample) {
	t.Ops++
	t.Latency.Record(smp.Connect + smp.FirstQuery)
	t.RecordPhase(phaseOnlyConnection, smp.Connect, 0)
	t.RecordPhase(phaseFirstQuery, smp.FirstQuery, smp.RoundTrips())
	t.recordConnection(smp.TLS, smp.Secure, 0)
	t.Conns++ // the monitor's
	t.Sent += smp.Op.Sent + smp.Monitor.Sent
	t.Received += smp.Op.Received + smp.Monitor.Received
}

// reusedClient times one client's find_one()s, after an untimed first one,
// for the trial's time or count (the trial's span includes the client's
// start and disconnect). A failed find_one() is counted and the client
// replaced by a new one, as a pool replaces a failed session.
func (r *Runner) reusedClient(ctx context.Context, s driver.ClientLoops) (result.Trial, error) {
	cpu := r.span()
	cpu.start()
	start := time.Now()
	first, err := s.OpenReused(ctx)
	if err != nil {
		return result.Trial{Start: start, Elapsed: time.Since(start)}, err
	}
	tl := newTally()
	rl := &reusedLoop{loops: s, tl: tl}
	rl.use(first)
	lim := &limits{ctx: ctx, count: r.Spec.Count, deadline: time.Now().Add(r.Spec.Duration)}
	guard(tl, func() { rl.run(ctx, lim) })
	rl.drop()
	t, err := finish(ctx, result.Trial{Start: start, Elapsed: time.Since(start)}, &cpu, []*workerTally{tl})
	if err == nil && rl.finds > 0 {
		// A client's query phase began with its untimed find_one(): its
		// other round trips are the loop's.
		per := float64(rl.trips) / float64(rl.finds)
		t.Phases = []result.Phase{{Name: phaseFindOne, Latency: t.Latency,
			RoundTrips: result.RoundTrips{Min: int(math.Floor(per)), Max: int(math.Ceil(per)), Mean: per}}}
	}
	return t, err
}

// reusedLoop is the reused-client loop: its current client and the round
// trips and find_one()s of the clients it used.
type reusedLoop struct {
	loops driver.ClientLoops
	tl    *workerTally

	c            driver.ReusedClient
	conn         *netx.Conn
	sent0, recv0 int64
	found        int64 // find_one()s on c
	trips, finds int64 // of the clients dropped
}

// use makes c the loop's client.
func (l *reusedLoop) use(c driver.ReusedClient) {
	conn, secure := c.Conn()
	l.c, l.conn, l.found = c, conn, 0
	var state tls.ConnectionState
	if secure != nil {
		state = secure.ConnectionState()
	}
	hello := 0
	if conn != nil {
		hello = conn.ClientHelloBytes()
	}
	l.tl.recordConnection(state, secure != nil, hello)
	if conn != nil {
		l.sent0, l.recv0 = conn.Counters()
	}
}

// drop counts the current client's bytes and round trips and closes it.
func (l *reusedLoop) drop() {
	if l.c == nil {
		return
	}
	if l.conn != nil {
		sent, recv := l.conn.Counters()
		l.tl.Sent += sent - l.sent0
		l.tl.Received += recv - l.recv0
		if p, ok := l.conn.Finish().Phase(driver.PhaseQuery); ok && l.found > 0 {
			l.trips += int64(p.RoundTrips - 1)
			l.finds += l.found
		}
	}
	l.c.Close()
	l.c = nil
}

func (l *reusedLoop) run(ctx context.Context, lim *limits) {
	for lim.next() {
		el, err := l.c.Op(ctx)
		l.found++
		if err != nil {
			l.drop()
			if ctx.Err() != nil || l.tl.fail(err) {
				return
			}
			c, err := l.loops.OpenReused(ctx)
			if err != nil {
				if ctx.Err() == nil {
					l.tl.fail(err)
				}
				return
			}
			l.use(c)
			continue
		}
		l.tl.Latency.Record(el)
		l.tl.Ops++
		l.tl.errRun = 0
	}
}
