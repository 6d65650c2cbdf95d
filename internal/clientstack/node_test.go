package clientstack

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labexe"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// sessionCount is what a server itself counted so far: the sessions its
// clients opened, and of those the TLS ones (-1 where it does not say).
type sessionCount func() (sessions, secure int64)

// nodeCase is a lab server that one of the Node program's stacks serves.
type nodeCase struct {
	lab, engine string
	workload    string
	// resumes is what a resume=1 connection after another gets: "1" where
	// the server resumes, "0" where it never does (PostgreSQL), "refused"
	// where the stack has no way to (the MongoDB driver).
	resumes string
	// start starts the server and returns its count (nil: it keeps none).
	start func(t *testing.T) (lab.Server, sessionCount)
}

var nodeCases = []nodeCase{
	{"postgres", "postgres", "ping", "0", startPGCounted},
	{"mariadb", "mysql", "ping", "1", startMariaDBCounted},
	{"redis", "redis", "get", "1", startRedisCounted},
	{"mongodb", "mongodb", "ping", "refused", startMongoCounted},
	{"builtin", "http", "request", "1", startBuiltin},
}

// TestNodeStacks runs clients/node/client.js through Start against real
// lab servers, for every stack it serves: plain and TLS 1.3 connect runs
// whose operations equal the sessions the server counted (and its TLS
// sessions, where it counts them), the version the program says it
// negotiated, and a pool run; then a wrong password, a closed port and a
// CA that signed nothing the server has, each failing in its phase; then
// resumption: none with resume=0, and with resume=1 what the server allows.
func TestNodeStacks(t *testing.T) {
	labtest.Slow(t)
	nodeInstalled(t)
	for _, nc := range nodeCases {
		t.Run(nc.lab, func(t *testing.T) {
			srv, count := nc.start(t)
			for _, tlsOn := range []bool{false, true} {
				cfg := nodeLabConfig(t, srv, nc.engine, nc.workload, tlsOn)
				c, err := Start(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				h := c.Hello()
				if h.Stack != cfg.Stack.Name || !strings.Contains(h.Driver, "/") || !strings.HasPrefix(h.TLS, "OpenSSL/") ||
					!strings.HasPrefix(h.Runtime, "Node.js/") || !strings.HasPrefix(h.Model, "event-loop") {
					t.Errorf("hello %+v", h)
				}
				const ops = 12
				var s0, tls0 int64
				if count != nil {
					s0, tls0 = count()
				}
				rep, err := c.Run(context.Background(), Run{Experiment: "connect", Concurrency: 2, PerConn: 1, MaxOps: ops, Duration: time.Minute})
				if err != nil {
					t.Fatalf("tls %s connect: %v", cfg.TLS, err)
				}
				if n, failed := tally(rep); n != ops || failed != "" {
					t.Errorf("tls %s connect: %d operations, want %d; failed: %s", cfg.TLS, n, ops, failed)
				}
				if count != nil {
					s, secure := nodeSettle(count, s0+ops)
					want := map[bool]int64{false: 0, true: ops}[tlsOn]
					if s-s0 != ops || (tls0 >= 0 && secure-tls0 != want) {
						t.Errorf("tls %s connect: the server counted %d sessions (%d TLS), the client %d operations", cfg.TLS, s-s0, secure-tls0, ops)
					}
				}
				switch {
				case !tlsOn && rep.TLS != nil:
					t.Errorf("plain connect: the stack says it negotiated %+v", *rep.TLS)
				case tlsOn && (rep.TLS == nil || rep.TLS.Version != "TLSv1.3" || rep.TLS.Resumed != "0"):
					t.Errorf("tls 1.3 connect: the stack says it negotiated %+v, want TLSv1.3 not resumed", rep.TLS)
				}
				rep, err = c.Run(context.Background(), Run{Experiment: "pool", Concurrency: 4, Duration: time.Second, Warmup: 200 * time.Millisecond})
				if err != nil {
					t.Fatalf("tls %s pool: %v", cfg.TLS, err)
				}
				if n, failed := tally(rep); n == 0 || failed != "" || rep.CPU <= 0 {
					t.Errorf("tls %s pool: %d operations, CPU %v; failed: %s", cfg.TLS, n, rep.CPU, failed)
				}
			}
			for _, resume := range []bool{false, true} {
				cfg := nodeLabConfig(t, srv, nc.engine, nc.workload, true)
				cfg.Resume = resume
				want := map[bool]string{false: "0", true: nc.resumes}[resume]
				c, err := Start(context.Background(), cfg)
				var refused *Refused
				if errors.As(err, &refused) && want == "refused" {
					continue
				}
				if err != nil || want == "refused" {
					t.Fatalf("resume %v: %v, want %s", resume, err, want)
				}
				defer c.Close()
				// A run's tls line is its first connection's: the second
				// run's first offers the session the first run got.
				var got []string
				for range 2 {
					rep, err := c.Run(context.Background(), Run{Experiment: "connect", Concurrency: 1, PerConn: 1, MaxOps: 1, Duration: time.Minute})
					if err != nil || rep.TLS == nil {
						t.Fatalf("resume %v: %v, negotiated %v", resume, err, rep.TLS)
					}
					got = append(got, rep.TLS.Resumed)
				}
				if got[0] != "0" || got[1] != want {
					t.Errorf("resume %v: resumed %v, want [0 %s]", resume, got, want)
				}
			}
			for _, tc := range nodeFailures(t) {
				cfg := nodeLabConfig(t, srv, nc.engine, nc.workload, true)
				cfg.Timeout = 3 * time.Second // MongoDB's server selection waits it out
				if !tc.change(&cfg) {
					continue
				}
				c, err := Start(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				rep, err := c.Run(context.Background(), Run{Experiment: "connect", Concurrency: 1, PerConn: 1, MaxOps: 1, Duration: time.Minute})
				c.Close()
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				if len(rep.Ops) != 1 || rep.Ops[0].Phase != tc.phase || rep.Ops[0].Kind != tc.kind || strings.Contains(rep.Ops[0].Message, cfg.Password) && cfg.Password != "" {
					t.Errorf("%s: %+v, want phase %s kind %s, without the password", tc.name, rep.Ops, tc.phase, tc.kind)
				}
			}
		})
	}
}

// nodeFailures are configurations that fail each connection, and where.
func nodeFailures(t *testing.T) []struct {
	name, phase, kind string
	change            func(*Config) bool
} {
	ca, err := tlsx.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	otherCA := filepath.Join(t.TempDir(), "other-ca.crt")
	if err := os.WriteFile(otherCA, ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return []struct {
		name, phase, kind string
		change            func(*Config) bool
	}{
		{"wrong password", "auth", "auth", func(c *Config) bool { c.Password += "x"; return c.User != "" }},
		{"closed port", "tcp", "refused", func(c *Config) bool { c.Port = closedPort(t); return true }},
		{"wrong CA", "tls-handshake", "tls", func(c *Config) bool { c.CA = otherCA; return true }},
	}
}

// tally counts a run's operations and lists its failures.
func tally(rep Report) (int, string) {
	var failed []string
	for _, o := range rep.Ops {
		if o.Failed() {
			failed = append(failed, o.Phase+" "+o.Kind+" "+o.Message)
		}
	}
	return len(rep.Ops), strings.Join(failed, "; ")
}

// settle reads count until its sessions reach want or stop changing: a
// server counts a session a moment after the client closed it (PostgreSQL
// as the backend exits), seconds after on a loaded machine.
func nodeSettle(count sessionCount, want int64) (int64, int64) {
	s, secure := count()
	for deadline := time.Now().Add(30 * time.Second); s < want && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		s, secure = count()
	}
	return s, secure
}

// nodeInstalled skips t when Node or the stacks' libraries are missing,
// except in CI, where they must be there.
func nodeInstalled(t *testing.T) {
	t.Helper()
	_, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(Dir(), "node", "node_modules", "pg"))
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the Node client stacks are not installed (%v): run %s", err, InstallCommand)
		}
		t.Skipf("the Node client stacks are not installed (%v): run %s", err, InstallCommand)
	}
}

