package bench_test

import (
	"context"
	"math"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// linksChecked runs p on the lab cluster c and returns its trials, want
// of them, each checked to have the link of its variant (plain or TLS 1.3)
// as the servers showed it.
func linksChecked(t *testing.T, c bench.Cluster, p plan.Replication, want int) []result.Trial {
	t.Helper()
	res := result.New()
	res.Replicate = &result.Replicate{Plan: replicatePlan(t, p)}
	if err := bench.Replicate(context.Background(), res, c, nil); err != nil {
		t.Fatal(err)
	}
	if len(res.Trials) != want {
		t.Fatalf("%d trials, want %d", len(res.Trials), want)
	}
	for _, tr := range res.Trials {
		r := tr.Replication
		tls := strings.HasPrefix(tr.Variant, "tls1.3")
		if r.LinkEncrypted != tls || tls && r.LinkTLS != "TLSv1.3" {
			t.Errorf("%s: link encrypted=%v %q", tr.Variant, r.LinkEncrypted, r.LinkTLS)
		}
	}
	return res.Trials
}

// plainAndTLS13 runs one short trial of a plain and a TLS 1.3 link on
// the lab cluster c of engine lab (linksChecked).
func plainAndTLS13(t *testing.T, c bench.Cluster, lab string) []result.Trial {
	t.Helper()
	return linksChecked(t, c, plan.Replication{Lab: lab, TLS: []string{"off", "1.3"}}, 2)
}

// TestReplicateMariaDB: the engine on a MariaDB primary and replica: each
// trial's link as the primary's performance_schema showed it, writes,
// heartbeats and bytes counted, every heartbeat seen on the replica, both
// nodes' CPU; and the heartbeat's lag agrees with Seconds_Behind_Master
// within its resolution (1 s, whole seconds). With --rtt, the link alone
// is delayed.
func TestReplicateMariaDB(t *testing.T) {
	labtest.Slow(t)
	c, err := lab.StartMariaDBCluster(context.Background(), lab.Options{Keys: []string{"ecdsa-p256"}})
	labtest.Check(t, err)
	t.Cleanup(func() { c.Stop() })
	for _, tr := range plainAndTLS13(t, c, "mariadb") {
		r := tr.Replication
		if tr.Ops == 0 || r.Heartbeats < 10 || r.Unseen != 0 || r.BehindTimeout || r.LinkBytes <= 0 || len(r.NodeCPU) != 2 || r.PrimaryCPU <= 0 || r.ReplicaCPU <= 0 {
			t.Errorf("%s: %d writes, %d heartbeats (%d unseen), %d bytes sent, CPU %v", tr.Variant, tr.Ops, r.Heartbeats, r.Unseen, r.LinkBytes, r.NodeCPU)
		}
		if r.ServerLag.Count == 0 {
			t.Errorf("%s: no Seconds_Behind_Master sampled", tr.Variant)
		}
		if res := float64(r.LagResolution)/1e6 + 1000; math.Abs(r.Lag.P50-r.ServerLag.P50) > res {
			t.Errorf("%s: heartbeat lag p50 %.3f ms, Seconds_Behind_Master p50 %.0f ms: further apart than 1 s and the heartbeat's resolution", tr.Variant, r.Lag.P50, r.ServerLag.P50)
		}
	}

	// --rtt: the replica dials the primary through the delaying relay;
	// an asynchronous commit does not wait for it, the heartbeat does.
	const rtt = 30 * time.Millisecond
	res := result.New()
	res.Replicate = &result.Replicate{Plan: replicatePlan(t, plan.Replication{Lab: "mariadb", TLS: []string{"1.3"}, RTT: rtt})}
	if err := bench.Replicate(context.Background(), res, c, nil); err != nil {
		t.Fatal(err)
	}
	ms := float64(rtt) / 1e6
	if r := res.Trials[0].Replication; r.Commit.P50 >= ms || r.Lag.P50 < ms/2-r.Commit.P50 || r.LinkTLS != "TLSv1.3" {
		t.Errorf("rtt %v: commit p50 %.3f ms, heartbeat lag p50 %.3f ms, link %q: want a commit under one RTT, a lag of half one or more, TLS 1.3", rtt, r.Commit.P50, r.Lag.P50, r.LinkTLS)
	}
}

// TestReplicateGalera: the engine on a Galera cluster: each trial's group
// link as the nodes showed it, all three nodes' CPU, every heartbeat seen
// on node 2, node 1's replicated bytes. Then a node killed mid-run ends
// the run with an error whose first line names it, and Stop leaves no
// process.
func TestReplicateGalera(t *testing.T) {
	labtest.Slow(t)
	c, err := lab.StartGaleraCluster(context.Background(), lab.Options{Keys: []string{"ecdsa-p256"}})
	labtest.Check(t, err)
	t.Cleanup(func() { c.Stop() })
	for _, tr := range plainAndTLS13(t, c, "galera") {
		r := tr.Replication
		if r.Sync != plan.GaleraSync {
			t.Errorf("%s: sync %q", tr.Variant, r.Sync)
		}
		if tr.Ops == 0 || r.Heartbeats < 10 || r.Unseen != 0 || r.LinkBytes <= 0 || len(r.NodeCPU) != 3 || r.NodeCPU[2] <= 0 {
			t.Errorf("%s: %d writes, %d heartbeats (%d unseen), %d bytes replicated, CPU %v", tr.Variant, tr.Ops, r.Heartbeats, r.Unseen, r.LinkBytes, r.NodeCPU)
		}
		if r.FlowControlPaused < 0 || r.FlowControlPaused > 1 {
			t.Errorf("%s: flow control paused %.3f of the trial", tr.Variant, r.FlowControlPaused)
		}
	}

	// The same TLS 1.3 link (no restart), node 2 killed in the trial.
	res := result.New()
	res.Replicate = &result.Replicate{Plan: replicatePlan(t, plan.Replication{Lab: "galera", TLS: []string{"1.3"}, Duration: 20 * time.Second})}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var pids []int
	var killed time.Time
	err = bench.Replicate(ctx, res, c, func(done, _ int, label string) {
		if done == 0 && label != "" {
			pids, killed = c.PIDs(), time.Now().Add(3*time.Second)
			time.AfterFunc(3*time.Second, func() { syscall.Kill(pids[1], syscall.SIGKILL) })
		}
	})
	if len(res.Trials) != 0 || res.Error == "" {
		t.Errorf("%d trials kept, error %q: want none and the error", len(res.Trials), res.Error)
	}
	if d := time.Since(killed); d > 15*time.Second {
		t.Errorf("the run took %v to end after the kill: its 20 s trial ran on", d)
	}
	endedByKill(t, err, "node 2", c.Stop, pids...)
}

// endedByKill checks a run whose node was killed: err's first line says
// that node exited, and stop leaves none of pids running.
func endedByKill(t *testing.T, err error, node string, stop func() error, pids ...int) {
	t.Helper()
	if err == nil {
		t.Fatalf("a run whose %s was killed ended without an error", node)
	}
	first, _, _ := strings.Cut(err.Error(), "\n")
	if !strings.Contains(first, node) || !strings.Contains(first, "exited") {
		t.Errorf("error's first line %q does not say the %s exited", first, node)
	}
	if err := stop(); err != nil && !strings.Contains(err.Error(), "exited by itself") {
		t.Errorf("stop: %v", err)
	}
	for _, pid := range pids {
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("process %d is still there after Stop", pid)
		}
	}
}
