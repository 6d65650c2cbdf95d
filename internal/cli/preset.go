package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"syscall"
	"time"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/driver/mongodrv"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/report"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// textReport writes a result's text report: report.Text, which prints a
// preset's own table first, as the run did.
func textReport(w io.Writer, r *result.Result) error { return report.Text(w, r) }

// measure returns how a run measures: the runner's trials, or a preset's
// loops interleaved with them, and how many trials that is.
func measure(spec plan.Spec, runner *bench.Runner) (func(context.Context) error, int, error) {
	if spec.Preset != plan.PresetMongoDBSeed {
		return runner.Run, runner.Total(), nil
	}
	seeds := map[string]*mongodrv.Seed{}
	for _, v := range runner.Variants {
		s, err := mongodrv.NewSeed(runner.Configs[v.ID])
		if err != nil {
			return nil, 0, err
		}
		seeds[v.ID] = s
	}
	total := spec.Trials * len(spec.Experiments) * len(runner.Variants)
	return func(ctx context.Context) error {
		done := 0
		for round := range spec.Trials {
			for _, e := range spec.Experiments {
				for _, v := range runner.Variants {
					var t result.Trial
					var err error
					if e == plan.Connect {
						t, err = runner.Trial(ctx, e, v, 1)
					} else if t, err = seedTrial(ctx, runner, seeds[v.ID], e, v); err == nil {
						if err = bench.CheckErrors(spec, t); err != nil {
							err = fmt.Errorf("%s %s: %w", e, v.ID, err)
						}
					}
					var many *bench.TooManyErrors
					if err != nil && !errors.As(err, &many) {
						return err
					}
					t.Round = round
					done++
					if runner.Done != nil {
						runner.Done(t, done, total)
					}
					if err != nil {
						return err // kept, and the run ends here
					}
				}
			}
		}
		return nil
	}, total, nil
}

// seedTrial runs one trial of a seed loop on variant v: Spec.Count
// iterations of a new client (connect, first find_one) or of a reused
// client's find_one, bounded by Spec.Duration.
func seedTrial(ctx context.Context, runner *bench.Runner, s *mongodrv.Seed, e plan.Experiment, v plan.Variant) (result.Trial, error) {
	t := result.Trial{Experiment: e, Variant: v.ID, Concurrency: 1}
	if runner.Before != nil {
		if err := runner.Before(ctx, v); err != nil {
			return t, fmt.Errorf("%s: %w", v.ID, err)
		}
	}
	var err error
	cpu := startCPU(runner.ServerCPU)
	t.Start = time.Now()
	if e == plan.NewClient {
		err = newClientLoop(ctx, runner.Spec, s, &t)
	} else {
		err = reusedLoop(ctx, runner.Spec, s, &t)
	}
	t.Elapsed = time.Since(t.Start)
	cpu.stop(&t)
	if err != nil {
		if ctx.Err() != nil {
			return t, ctx.Err()
		}
		return t, fmt.Errorf("%s %s: %w", e, v.ID, explainSeed(err, runner.Configs[v.ID].Addr, v))
	}
	return t, nil
}

// explainSeed phrases a failed loop as the runner phrases a failed trial:
// a connection refused names the address, a TLS failure what to do.
func explainSeed(err error, addr string, v plan.Variant) error {
	var oe *driver.OpError
	if errors.As(err, &oe) && oe.Phase == netx.PhaseTCP && !tlsx.FileLimit(err) {
		var se *os.SyscallError
		if errors.As(err, &se) {
			err = se.Err
		}
		hint := ""
		if errors.Is(err, syscall.ECONNREFUSED) {
			hint = " (is the server running and listening there?)"
		}
		return fmt.Errorf("cannot connect to %s: %w%s", addr, err, hint)
	}
	return tlsx.Explain(err, addr, v)
}

// maxFailures in a row end a trial: a dead server is not hammered.
const maxFailures = 50

// failures counts an iteration's errors by kind.
type failures struct {
	kinds   map[string]int64
	samples map[string]string
	first   error
	run     int
}

// add counts err and reports whether the trial should stop.
func (f *failures) add(err error) bool {
	if f.kinds == nil {
		f.kinds, f.samples = map[string]int64{}, map[string]string{}
	}
	kind := driver.Kind(err)
	f.kinds[kind]++
	if _, ok := f.samples[kind]; !ok {
		f.samples[kind] = bench.ErrorSample(err)
	}
	if f.first == nil {
		f.first = err
	}
	f.run++
	return f.run >= maxFailures
}

