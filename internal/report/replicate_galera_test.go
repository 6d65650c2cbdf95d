package report

import (
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// TestReplicateGaleraReport: a Galera result shows its third node's CPU
// per write, its variants by their one commit mode, and its own view
// (node 2's receive queue, flow control) in words.
func TestReplicateGaleraReport(t *testing.T) {
	p, err := plan.NewReplication(plan.Replication{Lab: "galera", TLS: []string{"off", "1.3"}})
	if err != nil {
		t.Fatal(err)
	}
	r := result.New()
	r.Replicate = &result.Replicate{Plan: p}
	for _, v := range p.Variants() {
		r.Variants = append(r.Variants, v.Variant())
	}
	for round := range 2 {
		for _, v := range p.Variants() {
			rep := &result.Replication{Commit: result.Hist{Count: 10, P50: 1, P95: 2, P99: 3}, Lag: result.Hist{Count: 50, P50: 1, P99: 4, Max: 5},
				LagResolution: 3 * time.Millisecond, Heartbeats: 50, WritesPerSec: 1000, LinkBytes: 1e6,
				PrimaryCPU: time.Second, ReplicaCPU: 500 * time.Millisecond, NodeCPU: []time.Duration{time.Second, 500 * time.Millisecond, 250 * time.Millisecond},
				ServerQueueMax: 7, FlowControlPaused: 0.25, LinkEncrypted: v.TLS != "off", Sync: v.Sync}
			r.Trials = append(r.Trials, result.Trial{Experiment: plan.Replicate, Variant: v.ID, Concurrency: 4, Round: round,
				Elapsed: 5 * time.Second, Ops: 5000, Latency: rep.Commit, Replication: rep})
		}
	}
	var text strings.Builder
	if err := Build(r).Text(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"node 3 µs/write",
		"50.0", // node 3: 250 ms over 5,000 writes
		"tls1.3 galera",
		"plain galera: node 2's wsrep_local_recv_queue held at most 7 writes; flow control paused replication 25.0",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, text.String())
		}
	}
}
