package bench_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/cluster"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// startCluster starts a lab PostgreSQL cluster for t (skipped under
// -short), stopped when t ends.
func startCluster(t *testing.T) *lab.PostgresCluster {
	t.Helper()
	labtest.Slow(t)
	c, err := lab.StartPostgresCluster(context.Background(), lab.Options{Keys: []string{"ecdsa-p256"}})
	labtest.Check(t, err)
	t.Cleanup(func() { c.Stop() })
	return c
}

// replicatePlan is a short plan: one trial per variant.
func replicatePlan(t *testing.T, raw plan.Replication) plan.Replication {
	t.Helper()
	raw.Keys = []string{"ecdsa-p256"}
	if raw.Duration == 0 {
		raw.Duration = 2 * time.Second
	}
	raw.Warmup, raw.Trials, raw.Concurrency = 200*time.Millisecond, 1, []int{2}
	raw.Give("warmup")
	p, err := plan.NewReplication(raw)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReplicateLinks: each trial's link is what its variant asked for, as
// the primary showed it (TLS 1.3 or plain); writes, heartbeats, WAL sent
// and both nodes' CPU are counted; every heartbeat reached the replica;
// and the heartbeat's lag agrees with the server's replay_lag within the
// heartbeat's resolution (the poll interval plus a read), with 5 ms more
// for a busy machine's scheduling of the poll. remote_apply commits only
// once the replica has applied them: its heartbeats are seen at once.
func TestReplicateLinks(t *testing.T) {
	c := startCluster(t)
	res := result.New()
	res.Replicate = &result.Replicate{Plan: replicatePlan(t, plan.Replication{TLS: []string{"off", "1.3"}, Sync: []string{"off", "remote_apply"}})}
	if err := bench.Replicate(context.Background(), res, c, nil); err != nil {
		t.Fatal(err)
	}
	if len(res.Trials) != 4 || len(res.Variants) != 4 {
		t.Fatalf("%d trials of %d variants, want 4 of 4", len(res.Trials), len(res.Variants))
	}
	for _, tr := range res.Trials {
		r := tr.Replication
		tls := strings.HasPrefix(tr.Variant, "tls1.3")
		if r.LinkEncrypted != tls || tls && r.LinkTLS != "TLSv1.3" {
			t.Errorf("%s: link encrypted=%v %q", tr.Variant, r.LinkEncrypted, r.LinkTLS)
		}
		if tr.Ops == 0 || r.Heartbeats < 10 || r.Unseen != 0 || r.BehindTimeout || r.LinkBytes <= 0 || r.PrimaryCPU <= 0 || r.ReplicaCPU <= 0 {
			t.Errorf("%s: %d writes, %d heartbeats (%d unseen), %d WAL bytes, CPU %v/%v", tr.Variant, tr.Ops, r.Heartbeats, r.Unseen, r.LinkBytes, r.PrimaryCPU, r.ReplicaCPU)
		}
		if r.Commit.Count != tr.Ops || r.Lag.Count != r.Heartbeats {
			t.Errorf("%s: %d commits timed of %d, %d lags of %d heartbeats", tr.Variant, r.Commit.Count, tr.Ops, r.Lag.Count, r.Heartbeats)
		}
		res := float64(r.LagResolution) / 1e6
		if r.ServerLag.Count > 0 && math.Abs(r.Lag.P50-r.ServerLag.P50) > res+5 {
			t.Errorf("%s: heartbeat lag p50 %.3f ms, server replay_lag p50 %.3f ms: further apart than the resolution %.3f ms + 5", tr.Variant, r.Lag.P50, r.ServerLag.P50, res)
		}
		if r.Sync == "remote_apply" && r.Lag.P50 > res {
			t.Errorf("%s: heartbeat lag p50 %.3f ms under remote_apply, want 0 within the resolution %.3f ms", tr.Variant, r.Lag.P50, res)
		}
	}
}

// TestReplicateNodeKilled: a replica killed mid-trial ends the run with
// an error that says, on its first line, that the replica is gone; the
// trial before it is kept; Stop leaves no process of the cluster.
func TestReplicateNodeKilled(t *testing.T) {
	c := startCluster(t)
	res := result.New()
	res.Replicate = &result.Replicate{Plan: replicatePlan(t, plan.Replication{TLS: []string{"off", "1.3"}, Duration: 20 * time.Second})}
	replica, primary := postmasterPID(t, c.Replica), postmasterPID(t, c.Primary)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	err := bench.Replicate(ctx, res, c, func(done, _ int, label string) {
		if done == 1 && label != "" { // the second trial begins
			time.AfterFunc(2*time.Second, func() { syscall.Kill(replica, syscall.SIGKILL) })
		}
	})
	if len(res.Trials) != 1 || res.Error == "" {
		t.Errorf("%d trials kept, error %q: want the first trial and the error", len(res.Trials), res.Error)
	}
	if d := time.Since(start); d > 50*time.Second {
		t.Errorf("the run took %v to end after the kill: its 20 s trial ran on", d)
	}
	endedByKill(t, err, "replica", c.Stop, replica, primary)
}

// postmasterPID is the pid in a lab PostgreSQL's postmaster.pid.
func postmasterPID(t *testing.T, s *lab.Postgres) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(filepath.Dir(s.LogFile()), "data", "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(data), "\n")
	pid, err := strconv.Atoi(first)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// TestReplicateRTT: --rtt delays the replication link alone: a
// synchronous commit waits at least one round trip, an asynchronous
// heartbeat reaches the replica no sooner than half of one after its
// commit began, and an asynchronous commit, which does not wait for the
// replica, stays under one round trip at its median. The asynchronous
// trial runs second: its heartbeats must not be taken as seen from the
// row the synchronous trial left (they were once, all at lag 0).
func TestReplicateRTT(t *testing.T) {
	c := startCluster(t)
	const rtt = 30 * time.Millisecond
	res := result.New()
	res.Replicate = &result.Replicate{Plan: replicatePlan(t, plan.Replication{TLS: []string{"1.3"}, Sync: []string{"on", "off"}, RTT: rtt})}
	if err := bench.Replicate(context.Background(), res, c, nil); err != nil {
		t.Fatal(err)
	}
	ms := float64(rtt) / 1e6
	for _, tr := range res.Trials {
		r := tr.Replication
		switch r.Sync {
		case "on":
			if r.Commit.P50 < ms {
				t.Errorf("%s: commit p50 %.3f ms, under the link's RTT %.0f ms", tr.Variant, r.Commit.P50, ms)
			}
		case "off":
			if r.Commit.P50 >= ms {
				t.Errorf("%s: commit p50 %.3f ms, at least the link's RTT %.0f ms, which an asynchronous commit does not wait for", tr.Variant, r.Commit.P50, ms)
			}
			// The lag is from the commit's answer, which comes after the
			// WAL left: the bound is half an RTT less the commit's time.
			if r.Lag.P50 < ms/2-r.Commit.P50 {
				t.Errorf("%s: heartbeat lag p50 %.3f ms, under half the link's RTT %.0f ms", tr.Variant, r.Lag.P50, ms)
			}
		}
	}
	if !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "on the replication link only") }) {
		t.Errorf("no note says the RTT is the replication link's: %q", res.Notes)
	}
}

