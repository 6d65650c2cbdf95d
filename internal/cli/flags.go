package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tlsbench/tlsbench/internal/plan"
)

// runFlags are the flags of every command that measures.
type runFlags struct {
	tls, ciphers, resume, keys []string
	groups                     []string
	ca                         string
	insecure                   bool
	concurrency                []int
	duration, warmup, timeout  time.Duration
	count                      int64
	trials, size               int
	output                     string
	lab                        string
	auth                       []string
	rtt, predictRTT            []time.Duration
	via                        []string
	workload, queryMode        string
	tables, rows               int
	preset                     string
	maxErrorRate               string
	source                     string
	scripts                    []string // --script FILE[@WEIGHT], repeatable
	matrix                     bool     // the root command: plan.PresetDefault
	// perConn: connect --per-conn (plan/perconn.go).
	perConn []int
	// storm: the storm command's own flags (storm.go).
	clients []int
	firstOp bool
	storm   bool
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
}

// Flags left out stay zero and plan.New fills their defaults (the root
// command asks for plan.PresetDefault); the flags only show the defaults in
// --help, taken from plan.

// register adds the flags to cmd; matrix is true for the root command,
// whose defaults are plan.DefaultMatrix's.
func (f *runFlags) register(cmd *cobra.Command, matrix bool) {
	fs := cmd.Flags()
	tlsUsage := "TLS modes to compare: off, 1.2, 1.3, auto"
	if !matrix {
		tlsUsage += " (default: off,1.2,1.3 for builtin, auto for https://, off for http://)"
	}
	fs.StringSliceVar(&f.tls, "tls", nil, tlsUsage)
	fs.StringSliceVar(&f.groups, "group", nil, "key-exchange groups to compare, one offered per variant: x25519, x25519mlkem768 (the post-quantum hybrid, TLS 1.3), p256, p384, p521, default (the TLS library's offer, which is what is offered without --group)")
	fs.StringSliceVar(&f.ciphers, "cipher", nil, "TLS 1.2 cipher suites (IANA names, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)")
	fs.StringSliceVar(&f.resume, "resume", nil, "client session resumption: off, on, or off,on to compare")
	keyUsage := "server key types (servers tlsbench starts: builtin, --lab): " + strings.Join(plan.KeyTypes, ", ")
	if !matrix {
		keyUsage += " (default rsa2048)" // plan.New's, which depends on the target
	}
	fs.StringSliceVar(&f.keys, "key", nil, keyUsage)
	fs.StringVar(&f.ca, "ca", "", "PEM file of the CA that signed the server's certificate (default: system roots)")
	fs.BoolVar(&f.insecure, "insecure", false, "do not verify the server's certificate")
	fs.IntSliceVarP(&f.concurrency, "concurrency", "c", nil, "workers (connect) or connections (pool); a list sweeps, e.g. 1,2,4,8,16,32")
	fs.DurationVarP(&f.duration, "duration", "d", 0, "length of each trial")
	fs.Int64VarP(&f.count, "count", "n", 0, "operations per trial (then -d only bounds it; default bound 10m)")
	fs.DurationVar(&f.warmup, "warmup", 0, "unrecorded warm-up before each pool trial")
	fs.DurationVar(&f.timeout, "timeout", 0, "bound on every single operation")
	fs.IntVar(&f.trials, "trials", 0, "timed repetitions of every variant, interleaved")
	fs.IntVar(&f.size, "size", 0, "response body size of the built-in server, bytes")
	fs.StringVarP(&f.output, "output", "o", "", "result file (default tlsbench-YYYYMMDD-HHMMSS.json)")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "no progress on stderr (warnings and errors still show); off a terminal progress is a line per phase")
	fs.StringVar(&f.lab, "lab", "", "start a throw-away server and measure it: postgres, mariadb, redis or mongodb (instead of a TARGET); postgres:18 is PostgreSQL 18, postgres:15,postgres:18 compares both")
	fs.StringSliceVar(&f.auth, "auth", nil, "lab only: auth methods to compare (postgres: scram-sha-256, md5, trust; mariadb: mysql_native_password, ed25519)")
	fs.DurationSliceVar(&f.rtt, "rtt", nil, "round-trip times to emulate, crossed with the other variants, e.g. 0,1ms,44ms,170ms (0 to 10s; in tlsbench's dialer, in user space: connect +1 RTT, each direction +RTT/2)")
	fs.DurationSliceVar(&f.predictRTT, "predict-rtt", nil, "round-trip times at which the report predicts connection setup and TLS overhead from the loopback run (round trips × RTT + local time), e.g. 44ms,170ms; checked against --rtt where both are given")
	fs.StringSliceVar(&f.via, "via", nil, "how connections reach the server, a list to compare: direct, ssh (a throw-away sshd), ssh:CIPHER, ssh://user@host:port?cipher=C&identity=FILE&known_hosts=FILE, stunnel (lab: a throw-away stunnel pair), haproxy (lab: TLS terminated at HAProxy), openssh[:CIPHER] (lab: OpenSSH's ssh -L), wireguard (lab: a VPN in a network namespace), pgbouncer[:local][?pool_mode=...&server_tls_sslmode=...&default_pool_size=N] (lab postgres); tunnels carry plain connections (default direct)")
	fs.StringVar(&f.workload, "workload", "", "databases: point-select (default), read-only (the sysbench oltp_read_only transaction), stream; redis: get, stream; mongodb: find-one-id (default), find-one, stream")
	fs.StringVar(&f.queryMode, "query-mode", "", "databases: prepared (default) or simple (text protocol)")
	fs.IntVar(&f.tables, "tables", 0, "databases: sbtest tables the workload reads (default 8)")
	fs.IntVar(&f.rows, "rows", 0, "databases: rows per table (default 100000); mongodb: documents in ycsb.usertable")
	fs.StringVar(&f.preset, "preset", "", "replay a seed study as it was done: mongodb-seed (new client + first find_one, reused client's find_one; with and without TLS; -n iterations per trial, default 1000 in 5 trials)")
	fs.StringVar(&f.maxErrorRate, "max-error-rate", "", "share of failed operations above which a trial fails the run (exit 1, after the trials are saved), e.g. 5%, 0.5%, 0 (any error), 100% (never)")
	fs.StringArrayVar(&f.scripts, "script", nil, "databases: a pgbench custom script, FILE[@WEIGHT], repeatable (as pgbench -f): each operation is one pass through a script picked by weight (\\set, \\sleep, :var, statements ending at ';'); --query-mode as pgbench -M")
	fs.StringVar(&f.source, "source", "", "client source address: auto (spread over 127.0.1.1-64 for servers tlsbench starts, the kernel's choice for a URL), spread (also for a URL's loopback server: long connect runs do not exhaust ports), or one IP address")
	fs.IntSliceVar(&f.perConn, "per-conn", nil, "connect: operations each new connection runs before it closes, a list sweeps, e.g. 1,3,10,100 (HTTP keeps it alive until the last request); the report gives the break-even against plain")
	fs.StringVar(&f.rate, "rate", "", "connect, pool: arrivals per second instead of a closed loop (new connections/s for connect), a list compares, e.g. 100,300; auto or FROM..TO (e.g. 50..5000) searches each variant's highest rate within --slo; latency counts from each arrival's intended start")
	fs.StringVar(&f.arrivals, "arrivals", "", "with --rate: poisson (exponential gaps, as pgbench --rate) or uniform (constant gaps)")
	fs.IntVar(&f.maxInflight, "max-inflight", 0, "with --rate: most arrivals in flight (connect: connections opening at once; pool: requests queued for the -c connections); an arrival beyond it is dropped and counted")
	fs.DurationVar(&f.slo, "slo", 0, "with --rate auto or FROM..TO: the p99 latency (from the intended start) a rate must keep under")
	fs.StringArrayVar(&f.commands, "command", nil, "redis: your command instead of --workload, as redis-benchmark takes it (redis-cli quoting; __rand_int__ is a random 12-digit number below --keyspace); repeat it for several commands per operation, sent as one pipeline")
	fs.Int64Var(&f.keyspace, "keyspace", 0, "the range of __rand_int__ in --command or --filter: numbers 0 to N-1 (redis-benchmark's -r)")
	fs.StringVar(&f.filter, "filter", "", "mongodb: a find filter in extended JSON instead of --workload, e.g. '{\"_id\": \"user__rand_int__\"}'; each operation reads its first batch")
	fs.StringVar(&f.collection, "collection", "", "mongodb: where --filter looks: DB.COLLECTION, or COLLECTION of the URL's database (mongodb://HOST/DB)")
	fs.StringVarP(&f.method, "request", "X", "", "http: the request method, as curl's -X (default GET, POST with --data)")
	fs.StringArrayVarP(&f.headers, "header", "H", nil, "http: a request header 'Name: value', as curl's -H; repeatable (credentials are not stored)")
	fs.StringVar(&f.data, "data", "", "http: the request body, or @FILE (sent as it is; stored as its size and sha256 only)")
	fs.StringVar(&f.paths, "paths", "", "http: a file of request paths, one a line ('#' comments); each request takes one at random")
	fs.StringVar(&f.cert, "cert", "", "client certificate (PEM) every TLS variant presents when the server asks, as curl and redis-cli spell it (URL targets; or the URL's sslcert=, ssl-cert=, tlsCertificateKeyFile=)")
	fs.StringVar(&f.certKey, "cert-key", "", "the client certificate's private key (PEM, not encrypted; default: the --cert file)")
	fs.StringSliceVar(&f.negotiation, "negotiation", nil, "postgres: how TLS starts, a list to compare: postgres (an SSLRequest first) and direct (TLS from the first byte, PostgreSQL 17+), as libpq's sslnegotiation")
	fs.StringSliceVar(&f.clientCerts, "client-cert", nil, "lab and builtin: client certificates to compare, e.g. off,rsa2048,ecdsa-p256: the server demands one signed by the lab CA in those variants")
	registerProfile(fs, &f.cpuProfile)
	f.registerShard(cmd)
	fs.StringVar(&f.clientCPUs, "client-cpus", "", "CPUs tlsbench runs on, in taskset's list syntax (e.g. 0 or 0-1,3); the servers it starts run on the others, so that client and server do not share CPUs")
	// What --help shows as defaults: plan's (pflag would print "[]" for
	// an empty list of durations).
	shown := map[string]string{
		"resume": "[off]", "concurrency": "[1]", "duration": plan.DefaultDuration.String(), "warmup": plan.DefaultWarmup.String(),
		"timeout": plan.DefaultTimeout.String(), "trials": strconv.Itoa(plan.DefaultTrials), "size": strconv.Itoa(plan.DefaultSize),
		"max-error-rate": plan.FormatRate(plan.DefaultMaxErrorRate), "rtt": "0", "predict-rtt": "", "source": plan.SourceAuto,
		"per-conn": "[1]", "arrivals": plan.ArrivalsPoisson, "max-inflight": strconv.Itoa(plan.DefaultMaxInflight),
		"slo": plan.DefaultSLO.String(),
	}
	if matrix {
		m := plan.DefaultMatrix
		shown["tls"], shown["key"] = "["+strings.Join(m.TLS, ",")+"]", "["+strings.Join(m.Keys, ",")+"]"
		shown["concurrency"] = strings.ReplaceAll(fmt.Sprint(m.Concurrency), " ", ",")
		shown["duration"], shown["warmup"] = m.Duration.String(), m.Warmup.String()
	}
	for name, v := range shown {
		fs.Lookup(name).DefValue = v
	}
	f.matrix = matrix
}

