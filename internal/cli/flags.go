package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tlsbench/tlsbench/internal/clientstack"
	"github.com/tlsbench/tlsbench/internal/export"
	"github.com/tlsbench/tlsbench/internal/plan"
)

// runFlags are the flags of every command that measures.
type runFlags struct {
	tls, ciphers, resume, keys []string
	groups                     []string
	// clientStacks: --client, the stacks that make the connections.
	clientStacks              []string
	ca                        string
	insecure                  bool
	concurrency               []int
	duration, warmup, timeout time.Duration
	count                     int64
	trials, size              int
	output                    string
	lab                       string
	auth                      []string
	rtt, predictRTT           []time.Duration
	via                       []string
	rttVia                    []string // --rtt-via: dialer, link (plan/rttvia.go)
	workload, queryMode       string
	tables, rows              int
	preset                    string
	maxErrorRate              string
	source                    string
	scripts                   []string // --script FILE[@WEIGHT], repeatable
	// cmd is the command the flags belong to (onRoot: plan.PresetDefault),
	// exps its experiments.
	cmd  cmdSet
	exps []plan.Experiment
	// perConn: connect --per-conn (plan/perconn.go).
	perConn []int
	// storm: the storm command's own flags (storm.go).
	clients []int
	firstOp bool
	// Open-loop arrivals (plan/rate.go).
	rate, arrivals string
	maxInflight    int
	slo            time.Duration

	// The user's workload (plan/request.go).
	commands, headers   []string
	keyspace            int64
	filter, collection  string
	method, data, paths string

	// Client certificates (mutual TLS): a URL target's, or the lab's
	// dimension.
	cert, certKey string
	clientCerts   []string
	negotiation   []string
	// The client's own footprint (cli/profile.go, cli/cpus.go).
	cpuProfile string
	clientCPUs string
	// A shard of a run split over client machines (merge.go).
	shard, startAt string
	// wire: connect --wire, the self-check against a capture (wirecheck.go).
	wire bool
	// quiet: no progress lines on stderr (progress.go).
	quiet bool
	// gate: --gate, --gates, --gate-abort, --junit, --summary-md (gates.go).
	gate gateFlags
	// Live metrics (export.go): --otlp's endpoint (export.FromEnv given
	// bare), --prometheus-push's Pushgateway.
	otlp, promPush string
}

// The run flags are one table (options), and serve's, lab's and crypto's
// tables of the same type: each row names the plan field it sets (as
// plan.Error names it), its help section, the commands that list it,
// and how plan's default for it reads. Registration, the defaults --help
// shows (asked of plan, never written here) and the spelling of plan's
// errors (flagName) all come from them.

// cmdSet is a set of commands: the measuring ones, and those that take
// options of their own plan type (serve, lab, crypto).
type cmdSet uint16

const (
	onRoot cmdSet = 1 << iota // tlsbench with no command: the default matrix
	onConnect
	onPool
	onStream
	onStorm
	// onKube is a command's manifests for a sharded run (kube.go): the
	// pods' run takes the command's flags, bar those it refuses.
	onKube
	onServe
	onLab
	onCrypto
	onReplicate

	onClosed = onRoot | onConnect | onPool | onStream // -c, -d, -n: a closed loop's
	onRate   = onConnect | onPool                     // --rate's open loop
	onRuns   = onClosed | onStorm
	// onURL are the commands that take a URL TARGET; the root command
	// measures the built-in server or a lab's.
	onURL = onRuns &^ onRoot
)

// commandSet is the set of one experiment's command.
func commandSet(e plan.Experiment) cmdSet {
	return map[plan.Experiment]cmdSet{plan.Connect: onConnect, plan.Pool: onPool, plan.Stream: onStream, plan.Storm: onStorm}[e]
}

// The help sections, in the order --help shows them.
const (
	secTarget   = "Target and TLS"
	secWorkload = "Workload"
	secLoad     = "Load shape"
	secRate     = "Open loop (--rate)"
	secPaths    = "Paths"
	secOutput   = "Output"
)

var sections = []string{secTarget, secWorkload, secLoad, secRate, secPaths, secOutput, secKube, secOther}

const (
	secKube  = "Kubernetes"
	secOther = "Other"
)

// refusal is commands that take a flag hidden and refuse it, and why.
type refusal struct {
	on  cmdSet
	why string
}

// inStorm refuses a closed loop's flags in storm.
var inStorm = refusal{onStorm, "every client connects once; give --clients N"}

// inKube is a run flag the pods of a sharded run cannot take, and why.
func inKube(why string) refusal { return refusal{onKube, why} }