func (f *failures) fill(t *result.Trial) error {
	if len(f.kinds) > 0 {
		t.Errors, t.ErrorSamples = f.kinds, f.samples
	}
	if t.Ops == 0 && f.first != nil {
		return fmt.Errorf("every iteration failed, the first with: %w", f.first)
	}
	return nil
}

// newClientLoop runs new-client iterations. The trial's latency is the
// seed's connection-and-first-query; its phases are the seed's
// only-connection and first-query, which add up to it.
func newClientLoop(ctx context.Context, spec plan.Spec, s *mongodrv.Seed, t *result.Trial) error {
	total, connect, first := stats.NewRecorder(), stats.NewRecorder(), stats.NewRecorder()
	rtMin, rtMax, rtSum := 0, 0, 0
	var f failures
	deadline := t.Start.Add(spec.Duration)
	for t.Ops < spec.Count && time.Now().Before(deadline) && ctx.Err() == nil {
		smp, err := s.NewClient(ctx)
		if err != nil {
			if ctx.Err() != nil || f.add(err) {
				break
			}
			continue
		}
		f.run = 0
		t.Ops++
		t.Conns += 2 // the monitor's and the operation's
		total.Record(smp.Connect + smp.FirstQuery)
		connect.Record(smp.Connect)
		first.Record(smp.FirstQuery)
		rt := smp.RoundTrips()
		if t.Ops == 1 || rt < rtMin {
			rtMin = rt
		}
		rtMax, rtSum = max(rtMax, rt), rtSum+rt
		t.BytesSent += smp.Op.Sent + smp.Monitor.Sent
		t.BytesReceived += smp.Op.Received + smp.Monitor.Received
		if smp.Secure {
			if smp.TLS.DidResume {
				t.Resumed++
			}
			if t.Negotiated == nil {
				n := tlsx.Describe(smp.TLS)
				t.Negotiated = &n
			}
		}
	}
	t.Latency = total.Hist()
	if t.Ops > 0 {
		t.Phases = []result.Phase{
			{Name: "only-connection", Latency: connect.Hist()},
			{Name: "first-query", RoundTrips: result.RoundTrips{Min: rtMin, Max: rtMax, Mean: float64(rtSum) / float64(t.Ops)}, Latency: first.Hist()},
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return f.fill(t)
}

// reusedLoop times one client's find_one()s after an untimed first one.
func reusedLoop(ctx context.Context, spec plan.Spec, s *mongodrv.Seed, t *result.Trial) error {
	r, err := s.OpenReused(ctx)
	if err != nil {
		return err
	}
	defer r.Close()
	conn, secure := r.Conn()
	t.Conns = 1
	if secure != nil {
		state := secure.ConnectionState()
		n := tlsx.Describe(state)
		t.Negotiated = &n
		if state.DidResume {
			t.Resumed = 1
		}
	}
	sent0, recv0 := conn.Counters()
	lat := stats.NewRecorder()
	var f failures
	deadline := time.Now().Add(spec.Duration)
	for t.Ops < spec.Count && time.Now().Before(deadline) && ctx.Err() == nil {
		el, err := r.FindOne(ctx)
		if err != nil {
			f.add(err)
			break
		}
		t.Ops++
		lat.Record(el)
	}
	sent, recv := conn.Counters()
	t.BytesSent, t.BytesReceived = sent-sent0, recv-recv0
	t.Latency = lat.Hist()
	if err := ctx.Err(); err != nil {
		return err
	}
	if f.first != nil {
		// The client does not reconnect by itself here: a failed query
		// ends the trial.
		return f.first
	}
	// The query phase began with the untimed find_one: its other round
	// trips are the loop's.
	if p, ok := conn.Finish().Phase(mongodrv.PhaseQuery); ok && t.Ops > 0 {
		per := float64(p.RoundTrips-1) / float64(t.Ops)
		t.Phases = []result.Phase{{Name: "find_one", Latency: t.Latency,
			RoundTrips: result.RoundTrips{Min: int(math.Floor(per)), Max: int(math.Ceil(per)), Mean: per}}}
	}
	return nil
}

// trialCPU measures client and server CPU over a trial.
type trialCPU struct {
	server         func() (time.Duration, error)
	client, srvCPU time.Duration
}

func startCPU(server func() (time.Duration, error)) *trialCPU {
	c := &trialCPU{server: server, client: processCPU()}
	if server != nil {
		c.srvCPU, _ = server()
	}
	return c
}

func (c *trialCPU) stop(t *result.Trial) {
	t.ClientCPU = processCPU() - c.client
	if c.server != nil {
		if end, err := c.server(); err == nil {
			t.ServerCPU = end - c.srvCPU
		}
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
