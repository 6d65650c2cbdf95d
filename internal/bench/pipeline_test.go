package bench_test

// Tests of the run pipeline's own logic with the stand-in driver of
// runner_test.go and a stand-in site: what it fills the result with, and
// what it keeps when a run fails or is interrupted.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// standInSite reaches the stand-in driver's listener; gone is what Alive
// says.
type standInSite struct {
	addr    string
	gone    error
	befores []string
}

func (s *standInSite) Engine() string { return "stand-in" }
func (s *standInSite) Target() result.Target {
	return result.Target{URL: plan.Builtin, Kind: "builtin"}
}
func (s *standInSite) Locate(plan.Variant) (bench.Endpoint, error) {
	return bench.Endpoint{Addr: s.addr, Host: "127.0.0.1"}, nil
}
func (s *standInSite) ClientTLS() tlsx.ClientOptions { return tlsx.ClientOptions{} }
func (s *standInSite) Before(_ context.Context, v plan.Variant) error {
	s.befores = append(s.befores, v.ID)
	return nil
}
func (s *standInSite) CPU() (time.Duration, error)    { return 0, bench.ErrNoServerCPU }
func (s *standInSite) Alive() error                   { return s.gone }
func (s *standInSite) Notes() []string                { return []string{"site note"} }
func (s *standInSite) Tunnels() []result.Tunnel       { return nil }
func (s *standInSite) Memory() (int64, string, error) { return 0, "", bench.ErrNoServerCPU }

// execute runs raw (a plain connect run of 10 operations per trial unless
// raw says otherwise) through the pipeline against d.
func execute(t *testing.T, ctx context.Context, raw plan.Spec, st bench.Site, d *standIn, o bench.Options) (*result.Result, []bench.Progress, error) {
	t.Helper()
	raw.Target = plan.Builtin
	raw.Experiments = []plan.Experiment{plan.Connect}
	raw.TLS = []string{"off"}
	if raw.Count == 0 {
		raw.Count = 10
	}
	spec, err := plan.New(raw)
	if err != nil {
		t.Fatal(err)
	}
	res := result.New()
	res.Spec = spec
	var progress []bench.Progress
	o.Progress = func(p bench.Progress) { progress = append(progress, p) }
	o.NewDriver = func(string, driver.Config) (driver.Driver, error) { return d, nil }
	err = bench.Execute(ctx, res, st, o)
	return res, progress, err
}

// TestExecute: a run that succeeds has its checks, ceilings, notes (the
// pipeline's, the ceilings', then the site's), planned and finished trials,
// and progress from the check to the last trial.
func TestExecute(t *testing.T) {
	d := &standIn{addr: acceptor(t)}
	st := &standInSite{addr: d.addr}
	var asked []plan.Variant
	ceilings := func(_ context.Context, spec plan.Spec, vs []plan.Variant) ([]result.Ceiling, []string, error) {
		asked = vs
		return []result.Ceiling{{Key: "rsa2048", SignPerSec: 1, Cores: 1}}, []string{"ceiling note"}, nil
	}
	res, progress, err := execute(t, context.Background(), plan.Spec{Concurrency: []int{1, 2}, Trials: 2}, st, d, bench.Options{Ceilings: ceilings})
	if err != nil {
		t.Fatal(err)
	}
	if res.PlannedTrials != 4 || len(res.Trials) != 4 || len(res.Checks) != 1 || len(res.Ceilings) != 1 || len(asked) != 1 {
		t.Errorf("%d of %d trials, %d checks, %d ceilings (asked for %v)", len(res.Trials), res.PlannedTrials, len(res.Checks), len(res.Ceilings), asked)
	}
	if res.Error != "" || res.Interrupted || res.Ended.IsZero() || res.Target.Kind != "builtin" || len(res.Variants) != 1 {
		t.Errorf("error %q, interrupted %v, ended %v, target %+v, variants %v", res.Error, res.Interrupted, res.Ended, res.Target, res.Variants)
	}
	if n := len(res.Notes); n < 3 || res.Notes[n-2] != "ceiling note" || res.Notes[n-1] != "site note" {
		t.Errorf("notes %q", res.Notes)
	}
	// Before readies the server for the check and for every trial.
	if len(st.befores) != 5 {
		t.Errorf("Before called for %v, want the check and 4 trials", st.befores)
	}
	var stages []string
	for _, p := range progress {
		stages = append(stages, string(p.Stage))
	}
	if got, want := strings.Join(slices.Compact(stages), ","), "check,ceilings,trials"; got != want {
		t.Errorf("stages %s, want %s", got, want)
	}
	if last := progress[len(progress)-1]; last.Done != 4 || last.Total != 4 || last.Trial == nil {
		t.Errorf("last progress %+v", last)
	}
	// Each trial begins (named as its errors name it) before it ends.
	var trials []string
	for _, p := range progress {
		switch {
		case p.Next != "":
			trials = append(trials, fmt.Sprintf("begin %d %s", p.Done, p.Next))
		case p.Trial != nil:
			trials = append(trials, fmt.Sprintf("end %d c=%d", p.Done, p.Trial.Concurrency))
		}
	}
	want := []string{"begin 0 connect plain c=1", "end 1 c=1", "begin 1 connect plain c=2", "end 2 c=2",
		"begin 2 connect plain c=1", "end 3 c=1", "begin 3 connect plain c=2", "end 4 c=2"}
	if !slices.Equal(trials, want) {
		t.Errorf("trials' progress %q, want %q", trials, want)
	}
}