// option is one flag of a command whose flags are the fields of F and
// whose plan type, which defaults and validates them, is P: runFlags and
// plan.Spec for the measuring commands (options), serve's, lab's and
// crypto's their own (serve.go, labcmd.go, crypto.go).
type option[F, P any] struct {
	flag, short string
	// field is the P field as plan.Error names it; "" is the
	// flag's name with _ for -, "-" none (the flag is the command's own).
	field   string
	section string
	usage   string
	// on lists the commands whose help lists the flag; hide those that
	// take it unlisted, because plan explains why it does not apply
	// there (pool --per-conn); refuse the commands that take it unlisted
	// and refuse it, saying why. Elsewhere it is unknown, and flagHint
	// names the command it belongs to.
	on, hide cmdSet
	refuse   []refusal
	ptr      func(*F) any
	array    bool // repeatable, each value whole (StringArray)
	// def reads plan's default for the flag from a P that plan filled
	// with the flag left out, in context when (see contexts), as the flag
	// takes it; nil: no default to show.
	def  func(P) string
	when string
	// bare is the value of the flag given without one (--otlp), "" if
	// it needs one.
	bare string
}

// runOption is one flag of the measuring commands.
type runOption = option[runFlags, plan.Spec]

// contexts are where a flag's default applies, beyond the command's
// built-in server target: a database's workload, an open loop, a search.
var contexts = map[string]func(*plan.Spec){
	"db":     func(s *plan.Spec) { s.Target, s.Lab = "", "postgres" },
	"rate":   func(s *plan.Spec) { s.Rates = []float64{100} },
	"search": func(s *plan.Spec) { _, s.Knee, _ = plan.ParseRates("auto") },
}

// refusedIn says why command c refuses the flag, if it does.
func (o option[F, P]) refusedIn(c cmdSet) (why string, refused bool) {
	for _, r := range o.refuse {
		if r.on&c != 0 {
			return r.why, true
		}
	}
	return "", false
}

func (o option[F, P]) fieldName() string {
	if o.field != "" {
		return o.field
	}
	return strings.ReplaceAll(o.flag, "-", "_")
}

// spelled is the flag as errors name it: "-c/--concurrency".
func (o option[F, P]) spelled() string {
	if o.short != "" {
		return "-" + o.short + "/--" + o.flag
	}
	return "--" + o.flag
}

func list[T any](show func(T) string) func([]T) string {
	return func(l []T) string {
		out := make([]string, len(l))
		for i, v := range l {
			out[i] = show(v)
		}
		return strings.Join(out, ",")
	}
}

var (
	strs  = list(func(s string) string { return s })
	ints  = list(strconv.Itoa)
	durs  = list(time.Duration.String)
	onOff = list(func(b bool) string { return map[bool]string{false: "off", true: "on"}[b] })
)

// workloadUsage lists each engine's workloads, from plan.
func workloadUsage() string {
	var parts []string
	for _, e := range []struct{ engine, names string }{{"postgres", "databases"}, {"redis", "redis"}, {"mongodb", "mongodb"}} {
		var ws []string
		for _, w := range plan.Workloads[e.engine] {
			if w != plan.WorkloadCommand && w != plan.WorkloadFilter {
				ws = append(ws, w)
			}
		}
		parts = append(parts, e.names+": "+strings.Join(ws, ", "))
	}
	return "what each operation does (the first of each is its default, but connect on a URL target pings); " + strings.Join(parts, "; ") + "; read-only is the sysbench oltp_read_only transaction"
}

// clientUsage lists each engine's client stacks, from plan's table.
func clientUsage() string {
	var parts []string
	for _, e := range []string{"postgres", "mysql", "redis", "mongodb", "http"} {
		parts = append(parts, e+": "+strings.Join(plan.ClientNames(e)[1:], ", "))
	}
	return "client stacks that make the connections, a list to compare, each against its own plain variant: go (tlsbench's drivers, the default); " +
		strings.Join(parts, "; ") + "; python, node, java, jdbc: the language's usual one (connect and pool, closed loops (no --rate), direct connections; " +
		"libmariadb is pool only, its connect loop mysqlclient; openssl connect only; --preset mongodb-seed: go and pymongo; install: " +
		clientstack.InstallCommand + ")"
}

