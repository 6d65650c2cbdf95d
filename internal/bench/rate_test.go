package bench_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/tlsx"
	"github.com/tlsbench/tlsbench/internal/wire"
)

// rateRunner is a Runner of raw against addr (the shared built-in server's
// listener of a variant, unless addr gives another), with the intended
// start of every arrival passed to arrived.
func rateRunner(t testing.TB, raw plan.Spec, addr func(plan.Variant) string, arrived func(time.Time)) *bench.Runner {
	t.Helper()
	labtest.Slow(t)
	raw.Target = plan.Builtin
	spec, err := plan.New(raw)
	if err != nil {
		t.Fatal(err)
	}
	if addr == nil {
		addr = func(v plan.Variant) string { return srv.Endpoint(v.Key) }
	}
	at := func(v plan.Variant) (bench.Endpoint, error) {
		return bench.Endpoint{Addr: addr(v), Host: "127.0.0.1"}, nil
	}
	cfgs, err := bench.Configs(spec, spec.Variants(), at, tlsx.ClientOptions{RootCAs: srv.RootCAs(), ALPN: []string{"http/1.1"}}, &netx.Dialer{Sources: netx.LoopbackSources(4)})
	if err != nil {
		t.Fatal(err)
	}
	r := &bench.Runner{Spec: spec, Variants: spec.Variants(), Scheme: "builtin", Configs: cfgs}
	if arrived != nil {
		bench.SetArrived(r, arrived)
	}
	return r
}

// TestRateArrivals runs connect at 200 new connections/s for 2 s, plain
// and TLS 1.3, with each process, and checks the open loop's accounting,
// which holds however loaded the machine: every arrival the schedule had
// due was dispatched or counted as not sent, every one dispatched started
// or was dropped (found the slots full), every one started ended in an
// operation or a failure, each with its latency from its intended start
// (never below its service time) and its schedule lag; the rate achieved
// is the started ones per second; the gaps between intended starts are
// those of the process (uniform: constant; poisson: exponential, whose
// coefficient of variation is 1). How close the achieved rate comes to
// the offered one is BenchmarkRateArrivals' figure (make bench).
func TestRateArrivals(t *testing.T) {
	const rate, d = 200.0, 2 * time.Second
	for _, process := range []string{plan.ArrivalsUniform, plan.ArrivalsPoisson} {
		for _, tlsMode := range []string{"off", "1.3"} {
			t.Run(process+"/"+tlsMode, func(t *testing.T) {
				var starts []time.Time
				tr, s := rateTrial(t, tlsMode, process, rate, d, func(at time.Time) { starts = append(starts, at) })
				o := tr.Open
				var failed int64
				for _, n := range tr.Errors {
					failed += n
				}
				if s.Due < o.Arrivals || o.Arrivals != s.Started+o.Dropped || s.Started != tr.Ops+failed || s.Lag.Count != s.Started {
					t.Errorf("%d due, %d dispatched, %d started, %d dropped, %d ops, %d failed, %d lags: want due ≥ dispatched = started + dropped, started = ops + failed = lags",
						s.Due, o.Arrivals, s.Started, o.Dropped, tr.Ops, failed, s.Lag.Count)
				}
				if math.Abs(o.Achieved()-float64(s.Started)/d.Seconds()) > 1e-9 {
					t.Errorf("achieved %.1f/s: %d started in %v", o.Achieved(), s.Started, o.Window)
				}
				if failed != 0 {
					t.Errorf("errors %v", tr.Errors)
				}
				// The schedule's count: rate × d for uniform arrivals,
				// a Poisson count (σ = √400 = 20) within 4σ for poisson.
				want, slack := rate*d.Seconds(), 1.0
				if process == plan.ArrivalsPoisson {
					slack = 4 * math.Sqrt(want)
				}
				if math.Abs(float64(s.Due)-want) > slack {
					t.Errorf("%d arrivals due in %v at %v/s", s.Due, d, rate)
				}
				if o.Arrivals != int64(len(starts)) || tr.Latency.Count != tr.Ops || o.Service.Count != tr.Ops {
					t.Errorf("%d arrivals, %d intended starts seen, %d ops, %d latencies, %d service times", o.Arrivals, len(starts), tr.Ops, tr.Latency.Count, o.Service.Count)
				}
				// Latency is charged from the intended start: each is its
				// service time plus the wait before it, so every quantile
				// is at least the service time's.
				if tr.Latency.P50 < o.Service.P50 || tr.Latency.P99 < o.Service.P99 || tr.Latency.Max < o.Service.Max {
					t.Errorf("latency from the intended start p50/p99/max %.3f/%.3f/%.3f ms below the service time's %.3f/%.3f/%.3f ms",
						tr.Latency.P50, tr.Latency.P99, tr.Latency.Max, o.Service.P50, o.Service.P99, o.Service.Max)
				}
				if (tlsMode != "off") != (tr.Negotiated != nil) {
					t.Errorf("negotiated %+v for TLS %s", tr.Negotiated, tlsMode)
				}
				cv := gapCV(starts)
				t.Logf("%d due, %d started, achieved %.1f/s, lag p99 %.2f ms (%d over 10 ms), latency p99 %.2f ms, service p99 %.2f ms, gap CV %.5f",
					s.Due, s.Started, o.Achieved(), s.Lag.P99, s.Late10ms, tr.Latency.P99, o.Service.P99, cv)
				switch process {
				case plan.ArrivalsUniform:
					if cv > 0.01 {
						t.Errorf("uniform gaps vary: coefficient of variation %.3f", cv)
					}
				case plan.ArrivalsPoisson:
					// 400 exponential gaps: CV's standard error is ~0.05.
					if cv < 0.8 || cv > 1.2 {
						t.Errorf("poisson gaps' coefficient of variation %.3f, want about 1", cv)
					}
				}
			})
		}
	}
}

