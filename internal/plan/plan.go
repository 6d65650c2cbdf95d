// Package plan holds the configuration of a run (Spec) and of a crypto run
// (Crypto), their defaults and validation, the grammars of what they are
// given (target URLs, --via routes, workloads, rates), and the expansion of
// the variant matrix.
package plan

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/script"
)

// Experiment names what is measured on each connection.
type Experiment string

// The experiments.
const (
	Connect Experiment = "connect" // open, one request, close
	Pool    Experiment = "pool"    // persistent connections, many requests
	Stream  Experiment = "stream"  // persistent connections reading one large result

	// The two loops of the mongodb-seed preset (see Spec.Preset), beside
	// connect: a new client per iteration timed as the seed's Python script
	// did, and one reused client's queries.
	NewClient    Experiment = "new-client"
	ReusedClient Experiment = "reused-client"
)

// Builtin is the Target that asks for the built-in HTTPS/HTTP server.
const Builtin = "builtin"

// Key types the servers tlsbench starts (builtin, lab, serve) can present.
var KeyTypes = []string{"rsa1024", "rsa2048", "rsa4096", "ecdsa-p256", "ecdsa-p384", "ed25519"}

// TLS modes a variant can ask for.
var TLSModes = []string{"off", "1.2", "1.3", "auto"}

