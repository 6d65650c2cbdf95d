// Package result defines the versioned JSON result file that joins measuring
// and reporting, and reads and writes it.
package result

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tlsbench/tlsbench/internal/files"
	"github.com/tlsbench/tlsbench/internal/plan"
)

// Schema names the format; Version changes whenever a field changes meaning.
const (
	Schema  = "tlsbench.result"
	Version = 1
)

// Result is one run: what was asked, where it ran and every trial measured.
type Result struct {
	Schema  string `json:"schema"`
	Version int    `json:"version"`

	Tool    Tool      `json:"tool"`
	Env     Env       `json:"environment"`
	Command []string  `json:"command"` // argv with secrets removed
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
	// Interrupted is set when the run was stopped (Ctrl-C) before all trials
	// ran; Error holds the error that ended a run early, if any.
	Interrupted bool   `json:"interrupted,omitempty"`
	Error       string `json:"error,omitempty"`

	Spec     plan.Spec      `json:"spec"`
	Variants []plan.Variant `json:"variants"`
	Target   Target         `json:"target"`
	// Notes are facts about how the run was done that a reader needs, e.g.
	// how ephemeral port exhaustion was avoided.
	Notes []string `json:"notes,omitempty"`
	// Warnings are what the run found wrong in its setup that the user
	// should fix, though it went on (a client key others can read).
	Warnings []string `json:"warnings,omitempty"`
	// Checks are what one connection per variant negotiated before any
	// trial ran, as the client and as the server saw it.
	Checks []Check `json:"checks,omitempty"`
	// Clients are the client stacks other than Go's that made the
	// connections of variants with a Client (--client), as each said of
	// itself when it started.
	Clients []ClientStack `json:"clients,omitempty"`
	// Tunnels are the SSH connections and stunnel pairs tunnelled variants
	// went through, each set up once per run, not per connection.
	Tunnels []Tunnel `json:"tunnels,omitempty"`
	// PlannedTrials is how many trials the run was to run; Trials holds
	// fewer when it was interrupted or failed. Zero for a crypto run and
	// in files written before the field.
	PlannedTrials int     `json:"planned_trials,omitempty"`
	Trials        []Trial `json:"trials"`

	// Ceilings are, per key of a connect run on a server tlsbench started,
	// the most new TLS connections per second the server's CPUs could sign
	// for, measured once before the trials.
	Ceilings []Ceiling `json:"ceilings,omitempty"`
	// Crypto holds the primitives a `tlsbench crypto` run measured, and
	// CryptoPlan what it was asked to measure (nil in files written
	// before it, whose Spec holds its duration and count; Spec still
	// does, for readers from before it).
	Crypto     []Primitive  `json:"crypto,omitempty"`
	CryptoPlan *plan.Crypto `json:"crypto_plan,omitempty"`
	// Replicate is a replicate run's plan and resyncs (replication.go).
	Replicate *Replicate `json:"replicate,omitempty"`

	// Capture is the packet capture a wire result was decoded from;
	// WireChecks set tlsbench's phases beside the wire's (connect --wire).
	Capture    *Capture    `json:"capture,omitempty"`
	WireChecks []WireCheck `json:"wire_checks,omitempty"`
	// Advise is an advise result's profile and advice, one per server
	// endpoint of its capture (see advise.go).
	Advise []Advised `json:"advise,omitempty"`
	// WireStacks are what the wire shows each client stack's variant
	// negotiated (connect --wire --client).
	WireStacks []WireNegotiated `json:"wire_stacks,omitempty"`

	// Shard is this run's part of a run split over client machines
	// (--shard); a merged result (tlsbench merge) has every shard's in
	// Shards instead, with their machines, and the clock skew it saw.
	Shard  *Shard  `json:"shard,omitempty"`
	Shards []Shard `json:"shards,omitempty"`
	Skew   *Skew   `json:"skew,omitempty"`

	// Gates are the verdicts of the run's --gate expressions (gate.go).
	Gates []Gate `json:"gates,omitempty"`
}

// ClientStack is a client stack a run used, as its program said of
// itself (clients/PROTOCOL.md's hello).
type ClientStack struct {
	Name    string `json:"name"`              // the stack, as plan.Variant.Client names it
	Library string `json:"library,omitempty"` // in words: "psycopg 3 with its bundled libpq and OpenSSL"
	Driver  string `json:"driver,omitempty"`  // the driver and its version: "psycopg/3.2.3"
	TLS     string `json:"tls,omitempty"`     // the TLS library and its version: "OpenSSL/3.0.15"
	Runtime string `json:"runtime,omitempty"` // "CPython/3.11.7", "Node/20.20.2", "OpenJDK/17.0.15"
	// Model is how it ran concurrent connections: threads, event-loop
	// or processes.
	Model string `json:"model,omitempty"`
}