// rateTrial runs one connect trial at rate for d against the shared
// server, with each intended start passed to arrived (nil: none).
func rateTrial(tb testing.TB, tlsMode, process string, rate float64, d time.Duration, arrived func(time.Time)) (result.Trial, *result.Schedule) {
	tb.Helper()
	raw := plan.Spec{TLS: []string{tlsMode}, Keys: []string{"ecdsa-p256"}, Rates: []float64{rate}, Arrivals: process, Duration: d}
	r := rateRunner(tb, raw, nil, arrived)
	tr, err := r.TrialAt(context.Background(), plan.Connect, r.Variants[0], r.Spec.MaxInflight, 1, rate)
	if err != nil {
		tb.Fatal(err)
	}
	if tr.Open == nil || tr.Open.Schedule == nil {
		tb.Fatalf("no open-loop or schedule figures: %+v", tr.Open)
	}
	return tr, tr.Open.Schedule
}

// BenchmarkRateArrivals is the accuracy TestRateArrivals does not assert:
// at 200 new connections/s for 2 s (uniform, plain and TLS 1.3), the share
// of the arrivals due that started, the share dropped, the share started
// over 10 ms late and the schedule lag's p99. Run it on an idle machine:
// make bench.
func BenchmarkRateArrivals(b *testing.B) {
	const rate, d = 200.0, 2 * time.Second
	for _, tlsMode := range []string{"off", "1.3"} {
		b.Run("tls-"+tlsMode, func(b *testing.B) {
			var started, due, dropped, late, lag float64
			for range b.N {
				tr, s := rateTrial(b, tlsMode, plan.ArrivalsUniform, rate, d, nil)
				started += float64(s.Started)
				due += float64(s.Due)
				dropped += float64(tr.Open.Dropped)
				late += float64(s.Late10ms)
				lag = max(lag, s.Lag.P99)
			}
			b.ReportMetric(100*started/due, "%started")
			b.ReportMetric(100*dropped/due, "%dropped")
			b.ReportMetric(100*late/max(started, 1), "%late10ms")
			b.ReportMetric(lag, "lag-p99-ms")
		})
	}
}

// gapCV is the coefficient of variation of the gaps between starts.
func gapCV(starts []time.Time) float64 {
	var sum, sq float64
	n := float64(len(starts) - 1)
	for i := 1; i < len(starts); i++ {
		g := starts[i].Sub(starts[i-1]).Seconds()
		sum += g
		sq += g * g
	}
	mean := sum / n
	return math.Sqrt(sq/n-mean*mean) / mean
}