// Spec is everything a run needs to know, filled from flags and recorded in
// the result file. Build it with New, which applies defaults and validates.
type Spec struct {
	Experiments []Experiment `json:"experiments"`
	// Target is "builtin", a URL, or "lab:ENGINE" for a server tlsbench
	// starts itself (Lab); URL credentials are removed before the Spec is
	// recorded (see Redact).
	Target string `json:"target"`
	// Lab is the engine of a throw-away server tlsbench starts for the run
	// (postgres, mariadb, redis, mongodb), instead of a target URL.
	Lab string `json:"lab,omitempty"`

	TLS []string `json:"tls"`
	// TLSByDefault says TLS was not given for a URL target: it is the
	// target's DefaultTLS, and a variant the server refuses (plaintext
	// where it demands TLS, TLS where it has none, a TLS version it does
	// not speak) is left out with a warning rather than failing the run.
	TLSByDefault bool     `json:"tls_by_default,omitempty"`
	Ciphers      []string `json:"ciphers,omitempty"`
	// Groups lists the key-exchange groups to compare (see Groups): each
	// TLS variant offers one, GroupDefault the TLS library's default offer
	// (the variant's Group ""); empty is that offer alone.
	Groups []string `json:"groups,omitempty"`
	// ClientStacks lists the client stacks to compare (--client): "go"
	// for tlsbench's own drivers, or a stack internal/clientstack runs;
	// empty is Go's alone.
	ClientStacks []string `json:"client_stacks,omitempty"`
	Resume       []bool   `json:"resume"`
	Keys         []string `json:"keys,omitempty"`
	CAFile       string   `json:"ca_file,omitempty"`
	Insecure     bool     `json:"insecure,omitempty"`
	// CertFile and CertKeyFile are the client certificate (mutual TLS)
	// every TLS variant presents to a URL target (--cert, --cert-key, or
	// the URL's own parameters: see clientcert.go); paths only, never the
	// key. ClientCerts is the lab's dimension instead: off or key types of
	// certificates the lab CA issues, which the lab servers then demand.
	CertFile    string   `json:"cert_file,omitempty"`
	CertKeyFile string   `json:"cert_key_file,omitempty"`
	ClientCerts []string `json:"client_certs,omitempty"`
	// Negotiation lists how PostgreSQL TLS variants start TLS: postgres
	// (an SSLRequest first) and direct (PostgreSQL 17+), as libpq's
	// sslnegotiation; empty is postgres.
	Negotiation []string `json:"negotiation,omitempty"`
	Concurrency []int    `json:"concurrency"`
	// PerConn lists how many operations each new connection of the
	// connect experiment runs before it closes, a sweep like Concurrency
	// (see perconn.go); nil is [1], the default (PerConnections).
	PerConn []int `json:"per_conn,omitempty"`
	// Clients lists how many clients the storm experiment connects at
	// one instant, a sweep like Concurrency; FirstOp has each of them
	// run the workload once when connected (see storm.go).
	Clients []int `json:"clients,omitempty"`
	FirstOp bool  `json:"first_op,omitempty"`
	// ClientCPUs are the CPUs tlsbench runs on, taskset's list syntax
	// (see cpus.go); the servers it starts run on the others. "" is all.
	ClientCPUs string `json:"client_cpus,omitempty"`
	// Open-loop arrivals (see rate.go): Rates per second, one trial cell
	// each, or Knee, a search for the highest rate within SLO; Arrivals
	// is their process (poisson, uniform), MaxInflight connect's bound on
	// arrivals in flight (pool's is its connections).
	Rates       []float64     `json:"rates,omitempty"`
	Knee        *Knee         `json:"knee,omitempty"`
	Arrivals    string        `json:"arrivals,omitempty"`
	MaxInflight int           `json:"max_inflight,omitempty"`
	SLO         time.Duration `json:"slo_ns,omitempty"`
	// RTT lists the round-trip times to emulate (in tlsbench's dialer, in
	// user space); nil or 0 is the bare link.
	RTT []time.Duration `json:"rtt_ns,omitempty"`
	// RTTVia lists how the RTTs are made, a variant dimension (see
	// rttvia.go): RTTViaDialer (nil is that alone) or RTTViaLink.
	RTTVia []string `json:"rtt_via,omitempty"`
	// PredictRTT lists the round-trip times at which the report predicts
	// connection setup from the connect variants measured at RTT 0 (round
	// trips × RTT + loopback time), next to any emulated measurement.
	PredictRTT []time.Duration `json:"predict_rtt_ns,omitempty"`
	// Auth lists the authentication methods to compare (lab servers only,
	// which have a user for each).
	Auth []string `json:"auth,omitempty"`

	// Workload is what each operation does (see Workloads); QueryMode is
	// prepared or simple; Tables and Rows size the sbtest data.
	Workload  string `json:"workload,omitempty"`
	QueryMode string `json:"query_mode,omitempty"`
	Tables    int    `json:"tables,omitempty"`
	Rows      int    `json:"rows,omitempty"`
	// Scripts are pgbench custom scripts run instead of a named workload
	// (PostgreSQL, MySQL): each operation is one pass through one of them,
	// picked by weight (see Script). mix is them parsed, by New.
	Scripts []Script `json:"scripts,omitempty"`
	mix     *script.Mix
	// Preset names a seed study replayed as it was done (mongodb-seed);
	// it sets the experiments.
	Preset string `json:"preset,omitempty"`

	// Duration bounds each trial in time; Count, if set, in operations
	// (whichever comes first). Warmup runs before a pool trial, unrecorded,
	// and before a connect trial of a client stack other than Go's.
	Duration time.Duration  `json:"duration_ns"`
	Count    int64          `json:"count,omitempty"`
	Warmup   *time.Duration `json:"warmup_ns"` // nil before New: the default
	// Timeout bounds each single operation (connect, request).
	Timeout time.Duration `json:"timeout_ns"`
	Trials  int           `json:"trials"`

	// ResponseSize is the body size the built-in server sends, in bytes.
	ResponseSize int `json:"response_size"`
	// Path is the request path for HTTP targets.
	Path string `json:"path"`

	// Via lists how connections reach the server (see ParseRoute); empty is
	// direct. Tunnels carry plain connections: their variants are "ssh
	// CIPHER" and "stunnel KEY" beside the direct ones.
	Via []string `json:"via,omitempty"`

	// Source is the client's source address: SourceAuto (spread over
	// 127.0.1.x for the servers tlsbench starts, which accept them; the
	// kernel's choice for a URL), SourceSpread (spread for any loopback
	// server, against port exhaustion in long connect runs), or one IP
	// address every connection binds to.
	Source string `json:"source,omitempty"`

	// MaxErrorRate is the share of failed operations above which a trial
	// fails the run (kept in the result, then exit 1); nil is
	// DefaultMaxErrorRate, 0 fails on any error.
	MaxErrorRate *float64 `json:"max_error_rate,omitempty"`

	// The user's own workload in place of Workload's (see request.go):
	// Redis Commands (one operation: all of them, pipelined), a MongoDB
	// Filter on Collection, an HTTP request (Method, Headers, Data as
	// BODY or @FILE, Paths: a file of request paths); Keyspace is the
	// range of __rand_int__. New hides their secrets (AUTH arguments,
	// credential headers, an inline body) and records the workload with
	// its checksum in Recorded.
	Commands   []string        `json:"commands,omitempty"`
	Keyspace   int64           `json:"keyspace,omitempty"`
	Filter     string          `json:"filter,omitempty"`
	Collection string          `json:"collection,omitempty"`
	Method     string          `json:"method,omitempty"`
	Headers    []string        `json:"headers,omitempty"`
	Data       string          `json:"data,omitempty"`
	Paths      string          `json:"paths,omitempty"`
	Recorded   *WorkloadRecord `json:"user_workload,omitempty"`

	// Shard is this machine's part of a run split over several client
	// machines (--shard I/N, --start-at; see shard.go); nil for a whole run.
	Shard *Shard `json:"shard,omitempty"`

	// target and routes are Target and Via as New parsed them, secrets
	// included: never stored (see ParsedTarget and Routes).
	target Target
	routes []Route
	// clientCPUList is ClientCPUs parsed (ClientCPUList), sourceAddr
	// Source (SourceAddr).
	clientCPUList []int
	sourceAddr    netip.Addr
	// secretPath is Path as given: a query may carry a token.
	secretPath string
	// secretWork is the user's workload as it runs, secrets included.
	secretWork UserWorkload
	// givenFields are the fields the user gave (Give), never stored.
	givenFields
}

