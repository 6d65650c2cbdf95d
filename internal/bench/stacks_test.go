package bench_test

// Tests of the client-stack path of the Runner (--client) with
// clientstack's stand-in program, testdata/fake_client.py: it speaks
// clients/PROTOCOL.md without a driver or a server (every fifth operation
// fails as a server error would), and misbehaves as its mode says.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/clientstack"
	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// stackRunner is a Runner of spec's variants whose stacks run the
// stand-in in mode (modes by stack name override it), each process marked
// with a word of its own so that the test can find what is left of it.
func stackRunner(t *testing.T, raw plan.Spec, mode string, modes map[string]string) (*bench.Runner, string) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatal("python3 is needed for the stand-in client:", err)
	}
	script, err := filepath.Abs("../clientstack/testdata/fake_client.py")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := plan.New(raw)
	if err != nil {
		t.Fatal(err)
	}
	marker := fmt.Sprintf("tlsbench-test-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "-"))
	scheme := strings.TrimPrefix(raw.Target, "lab:") // lab:postgres or lab:mongodb
	r := &bench.Runner{Spec: spec, Variants: spec.Variants(), Scheme: scheme, Untuned: true, Configs: map[string]driver.Config{}}
	u := &url.URL{Scheme: scheme, User: url.UserPassword("app", "S3cr3t-pw"), Host: "127.0.0.1:5432", Path: "/sbtest"}
	for _, v := range r.Variants {
		cfg := driver.Config{Variant: v, Addr: "127.0.0.1:5432", URL: u, Timeout: spec.Timeout}
		if !v.Plain() {
			cfg.TLS = &tls.Config{ServerName: "127.0.0.1", MinVersion: tls.VersionTLS13}
		}
		r.Configs[v.ID] = cfg
	}
	r.StartClient = func(ctx context.Context, cfg clientstack.Config) (clientstack.Client, error) {
		m := mode
		if mm, ok := modes[cfg.Stack.Name]; ok {
			m = mm
		}
		if cfg.Password != "S3cr3t-pw" || cfg.User != "app" || cfg.Database != "sbtest" || cfg.Host != "127.0.0.1" || cfg.Port != 5432 {
			t.Errorf("config %+v", cfg)
		}
		return clientstack.StartCommand(ctx, cfg, func(string) (*exec.Cmd, error) {
			return exec.Command("python3", script, m, marker), nil
		})
	}
	// The session the check asks the server on (stackserver.go): a
	// stand-in's, which cannot ask.
	addr := acceptor(t)
	r.NewDriver = func(string, driver.Config) (driver.Driver, error) { return &standIn{addr: addr}, nil }
	t.Cleanup(func() { r.Close() })
	return r, marker
}

// left lists the processes whose command line holds marker.
func left(marker string) []string {
	var pids []string
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err == nil && strings.Contains(string(b), marker) {
			pids = append(pids, filepath.Base(filepath.Dir(f)))
		}
	}
	return pids
}

func clientSpec() plan.Spec {
	half := 0.5
	return plan.Spec{Target: "lab:postgres", Experiments: []plan.Experiment{plan.Connect, plan.Pool}, TLS: []string{"off", "1.3"},
		ClientStacks: []string{"psycopg"}, Count: 20, Duration: 20 * time.Second, Trials: 2, Concurrency: []int{2},
		MaxErrorRate: &half, Warmup: new(time.Duration)}
}

