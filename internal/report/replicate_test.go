package report

import (
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// replicateResult is a replicate result of three rounds over plain and
// TLS 1.3 links, asynchronous and remote_apply: TLS adds 2 ms (±0.2) to
// the commit p99 in each round, and the remote_apply writes are slower.
func replicateResult(t *testing.T) *result.Result {
	t.Helper()
	p, err := plan.NewReplication(plan.Replication{TLS: []string{"off", "1.3"}, Sync: []string{"off", "remote_apply"}})
	if err != nil {
		t.Fatal(err)
	}
	r := result.New()
	r.Replicate = &result.Replicate{Plan: p, Built: &result.Resync{Method: "pg_basebackup", Bytes: 40e6, Elapsed: 2 * time.Second, SourceCPU: 80 * time.Millisecond, DestCPU: 400 * time.Millisecond}}
	for _, v := range p.Variants() {
		r.Variants = append(r.Variants, v.Variant())
	}
	for round := range 3 {
		for _, v := range p.Variants() {
			p99, writes := 5.0+float64(round)*0.1, 8000.0
			if v.TLS != "off" {
				p99 += 2 + float64(round)*0.1
				writes = 6000
			}
			if v.Sync != "off" {
				p99, writes = p99*2, writes/3
			}
			rep := &result.Replication{Commit: result.Hist{Count: 10, P50: 0.2, P95: 1, P99: p99}, Lag: result.Hist{Count: 50, P50: 2, P99: 8, Max: 9},
				LagResolution: 3 * time.Millisecond, Heartbeats: 50, WritesPerSec: writes, LinkBytes: 5e6,
				PrimaryCPU: time.Second, ReplicaCPU: 300 * time.Millisecond, LinkEncrypted: v.TLS != "off", Sync: v.Sync}
			if rep.LinkEncrypted {
				rep.LinkTLS = "TLSv1.3"
			}
			r.Trials = append(r.Trials, result.Trial{Experiment: plan.Replicate, Variant: v.ID, Concurrency: 4, Round: round,
				Elapsed: 5 * time.Second, Ops: int64(writes * 5), Latency: rep.Commit, Replication: rep})
		}
	}
	return r
}

// TestReplicateReport: the tables compare each TLS link with the plain
// link of its own commit mode, in the text, the findings and the CSV.
func TestReplicateReport(t *testing.T) {
	m := Build(replicateResult(t))
	var text strings.Builder
	if err := m.Text(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"replicate: writes on the primary and their commit latency, mean (stddev) over 3 trials",
		"replicate: replica lag by heartbeat, ms",
		"TLSv1.3",
		"the replica's build (plain, to disk)",
		"Replication link tls1.3 async against plain async: commit p99 +2.10 ms (±0.248); writes/s -25.0%",
		"Replication link tls1.3 sync=remote_apply against plain sync=remote_apply: commit p99 +4.20 ms",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, text.String())
		}
	}
	if strings.Contains(text.String(), "No plain variant") {
		t.Errorf("the report says no plain variant was measured:\n%s", text.String())
	}
	var csv strings.Builder
	if err := m.CSV(&csv); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(csv.String(), "\n") {
		if strings.HasPrefix(line, "replicate,tls1.3 sync=remote_apply,") && !strings.Contains(line, ",-24.99") {
			t.Errorf("CSV compares remote_apply's TLS link with another mode's plain one: %s", line)
		}
	}
}