// TestRateStall runs pool on one connection at 200 requests/s through a
// relay that holds everything for 200 ms once, at the 100th arrival: the
// arrivals queued behind the stall are charged for it from their intended
// start (p99 ≥ 150 ms, the worst ≥ 200 ms), while their service times,
// all but the one request caught in the stall, are not (p99 < 50 ms), nor
// are their schedule lags (they were queued on time).
func TestRateStall(t *testing.T) {
	labtest.Slow(t)
	relay := stallRelay(t, srv.Endpoint(""))
	var n atomic.Int64
	zero := time.Duration(0)
	raw := plan.Spec{Experiments: []plan.Experiment{plan.Pool}, TLS: []string{"off"}, Rates: []float64{200}, Arrivals: plan.ArrivalsUniform, Duration: 2 * time.Second, Warmup: &zero}
	r := rateRunner(t, raw, func(plan.Variant) string { return relay.addr }, func(time.Time) {
		if n.Add(1) == 100 {
			relay.stall(200 * time.Millisecond)
		}
	})
	tr, err := r.TrialAt(context.Background(), plan.Pool, r.Variants[0], 1, 1, 200)
	if err != nil {
		t.Fatal(err)
	}
	o := tr.Open
	t.Logf("latency p99 %.1f max %.1f ms; service p99 %.1f max %.1f ms", tr.Latency.P99, tr.Latency.Max, o.Service.P99, o.Service.Max)
	if o.Dropped != 0 || len(tr.Errors) != 0 {
		t.Errorf("%d dropped, errors %v", o.Dropped, tr.Errors)
	}
	if tr.Latency.P99 < 150 || tr.Latency.Max < 200 {
		t.Errorf("latency from the intended start: p99 %.1f ms, max %.1f ms; want the 200 ms stall in both", tr.Latency.P99, tr.Latency.Max)
	}
	if o.Service.P99 > 50 || o.Service.Max < 190 {
		t.Errorf("service time: p99 %.1f ms (want below 50), max %.1f ms (want the stalled request's ~200)", o.Service.P99, o.Service.Max)
	}
	// The arrivals queued behind the stall started on time: their wait
	// is queueing (in Latency), not the client's schedule lag.
	if s := o.Schedule; s == nil || s.Started != tr.Ops || s.Lag.Count != s.Started || s.Lag.Max > 150 {
		t.Errorf("schedule %+v, %d ops: want every operation started, none of the stall in the lag", s, tr.Ops)
	}
}

// relay passes connections to a server and can hold every byte sent to it
// for a while, as a server that stalls once.
type relay struct {
	addr  string
	mu    sync.Mutex
	until time.Time
}

func (r *relay) stall(d time.Duration) {
	r.mu.Lock()
	r.until = time.Now().Add(d)
	r.mu.Unlock()
}

func (r *relay) hold() {
	r.mu.Lock()
	until := r.until
	r.mu.Unlock()
	time.Sleep(time.Until(until))
}

func stallRelay(t *testing.T, target string) *relay {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				s, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer s.Close()
				go func() { io.Copy(c, s); c.Close() }()
				buf := make([]byte, 32<<10)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						r.hold()
						if _, err := s.Write(buf[:n]); err != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			})
		}
	})
	return r
}

// TestKnee searches connect's knee over TLS 1.3 on the built-in server,
// rsa4096 and ecdsa-p256, and checks the search, which holds however
// loaded the machine: each variant runs steps until one is over the SLO
// twice in a row (the step and its repeat; none after it), a step over it
// once is repeated before the search moves on, and a search that never
// broke reached the last step. Which key sustains the higher rate (rsa4096's
// signature costs ~10× ecdsa-p256's) is BenchmarkKnee's figure. The
// search's rules hold at any step length: 500 ms steps, not 2 s.
func TestKnee(t *testing.T) {
	knees(t, 500*time.Millisecond)
}

// BenchmarkKnee reports connect's knee over TLS 1.3 on the built-in
// server per key (new connections/s within a 250 ms p99): rsa4096's is
// lower than ecdsa-p256's on an idle machine. make bench.
func BenchmarkKnee(b *testing.B) {
	for range b.N {
		k := knees(b, 2*time.Second)
		b.ReportMetric(k["tls1.3 rsa4096"], "rsa4096-conn/s")
		b.ReportMetric(k["tls1.3 ecdsa-p256"], "ecdsa-p256-conn/s")
	}
}

