package bench_test

// Tests of the Runner's own logic (interleaving, progress, the failure
// policy, counts shared across workers, the pool's reopen) with a stand-in
// driver: a fake of tlsbench's own driver seam, not of any server. Its
// sessions run over real loopback TCP connections to a listener that only
// accepts, so that the Runner's phase and byte accounting has a real
// netx.Conn to read; every operation's outcome is scripted.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// script decides the outcome of the nth Open and the nth Do (from 1,
// counted over every session of a stand-in driver); nil succeeds.
type script struct {
	open, do func(n int64) error
}

type standIn struct {
	addr          string
	script        script
	opens, dos    atomic.Int64
	closes, alive atomic.Int64
}

func (d *standIn) Open(ctx context.Context) (driver.Session, error) {
	if f := d.script.open; f != nil {
		if err := f(d.opens.Add(1)); err != nil {
			return nil, &driver.OpError{Phase: netx.PhaseTCP, Err: err}
		}
	} else {
		d.opens.Add(1)
	}
	c, err := (&netx.Dialer{}).Dial(ctx, d.addr)
	if err != nil {
		return nil, err
	}
	d.alive.Add(1)
	return &standInSession{d: d, c: c}, nil
}

type standInSession struct {
	d      *standIn
	c      *netx.Conn
	closed bool
}

func (s *standInSession) Do(context.Context) error {
	n := s.d.dos.Add(1)
	if f := s.d.script.do; f != nil {
		if err := f(n); err != nil {
			return &driver.OpError{Phase: "query", Err: err}
		}
	}
	return nil
}

func (s *standInSession) Close() error {
	if !s.closed {
		s.closed = true
		s.d.closes.Add(1)
		s.d.alive.Add(-1)
	}
	return s.c.Close()
}

func (s *standInSession) Conn() *netx.Conn                 { return s.c }
func (s *standInSession) TLS() (tls.ConnectionState, bool) { return tls.ConnectionState{}, false }

