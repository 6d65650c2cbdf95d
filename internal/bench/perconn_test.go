package bench_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/tlsbench/tlsbench/internal/bench"
	_ "github.com/tlsbench/tlsbench/internal/driver/pgdrv"
	_ "github.com/tlsbench/tlsbench/internal/driver/redisdrv"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/site"
)

// perConnOps is the operations of each trial of TestPerConnServerCounts: a
// whole number of connections at every per-conn tested.
const perConnOps = 60

// serverCount is what the server itself counted so far of variant v's
// connections: sessions opened and operations (statements, commands,
// requests) run; -1 for what it does not count.
type serverCount func(t *testing.T, v plan.Variant) (conns, ops int64)

// TestPerConnServerCounts runs connect --per-conn N against real servers,
// plain and TLS 1.3, and asks each server what it counted over the trial:
// one session per N operations, every operation the trial counts. The
// server's own record: PostgreSQL's pg_stat_database (sessions, and
// xact_commit: a transaction per simple-protocol point select, and one
// more per session, its startup's); Redis's INFO
// (total_connections_received, cmdstat_get). The built-in HTTP server
// keeps each connection alive for N-1 requests (the next request on it
// succeeds) and closes it after the Nth itself, so that its port holds one
// TIME_WAIT per connection and the client's none (plain only: a TLS
// connection ends in a reset, the client's close_notify unread). Each
// connection makes one full handshake (no resumption), with the round
// trips it takes with one operation.
func TestPerConnServerCounts(t *testing.T) {
	labtest.Slow(t)
	tests := []struct {
		engine string
		// start starts the server and returns the spec's target, the site
		// and the server's count.
		start func(t *testing.T) (lab.Server, serverCount)
	}{
		{"postgres", startPostgresCounted},
		{"redis", startRedisCounted},
		{"builtin", startBuiltinCounted},
	}
	for _, tt := range tests {
		t.Run(tt.engine, func(t *testing.T) {
			srv, count := tt.start(t)
			raw := plan.Spec{Target: "lab:" + tt.engine, TLS: []string{"off", "1.3"}, Keys: []string{"ecdsa-p256"},
				PerConn: []int{1, 3, 10}, Count: perConnOps, Trials: 1, Tables: 1, Rows: 100, QueryMode: "simple"}
			if tt.engine == "builtin" {
				raw.Target, raw.QueryMode, raw.Tables, raw.Rows = plan.Builtin, "", 0, 0
			}
			spec, err := plan.New(raw)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			st, err := site.Attach(ctx, spec, srv)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Stop()
			if err := bench.Prepare(ctx, spec, st, func(int64, int64) {}); err != nil && err != bench.ErrNothingToPrepare {
				t.Fatal(err)
			}
			cfgs, err := bench.Configs(spec, spec.Variants(), st.Locate, st.ClientTLS(), &netx.Dialer{Sources: netx.LoopbackSources(4)})
			if err != nil {
				t.Fatal(err)
			}
			r := &bench.Runner{Spec: spec, Variants: spec.Variants(), Scheme: st.Engine(), Configs: cfgs, Before: st.Before}
			for _, v := range spec.Variants() {
				var one result.Trial // the trial of one operation per connection
				for _, n := range spec.PerConn {
					if err := st.Before(ctx, v); err != nil {
						t.Fatal(err)
					}
					conns0, ops0 := count(t, v)
					tr, err := r.TrialPerConn(ctx, plan.Connect, v, 2, n)
					if err != nil {
						t.Fatalf("%s per-conn %d: %v", v.ID, n, err)
					}
					conns, ops := count(t, v)
					// The server's close of the last connections may come
					// after the client read its answers, seconds after on a
					// loaded machine: the count must settle, within a
					// deadline no load reaches.
					for deadline := time.Now().Add(settleTimeout); conns0 >= 0 && conns-conns0 != tr.Conns && time.Now().Before(deadline); {
						time.Sleep(100 * time.Millisecond)
						conns, ops = count(t, v)
					}
					conns, ops = conns-conns0, ops-ops0
					where := fmt.Sprintf("%s per-conn %d", v.ID, n)
					if tr.Ops != perConnOps || tr.Conns != perConnOps/int64(n) || len(tr.Errors) > 0 {
						t.Errorf("%s: %d ops on %d connections, errors %v; want %d on %d", where, tr.Ops, tr.Conns, tr.Errors, perConnOps, perConnOps/n)
					}
					if (conns0 >= 0 && conns != tr.Conns) || (ops0 >= 0 && ops != tr.Ops) {
						t.Errorf("%s: the server counted %d sessions and %d operations, the trial %d and %d", where, conns, ops, tr.Conns, tr.Ops)
					}
					if want := map[bool]int{true: 0, false: n}[n == 1]; tr.PerConn != want {
						t.Errorf("%s: trial per_conn %d, want %d", where, tr.PerConn, want)
					}
					checkPerConnPhases(t, where, tr, n, !v.Plain())
					if n == 1 {
						one = tr
						continue
					}
					// Setup and the first operation as with one per connection.
					for _, p := range one.Phases {
						if p.Name == netx.PhaseClose {
							continue
						}
						if got := phase(t, tr, p.Name); got.RoundTrips.Min != p.RoundTrips.Min || got.RoundTrips.Max != p.RoundTrips.Max {
							t.Errorf("%s: phase %s took %+v round trips, %+v with one operation per connection", where, p.Name, got.RoundTrips, p.RoundTrips)
						}
					}
				}
			}
		})
	}
}

