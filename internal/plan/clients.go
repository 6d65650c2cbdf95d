package plan

import (
	"fmt"
	"slices"
	"strings"
)

// The client-stack dimension (--client; issue 28): the stacks other than
// Go's that can make a run's connections, their aliases, and what a run
// through one of them cannot do yet. The table is here, not in
// internal/clientstack (which runs them), so that New validates --client
// in the one constructor; clientstack reads it.

// GoClient is the name of Go's own stack, tlsbench's drivers: a variant's
// Client is "" for it.
const GoClient = "go"

// ClientStack is one client stack: a driver and the TLS library under it,
// as an application runs them.
type ClientStack struct {
	// Name is the stack's own name, as clients/PROTOCOL.md's stack=
	// spells it and Variant.Client records it.
	Name string
	// Engine is the engine it serves: postgres, mysql, redis, mongodb,
	// http (https too).
	Engine string
	// Lang is python, node or java for a program of clients/, native for
	// a C tool (pgbench, redis-benchmark, curl, openssl).
	Lang string
	// Library says in words what it is, for help and reports.
	Library string
}

var clientStacks = []ClientStack{
	{"psycopg", "postgres", "python", "psycopg 3 with its bundled libpq and OpenSSL"},
	{"pgjdbc", "postgres", "java", "the PostgreSQL JDBC driver over JSSE, pooled by HikariCP"},
	{"node-postgres", "postgres", "node", "node-postgres (pg) over Node's OpenSSL"},
	{"mysqlclient", "mysql", "python", "mysqlclient (MySQLdb) over Debian's libmariadb and OpenSSL"},
	{"pymysql", "mysql", "python", "PyMySQL over Python's ssl module"},
	{"connector-j", "mysql", "java", "MySQL Connector/J over JSSE, pooled by HikariCP"},
	{"mysql2", "mysql", "node", "mysql2 over Node's OpenSSL"},
	{"redis-py", "redis", "python", "redis-py over Python's ssl module"},
	{"jedis", "redis", "java", "Jedis over JSSE"},
	{"ioredis", "redis", "node", "ioredis over Node's OpenSSL"},
	{"pymongo", "mongodb", "python", "PyMongo over Python's ssl module"},
	{"mongodb-java", "mongodb", "java", "the MongoDB Java sync driver over JSSE"},
	{"node-mongodb", "mongodb", "node", "the MongoDB Node.js driver over Node's OpenSSL"},
	{"urllib3", "http", "python", "urllib3 over Python's ssl module"},
	{"java-httpclient", "http", "java", "java.net.http.HttpClient over JSSE"},
	{"node-https", "http", "node", "Node's https module over its OpenSSL"},
	// The C stacks: Debian's tools, driven by internal/clientstack itself.
	{"libpq", "postgres", "native", "Debian's libpq and OpenSSL 3, through pgbench (threads: -j = -c; a pool's latencies: a 1-in-10 sample of its transactions, its count all of them)"},
	{"hiredis", "redis", "native", "hiredis and OpenSSL 3, through redis-benchmark (one event loop)"},
	{"openssl", "http", "native", "openssl s_time (OpenSSL 3): connect only, one process a concurrent connection"},
	{"libmariadb", "mysql", "native", "Debian's libmariadb and OpenSSL 3, through sysbench's oltp_point_select (threads), pool only"},
	{"curl", "http", "native", "libcurl and OpenSSL 3, through one curl process a run (--parallel: one event loop)"},
}

// chainOnly are the stacks that check a server's certificate chain but
// never its name (s_time sends none; hiredis and sysbench's libmariadb
// do not compare it).
var chainOnly = map[string]bool{"openssl": true, "hiredis": true, "libmariadb": true}

// ClientTimed says the stack runs for whole seconds and cannot stop after
// a count of operations (openssl s_time's -time).
func ClientTimed(name string) bool { return name == "openssl" }

// ChainOnly says s verifies the server's chain, never its name: against
// a URL target it cannot verify as the URL asks (full), and it is
// refused; against a server tlsbench started, whose certificate names
// the address it is reached at, it verifies the chain (see bench).
func (s ClientStack) ChainOnly() bool { return chainOnly[s.Name] }

// clientAliases are the names people use for a stack whatever the engine:
// the language's usual driver, or the API (jdbc).
var clientAliases = map[string]map[string]string{
	"python": {"postgres": "psycopg", "mysql": "pymysql", "redis": "redis-py", "mongodb": "pymongo", "http": "urllib3"},
	"node":   {"postgres": "node-postgres", "mysql": "mysql2", "redis": "ioredis", "mongodb": "node-mongodb", "http": "node-https"},
	"java":   {"postgres": "pgjdbc", "mysql": "connector-j", "redis": "jedis", "mongodb": "mongodb-java", "http": "java-httpclient"},
	"jdbc":   {"postgres": "pgjdbc", "mysql": "connector-j"},
}