// knees runs the knee search of TestKnee with steps of d, checks it and
// returns the knee of each variant.
func knees(t testing.TB, d time.Duration) map[string]float64 {
	t.Helper()
	slo := 250 * time.Millisecond
	res := run(t, plan.Spec{TLS: []string{"1.3"}, Keys: []string{"rsa4096", "ecdsa-p256"}, Knee: &plan.Knee{From: 10, To: 2560, Factor: 2}, SLO: slo, Duration: d})
	knee := map[string]float64{}
	for _, id := range []string{"tls1.3 rsa4096", "tls1.3 ecdsa-p256"} {
		var steps []string
		broke, overAt := false, 0.0
		for _, tr := range res.Trials {
			if tr.Variant != id {
				continue
			}
			if broke {
				t.Errorf("%s: a trial at %v/s after the SLO broke", id, tr.Open.Offered)
			}
			why := tr.OverSLO(slo)
			steps = append(steps, fmt.Sprintf("%v/s p99 %.1f ms %s", tr.Open.Offered, tr.Latency.P99, why))
			switch {
			case why != "" && overAt == tr.Open.Offered:
				broke = true // over twice: the step and its repeat
			case why != "":
				overAt = tr.Open.Offered
			case overAt != 0 && overAt != tr.Open.Offered:
				t.Errorf("%s: a step over the SLO at %v/s was not repeated", id, overAt)
				overAt = 0
			default:
				knee[id] = max(knee[id], tr.Open.Offered)
				overAt = 0 // a repeat within the SLO: the search goes on
			}
		}
		t.Logf("%s: %s", id, strings.Join(steps, "; "))
		if !broke && knee[id] < 2560 {
			t.Errorf("%s: the search stopped at %v/s with the SLO kept", id, knee[id])
		}
	}
	t.Logf("knee rsa4096 %v/s, ecdsa-p256 %v/s", knee["tls1.3 rsa4096"], knee["tls1.3 ecdsa-p256"])
	return knee
}

// TestRatePerConn: at a rate with --per-conn 3, an arrival is a new
// connection running 3 requests: operations are three times the
// connections, and the latencies count arrivals.
func TestRatePerConn(t *testing.T) {
	raw := plan.Spec{TLS: []string{"1.3"}, Keys: []string{"ecdsa-p256"}, Rates: []float64{50}, Arrivals: plan.ArrivalsUniform, PerConn: []int{3}, Duration: time.Second}
	r := rateRunner(t, raw, nil, nil)
	tr, err := r.TrialAt(context.Background(), plan.Connect, r.Variants[0], r.Spec.MaxInflight, 3, 50)
	if err != nil {
		t.Fatal(err)
	}
	o := tr.Open
	if o.Dropped != 0 || len(tr.Errors) != 0 || tr.PerConn != 3 {
		t.Fatalf("%d dropped, errors %v, per_conn %d", o.Dropped, tr.Errors, tr.PerConn)
	}
	if tr.Conns != o.Arrivals || tr.Ops != 3*o.Arrivals || tr.Latency.Count != o.Arrivals || o.Service.Count != o.Arrivals || o.Arrivals < 45 {
		t.Errorf("%d arrivals: %d connections, %d ops, %d latencies, %d service times", o.Arrivals, tr.Conns, tr.Ops, tr.Latency.Count, o.Service.Count)
	}
}