var options = []runOption{
	// Target and TLS.
	{flag: "tls", section: secTarget, on: onRuns, ptr: func(f *runFlags) any { return &f.tls },
		usage: "TLS modes to compare: off, 1.2, 1.3, auto; a URL target's default follows its scheme, the one shown is the built-in server's",
		def:   func(s plan.Spec) string { return strs(s.TLS) }},
	{flag: "lab", section: secTarget, on: onRuns, refuse: []refusal{inKube("the lab's servers run on this machine: a sharded run measures one server by its URL")}, ptr: func(f *runFlags) any { return &f.lab },
		usage: "start a throw-away server and measure it: postgres, mariadb, redis or mongodb (instead of a TARGET); postgres:18 is PostgreSQL 18, postgres:15,postgres:18 compares both"},
	{flag: "key", field: "keys", section: secTarget, on: onRuns, hide: onKube, ptr: func(f *runFlags) any { return &f.keys },
		usage: "server key types (servers tlsbench starts: builtin, --lab): " + strings.Join(plan.KeyTypes, ", "),
		def:   func(s plan.Spec) string { return strs(s.Keys) }},
	{flag: "cipher", field: "ciphers", section: secTarget, on: onRuns, ptr: func(f *runFlags) any { return &f.ciphers },
		usage: "TLS 1.2 cipher suites (IANA names, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)"},
	{flag: "group", field: "groups", section: secTarget, on: onRuns, ptr: func(f *runFlags) any { return &f.groups },
		usage: "key-exchange groups to compare, one offered per variant: x25519, x25519mlkem768 (the post-quantum hybrid, TLS 1.3), p256, p384, p521, default (the TLS library's offer, which is what is offered without --group)"},
	{flag: "resume", section: secTarget, on: onRuns, ptr: func(f *runFlags) any { return &f.resume },
		usage: "client session resumption: off, on, or off,on to compare",
		def:   func(s plan.Spec) string { return onOff(s.Resume) }},
	{flag: "negotiation", section: secTarget, on: onRuns, ptr: func(f *runFlags) any { return &f.negotiation },
		usage: "postgres: how TLS starts, a list to compare: postgres (an SSLRequest first) and direct (TLS from the first byte, PostgreSQL 17+), as libpq's sslnegotiation"},
	{flag: "ca", field: "ca_file", section: secTarget, on: onURL, hide: onRoot, ptr: func(f *runFlags) any { return &f.ca },
		usage: "PEM file of the CA that signed the server's certificate (default: system roots)"},
	{flag: "insecure", section: secTarget, on: onURL, hide: onRoot, ptr: func(f *runFlags) any { return &f.insecure },
		usage: "do not verify the server's certificate"},
	{flag: "cert", field: "cert_file", section: secTarget, on: onURL, hide: onRoot, refuse: []refusal{inKube("a client certificate's key would go into the manifests: kube does not pass client certificates")}, ptr: func(f *runFlags) any { return &f.cert },
		usage: "client certificate (PEM) every TLS variant presents when the server asks, as curl and redis-cli spell it (URL targets; or the URL's sslcert=, ssl-cert=, tlsCertificateKeyFile=)"},
	{flag: "cert-key", field: "cert_key_file", section: secTarget, on: onURL, hide: onRoot, refuse: []refusal{inKube("a private key would go into the manifests: kube does not pass client certificates")}, ptr: func(f *runFlags) any { return &f.certKey },
		usage: "the client certificate's private key (PEM, not encrypted; default: the --cert file)"},
	{flag: "client-cert", field: "client_certs", section: secTarget, on: onRuns, hide: onKube, ptr: func(f *runFlags) any { return &f.clientCerts },
		usage: "lab and builtin: client certificates to compare, e.g. off,rsa2048,ecdsa-p256: the server demands one signed by the lab CA in those variants"},
	{flag: "client", field: "client_stacks", section: secTarget, on: onConnect | onPool, refuse: []refusal{inKube("the pods run tlsbench's own image, which holds Go's stack only")}, ptr: func(f *runFlags) any { return &f.clientStacks },
		usage: clientUsage()},
	{flag: "auth", section: secTarget, on: onRuns, hide: onKube, ptr: func(f *runFlags) any { return &f.auth },
		usage: "lab only: auth methods to compare (postgres: scram-sha-256, md5, trust; mariadb: mysql_native_password, ed25519)"},

	// Workload.
	{flag: "workload", section: secWorkload, on: onRuns, ptr: func(f *runFlags) any { return &f.workload },
		usage: workloadUsage()},
	{flag: "query-mode", section: secWorkload, on: onRuns, ptr: func(f *runFlags) any { return &f.queryMode },
		usage: "databases: prepared or simple (text protocol)", def: func(s plan.Spec) string { return s.QueryMode }, when: "db"},
	{flag: "tables", section: secWorkload, on: onRuns, ptr: func(f *runFlags) any { return &f.tables },
		usage: "databases: sbtest tables the workload reads", def: func(s plan.Spec) string { return strconv.Itoa(s.Tables) }, when: "db"},
	{flag: "rows", section: secWorkload, on: onRuns, ptr: func(f *runFlags) any { return &f.rows },
		usage: "databases: rows per table; mongodb: documents in ycsb.usertable", def: func(s plan.Spec) string { return strconv.Itoa(s.Rows) }, when: "db"},
	{flag: "script", field: "scripts", section: secWorkload, on: onRuns, array: true, ptr: func(f *runFlags) any { return &f.scripts },
		usage: "databases: a pgbench custom script, FILE[@WEIGHT], repeatable (as pgbench -f): each operation is one pass through a script picked by weight (\\set, \\sleep, :var, statements ending at ';'); --query-mode as pgbench -M"},
	{flag: "command", field: "commands", section: secWorkload, on: onRuns, array: true, ptr: func(f *runFlags) any { return &f.commands },
		usage: "redis: your command instead of --workload, as redis-benchmark takes it (redis-cli quoting; __rand_int__ is a random 12-digit number below --keyspace); repeat it for several commands per operation, sent as one pipeline"},
	{flag: "keyspace", section: secWorkload, on: onRuns, ptr: func(f *runFlags) any { return &f.keyspace },
		usage: "the range of __rand_int__ in --command or --filter: numbers 0 to N-1 (redis-benchmark's -r)"},
	{flag: "filter", section: secWorkload, on: onRuns, ptr: func(f *runFlags) any { return &f.filter },
		usage: "mongodb: a find filter in extended JSON instead of --workload, e.g. '{\"_id\": \"user__rand_int__\"}'; each operation reads its first batch"},
	{flag: "collection", section: secWorkload, on: onRuns, ptr: func(f *runFlags) any { return &f.collection },
		usage: "mongodb: where --filter looks: DB.COLLECTION, or COLLECTION of the URL's database (mongodb://HOST/DB)"},
	{flag: "request", short: "X", field: "method", section: secWorkload, on: onRuns, ptr: func(f *runFlags) any { return &f.method },
		usage: "http: the request method, as curl's -X (default GET, POST with --data)"},
	{flag: "header", short: "H", field: "headers", section: secWorkload, on: onRuns, array: true, ptr: func(f *runFlags) any { return &f.headers },
		usage: "http: a request header 'Name: value', as curl's -H; repeatable (credentials are not stored)"},
	{flag: "data", section: secWorkload, on: onRuns, ptr: func(f *runFlags) any { return &f.data },
		usage: "http: the request body, or @FILE (sent as it is; stored as its size and sha256 only)"},
	{flag: "paths", section: secWorkload, on: onRuns, ptr: func(f *runFlags) any { return &f.paths },
		usage: "http: a file of request paths, one a line ('#' comments); each request takes one at random"},
	{flag: "size", field: "response_size", section: secWorkload, on: onRuns, hide: onKube, ptr: func(f *runFlags) any { return &f.size },
		usage: "response body size of the built-in server, bytes", def: func(s plan.Spec) string { return strconv.Itoa(s.ResponseSize) }},
	{flag: "preset", section: secWorkload, on: onRoot | onConnect, hide: onPool | onStream | onStorm, ptr: func(f *runFlags) any { return &f.preset },
		usage: "replay a seed study as it was done: mongodb-seed (new client + first find_one, reused client's find_one; with and without TLS; -n iterations per trial, 1000 in 5 trials unless given)",
		def:   func(s plan.Spec) string { return s.Preset }},

	// Load shape.
	{flag: "concurrency", short: "c", section: secLoad, on: onClosed, refuse: []refusal{inStorm}, ptr: func(f *runFlags) any { return &f.concurrency },
		usage: "workers (connect) or connections (pool); a list sweeps, e.g. 1,2,4,8,16,32", def: func(s plan.Spec) string { return ints(s.Concurrency) }},
	{flag: "clients", section: secLoad, on: onStorm, ptr: func(f *runFlags) any { return &f.clients },
		usage: "clients that connect at the same instant, a list sweeps, e.g. 100,1000 (1 to " + strconv.Itoa(plan.MaxStormClients) + "; the open-file limit is raised as far as the hard limit allows)",
		def:   func(s plan.Spec) string { return ints(s.Clients) }},
	{flag: "first-op", section: secLoad, on: onStorm, ptr: func(f *runFlags) any { return &f.firstOp },
		usage: "each client runs the workload once when connected (the first query after a reconnect)"},
	{flag: "duration", short: "d", section: secLoad, on: onClosed, refuse: []refusal{inStorm}, ptr: func(f *runFlags) any { return &f.duration },
		usage: "length of each trial", def: func(s plan.Spec) string { return s.Duration.String() }},
	{flag: "count", short: "n", section: secLoad, on: onClosed, refuse: []refusal{inStorm}, ptr: func(f *runFlags) any { return &f.count },
		usage: "operations per trial (then -d only bounds it, by " + strconv.Itoa(int(plan.MaxCountDuration.Minutes())) + "m unless given)"},
	{flag: "per-conn", section: secLoad, on: onRoot | onConnect, hide: onPool | onStream, refuse: []refusal{inStorm}, ptr: func(f *runFlags) any { return &f.perConn },
		usage: "connect: operations each new connection runs before it closes, a list sweeps, e.g. 1,3,10,100 (HTTP keeps it alive until the last request); the report gives the break-even against plain",
		def:   func(s plan.Spec) string { return ints(s.PerConnections(plan.Connect)) }},
	{flag: "warmup", section: secLoad, on: onRoot | onPool | onStream, hide: onConnect | onStorm, ptr: func(f *runFlags) any { return &f.warmup },
		usage: "unrecorded warm-up before each pool trial", def: func(s plan.Spec) string { return s.WarmupTime().String() }},
	{flag: "trials", section: secLoad, on: onRuns, ptr: func(f *runFlags) any { return &f.trials },
		usage: "timed repetitions of every variant, interleaved", def: func(s plan.Spec) string { return strconv.Itoa(s.Trials) }},
	{flag: "timeout", section: secLoad, on: onRuns, ptr: func(f *runFlags) any { return &f.timeout },
		usage: "bound on every single operation", def: func(s plan.Spec) string { return s.Timeout.String() }},
	{flag: "max-error-rate", section: secLoad, on: onRuns, ptr: func(f *runFlags) any { return &f.maxErrorRate },
		usage: "share of failed operations above which a trial fails the run (exit 1, after the trials are saved), e.g. 5%, 0.5%, 0 (any error), 100% (never)",
		def:   func(s plan.Spec) string { return plan.FormatRate(s.ErrorRate()) }},
	{flag: "client-cpus", section: secLoad, on: onRuns, ptr: func(f *runFlags) any { return &f.clientCPUs },
		usage: "CPUs tlsbench runs on, in taskset's list syntax (e.g. 0 or 0-1,3); the servers it starts run on the others, so that client and server do not share CPUs"},

	// Open loop.
	{flag: "rate", field: "rates", section: secRate, on: onRate, hide: onRoot | onStream | onStorm, ptr: func(f *runFlags) any { return &f.rate },
		usage: "arrivals per second instead of a closed loop (new connections/s for connect), a list compares, e.g. 100,300; auto or FROM..TO (e.g. 50..5000) searches each variant's highest rate within --slo; latency counts from each arrival's intended start"},
	{flag: "arrivals", section: secRate, on: onRate, hide: onRoot | onStream | onStorm, ptr: func(f *runFlags) any { return &f.arrivals },
		usage: "with --rate: poisson (exponential gaps, as pgbench --rate) or uniform (constant gaps)", def: func(s plan.Spec) string { return s.Arrivals }, when: "rate"},
	{flag: "max-inflight", section: secRate, on: onRate, hide: onRoot | onStream | onStorm, ptr: func(f *runFlags) any { return &f.maxInflight },
		usage: "with --rate: most arrivals in flight (connect: connections opening at once; pool: requests queued for the -c connections); an arrival beyond it is dropped and counted",
		def:   func(s plan.Spec) string { return strconv.Itoa(s.MaxInflight) }, when: "rate"},
	{flag: "slo", section: secRate, on: onRate, hide: onRoot | onStream | onStorm, ptr: func(f *runFlags) any { return &f.slo },
		usage: "with --rate auto or FROM..TO: the p99 latency (from the intended start) a rate must keep under", def: func(s plan.Spec) string { return s.SLO.String() }, when: "search"},

	// Paths.
	{flag: "via", section: secPaths, on: onRuns, refuse: []refusal{inKube("tunnels need key files and servers on this machine: a sharded run connects directly")}, ptr: func(f *runFlags) any { return &f.via },
		usage: "how connections reach the server, a list to compare: direct, ssh (a throw-away sshd), ssh:CIPHER, ssh://user@host:port?cipher=C&identity=FILE&known_hosts=FILE, stunnel (lab: a throw-away stunnel pair), haproxy (lab: TLS terminated at HAProxy), openssh[:CIPHER] (lab: OpenSSH's ssh -L), wireguard (lab: a VPN in a network namespace), pgbouncer[:local][?pool_mode=...&server_tls_sslmode=...&default_pool_size=N] (lab postgres); tunnels carry plain connections",
		def:   func(s plan.Spec) string { return or(strs(s.Via), "direct") }},
	{flag: "rtt", section: secPaths, on: onRuns, ptr: func(f *runFlags) any { return &f.rtt },
		usage: "round-trip times to emulate, crossed with the other variants, e.g. 0,1ms,44ms,170ms (0 to 10s; in tlsbench's dialer, in user space: connect +1 RTT, each direction +RTT/2)",
		def:   func(s plan.Spec) string { return or(durs(s.RTT), "0s") }},
	{flag: "rtt-via", section: secPaths, on: onRuns, refuse: []refusal{inKube("a delay link needs a lab server on this machine")}, ptr: func(f *runFlags) any { return &f.rttVia },
		usage: "how --rtt is made, a list to compare: dialer (tlsbench's dialer, in user space; a relay for --client stacks) or link (lab: a network namespace joined to the server's by two TUN devices whose packets tlsbench delays RTT/2 each way, so the kernel's TCP sees the RTT, handshake included; root)",
		def:   func(s plan.Spec) string { return or(strs(s.RTTVia), plan.RTTViaDialer) }},
	{flag: "predict-rtt", section: secPaths, on: onRoot | onConnect, hide: onPool | onStream | onStorm, ptr: func(f *runFlags) any { return &f.predictRTT },
		usage: "round-trip times at which the report predicts connection setup and TLS overhead from the loopback run (round trips × RTT + local time), e.g. 44ms,170ms; checked against --rtt where both are given"},
	{flag: "source", section: secPaths, on: onRuns, hide: onKube, ptr: func(f *runFlags) any { return &f.source },
		usage: "client source address: auto (spread over 127.0.1.1-64 for servers tlsbench starts, the kernel's choice for a URL), spread (also for a URL's loopback server: long connect runs do not exhaust ports), or one IP address",
		def:   func(s plan.Spec) string { return s.Source }},

	// Output.
	{flag: "output", short: "o", section: secOutput, on: onRuns, refuse: []refusal{inKube("each pod writes its result to its log (-o -): collect them with kubectl logs and tlsbench merge -o FILE")}, ptr: func(f *runFlags) any { return &f.output },
		usage: "result file (default tlsbench-YYYYMMDD-HHMMSS.json)"},
	{flag: "quiet", short: "q", section: secOutput, on: onRuns, ptr: func(f *runFlags) any { return &f.quiet },
		usage: "no progress on stderr (warnings and errors still show); off a terminal progress is a line per phase"},
	{flag: "wire", section: secOutput, on: onConnect, ptr: func(f *runFlags) any { return &f.wire },
		usage: "capture the run's own connections on loopback (tcpdump, else a packet socket: root or CAP_NET_RAW) and set tlsbench's mean phase times and round trips beside the wire's, per variant and phase; a --client stack's phases, round trips and negotiated TLS come from the wire alone (servers on this machine only)"},
	{flag: "shard", section: secOutput, on: onURL, hide: onRoot, refuse: []refusal{inKube("the Job gives each pod its shard, $(JOB_COMPLETION_INDEX)/N: give --shards N")}, ptr: func(f *runFlags) any { return &f.shard },
		usage: "run shard INDEX/COUNT of a run split over COUNT client machines (INDEX from 0, as JOB_COMPLETION_INDEX): its share of -c, -n, --rate and --clients, in the trial slots every shard keeps from --start-at; a URL target only; tlsbench merge joins the results"},
	{flag: "start-at", section: secOutput, on: onURL, hide: onRoot, ptr: func(f *runFlags) any { return &f.startAt },
		usage: "with --shard: when every shard starts its first trial, RFC 3339 (2025-06-01T12:00:00Z; the same on every shard) or +DURATION from now (+30s, rounded up to the second, for processes started together)"},

	// Gates (gates.go, package gate): judged on the report model.
	{flag: "gate", field: "-", section: secOutput, on: onRuns, array: true, refuse: []refusal{inKube(noKubeGates)}, ptr: func(f *runFlags) any { return &f.gate.exprs },
		usage: "a gate the run must pass, else exit 3, repeatable: EXPERIMENT[VARIANT|*].QUANTITY OP BOUND [UNIT] [@ci95], e.g. 'connect[tls1.3].overhead.p99 < 40% @ci95', 'connect[*].roundtrips.tls-handshake <= 1' (docs/gates.md)"},
	{flag: "gates", field: "-", section: secOutput, on: onRuns, refuse: []refusal{inKube(noKubeGates)}, ptr: func(f *runFlags) any { return &f.gate.file },
		usage: "a YAML file of gates: a list of expressions or {name: NAME, gate: EXPR}"},
	{flag: "gate-abort", field: "-", section: secOutput, on: onRuns, refuse: []refusal{inKube(noKubeGates)}, ptr: func(f *runFlags) any { return &f.gate.abort },
		usage: "stop after the first trial after which a gate can no longer pass: its figure fails the bound, with @ci95 its whole interval (the trials run are kept and saved)"},
	{flag: "junit", field: "-", section: secOutput, on: onRuns, refuse: []refusal{inKube(noKubeGates)}, ptr: func(f *runFlags) any { return &f.gate.junit },
		usage: "write the gates' verdicts as JUnit XML to FILE, one test case per gate"},
	{flag: "summary-md", field: "-", section: secOutput, on: onRuns, refuse: []refusal{inKube(noKubeGates)}, ptr: func(f *runFlags) any { return &f.gate.summary },
		usage: "append the gates' verdicts as a Markdown table to FILE (e.g. $GITHUB_STEP_SUMMARY)"},
	{flag: "otlp", field: "-", section: secOutput, on: onRuns, bare: export.FromEnv, ptr: func(f *runFlags) any { return &f.otlp },
		usage: "send the run's series live, per trial and at the end, over OTLP: --otlp alone where the OTEL_EXPORTER_OTLP_* variables say (OTLP/HTTP, or gRPC with OTEL_EXPORTER_OTLP_PROTOCOL=grpc), --otlp=`URL` to that endpoint; failures never stop the run (docs/metrics.md)"},
	{flag: "prometheus-push", field: "-", section: secOutput, on: onRuns, ptr: func(f *runFlags) any { return &f.promPush },
		usage: "push the run's series per trial and at the end to the Pushgateway at `URL` (job tlsbench, grouped by run_id and shard); failures never stop the run (docs/metrics.md)"},

	// A CPU profile of tlsbench itself, for its developers (profile.go).
	{flag: "cpuprofile", field: "-", section: secOther, hide: onRuns, refuse: []refusal{inKube("a profile written in a pod is lost with it")}, ptr: func(f *runFlags) any { return &f.cpuProfile },
		usage: "write a CPU profile of tlsbench itself to FILE (go tool pprof)"},
}

