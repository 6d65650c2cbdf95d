package result_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

var startAt = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// hist records n latencies of ms each (and one of 10 ms).
func hist(n int, ms int) result.Hist {
	r := stats.NewRecorder()
	for range n {
		r.Record(time.Duration(ms) * time.Millisecond)
	}
	r.Record(10 * time.Millisecond)
	return result.Hist(r.Hist())
}

// shard is shard i of n of one small plan: one connect trial per round
// with ops of its own, starting off by i ms.
func shard(i, n int, ops ...int) *result.Result {
	r := result.New()
	r.Spec = plan.Spec{Experiments: []plan.Experiment{plan.Connect}, Target: "http://127.0.0.1:9/", Concurrency: []int{4}, Duration: time.Second, Trials: len(ops),
		Shard: &plan.Shard{Index: i, Count: n, StartAt: startAt}}
	r.Variants = []plan.Variant{{ID: "plain", TLS: "off", Baseline: true}}
	r.Env = result.Env{Hostname: fmt.Sprintf("node-%d", i), Cores: 2}
	r.Shard = &result.Shard{Index: i, Count: n, StartAt: startAt}
	r.Started, r.Ended = startAt.Add(-time.Second), startAt.Add(time.Minute)
	for k, o := range ops {
		start := startAt.Add(time.Duration(k)*2*time.Second + time.Duration(i)*time.Millisecond)
		r.Trials = append(r.Trials, result.Trial{Experiment: plan.Connect, Variant: "plain", Concurrency: 4 / n, Round: k,
			Start: start, Elapsed: time.Second, Ops: int64(o), Conns: int64(o), ClientCPU: time.Duration(o) * time.Millisecond,
			Errors: map[string]int64{"connect: refused": 1}, ErrorSamples: map[string]string{"connect: refused": fmt.Sprintf("from shard %d", i)},
			Latency: hist(o-1, 1+i),
			Phases:  []result.Phase{{Name: "tcp", RoundTrips: result.RoundTrips{Min: 1, Max: 1 + i, Mean: 1 + float64(i)/2}, Latency: hist(o-1, 1)}}})
		r.Shard.Slots = append(r.Shard.Slots, result.Slot{Start: startAt.Add(time.Duration(k) * 2 * time.Second), Length: 2 * time.Second})
	}
	return r
}

func parts(rs ...*result.Result) []result.Part {
	var ps []result.Part
	for _, r := range rs {
		ps = append(ps, result.Part{Name: fmt.Sprintf("shard-%d.json", r.Shard.Index), Result: r})
	}
	return ps
}

func TestMerge(t *testing.T) {
	a, b := shard(0, 2, 100, 300), shard(1, 2, 200, 400)
	m, err := result.Merge(parts(b, a), []string{"tlsbench", "merge"})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Trials) != 2 || len(m.Shards) != 2 || m.Shards[1].Env.Hostname != "node-1" || m.Spec.Shard != nil {
		t.Fatalf("merged %d trials, shards %+v, spec shard %v", len(m.Trials), m.Shards, m.Spec.Shard)
	}
	for k, tr := range m.Trials {
		x, y := a.Trials[k], b.Trials[k]
		if tr.Ops != x.Ops+y.Ops || tr.Conns != x.Conns+y.Conns || tr.Concurrency != 4 || tr.ClientCPU != x.ClientCPU+y.ClientCPU {
			t.Errorf("trial %d: ops %d conns %d c %d cpu %v", k, tr.Ops, tr.Conns, tr.Concurrency, tr.ClientCPU)
		}
		if tr.Latency.Count != x.Latency.Count+y.Latency.Count || tr.Phases[0].Latency.Count != x.Phases[0].Latency.Count+y.Phases[0].Latency.Count {
			t.Errorf("trial %d: histogram counts %d and %d do not add up", k, tr.Latency.Count, tr.Phases[0].Latency.Count)
		}
		if got, want := tr.Throughput(), x.Throughput()+y.Throughput(); got < want*0.999 || got > want*1.001 {
			t.Errorf("trial %d: %v ops/s, want the sum %v", k, got, want)
		}
		if tr.Errors["connect: refused"] != 2 || tr.ErrorSamples["connect: refused"] != "from shard 0" {
			t.Errorf("trial %d: errors %v, samples %v", k, tr.Errors, tr.ErrorSamples)
		}
		if rt := tr.Phases[0].RoundTrips; rt.Min != 1 || rt.Max != 2 {
			t.Errorf("trial %d: round trips %+v", k, rt)
		}
		if !tr.Start.Equal(x.Start) {
			t.Errorf("trial %d starts %v, want the earliest %v", k, tr.Start, x.Start)
		}
	}
	if m.Skew == nil || m.Skew.StartSpread != time.Millisecond || m.Skew.Bound != 50*time.Millisecond {
		t.Errorf("skew %+v, want a start spread of 1ms and a bound of 5%% of 1s", m.Skew)
	}
	if !strings.Contains(strings.Join(m.Notes, "\n"), "2 client machines") {
		t.Errorf("notes %q", m.Notes)
	}
	// The merged result is a result like any other.
	path := filepath.Join(t.TempDir(), "merged.json")
	if err := result.Write(path, m); err != nil {
		t.Fatal(err)
	}
	if _, err := result.Read(path); err != nil {
		t.Fatal(err)
	}
}