// TestReplicateRedis: the same engine on a Redis cluster: each link
// verified from the primary, writes and heartbeats counted, every
// heartbeat seen, no server lag of Redis's own.
func TestReplicateRedis(t *testing.T) {
	labtest.Slow(t)
	c, err := lab.StartRedisCluster(context.Background(), lab.Options{Keys: []string{"ecdsa-p256"}})
	labtest.Check(t, err)
	t.Cleanup(func() { c.Stop() })
	res := result.New()
	res.Replicate = &result.Replicate{Plan: replicatePlan(t, plan.Replication{Lab: "redis", TLS: []string{"1.3", "off"}})}
	if err := bench.Replicate(context.Background(), res, c, nil); err != nil {
		t.Fatal(err)
	}
	if len(res.Trials) != 2 {
		t.Fatalf("%d trials, want 2", len(res.Trials))
	}
	for _, tr := range res.Trials {
		r := tr.Replication
		if r.LinkEncrypted != strings.HasPrefix(tr.Variant, "tls1.3") {
			t.Errorf("%s: link encrypted=%v", tr.Variant, r.LinkEncrypted)
		}
		if tr.Ops == 0 || r.Heartbeats < 10 || r.Unseen != 0 || r.LinkBytes <= 0 || r.ServerLag.Count != 0 {
			t.Errorf("%s: %d writes, %d heartbeats (%d unseen), %d bytes sent, %d server lag samples", tr.Variant, tr.Ops, r.Heartbeats, r.Unseen, r.LinkBytes, r.ServerLag.Count)
		}
	}
}