// TestRateLateSchedule holds the generator up (the stand-in driver's
// test seam: the arrival hook runs on the dispatcher) for 35 ms at four of
// the arrivals of a uniform 50/s schedule, so that each held arrival
// starts ≥ 35 ms late and the next (due 20 ms later) ≥ 15 ms late: the
// result counts every arrival that started (as many as the driver
// opened), its achieved rate is those per second of the window, and the
// lag distribution has them: ≥ 8 arrivals over 10 ms late, as many as the
// driver's own clock saw, a max ≥ 35 ms and a p99 over 10 ms.
func TestRateLateSchedule(t *testing.T) {
	labtest.Slow(t)
	const rate, hold = 50.0, 35 * time.Millisecond
	var mu sync.Mutex
	var opens, intended []time.Time
	d := &standIn{addr: acceptor(t), script: script{open: func(int64) error {
		mu.Lock()
		opens = append(opens, time.Now())
		mu.Unlock()
		return nil
	}}}
	raw := plan.Spec{Rates: []float64{rate}, Arrivals: plan.ArrivalsUniform, Duration: 2 * time.Second, TLS: []string{"off"}}
	r := standInRunner(t, raw, d)
	holds := 0
	bench.SetArrived(r, func(at time.Time) {
		intended = append(intended, at)
		if len(intended)%25 == 10 {
			holds++
			time.Sleep(hold)
		}
	})
	tr, err := r.TrialAt(context.Background(), plan.Connect, r.Variants[0], r.Spec.MaxInflight, 1, rate)
	if err != nil {
		t.Fatal(err)
	}
	o := tr.Open
	if o == nil || o.Schedule == nil {
		t.Fatalf("open loop %+v: no schedule", o)
	}
	s := o.Schedule
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d due, %d arrivals, %d started, %d opened in %v: achieved %.2f/s; lag mean %.2f p99 %.2f max %.2f ms, %d over 1 ms, %d over 10 ms",
		s.Due, o.Arrivals, s.Started, len(opens), o.Window, o.Achieved(), s.Lag.Mean, s.Lag.P99, s.Lag.Max, s.Late1ms, s.Late10ms)
	if holds != 4 {
		t.Fatalf("%d holds, want 4 (%d arrivals)", holds, len(intended))
	}
	if o.Dropped != 0 || len(tr.Errors) != 0 {
		t.Errorf("%d dropped, errors %v", o.Dropped, tr.Errors)
	}
	// What reached the server: every arrival dispatched, each opened once.
	if s.Started != int64(len(opens)) || s.Started != o.Arrivals || o.Arrivals != int64(len(intended)) || s.Due != o.Arrivals || s.Lag.Count != s.Started {
		t.Errorf("%d due, %d dispatched, %d started, %d lags; the driver opened %d, the schedule had %d", s.Due, o.Arrivals, s.Started, s.Lag.Count, len(opens), len(intended))
	}
	if want := float64(len(opens)) / o.Window.Seconds(); math.Abs(o.Achieved()-want) > 1e-9 {
		t.Errorf("achieved %.4f/s, the driver opened %d in %v: %.4f/s", o.Achieved(), len(opens), o.Window, want)
	}
	// The driver's own clock: the opens in order against the intended
	// starts in order (arrivals of one batch may open in either order,
	// both late).
	var late10 int64
	slices.SortFunc(opens, time.Time.Compare)
	for i := range min(len(opens), len(intended)) {
		if opens[i].Sub(intended[i]) > 10*time.Millisecond {
			late10++
		}
	}
	if s.Late10ms < 2*int64(holds) || s.Late1ms < s.Late10ms || s.Late1ms > s.Started {
		t.Errorf("%d arrivals over 1 ms late, %d over 10 ms: want at least %d over 10 ms", s.Late1ms, s.Late10ms, 2*holds)
	}
	if math.Abs(float64(s.Late10ms-late10)) > 2 {
		t.Errorf("%d arrivals over 10 ms late; the driver saw %d", s.Late10ms, late10)
	}
	if s.Lag.Max < float64(hold)/1e6 || s.Lag.P99 <= 10 || s.Lag.Mean < float64(holds)*50/float64(s.Started) {
		t.Errorf("lag mean %.2f p99 %.2f max %.2f ms: want the holds' (max ≥ 35, p99 > 10)", s.Lag.Mean, s.Lag.P99, s.Lag.Max)
	}
	// Late, but charged: each arrival's latency counts from its intended
	// start, so the worst is at least the hold.
	if tr.Latency.Max < float64(hold)/1e6 {
		t.Errorf("latency max %.2f ms below the %v hold", tr.Latency.Max, hold)
	}
	if why := o.Behind(); why == "" {
		t.Errorf("a schedule with %d of %d arrivals over 10 ms late is not reported as behind", s.Late10ms, s.Started)
	}
}

