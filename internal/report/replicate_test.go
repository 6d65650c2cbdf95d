package report

import (
	"slices"
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

// TestReplicateSweepReport: a -c 1,4 sweep reports each count of writers
// in its own rows, compares each TLS link with the plain link at the same
// count, and charts commit latency and lag by writers.
func TestReplicateSweepReport(t *testing.T) {
	p, err := plan.NewReplication(plan.Replication{TLS: []string{"off", "1.3"}, Concurrency: []int{1, 4}})
	if err != nil {
		t.Fatal(err)
	}
	r := result.New()
	r.Replicate = &result.Replicate{Plan: p}
	for _, v := range p.Variants() {
		r.Variants = append(r.Variants, v.Variant())
	}
	for round := range 3 {
		for _, c := range p.Concurrency {
			for _, v := range p.Variants() {
				p99, writes := 2.0*float64(c)+float64(round)*0.1, 1000.0*float64(c)
				if v.TLS != "off" {
					p99 += float64(c)
				}
				rep := &result.Replication{Commit: result.Hist{Count: 10, P50: 0.5, P95: 1, P99: p99}, Lag: result.Hist{Count: 50, P50: 1, P99: 3 * float64(c), Max: 9},
					LagResolution: 3 * time.Millisecond, Heartbeats: 50, WritesPerSec: writes, LinkBytes: 5e6, LinkEncrypted: v.TLS != "off", Sync: v.Sync}
				r.Trials = append(r.Trials, result.Trial{Experiment: plan.Replicate, Variant: v.ID, Concurrency: c, Round: round,
					Elapsed: 5 * time.Second, Ops: int64(writes * 5), Latency: rep.Commit, Replication: rep})
			}
		}
	}
	m := Build(r)
	var text strings.Builder
	if err := m.Text(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"writers  variant",
		"Replication link tls1.3 async against plain async at 1 writer: commit p99 +1.00 ms",
		"Replication link tls1.3 async against plain async at 4 writers: commit p99 +4.00 ms",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, text.String())
		}
	}
	ids := figureIDs(m)
	for _, want := range []string{"replicate-commit-writers", "replicate-lag-writers"} {
		if !slices.Contains(ids, want) {
			t.Errorf("no figure %s among %q", want, ids)
		}
	}
}

// TestReplicateKneeReport: a write-rate search's trials go to their own
// table, with each rate's verdict against the bounds, and its capacities,
// as the run bracketed them, to a finding that sets TLS against plain and
// says the search's resolution; its chart draws commit latency and lag
// against the rate, with the lag SLO.
func TestReplicateKneeReport(t *testing.T) {
	_, knee, _ := plan.ParseRates("100..1000")
	p, err := plan.NewReplication(plan.Replication{TLS: []string{"off", "1.3"}, Knee: knee})
	if err != nil {
		t.Fatal(err)
	}
	r := result.New()
	r.Replicate = &result.Replicate{Plan: p, Capacities: []result.LagCapacity{
		{Variant: "plain async", Writers: 4, Rate: 340, Next: 510, Why: "lag p99 1500.0 ms above 1s", Trials: 6},
		{Variant: "tls1.3 async", Writers: 4, Rate: 230, Next: 340, Why: "lag p99 1200.0 ms above 1s", Trials: 5},
	}}
	for _, v := range p.Variants() {
		r.Variants = append(r.Variants, v.Variant())
	}
	for _, c := range r.Replicate.Capacities {
		for step, rate := range p.Knee.Steps() {
			if rate > c.Next {
				break
			}
			lag := 5.0
			if rate == c.Next {
				lag = 1500
			}
			rep := &result.Replication{Commit: result.Hist{Count: 10, P50: 0.5, P99: 2}, Lag: result.Hist{Count: 100, P50: 1, P99: lag, Max: lag}, Heartbeats: 100, WritesPerSec: rate}
			r.Trials = append(r.Trials, result.Trial{Experiment: plan.Replicate, Variant: c.Variant, Concurrency: 4, Round: step,
				Elapsed: 2 * time.Second, Ops: int64(2 * rate), Latency: rep.Commit, Replication: rep,
				Open: &result.OpenLoop{Offered: rate, Process: plan.ArrivalsPoisson, Arrivals: int64(2 * rate), Window: 2 * time.Second,
					Schedule: &result.Schedule{Due: int64(2 * rate), Started: int64(2 * rate)}}})
		}
	}
	m := Build(r)
	var text strings.Builder
	if err := m.Text(&text); err != nil {
		t.Fatal(err)
	}
	for _, f := range Findings(r) {
		text.WriteString("\n" + f.Text) // unwrapped
	}
	for _, want := range []string{
		"replicate at write rates (--rate, poisson arrivals)",
		"no: lag p99 1500.0 ms above 1s",
		"Write capacity with 4 writers, the replica's heartbeat lag p99 under 1s: plain async sustains 340 writes/s (510/s broke it: lag p99 1500.0 ms above 1s), tls1.3 async 230 (-32.4% against plain async; 340/s broke it",
		"one step of difference is within the search's resolution",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, text.String())
		}
	}
	if strings.Contains(text.String(), "replicate: writes on the primary and their commit latency") {
		t.Errorf("the search's steps were averaged into the closed loop's table:\n%s", text.String())
	}
	ids := figureIDs(m)
	for _, want := range []string{"replicate-commit-rate", "replicate-lag-rate"} {
		if !slices.Contains(ids, want) {
			t.Errorf("no figure %s among %q", want, ids)
		}
	}
}

func figureIDs(m *Model) []string {
	var ids []string
	for _, f := range m.Figures {
		ids = append(ids, f.ID)
	}
	return ids
}
