package result

import (
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
)

// Replicate is what a replicate run (tlsbench replicate) asked for and
// learned beyond its trials: its plan, and a full resync per variant.
type Replicate struct {
	Plan plan.Replication `json:"plan"`
	// Resyncs are a whole copy of the primary over each link of the
	// variants (pg_basebackup), once before the trials; Built is the
	// copy that made the replica, over a plain link.
	Resyncs []Resync `json:"resyncs,omitempty"`
	Built   *Resync  `json:"built,omitempty"`
	// Capacities are a write-rate search's outcome (--rate auto): per
	// variant and writers, the highest rate sustained and the step that
	// broke it.
	Capacities []LagCapacity `json:"capacities,omitempty"`
}

// Resync is one full copy of a primary to a replica: its bytes, time
// and the CPU of each end.
type Resync struct {
	// Link is the replication link copied over ("plain", "tls1.3"),
	// "" for the replica's build.
	Link    string        `json:"link,omitempty"`
	Method  string        `json:"method"` // "pg_basebackup -F tar -X fetch ..."
	Bytes   int64         `json:"bytes"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// SourceCPU is the primary's processes' CPU over the copy, DestCPU
	// the copying program's own (pg_basebackup, on the replica's side).
	SourceCPU time.Duration `json:"source_cpu_ns"`
	DestCPU   time.Duration `json:"dest_cpu_ns"`
	// Transfer is a Galera state transfer's kind, "IST" or "SST"
	// (donor: the source, joiner: the destination); "" elsewhere.
	// Encrypted is whether it was, as the nodes' logs showed, which
	// Shown quotes.
	Transfer  string `json:"transfer,omitempty"`
	Encrypted bool   `json:"encrypted,omitempty"`
	Shown     string `json:"shown,omitempty"`
}

// MBPerSec is the copy's rate in MB (10^6 bytes) per second.
func (r Resync) MBPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Bytes) / 1e6 / r.Elapsed.Seconds()
}

// Replication is a replicate trial's own figures: the writes' commit
// latency on the primary, the replica's lag behind them, the link and
// each node's CPU.
type Replication struct {
	// Commit is each write's commit latency on the primary, as the
	// client saw it (Trial.Latency holds the same).
	Commit Hist `json:"commit_ms"`
	// Lag is, per heartbeat, the time from its commit's answer on the
	// primary to its first sight on the replica, both on tlsbench's
	// clock; 0 when the replica had it before the commit answered
	// (remote_apply). Its resolution is LagResolution.
	Lag           Hist          `json:"lag_ms"`
	LagResolution time.Duration `json:"lag_resolution_ns"`
	// Heartbeats is how many heartbeats were written, Unseen how many the
	// replica had not shown by the end of the trial's drain (--timeout).
	Heartbeats int64 `json:"heartbeats"`
	Unseen     int64 `json:"unseen,omitempty"`
	// ServerLag is the primary's own view, PostgreSQL's
	// pg_stat_replication.replay_lag, sampled during the trial (its
	// non-NULL samples); empty for Redis, which has none.
	ServerLag Hist `json:"server_lag_ms"`
	// ServerQueueMax is the most writes the read node had received but
	// not applied in the trial's samples, FlowControlPaused the fraction
	// of the trial flow control paused replication (Galera's
	// wsrep_local_recv_queue and wsrep_flow_control_paused_ns); zero for
	// the other engines.
	ServerQueueMax    int64   `json:"server_queue_max,omitempty"`
	FlowControlPaused float64 `json:"flow_control_paused,omitempty"`
	// WritesPerSec is the committed writes per second (Trial.Throughput).
	WritesPerSec float64 `json:"writes_per_s"`
	// LinkBytes is what the primary sent the replica over the trial
	// (PostgreSQL: sent_lsn's advance, the WAL; Redis: master_repl_offset's):
	// the link's payload, before TLS's framing.
	LinkBytes int64 `json:"link_bytes"`
	// PrimaryCPU and ReplicaCPU are each node's processes' CPU over the
	// trial (the replica's includes the heartbeat's polls).
	PrimaryCPU time.Duration `json:"primary_cpu_ns"`
	ReplicaCPU time.Duration `json:"replica_cpu_ns"`
	// NodeCPU is every node's CPU over the trial, PrimaryCPU and
	// ReplicaCPU first, then the nodes neither written to nor read
	// (Galera's third); none when not measured.
	NodeCPU []time.Duration `json:"node_cpu_ns,omitempty"`
	// LinkEncrypted is the link as the primary showed it after the trial
	// (pg_stat_ssl of the walsender); LinkTLS its version ("TLSv1.3").
	LinkEncrypted bool   `json:"link_encrypted"`
	LinkTLS       string `json:"link_tls,omitempty"`
	// Sync is off, on or remote_apply; for your own cluster, what the
	// primary showed: async, sync, quorum, potential.
	Sync string `json:"sync"`
	// BehindTimeout is set when the replica had not caught up with the
	// last heartbeat within --timeout after the writes stopped.
	BehindTimeout bool `json:"behind_timeout,omitempty"`
}