// acceptor is a loopback listener that accepts and holds connections.
func acceptor(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// standInRunner is a Runner for raw (a built-in target, so that plan.New
// accepts it) whose variants all get d. A pool's warm-up is 1 ns unless raw
// sets one: the default second per pool trial is for servers, and these
// tests are about the Runner's logic, in milliseconds. The Runner is
// Untuned: the runtime's knobs are the figures', and process-wide; tests of
// them set Untuned false.
func standInRunner(t testing.TB, raw plan.Spec, d *standIn) *bench.Runner {
	t.Helper()
	raw.Target = plan.Builtin
	if raw.Warmup == nil {
		raw.Warmup = new(time.Nanosecond)
	}
	spec, err := plan.New(raw)
	if err != nil {
		t.Fatal(err)
	}
	vs := spec.Variants()
	cfgs := map[string]driver.Config{}
	for _, v := range vs {
		cfgs[v.ID] = driver.Config{Variant: v, Timeout: time.Second}
	}
	return &bench.Runner{Spec: spec, Variants: vs, Scheme: "stand-in", Configs: cfgs,
		NewDriver: func(string, driver.Config) (driver.Driver, error) { return d, nil }, Untuned: true}
}

var errScripted = errors.New("scripted failure")

// TestRunnerInterleaves checks the order of Run: rounds outermost, then
// experiments, concurrencies and variants (A B C A B C ...), each trial
// with its round number, and progress counted to the planned total.
func TestRunnerInterleaves(t *testing.T) {
	d := &standIn{addr: acceptor(t)}
	r := standInRunner(t, plan.Spec{Experiments: []plan.Experiment{plan.Connect, plan.Pool}, TLS: []string{"off", "1.2", "1.3"},
		Keys: []string{"ecdsa-p256"}, Concurrency: []int{1, 2}, Count: 4, Trials: 3}, d)
	var got []string
	var dones []int
	r.Done = func(tr result.Trial, done, total int) {
		if total != r.Total() {
			t.Errorf("progress total %d, want %d", total, r.Total())
		}
		got = append(got, strings.Join([]string{string(rune('0' + tr.Round)), string(tr.Experiment), plan.Label(tr.Concurrency), tr.Variant}, " "))
		dones = append(dones, done)
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var want []string
	for round := range 3 {
		for _, e := range []string{"connect", "pool"} {
			for _, c := range []string{"c=1", "c=2"} {
				for _, v := range []string{"plain", "tls1.2 ecdsa-p256", "tls1.3 ecdsa-p256"} {
					want = append(want, strings.Join([]string{string(rune('0' + round)), e, c, v}, " "))
				}
			}
		}
	}
	if r.Total() != len(want) || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Total %d; trials in this order:\n%s\nwant:\n%s", r.Total(), strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i, n := range dones {
		if n != i+1 {
			t.Fatalf("progress %v, want 1, 2, 3, ...", dones)
		}
	}
	if n := d.alive.Load(); n != 0 {
		t.Errorf("%d sessions left open", n)
	}
}

// TestRunnerCount checks that -n is shared by all workers: a connect trial
// at c=4 of 103 operations makes exactly 103 connections, a pool trial 103
// operations over 4 connections.
func TestRunnerCount(t *testing.T) {
	for _, e := range []plan.Experiment{plan.Connect, plan.Pool} {
		d := &standIn{addr: acceptor(t)}
		r := standInRunner(t, plan.Spec{Experiments: []plan.Experiment{e}, TLS: []string{"off"}, Concurrency: []int{4}, Count: 103, Warmup: new(time.Nanosecond)}, d)
		tr, err := r.Trial(context.Background(), e, r.Variants[0], 4)
		if err != nil {
			t.Fatal(err)
		}
		conns := map[plan.Experiment]int64{plan.Connect: 103, plan.Pool: 4}[e]
		if tr.Ops != 103 || tr.Conns != conns {
			t.Errorf("%s: %d ops on %d connections, want 103 on %d", e, tr.Ops, tr.Conns, conns)
		}
	}
}

// TestRunnerPrimesResumption: a resuming variant's trial opens one
// connection, and runs one operation on it, before its own, unrecorded,
// so that it starts with a session cached; a full-handshake variant's
// does not.
func TestRunnerPrimesResumption(t *testing.T) {
	for _, resume := range []bool{true, false} {
		d := &standIn{addr: acceptor(t)}
		r := standInRunner(t, plan.Spec{TLS: []string{"1.3"}, Resume: []bool{resume}, Count: 10}, d)
		tr, err := r.Trial(context.Background(), plan.Connect, r.Variants[0], 1)
		if err != nil {
			t.Fatal(err)
		}
		primed := map[bool]int64{true: 1, false: 0}[resume]
		if tr.Ops != 10 || tr.Conns != 10 || d.opens.Load() != 10+primed || d.dos.Load() != 10+primed || d.alive.Load() != 0 {
			t.Errorf("resume %v: trial of %d ops on %d connections; the driver saw %d opens, %d operations, %d left open; want 10, 10, %d, %d, 0", resume, tr.Ops, tr.Conns, d.opens.Load(), d.dos.Load(), d.alive.Load(), 10+primed, 10+primed)
		}
	}
}

// TestRunnerFailurePolicy covers what a failing server meets: a worker
// stops after 50 failures in a row (a dead server is not hammered), a
// success in between resets that count, the share of failures decides
// whether the trial fails the run (--max-error-rate), a worker that gave
// up before the trial's end (50 failures in a row, a session it could not
// reopen) fails it whatever the share, the first message of each kind is
// kept, and a panic in a driver fails the trial, not the process.
func TestRunnerFailurePolicy(t *testing.T) {
	tests := []struct {
		name    string
		e       plan.Experiment
		rate    float64
		count   int64
		script  script
		opens   int64  // Opens the driver saw, -1 to skip
		ops     int64  // successful operations
		wantErr string // "" for none
	}{
		{"dead server: 50 in a row", plan.Connect, 0.05, 1000,
			script{open: func(int64) error { return errScripted }}, 50, 0, "every operation failed, the first with: tcp: scripted failure"},
		{"a success resets the run", plan.Connect, 1, 150,
			script{open: func(n int64) error {
				if n%50 == 0 {
					return nil
				}
				return errScripted
			}}, 150, 3, ""},
		{"within the rate", plan.Connect, 0.05, 100,
			script{do: func(n int64) error {
				if n%25 == 0 {
					return errScripted
				}
				return nil
			}}, 100, 96, ""},
		{"above the rate", plan.Connect, 0.05, 100,
			script{do: func(n int64) error {
				if n%10 == 0 {
					return errScripted
				}
				return nil
			}}, 100, 90, "10 of 100 operations failed (10.0%, above --max-error-rate 5%), most with query: other: query: scripted failure"},
		{"pool reopens a failed session", plan.Pool, 0.05, 100,
			script{do: func(n int64) error {
				if n == 10 {
					return errScripted
				}
				return nil
			}}, 2, 99, ""},
		{"pool: a session that cannot be reopened", plan.Pool, 0.5, 1000,
			script{open: func(n int64) error {
				if n > 1 {
					return errScripted
				}
				return nil
			}, do: func(n int64) error {
				if n == 30 {
					return errScripted
				}
				return nil
			}}, 2, 29, "a connection failed and could not be reopened before the trial's end (2 of 31 operations failed, the last with tcp: other: tcp: scripted failure)"},
		{"connect: 50 in a row after successes", plan.Connect, 0.5, 1000,
			script{open: func(n int64) error {
				if n > 100 {
					return errScripted
				}
				return nil
			}}, 150, 100, "50 operations in a row failed before the trial's end (50 of 150 operations failed, the last with tcp: other: tcp: scripted failure)"},
		{"a driver's panic", plan.Connect, 0.05, 100,
			script{do: func(n int64) error {
				if n == 7 {
					var s driver.Session
					s.Close()
				}
				return nil
			}}, -1, 6, "internal error at runner_test.go:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &standIn{addr: acceptor(t), script: tt.script}
			rate := tt.rate
			r := standInRunner(t, plan.Spec{Experiments: []plan.Experiment{tt.e}, TLS: []string{"off"}, Count: tt.count, Trials: 1, MaxErrorRate: &rate, Warmup: new(time.Nanosecond)}, d)
			var saved []result.Trial
			r.Done = func(tr result.Trial, _, _ int) { saved = append(saved, tr) }
			err := r.Run(context.Background())
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one with %q", err, tt.wantErr)
			}
			if tt.opens >= 0 && d.opens.Load() != tt.opens {
				t.Errorf("%d opens, want %d", d.opens.Load(), tt.opens)
			}
			if tt.wantErr == "" || bench.Kept(err) {
				// A trial that ran is kept, even one that failed the run.
				if len(saved) != 1 || saved[0].Ops != tt.ops {
					t.Fatalf("saved %d trials, ops %+v; want one with %d ops", len(saved), saved, tt.ops)
				}
				for kind := range saved[0].Errors {
					if !strings.HasSuffix(saved[0].ErrorSamples[kind], ": scripted failure") {
						t.Errorf("errors %v, samples %v: the first message of each kind is not kept", saved[0].Errors, saved[0].ErrorSamples)
					}
				}
			}
			if n := d.alive.Load(); n != 0 {
				t.Errorf("%d sessions left open", n)
			}
		})
	}
}