// Ceiling is the server-side limit a key puts on new connections: every full
// handshake costs the server one signature, so no server does more than
// cores × signatures per second, whatever the network.
type Ceiling struct {
	Key        string  `json:"key"`          // as in the variant: rsa2048, ecdsa-p256
	Library    string  `json:"library"`      // what signed: "OpenSSL 3.0.15", "go1.26.8"
	SignPerSec float64 `json:"sign_per_sec"` // per CPU-second, on one core
	Cores      int     `json:"cores"`        // the server machine's
}

// ConnPerSec is the ceiling itself: cores × signatures per second.
func (c Ceiling) ConnPerSec() float64 { return c.SignPerSec * float64(c.Cores) }

// Primitive is one measured cryptographic operation, in the shape of
// `openssl speed`: operations per second for public-key work, bytes per
// second at one record size for ciphers.
type Primitive struct {
	Library string `json:"library"`        // "go1.26.8", "OpenSSL 3.0.15"
	Kind    string `json:"kind"`           // sign, verify, key-agreement, keygen, ..., cipher
	Name    string `json:"name"`           // rsa2048, ecdsa-p256, x25519, mlkem768, aes-128-gcm, ...
	Size    int    `json:"size,omitempty"` // cipher record size in bytes
	// KeyShare is the size of the key share the side of a kex-client or
	// kex-server figure sends in its hello, bytes.
	KeyShare int `json:"key_share,omitempty"`
	// PerCore is on one core; AllCores with every core busy (zero when
	// not measured). Operations per CPU-second (AllCores: times the cores),
	// or bytes of plaintext for ciphers (one record of Size bytes per
	// operation), so that other load on the machine does not lower them.
	PerCore  float64 `json:"per_core"`
	AllCores float64 `json:"all_cores,omitempty"`
}

// The kinds of Primitive. Key agreement is one shared-secret derivation;
// keygen, encapsulate and decapsulate are a KEM's (ML-KEM) operations;
// kex-client and kex-server are each side's part of one TLS 1.3 key
// exchange with a group (its key share made, the peer's share used).
const (
	KindSign         = "sign"
	KindVerify       = "verify"
	KindKeyAgreement = "key-agreement"
	KindKeyGen       = "keygen"
	KindEncapsulate  = "encapsulate"
	KindDecapsulate  = "decapsulate"
	KindKexClient    = "kex-client"
	KindKexServer    = "kex-server"
	KindCipher       = "cipher"
)

// Check is the verification of one variant before the trials.
type Check struct {
	Variant string      `json:"variant"`
	Client  *Negotiated `json:"client,omitempty"` // nil for plain
	// Server is what the server said about the same connection (engines
	// that can tell: pg_stat_ssl, SHOW SESSION STATUS, ...).
	Server *ServerView `json:"server,omitempty"`
	// ServerUnknown says why the server could not say (a client stack's
	// connections on an engine that keeps no view of another connection's
	// TLS), "" where it said or was not asked.
	ServerUnknown string `json:"server_unknown,omitempty"`
	// Remote is the server address the check's connection reached (a
	// name resolved: [::1]:5432 or 127.0.0.1:5432), "" where unknown.
	Remote string `json:"remote,omitempty"`
}

// ServerView is the server's own account of a connection's encryption.
type ServerView struct {
	TLS     bool   `json:"tls"`
	Version string `json:"version,omitempty"`
	Cipher  string `json:"cipher,omitempty"`
	Auth    string `json:"auth,omitempty"`
	// ClientCert is how the server confirmed the client certificate: the
	// subject it saw (PostgreSQL's pg_stat_ssl.client_dn) or the rule a
	// login had to pass ("REQUIRE X509", "tls-auth-clients yes").
	ClientCert string `json:"client_cert,omitempty"`
}

