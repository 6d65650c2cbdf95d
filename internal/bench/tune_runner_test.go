package bench_test

import (
	"context"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/plan"
)

// gogc is the collector's GOGC setting now (-1 when it is off).
func gogc() int64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// TestUntuned: an Untuned Runner leaves GOMAXPROCS and the collector as
// they are within its trials; a tuned one fits GOMAXPROCS to a connect
// trial's one worker and holds the collector off while it measures.
func TestUntuned(t *testing.T) {
	if bench.UsableCPUs() < 2 {
		t.Skip("one CPU: a trial's GOMAXPROCS is that of the process")
	}
	for _, untuned := range []bool{true, false} {
		var mu sync.Mutex
		procs, gcs := map[int]bool{}, map[int64]bool{}
		d := &standIn{addr: acceptor(t), script: script{do: func(int64) error {
			mu.Lock()
			defer mu.Unlock()
			procs[runtime.GOMAXPROCS(0)] = true
			gcs[gogc()] = true
			return nil
		}}}
		for _, e := range []plan.Experiment{plan.Connect, plan.Pool} {
			r := standInRunner(t, plan.Spec{Experiments: []plan.Experiment{e}, TLS: []string{"off"}, Count: 20}, d)
			r.Untuned = untuned
			before, gcBefore := runtime.GOMAXPROCS(0), gogc()
			if _, err := r.Trial(context.Background(), e, r.Variants[0], 1); err != nil {
				t.Fatal(err)
			}
			if runtime.GOMAXPROCS(0) != before || gogc() != gcBefore {
				t.Errorf("untuned %v, %s: GOMAXPROCS %d and GOGC %d after the trial, %d and %d before", untuned, e, runtime.GOMAXPROCS(0), gogc(), before, gcBefore)
			}
			want := map[int]bool{before: true}
			wantGC := map[int64]bool{gcBefore: true}
			if !untuned {
				// connect fits 1 P to its worker; the pool's worker waits
				// in its thread with a spare P (waitModes).
				want = map[int]bool{1: true, 2: true}
				wantGC = map[int64]bool{-1: true}
				if e == plan.Pool {
					wantGC[gcBefore] = true // in the warm-up, not measured
				}
			}
			for p := range procs {
				if !want[p] {
					t.Errorf("untuned %v, %s: GOMAXPROCS %d in the trial, want %v", untuned, e, p, want)
				}
			}
			for g := range gcs {
				if !wantGC[g] {
					t.Errorf("untuned %v, %s: GOGC %d in the trial, want %v", untuned, e, g, wantGC)
				}
			}
			clear(procs)
			clear(gcs)
		}
	}
}