// checkPerConnPhases: every connection was traced once, with one full TLS
// handshake if secure; with n > 1 the latency holds each operation, and
// operations 2 to n are a phase of their own.
func checkPerConnPhases(t *testing.T, where string, tr result.Trial, n int, secure bool) {
	t.Helper()
	if c := phase(t, tr, netx.PhaseTCP).Latency.Count; c != tr.Conns {
		t.Errorf("%s: %d tcp phases, %d connections", where, c, tr.Conns)
	}
	if secure {
		if hs := phase(t, tr, netx.PhaseTLSHandshake); hs.Latency.Count != tr.Conns || tr.Resumed != 0 {
			t.Errorf("%s: %d TLS handshakes (%d resumed) on %d connections, want one full handshake each", where, hs.Latency.Count, tr.Resumed, tr.Conns)
		}
	}
	if tr.Latency.Count != map[bool]int64{true: tr.Conns, false: tr.Ops}[n == 1] {
		t.Errorf("%s: latency of %d samples: %d ops on %d connections", where, tr.Latency.Count, tr.Ops, tr.Conns)
	}
	for _, p := range tr.Phases {
		if p.Name == bench.PhaseMoreOps && (n == 1 || p.Latency.Count != tr.Conns) {
			t.Errorf("%s: phase %s of %d samples on %d connections", where, p.Name, p.Latency.Count, tr.Conns)
		}
	}
	if n > 1 {
		phase(t, tr, bench.PhaseMoreOps)
	}
}

// startPostgresCounted starts a lab PostgreSQL; its count is the bench
// database's sessions and committed transactions, read from another
// database so that reading them adds to neither.
func startPostgresCounted(t *testing.T) (lab.Server, serverCount) {
	return startPostgresCountedWith(t, lab.Options{Keys: []string{"ecdsa-p256"}})
}

func startPostgresCountedWith(t *testing.T, o lab.Options) (lab.Server, serverCount) {
	srv := labtest.Start(t, "postgres", o)
	raw, err := srv.URL("", false)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(raw)
	db := strings.TrimPrefix(u.Path, "/")
	u.Path = "/postgres"
	ctx := context.Background()
	c, err := pgx.Connect(ctx, u.String()+"?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	read := func() (sessions, commits int64) {
		// Backends report their counts as they exit, which follows the
		// client's close by a moment.
		if _, err := c.Exec(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
			t.Fatal(err)
		}
		if err := c.QueryRow(ctx, "SELECT sessions, xact_commit FROM pg_stat_database WHERE datname = $1", db).Scan(&sessions, &commits); err != nil {
			t.Fatal(err)
		}
		return sessions, commits - sessions // statements: each session's startup commits one
	}
	return srv, func(*testing.T, plan.Variant) (int64, int64) { return settled(read) }
}

// settleTimeout bounds the wait for a server's counts to settle.
const settleTimeout = 30 * time.Second