// Tunnel is one tunnel of a run: for SSH, the connection every channel of
// its variants went through, with its setup timed once.
type Tunnel struct {
	Label  string        `json:"via"`              // the Tunnel label of its variants
	RTT    time.Duration `json:"rtt_ns,omitempty"` // its emulated RTT
	Addr   string        `json:"addr"`             // the SSH server, or stunnel's client port
	Server string        `json:"server"`           // "OpenSSH_9.2p1 Debian-2+deb12u7", "stunnel 5.68"
	// SSH: what the key exchange settled on.
	KeyExchange string `json:"key_exchange,omitempty"`
	HostKey     string `json:"host_key,omitempty"`
	Cipher      string `json:"cipher,omitempty"`
	MAC         string `json:"mac,omitempty"`
	// Setup is the SSH connection's setup (tcp, ssh-kex, ssh-auth), once.
	Setup []SetupPhase `json:"setup,omitempty"`
	// BytesSent and BytesReceived are what the SSH connection carried over
	// the whole run: channel payload plus SSH's framing.
	BytesSent     int64 `json:"bytes_sent,omitempty"`
	BytesReceived int64 `json:"bytes_received,omitempty"`
	// ClientCPU is the CPU a tunnel's client process used over the run
	// (OpenSSH's ssh -L), beside tlsbench's own.
	ClientCPU time.Duration `json:"client_cpu_ns,omitempty"`
	// Settings are an intermediary's own (PgBouncer's pool_mode,
	// default_pool_size, server_tls_sslmode).
	Settings map[string]string `json:"settings,omitempty"`
}

// SetupPhase is one phase of a setup timed once.
type SetupPhase struct {
	Name       string        `json:"name"`
	Duration   time.Duration `json:"duration_ns"`
	RoundTrips int           `json:"round_trips"`
}

// Tool identifies the measuring side.
type Tool struct {
	Name       string `json:"name"`
	Version    string `json:"version"`
	Go         string `json:"go"`
	TLSLibrary string `json:"tls_library"`
}

// Env describes the client machine.
type Env struct {
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	Kernel   string `json:"kernel"`
	CPUModel string `json:"cpu_model"`
	Cores    int    `json:"cores"`
	AESNI    bool   `json:"aes_ni"`
	Hostname string `json:"hostname,omitempty"`
	// CPUs is where tlsbench and the servers it started ran; nil when it
	// started none and was not pinned (--client-cpus).
	CPUs *CPUs `json:"cpus,omitempty"`
}

// CPUs is the split of the machine's CPUs between the client and the
// servers tlsbench started, in taskset's list syntax ("0", "0-1").
type CPUs struct {
	Client  string `json:"client"`
	Servers string `json:"servers,omitempty"` // "" when tlsbench started no server
	// Shared: client and servers ran on the same CPUs (no --client-cpus),
	// so the client's CPU was taken from the servers'.
	Shared bool `json:"shared"`
}

// Target describes what was measured.
type Target struct {
	URL  string `json:"url"`  // redacted
	Kind string `json:"kind"` // builtin, http, https
	// Server describes the server when tlsbench started it: the first of
	// Servers when a run compares several lab servers.
	Server *Server `json:"server,omitempty"`
	// Servers are the lab servers a run compares (--lab
	// postgres:15,postgres:18), each named by Lab as variants name it.
	Servers []Server `json:"servers,omitempty"`
}

// Server is a server tlsbench started itself.
type Server struct {
	Lab      string `json:"lab,omitempty"` // "postgres:18", where a run compares lab servers
	Software string `json:"software"`
	Version  string `json:"version"`
	// Endpoints maps a variant's key ("" for plain) to the address serving it.
	Endpoints map[string]string `json:"endpoints"`
	Settings  map[string]string `json:"settings,omitempty"`
}