// labConfig is the configuration that reaches srv with the Node stack of
// engine, with TLS 1.3 verified against the lab's CA, or plain.
func nodeLabConfig(t *testing.T, srv lab.Server, engine, workload string, tlsOn bool) Config {
	t.Helper()
	raw, err := srv.URL("", tlsOn)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	st, err := Lookup(engine, "node")
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	pw, _ := u.User.Password()
	db := strings.TrimPrefix(u.Path, "/")
	if a := u.Query().Get("authSource"); a != "" {
		db = a
	}
	cfg := Config{Stack: st, Host: u.Hostname(), Port: port, User: u.User.Username(), Password: pw, Database: db,
		TLS: "off", Workload: workload, Tables: 1, Rows: 10, QueryMode: "prepared", Path: "/", Timeout: 20 * time.Second}
	if tlsOn {
		cfg.TLS, cfg.CA, cfg.Verify, cfg.ServerName = "1.3", srv.CAFile(), "full", u.Hostname()
	}
	return cfg
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

func startLab(t *testing.T, engine string) lab.Server {
	return labtest.Start(t, engine, lab.Options{Keys: []string{"ecdsa-p256"}})
}

// startPGCounted counts the bench database's sessions in pg_stat_database,
// read from another database so that reading adds none.
func startPGCounted(t *testing.T) (lab.Server, sessionCount) {
	srv := startLab(t, "postgres")
	raw, _ := srv.URL("", false)
	u, _ := url.Parse(raw)
	db := strings.TrimPrefix(u.Path, "/")
	u.Path = "/postgres"
	ctx := context.Background()
	c, err := pgx.Connect(ctx, u.String()+"?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return srv, func() (int64, int64) {
		var n int64
		// Backends report their session as they exit; a snapshot would
		// keep the first read's figures.
		if _, err := c.Exec(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
			t.Fatal(err)
		}
		if err := c.QueryRow(ctx, "SELECT sessions FROM pg_stat_database WHERE datname = $1", db).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n, -1
	}
}

// startMariaDBCounted counts Connections and Ssl_accepts of SHOW GLOBAL
// STATUS, read on one connection opened before.
func startMariaDBCounted(t *testing.T) (lab.Server, sessionCount) {
	srv := startLab(t, "mariadb")
	raw, _ := srv.URL("", false)
	u, _ := url.Parse(raw)
	pw, _ := u.User.Password()
	db, err := sql.Open("mysql", u.User.Username()+":"+pw+"@tcp("+u.Host+")"+u.Path+"?tls=false")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	t.Cleanup(func() { db.Close() })
	status := func(name string) int64 {
		var k string
		var v int64
		if err := db.QueryRow("SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	return srv, func() (int64, int64) { return status("Connections"), status("Ssl_accepts") }
}

// startRedisCounted counts INFO's total_connections_received (both
// ports), read on one connection opened before; it prepares the keys
// that the get workload reads.
func startRedisCounted(t *testing.T) (lab.Server, sessionCount) {
	srv := startLab(t, "redis")
	raw, _ := srv.URL("", false)
	o, err := redis.ParseURL(raw)
	if err != nil {
		t.Fatal(err)
	}
	o.PoolSize, o.MinIdleConns = 1, 1
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	for i := 1; i <= 10; i++ {
		if err := c.Set(ctx, "key:"+strconv.Itoa(i), "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	return srv, func() (int64, int64) {
		info, err := c.Info(ctx, "stats").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(l, "total_connections_received:"); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n, -1
			}
		}
		t.Fatal("INFO stats has no total_connections_received")
		return 0, 0
	}
}

// startMongoCounted counts logins: FerretDB keeps no count of connections
// but counts commands, and each SCRAM login takes two saslContinue
// (FerretDB answers the first with done:false). A driver's monitoring
// connections do not log in, so this counts one per client.
func startMongoCounted(t *testing.T) (lab.Server, sessionCount) {
	srv := startLab(t, "mongodb")
	raw, _ := srv.URL("", false)
	ctx := context.Background()
	c, err := mongo.Connect(options.Client().ApplyURI(raw).SetMaxPoolSize(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Disconnect(context.Background()) })
	return srv, func() (int64, int64) {
		var st struct {
			Metrics struct {
				Commands map[string]struct {
					Total int64 `bson:"total"`
				} `bson:"commands"`
			} `bson:"metrics"`
		}
		if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Decode(&st); err != nil {
			t.Fatal(err)
		}
		return st.Metrics.Commands["saslContinue"].Total / 2, -1
	}
}

// startBuiltin starts the built-in server, which counts nothing.
func startBuiltin(t *testing.T) (lab.Server, sessionCount) {
	labtest.Check(t, labtest.Short())
	exe, err := labexe.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := lab.StartBuiltin(context.Background(), lab.BuiltinOptions{Keys: []string{"ecdsa-p256"}, ResponseSize: 100, Exe: exe})
	labtest.Check(t, err)
	t.Cleanup(func() { srv.Stop() })
	return srv, nil
}
