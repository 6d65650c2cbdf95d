package bench_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// rateRunner is a Runner of raw against addr (the shared built-in server's
// listener of a variant, unless addr gives another), with the intended
// start of every arrival passed to arrived.
func rateRunner(t *testing.T, raw plan.Spec, addr func(plan.Variant) string, arrived func(time.Time)) *bench.Runner {
	t.Helper()
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
// and TLS 1.3, with each process: the rate achieved is the one offered
// within 5%, nothing is dropped or fails, and the gaps between intended
// starts are those of the process (uniform: constant; poisson:
// exponential, whose coefficient of variation is 1).
func TestRateArrivals(t *testing.T) {
	const rate, d = 200.0, 2 * time.Second
	for _, process := range []string{plan.ArrivalsUniform, plan.ArrivalsPoisson} {
		for _, tlsMode := range []string{"off", "1.3"} {
			t.Run(process+"/"+tlsMode, func(t *testing.T) {
				var starts []time.Time
				raw := plan.Spec{TLS: []string{tlsMode}, Keys: []string{"ecdsa-p256"}, Rates: []float64{rate}, Arrivals: process, Duration: d}
				r := rateRunner(t, raw, nil, func(at time.Time) { starts = append(starts, at) })
				tr, err := r.TrialAt(context.Background(), plan.Connect, r.Variants[0], r.Spec.MaxInflight, 1, rate)
				if err != nil {
					t.Fatal(err)
				}
				o := tr.Open
				if o == nil {
					t.Fatal("no open-loop figures")
				}
				if got := o.Achieved(); math.Abs(got-rate) > 0.05*rate {
					t.Errorf("achieved %.1f/s, offered %.0f/s", got, rate)
				}
				if o.Dropped != 0 || len(tr.Errors) != 0 {
					t.Errorf("%d dropped, errors %v", o.Dropped, tr.Errors)
				}
				// The schedule's count: rate × d for uniform arrivals,
				// a Poisson count (σ = √400 = 20) within 4σ for poisson.
				want, slack := rate*d.Seconds(), 1.0
				if process == plan.ArrivalsPoisson {
					slack = 4 * math.Sqrt(want)
				}
				if math.Abs(float64(o.Arrivals)-want) > slack {
					t.Errorf("%d arrivals in %v at %v/s", o.Arrivals, d, rate)
				}
				if o.Arrivals != int64(len(starts)) || tr.Ops != o.Arrivals || tr.Latency.Count != tr.Ops || o.Service.Count != tr.Ops {
					t.Errorf("%d arrivals, %d intended starts seen, %d ops, %d latencies, %d service times", o.Arrivals, len(starts), tr.Ops, tr.Latency.Count, o.Service.Count)
				}
				if tr.Latency.P50 < o.Service.P50 {
					t.Errorf("latency from the intended start p50 %.3f ms below the service time's %.3f ms", tr.Latency.P50, o.Service.P50)
				}
				if (tlsMode != "off") != (tr.Negotiated != nil) {
					t.Errorf("negotiated %+v for TLS %s", tr.Negotiated, tlsMode)
				}
				cv := gapCV(starts)
				t.Logf("%d arrivals, achieved %.1f/s, latency p99 %.2f ms, service p99 %.2f ms, gap CV %.5f", o.Arrivals, o.Achieved(), tr.Latency.P99, o.Service.P99, cv)
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
// all but the one request caught in the stall, are not (p99 < 50 ms).
func TestRateStall(t *testing.T) {
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
// rsa4096 against ecdsa-p256: each variant runs steps until one is over
// the SLO twice in a row (the step and its repeat; none after it), and rsa4096, whose signature costs ~10×
// ecdsa-p256's, sustains a lower rate. The SLO is generous and the steps
// double, for a loaded 2-core machine.
func TestKnee(t *testing.T) {
	slo := 250 * time.Millisecond
	res := run(t, plan.Spec{TLS: []string{"1.3"}, Keys: []string{"rsa4096", "ecdsa-p256"}, Knee: &plan.Knee{From: 10, To: 2560, Factor: 2}, SLO: slo, Duration: 2 * time.Second})
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
			default:
				knee[id] = max(knee[id], tr.Open.Offered)
			}
		}
		t.Logf("%s: %s", id, strings.Join(steps, "; "))
		if !broke && knee[id] < 2560 {
			t.Errorf("%s: the search stopped at %v/s with the SLO kept", id, knee[id])
		}
	}
	if knee["tls1.3 rsa4096"] >= knee["tls1.3 ecdsa-p256"] {
		t.Errorf("knee rsa4096 %v/s, ecdsa-p256 %v/s: want rsa4096's lower", knee["tls1.3 rsa4096"], knee["tls1.3 ecdsa-p256"])
	}
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