// settled reads counts until two reads 300 ms apart agree (at most 10 s):
// a server reports what a closed session did a moment after the close.
func settled(read func() (int64, int64)) (int64, int64) {
	a, b := read()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
		time.Sleep(300 * time.Millisecond)
		x, y := read()
		if x == a && y == b {
			break
		}
		a, b = x, y
	}
	return a, b
}

// startRedisCounted starts a lab Redis; its count is INFO's connections
// received and GET calls, read on one connection opened before.
func startRedisCounted(t *testing.T) (lab.Server, serverCount) {
	return startRedisCountedWith(t, lab.Options{Keys: []string{"ecdsa-p256"}})
}

func startRedisCountedWith(t *testing.T, opts lab.Options) (lab.Server, serverCount) {
	srv := labtest.Start(t, "redis", opts)
	raw, err := srv.URL("", false)
	if err != nil {
		t.Fatal(err)
	}
	o, err := redis.ParseURL(raw)
	if err != nil {
		t.Fatal(err)
	}
	o.PoolSize, o.MinIdleConns = 1, 1
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	read := func() (conns, gets int64) {
		info, err := c.Info(ctx, "stats", "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(l, "total_connections_received:"); ok {
				conns, _ = strconv.ParseInt(v, 10, 64)
			}
			if v, ok := strings.CutPrefix(l, "cmdstat_get:calls="); ok {
				v, _, _ = strings.Cut(v, ",")
				gets, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		return conns, gets
	}
	read() // connects before the first count
	return srv, func(*testing.T, plan.Variant) (int64, int64) { return settled(read) }
}

// startBuiltinPorts starts a built-in server of its own (plain and
// ecdsa-p256), stopped at the test's end, and returns its ports.
func startBuiltinPorts(t *testing.T) (lab.Server, []int) {
	labtest.Slow(t)
	srv, err := lab.StartBuiltin(context.Background(), lab.BuiltinOptions{Keys: []string{"ecdsa-p256"}, ResponseSize: 100, Exe: exe})
	labtest.Check(t, err)
	t.Cleanup(func() { srv.Stop() })
	var ports []int
	for _, key := range []string{"", "ecdsa-p256"} {
		_, p, _ := net.SplitHostPort(srv.Endpoint(key))
		port, _ := strconv.Atoi(p)
		ports = append(ports, port)
	}
	return srv, ports
}

// startBuiltinCounted starts a built-in server of its own (no other test's
// TIME_WAITs on its ports); its count of connections is the TIME_WAITs
// its ports hold, that is the connections it closed itself after a
// Connection: close; it keeps no count of requests (-1). Connections the
// client closed first fail the test.
func startBuiltinCounted(t *testing.T) (lab.Server, serverCount) {
	srv, ports := startBuiltinPorts(t)
	return srv, func(t *testing.T, v plan.Variant) (int64, int64) {
		if !v.Plain() {
			return -1, -1
		}
		server, client := timeWaits(t, ports)
		if client > 0 {
			t.Errorf("the client closed %d connections first: the server should have, after Connection: close", client)
		}
		return server, -1
	}
}

// timeWaits counts the TCP sockets in TIME_WAIT whose local address (the
// server closed first) or remote address (the client did) is 127.0.0.1 at
// one of ports.
func timeWaits(t *testing.T, ports []int) (server, client int64) {
	return sockets(t, ports, "06") // TCP_TIME_WAIT
}

// sockets counts the TCP sockets in one of states (/proc/net/tcp's hex,
// all but LISTEN when none is given) whose local address (the server's
// side) or remote address (the client's) is 127.0.0.1 at one of ports.
func sockets(t *testing.T, ports []int, states ...string) (server, client int64) {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || fields[3] == "0A" || len(states) > 0 && !slices.Contains(states, fields[3]) { // 0A: LISTEN
			continue
		}
		// The server's own address, 127.0.0.1 (0100007F in the file's
		// byte order): a client socket of another process, bound to
		// 127.0.1.x, may have the same port number.
		server1 := func(addr string) int {
			ip, hex, _ := strings.Cut(addr, ":")
			p, _ := strconv.ParseInt(hex, 16, 32)
			if ip != "0100007F" {
				return -1
			}
			return int(p)
		}
		for _, p := range ports {
			if server1(fields[1]) == p {
				server++
			}
			if server1(fields[2]) == p {
				client++
			}
		}
	}
	return server, client
}