// stackEngine is the engine a target's driver registry key (Target.Engine)
// is for the stacks: the built-in server speaks HTTP.
func stackEngine(engine string) string {
	if engine == Builtin {
		return "http"
	}
	return engine
}

// LookupClient finds the stack name (or an alias: python, node, java,
// jdbc) stands for on engine (a driver registry key). Go's is not one of
// them: its variants have no Client.
func LookupClient(engine, name string) (ClientStack, error) {
	engine = stackEngine(engine)
	if a, ok := clientAliases[name]; ok {
		if n, ok := a[engine]; ok {
			name = n
		}
	}
	var servesOther []string
	for _, s := range clientStacks {
		if s.Name != name {
			continue
		}
		if s.Engine == engine {
			return s, nil
		}
		servesOther = append(servesOther, s.Engine)
	}
	if len(servesOther) > 0 {
		return ClientStack{}, fmt.Errorf("client %s speaks %s, not %s: use %s", name, strings.Join(servesOther, ", "), engine, strings.Join(ClientNames(engine), ", "))
	}
	return ClientStack{}, fmt.Errorf("unknown client %q for %s: use %s", name, engine, strings.Join(ClientNames(engine), ", "))
}

// ClientNames lists the clients of engine, Go's first.
func ClientNames(engine string) []string {
	engine = stackEngine(engine)
	names := []string{GoClient}
	for _, s := range clientStacks {
		if s.Engine == engine {
			names = append(names, s.Name)
		}
	}
	return names
}

// AllClientStacks lists every stack but Go's, in the order ClientNames
// gives them.
func AllClientStacks() []ClientStack { return slices.Clone(clientStacks) }

// clients lists each variant's Client: "" for Go's.
func (s Spec) clients() []string {
	if len(s.ClientStacks) == 0 {
		return []string{""}
	}
	out := make([]string, len(s.ClientStacks))
	for i, c := range s.ClientStacks {
		if c != GoClient {
			out[i] = c
		}
	}
	return out
}

// OtherClients reports whether a stack other than Go's makes some of the
// run's connections: variant IDs then name the client.
func (s Spec) OtherClients() bool {
	return slices.ContainsFunc(s.ClientStacks, func(c string) bool { return c != GoClient })
}

// ClientWorkloads maps a run's workload (Workloads) to the one a client
// stack runs (clients/PROTOCOL.md's workload=), by engine; a workload not
// here is Go's alone for now.
var ClientWorkloads = map[string]map[string]string{
	"postgres": {"point-select": "point-select", WorkloadPing: "ping"},
	"mysql":    {"point-select": "point-select", WorkloadPing: "ping"},
	"redis":    {"get": "get", WorkloadPing: "ping"},
	"mongodb":  {"find-one-id": "find-one-id", "find-one": "find-one", WorkloadPing: "ping"},
	"http":     {"get": "request"},
}

// ClientWorkload is the workload a client stack runs for the spec's.
func (s Spec) ClientWorkload() string {
	return ClientWorkloads[stackEngine(s.target.Engine())][s.Workload]
}

// clientStacksSection resolves ⟨client_stacks⟩ to the stacks' own names
// and refuses a client the target's engine has not, one given twice, and
// what a stack other than Go's cannot do yet.
func (s *Spec) clientStacksSection() error {
	if len(s.ClientStacks) == 0 {
		return nil
	}
	engine := s.target.Engine()
	resolved := make([]string, len(s.ClientStacks))
	for i, name := range s.ClientStacks {
		name = strings.ToLower(strings.TrimSpace(name))
		if name != GoClient {
			st, err := LookupClient(engine, name)
			if err != nil {
				return errorf("%s", err)
			}
			name = st.Name
		}
		if slices.Contains(resolved[:i], name) {
			return errTwice("⟨client_stacks⟩", name)
		}
		resolved[i] = name
	}
	s.ClientStacks = resolved
	for _, name := range resolved {
		if name == GoClient {
			continue
		}
		if s.OpenLoop() {
			return errorf("not yet with ⟨client_stacks⟩ %s: ⟨rates⟩ (closed loops only): %s", name, paceWhy(name))
		}
		if why := s.notYet(); why != "" {
			return errorf("not yet with ⟨client_stacks⟩ %s: %s", name, why)
		}
		if o, ok := oneExperiment[name]; ok {
			for _, e := range s.Experiments {
				if (e == Connect || e == Pool) && e != o.runs {
					return errorf("client %s runs %s only: %s", name, o.runs, o.why)
				}
			}
		}
		if s.Preset == PresetMongoDBSeed && !slices.Contains(SeedLoopStacks, name) {
			return errorf("not yet with ⟨client_stacks⟩ %s: ⟨preset⟩ %s (its new-client and reused-client loops run through %s and %s only)",
				name, s.Preset, GoClient, strings.Join(SeedLoopStacks, ", "))
		}
	}
	return nil
}

