package bench_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/cluster"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// fakeCluster is a cluster on tlsbench's own seam (bench.Cluster), no
// server: its replica applies the primary's writes one at a time at
// caps[link TLS] writes/s, so that the replica's lag stays near 0 below
// that rate and grows without bound above it; each write takes the
// primary a millisecond.
type fakeCluster struct {
	caps map[string]float64

	mu      sync.Mutex
	link    cluster.Link
	applied time.Time // when the replica has applied every write so far
	beats   []fakeBeat
	shown   int64 // the heartbeat seq the replica shows
	sent    int64
}

type fakeBeat struct {
	seq int64
	at  time.Time // visible on the replica from
}

func (f *fakeCluster) SetLink(ctx context.Context, l cluster.Link) (cluster.LinkState, error) {
	f.mu.Lock()
	f.link = l
	f.mu.Unlock()
	return f.LinkState(ctx)
}

func (f *fakeCluster) LinkState(context.Context) (cluster.LinkState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := cluster.LinkState{State: "streaming", SyncState: "async", Sent: f.sent}
	if f.link.TLS != "off" {
		st.Encrypted, st.Version = true, "TLSv"+f.link.TLS
	}
	return st, nil
}

func (f *fakeCluster) Resync(context.Context, cluster.Link) (result.Resync, error) {
	return result.Resync{}, errors.New("the fake has no resync")
}
func (f *fakeCluster) OpenPrimary(context.Context, bool) (cluster.Conn, error) {
	return fakeConn{f}, nil
}
func (f *fakeCluster) OpenReplica(context.Context) (cluster.Conn, error) { return fakeConn{f}, nil }
func (f *fakeCluster) PrimaryAddr() string                               { return "127.0.0.1:1" }
func (f *fakeCluster) Alive() error                                      { return nil }
func (f *fakeCluster) CPU() ([]time.Duration, error) {
	return nil, cluster.ErrNoNodeCPU
}

// apply queues one write on the replica (a heartbeat costs it nothing)
// and returns when it will have applied it.
func (f *fakeCluster) apply(write bool) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	if now := time.Now(); f.applied.Before(now) {
		f.applied = now
	}
	if write {
		f.applied = f.applied.Add(time.Duration(float64(time.Second) / f.caps[f.link.TLS]))
	}
	f.sent += 100
	return f.applied
}

type fakeConn struct{ f *fakeCluster }

func (c fakeConn) Write(ctx context.Context) error {
	c.f.apply(true)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Millisecond):
		return nil
	}
}

func (c fakeConn) Beat(ctx context.Context, seq int64) error {
	at := c.f.apply(false)
	c.f.mu.Lock()
	c.f.beats = append(c.f.beats, fakeBeat{seq, at})
	c.f.mu.Unlock()
	return nil
}

func (c fakeConn) Seen(context.Context) (int64, error) {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	f.beats = slices.DeleteFunc(f.beats, func(b fakeBeat) bool {
		if b.at.After(now) {
			return false
		}
		f.shown = max(f.shown, b.seq)
		return true
	})
	return f.shown, nil
}

func (c fakeConn) Close() error { return nil }

