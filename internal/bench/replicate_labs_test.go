package bench_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// TestReplicatePostgres18: a PostgreSQL 18 cluster (the npm build, which
// has no pg_basebackup: the replica is a file copy between
// pg_backup_start and pg_backup_stop) replicates over a plain and a TLS
// 1.3 link, each as pg_stat_ssl shows it from the primary, every
// heartbeat reaching the replica.
func TestReplicatePostgres18(t *testing.T) {
	labtest.Slow(t)
	c, err := lab.StartPostgresCluster(context.Background(), lab.Options{Keys: []string{"ecdsa-p256"}, Version: "18"})
	labtest.Check(t, err)
	t.Cleanup(func() { c.Stop() })
	if v := c.Primary.Info().Version; !strings.HasPrefix(v, "18") {
		t.Fatalf("the primary is PostgreSQL %s, want 18", v)
	}
	if !strings.Contains(c.Built.Method, "pg_backup_start") || c.Built.Bytes <= 0 {
		t.Errorf("the replica's build: %+v", c.Built)
	}
	for _, tr := range linksChecked(t, c, plan.Replication{Lab: "postgres:18", TLS: []string{"off", "1.3"}, Sync: []string{"off", "on"}}, 4) {
		r := tr.Replication
		if tr.Ops == 0 || r.Heartbeats < 10 || r.Unseen != 0 || r.LinkBytes <= 0 {
			t.Errorf("%s: %d writes, %d heartbeats (%d unseen), %d WAL bytes", tr.Variant, tr.Ops, r.Heartbeats, r.Unseen, r.LinkBytes)
		}
	}
}

// startRedisCluster starts a lab Redis cluster for t (skipped under
// -short), stopped when t ends.
func startRedisCluster(t *testing.T) *lab.RedisCluster {
	t.Helper()
	labtest.Slow(t)
	c, err := lab.StartRedisCluster(context.Background(), lab.Options{Keys: []string{"ecdsa-p256"}})
	labtest.Check(t, err)
	t.Cleanup(func() { c.Stop() })
	return c
}

// TestReplicateRedisResync: --resync on Redis times a full sync over
// each link: the whole data set (200,000 keys of 100 bytes: over 20 MB)
// crossed it, with both nodes' CPU.
func TestReplicateRedisResync(t *testing.T) {
	c := startRedisCluster(t)
	res := result.New()
	res.Replicate = &result.Replicate{Plan: replicatePlan(t, plan.Replication{Lab: "redis", TLS: []string{"off", "1.3"}, Resync: true, Duration: time.Second})}
	if err := bench.Replicate(context.Background(), res, c, nil); err != nil {
		t.Fatal(err)
	}
	if len(res.Replicate.Resyncs) != 2 {
		t.Fatalf("resyncs %+v, want one per link", res.Replicate.Resyncs)
	}
	for _, r := range res.Replicate.Resyncs {
		if r.Bytes < 20e6 || r.Elapsed <= 0 || r.SourceCPU <= 0 || r.DestCPU <= 0 || !strings.Contains(r.Method, "full sync") {
			t.Errorf("resync over %s: %d bytes in %v, CPU %v/%v, %q", r.Link, r.Bytes, r.Elapsed, r.SourceCPU, r.DestCPU, r.Method)
		}
	}
}

// TestReplicateRedisRTT: --rtt on a Redis cluster delays the replication
// link alone, plain and TLS (whose relay dials the tls-port): a
// heartbeat reaches the replica no sooner than half a round trip after
// its commit's answer, less the commit's own time, and the commit, which
// does not wait for the replica, stays under one round trip.
func TestReplicateRedisRTT(t *testing.T) {
	c := startRedisCluster(t)
	const rtt = 40 * time.Millisecond
	res := result.New()
	res.Replicate = &result.Replicate{Plan: replicatePlan(t, plan.Replication{Lab: "redis", TLS: []string{"off", "1.3"}, RTT: rtt})}
	if err := bench.Replicate(context.Background(), res, c, nil); err != nil {
		t.Fatal(err)
	}
	ms := float64(rtt) / 1e6
	for _, tr := range res.Trials {
		r := tr.Replication
		if r.LinkEncrypted != strings.HasPrefix(tr.Variant, "tls") {
			t.Errorf("%s: link encrypted=%v", tr.Variant, r.LinkEncrypted)
		}
		if r.Lag.P50 < ms/2-r.Commit.P50 {
			t.Errorf("%s: heartbeat lag p50 %.3f ms, under half the link's RTT %.0f ms", tr.Variant, r.Lag.P50, ms)
		}
		if r.Commit.P50 >= ms {
			t.Errorf("%s: commit p50 %.3f ms, at least the link's RTT %.0f ms, which an asynchronous commit does not wait for", tr.Variant, r.Commit.P50, ms)
		}
	}
}