// TestReplicateUserCluster: a cluster of the user's, given by URLs (here
// a lab cluster's, its link set to TLS 1.3 beforehand), is measured as it
// is: one variant, the link the primary shows, no CPU; tlsbench's tables
// are dropped at the end. A primary without a replica is refused in one
// line.
func TestReplicateUserCluster(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	if _, err := c.SetLink(ctx, cluster.Link{TLS: "1.3", Key: "ecdsa-p256", Sync: "on"}); err != nil {
		t.Fatal(err)
	}
	primary, _ := c.Primary.URL("", false)
	replica, _ := c.Replica.URL("", false)
	p, err := plan.NewReplication(plan.Replication{Primary: primary + "?sslmode=disable", Replica: replica + "?sslmode=disable",
		Duration: time.Second, Trials: 1, Warmup: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(p.Primary, strings.Split(strings.TrimPrefix(primary, "postgres://bench_scram:"), "@")[0]) {
		t.Fatalf("the plan keeps the password: %s", p.Primary)
	}
	pu, ru := p.URLs()
	u, err := lab.OpenUserCluster(ctx, pu, ru)
	if err != nil {
		t.Fatal(err)
	}
	res := result.New()
	res.Replicate = &result.Replicate{Plan: p}
	err = bench.Replicate(ctx, res, u, nil)
	if serr := u.Stop(); err == nil {
		err = serr
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Trials) != 1 {
		t.Fatalf("%d trials, want 1", len(res.Trials))
	}
	r := res.Trials[0].Replication
	if !r.LinkEncrypted || r.LinkTLS != "TLSv1.3" || r.Sync != "sync" || r.PrimaryCPU != 0 || res.Trials[0].Ops == 0 || r.Unseen != 0 {
		t.Errorf("the user's cluster: link %v %q, sync %q, CPU %v, %d writes, %d unseen", r.LinkEncrypted, r.LinkTLS, r.Sync, r.PrimaryCPU, res.Trials[0].Ops, r.Unseen)
	}
	again, err := lab.OpenUserCluster(ctx, pu, ru) // it creates the tables: they must be gone
	if err != nil {
		t.Errorf("the tables were not dropped: a second run cannot start: %v", err)
	} else if err := again.Stop(); err != nil {
		t.Error(err)
	}

	alone := labtest.Start(t, "postgres", lab.Options{Keys: []string{"ecdsa-p256"}})
	single, _ := alone.URL("", false)
	_, err = lab.OpenUserCluster(ctx, single+"?sslmode=disable", single+"?sslmode=disable")
	if err == nil || !strings.Contains(err.Error(), "no replica streaming from it") || strings.Contains(err.Error(), "\n") {
		t.Errorf("a primary without a replica: %v", err)
	}
}