// TestStackTrials: each trial is one run of the variant's client, turned
// into a trial as Go's are: operations, the histogram of their times,
// errors by kind with a sample, connections, the stack's CPU, what it
// negotiated; the stack's hello is recorded once; Close reaps every
// process.
func TestStackTrials(t *testing.T) {
	labtest.Slow(t) // seconds of client processes
	r, marker := stackRunner(t, clientSpec(), "ok", nil)
	checks, err := r.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(checks) != 2 || checks[0].Client != nil || checks[1].Client == nil || checks[1].Client.Version != "TLS 1.3" {
		t.Errorf("checks %+v", checks)
	}
	if got := left(marker); len(got) != 2 {
		t.Errorf("%d client processes after the check, want one per variant", len(got))
	}
	var trials []result.Trial
	r.Done = func(tr result.Trial, done, total int) { trials = append(trials, tr) }
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(trials) != r.Total() || len(trials) != 8 {
		t.Fatalf("%d trials, want %d", len(trials), r.Total())
	}
	for _, tr := range trials {
		// 20 operations, every fifth one a server error.
		if tr.Ops != 16 || tr.Errors["query: server"] != 4 || len(tr.Errors) != 1 || tr.Latency.Count != 16 || tr.Latency.HDR == "" {
			t.Errorf("%s %s: ops %d, errors %v, latency %d samples", tr.Experiment, tr.Variant, tr.Ops, tr.Errors, tr.Latency.Count)
		}
		if s := tr.ErrorSamples["query: server"]; s != "query: relation sbtest1 does not exist" {
			t.Errorf("sample %q", s)
		}
		wantConns := map[plan.Experiment]int64{plan.Connect: 16, plan.Pool: 2}[tr.Experiment]
		if tr.Conns != wantConns || tr.ClientCPU <= 0 || tr.Elapsed <= 0 || tr.Concurrency != 2 {
			t.Errorf("%s %s: conns %d (want %d), client CPU %v, elapsed %v", tr.Experiment, tr.Variant, tr.Conns, wantConns, tr.ClientCPU, tr.Elapsed)
		}
		if tls := strings.HasSuffix(tr.Variant, "rsa2048"); tls != (tr.Negotiated != nil) || tls && (tr.Negotiated.Version != "TLS 1.3" || tr.Negotiated.Group != "X25519") {
			t.Errorf("%s negotiated %+v", tr.Variant, tr.Negotiated)
		}
	}
	if cs := r.Clients(); len(cs) != 1 || cs[0].Name != "psycopg" || cs[0].Driver != "fake/1.0" || cs[0].Model != "threads" || cs[0].Library == "" {
		t.Errorf("clients %+v", cs)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if got := left(marker); len(got) > 0 {
		t.Errorf("processes %v left after Close", got)
	}
}

// TestStackSeedTrials: the MongoDB seed's loops through a stack are
// trials as Go's are: a new-client iteration's latency is its two phases,
// only-connection and first-query (round trips not counted), on two
// connections (the client's monitor's and its first operation's); a
// reused-client trial times each operation on the one client; the stack's
// configuration names the experiments it will be asked for.
func TestStackSeedTrials(t *testing.T) {
	half := 0.5
	spec := plan.Spec{Target: "lab:mongodb", Preset: plan.PresetMongoDBSeed, ClientStacks: []string{"pymongo"}, TLS: []string{"off"},
		Count: 10, Trials: 1, MaxErrorRate: &half, Warmup: new(time.Duration)}
	r, _ := stackRunner(t, spec, "ok", nil)
	start := r.StartClient
	r.StartClient = func(ctx context.Context, cfg clientstack.Config) (clientstack.Client, error) {
		if got := strings.Join(cfg.Experiments, ","); got != "connect,new-client,reused-client" || cfg.Workload != "find-one" {
			t.Errorf("the stack's configuration: experiments %q, workload %q", got, cfg.Workload)
		}
		return start(ctx, cfg)
	}
	if _, err := r.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	var trials []result.Trial
	r.Done = func(tr result.Trial, done, total int) { trials = append(trials, tr) }
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(trials) != 3 {
		t.Fatalf("%d trials, want 3", len(trials))
	}
	for _, tr := range trials {
		// 10 operations, every fifth one a server error.
		if tr.Ops != 8 || tr.Errors["query: server"] != 2 || tr.Latency.Count != 8 || tr.ClientCPU <= 0 {
			t.Errorf("%s: ops %d, errors %v, latency %d samples, client CPU %v", tr.Experiment, tr.Ops, tr.Errors, tr.Latency.Count, tr.ClientCPU)
		}
		switch tr.Experiment {
		case plan.NewClient:
			if len(tr.Phases) != 2 || tr.Phases[0].Name != "only-connection" || tr.Phases[1].Name != "first-query" || tr.Conns != 16 {
				t.Fatalf("new-client: phases %+v on %d connections, want only-connection and first-query on 16", tr.Phases, tr.Conns)
			}
			sum := tr.Phases[0].Latency.Mean + tr.Phases[1].Latency.Mean
			for _, p := range tr.Phases {
				if p.Latency.Count != 8 || p.Latency.Mean <= 0 || p.RoundTrips != (result.RoundTrips{}) {
					t.Errorf("new-client %s: %d samples, mean %v ms, round trips %+v", p.Name, p.Latency.Count, p.Latency.Mean, p.RoundTrips)
				}
			}
			if d := sum - tr.Latency.Mean; d > 0.01*tr.Latency.Mean || d < -0.01*tr.Latency.Mean {
				t.Errorf("new-client: the phases' means add up to %v ms, the iterations' to %v", sum, tr.Latency.Mean)
			}
		case plan.ReusedClient:
			if len(tr.Phases) != 0 || tr.Conns != 1 {
				t.Errorf("reused-client: phases %+v on %d connections", tr.Phases, tr.Conns)
			}
		}
	}
}

// TestStackCheckPoolOnly: the check of a stack that runs pool only
// (libmariadb: sysbench) runs a pool of one, not a connection.
func TestStackCheckPoolOnly(t *testing.T) {
	spec := clientSpec()
	spec.Target, spec.ClientStacks, spec.Experiments, spec.TLS = "lab:mariadb", []string{"libmariadb"}, []plan.Experiment{plan.Pool}, []string{"off"}
	r, _ := stackRunner(t, spec, "ok", nil)
	r.Scheme = "mysql" // the lab's mariadb is the mysql driver's
	var runs []string
	start := r.StartClient
	r.StartClient = func(ctx context.Context, cfg clientstack.Config) (clientstack.Client, error) {
		c, err := start(ctx, cfg)
		return runsOf{c, &runs}, err
	}
	if _, err := r.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	if strings.Join(runs, ",") != "pool" {
		t.Errorf("the check ran %q, want one pool", runs)
	}
}

// runsOf is a client that records the experiments of its runs.
type runsOf struct {
	clientstack.Client
	runs *[]string
}

func (c runsOf) Run(ctx context.Context, r clientstack.Run) (clientstack.Report, error) {
	*c.runs = append(*c.runs, r.Experiment)
	return c.Client.Run(ctx, r)
}

// TestStackCrash: a client that dies or hangs mid-trial keeps the
// operations it reported, the rest of the trial counts as failed under the
// failure policy, and the next trial starts a new process.
func TestStackCrash(t *testing.T) {
	labtest.Slow(t) // seconds of client processes; a hang waits out its bound
	for _, tc := range []struct {
		mode, why string
		trials    int
	}{
		{"crash", "exited during a run (exit status 7)", 2},
		// A hang costs its bound, the trial's time and clientstack's grace
		// (10 s): one trial.
		{"hang", "did not end its run within", 1},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			all := 1.0
			spec := clientSpec()
			spec.Experiments, spec.TLS, spec.MaxErrorRate = []plan.Experiment{plan.Connect}, []string{"off"}, &all
			spec.Duration, spec.Timeout, spec.Trials = time.Second, 200*time.Millisecond, tc.trials
			r, marker := stackRunner(t, spec, tc.mode, nil)
			if _, err := r.Check(context.Background()); err != nil {
				t.Fatal(err) // one operation: before the stand-in fails
			}
			var trials []result.Trial
			r.Done = func(tr result.Trial, done, total int) { trials = append(trials, tr) }
			if err := r.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if len(trials) != tc.trials {
				t.Fatalf("%d trials, want %d", len(trials), tc.trials)
			}
			for _, tr := range trials {
				// 3 reported (the stand-in fails at its fourth), 17 left of 20.
				if tr.Ops != 3 || tr.Errors["client: failed"] != 17 {
					t.Errorf("ops %d, errors %v", tr.Ops, tr.Errors)
				}
				if s := tr.ErrorSamples["client: failed"]; !strings.Contains(s, tc.why) || strings.Contains(s, "S3cr3t") {
					t.Errorf("sample %q", s)
				}
			}
			if tc.mode == "hang" {
				r.Close()
				if got := left(marker); len(got) > 0 {
					t.Errorf("processes %v left", got)
				}
				return
			}
			// Under the default policy the failure fails the run, keeping the trial.
			spec.MaxErrorRate = nil
			r, _ = stackRunner(t, spec, tc.mode, nil)
			trials = nil
			r.Done = func(tr result.Trial, done, total int) { trials = append(trials, tr) }
			err := r.Run(context.Background())
			var many *bench.TooManyErrors
			if !errors.As(err, &many) || many.Kind != "client: failed" || len(trials) != 1 {
				t.Errorf("err %v, %d trials kept", err, len(trials))
			}
			r.Close()
			if got := left(marker); len(got) > 0 {
				t.Errorf("processes %v left", got)
			}
		})
	}
}