// TestExecuteFailed: a trial that fails the run is kept with those before
// it, the error names why the server is gone, and the result says so.
func TestExecuteFailed(t *testing.T) {
	// The check's Do is the first; the first trial's are 2 to 11; half of
	// the second's fail.
	d := &standIn{addr: acceptor(t), script: script{do: func(n int64) error {
		if n > 11 && n%2 == 0 {
			return errScripted
		}
		return nil
	}}}
	st := &standInSite{addr: d.addr, gone: errors.New("the server has exited")}
	res, _, err := execute(t, context.Background(), plan.Spec{Trials: 3}, st, d, bench.Options{})
	var many *bench.TooManyErrors
	if !errors.As(err, &many) || !strings.HasSuffix(err.Error(), "; the server has exited") {
		t.Fatalf("error %v: want too many errors, and why the server is gone", err)
	}
	if len(res.Trials) != 2 || res.Trials[1].Ops != 5 || res.PlannedTrials != 3 || res.Error != err.Error() || res.Interrupted {
		t.Errorf("%d of %d trials (second %d ops), error %q, interrupted %v", len(res.Trials), res.PlannedTrials, res.Trials[1].Ops, res.Error, res.Interrupted)
	}
	if !slices.Contains(res.Notes, "site note") {
		t.Errorf("notes %q lack the site's", res.Notes)
	}

	// A run that fails before any trial returns the check's error.
	d = &standIn{addr: acceptor(t), script: script{open: func(int64) error { return errScripted }}}
	res, _, err = execute(t, context.Background(), plan.Spec{}, &standInSite{addr: d.addr}, d, bench.Options{})
	if err == nil || !strings.HasPrefix(err.Error(), "plain: cannot connect to "+d.addr) || len(res.Trials) != 0 || res.Error != err.Error() {
		t.Errorf("check failed: error %v, %d trials, result error %q", err, len(res.Trials), res.Error)
	}
}

// TestExecuteInterrupted: a run cancelled in its second trial keeps the
// first, is marked interrupted, and blames nothing on the server.
func TestExecuteInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := &standIn{addr: acceptor(t), script: script{do: func(n int64) error {
		if n == 15 {
			cancel()
		}
		return nil
	}}}
	st := &standInSite{addr: d.addr, gone: errors.New("the server has exited")}
	res, _, err := execute(t, ctx, plan.Spec{Trials: 3}, st, d, bench.Options{})
	if !errors.Is(err, context.Canceled) || len(res.Trials) != 1 || !res.Interrupted || res.Error != "" {
		t.Errorf("error %v, %d trials, interrupted %v, result error %q", err, len(res.Trials), res.Interrupted, res.Error)
	}
}

// TestExecutePick: Options.Pick keeps the variants a run measures (the
// baseline marked among them); a run that picks none fails before it
// measures anything.
func TestExecutePick(t *testing.T) {
	d := &standIn{addr: acceptor(t)}
	keep := func(plan.Experiment, plan.Variant) bool { return true }
	res, _, err := execute(t, context.Background(), plan.Spec{Trials: 1}, &standInSite{addr: d.addr}, d, bench.Options{Pick: keep})
	if err != nil || len(res.Variants) != 1 || !res.Variants[0].Baseline || len(res.Trials) != 1 {
		t.Fatalf("kept: %v, variants %+v, %d trials", err, res.Variants, len(res.Trials))
	}
	none := func(plan.Experiment, plan.Variant) bool { return false }
	res, _, err = execute(t, context.Background(), plan.Spec{Trials: 1}, &standInSite{addr: d.addr}, d, bench.Options{Pick: none})
	if err == nil || len(res.Trials) != 0 || res.Error == "" || !strings.Contains(err.Error(), "picks none of its variants") {
		t.Errorf("none picked: %v, %d trials, error %q", err, len(res.Trials), res.Error)
	}
}
