package clientstack

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"flag"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/server"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// labServer is a real server that the language stacks' tests share, per
// engine: started on first use, stopped by TestMain, with what the server
// itself counted.
type labServer struct {
	engine string    // the stacks' engine: postgres, mysql, redis, mongodb, http
	urls   [2]string // plain and TLS: address, login and database (lab URLs hold the password)
	ca     string    // the CA file that signed its certificates
	// read is the count so far: connections that logged in (HTTP: that
	// sent a request), and of them those over TLS (-1 where the server
	// does not say).
	read func() (conns, tls int64, err error)
	// stat is a counter the server keeps by name (MariaDB: SHOW GLOBAL
	// STATUS's, Com_select); nil where the tests read none.
	stat func(name string) (int64, error)
	stop []func()
}

var (
	labsMu sync.Mutex
	labs   = map[string]*labServer{}
	// labErrs are the starts that failed: a test asking again gets the
	// same error, without a second try.
	labErrs = map[string]error{}
)

// labStarts start each engine's server, counted.
var labStarts = map[string]func(l *labServer) error{
	"postgres": startPostgres, "mysql": startMariaDB, "redis": startRedis, "mongodb": startMongoDB, "http": startHTTP,
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	for _, l := range labs {
		for i := len(l.stop) - 1; i >= 0; i-- {
			l.stop[i]()
		}
	}
	os.Exit(code)
}

// sharedLab is the package's counted server of engine, started on first
// use; it skips or fails t as labtest.Check says (skips under -short).
func sharedLab(t *testing.T, engine string) *labServer {
	t.Helper()
	labsMu.Lock()
	defer labsMu.Unlock()
	if l := labs[engine]; l != nil {
		return l
	}
	err, tried := labErrs[engine]
	if !tried {
		if err = labtest.Short(); err == nil {
			l := &labServer{engine: engine}
			labs[engine] = l // stopped by TestMain, started or not
			if err = labStarts[engine](l); err == nil {
				// What came before (the counting client's own login).
				_, _, err = l.settle(0)
			}
			if err != nil {
				delete(labs, engine)
				for i := len(l.stop) - 1; i >= 0; i-- {
					l.stop[i]()
				}
			}
		}
		labErrs[engine] = err
	}
	labtest.Check(t, err)
	return labs[engine]
}

// config is the Config of stack name that reaches l, plain (tls "off") or
// over TLS (a version); see stackConfig.
func (l *labServer) config(t *testing.T, name, tls string) Config {
	t.Helper()
	return stackConfig(t, l.engine, name, l.urls[map[bool]int{false: 0, true: 1}[tls != "off"]], l.ca, tls)
}

// labURL is lab server s's URL for the user of auth method auth ("": the
// default), plain or over TLS.
func labURL(t *testing.T, s lab.Server, auth string, tls bool) string {
	t.Helper()
	raw, err := s.URL(auth, tls)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// stackConfig is the Config of stack name of engine that reaches the
// server at raw (a lab URL: address, login, database or MongoDB's
// authSource) with TLS tls ("off", or a version) verified fully against
// the CA in file ca by the host's own name; workload ping (request over
// HTTP) of one table and 10 rows, path /, a 20 s timeout (a loaded
// machine). The query mode is the stack's default, but simple on MySQL:
// PyMySQL and mysqlclient have no server-side prepared statements.
func stackConfig(t *testing.T, engine, name, raw, ca, tls string) Config {
	t.Helper()
	st, err := Lookup(engine, name)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal("the lab URL does not parse")
	}
	port, _ := strconv.Atoi(u.Port())
	pw, _ := u.User.Password()
	db := strings.TrimPrefix(u.Path, "/")
	if a := u.Query().Get("authSource"); a != "" {
		db = a
	}
	workload, mode := "ping", ""
	switch engine {
	case "http":
		workload = "request"
	case "mysql":
		mode = "simple"
	}
	return Config{Stack: st, Host: u.Hostname(), Port: port, User: u.User.Username(), Password: pw, Database: db,
		TLS: tls, CA: ca, Verify: "full", ServerName: u.Hostname(), Workload: workload, Tables: 1, Rows: 10, QueryMode: mode, Path: "/",
		Timeout: 20 * time.Second}
}