// givenFields names the fields of an options type (Spec, Serve) that the
// user gave, as Error names them ("trials", "max_inflight"), whatever
// their value: where a zero is what "not given" looks like, the
// constructor then refuses a given 0 (⟨trials⟩ 0) or keeps it (serve's
// ⟨http⟩ "" is no listener) instead of filling the default. Lists say it
// by being non-nil instead (a list given empty is refused: checkGiven).
type givenFields []string

// Give marks fields as given.
func (g *givenFields) Give(fields ...string) { *g = append(*g, fields...) }

// Given reports whether Give named field.
func (g givenFields) Given(field string) bool { return slices.Contains(g, field) }

// ParsedTarget is Target as New parsed it, its URL's credentials included
// (Target.URL); zero for a Spec New did not make (one read from a result).
func (s Spec) ParsedTarget() Target { return s.target }

// OnServer is the spec of one of the lab servers a run compares
// (ParsedTarget().Labs(), e.g. "postgres:18"): the same run on that server
// alone.
func (s Spec) OnServer(lab string) Spec {
	s.Target, s.Lab = "lab:"+lab, ""
	s.target.Lab, s.target.Redacted = lab, s.Target
	return s
}

// RequestPath is the HTTP request path as the user gave it, for the
// request line: Path is its redacted form (a ?token= is hidden).
func (s Spec) RequestPath() string {
	if s.secretPath != "" {
		return s.secretPath
	}
	return s.Path
}

// ParseRate reads a share as "5%", "0.5%" or a fraction "0.05"
// (--max-error-rate).
func ParseRate(v string) (float64, error) {
	num, pct := strings.CutSuffix(strings.TrimSpace(v), "%")
	r, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a share: give a percentage such as 5%% or a fraction such as 0.05", v)
	}
	if pct {
		r /= 100
	}
	if !(r >= 0 && r <= 1) {
		return 0, fmt.Errorf("%s is out of range: use 0%% to 100%%", v)
	}
	return r, nil
}

// FormatRate writes a share as ParseRate reads it: 0.05 is "5%".
func FormatRate(r float64) string { return strconv.FormatFloat(100*r, 'g', 6, 64) + "%" }

// SourceAddr is the one address every connection binds to (Source as New
// parsed it); not valid for auto and spread (and for a Spec New did not
// make).
func (s Spec) SourceAddr() netip.Addr { return s.sourceAddr }

// WarmupTime is the unrecorded warm-up before each pool trial.
func (s Spec) WarmupTime() time.Duration {
	if s.Warmup == nil {
		return DefaultWarmup
	}
	return *s.Warmup
}

// ErrorRate is the share of failed operations a trial may have.
func (s Spec) ErrorRate() float64 {
	if s.MaxErrorRate == nil {
		return DefaultMaxErrorRate
	}
	return *s.MaxErrorRate
}