// TestRunnerCancel stops a trial in mid-run: the error is the context's,
// nothing is passed to Done, no session stays open.
func TestRunnerCancel(t *testing.T) {
	d := &standIn{addr: acceptor(t)}
	r := standInRunner(t, plan.Spec{Experiments: []plan.Experiment{plan.Pool}, TLS: []string{"off"}, Concurrency: []int{3}, Duration: time.Minute, Trials: 1, Warmup: new(time.Nanosecond)}, d)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	var trials int
	r.Done = func(result.Trial, int, int) { trials++ }
	start := time.Now()
	err := r.Run(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || trials != 0 {
		t.Errorf("error %v with %d trials; want the context's and none", err, trials)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("stopping took %v", took)
	}
	if n := d.alive.Load(); n != 0 {
		t.Errorf("%d sessions left open", n)
	}
}

// TestPoolChoosesWaitMode: with more connections than CPUs the pool tries
// each way of waiting in its warm-up, moving its connections between Go's
// poller and their threads, and keeps one: what a loaded machine keeps is
// that a mode is chosen and recorded, the trial runs its operations,
// moving a connection needs no new one, and GOMAXPROCS is restored.
// Whether it keeps the fastest (the stand-in's operations are quick only
// under the GOMAXPROCS of one mode) is BenchmarkPoolChoosesWaitMode's
// figure.
func TestPoolChoosesWaitMode(t *testing.T) {
	labtest.Slow(t)
	for _, tt := range waitModeCases(t) {
		t.Run(tt.want, func(t *testing.T) {
			tr, opens := waitModeTrial(t, tt.procs)
			if tr.ClientWait == "" || tr.Ops != waitModeOps || len(tr.Errors) > 0 {
				t.Errorf("waited %q with %d ops and errors %v, want a wait mode and %d ops", tr.ClientWait, tr.Ops, tr.Errors, waitModeOps)
			}
			if c := bench.UsableCPUs() + 2; opens != int64(c) {
				t.Errorf("%d sessions opened, want %d: moving a connection needs no new one", opens, c)
			}
		})
	}
}

// BenchmarkPoolChoosesWaitMode reports the share of warm-ups that kept
// the fastest wait mode (100 on an idle machine). make bench.
func BenchmarkPoolChoosesWaitMode(b *testing.B) {
	var right, all float64
	for range b.N {
		for _, tt := range waitModeCases(b) {
			if tr, _ := waitModeTrial(b, tt.procs); tr.ClientWait == tt.want {
				right++
			}
			all++
		}
	}
	b.ReportMetric(100*right/all, "%fastest")
}

const waitModeOps = 50

// waitModeCases are the GOMAXPROCS under which the stand-in is fast, and
// the wait mode that has it.
func waitModeCases(tb testing.TB) []struct {
	procs int
	want  string
} {
	c := bench.UsableCPUs() + 2
	if c > bench.MaxThreadWaits {
		tb.Skipf("%d CPUs: above %d connections the threads are not tried", c-2, bench.MaxThreadWaits)
	}
	return []struct {
		procs int
		want  string
	}{
		{1, "poller, 1 P"},
		{c + 1, fmt.Sprintf("locked thread, %d Ps", c+1)},
	}
}

// waitModeTrial runs a pool trial of waitModeOps operations on more
// connections than CPUs, with a stand-in that is quick only under procs,
// and returns it and the sessions opened; it checks that GOMAXPROCS is
// restored.
func waitModeTrial(tb testing.TB, procs int) (result.Trial, int64) {
	tb.Helper()
	c := bench.UsableCPUs() + 2
	d := &standIn{addr: acceptor(tb), script: script{do: func(int64) error {
		if runtime.GOMAXPROCS(0) != procs {
			time.Sleep(2 * time.Millisecond)
		}
		return nil
	}}}
	r := standInRunner(tb, plan.Spec{Experiments: []plan.Experiment{plan.Pool}, TLS: []string{"off"}, Concurrency: []int{c},
		Count: waitModeOps, Warmup: new(800 * time.Millisecond)}, d)
	r.Untuned = false // the wait probe is what is tested
	before := runtime.GOMAXPROCS(0)
	tr, err := r.Trial(context.Background(), plan.Pool, r.Variants[0], c)
	if err != nil {
		tb.Fatal(err)
	}
	if n := runtime.GOMAXPROCS(0); n != before {
		tb.Errorf("GOMAXPROCS %d after the trial, %d before", n, before)
	}
	return tr, d.opens.Load()
}

// TestPoolWarmupFailures: the warm-up's failed operations meet the trial's
// failure policy but are not the trial's. A session failing 1 operation in
// 5 used to stop its worker in the warm-up (50 failures, never reset by a
// success) and fail the run as "every operation failed"; now the trial
// runs and counts its own failures only, also while the warm-up tries its
// wait modes (more connections than CPUs). A warm-up above
// --max-error-rate, or in which every operation failed, still fails.
func TestPoolWarmupFailures(t *testing.T) {
	labtest.Slow(t)
	const warmup = 600 * time.Millisecond
	c := bench.UsableCPUs() + 2
	tests := []struct {
		name    string
		rate    float64
		failing func(n int64, warm bool) bool
		wantErr []string // parts of the error, in order; none for no error
	}{
		{"1 in 5 fail, 100%", 1, func(n int64, _ bool) bool { return n%5 == 0 }, nil},
		{"1 in 5 fail in the warm-up only, 100%", 1, func(n int64, warm bool) bool { return warm && n%5 == 0 }, nil},
		{"1 in 5 fail in the warm-up only, 5%", 0.05, func(n int64, warm bool) bool { return warm && n%5 == 0 },
			[]string{"operations of the warm-up failed (", "above --max-error-rate 5%), most with query: other: query: scripted failure"}},
		{"every warm-up operation fails", 1, func(_ int64, warm bool) bool { return warm },
			[]string{"every operation of the warm-up failed, the first with: query: scripted failure"}},
	}
	for _, tt := range tests {
		for _, rate := range []float64{0, 4000} { // closed loop, open loop
			name := tt.name
			if rate > 0 {
				name += ", --rate"
			}
			t.Run(name, func(t *testing.T) {
				var warmEnd atomic.Int64
				d := &standIn{addr: acceptor(t), script: script{do: func(n int64) error {
					time.Sleep(50 * time.Microsecond) // a pace the probe can count
					if tt.failing(n, time.Now().UnixNano() < warmEnd.Load()) {
						return errScripted
					}
					return nil
				}}}
				maxRate := tt.rate
				raw := plan.Spec{Experiments: []plan.Experiment{plan.Pool}, TLS: []string{"off"}, Concurrency: []int{c}, Count: 200,
					Trials: 1, MaxErrorRate: &maxRate, Warmup: new(warmup)}
				if rate > 0 {
					raw.Rates = []float64{rate}
				}
				r := standInRunner(t, raw, d)
				r.Untuned = false // with the wait probe's modes
				var saved []result.Trial
				r.Done = func(tr result.Trial, _, _ int) { saved = append(saved, tr) }
				procs := runtime.GOMAXPROCS(0)
				warmEnd.Store(time.Now().Add(warmup).UnixNano()) // within ms of the pool's own
				err := r.Run(context.Background())
				if msg := fmt.Sprint(err); (err != nil) != (tt.wantErr != nil) || !containsInOrder(msg, tt.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tt.wantErr)
				}
				if n := d.alive.Load(); n != 0 {
					t.Errorf("%d sessions left open", n)
				}
				if n := runtime.GOMAXPROCS(0); n != procs {
					t.Errorf("GOMAXPROCS %d after the trial, %d before", n, procs)
				}
				var many *bench.TooManyErrors
				if err != nil && !errors.As(err, &many) {
					return
				}
				if len(saved) != 1 {
					t.Fatalf("saved %d trials, want 1", len(saved))
				}
				tr := saved[0]
				var failed int64
				for _, n := range tr.Errors {
					failed += n
				}
				// The trial's 200 operations (less the arrivals an open
				// loop dropped) fail 1 in 5 or none; its own count, not the
				// warm-up's thousands.
				want := [2]int64{0, 0}
				if tt.failing(5, false) {
					want = [2]int64{25, 50}
				}
				all := tr.Ops + failed
				if tr.Open != nil {
					all += tr.Open.Dropped
				}
				if all != 200 || failed < want[0] || failed > want[1] || (rate == 0) == (tr.ClientWait == "") {
					t.Errorf("%d operations, %d failed (%v), waited %q; want 200 in all, %d to %d failed, and a wait mode in a closed loop", tr.Ops, failed, tr.Errors, tr.ClientWait, want[0], want[1])
				}
			})
		}
	}
}