// TestReplicateKnee: the write-rate search on a fake cluster whose
// replica applies 1.22 times the third step's rate over the TLS link and
// 1.22 times the fifth's over the plain one. Each variant's capacity is
// bracketed by consecutive steps, the lower below the replica's rate
// (above it the lag grows without bound); the search runs no step above
// the one that broke the bound, at most twice each, in ascending order,
// and stops there; every trial ran at its offered rate from a poisson
// schedule. On a loaded machine a stall can end a search early, never
// late: only the upper bounds are asserted, and that plain sustains the
// first step.
func TestReplicateKnee(t *testing.T) {
	if testing.Short() {
		t.Skip("about 20 s of trials")
	}
	raw := plan.Replication{TLS: []string{"off", "1.3"}, Keys: []string{"ecdsa-p256"}, Knee: &plan.Knee{From: 100, To: 5000},
		LagSLO: 100 * time.Millisecond, Duration: 1500 * time.Millisecond, Warmup: 200 * time.Millisecond, Concurrency: []int{4},
		Heartbeat: 10 * time.Millisecond, Timeout: 5 * time.Second}
	p, err := plan.NewReplication(raw)
	if err != nil {
		t.Fatal(err)
	}
	steps := p.Knee.Steps()
	// Between two steps on their log scale: the lower loads the replica
	// to 82%, the upper to 123%.
	f := &fakeCluster{caps: map[string]float64{"off": 1.22 * steps[2+2], "1.3": 1.22 * steps[2]}}
	res := result.New()
	res.Replicate = &result.Replicate{Plan: p}
	var labels []string
	if err := bench.Replicate(context.Background(), res, f, func(_, _ int, label string) { labels = append(labels, label) }); err != nil {
		t.Fatal(err)
	}
	if want := 2 * 2 * len(steps); res.PlannedTrials != want {
		t.Errorf("planned %d trials, want the bound %d (2 variants × 2 tries × %d steps)", res.PlannedTrials, want, len(steps))
	}
	if len(res.Replicate.Capacities) != 2 {
		t.Fatalf("capacities %+v, want one per variant", res.Replicate.Capacities)
	}
	for _, c := range res.Replicate.Capacities {
		tls := strings.TrimSuffix(strings.TrimPrefix(c.Variant, "tls"), " async")
		if c.Variant == "plain async" {
			tls = "off"
		}
		replica := f.caps[tls]
		i := slices.Index(steps, c.Rate) // -1 for 0: not even the first
		switch {
		case c.Rate != 0 && i < 0:
			t.Errorf("%s: capacity %v is no step of %v", c.Variant, c.Rate, steps)
		case c.Rate >= replica:
			t.Errorf("%s: capacity %v/s at or above the replica's %v/s", c.Variant, c.Rate, replica)
		case i+1 >= len(steps) || c.Next != steps[i+1] || c.Why == "":
			t.Errorf("%s: sustained %v, broken at %v (%q): want the next step, %v, with why", c.Variant, c.Rate, c.Next, c.Why, steps[min(i+1, len(steps)-1)])
		case c.Writers != 4:
			t.Errorf("%s: %d writers, want 4", c.Variant, c.Writers)
		}
		var rates []float64
		for _, tr := range res.Trials {
			if tr.Variant != c.Variant {
				continue
			}
			if tr.Open == nil || tr.Open.Process != plan.ArrivalsPoisson || tr.Replication == nil || tr.Replication.Heartbeats == 0 {
				t.Errorf("%s: trial %+v is not an open-loop replicate trial with heartbeats", c.Variant, tr.Open)
				continue
			}
			rates = append(rates, tr.Open.Offered)
			t.Logf("%s at %v/s: achieved %.0f/s, lag p99 %.1f ms %s", c.Variant, tr.Open.Offered, tr.Open.Achieved(), tr.Replication.Lag.P99, tr.OverLag(p.LagSLO, 0))
		}
		if len(rates) != c.Trials || !slices.IsSorted(rates) || len(rates) > 2*(i+2) || rates[len(rates)-1] != c.Next {
			t.Errorf("%s: rates %v over %d trials: want ascending steps up to %v, at most two each", c.Variant, rates, c.Trials, c.Next)
		}
		for _, r := range slices.Compact(slices.Clone(rates)) {
			if n := len(slices.DeleteFunc(slices.Clone(rates), func(x float64) bool { return x != r })); n > 2 {
				t.Errorf("%s: %v/s ran %d times, at most 2", c.Variant, r, n)
			}
		}
	}
	if plain := res.Replicate.Capacities[0]; plain.Rate < steps[0] {
		t.Errorf("plain async: not even the first step %v/s within a 100 ms lag p99 (%s)", steps[0], plain.Why)
	}
	if !slices.ContainsFunc(labels, func(l string) bool { return strings.HasPrefix(l, "tls1.3 async at ") }) {
		t.Errorf("no progress label names a rate: %q", labels)
	}
}