// Variant is one way of reaching the target.
type Variant struct {
	ID     string `json:"id"`
	TLS    string `json:"tls"` // off, 1.2, 1.3, auto
	Cipher string `json:"cipher,omitempty"`
	// Group is the one key-exchange group offered; "" is the library's
	// default offer (Go: X25519MLKEM768, X25519, P-256, P-384, P-521).
	Group  string `json:"group,omitempty"`
	Resume bool   `json:"resume,omitempty"`
	Key    string `json:"key,omitempty"`
	Auth   string `json:"auth,omitempty"`
	// Server is the lab server the variant measures when a run compares
	// several ("postgres:18"); "" with one.
	Server string `json:"server,omitempty"`
	// Negotiation is "direct" for PostgreSQL's direct TLS, "" for an
	// SSLRequest first.
	Negotiation string `json:"negotiation,omitempty"`
	// ClientCert is the key type of the lab client certificate the variant
	// presents, "off" for its twin without one; "" without the dimension.
	ClientCert string `json:"client_cert,omitempty"`
	// RTT is the emulated round-trip time; 0 is the bare link.
	RTT time.Duration `json:"rtt_ns,omitempty"`
	// RTTVia is RTTViaLink for a variant whose connections cross a delay
	// link (the kernel's TCP sees the RTT); "" is the dialer's emulation.
	RTTVia string `json:"rtt_via,omitempty"`
	// Client is the client stack that makes the connections (--client:
	// psycopg, pgjdbc, libpq, …, the stack's own name after its alias is
	// resolved; internal/clientstack); "" is Go's, tlsbench's own
	// drivers. A run with a Client other than Go's names it first in
	// every ID ("go plain", "psycopg tls1.3").
	Client string `json:"client,omitempty"`
	// Tunnel labels the tunnel the connections go through ("ssh aes256-ctr",
	// "stunnel"); "" is direct. A tunnelled variant has TLS off: the
	// tunnel encrypts, with Key for stunnel's certificate.
	Tunnel string `json:"via,omitempty"`
	// Baseline marks the variant the others of its Client are compared
	// with: each client's first plain direct variant (or its first), so
	// a run with several clients has one baseline per client, Go's (or
	// the first client's) first (see MarkBaseline).
	Baseline bool `json:"baseline,omitempty"`
	// Route is the --via entry the variant goes through (Route.Label is
	// Tunnel), as recorded: no secret; zero is direct. Results written
	// before it have none (see result.Decode).
	Route RouteInfo `json:"route,omitzero"`
}

// Plain reports whether the variant runs without TLS.
func (v Variant) Plain() bool { return v.TLS == "off" }

// Error is a problem with the Spec: the user's input, not the run. It names
// the Spec fields it is about as the JSON result does (without the _ns of
// durations): "concurrency: 0 is out of range"; Spell writes them as an
// interface spells them, e.g. the command line's "-c/--concurrency".
type Error struct {
	// msg marks each field as ⟨name⟩.
	msg string
}

func (e *Error) Error() string { return e.Spell(nil) }

// Spell returns the message with each field as name gives it (nil: the
// field's own name).
func (e *Error) Spell(name func(field string) string) string {
	var b strings.Builder
	rest := e.msg
	for {
		i := strings.Index(rest, "⟨")
		j := strings.Index(rest, "⟩")
		if i < 0 || j < i {
			b.WriteString(rest)
			return b.String()
		}
		field := rest[i+len("⟨") : j]
		b.WriteString(rest[:i])
		if name != nil {
			field = name(field)
		}
		b.WriteString(field)
		rest = rest[j+len("⟩"):]
	}
}

// Errorf makes an Error; ⟨name⟩ in format marks a field.
func Errorf(format string, args ...any) error { return &Error{fmt.Sprintf(format, args...)} }

func errorf(format string, args ...any) error { return Errorf(format, args...) }

// Source address modes (Spec.Source).
const (
	SourceAuto   = "auto"
	SourceSpread = "spread"
)