// noKubeGates is why kube refuses gates: each pod measures a shard.
const noKubeGates = "each pod measures a shard: gate the merged result with tlsbench compare, or run the gates without kube"

func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// optionByFlag indexes options.
var optionByFlag = func() map[string]runOption {
	byFlag := map[string]runOption{}
	for _, o := range options {
		byFlag[o.flag] = o
	}
	return byFlag
}()

// fieldFlags spells the fields plan's errors name (as plan.Error names
// them) as the flags that set them, in every command's table: a field
// two tables share is one flag.
var fieldFlags = func() map[string]string {
	m := map[string]string{}
	spellings(m, options)
	spellings(m, serveOptions)
	spellings(m, labOptions)
	spellings(m, cryptoOptions)
	return m
}()

func spellings[F, P any](m map[string]string, table []option[F, P]) {
	for _, o := range table {
		if o.field == "-" {
			continue
		}
		if s, ok := m[o.fieldName()]; ok && s != o.spelled() {
			panic(fmt.Sprintf("field %s is %s and %s", o.fieldName(), s, o.spelled()))
		}
		m[o.fieldName()] = o.spelled()
	}
}

// orderKey is the flag annotation that keeps a table's order in --help.
const orderKey = "tlsbench-order"

// registerTable adds the options of table that command c takes to fs,
// for f's fields, each with its default (defaults, by flag) and its
// section and place in --help.
func registerTable[F, P any](fs *pflag.FlagSet, table []option[F, P], c cmdSet, f *F, defaults map[string]string) {
	for i, o := range table {
		_, refused := o.refusedIn(c)
		if (o.on|o.hide)&c == 0 && !refused {
			continue
		}
		o.add(fs, f)
		fs.Lookup(o.flag).DefValue = defaults[o.flag]
		if o.bare != "" {
			fs.Lookup(o.flag).NoOptDefVal = o.bare
		}
		_ = fs.SetAnnotation(o.flag, sectionKey, []string{o.section})
		_ = fs.SetAnnotation(o.flag, orderKey, []string{strconv.Itoa(i)})
		if o.hide&c != 0 || refused {
			_ = fs.MarkHidden(o.flag)
		}
	}
}