// settle reads l's count until its connections reach want and two reads
// 300 ms apart agree, for at most 30 s: a server counts a closed session a
// moment after the close (PostgreSQL as the backend exits), seconds after
// on a loaded machine.
func (l *labServer) settle(want int64) (conns, tls int64, err error) {
	conns, tls, err = l.read()
	for end := time.Now().Add(30 * time.Second); err == nil && time.Now().Before(end); {
		time.Sleep(300 * time.Millisecond)
		var n, s int64
		n, s, err = l.read()
		if n == conns && n >= want {
			break
		}
		conns, tls = n, s
	}
	return conns, tls, err
}

// count is settle failing t on an error.
func (l *labServer) count(t *testing.T, want int64) (conns, tls int64) {
	t.Helper()
	conns, tls, err := l.settle(want)
	if err != nil {
		t.Fatalf("reading the %s server's count: %v", l.engine, err)
	}
	return conns, tls
}

// counter is l's stat of name, failing t on an error.
func (l *labServer) counter(t *testing.T, name string) int64 {
	t.Helper()
	n, err := l.stat(name)
	if err != nil {
		t.Fatalf("reading the %s server's %s: %v", l.engine, name, err)
	}
	return n
}

// startLab starts l's lab server of engine, with client certificates of
// the key types clientCerts.
func startLab(l *labServer, engine string, clientCerts ...string) (lab.Server, error) {
	s, err := lab.Start(context.Background(), engine, lab.Options{Keys: []string{"ecdsa-p256"}, ClientCerts: clientCerts})
	if err != nil {
		return nil, err
	}
	l.stop = append(l.stop, func() { s.Stop() })
	for i, tls := range []bool{false, true} {
		if l.urls[i], err = s.URL("", tls); err != nil {
			return nil, err
		}
	}
	l.ca = s.CAFile()
	return s, nil
}

// startPostgres counts the bench database's sessions in pg_stat_database,
// read from another database so that reading adds none.
func startPostgres(l *labServer) error {
	if _, err := startLab(l, "postgres"); err != nil {
		return err
	}
	u, _ := url.Parse(l.urls[0])
	db := strings.TrimPrefix(u.Path, "/")
	u.Path, u.RawQuery = "/postgres", "sslmode=disable"
	ctx := context.Background()
	c, err := pgx.Connect(ctx, u.String())
	if err != nil {
		return err
	}
	l.stop = append(l.stop, func() { c.Close(context.Background()) })
	l.read = func() (n int64, _ int64, err error) {
		// Backends report their session as they exit; a snapshot would
		// keep the first read's figures.
		if _, err := c.Exec(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
			return 0, -1, err
		}
		err = c.QueryRow(ctx, "SELECT sessions FROM pg_stat_database WHERE datname = $1", db).Scan(&n)
		return n, -1, err
	}
	return nil
}

// startMariaDB counts Connections and Ssl_accepts of SHOW GLOBAL STATUS,
// read on one connection opened before, as its stats are (a SHOW STATUS
// is no statement those count: Com_select, Com_stmt_execute). Its client
// certificate (ecdsa-p256, files in the CA's directory) is sysbench's:
// MariaDB asks every TLS client for one, so the other stacks do not see
// the difference.
func startMariaDB(l *labServer) error {
	if _, err := startLab(l, "mariadb", "ecdsa-p256"); err != nil {
		return err
	}
	u, _ := url.Parse(l.urls[0])
	pw, _ := u.User.Password()
	db, err := sql.Open("mysql", u.User.Username()+":"+pw+"@tcp("+u.Host+")/?tls=false")
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	l.stop = append(l.stop, func() { db.Close() })
	l.stat = func(name string) (v int64, err error) {
		var k string
		err = db.QueryRow("SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&k, &v)
		return v, err
	}
	l.read = func() (int64, int64, error) {
		conns, err := l.stat("Connections")
		if err != nil {
			return 0, 0, err
		}
		accepts, err := l.stat("Ssl_accepts")
		return conns, accepts, err
	}
	return nil
}

// startRedis counts INFO's total_connections_received (both ports), read
// on one connection opened before, and prepares the keys that the get
// workload reads (key:1 to key:10).
func startRedis(l *labServer) error {
	if _, err := startLab(l, "redis"); err != nil {
		return err
	}
	o, err := redis.ParseURL(l.urls[0])
	if err != nil {
		return err
	}
	o.PoolSize, o.MinIdleConns = 1, 1
	c := redis.NewClient(o)
	l.stop = append(l.stop, func() { c.Close() })
	ctx := context.Background()
	for i := 1; i <= 10; i++ {
		if err := c.Set(ctx, "key:"+strconv.Itoa(i), "v", 0).Err(); err != nil {
			return err
		}
	}
	l.read = func() (int64, int64, error) {
		info, err := c.Info(ctx, "stats").Result()
		if err != nil {
			return 0, -1, err
		}
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "total_connections_received:"); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				return n, -1, err
			}
		}
		return 0, -1, errors.New("INFO stats has no total_connections_received")
	}
	return nil
}

