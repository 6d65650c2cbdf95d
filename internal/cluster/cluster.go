// Package cluster is the seam between a replicated cluster and the
// replicate experiment: the replication link a variant asks for, what the
// primary says of it, and a session on one node.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrNoNodeCPU is a cluster's CPU when tlsbench did not start its nodes.
var ErrNoNodeCPU = errors.New("the nodes' CPU is not measured: tlsbench did not start them")

// Link is how a cluster's replica reaches its primary: what a replicate
// variant changes.
type Link struct {
	// TLS is "off" (sslmode=disable), "1.2" or "1.3" (sslmode=verify-ca,
	// that version only).
	TLS string
	// Key is the key type of the certificate the primary presents; "" is
	// the one it presents now.
	Key string
	// Sync is "off" (asynchronous), "on" or "remote_apply": the primary's
	// synchronous_commit with the replica in synchronous_standby_names.
	Sync string
	// Addr is the host:port the replica dials to reach the primary: a
	// relay's that delays the link; "" is the primary's own.
	Addr string
	// RTT is the round trip the link is delayed by where the cluster
	// delays its own links (a Galera node behind a delay link) rather
	// than through a relay at Addr.
	RTT time.Duration
}

// LinkState is the replication link as the primary sees it:
// pg_stat_replication joined with pg_stat_ssl on the walsender's pid.
type LinkState struct {
	PID       int
	State     string // "streaming" once caught up
	SyncState string // "async", "sync"
	Encrypted bool
	Version   string // "TLSv1.3"; "" when plain
	Cipher    string
	// Sent is sent_lsn as a byte position in the WAL: its difference over
	// a span is the WAL bytes the link carried.
	Sent int64
	// ReplayLag is the server's replay_lag; HasReplayLag is false when it
	// is NULL (nothing to replay lately).
	ReplayLag    time.Duration
	HasReplayLag bool
	// Queue is what the read node has received but not applied, as it
	// counts it (Galera's wsrep_local_recv_queue); Paused is the time
	// flow control has paused replication so far (Galera's
	// wsrep_flow_control_paused_ns). Zero where the engine has neither.
	Queue  int64
	Paused time.Duration
}

// Conn is a session on one node of a cluster: the writes of a
// replicate run on the primary, the heartbeat's reads on the replica.
type Conn interface {
	// Write commits one small transaction (an INSERT of one row).
	Write(ctx context.Context) error
	// Beat commits the heartbeat row's new seq.
	Beat(ctx context.Context, seq int64) error
	// Seen reads the heartbeat row's seq (on the replica: the latest the
	// replica has applied).
	Seen(ctx context.Context) (int64, error)
	Close() error
}

// Verify checks that st, the link as the primary sees it (PostgreSQL's
// pg_stat_ssl of the walsender, the port Redis's replica came in on), is
// what l asks for: TLS of its version, or plain. A link that fell back
// is an error, never a figure.
func (l Link) Verify(st LinkState) error {
	switch {
	case l.TLS == "": // a cluster of the user's, as it is
	case l.TLS == "off" && st.Encrypted:
		return fmt.Errorf("replication link: asked for plain, the primary shows the replica's connection encrypted (%s)", st.Version)
	case l.TLS != "off" && !st.Encrypted:
		return fmt.Errorf("replication link: asked for TLS %s, the primary shows the replica's connection plain", l.TLS)
	case l.TLS != "off" && st.Version != "TLSv"+l.TLS:
		return fmt.Errorf("replication link: asked for TLS %s, the primary shows %s", l.TLS, st.Version)
	}
	return nil
}