// containsInOrder reports whether s holds each of parts, in order.
func containsInOrder(s string, parts []string) bool {
	for _, p := range parts {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return true
}

// TestCheckTriesAgain: where --max-error-rate lets operations fail, the
// check tries a pass the server answered with an error again (a script
// that fails now and then must not fail the run at random), up to 5
// passes; a failed connection, or a run that allows no failure, ends it
// at the first.
func TestCheckTriesAgain(t *testing.T) {
	none := 0.0
	tests := []struct {
		name    string
		rate    *float64
		fail    error
		failing int64 // the first passes that fail
		ok      bool
		passes  int64
	}{
		{"answered, then a success", nil, errScripted, 3, true, 4},
		{"answered every time", nil, errScripted, 99, false, 5},
		{"no failure allowed", &none, errScripted, 1, false, 1},
		{"connection reset", nil, syscall.ECONNRESET, 1, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &standIn{addr: acceptor(t), script: script{do: func(n int64) error {
				if n <= tt.failing {
					return tt.fail
				}
				return nil
			}}}
			r := standInRunner(t, plan.Spec{TLS: []string{"off"}, MaxErrorRate: tt.rate}, d)
			_, err := r.Check(context.Background())
			if (err == nil) != tt.ok || d.dos.Load() != tt.passes {
				t.Errorf("check: %v after %d passes; want ok %v after %d", err, d.dos.Load(), tt.ok, tt.passes)
			}
		})
	}
}