// Trial is one timed repetition of one experiment on one variant.
type Trial struct {
	Experiment  plan.Experiment `json:"experiment"`
	Variant     string          `json:"variant"` // Variant.ID
	Concurrency int             `json:"concurrency"`
	Round       int             `json:"round"` // 0-based trial number
	Start       time.Time       `json:"start"`
	Elapsed     time.Duration   `json:"elapsed_ns"`
	// Ended is when a client stack's trial ended on tlsbench's clock (its
	// program's done; Elapsed is its operations' span on the program's
	// clock): its connections are those from Start to Ended. Zero for
	// Go's trials, whose connections start within Elapsed.
	Ended time.Time `json:"ended,omitzero"`

	// PerConn is the operations each new connection ran before it closed
	// (connect --per-conn N), omitted for one. With N > 1, Latency is each
	// operation's own time, Phases the connection's (setup, first
	// operation, more-ops, close), and Conns counts connections opened.
	PerConn int `json:"per_conn,omitempty"`
	// Open holds the figures of a trial at an arrival rate (--rate; see
	// openloop.go), nil for a closed loop. Latency is then each arrival's
	// time from its intended start (coordinated omission corrected).
	Open *OpenLoop `json:"open_loop,omitempty"`

	Ops int64 `json:"ops"` // completed operations
	// Queries is the statements those operations ran (a read-only
	// transaction is 16), when the engine counts them.
	Queries int64            `json:"queries,omitempty"`
	Errors  map[string]int64 `json:"errors,omitempty"` // failed operations by kind
	// ErrorSamples holds the first message of each kind in Errors.
	ErrorSamples map[string]string `json:"error_samples,omitempty"`
	// Conns is the number of connections opened (connect: one per op).
	Conns   int64 `json:"conns"`
	Resumed int64 `json:"resumed"` // connections that resumed a TLS session
	// ServerCount is what the server counted of a client stack's trial
	// (stackcount.go); nil for Go's trials and where the server keeps no
	// count a client can read (MongoDB, HTTPS).
	ServerCount *ServerCount `json:"server_count,omitempty"`

	BytesSent     int64 `json:"bytes_sent"`
	BytesReceived int64 `json:"bytes_received"`

	// ClientCPU is this process's user+system CPU over the trial; ServerCPU
	// the server's, when tlsbench started it (else zero). For a variant
	// with a Client (a stack other than Go's) ClientCPU is the stack's own
	// processes' (every thread, the reporting of operations included), not
	// tlsbench's, over the stack's whole run: for pool with its warm-up
	// and the opening of its pool (clients/PROTOCOL.md meters a run).
	ClientCPU time.Duration `json:"client_cpu_ns"`
	ServerCPU time.Duration `json:"server_cpu_ns,omitempty"`
	// ClientWait is how a pool's workers waited for their answers, in
	// their threads or in Go's poller, and with how many Ps: the mode the
	// warm-up found fastest when there were more connections than CPUs.
	ClientWait string `json:"client_wait,omitempty"`

	// Latency is the whole operation (connect: dial to close; pool: request;
	// connect with PerConn: each operation on its open connection).
	Latency Hist    `json:"latency"`
	Phases  []Phase `json:"phases,omitempty"`

	Negotiated *Negotiated `json:"negotiated,omitempty"`

	// Storm holds a storm trial's own figures; ServerMemory the memory of
	// the server tlsbench started, idle and with the trial's connections
	// held (pool, storm). See storm.go.
	Storm        *Storm        `json:"storm,omitempty"`
	ServerMemory *ServerMemory `json:"server_memory,omitempty"`

	// Wire is what a capture showed beyond phases (experiment wire); see
	// wire.go.
	Wire *Wire `json:"wire,omitempty"`

	// Replication is a replicate trial's own figures (replication.go).
	Replication *Replication `json:"replication,omitempty"`
}

// Throughput is operations per second.
func (t Trial) Throughput() float64 {
	if t.Elapsed <= 0 {
		return 0
	}
	return float64(t.Ops) / t.Elapsed.Seconds()
}

// Phase is one phase of a connection or operation.
type Phase struct {
	Name       string     `json:"name"`
	RoundTrips RoundTrips `json:"round_trips"`
	Latency    Hist       `json:"latency"`
}

// RoundTrips summarizes the client turns a phase took over all connections.
type RoundTrips struct {
	Min  int     `json:"min"`
	Max  int     `json:"max"`
	Mean float64 `json:"mean"`
}

// Hist is a latency distribution: a summary in milliseconds and the full
// HdrHistogram (nanoseconds, V2 compressed, base64) for later analysis.
type Hist struct {
	Count  int64   `json:"count"`
	Mean   float64 `json:"mean_ms"`
	StdDev float64 `json:"stddev_ms"`
	P50    float64 `json:"p50_ms"`
	P95    float64 `json:"p95_ms"`
	P99    float64 `json:"p99_ms"`
	Max    float64 `json:"max_ms"`
	HDR    string  `json:"hdr,omitempty"`
}

