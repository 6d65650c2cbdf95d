package clientstack

import (
	"context"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/lab/labtest"
)

// TestProgramWarmup checks that a run's warm-up stays out of its figures:
// the stand-in burns CPU for its whole warm-up and little after, so CPU
// (warm to done) is well under WarmupCPU, Warmed is called once before
// Run returns, and Elapsed starts at the warm line.
func TestProgramWarmup(t *testing.T) {
	p, err := fake(t, "ok", "off")
	if err != nil {
		t.Fatal(err)
	}
	for _, exp := range []string{"connect", "pool"} {
		t.Run(exp, func(t *testing.T) {
			warmed := 0
			warmup := 1500 * time.Millisecond
			rep, err := p.Run(context.Background(), Run{Experiment: exp, Concurrency: 1, PerConn: 1, MaxOps: 10,
				Duration: 10 * time.Second, Warmup: warmup, Warmed: func() { warmed++ }})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("warm-up %v, %v CPU; measured %v, %v CPU, %d ops", rep.Warmup, rep.WarmupCPU, rep.Elapsed, rep.CPU, len(rep.Ops))
			if warmed != 1 {
				t.Errorf("Warmed called %d times, want 1", warmed)
			}
			if len(rep.Ops) != 10 {
				t.Errorf("%d ops, want 10", len(rep.Ops))
			}
			if rep.Warmup < warmup {
				t.Errorf("warm-up took %v, less than the %v asked", rep.Warmup, warmup)
			}
			// The warm-up busy-loops; ten operations take a few ms. The
			// share of a core it gets is the machine's (at load 20 it
			// got 57 ms of CPU in 1.5 s): assert that its CPU was
			// metered (a /proc tick at least) and kept apart from the
			// measured CPU, not how much it got.
			if rep.WarmupCPU < 10*time.Millisecond {
				t.Errorf("the warm-up's CPU %v: the stand-in burned CPU for %v", rep.WarmupCPU, warmup)
			}
			if rep.CPU >= rep.WarmupCPU/2 {
				t.Errorf("the measured CPU %v includes the warm-up's (%v)", rep.CPU, rep.WarmupCPU)
			}
			if rep.Elapsed >= rep.Warmup {
				t.Errorf("elapsed %v includes the warm-up (%v)", rep.Elapsed, rep.Warmup)
			}
		})
	}
}

// TestStackWarmup runs psycopg and pgjdbc against a lab PostgreSQL over
// TLS 1.3, each experiment in a new process without a warm-up and in
// another with one, and logs the client CPU per operation both ways (and
// what the old metering, command to done, would have said). It asserts
// only what holds on a loaded machine: the warm line came (Warmed, once),
// the warm-up's operations are neither reported nor counted (a count-bound
// run reports exactly its count), the server saw the warm-up's
// connections as the warm line counted them, and the pool still opened
// only its concurrency.
func TestStackWarmup(t *testing.T) {
	labtest.Slow(t)
	srv := sharedLab(t, "postgres")
	// Operations a run: enough for /proc's 10 ms ticks (a connection
	// costs psycopg 7 ms of CPU, pgjdbc 40; a pool operation 0.3 ms).
	// Nothing is asserted on the figures: more operations only sharpen
	// the log, at seconds of CPU a run on a loaded machine.
	ops := map[string]int{"connect": 30, "pool": 1000}
	for _, name := range []string{"psycopg", "pgjdbc", "node-postgres"} {
		t.Run(name, func(t *testing.T) {
			cfg := srv.config(t, name, "1.3")
			for _, exp := range []string{"connect", "pool"} {
				n := int64(ops[exp])
				for _, warmup := range []time.Duration{0, 2 * time.Second} {
					c := startStack(t, cfg) // a cold process each time
					warmed := 0
					conns0, _ := srv.count(t, 0)
					rep, err := c.Run(context.Background(), Run{Experiment: exp, Concurrency: 2, PerConn: 1, MaxOps: n,
						Duration: time.Minute, Warmup: warmup, Warmed: func() { warmed++ }})
					c.Close()
					if err != nil {
						t.Fatalf("%s, warm-up %v: %v", exp, warmup, err)
					}
					want := conns0 + n + rep.Extra.Min // connect: a connection each, and the warm-up's
					if exp == "pool" {
						want = conns0 + 2
					}
					conns, _ := srv.count(t, want)
					conns -= conns0
					per := func(d time.Duration) time.Duration { return d / time.Duration(max(len(rep.Ops), 1)) }
					t.Logf("%s %s, warm-up %v (took %v): %v client CPU per operation; command to done: %v; server connections %d",
						name, exp, warmup, rep.Warmup.Round(time.Millisecond), per(rep.CPU), per(rep.CPU+rep.WarmupCPU), conns)
					checkOps(t, cfg, rep, n, 2)
					if warmed != 1 || rep.Warmup < warmup {
						t.Errorf("%s: Warmed %d times, the warm-up took %v of %v", exp, warmed, rep.Warmup, warmup)
					}
					switch {
					case exp == "pool" && conns != 2:
						t.Errorf("pool of 2 opened %d connections", conns)
					case exp == "connect" && warmup == 0 && conns != n:
						t.Errorf("connect without a warm-up: %d operations, %d connections", n, conns)
					case exp == "connect" && warmup > 0 && (rep.Extra.Min == 0 || rep.Extra != exactly(rep.Extra.Min) || conns != n+rep.Extra.Min):
						t.Errorf("connect with a warm-up: %d operations and the warm-up's %+v, the server counted %d connections", n, rep.Extra, conns)
					case (exp == "pool" || warmup == 0) && rep.Extra != exactly(0):
						t.Errorf("%s, warm-up %v: the run says it opened %+v besides its connections", exp, warmup, rep.Extra)
					}
				}
			}
		})
	}
}