// startMongoDB counts FerretDB's logins: serverStatus counts its commands,
// and each connection that logs in runs saslContinue twice (FerretDB
// answers the first with done:false), whether its saslStart was a command
// or rode in the hello (speculative authentication: the Java driver's,
// which FerretDB counts as "unknown"); a driver's monitoring connections
// do not log in.
func startMongoDB(l *labServer) error {
	if _, err := startLab(l, "mongodb"); err != nil {
		return err
	}
	ctx := context.Background()
	c, err := mongo.Connect(options.Client().ApplyURI(l.urls[0]).SetMaxPoolSize(1))
	if err != nil {
		return err
	}
	l.stop = append(l.stop, func() { c.Disconnect(context.Background()) })
	l.read = func() (int64, int64, error) {
		var st struct {
			Metrics struct {
				Commands map[string]struct {
					Total int64 `bson:"total"`
				} `bson:"commands"`
			} `bson:"metrics"`
		}
		err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Decode(&st)
		return st.Metrics.Commands["saslContinue"].Total / 2, -1, err
	}
	return nil
}

// startHTTP starts the built-in server in this process and counts what
// reached it by its Check hook: the connections that sent requests, and
// of them those over TLS 1.3. A connection is told by its local address
// value, which net/http sets once per accepted connection: the client's
// address is no key, since one ephemeral port serves a connection to the
// plain listener and then one to the TLS one (and loopback reuses ports
// in TIME_WAIT).
func startHTTP(l *labServer) error {
	ca, err := tlsx.NewCA()
	if err != nil {
		return err
	}
	certPEM, keyPEM, err := ca.Issue("ecdsa-p256", []string{"127.0.0.1", "localhost"})
	if err != nil {
		return err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "clientstack-http-")
	if err != nil {
		return err
	}
	l.stop = append(l.stop, func() { os.RemoveAll(dir) })
	l.ca = filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(l.ca, ca.CertPEM, 0o600); err != nil {
		return err
	}
	var mu sync.Mutex
	conns, tls13 := map[net.Addr]bool{}, map[net.Addr]bool{}
	srv, err := server.Start(server.Config{HTTPAddr: "127.0.0.1:0", HTTPSAddr: "127.0.0.1:0",
		Certs: map[string]tls.Certificate{"ecdsa-p256": pair}, ResponseSize: 64,
		Check: func(r *http.Request) int {
			mu.Lock()
			defer mu.Unlock()
			conn := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
			conns[conn] = true
			if r.TLS != nil && r.TLS.Version == tls.VersionTLS13 {
				tls13[conn] = true
			}
			return 200
		}})
	if err != nil {
		return err
	}
	l.stop = append(l.stop, func() { srv.Close() })
	l.urls = [2]string{"http://" + srv.HTTPAddr() + "/", "https://" + srv.HTTPSAddrs()["ecdsa-p256"] + "/"}
	l.read = func() (int64, int64, error) {
		mu.Lock()
		defer mu.Unlock()
		return int64(len(conns)), int64(len(tls13)), nil
	}
	return nil
}

// hellos are what a stack's hello says, by language (the C tools: by
// stack): patterns of its runtime, driver, TLS library and model.
var hellos = map[string][4]string{
	"python":     {`^CPython/`, `/`, `^OpenSSL/`, `^threads$`},
	"java":       {`^OpenJDK/`, `/`, `^JSSE/`, `^threads$`},
	"node":       {`^Node\.js/`, `/`, `^OpenSSL/`, `^event-loop`},
	"libpq":      {`^C$`, `^libpq/15\.`, `^OpenSSL/3\.`, `^threads$`},
	"hiredis":    {``, `^redis-benchmark/7\.`, ``, `^event-loop$`},
	"openssl":    {``, ``, `^OpenSSL/3\.`, `^processes$`},
	"curl":       {``, `^libcurl/`, `^OpenSSL/3\.`, `^event-loop$`},
	"libmariadb": {``, `^libmariadb/3\.`, ``, `^threads$`},
}