// TestRateWire captures a poisson connect run at 100/s on loopback, its
// generator held up for 40 ms four times, and counts its connections on
// the wire, one SYN each: they are the result's
// arrivals that started, all within the window stretched by the largest
// lag; the achieved rate is their count per second of the window, and the
// rate the server saw within the window itself (late arrivals may pass its
// end) is the achieved rate within 5%; the SYNs over 10 ms behind their
// intended starts are about the result's count of such late arrivals. A poisson schedule's count varies around
// offered × window (σ = √200 here), and achieved follows the count, not
// the offered rate.
func TestRateWire(t *testing.T) {
	labtest.Slow(t)
	if _, err := exec.LookPath("tcpdump"); err != nil && os.Getenv("CI") != "" {
		t.Fatal("tcpdump is not installed: run scripts/install.sh")
	}
	const rate, d = 100.0, 2 * time.Second
	addr := srv.Endpoint("")
	_, p, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(p)
	file := filepath.Join(t.TempDir(), "rate.pcap")
	live, err := wire.StartLive(context.Background(), wire.LiveOptions{Interface: "lo", Ports: []int{port}, File: file})
	var perm *wire.PermissionError
	if errors.As(err, &perm) && os.Getenv("CI") == "" {
		t.Skip(err) // CI runs as root
	}
	if err != nil {
		t.Fatal(err)
	}
	defer live.Stop()
	raw := plan.Spec{TLS: []string{"off"}, Rates: []float64{rate}, Arrivals: plan.ArrivalsPoisson, Duration: d}
	var intended []time.Time
	r := rateRunner(t, raw, nil, func(at time.Time) {
		intended = append(intended, at)
		if len(intended)%50 == 25 {
			time.Sleep(40 * time.Millisecond) // the generator held up: late arrivals
		}
	})
	tr, err := r.TrialAt(context.Background(), plan.Connect, r.Variants[0], r.Spec.MaxInflight, 1, rate)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the last segments reach the capture
	st, err := live.Stop()
	if err != nil {
		t.Fatal(err)
	}
	o := tr.Open
	s := o.Schedule
	end := tr.Start.Add(o.Window)
	var syns, inWindow int64
	var times []time.Time
	for _, ts := range synTimes(t, file, port) {
		if ts.Before(tr.Start) || ts.After(end.Add(time.Duration(s.Lag.Max*1e6)+100*time.Millisecond)) {
			continue // another test's, or none
		}
		syns++
		times = append(times, ts)
		if ts.Before(end) {
			inWindow++
		}
	}
	wireRate := float64(inWindow) / o.Window.Seconds()
	// The wire's lag: each SYN against the intended start of the same
	// rank (arrivals sent together may swap, all of them late).
	slices.SortFunc(times, time.Time.Compare)
	var wireLate10 int64
	for i := range min(len(times), len(intended)) {
		if times[i].Sub(intended[i]) > 10*time.Millisecond {
			wireLate10++
		}
	}
	t.Logf("capture %+v; %d started (%d due), achieved %.2f/s, lag p99 %.2f max %.2f ms, %d over 10 ms; the wire: %d SYNs, %d in the window, %.2f/s, %d over 10 ms late",
		st, s.Started, s.Due, o.Achieved(), s.Lag.P99, s.Lag.Max, s.Late10ms, syns, inWindow, wireRate, wireLate10)
	if o.Dropped != 0 || len(tr.Errors) != 0 {
		t.Errorf("%d dropped, errors %v", o.Dropped, tr.Errors)
	}
	switch {
	case st.Dropped == 0 && syns != s.Started:
		t.Errorf("the wire has %d SYNs, the result %d arrivals started", syns, s.Started)
	case st.Dropped > 0 && (syns > s.Started || syns+st.Dropped < s.Started):
		t.Errorf("the wire has %d SYNs (%d packets dropped by the capture), the result %d arrivals started", syns, st.Dropped, s.Started)
	}
	// The achieved rate is the wire's count per second of the window
	// (not the offered 100/s: the schedule's count was its own).
	if st.Dropped == 0 && math.Abs(o.Achieved()*o.Window.Seconds()-float64(syns)) > 0.5 {
		t.Errorf("achieved %.2f/s over %v, the wire had %d SYNs", o.Achieved(), o.Window, syns)
	}
	if st.Dropped == 0 && math.Abs(o.Achieved()-wireRate) > 0.05*wireRate {
		t.Errorf("achieved %.2f/s, the wire %.2f/s", o.Achieved(), wireRate)
	}
	// The wire sees each SYN a little after its dial began (the socket's
	// setup), so an arrival near 10 ms late may count on one side only.
	if slack := 2 + s.Started/50; st.Dropped == 0 && (s.Late10ms < 4 || wireLate10 < s.Late10ms-slack || wireLate10 > s.Late10ms+slack) {
		t.Errorf("%d arrivals over 10 ms late, the wire's SYNs %d", s.Late10ms, wireLate10)
	}
}

// synTimes lists when each connection to port in a pcap file opened: its
// first SYN (a retransmitted one is the same connection).
func synTimes(t *testing.T, path string, port int) []time.Time {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var out []time.Time
	for {
		data, ci, err := rd.ReadPacketData()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		pkt := gopacket.NewPacket(data, rd.LinkType(), gopacket.Default)
		tcp, _ := pkt.Layer(layers.LayerTypeTCP).(*layers.TCP)
		if tcp == nil || pkt.NetworkLayer() == nil || !tcp.SYN || tcp.ACK || int(tcp.DstPort) != port {
			continue
		}
		key := fmt.Sprintf("%v:%d", pkt.NetworkLayer().NetworkFlow().Src(), tcp.SrcPort)
		if !seen[key] {
			seen[key] = true
			out = append(out, ci.Timestamp)
		}
	}
}