// Default values: New fills them into what a Spec leaves unset (zero, nil),
// after a preset's own; the flags only show them.
const (
	DefaultDuration = 5 * time.Second
	DefaultWarmup   = time.Second
	DefaultTimeout  = 10 * time.Second
	DefaultTrials   = 3
	// DefaultKey is the server key of the servers tlsbench starts (the
	// run's builtin and lab targets, serve, lab).
	DefaultKey         = "rsa2048"
	DefaultConcurrency = 1
	DefaultSize        = 1024
	DefaultTables      = 8      // sysbench's --tables of the seed
	DefaultRows        = 100000 // sysbench's --table-size of the seed
	// MaxCountDuration bounds a count-limited trial in time, so that no loop
	// runs unbounded against a server that slowed down.
	MaxCountDuration = 10 * time.Minute
	// DefaultMaxErrorRate is the share of operations that may fail before
	// a trial fails the run.
	DefaultMaxErrorRate = 0.05
	// MaxRTT bounds the emulated round-trip time.
	MaxRTT = 10 * time.Second
	// TimeoutRTTs is how many emulated round trips --timeout must allow at
	// least: a connection setup takes up to about 8 (PostgreSQL, TLS 1.2,
	// SCRAM), then the query. The default timeout allows --rtt 1s.
	TimeoutRTTs = 10
)

// twice refuses a list that holds one value twice; show writes a value as
// the flag takes it.
func twice[T comparable](flag string, list []T, show func(T) string) error {
	for i, v := range list {
		if slices.Contains(list[:i], v) {
			return errTwice(flag, show(v))
		}
	}
	return nil
}

func errTwice(flag, value string) error { return errorf("%s: %s is given twice", flag, value) }

// flagDuration writes a duration as a flag takes it: whole seconds as
// "100s", not "1m40s".
func flagDuration(d time.Duration) string {
	if d >= time.Second && d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return d.String()
}

// New fills defaults into raw, validates it and returns the Spec to run.
// On error, the Spec it returns holds no secret either.
func New(raw Spec) (Spec, error) { return NewContext(context.Background(), raw) }

// NewContext is New under ctx: reading the scripts (a long one takes a
// while) stops when ctx is done, with ctx's error.
func NewContext(ctx context.Context, raw Spec) (Spec, error) {
	s, err := newSpec(ctx, raw)
	if err != nil {
		s.Target = Redact(s.Target)
		s.Via, s.target, s.routes = redactAll(s.Via), Target{}, nil
		s.hideWorkload()
		s.secretWork = UserWorkload{}
	}
	return s, err
}

func newSpec(ctx context.Context, raw Spec) (Spec, error) {
	s := raw
	// Each section fills the defaults of its own fields and validates
	// them, in this order: later sections read what earlier ones settled
	// (the experiments, the parsed target, the TLS modes).
	sections := []func(*Spec) error{
		(*Spec).checkGiven,
		(*Spec).experiments,
		(*Spec).parseTarget,
		(*Spec).tlsModes,
		(*Spec).authMethods,
		func(s *Spec) error { return s.userWorkload(s.target) },
		func(s *Spec) error { return s.workload(ctx, s.target) },
		(*Spec).resumption,
		(*Spec).cipherSuites,
		(*Spec).keyExchange,
		(*Spec).serverKeys,
		(*Spec).trust,
		func(s *Spec) error { return s.checkVia(s.target) },
		(*Spec).checkRTTVia,
		func(s *Spec) error { return s.checkNegotiation(s.target) },
		(*Spec).loadShape,
		(*Spec).perConn,
		(*Spec).storm,
		(*Spec).clientCPUs,
		(*Spec).shardSearch,
		(*Spec).rate,
		func(s *Spec) error { return s.shard(s.target, raw.Duration, time.Now()) },
		(*Spec).limits,
		(*Spec).source,
		(*Spec).response,
		(*Spec).clientStacksSection,
		(*Spec).variantsLeft,
	}
	for _, section := range sections {
		if err := section(&s); err != nil {
			return s, err
		}
	}
	s.Target = s.target.Redacted
	s.secretPath, s.Path = s.Path, Redact(s.Path)
	return s, nil
}

// MaxDuration bounds -d, --warmup and --timeout: a day, far beyond any
// trial worth repeating, and a typo (2562047h) is an error, not a run
// that never ends.
const MaxDuration = 24 * time.Hour