// Negotiated is what the TLS handshake settled on, as the client saw it.
type Negotiated struct {
	Version string `json:"version"`
	Suite   string `json:"suite"`
	Group   string `json:"group,omitempty"`
	// ClientHelloBytes is the size of the client's ClientHello record (of
	// the trial's first connection): a post-quantum key share makes it
	// about six times larger.
	ClientHelloBytes int    `json:"client_hello_bytes,omitempty"`
	PeerKey          string `json:"peer_key"` // e.g. "RSA-2048", "ECDSA-P256"
	ALPN             string `json:"alpn,omitempty"`
	// HelloRetry is set when the server asked for another key share (a
	// HelloRetryRequest), which costs TLS 1.3 a second round trip.
	HelloRetry bool `json:"hello_retry,omitempty"`
	// ClientCert is the key of the client certificate the client presented
	// (mutual TLS), e.g. "ECDSA-P256"; "" for none. The run's check
	// confirms from the server, where it can tell, that it asked for it.
	ClientCert string `json:"client_cert,omitempty"`
}

// End records how the run ended: now, interrupted if ctx was cancelled,
// else err (nil for a run that finished).
func (r *Result) End(ctx context.Context, err error) {
	r.Ended = time.Now().UTC()
	switch {
	case ctx.Err() != nil:
		r.Interrupted = true
	case err != nil:
		r.Error = err.Error()
	}
}

// New returns an empty result with the schema fields set.
func New() *Result { return &Result{Schema: Schema, Version: Version} }

// Write stores r as indented JSON at path, atomically and only over a
// regular file (see WriteFile), so that an interrupted write never leaves a
// truncated result and -o never replaces a device or a symlink.
func Write(path string, r *Result) error {
	data, err := encode(r)
	if err != nil {
		return err
	}
	return WriteFile(path, data, "the result")
}

func encode(r *Result) ([]byte, error) {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the result: %w", err)
	}
	return append(data, '\n'), nil
}

// Read loads a result file (a regular file of at most files.MaxResult
// bytes), checks its schema and version, and checks every figure the
// reports draw (see validate), so that a damaged file is one clear error
// and never a panic or a nonsense chart. A missing file's error satisfies
// errors.Is(err, fs.ErrNotExist).
func Read(path string) (*Result, error) {
	data, err := files.Read(path, "result file", files.MaxResult)
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		// What a run of an earlier version killed before it wrote its
		// result leaves: the name it reserved.
		return nil, fmt.Errorf("%s is empty: the run that was to write it was killed before it wrote its result: remove it", path)
	}
	return Decode(data, path)
}

// Decode is Read's check of a result's bytes; name says where they came
// from in its errors.
func Decode(data []byte, path string) (*Result, error) {
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		// The decoder goes on after a value of the wrong type, so the
		// schema tells a damaged result from another file.
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && r.Schema == Schema && r.Version == Version {
			return nil, fmt.Errorf("%s: %s is %s, not a valid %s: the file is damaged (re-run, or fix that field)", path, te.Field, te.Value, te.Type)
		}
		return nil, fmt.Errorf("%s is not a tlsbench result file: %v", path, err)
	}
	if r.Schema != Schema {
		return nil, fmt.Errorf("%s is not a tlsbench result file (schema %q)", path, r.Schema)
	}
	if r.Version != Version {
		return nil, fmt.Errorf("%s has result version %d; this tlsbench reads version %d: re-run it or use a matching tlsbench", path, r.Version, Version)
	}
	if err := r.validate(); err != nil {
		return nil, fmt.Errorf("%s: %v: the file is damaged (re-run, or fix that field)", path, err)
	}
	r.respellGroups()
	r.recordRoutes()
	return &r, nil
}

// respellGroups gives results written before the groups were spelled one
// way (their negotiated groups read CurveP256) today's spelling.
func (r *Result) respellGroups() {
	for i := range r.Checks {
		if n := r.Checks[i].Client; n != nil {
			n.Group = plan.GroupSpelling(n.Group)
		}
	}
	for i := range r.Trials {
		if n := r.Trials[i].Negotiated; n != nil {
			n.Group = plan.GroupSpelling(n.Group)
		}
	}
}

// recordRoutes gives the tunnelled variants of results written before
// variants recorded their route (plan.Variant.Route) the route of the
// --via entry their label names, read from the recorded, redacted --via
// list: all such a file has.
func (r *Result) recordRoutes() {
	var routes []plan.Route
	for i := range r.Variants {
		v := &r.Variants[i]
		if v.Tunnel == "" || v.Route != (plan.RouteInfo{}) {
			continue
		}
		if routes == nil {
			for _, raw := range r.Spec.Via {
				if route, err := plan.ParseRoute(raw); err == nil {
					routes = append(routes, route)
				}
			}
		}
		for _, route := range routes {
			if route.Label() == v.Tunnel {
				v.Route = route.Info()
				break
			}
		}
	}
}