func TestMergeSkewWarns(t *testing.T) {
	a, b := shard(0, 2, 100), shard(1, 2, 100)
	b.Trials[0].Start = b.Trials[0].Start.Add(200 * time.Millisecond)
	m, err := result.Merge(parts(a, b), nil)
	if err != nil {
		t.Fatal(err)
	}
	if notes := strings.Join(m.Notes, "\n"); !strings.Contains(notes, "warning: above the bound of 50ms") {
		t.Errorf("a 201ms spread gave no warning: %q", notes)
	}
}

func TestMergeShorterShard(t *testing.T) {
	a, b := shard(0, 2, 100, 300), shard(1, 2, 200, 400)
	b.Trials, b.Shard.Slots = b.Trials[:1], b.Shard.Slots[:1]
	b.Error = "connect plain c=4: the server is gone"
	m, err := result.Merge(parts(a, b), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Trials) != 1 || !strings.Contains(m.Error, "shard 1: connect plain") || !strings.Contains(m.Error, "shard 0 finished 1 trials the others did not") {
		t.Errorf("%d trials, error %q", len(m.Trials), m.Error)
	}
}

func TestMergeRefuses(t *testing.T) {
	tests := []struct {
		name  string
		parts func() []result.Part
		want  string
	}{
		{"missing", func() []result.Part { return parts(shard(0, 3, 1), shard(2, 3, 1)) }, "shard 1/3 is missing"},
		{"duplicate", func() []result.Part { return parts(shard(0, 2, 1), shard(1, 2, 1), shard(1, 2, 1)) }, "shard 1/2 is given twice: shard-1.json and shard-1.json"},
		{"other count", func() []result.Part { return parts(shard(0, 2, 1), shard(1, 3, 1)) }, "shard-1.json is shard 1/3 but shard-0.json is shard 0/2"},
		{"other plan", func() []result.Part {
			b := shard(1, 2, 1)
			b.Spec.Duration = 2 * time.Second
			return parts(shard(0, 2, 1), b)
		}, "shard-1.json ran another plan than shard-0.json: spec.duration_ns differs"},
		{"other start", func() []result.Part {
			b := shard(1, 2, 1)
			b.Spec.Shard.StartAt = startAt.Add(time.Second)
			return parts(shard(0, 2, 1), b)
		}, "shards of one run share --start-at"},
		{"not a shard", func() []result.Part {
			a := shard(0, 2, 1)
			a.Shard = nil
			return []result.Part{{Name: "whole.json", Result: a}}
		}, "whole.json is not a shard's result"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := result.Merge(tt.parts(), nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one with %q", err, tt.want)
			}
		})
	}
}

