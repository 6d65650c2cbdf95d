package report

import (
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// TestReplicateGaleraReport: a Galera result shows its third node's CPU
// per write, its variants by their one commit mode, its own view (node
// 2's receive queue, flow control) in words, and its resyncs as an IST
// and an SST per link, each said encrypted or plain.
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
	// Its resync is two state transfers per link: the IST over the
	// group link's TLS, the SST plain.
	for _, v := range p.Variants() {
		r.Replicate.Resyncs = append(r.Replicate.Resyncs,
			result.Resync{Link: v.LinkID, Transfer: "IST", Encrypted: v.TLS != "off", Bytes: 64e6, Elapsed: 2 * time.Second, SourceCPU: time.Second, DestCPU: time.Second, Shown: "node 3: Receiving IST: 64 writesets"},
			result.Resync{Link: v.LinkID, Transfer: "SST", Bytes: 200e6, Elapsed: 4 * time.Second, SourceCPU: time.Second, DestCPU: 2 * time.Second, Shown: "node 3: SST received"})
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
		"state transfers from node 1 to node 3",
		"tls1.3 IST (encrypted)",
		"tls1.3 SST (plain)",
		"plain IST (plain)",
		"joiner CPU ms/MB",
		"tls1.3 IST (encrypted): node 3: Receiving IST: 64 writesets",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, text.String())
		}
	}
}
