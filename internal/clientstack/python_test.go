package clientstack

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"os"
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
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
)

// counted is a lab server for the Python stacks' tests: the configuration
// that reaches it (plain; tlsPort is its TLS port) and what the server
// itself counted so far: connections that logged in, and of them those
// over TLS (-1 where it does not say).
type counted struct {
	cfg     Config
	tlsPort int
	count   func(t *testing.T) (conns, tls int64)
}

// TestPythonStacks runs every Python stack against its real lab server:
// plain and TLS 1.3 connect runs whose operations are each one connection
// the server counted (and, where it says, one TLS accept), the stack's
// own word that it negotiated TLS 1.3, and a pool run whose pool opened
// exactly its concurrency's connections. PyMongo's connect opens a new
// MongoClient per operation, as the seed did: its monitor's connection
// does not log in, so FerretDB's count of logins (saslStart) is one per
// operation too.
func TestPythonStacks(t *testing.T) {
	labtest.Slow(t)
	for _, tc := range []struct {
		engine string
		stacks []string
		start  func(t *testing.T) counted
	}{
		{"postgres", []string{"psycopg"}, startPostgres},
		{"mysql", []string{"pymysql", "mysqlclient"}, startMariaDB},
		{"redis", []string{"redis-py"}, startRedis},
		{"mongodb", []string{"pymongo"}, startMongoDB},
	} {
		t.Run(tc.engine, func(t *testing.T) {
			srv := tc.start(t)
			for _, name := range tc.stacks {
				t.Run(name, func(t *testing.T) {
					st, err := Lookup(tc.engine, name)
					if err != nil {
						t.Fatal(err)
					}
					for _, tls := range []string{"off", "1.3"} {
						cfg := srv.cfg
						cfg.Stack, cfg.TLS = st, tls
						if tls != "off" {
							cfg.Port = srv.tlsPort
						}
						checkConnect(t, startClient(t, cfg), srv, cfg)
					}
					cfg := srv.cfg
					cfg.Stack, cfg.TLS, cfg.Port = st, "1.3", srv.tlsPort
					checkPool(t, startClient(t, cfg), srv, cfg)
				})
			}
		})
	}
}

// hellos are the runtime and TLS library a language's hello names.
var hellos = map[string][2]string{"python": {"CPython/", "OpenSSL/"}, "java": {"OpenJDK/", "JSSE/"}}

// startClient starts a stack's program, failing in CI if it is not
// installed and skipping elsewhere.
func startClient(t *testing.T, cfg Config) Client {
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
	want := hellos[cfg.Stack.Lang]
	if h := c.Hello(); h.Stack != cfg.Stack.Name || h.Model != "threads" || !strings.HasPrefix(h.Runtime, want[0]) ||
		!strings.Contains(h.Driver, "/") || !strings.HasPrefix(h.TLS, want[1]) {
		t.Errorf("hello %+v", h)
	}
	return c
}

const connectOps = 20

func checkConnect(t *testing.T, c Client, srv counted, cfg Config) {
	t.Helper()
	conns0, tls0 := srv.count(t)
	rep, err := c.Run(context.Background(), Run{Experiment: "connect", Concurrency: 2, PerConn: 1, MaxOps: connectOps, Duration: time.Minute})
	if err != nil {
		t.Fatalf("tls %s: %v", cfg.TLS, err)
	}
	conns1, tls1 := srv.count(t)
	checkOps(t, cfg, rep, connectOps)
	if conns1-conns0 != connectOps {
		t.Errorf("tls %s: %d operations, but the server counted %d connections", cfg.TLS, connectOps, conns1-conns0)
	}
	wantTLS := int64(0)
	if cfg.TLS != "off" {
		wantTLS = connectOps
	}
	if tls0 >= 0 && tls1-tls0 != wantTLS {
		t.Errorf("tls %s: the server counted %d TLS accepts, want %d", cfg.TLS, tls1-tls0, wantTLS)
	}
}