// checkGiven refuses what a Spec is given before any default is filled:
// a list given empty (nil is the default; an empty one is an unset shell
// variable, --tls "$MODES", and must not quietly become the default
// matrix), a zero Given where zero is no value (⟨trials⟩ 0), and durations
// below zero or above MaxDuration.
func (s *Spec) checkGiven() error {
	lists := []struct {
		field, example string
		empty          bool
	}{
		{"⟨tls⟩", "off,1.3", givenEmpty(s.TLS)},
		{"⟨keys⟩", "rsa2048,ecdsa-p256", givenEmpty(s.Keys)},
		{"⟨via⟩", "direct,ssh", givenEmpty(s.Via)},
		{"⟨groups⟩", "x25519,p256", givenEmpty(s.Groups)},
		{"⟨client_stacks⟩", "go,psycopg", givenEmpty(s.ClientStacks)},
		{"⟨ciphers⟩", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", givenEmpty(s.Ciphers)},
		{"⟨resume⟩", "off,on", givenEmpty(s.Resume)},
		{"⟨auth⟩", "scram-sha-256,md5", givenEmpty(s.Auth)},
		{"⟨negotiation⟩", "postgres,direct", givenEmpty(s.Negotiation)},
		{"⟨client_certs⟩", "off,rsa2048", givenEmpty(s.ClientCerts)},
		{"⟨concurrency⟩", "1,8", givenEmpty(s.Concurrency)},
		{"⟨per_conn⟩", "1,10", givenEmpty(s.PerConn)},
		{"⟨clients⟩", "100,1000", givenEmpty(s.Clients)},
		{"⟨rtt⟩", "0,44ms", givenEmpty(s.RTT)},
		{"⟨rtt_via⟩", "dialer,link", givenEmpty(s.RTTVia)},
		{"⟨predict_rtt⟩", "44ms", givenEmpty(s.PredictRTT)},
	}
	for _, l := range lists {
		if l.empty {
			return errorf("%s: the list is empty (an unset variable?): give values such as %s %s, or leave %s out for the default", l.field, l.field, l.example, l.field)
		}
	}
	zeros := []struct {
		field, def string
		zero       bool
	}{
		{"trials", strconv.Itoa(DefaultTrials), s.Trials == 0},
		{"timeout", DefaultTimeout.String(), s.Timeout == 0},
		{"max_inflight", strconv.Itoa(DefaultMaxInflight), s.MaxInflight == 0},
		{"slo", DefaultSLO.String(), s.SLO == 0},
	}
	for _, z := range zeros {
		if z.zero && s.Given(z.field) {
			return errorf("⟨%s⟩: 0 is out of range: give a positive value or leave ⟨%s⟩ out for the default (%s)", z.field, z.field, z.def)
		}
	}
	if s.Given("duration") && s.Duration == 0 && s.Count == 0 {
		return errorf("⟨duration⟩: 0 is no trial: give a positive duration or ⟨count⟩ COUNT")
	}
	if s.Given("client_cpus") && strings.TrimSpace(s.ClientCPUs) == "" {
		return errorf("⟨client_cpus⟩: the CPU list is empty (an unset variable?): give CPUs as taskset does, e.g. ⟨client_cpus⟩ 0")
	}
	durations := []struct {
		field, negative string
		d               time.Duration
	}{
		{"⟨duration⟩", "give a positive length of each trial", s.Duration},
		{"⟨timeout⟩", "give a positive bound on each operation", s.Timeout},
		{"⟨warmup⟩", "give 0 for no warm-up or a positive duration", s.WarmupTime()},
	}
	for _, d := range durations {
		switch {
		case d.d < 0:
			return errorf("%s %s is negative: %s", d.field, shortDuration(d.d), d.negative)
		case d.d > MaxDuration:
			return errorf("%s %s is out of range: use at most %s", d.field, shortDuration(d.d), shortDuration(MaxDuration))
		}
	}
	return nil
}

// shortDuration writes d without zero minutes and seconds: "24h", not
// "24h0m0s".
func shortDuration(d time.Duration) string {
	str := d.String()
	if strings.HasSuffix(str, "m0s") {
		str = strings.TrimSuffix(str, "0s")
	}
	if strings.HasSuffix(str, "h0m") {
		str = strings.TrimSuffix(str, "0m")
	}
	return str
}

// givenEmpty reports whether a list was given, but with nothing in it.
func givenEmpty[T any](l []T) bool { return l != nil && len(l) == 0 }

// Label is the text of a concurrency column in tables.
func Label(c int) string { return fmt.Sprintf("c=%d", c) }
