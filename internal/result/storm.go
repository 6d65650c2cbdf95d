package result

import "time"

// Storm is what a storm trial saw: Clients connecting at one instant
// (Trial.Concurrency is Clients too). Trial.Latency is each client's time
// from the release to its last step (connected, or its first operation
// done), Trial.Phases its connection's phases, each ended as its answer
// arrived, close included (Hold, the wait for the other clients, is in
// none of them), Trial.ServerCPU the server's CPU from the release until
// the last client was done.
type Storm struct {
	Clients int `json:"clients"`
	// Connected is how many clients connected; FirstOps how many of them
	// then ran their first operation (with --first-op).
	Connected int64 `json:"connected"`
	FirstOps  int64 `json:"first_ops,omitempty"`
	// AllConnected is the time from the release until the last client
	// that connected was connected; LastFirstOp until the last first
	// operation was done (0 without --first-op). Both count the clients
	// that succeeded; those that failed are in Trial.Errors.
	AllConnected time.Duration `json:"all_connected_ns"`
	LastFirstOp  time.Duration `json:"last_first_op_ns,omitempty"`
	// DialSpread is the time from the first client's dial start to the
	// last's, over the clients that connected: how close to one instant
	// the storm really was (its goroutines start one after another).
	DialSpread time.Duration `json:"dial_spread_ns,omitempty"`
	// ToDial is each connected client's time from the release until its
	// dial began: where a large storm's time goes before any phase (its
	// goroutines waiting for a CPU). Nil in results from before it was
	// measured.
	ToDial *Hist `json:"to_dial,omitempty"`
	// Hold is each held client's time from its last answer (with
	// --first-op: its operation done) until its close began, while the
	// others came back and the server's memory was read: the storm's
	// own wait, in no phase. Nil in results from before it was measured.
	Hold *Hist `json:"hold,omitempty"`
	// Listen is the kernel's listen-queue counters over the storm, nil
	// when /proc/net/netstat could not be read.
	Listen *ListenQueue `json:"listen,omitempty"`
}

// ListenQueue is how often the kernel's listen queues overflowed during a
// storm: the increase of /proc/net/netstat's TcpExt ListenOverflows (an
// accept queue was full) and ListenDrops (a connection request was
// dropped, overflows included) from before to after it. They count for
// the whole machine (its network namespace), every listener on it, not
// only the server measured. Somaxconn is net.core.somaxconn, the cap of
// every listen backlog.
type ListenQueue struct {
	Overflows int64 `json:"overflows"`
	Drops     int64 `json:"drops"`
	Somaxconn int   `json:"somaxconn,omitempty"`
}

// ServerMemory is the memory of the server tlsbench started (its whole
// process tree) before a trial opened its connections and while Conns of
// them were held open.
type ServerMemory struct {
	// Kind is "pss" (proportional set size, summed: each shared page
	// counted once) or "rss" (resident set size, where PSS could not be
	// read: shared pages count in each process).
	Kind      string `json:"kind"`
	IdleBytes int64  `json:"idle_bytes"`
	HeldBytes int64  `json:"held_bytes"`
	Conns     int64  `json:"conns"`
}

// PerConn is the memory each held connection added, in bytes: (held −
// idle) / conns; 0 without connections.
func (m ServerMemory) PerConn() float64 {
	if m.Conns <= 0 {
		return 0
	}
	return float64(m.HeldBytes-m.IdleBytes) / float64(m.Conns)
}