// startStack starts cfg's client for t, closed as t ends, and checks its
// hello; a stack not installed fails t in CI and skips it elsewhere.
func startStack(t *testing.T, cfg Config) Client {
	t.Helper()
	c, err := Start(context.Background(), cfg)
	var ni *NotInstalled
	if errors.As(err, &ni) && os.Getenv("CI") == "" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	want, ok := hellos[cfg.Stack.Lang]
	if !ok {
		want = hellos[cfg.Stack.Name]
	}
	h := c.Hello()
	ok = h.Stack == cfg.Stack.Name
	for i, got := range []string{h.Runtime, h.Driver, h.TLS, h.Model} {
		ok = ok && regexp.MustCompile(want[i]).MatchString(got)
	}
	if !ok {
		t.Errorf("hello %+v", h)
	}
	return c
}

// checkOps checks a run's operations: n of them (-1: any number but
// none), none failed, each ending after it starts, on workers 0..c-1 (and
// for the C tools, whose operations come from their logs, in the order
// they ended); or, from a C tool that prints only totals (sysbench), n
// operations without an error and latencies in order; and that the run
// took CPU and time.
func checkOps(t *testing.T, cfg Config, rep Report, n int64, c int) {
	t.Helper()
	if tot := rep.Totals; tot != nil {
		if rep.Ops != nil || tot.Ops != n && (n >= 0 || tot.Ops == 0) || tot.Errors != 0 ||
			!(tot.P50 > 0 && tot.P50 <= tot.P95 && tot.P95 <= tot.P99 && tot.P99 <= tot.Max && tot.Mean > 0) {
			t.Errorf("tls %s: %d operations and totals %+v, want %d operations without an error", cfg.TLS, len(rep.Ops), *tot, n)
		}
	} else if int64(len(rep.Ops)) != n && (n >= 0 || len(rep.Ops) == 0) {
		t.Errorf("tls %s: %d operations, want %d", cfg.TLS, len(rep.Ops), n)
	}
	for i, o := range rep.Ops {
		if o.Failed() || o.End < o.Start || o.Worker < 0 || o.Worker >= c ||
			(cfg.Stack.Lang == "native" && i > 0 && o.End < rep.Ops[i-1].End) {
			t.Fatalf("tls %s: op %d: %+v", cfg.TLS, i, o)
		}
	}
	// A short run after the warm-up may take less than one of /proc's
	// 10 ms ticks: the run as a whole was metered, and a run shorter than
	// a few ticks (15 reused-client finds: 6.5 ms) may show none at all.
	if rep.CPU < 0 || rep.CPU+rep.WarmupCPU <= 0 && rep.Elapsed >= 50*time.Millisecond || rep.Elapsed <= 0 {
		t.Errorf("tls %s: CPU %v (warm-up %v), elapsed %v", cfg.TLS, rep.CPU, rep.WarmupCPU, rep.Elapsed)
	}
}

// checkTLS checks what the stack says its run negotiated: nothing on a
// plain run, nothing from a C tool (they print none of it); TLS 1.3 with
// a TLS 1.3 suite, not resumed, on a TLS 1.3 run without resumption ("-",
// not said, only from the Python stacks that cannot tell: psycopg,
// PyMySQL, mysqlclient).
func checkTLS(t *testing.T, cfg Config, rep Report) {
	t.Helper()
	switch {
	case cfg.TLS == "off" || cfg.Stack.Lang == "native":
		if rep.TLS != nil {
			t.Errorf("tls %s: the stack says it negotiated %+v", cfg.TLS, *rep.TLS)
		}
	case cfg.TLS == "1.3" && !cfg.Resume && (rep.TLS == nil || rep.TLS.Version != "TLSv1.3" ||
		!strings.HasPrefix(rep.TLS.Cipher, "TLS_") || rep.TLS.Resumed != "0" && (rep.TLS.Resumed != "-" || cfg.Stack.Lang != "python")):
		t.Errorf("TLS 1.3 run: the stack says it negotiated %+v, want TLSv1.3 not resumed", rep.TLS)
	}
}