// TestReplicateSweep: -c 1,3 runs every variant at each count of writers
// in every round (round by round, writers by writers, variants
// interleaved), each trial with its writers' sessions and its label.
func TestReplicateSweep(t *testing.T) {
	raw := plan.Replication{TLS: []string{"off", "1.3"}, Keys: []string{"ecdsa-p256"}, Concurrency: []int{1, 3}, Trials: 2,
		Duration: 200 * time.Millisecond, Warmup: 50 * time.Millisecond, Heartbeat: 10 * time.Millisecond}
	p, err := plan.NewReplication(raw)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeCluster{caps: map[string]float64{"off": 1e6, "1.3": 1e6}}
	res := result.New()
	res.Replicate = &result.Replicate{Plan: p}
	var labels []string
	if err := bench.Replicate(context.Background(), res, f, func(_, _ int, label string) {
		if label != "" {
			labels = append(labels, label)
		}
	}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tr := range res.Trials {
		got = append(got, fmt.Sprintf("%d %s c=%d %d", tr.Round, tr.Variant, tr.Concurrency, tr.Conns))
		if tr.Open != nil || tr.Ops == 0 || tr.Replication == nil {
			t.Errorf("trial %s c=%d: open %v, %d writes", tr.Variant, tr.Concurrency, tr.Open, tr.Ops)
		}
	}
	want := []string{"0 plain async c=1 3", "0 tls1.3 async c=1 3", "0 plain async c=3 5", "0 tls1.3 async c=3 5",
		"1 plain async c=1 3", "1 tls1.3 async c=1 3", "1 plain async c=3 5", "1 tls1.3 async c=3 5"}
	if !slices.Equal(got, want) || res.PlannedTrials != 8 {
		t.Errorf("trials (round, variant, writers, sessions) %q of %d planned, want %q of 8", got, res.PlannedTrials, want)
	}
	if len(labels) != 8 || labels[2] != "plain async c=3 #1" {
		t.Errorf("progress labels %q: want 8, the third %q", labels, "plain async c=3 #1")
	}
}

// transferCluster is a fakeCluster that resyncs as Galera does, an
// incremental copy (Resync) and then a whole one (FullResync), and
// delays its own links by cluster.Link.RTT; it records the links it
// was given.
type transferCluster struct {
	*fakeCluster
	links []cluster.Link
}

func (f *transferCluster) SetLink(ctx context.Context, l cluster.Link) (cluster.LinkState, error) {
	f.links = append(f.links, l)
	return f.fakeCluster.SetLink(ctx, l)
}

func (f *transferCluster) Resync(_ context.Context, l cluster.Link) (result.Resync, error) {
	f.links = append(f.links, l)
	return result.Resync{Transfer: "IST", Encrypted: l.TLS != "off", Bytes: 1e6, Elapsed: time.Second}, nil
}

func (f *transferCluster) FullResync(_ context.Context, l cluster.Link) (result.Resync, error) {
	f.links = append(f.links, l)
	return result.Resync{Transfer: "SST", Bytes: 2e6, Elapsed: time.Second}, nil
}

func (f *transferCluster) DelaysLinks() bool { return true }

// TestReplicateTransfers: a cluster whose resync is incremental gets its
// whole copy timed too, each link's IST then SST, each named by the link;
// one that delays its own links gets the run's RTT in every link it is
// given, and no relay (no address to dial instead of the primary's).
func TestReplicateTransfers(t *testing.T) {
	raw := plan.Replication{Lab: "galera", TLS: []string{"off", "1.3"}, Keys: []string{"ecdsa-p256"}, Concurrency: []int{1}, Trials: 1,
		Duration: 200 * time.Millisecond, Warmup: 50 * time.Millisecond, Heartbeat: 10 * time.Millisecond, Resync: true, RTT: 44 * time.Millisecond}
	p, err := plan.NewReplication(raw)
	if err != nil {
		t.Fatal(err)
	}
	f := &transferCluster{fakeCluster: &fakeCluster{caps: map[string]float64{"off": 1e6, "1.3": 1e6}}}
	res := result.New()
	res.Replicate = &result.Replicate{Plan: p}
	if err := bench.Replicate(context.Background(), res, f, nil); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Replicate.Resyncs {
		got = append(got, r.Link+" "+r.Transfer)
	}
	if want := []string{"plain IST", "plain SST", "tls1.3 IST", "tls1.3 SST"}; !slices.Equal(got, want) {
		t.Errorf("resyncs %q, want %q", got, want)
	}
	for _, l := range f.links {
		if l.RTT != p.RTT || l.Addr != "" {
			t.Errorf("a link %+v: want the RTT %v and no relay's address", l, p.RTT)
		}
	}
	for _, n := range res.Notes {
		if strings.Contains(n, "relay") {
			t.Errorf("a note says a relay delays the link: %s", n)
		}
	}
	if len(res.Trials) != 2 {
		t.Errorf("%d trials, want 2", len(res.Trials))
	}
}