// tableDefaults asks plan for the default of every option of table that
// command c lists, as the flag takes it: made is plan's value with every
// flag left out, in context when; an error is no default.
func tableDefaults[F, P any](table []option[F, P], c cmdSet, made func(when string) (P, error)) map[string]string {
	vals := map[string]*P{}
	out := map[string]string{}
	for _, o := range table {
		if o.def == nil || o.on&c == 0 {
			continue
		}
		if _, ok := vals[o.when]; !ok {
			vals[o.when] = nil
			if v, err := made(o.when); err == nil {
				vals[o.when] = &v
			}
		}
		if v := vals[o.when]; v != nil {
			out[o.flag] = o.def(*v)
		}
	}
	return out
}

// giveTable marks, through give, the plan fields of the flags given.
func giveTable[F, P any](fs *pflag.FlagSet, table []option[F, P], give func(...string)) {
	for _, o := range table {
		if o.field != "-" && fs.Changed(o.flag) {
			give(o.fieldName())
		}
	}
}

// register adds the flags of command c (root: the default matrix; exps
// are its experiments) to cmd, each with plan's default for c.
func (f *runFlags) register(cmd *cobra.Command, c cmdSet, exps []plan.Experiment) {
	registerTable(cmd.Flags(), options, c, f, planDefaults(c, exps))
	f.cmd, f.exps = c, exps
}

