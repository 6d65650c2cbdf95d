package bench_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/bench"
	_ "github.com/tlsbench/tlsbench/internal/driver/mysqldrv"
	"github.com/tlsbench/tlsbench/internal/host"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/site"
)

// stormClients is the size of TestStormServerCounts' storms: above
// PostgreSQL's lab default of 200 connections, which the lab must raise.
const stormClients = 250

// runnerOn is a Runner for spec on srv (started by the test), with the
// site's server CPU and memory as Execute gives them.
func runnerOn(t *testing.T, spec plan.Spec, srv lab.Server) (*bench.Runner, *site.Site) {
	t.Helper()
	ctx := context.Background()
	st, err := site.Attach(ctx, spec, srv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Stop() })
	if err := bench.Prepare(ctx, spec, st, func(int64, int64) {}); err != nil && err != bench.ErrNothingToPrepare {
		t.Fatal(err)
	}
	cfgs, err := bench.Configs(spec, spec.Variants(), st.Locate, st.ClientTLS(), &netx.Dialer{Sources: netx.LoopbackSources(bench.LoopbackSources)})
	if err != nil {
		t.Fatal(err)
	}
	return &bench.Runner{Spec: spec, Variants: spec.Variants(), Scheme: st.Engine(), Configs: cfgs, Before: st.Before,
		ServerCPU: st.CPU, ServerMemory: st.Memory}, st
}