func checkPool(t *testing.T, c Client, srv counted, cfg Config) {
	t.Helper()
	conns0, _ := srv.count(t)
	rep, err := c.Run(context.Background(), Run{Experiment: "pool", Concurrency: 2, MaxOps: 50, Duration: time.Minute, Warmup: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("pool: %v", err)
	}
	conns1, _ := srv.count(t)
	checkOps(t, cfg, rep, 50)
	if conns1-conns0 != 2 {
		t.Errorf("pool of 2: the server counted %d connections", conns1-conns0)
	}
}

// checkOps checks a run's operations: n, none failed, and what the stack
// said it negotiated.
func checkOps(t *testing.T, cfg Config, rep Report, n int) {
	t.Helper()
	if len(rep.Ops) != n {
		t.Errorf("tls %s: %d operations, want %d", cfg.TLS, len(rep.Ops), n)
	}
	for _, o := range rep.Ops {
		if o.Failed() {
			t.Fatalf("tls %s: failed operation %+v", cfg.TLS, o)
		}
	}
	switch {
	case cfg.TLS == "off" && rep.TLS != nil:
		t.Errorf("plain run negotiated %+v", *rep.TLS)
	case cfg.TLS == "1.3" && (rep.TLS == nil || rep.TLS.Version != "TLSv1.3" || !strings.HasPrefix(rep.TLS.Cipher, "TLS_")):
		t.Errorf("TLS 1.3 run negotiated %+v", rep.TLS)
	}
	// Fifty pool operations after the warm-up may take less than one of
	// /proc's 10 ms ticks: the run as a whole was metered.
	if rep.CPU < 0 || rep.CPU+rep.WarmupCPU <= 0 {
		t.Errorf("CPU %v, warm-up %v", rep.CPU, rep.WarmupCPU)
	}
}

// login is the lab URL's host, port, user, password and database as a
// Config.
func login(t *testing.T, srv lab.Server, tls bool) Config {
	t.Helper()
	raw, err := srv.URL("", tls)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	pw, _ := u.User.Password()
	return Config{Host: u.Hostname(), Port: port, User: u.User.Username(), Password: pw,
		Database: strings.TrimPrefix(u.Path, "/"), CA: srv.CAFile(), Verify: "full", ServerName: u.Hostname(),
		Workload: "ping", Timeout: 10 * time.Second}
}

func startPostgres(t *testing.T) counted {
	srv := labtest.Start(t, "postgres", lab.Options{Keys: []string{"ecdsa-p256"}})
	cfg := login(t, srv, false)
	raw, _ := srv.URL("", false)
	u, _ := url.Parse(raw)
	u.Path, u.RawQuery = "/postgres", "sslmode=disable"
	ctx := context.Background()
	c, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return counted{cfg, cfg.Port, func(t *testing.T) (int64, int64) {
		return settle(t, func() (n int64, err error) {
			if _, err := c.Exec(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
				return 0, err
			}
			err = c.QueryRow(ctx, "SELECT sessions FROM pg_stat_database WHERE datname = $1", cfg.Database).Scan(&n)
			return n, err
		}), -1
	}}
}

func startMariaDB(t *testing.T) counted {
	srv := labtest.Start(t, "mariadb", lab.Options{Keys: []string{"ecdsa-p256"}})
	cfg := login(t, srv, false)
	cfg.QueryMode = "simple"
	db, err := sql.Open("mysql", cfg.User+":"+cfg.Password+"@tcp("+cfg.Host+":"+strconv.Itoa(cfg.Port)+")/")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	// One connection for every count: its own login is counted once.
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	status := func(name string) (int64, error) {
		var k string
		var v int64
		err := conn.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&k, &v)
		return v, err
	}
	return counted{cfg, cfg.Port, func(t *testing.T) (int64, int64) {
		conns := settle(t, func() (int64, error) { return status("Connections") })
		accepts, err := status("Ssl_accepts")
		if err != nil {
			t.Fatal(err)
		}
		return conns, accepts
	}}
}

func startRedis(t *testing.T) counted {
	srv := labtest.Start(t, "redis", lab.Options{Keys: []string{"ecdsa-p256"}})
	cfg := login(t, srv, false)
	tlsPort := login(t, srv, true).Port
	raw, _ := srv.URL("", false)
	o, err := redis.ParseURL(raw)
	if err != nil {
		t.Fatal(err)
	}
	o.PoolSize, o.MinIdleConns = 1, 1
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	read := func() (int64, error) {
		info, err := c.Info(ctx, "stats").Result()
		for _, l := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(l, "total_connections_received:"); ok {
				return strconv.ParseInt(v, 10, 64)
			}
		}
		return 0, err
	}
	settle(t, read) // the counting connection itself
	return counted{cfg, tlsPort, func(t *testing.T) (int64, int64) { return settle(t, read), -1 }}
}

// startMongoDB counts FerretDB's logins: serverStatus counts its commands,
// and each connection that logs in runs saslContinue twice (FerretDB
// answers the first with done:false), whether its saslStart was a command
// or rode in the hello (speculative authentication: the Java driver's,
// which FerretDB counts as "unknown"); a driver's monitoring connections
// do not log in.
func startMongoDB(t *testing.T) counted {
	srv := labtest.Start(t, "mongodb", lab.Options{Keys: []string{"ecdsa-p256"}})
	cfg := login(t, srv, false)
	tlsPort := login(t, srv, true).Port
	raw, _ := srv.URL("", false)
	ctx := context.Background()
	c, err := mongo.Connect(options.Client().ApplyURI(raw))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Disconnect(context.Background()) })
	read := func() (int64, error) {
		var st struct {
			Metrics struct {
				Commands map[string]struct {
					Total int64 `bson:"total"`
				} `bson:"commands"`
			} `bson:"metrics"`
		}
		err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Decode(&st)
		return st.Metrics.Commands["saslContinue"].Total / 2, err
	}
	settle(t, read) // the counting client's own login
	return counted{cfg, tlsPort, func(t *testing.T) (int64, int64) { return settle(t, read), -1 }}
}

// settle reads a server's counter until two reads 300 ms apart agree (at
// most 10 s): a server counts a closed session a moment after the close.
func settle(t *testing.T, read func() (int64, error)) int64 {
	t.Helper()
	last, err := read()
	for end := time.Now().Add(10 * time.Second); err == nil && time.Now().Before(end); {
		time.Sleep(300 * time.Millisecond)
		var n int64
		if n, err = read(); n == last {
			break
		}
		last = n
	}
	if err != nil {
		t.Fatal(err)
	}
	return last
}