// add registers the option's flag for f's field.
func (o option[F, P]) add(fs *pflag.FlagSet, f *F) {
	switch p := o.ptr(f).(type) {
	case *[]string:
		if o.array {
			fs.StringArrayVarP(p, o.flag, o.short, nil, o.usage)
		} else {
			fs.StringSliceVarP(p, o.flag, o.short, nil, o.usage)
		}
	case *string:
		fs.StringVarP(p, o.flag, o.short, "", o.usage)
	case *bool:
		fs.BoolVarP(p, o.flag, o.short, false, o.usage)
	case *int:
		fs.IntVarP(p, o.flag, o.short, 0, o.usage)
	case *int64:
		fs.Int64VarP(p, o.flag, o.short, 0, o.usage)
	case *time.Duration:
		fs.DurationVarP(p, o.flag, o.short, 0, o.usage)
	case *[]int:
		fs.IntSliceVarP(p, o.flag, o.short, nil, o.usage)
	case *[]time.Duration:
		fs.DurationSliceVarP(p, o.flag, o.short, nil, o.usage)
	default:
		panic(fmt.Sprintf("option --%s: no flag type for %T", o.flag, p))
	}
}

// defaultSpec is the raw spec of command c with every flag left out, on
// the built-in server (stream, which reads a database: a lab
// PostgreSQL's plan).
func defaultSpec(c cmdSet, exps []plan.Experiment) plan.Spec {
	s := plan.Spec{Experiments: exps, Target: plan.Builtin}
	switch c {
	case onRoot:
		s.Preset = plan.PresetDefault
	case onStream:
		s.Target, s.Lab = "", "postgres"
	}
	return s
}