// spec turns the flags into a raw plan.Spec for plan.New.
func (f *runFlags) spec(cmd *cobra.Command, target string, exps []plan.Experiment) (plan.Spec, error) {
	s := plan.Spec{
		Experiments:  exps,
		Target:       target,
		TLS:          f.tls,
		Ciphers:      f.ciphers,
		Groups:       f.groups,
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
	if fl := cmd.Flags().Lookup("client-cpus"); fl.Changed && strings.TrimSpace(f.clientCPUs) == "" {
		return s, usageError{fmt.Errorf("--client-cpus: the CPU list is empty (an unset variable?): give CPUs as taskset does, e.g. --client-cpus 0")}
	}
	if err := f.checkStorm(cmd); err != nil {
		return s, err
	}
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
	for _, name := range []string{"trials", "timeout", "max-inflight", "slo"} {
		if fl := cmd.Flags().Lookup(name); fl.Changed && (fl.Value.String() == "0" || fl.Value.String() == "0s") {
			return s, usageError{fmt.Errorf("--%s: 0 is out of range: give a positive value or leave --%s out for the default (%s)", name, name, fl.DefValue)}
		}
	}
	if cmd.Flags().Changed("warmup") {
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
	if s.Preset == "" && f.matrix {
		s.Preset = plan.PresetDefault
	}
	if s.Duration == 0 && f.count == 0 && cmd.Flags().Changed("duration") {
		return s, usageError{fmt.Errorf("-d/--duration: 0 is no trial: give a positive duration or -n COUNT")}
	}
	return s, nil
}
