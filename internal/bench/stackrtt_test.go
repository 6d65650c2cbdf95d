package bench_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/clientstack"
	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/site"
)

// skipMissingStack skips t where err says a client stack is not
// installed, except in CI, where every one must be.
func skipMissingStack(t *testing.T, err error) {
	t.Helper()
	var ni *clientstack.NotInstalled
	if errors.As(err, &ni) && os.Getenv("CI") == "" {
		t.Skip(err)
	}
}

// relayFrames counts the goroutines running the relay's code.
func relayFrames() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "netx.(*Relay)")
}

// TestStackRTT runs connect through psycopg and libpq (pgbench) on a lab
// PostgreSQL (SCRAM logins) at a 40 ms RTT: each connection takes at
// least its protocol's client turns × RTT (plain 5: the connect, SCRAM's
// three, the query; TLS 1.3 7: the SSLRequest's and the handshake's
// more), which only the relay can add, the stacks connect to the relay's
// port and verify the server's name as before, and once the Runner is
// closed no relay is left: no goroutine, nothing listening.
func TestStackRTT(t *testing.T) {
	labtest.Slow(t) // a server, client processes, seconds of RTT
	srv := labtest.Start(t, "postgres", lab.Options{Keys: []string{"ecdsa-p256"}})
	const rtt = 40 * time.Millisecond
	spec, err := plan.New(plan.Spec{Target: "lab:postgres", Experiments: []plan.Experiment{plan.Connect}, TLS: []string{"off", "1.3"},
		Keys: []string{"ecdsa-p256"}, ClientStacks: []string{"psycopg", "libpq"}, RTT: []time.Duration{rtt}, Workload: plan.WorkloadPing,
		Count: 4, Concurrency: []int{2}, Trials: 1, Warmup: new(time.Duration), Duration: time.Minute, Tables: 1, Rows: 100})
	if err != nil {
		t.Fatal(err)
	}
	r, st := runnerOn(t, spec, srv)
	r.Locate = st.Locate
	var configs []clientstack.Config
	r.StartClient = func(ctx context.Context, cfg clientstack.Config) (clientstack.Client, error) {
		configs = append(configs, cfg)
		return clientstack.Start(ctx, cfg)
	}
	frames := relayFrames()
	closed := false
	t.Cleanup(func() {
		if !closed {
			r.Close()
		}
	})
	ctx := context.Background()
	if _, err := r.Check(ctx); err != nil {
		skipMissingStack(t, err)
		t.Fatal(err)
	}
	var trials []result.Trial
	r.Done = func(tr result.Trial, done, total int) { trials = append(trials, tr) }
	if err := r.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if len(trials) != 4 {
		t.Fatalf("%d trials, want 4", len(trials))
	}
	for _, tr := range trials {
		// TCP, SCRAM's three (the startup, its two SASL messages), the
		// query; with TLS, the SSLRequest and TLS 1.3's full handshake
		// (one, two after a HelloRetryRequest).
		turns := 1 + 3 + 1
		if !strings.Contains(tr.Variant, "plain") {
			turns += 1 + 1
		}
		least := float64(turns) * float64(rtt) / float64(time.Millisecond)
		if tr.Ops != 4 || len(tr.Errors) > 0 || tr.Latency.Count != 4 && tr.Latency.Count != 0 {
			t.Errorf("%s: %d operations, errors %v", tr.Variant, tr.Ops, tr.Errors)
		}
		t.Logf("%s: %.1f ms per connection, at least %.0f", tr.Variant, tr.Latency.Mean, least)
		if tr.Latency.Mean < least {
			t.Errorf("%s: %.1f ms per connection, under %d RTT of %v (%.0f ms)", tr.Variant, tr.Latency.Mean, turns, rtt, least)
		}
	}
	addrs := bench.RelayAddrs(r)
	if len(addrs) != 4 {
		t.Errorf("%d relays, want one per variant (4)", len(addrs))
	}
	server, _ := srv.URL("", false)
	for _, c := range configs {
		at := net.JoinHostPort(c.Host, fmt.Sprint(c.Port))
		if !strings.Contains(strings.Join(addrs, " "), at) || strings.Contains(server, at) {
			t.Errorf("%s connects to %s, not to its relay (%v)", c.Stack.Name, at, addrs)
		}
		if c.TLS != "off" && (c.Verify != "full" || c.ServerName != "127.0.0.1") {
			t.Errorf("%s verifies %q (%s), want the server's name, fully", c.Stack.Name, c.ServerName, c.Verify)
		}
	}
	closed = true
	if err := r.Close(); err != nil {
		t.Error(err)
	}
	if n := relayFrames(); n > frames {
		t.Errorf("%d goroutines of relays after Close", n-frames)
	}
	for _, a := range addrs {
		if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			c.Close()
			t.Errorf("a relay still listens at %s after Close", a)
		}
	}
}