// TestStormServerCounts releases a storm of clients, each running its
// first operation, against real servers, plain and TLS 1.3: every client
// connects and runs it, as the trial counts and as the server counted
// (PostgreSQL's pg_stat_database sessions and commits, Redis's
// connections received and GETs; the built-in server's port: a TIME_WAIT
// per plain connection the client closed); the storm's figures are
// there: the phases (close included, the hold apart), the times, the
// dial starts' spread, the listen-queue counters, the server's CPU and
// its memory with the clients held.
func TestStormServerCounts(t *testing.T) {
	labtest.Slow(t)
	tests := []struct {
		engine string
		start  func(t *testing.T) (lab.Server, serverCount)
	}{
		{"postgres", func(t *testing.T) (lab.Server, serverCount) {
			return startPostgresCountedWith(t, lab.Options{Keys: []string{"ecdsa-p256"}, Connections: stormClients})
		}},
		{"redis", func(t *testing.T) (lab.Server, serverCount) {
			return startRedisCountedWith(t, lab.Options{Keys: []string{"ecdsa-p256"}, Connections: stormClients})
		}},
		{"builtin", startBuiltinStorm},
	}
	for _, tt := range tests {
		t.Run(tt.engine, func(t *testing.T) {
			srv, count := tt.start(t)
			raw := plan.Spec{Experiments: []plan.Experiment{plan.Storm}, Target: "lab:" + tt.engine, TLS: []string{"off", "1.3"},
				Keys: []string{"ecdsa-p256"}, Clients: []int{stormClients}, FirstOp: true, Trials: 1, Tables: 1, Rows: 100, QueryMode: "simple",
				Timeout: time.Minute}
			if tt.engine == "builtin" {
				raw.Target, raw.QueryMode, raw.Tables, raw.Rows = plan.Builtin, "", 0, 0
			}
			spec, err := plan.New(raw)
			if err != nil {
				t.Fatal(err)
			}
			r, st := runnerOn(t, spec, srv)
			ctx := context.Background()
			for _, v := range spec.Variants() {
				if err := st.Before(ctx, v); err != nil {
					t.Fatal(err)
				}
				conns0, ops0 := count(t, v)
				tr, err := r.Trial(ctx, plan.Storm, v, stormClients)
				if err != nil {
					t.Fatalf("%s: %v", v.ID, err)
				}
				conns, ops := count(t, v)
				conns, ops = conns-conns0, ops-ops0
				n := int64(stormClients)
				s := tr.Storm
				if s == nil {
					t.Fatalf("%s: the trial has no storm figures", v.ID)
				}
				if tr.Ops != n || tr.Conns != n || len(tr.Errors) > 0 || s.Clients != stormClients || s.Connected != n || s.FirstOps != n || tr.Concurrency != stormClients {
					t.Errorf("%s: %d ops, %d conns, errors %v, storm %+v, c=%d; want %d of each, no errors", v.ID, tr.Ops, tr.Conns, tr.Errors, *s, tr.Concurrency, n)
				}
				if (conns0 >= 0 && conns != n) || (ops0 >= 0 && ops != n) {
					t.Errorf("%s: the server counted %d connections and %d operations, want %d of each (-1: not counted)", v.ID, conns, ops, n)
				}
				if s.AllConnected <= 0 || s.LastFirstOp < s.AllConnected || tr.Elapsed < s.LastFirstOp {
					t.Errorf("%s: all connected after %v, last first op %v, trial %v: want 0 < connected <= first op <= trial", v.ID, s.AllConnected, s.LastFirstOp, tr.Elapsed)
				}
				if tr.Latency.Count != n || tr.Latency.Max*1e6 > float64(s.LastFirstOp)*1.01+1e6 {
					t.Errorf("%s: latency of %d clients, max %.1f ms; want %d, at most the last first op (%v)", v.ID, tr.Latency.Count, tr.Latency.Max, n, s.LastFirstOp)
				}
				want := []string{netx.PhaseTCP, netx.PhaseClose}
				if !v.Plain() {
					want = append(want, netx.PhaseTLSHandshake)
				}
				if slices.ContainsFunc(tr.Phases, func(ph result.Phase) bool { return ph.Name == bench.PhaseHold }) {
					t.Errorf("%s: the hold is among the phases: %+v", v.ID, tr.Phases)
				}
				if s.Hold == nil || s.Hold.Count != n || s.DialSpread <= 0 || s.DialSpread > s.AllConnected {
					t.Errorf("%s: hold %+v, dial spread %v: want every client's hold, a spread within all connected (%v)", v.ID, s.Hold, s.DialSpread, s.AllConnected)
				}
				// Each client's wait to dial ends before it connected; the
				// last dial began one spread after the first.
				if s.ToDial == nil || s.ToDial.Count != n || s.ToDial.Max*1e6 > float64(s.AllConnected)*1.01+1e6 || s.ToDial.Max*1e6 < float64(s.DialSpread)*0.99 {
					t.Errorf("%s: to dial %+v: want every client's, at most all connected (%v), its max at least the dial spread (%v)", v.ID, s.ToDial, s.AllConnected, s.DialSpread)
				}
				for _, p := range want {
					i := slices.IndexFunc(tr.Phases, func(ph result.Phase) bool { return ph.Name == p })
					if i < 0 || tr.Phases[i].Latency.Count != n {
						t.Errorf("%s: phase %s missing or not of every client: %+v", v.ID, p, tr.Phases)
					}
				}
				if s.Listen == nil || s.Listen.Somaxconn <= 0 || s.Listen.Overflows < 0 || s.Listen.Drops < s.Listen.Overflows {
					t.Errorf("%s: listen queues %+v: want the counters read (drops include overflows) and somaxconn", v.ID, s.Listen)
				}
				if tr.ServerCPU <= 0 {
					t.Errorf("%s: no server CPU during the storm", v.ID)
				}
				if m := tr.ServerMemory; m == nil || m.Conns != n || m.Kind != host.MemoryPSS || m.IdleBytes <= 0 || m.HeldBytes <= 0 {
					t.Errorf("%s: server memory %+v: want PSS, idle and held, %d connections", v.ID, m, n)
				}
			}
		})
	}
}