// A kubectl logs dump: frames of several shards with --prefix, other
// lines between and inside them, one frame's lines interleaved with
// another's.
func TestReadParts(t *testing.T) {
	var a, b strings.Builder
	if err := result.WriteFrame(&a, shard(0, 2, 10)); err != nil {
		t.Fatal(err)
	}
	if err := result.WriteFrame(&b, shard(1, 2, 20)); err != nil {
		t.Fatal(err)
	}
	la, lb := strings.Split(strings.TrimSpace(a.String()), "\n"), strings.Split(strings.TrimSpace(b.String()), "\n")
	pa, pb := "[pod/run-0-x/tlsbench] ", "[pod/run-1-y/tlsbench] "
	dump := strings.Join([]string{
		pa + "note: starting", pa + la[0], pb + lb[0], pb + "tlsbench: a line of stderr", pa + la[1], pb + lb[1], pb + lb[2],
		"unrelated tlsbench-result mention", pa + la[2], pa + "result: stdout",
	}, "\n") + "\n"
	path := filepath.Join(t.TempDir(), "logs.txt")
	if err := os.WriteFile(path, []byte(dump), 0o600); err != nil {
		t.Fatal(err)
	}
	ps, err := result.ReadParts(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].Result.Shard.Index != 1 || ps[1].Result.Shard.Index != 0 || ps[1].Result.Trials[0].Ops != 10 {
		t.Fatalf("read %d parts: %+v", len(ps), ps)
	}
	if _, err := result.Merge(ps, nil); err != nil {
		t.Error(err)
	}
	// Cut short: a frame without its end.
	if err := os.WriteFile(path, []byte(strings.Join(la[:2], "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := result.ReadParts(path); err == nil || !strings.Contains(err.Error(), "has no end line") {
		t.Errorf("a frame cut short: %v", err)
	}
	if err := os.WriteFile(path, []byte("just a log\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := result.ReadParts(path); err == nil || !strings.Contains(err.Error(), "holds no shard result") {
		t.Errorf("no frames: %v", err)
	}
}

func TestMergeClientWait(t *testing.T) {
	// Each shard chose how its workers waited: the merge names each
	// choice once, in shard order.
	var rs []*result.Result
	for i, w := range []string{"", "thread, 5 Ps", "poller, 2 Ps", "thread, 5 Ps"} {
		r := shard(i, 4, 100)
		r.Trials[0].ClientWait = w
		rs = append(rs, r)
	}
	m, err := result.Merge(parts(rs...), []string{"tlsbench", "merge"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.Trials[0].ClientWait, "thread, 5 Ps; poller, 2 Ps"; got != want {
		t.Errorf("client_wait %q, want %q", got, want)
	}
}

// TestMergeOpenLoop merges the open-loop figures of two shards at a rate:
// arrivals, drops and the schedule's counts add, the lag histograms merge
// exactly (the merged one is the histogram of every shard's lags), and the
// achieved rate is the shards' started arrivals per second of the window.
// A shard from a tlsbench that did not measure the schedule leaves none.
func TestMergeOpenLoop(t *testing.T) {
	lags := [][]time.Duration{{0, 200 * time.Microsecond, 2 * time.Millisecond, 15 * time.Millisecond}, {100 * time.Microsecond, 40 * time.Millisecond}}
	all := stats.NewRecorder()
	open := func(i int) *result.OpenLoop {
		r := stats.NewRecorder()
		var late1, late10 int64
		for _, d := range lags[i] {
			r.Record(d)
			all.Record(d)
			if d > time.Millisecond {
				late1++
			}
			if d > 10*time.Millisecond {
				late10++
			}
		}
		n := int64(len(lags[i]))
		return &result.OpenLoop{Offered: 2.5, Process: plan.ArrivalsPoisson, Slots: 2, Arrivals: n + 1, Dropped: 1, Window: time.Second,
			Service: hist(int(n), 1), Schedule: &result.Schedule{Due: n + 1, Started: n, Lag: result.Hist(r.Hist()), Late1ms: late1, Late10ms: late10}}
	}
	a, b := shard(0, 2, 100), shard(1, 2, 200)
	a.Trials[0].Open, b.Trials[0].Open = open(0), open(1)
	m, err := result.Merge(parts(a, b), nil)
	if err != nil {
		t.Fatal(err)
	}
	o := m.Trials[0].Open
	s := o.Schedule
	if s == nil {
		t.Fatal("no merged schedule")
	}
	if o.Offered != 5 || o.Arrivals != 8 || o.Dropped != 2 || s.Due != 8 || s.Started != 6 || s.Late1ms != 3 || s.Late10ms != 2 {
		t.Errorf("merged %+v, schedule %+v", o, s)
	}
	want := result.Hist(all.Hist())
	if s.Lag.Count != want.Count || s.Lag.P99 != want.P99 || s.Lag.Max != want.Max || s.Lag.Mean != want.Mean {
		t.Errorf("merged lag %+v, want every shard's lags %+v", s.Lag, want)
	}
	if o.Achieved() != 6 {
		t.Errorf("achieved %v/s, want the 6 started arrivals over 1 s", o.Achieved())
	}
	if why := o.Behind(); !strings.Contains(why, "2 of 6 arrivals started over 10 ms late") {
		t.Errorf("behind %q", why)
	}

	b.Trials[0].Open.Schedule = nil // an older shard
	m, err = result.Merge(parts(a, b), nil)
	if err != nil {
		t.Fatal(err)
	}
	if o := m.Trials[0].Open; o.Schedule != nil || o.Achieved() != 6 || o.Behind() != "" {
		t.Errorf("with an older shard: schedule %+v, achieved %v, behind %q", o.Schedule, o.Achieved(), o.Behind())
	}
}
