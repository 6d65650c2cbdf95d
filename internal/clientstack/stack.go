// Package clientstack runs a study's operations through a client stack
// other than Go's (--client): a program in the stack's own language
// (clients/, spoken to in clients/PROTOCOL.md's lines) or a C tool driven
// directly, with the process's CPU metered and its life bounded.
package clientstack

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Stack is one client stack: a driver and the TLS library under it, as an
// application runs them.
type Stack struct {
	// Name is the stack's own name, as PROTOCOL.md's stack= spells it.
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

// Go is the name of Go's own stack, tlsbench's drivers: not run here.
const Go = "go"

var stacks = []Stack{
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
}

// aliases are the names people use for a stack whatever the engine: the
// language's usual driver, or the API (jdbc).
var aliases = map[string]map[string]string{
	"python": {"postgres": "psycopg", "mysql": "pymysql", "redis": "redis-py", "mongodb": "pymongo", "http": "urllib3"},
	"node":   {"postgres": "node-postgres", "mysql": "mysql2", "redis": "ioredis", "mongodb": "node-mongodb", "http": "node-https"},
	"java":   {"postgres": "pgjdbc", "mysql": "connector-j", "redis": "jedis", "mongodb": "mongodb-java", "http": "java-httpclient"},
	"jdbc":   {"postgres": "pgjdbc", "mysql": "connector-j"},
}

// Register adds a stack (the C tools register themselves).
func Register(s Stack) { stacks = append(stacks, s) }

// Lookup finds the stack name (or an alias: python, node, java, jdbc)
// stands for on engine.
func Lookup(engine, name string) (Stack, error) {
	if engine == "builtin" {
		engine = "http"
	}
	if a, ok := aliases[name]; ok {
		if n, ok := a[engine]; ok {
			name = n
		}
	}
	var servesOther []string
	for _, s := range stacks {
		if s.Name != name {
			continue
		}
		if s.Engine == engine {
			return s, nil
		}
		servesOther = append(servesOther, s.Engine)
	}
	if len(servesOther) > 0 {
		return Stack{}, fmt.Errorf("client %s speaks %s, not %s: use %s", name, strings.Join(servesOther, ", "), engine, strings.Join(Names(engine), ", "))
	}
	return Stack{}, fmt.Errorf("unknown client %q for %s: use %s", name, engine, strings.Join(Names(engine), ", "))
}

// Names lists the clients of engine, Go's first.
func Names(engine string) []string {
	if engine == "builtin" {
		engine = "http"
	}
	names := []string{Go}
	for _, s := range stacks {
		if s.Engine == engine {
			names = append(names, s.Name)
		}
	}
	return names
}

// Stacks lists every stack, in the order Names gives them.
func Stacks() []Stack { return slices.Clone(stacks) }

// Dir is where the stacks' libraries are installed: $TLSBENCH_CLIENTS,
// or tlsbench/clients in the user's cache directory.
func Dir() string {
	if d := os.Getenv("TLSBENCH_CLIENTS"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "tlsbench", "clients")
	}
	return filepath.Join(os.TempDir(), "tlsbench-clients")
}

// InstallCommand is what installs every stack's libraries.
const InstallCommand = "bash scripts/install-clients.sh"

// NotInstalled is a stack whose libraries (or runtime) are not on the
// machine.
type NotInstalled struct {
	Stack   string
	Missing string // the file or command not found
}

func (e *NotInstalled) Error() string {
	return fmt.Sprintf("client %s is not installed (no %s): run %s", e.Stack, e.Missing, InstallCommand)
}

// Refused is a stack that cannot do what its variant asks (a TLS version
// it cannot pin, a group it cannot choose), in the program's own words.
type Refused struct {
	Stack, Why string
}

func (e *Refused) Error() string { return "client " + e.Stack + " cannot run this variant: " + e.Why }