// startBuiltinStorm starts a built-in server of its own; its count of a
// plain storm is the TIME_WAITs on its ports of connections the client
// closed first (a storm's clients close theirs); of a TLS one, nothing.
func startBuiltinStorm(t *testing.T) (lab.Server, serverCount) {
	srv, ports := startBuiltinPorts(t)
	return srv, func(t *testing.T, v plan.Variant) (int64, int64) {
		if !v.Plain() {
			return -1, -1
		}
		// Every client socket to the server, whatever its state: one the
		// run's check left open or in FIN_WAIT_2 (until the server's FIN)
		// reaches TIME_WAIT during the trial on a loaded machine, and
		// counting TIME_WAIT alone counted it as the trial's.
		return settled(func() (int64, int64) {
			_, client := sockets(t, ports)
			return client, -1
		})
	}
}

// TestServerMemoryPerConn holds a pool's connections open on PostgreSQL
// and MariaDB, plain and TLS, and reads what each added to the server's
// memory: a PostgreSQL backend is a process of its own (more than 100
// KiB each), a MariaDB connection a thread; neither takes more than 20
// MiB.
func TestServerMemoryPerConn(t *testing.T) {
	const conns = 40
	for _, tt := range []struct {
		engine string
		least  float64 // bytes per connection
	}{
		{"postgres", 100 << 10},
		{"mariadb", 1},
	} {
		t.Run(tt.engine, func(t *testing.T) {
			srv := labtest.Start(t, tt.engine, lab.Options{Keys: []string{"ecdsa-p256"}})
			spec, err := plan.New(plan.Spec{Experiments: []plan.Experiment{plan.Pool}, Target: "lab:" + tt.engine, TLS: []string{"off", "1.3"},
				Keys: []string{"ecdsa-p256"}, Concurrency: []int{conns}, Count: conns, Warmup: new(time.Duration(0)), Trials: 1, Tables: 1, Rows: 100})
			if err != nil {
				t.Fatal(err)
			}
			r, st := runnerOn(t, spec, srv)
			ctx := context.Background()
			for _, v := range spec.Variants() {
				if err := st.Before(ctx, v); err != nil {
					t.Fatal(err)
				}
				tr, err := r.Trial(ctx, plan.Pool, v, conns)
				if err != nil {
					t.Fatalf("%s: %v", v.ID, err)
				}
				m := tr.ServerMemory
				if m == nil {
					t.Fatalf("%s: no server memory", v.ID)
				}
				per := m.PerConn()
				t.Logf("%s %s: idle %d KiB, held %d KiB, %.0f KiB per connection (%s)", tt.engine, v.ID, m.IdleBytes>>10, m.HeldBytes>>10, per/1024, m.Kind)
				if m.Kind != host.MemoryPSS || m.Conns != conns || per < tt.least || per > 20<<20 {
					t.Errorf("%s: %+v, %.0f bytes per connection; want PSS of %d connections, %.0f bytes to 20 MiB each", v.ID, *m, per, conns, tt.least)
				}
			}
		})
	}
}

// TestParseListen reads the listen-queue counters from TcpExt's pair of
// lines, wherever they stand among the others.
func TestParseListen(t *testing.T) {
	data := []byte("TcpExt: SyncookiesSent ListenOverflows ListenDrops TCPHPHits\n" +
		"TcpExt: 0 17 21 99\n" +
		"IpExt: InNoRoutes\nIpExt: 0\n")
	got, err := bench.ParseListen(data)
	if err != nil || got.Overflows != 17 || got.Drops != 21 {
		t.Errorf("ParseListen: %+v, %v; want 17 overflows, 21 drops", got, err)
	}
	for _, bad := range []string{"", "TcpExt: ListenOverflows\nTcpExt: 1\n", "TcpExt: ListenOverflows ListenDrops\nTcpExt: 1 x\n"} {
		if _, err := bench.ParseListen([]byte(bad)); err == nil {
			t.Errorf("ParseListen(%q): no error", bad)
		}
	}
}