// oneExperiment are the stacks that run one of connect and pool: the
// one, why, and which stack runs the other over the same library.
var oneExperiment = map[string]struct {
	runs Experiment
	why  string
}{
	"libmariadb": {Pool, "sysbench 1.0.20 keeps a connection a thread and has no reconnect option; " +
		"libmariadb's connect loop is ⟨client_stacks⟩ mysqlclient (MySQLdb over the same Debian libmariadb and OpenSSL)"},
	"openssl": {Connect, "openssl s_time opens a connection per handshake (-new) or resumes one (-reuse), and runs no workload on a pool; " +
		"OpenSSL's pool is ⟨client_stacks⟩ curl (libcurl over the same OpenSSL 3)"},
}

// paceWhy says why stack name runs no open loop (⟨rates⟩): the C tools
// that pace themselves wait for tlsbench to drive their schedules and
// read each arrival's lateness; the others cannot pace, nor can the
// programs' protocol ask them to.
func paceWhy(name string) string {
	switch name {
	case "libpq":
		return "pgbench paces itself (--rate), but tlsbench does not drive its schedule or read its lateness yet"
	case "libmariadb":
		return "sysbench paces itself (--rate), but tlsbench does not drive its schedule or read its lateness yet"
	case "hiredis":
		return "redis-benchmark cannot pace: each connection sends its next request as the last one's answer comes"
	case "curl":
		return "curl cannot pace: it starts a transfer whenever one of its --parallel slots is free"
	case "openssl":
		return "openssl s_time cannot pace: it loops handshakes back to back for its time"
	}
	return "the programs' protocol (clients/PROTOCOL.md) runs closed loops of workers, with no schedule of arrivals"
}

// ClientOnly is the experiment a stack runs alone of connect and pool
// (its check's), "" for a stack that runs both.
func ClientOnly(name string) Experiment { return oneExperiment[name].runs }

// SeedLoopStacks are the stacks other than Go's that run the MongoDB
// seed's loops (new-client, reused-client): the seed's own pymongo.
var SeedLoopStacks = []string{"pymongo"}

// notYet says what of the spec a client stack other than Go's cannot run
// yet, "" if nothing.
func (s *Spec) notYet() string {
	for _, e := range s.Experiments {
		if e != Connect && e != Pool && e != NewClient && e != ReusedClient {
			return fmt.Sprintf("the %s experiment (connect and pool only)", e)
		}
	}
	switch {
	case s.Preset != "" && s.Preset != PresetMongoDBSeed:
		return "⟨preset⟩ " + s.Preset + " (Go's drivers only)"
	case slices.ContainsFunc(s.Routes(), func(r Route) bool { return r.Kind != RouteDirect }):
		return "⟨via⟩ tunnels and poolers (direct connections only)"
	case len(s.Scripts) > 0:
		return "⟨scripts⟩ (the named workloads only)"
	case slices.ContainsFunc(s.PerConn, func(n int) bool { return n > 1 }):
		return "⟨per_conn⟩ above 1 (a stack reports each connection's time, not each operation's)"
	case len(s.Ciphers) > 0:
		return "⟨ciphers⟩ (the stack's own TLS 1.2 suites only)"
	case slices.Contains(s.Negotiation, NegotiationDirect):
		return "⟨negotiation⟩ direct (an SSLRequest first only)"
	case s.Source != SourceAuto && s.Source != "":
		return "⟨source⟩ " + s.Source + " (the stack picks its own source address)"
	}
	switch s.Workload {
	case WorkloadCommand, WorkloadFilter, WorkloadRequest:
		return "your own workload (⟨commands⟩, ⟨filter⟩, ⟨method⟩, ⟨headers⟩, ⟨data⟩, ⟨paths⟩: the named workloads only)"
	}
	if s.ClientWorkload() == "" {
		var ws []string
		for w := range ClientWorkloads[stackEngine(s.target.Engine())] {
			ws = append(ws, w)
		}
		slices.Sort(ws)
		return fmt.Sprintf("⟨workload⟩ %s (%s only)", s.Workload, strings.Join(ws, ", "))
	}
	return ""
}
