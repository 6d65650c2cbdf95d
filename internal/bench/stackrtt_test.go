package bench_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/clientstack"
	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
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
