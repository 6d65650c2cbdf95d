package bench_test

import (
	"context"
	"crypto/tls"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
)

// loopsStandIn is a stand-in driver with driver.ClientLoops: its clients
// open no connection, their samples are made up, and the nth operation
// (over NewClient and every reused client's Op, from 1) fails if fail says.
type loopsStandIn struct {
	fail             func(n int64) bool
	ops              atomic.Int64
	reopened, closed atomic.Int64
}

func (d *loopsStandIn) Open(context.Context) (driver.Session, error) {
	return nil, errors.New("the client-loop stand-in opens no session")
}

func (d *loopsStandIn) op() error {
	if n := d.ops.Add(1); d.fail != nil && d.fail(n) {
		return &driver.OpError{Phase: driver.PhaseQuery, Err: errScripted}
	}
	return nil
}

// NewClient is a client of two connections: the operation's (tcp, query)
// and the monitor's (tcp), a round trip each phase.
func (d *loopsStandIn) NewClient(context.Context) (driver.ClientSample, error) {
	if err := d.op(); err != nil {
		return driver.ClientSample{}, err
	}
	t0 := time.Now()
	ms := time.Millisecond
	op := netx.Trace{Start: t0, End: t0.Add(3 * ms), Sent: 100, Received: 200, Phases: []netx.Phase{
		{Name: netx.PhaseTCP, Start: t0, Duration: ms, RoundTrips: 1}, {Name: driver.PhaseQuery, Start: t0.Add(ms), Duration: 2 * ms, RoundTrips: 1}}}
	mon := netx.Trace{Start: t0, End: t0.Add(ms), Sent: 10, Received: 20, Phases: []netx.Phase{{Name: netx.PhaseTCP, Start: t0, Duration: ms, RoundTrips: 1}}}
	return driver.ClientSample{Connect: ms, FirstQuery: 3 * ms, Op: op, Monitor: mon}, nil
}

func (d *loopsStandIn) OpenReused(context.Context) (driver.ReusedClient, error) {
	d.reopened.Add(1)
	return reusedStandIn{d}, nil
}

type reusedStandIn struct{ d *loopsStandIn }

func (r reusedStandIn) Op(context.Context) (time.Duration, error) {
	return time.Millisecond, r.d.op()
}
func (r reusedStandIn) Conn() (*netx.Conn, *tls.Conn) { return nil, nil }
func (r reusedStandIn) Close() error                  { r.d.closed.Add(1); return nil }

// TestClientLoops runs the seed's new-client and reused-client loops on
// the stand-in: counts, phases, round trips and bytes as the loops tally
// them, a failed operation counted, and a reused client replaced after
// one and closed at the end.
func TestClientLoops(t *testing.T) {
	d := &loopsStandIn{fail: func(n int64) bool { return n == 5 }}
	rate := 0.5
	spec, err := plan.New(plan.Spec{Target: plan.Builtin, Experiments: []plan.Experiment{plan.Connect}, TLS: []string{"off"},
		Count: 20, Trials: 1, MaxErrorRate: &rate})
	if err != nil {
		t.Fatal(err)
	}
	vs := spec.Variants()
	r := &bench.Runner{Spec: spec, Variants: vs, Scheme: "stand-in", Configs: map[string]driver.Config{vs[0].ID: {Variant: vs[0]}},
		NewDriver: func(string, driver.Config) (driver.Driver, error) { return d, nil }}
	ctx := context.Background()

	tr, err := r.Trial(ctx, plan.NewClient, vs[0], 1)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Ops != 19 || tr.Conns != 38 || tr.Latency.Count != 19 || len(tr.Errors) != 1 {
		t.Errorf("new-client: %d ops on %d connections, %d latencies, errors %v; want 19 on 38, 19, one", tr.Ops, tr.Conns, tr.Latency.Count, tr.Errors)
	}
	if tr.BytesSent != 19*110 || tr.BytesReceived != 19*220 {
		t.Errorf("new-client: bytes %d/%d, want %d/%d", tr.BytesSent, tr.BytesReceived, 19*110, 19*220)
	}
	if len(tr.Phases) != 2 || tr.Phases[0].Name != "only-connection" || tr.Phases[1].Name != "first-query" ||
		tr.Phases[0].RoundTrips.Max != 0 || tr.Phases[1].RoundTrips.Min != 3 || tr.Phases[1].RoundTrips.Max != 3 {
		t.Errorf("new-client phases %+v, want only-connection (no round trip), first-query (3: both connections')", tr.Phases)
	}

	d.ops.Store(0)
	tr, err = r.Trial(ctx, plan.ReusedClient, vs[0], 1)
	if err != nil {
		t.Fatal(err)
	}
	// The first client's ops 1-4 count, op 5 fails and replaces it; the
	// second's 15 count: 20 operations taken, 19 counted.
	if tr.Ops != 19 || tr.Latency.Count != 19 || len(tr.Errors) != 1 || tr.Conns != 2 {
		t.Errorf("reused-client: %d ops on %d connections, %d latencies, errors %v; want 19 on 2, 19, one", tr.Ops, tr.Conns, tr.Latency.Count, tr.Errors)
	}
	if d.reopened.Load() != 2 || d.closed.Load() != 2 {
		t.Errorf("reused-client: %d clients opened, %d closed, want 2 and 2", d.reopened.Load(), d.closed.Load())
	}
}