// TestStackRelayRefused: a relay whose server is down resets the stack's
// connections, which the check and the trial count as the relay saw
// them: refused, in the tcp phase.
func TestStackRelayRefused(t *testing.T) {
	labtest.Slow(t) // a client process
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	target := "postgres://app@" + addr + "/db?sslmode=disable"
	spec, err := plan.New(plan.Spec{Target: target, Experiments: []plan.Experiment{plan.Connect},
		ClientStacks: []string{"psycopg"}, RTT: []time.Duration{10 * time.Millisecond}, Workload: plan.WorkloadPing,
		Count: 3, Concurrency: []int{1}, Trials: 1, Warmup: new(time.Duration), Duration: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	vs := spec.Variants()
	if len(vs) != 1 {
		t.Fatalf("variants %+v", vs)
	}
	v := vs[0]
	u, _ := url.Parse(target)
	r := &bench.Runner{Spec: spec, Variants: vs, Scheme: "postgres", Untuned: true,
		Configs: map[string]driver.Config{v.ID: {Variant: v, Addr: addr, URL: u, Timeout: spec.Timeout}}}
	t.Cleanup(func() { r.Close() })
	ctx := context.Background()
	_, err = r.Check(ctx)
	skipMissingStack(t, err)
	if err == nil || !strings.Contains(err.Error(), "cannot connect to "+addr+": connection refused") {
		t.Errorf("check: %v, want the relay's refused connect", err)
	}
	tr, err := r.Trial(ctx, plan.Connect, v, 1)
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("trial: %v, want the refused connects", err)
	}
	if tr.Errors["tcp: refused"] != 3 || len(tr.Errors) != 1 || !strings.Contains(tr.ErrorSamples["tcp: refused"], "connection refused") {
		t.Errorf("trial errors %v, samples %v; want 3 tcp: refused", tr.Errors, tr.ErrorSamples)
	}
}

// BenchmarkStackRTTAccuracy prints, side by side in one run on one lab
// PostgreSQL, what an emulated RTT adds to a TLS 1.3 connection (connect,
// SCRAM login, SELECT 1 as text, close) made by libpq
// (pgbench) and psycopg through the relay and by pgx through Go's dialer,
// at 1 ms and 44 ms: each stack's ms per connection at RTT 0 and at the
// RTT (medians, averaged over 3 interleaved trials of 20 connections: a
// shared machine's stalls stay out), the RTT's share as round trips
// ((at RTT - at 0) / RTT: the stacks speak the same protocol, so the
// emulations should give the same count), and each stack's added time
// over Go's as a ratio. make bench.
func BenchmarkStackRTTAccuracy(b *testing.B) {
	labtest.Slow(b)
	srv := labtest.Start(b, "postgres", lab.Options{Keys: []string{"ecdsa-p256"}})
	stacks := []string{"go", "libpq", "psycopg"}
	for _, rtt := range []time.Duration{time.Millisecond, 44 * time.Millisecond} {
		b.Run(rtt.String(), func(b *testing.B) {
			for range b.N {
				spec, err := plan.New(plan.Spec{Target: "lab:postgres", Experiments: []plan.Experiment{plan.Connect}, TLS: []string{"1.3"},
					Keys: []string{"ecdsa-p256"}, ClientStacks: stacks, RTT: []time.Duration{0, rtt}, Workload: plan.WorkloadPing,
					Count: 20, Concurrency: []int{1}, Trials: 3, Duration: time.Minute, Tables: 1, Rows: 100})
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				st, err := site.Attach(ctx, spec, srv)
				if err != nil {
					b.Fatal(err)
				}
				res := result.New()
				res.Spec = spec
				err = bench.Execute(ctx, res, st, bench.Options{})
				st.Stop()
				if err != nil {
					b.Fatal(err)
				}
				// ms is the mean over trials of each variant's median ms
				// per connection, by client and RTT.
				ms := map[string]map[time.Duration]float64{}
				n := map[string]map[time.Duration]int{}
				info := map[string]plan.Variant{}
				for _, v := range res.Variants {
					info[v.ID] = v
				}
				for _, tr := range res.Trials {
					v := info[tr.Variant]
					c := cmp.Or(v.Client, plan.GoClient)
					if ms[c] == nil {
						ms[c], n[c] = map[time.Duration]float64{}, map[time.Duration]int{}
					}
					ms[c][v.RTT] += tr.Latency.P50
					n[c][v.RTT]++
				}
				added := func(c string) float64 {
					at := func(d time.Duration) float64 { return ms[c][d] / float64(n[c][d]) }
					b.ReportMetric(at(0), "ms-"+c+"@0")
					b.ReportMetric(at(rtt), "ms-"+c+"@rtt")
					a := at(rtt) - at(0)
					b.ReportMetric(a/(float64(rtt)/float64(time.Millisecond)), "rt-"+c)
					return a
				}
				goAdded := added(plan.GoClient)
				for _, c := range stacks[1:] {
					b.ReportMetric(added(c)/goAdded, c+"/go-added")
				}
			}
		})
	}
}

// TestRelayed: the connections a relay could not carry are put in the
// tcp phase, on operations that failed without the server's answer, on a
// tool's count of failures, or on the run that failed; those nothing
// carries (a driver that retried) are returned to count.
func TestRelayed(t *testing.T) {
	why := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	reset := clientstack.Op{Phase: "auth", Kind: "reset", Message: "server closed the connection unexpectedly"}
	answered := clientstack.Op{Phase: "query", Kind: "server", Message: "relation does not exist"}
	ok := clientstack.Op{Start: 1, End: 2}
	crashed := errors.New("the client exited")
	for _, tc := range []struct {
		name     string
		rep      clientstack.Report
		runErr   error
		n        int64
		wantOps  string // each op's phase: kind
		wantRest int64
		wantErr  string
		errors   int64 // the Totals' errors left
	}{
		{"none", clientstack.Report{Ops: []clientstack.Op{reset}}, nil, 0, "auth: reset", 0, "", 0},
		{"ops", clientstack.Report{Ops: []clientstack.Op{ok, reset, answered, reset}}, nil, 2, ": |tcp: refused|query: server|tcp: refused", 0, "", 0},
		{"retried", clientstack.Report{Ops: []clientstack.Op{ok, reset}}, nil, 3, ": |tcp: refused", 2, "", 0},
		{"totals", clientstack.Report{Totals: &clientstack.Totals{Ops: 10, Errors: 3}}, nil, 2, "", 2, "", 1},
		{"run failed", clientstack.Report{Ops: []clientstack.Op{reset}}, crashed, 4, "tcp: refused", 0, "through the RTT relay: dial tcp: connect: connection refused (client: the client exited)", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err, rest := bench.Relayed(&tc.rep, tc.runErr, tc.n, why)
			var ops []string
			for _, o := range tc.rep.Ops {
				ops = append(ops, o.Phase+": "+o.Kind)
			}
			if got := strings.Join(ops, "|"); got != tc.wantOps || rest != tc.wantRest {
				t.Errorf("ops %q, %d left; want %q, %d", got, rest, tc.wantOps, tc.wantRest)
			}
			if tc.rep.Totals != nil && tc.rep.Totals.Errors != tc.errors {
				t.Errorf("the tool's errors: %d, want %d", tc.rep.Totals.Errors, tc.errors)
			}
			switch {
			case tc.wantErr == "" && err != tc.runErr:
				t.Errorf("err %v, want the run's (%v)", err, tc.runErr)
			case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr || !errors.Is(err, crashed) || !errors.Is(err, syscall.ECONNREFUSED)):
				t.Errorf("err %v, want %q", err, tc.wantErr)
			}
		})
	}
}