// TestStackRefused: a stack that cannot run a variant fails the check
// with its reason, before any trial.
func TestStackRefused(t *testing.T) {
	spec := clientSpec()
	spec.ClientStacks, spec.TLS = []string{"go", "psycopg"}, []string{"off"}
	r, marker := stackRunner(t, spec, "refuse", nil)
	addr := acceptor(t)
	r.NewDriver = func(string, driver.Config) (driver.Driver, error) { return &standIn{addr: addr}, nil }
	_, err := r.Check(context.Background())
	var refused *clientstack.Refused
	if !errors.As(err, &refused) || err.Error() != "psycopg plain: client psycopg cannot run this variant: this stand-in cannot pin TLS off" {
		t.Errorf("err %v", err)
	}
	r.Close()
	if got := left(marker); len(got) > 0 {
		t.Errorf("processes %v left", got)
	}
}

// TestStackInterrupted: Ctrl-C mid-run stops the client's run at once,
// the trials finished before it are kept, and Close reaps the processes.
func TestStackInterrupted(t *testing.T) {
	labtest.Slow(t) // seconds of client processes
	spec := clientSpec()
	spec.Count, spec.Duration = 0, 2*time.Second
	spec.Experiments, spec.TLS = []plan.Experiment{plan.Connect}, []string{"off"}
	r, marker := stackRunner(t, spec, "ok", nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var trials []result.Trial
	r.Done = func(tr result.Trial, done, total int) {
		trials = append(trials, tr)
		go func() { time.Sleep(300 * time.Millisecond); cancel() }()
	}
	began := time.Now()
	err := r.Run(ctx)
	if !errors.Is(err, context.Canceled) || len(trials) != 1 || trials[0].Ops == 0 {
		t.Fatalf("err %v, %d trials", err, len(trials))
	}
	if took := time.Since(began); took > 3*time.Second+spec.Duration {
		t.Errorf("the run took %v after Ctrl-C", took)
	}
	r.Close()
	if got := left(marker); len(got) > 0 {
		t.Errorf("processes %v left", got)
	}
}

// TestStackWarmup: a stack's connect and pool trials both get the spec's
// warm-up, and it stays out of the trial: the stand-in burns CPU for its
// whole warm-up, yet the trial's client CPU is its twenty operations',
// and the trial starts after the warm-up.
func TestStackWarmup(t *testing.T) {
	labtest.Slow(t) // seconds of client processes
	spec := clientSpec()
	warmup := time.Second
	spec.TLS, spec.Trials, spec.Warmup = []string{"off"}, 1, &warmup
	r, _ := stackRunner(t, spec, "ok", nil)
	if _, err := r.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	var trials []result.Trial
	began := time.Now()
	r.Done = func(tr result.Trial, done, total int) { trials = append(trials, tr) }
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(trials) != 2 {
		t.Fatalf("%d trials, want 2", len(trials))
	}
	for i, tr := range trials {
		t.Logf("%s: client CPU %v, elapsed %v, started %v after the run", tr.Experiment, tr.ClientCPU, tr.Elapsed, tr.Start.Sub(began))
		// Twenty operations of a few ms of CPU each, not a second's burn.
		if tr.Ops != 16 || tr.ClientCPU <= 0 || tr.ClientCPU >= warmup/3 {
			t.Errorf("%s: ops %d, client CPU %v: the warm-up's is in it", tr.Experiment, tr.Ops, tr.ClientCPU)
		}
		if tr.Start.Sub(began) < time.Duration(i+1)*warmup {
			t.Errorf("%s: started %v after the run, before the warm-up ended", tr.Experiment, tr.Start.Sub(began))
		}
	}
}

// TestStackServerMismatch: a stack's variant that the server saw other
// than it asked (recorded views, given through tlsbench's own driver
// seam: the stand-in client reaches no server) fails the check in one
// line naming the stack, what it asked and what the server saw; one the
// server saw as asked has the server's view in its check.
func TestStackServerMismatch(t *testing.T) {
	labtest.Slow(t) // the stand-in holds a pool a second per variant
	tls13 := driver.ServerView{TLS: true, Version: "TLSv1.3", Cipher: "TLS_AES_256_GCM_SHA384"}
	for _, tc := range []struct {
		name        string
		plain, tls  driver.ServerView // what the server says of each variant's stack
		err         string
		wantTLSView *result.ServerView
	}{
		{name: "as asked", tls: tls13, wantTLSView: &result.ServerView{TLS: true, Version: "TLSv1.3", Cipher: "TLS_AES_256_GCM_SHA384"}},
		{name: "TLS seen plain", tls: driver.ServerView{},
			err: "psycopg tls1.3 rsa2048: client psycopg: asked for TLS 1.3, the server reports a plaintext connection"},
		{name: "plain seen TLS", plain: tls13, tls: tls13,
			err: "psycopg plain: client psycopg: asked for plaintext, the server reports a connection over TLSv1.3 TLS_AES_256_GCM_SHA384"},
		{name: "TLS seen 1.2", tls: driver.ServerView{TLS: true, Version: "TLSv1.2", Cipher: "ECDHE-RSA-AES128-GCM-SHA256"},
			err: "psycopg tls1.3 rsa2048: client psycopg: asked for TLS 1.3, the server reports a connection over TLSv1.2 ECDHE-RSA-AES128-GCM-SHA256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := clientSpec()
			spec.Experiments = []plan.Experiment{plan.Connect}
			r, _ := stackRunner(t, spec, "ok", nil)
			addr := acceptor(t)
			r.NewDriver = func(_ string, cfg driver.Config) (driver.Driver, error) {
				view := tc.tls
				if cfg.Variant.Plain() {
					view = tc.plain
				}
				return &peerStandIn{standIn: standIn{addr: addr}, view: view}, nil
			}
			checks, err := r.Check(context.Background())
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Errorf("check: %v\nwant %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(checks) != 2 || checks[0].Server == nil || *checks[0].Server != (result.ServerView{}) ||
				checks[1].Server == nil || *checks[1].Server != *tc.wantTLSView {
				t.Errorf("checks %+v", checks)
			}
		})
	}
}

// peerStandIn is a stand-in driver whose sessions tell a server's view of
// the stack's sessions: none open at first, then one, as view.
type peerStandIn struct {
	standIn
	view driver.ServerView
}

func (d *peerStandIn) Open(ctx context.Context) (driver.Session, error) {
	s, err := d.standIn.Open(ctx)
	if err != nil {
		return nil, err
	}
	return &peerSession{Session: s, view: d.view}, nil
}

type peerSession struct {
	driver.Session
	view  driver.ServerView
	asked int
}

func (s *peerSession) Peers(context.Context) (driver.Peers, error) {
	s.asked++
	if s.asked == 1 {
		return driver.Peers{Open: map[string]driver.ServerView{"100": {}}}, nil // another client's, there before
	}
	return driver.Peers{Open: map[string]driver.ServerView{"100": {}, "101": s.view}}, nil
}