// checkConnect runs ops connections (2 workers, an operation each) and
// checks them: as checkOps and checkTLS say, and each one a connection
// the server counted (see checkCounted). It returns the run's report.
func checkConnect(t *testing.T, c Client, l *labServer, cfg Config, ops int64) Report {
	t.Helper()
	conns0, tls0 := l.count(t, 0)
	rep, err := c.Run(context.Background(), Run{Experiment: "connect", Concurrency: 2, PerConn: 1, MaxOps: ops, Duration: time.Minute})
	if err != nil {
		t.Fatalf("tls %s connect: %v", cfg.TLS, err)
	}
	checkOps(t, cfg, rep, ops, 2)
	checkTLS(t, cfg, rep)
	checkExtra(t, cfg, rep)
	checkCounted(t, l, cfg, "connect", conns0, tls0, ops+rep.Extra.Min)
	return rep
}

// checkPool runs r, a pool run, and checks it: as checkOps and checkTLS
// say (r.MaxOps operations, or some if it has no bound), and the pool
// opened exactly r.Concurrency connections the server counted (one where
// the stack pipelines r.Concurrency commands on one connection; see
// checkCounted). It returns the run's report.
func checkPool(t *testing.T, c Client, l *labServer, cfg Config, r Run) Report {
	t.Helper()
	conns0, tls0 := l.count(t, 0)
	rep, err := c.Run(context.Background(), r)
	if err != nil {
		t.Fatalf("tls %s pool: %v", cfg.TLS, err)
	}
	checkOps(t, cfg, rep, map[bool]int64{false: r.MaxOps, true: -1}[r.MaxOps == 0], r.Concurrency)
	checkTLS(t, cfg, rep)
	want := int64(r.Concurrency)
	if c.Hello().Model == "event-loop-pipelined" {
		want = 1
	}
	checkExtra(t, cfg, rep)
	checkCounted(t, l, cfg, "pool of "+strconv.Itoa(r.Concurrency), conns0, tls0, want+rep.Extra.Min)
	return rep
}

// checkExtra checks what a run without a warm-up of new connections says
// it opened besides its operations' connections: nothing, from a program
// or sysbench (a connection a thread); curl and s_time cannot tell.
func checkExtra(t *testing.T, cfg Config, rep Report) {
	t.Helper()
	want := exactly(0)
	if cfg.Stack.Name == "curl" || cfg.Stack.Name == "openssl" {
		want = Extra{}
	}
	if rep.Extra != want {
		t.Errorf("tls %s: the run says it opened %+v besides its operations' connections, want %+v", cfg.TLS, rep.Extra, want)
	}
}

// checkCounted checks that the server counted want connections since
// conns0 and tls0 (l.count's), each over TLS where cfg says and the
// server tells (the built-in server: TLS 1.3).
func checkCounted(t *testing.T, l *labServer, cfg Config, run string, conns0, tls0, want int64) {
	t.Helper()
	conns1, tls1 := l.count(t, conns0+want)
	wantTLS := map[bool]int64{false: 0, true: want}[cfg.TLS != "off"]
	if conns1-conns0 != want || tls0 >= 0 && tls1-tls0 != wantTLS {
		t.Errorf("tls %s %s: the server counted %d connections (%d over TLS; -1: not told), want %d (%d)",
			cfg.TLS, run, conns1-conns0, map[bool]int64{false: -1, true: tls1 - tls0}[tls0 >= 0], want, wantTLS)
	}
}

// otherCAFile is a file of a CA that signed nothing the servers have.
func otherCAFile(t *testing.T) string {
	t.Helper()
	ca, err := tlsx.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "other-ca.crt")
	if err := os.WriteFile(f, ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// failures are changes to a stack's configuration that fail each
// connection, and where: a change that returns false does not apply.
func failures(t *testing.T) []struct {
	name, phase, kind string
	change            func(*Config) bool
} {
	otherCA := otherCAFile(t)
	return []struct {
		name, phase, kind string
		change            func(*Config) bool
	}{
		{"wrong password", "auth", "auth", func(c *Config) bool { c.Password += "x"; return c.User != "" }},
		{"closed port", "tcp", "refused", func(c *Config) bool { c.Port = closedPort(t); return true }},
		{"wrong CA", "tls-handshake", "tls", func(c *Config) bool { c.CA = otherCA; return true }},
	}
}

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}
