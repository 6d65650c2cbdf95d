package bench_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
)

// TestOpenPoolHangingServer: a server that takes connections and then
// hangs every operation until --timeout (a lock) does not hold an open
// pool past the trial by --timeout for each arrival still queued: those
// fail unserved once the trial is over by --timeout, counted by kind.
func TestOpenPoolHangingServer(t *testing.T) {
	const timeout = 300 * time.Millisecond
	d := &standIn{addr: acceptor(t), script: script{do: func(n int64) error {
		if n > 5 {
			time.Sleep(timeout)
			return os.ErrDeadlineExceeded
		}
		return nil
	}}}
	r := standInRunner(t, plan.Spec{Experiments: []plan.Experiment{plan.Pool}, TLS: []string{"off"}, Concurrency: []int{1},
		Rates: []float64{200}, Arrivals: plan.ArrivalsUniform, Duration: 300 * time.Millisecond, Timeout: timeout, Warmup: new(time.Nanosecond)}, d)
	start := time.Now()
	tr, err := r.TrialAt(context.Background(), plan.Pool, r.Variants[0], 1, 1, 200)
	took := time.Since(start)
	t.Logf("%v after %v: errors %v", err, took.Round(time.Millisecond), tr.Errors)
	// Served: the operations until the trial's end, then one per
	// --timeout; 50 queued arrivals at --timeout each took 15 s.
	if took > 2*time.Second {
		t.Errorf("took %v, want about the trial and two --timeout", took)
	}
	if tr.Errors["queue: timeout"] == 0 || !strings.Contains(tr.ErrorSamples["queue: timeout"], "still queued --timeout 300ms after the trial's end") {
		t.Errorf("errors %v, samples %v: want the arrivals left in the queue counted", tr.Errors, tr.ErrorSamples)
	}
	if err == nil {
		t.Errorf("no error: the trial's failures pass --max-error-rate")
	}
}