// planDefaults asks plan.New for the default of every flag of command c,
// each in its context, as the flag takes it.
func planDefaults(c cmdSet, exps []plan.Experiment) map[string]string {
	return tableDefaults(options, c, func(when string) (plan.Spec, error) {
		raw := defaultSpec(c, exps)
		if ctx := contexts[when]; ctx != nil {
			ctx(&raw)
		}
		return plan.New(raw)
	})
}

// refused is the error of the first flag given that the command refuses
// (option.refuse).
func (f *runFlags) refused(cmd *cobra.Command) error {
	name := cmd.Name()
	if f.cmd&onKube != 0 {
		name = "kube"
	}
	var err error
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if why, ok := optionByFlag[fl.Name].refusedIn(f.cmd); ok && err == nil {
			err = usageError{fmt.Errorf("%s: --%s does not apply: %s", name, fl.Name, why)}
		}
	})
	return err
}

// spec turns the flags into a raw plan.Spec for plan.New.
func (f *runFlags) spec(cmd *cobra.Command, target string, exps []plan.Experiment) (plan.Spec, error) {
	s := plan.Spec{
		Experiments:  exps,
		Target:       target,
		TLS:          f.tls,
		Ciphers:      f.ciphers,
		Groups:       f.groups,
		ClientStacks: f.clientStacks,
		Keys:         f.keys,
		CAFile:       f.ca,
		Insecure:     f.insecure,
		Concurrency:  f.concurrency,
		Duration:     f.duration,
		Count:        f.count,
		Timeout:      f.timeout,
		Trials:       f.trials,
		ResponseSize: f.size,
		Lab:          f.lab,
		Auth:         f.auth,
		RTT:          f.rtt,
		PredictRTT:   f.predictRTT,
		Via:          f.via,
		RTTVia:       f.rttVia,
		Preset:       f.preset,
		Workload:     f.workload,
		QueryMode:    f.queryMode,
		Tables:       f.tables,
		Rows:         f.rows,
		Source:       f.source,
		PerConn:      f.perConn,
		Clients:      f.clients,
		FirstOp:      f.firstOp,
		Arrivals:     f.arrivals,
		MaxInflight:  f.maxInflight,
		SLO:          f.slo,
		Commands:     f.commands,
		Keyspace:     f.keyspace,
		Filter:       f.filter,
		Collection:   f.collection,
		Method:       f.method,
		Headers:      f.headers,
		Data:         f.data,
		Paths:        f.paths,
		CertFile:     f.cert,
		CertKeyFile:  f.certKey,
		ClientCerts:  f.clientCerts,
		Negotiation:  f.negotiation,
		ClientCPUs:   f.clientCPUs,
	}
	if err := f.refused(cmd); err != nil {
		return s, err
	}
	giveTable(cmd.Flags(), options, s.Give)
	if err := f.shardSpec(&s); err != nil {
		return s, err
	}
	if f.resume != nil {
		s.Resume = []bool{} // given empty: plan.New refuses it
	}
	for _, r := range f.resume {
		switch strings.ToLower(r) {
		case "off", "false", "no":
			s.Resume = append(s.Resume, false)
		case "on", "true", "yes":
			s.Resume = append(s.Resume, true)
		default:
			return s, usageError{fmt.Errorf("--resume: %q is not off or on: use --resume off,on to compare", r)}
		}
	}
	if f.rate != "" {
		rates, knee, err := plan.ParseRates(f.rate)
		if err != nil {
			return s, err
		}
		s.Rates, s.Knee = rates, knee
	}
	if s.Given("warmup") {
		s.Warmup = &f.warmup // 0 is no warm-up, not the default
	}
	if f.maxErrorRate != "" {
		rate, err := plan.ParseRate(f.maxErrorRate)
		if err != nil {
			return s, usageError{fmt.Errorf("--max-error-rate: %w", err)}
		}
		s.MaxErrorRate = &rate
	}
	for _, arg := range f.scripts {
		sc, err := plan.ParseScriptArg(arg)
		if err != nil {
			return s, usageError{fmt.Errorf("--script: %w", err)}
		}
		s.Scripts = append(s.Scripts, sc)
	}
	if s.Preset == "" && f.cmd == onRoot {
		s.Preset = plan.PresetDefault
	}
	return s, nil
}
