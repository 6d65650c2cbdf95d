package bench_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/site"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// TestStackServerView: the check of every PostgreSQL and MariaDB stack,
// plain and TLS 1.3, on real lab servers, records what the server itself
// saw of the stack's connections, and it is the variant: PostgreSQL's
// pg_stat_ssl says TLSv1.3 or no SSL, MariaDB's counts say every
// connection it accepted meanwhile was over TLS, or none; Redis's CLIENT
// LIST, that its connection reached the TLS port or the plain one. A
// MongoDB stack's check says the server cannot tell.
// Then a trial of each variant: the server's count of its connections
// (ServerCount) is exactly the stack's (its count of connections, or a
// pool's) and those it opened of its own (pgbench's first), over TLS on
// the TLS variant where the server counts TLS (MariaDB), without a
// warning; MongoDB's keeps no count a client can read, which a note says.
func TestStackServerView(t *testing.T) {
	labtest.Slow(t) // a lab server per engine, a client process per variant
	tests := []struct {
		engine string
		stacks []string
		exp    plan.Experiment
	}{
		{"postgres", []string{"libpq", "psycopg", "pgjdbc", "node-postgres"}, plan.Connect},
		{"mariadb", []string{"pymysql", "mysqlclient", "connector-j", "mysql2"}, plan.Connect},
		{"mariadb", []string{"libmariadb"}, plan.Pool}, // sysbench runs pool only
		// hiredis: the lab's user has a password, which redis-benchmark
		// takes on its command line only (refused: TestHiredis).
		{"redis", []string{"redis-py", "jedis", "ioredis"}, plan.Connect},
		{"mongodb", []string{"pymongo"}, plan.Connect},
	}
	// own is what each stack opens besides its operations' connections.
	own := map[string]int64{"libpq": 1}
	servers := map[string]lab.Server{}
	for _, tt := range tests {
		if servers[tt.engine] == nil {
			// sysbench presents a client certificate (mutual TLS).
			servers[tt.engine] = labtest.Start(t, tt.engine, lab.Options{Keys: []string{"ecdsa-p256"}, ClientCerts: []string{"ecdsa-p256"}})
		}
		for _, stack := range tt.stacks {
			t.Run(stack, func(t *testing.T) {
				raw := plan.Spec{Target: "lab:" + tt.engine, Experiments: []plan.Experiment{tt.exp}, TLS: []string{"off", "1.3"},
					Keys: []string{"ecdsa-p256"}, ClientStacks: []string{stack}, Count: 3, Concurrency: []int{1}, Trials: 1,
					Tables: 1, Rows: 100, Warmup: new(time.Duration), Timeout: 20 * time.Second}
				if stack == "libmariadb" {
					raw.ClientCerts = []string{"ecdsa-p256"}
				}
				if tt.exp == plan.Connect {
					raw.Workload = plan.WorkloadPing
				}
				// sysbench checks the chain, never the name.
				checks, r := stackChecks(t, raw, servers[tt.engine], stack == "libmariadb")
				if len(checks) != 2 {
					t.Fatalf("%d checks, want 2", len(checks))
				}
				for _, c := range checks {
					tls := strings.Contains(c.Variant, "tls1.3")
					sv := c.Server
					switch {
					case tt.engine == "mongodb":
						if sv != nil || !strings.HasPrefix(c.ServerUnknown, "not available from this server") {
							t.Errorf("%s: server %+v, unknown %q; want not available", c.Variant, sv, c.ServerUnknown)
						}
					case sv == nil || c.ServerUnknown != "" || sv.TLS != tls:
						t.Errorf("%s: the server says %+v (unknown %q)", c.Variant, sv, c.ServerUnknown)
					case tt.engine == "postgres" && tls && (sv.Version != "TLSv1.3" || sv.Cipher == ""):
						t.Errorf("%s: pg_stat_ssl says %+v, want TLSv1.3 and a cipher", c.Variant, sv)
					case !tls && (sv.Version != "" || sv.Cipher != ""):
						t.Errorf("%s: the server says %+v of a plain variant", c.Variant, sv)
					}
				}
				var warned []string
				r.Warn = func(w string) { warned = append(warned, w) }
				for _, v := range r.Variants {
					bench.SkipFirstWarmup(r, v) // a JVM's 10 s: its connections go unreported
					tr, err := r.Trial(context.Background(), tt.exp, v, 1)
					if err != nil {
						t.Fatalf("%s: %v", v.ID, err)
					}
					sc := tr.ServerCount
					if tt.engine == "mongodb" {
						if sc != nil || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "keeps no count") {
							t.Errorf("%s: server count %+v, notes %q", v.ID, sc, r.Notes)
						}
						continue
					}
					if sc == nil {
						t.Fatalf("%s: no server count (notes %q)", v.ID, r.Notes)
					}
					t.Logf("%s: %d connections reported, the server counted %+v", v.ID, tr.Conns, *sc)
					conns := int64(3) // connect: one an operation
					if tt.exp == plan.Pool {
						conns = 1
					}
					want := conns + own[stack]
					if tr.Conns != conns || tr.Ops != 3 || sc.Conns != want || sc.Want != want || sc.WantMax != want {
						t.Errorf("%s: %d operations, %d connections; the server counted %+v, want %d", v.ID, tr.Ops, tr.Conns, *sc, want)
					}
					if wantTLS := map[bool]int64{false: 0, true: want}[!v.Plain()]; tt.engine == "mariadb" && sc.TLS != wantTLS {
						t.Errorf("%s: the server counted %d over TLS, want %d", v.ID, sc.TLS, wantTLS)
					}
				}
				if len(warned) > 0 {
					t.Errorf("warnings: %q", warned)
				}
			})
		}
	}
}

// stackChecks runs the check of raw's variants on srv, as a run does
// before its trials; verifyCA verifies the server's chain, not its name.
// It returns the Runner too, for trials after the check.
func stackChecks(t *testing.T, raw plan.Spec, srv lab.Server, verifyCA bool) ([]result.Check, *bench.Runner) {
	t.Helper()
	spec, err := plan.New(raw)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := site.Attach(ctx, spec, srv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Stop() })
	vs := spec.Variants()
	cfgs, err := bench.Configs(spec, vs, st.Locate, st.ClientTLS(), &netx.Dialer{})
	if err != nil {
		t.Fatal(err)
	}
	for id, c := range cfgs {
		if verifyCA && c.TLS != nil {
			c.TLS = tlsx.SkipHostname(c.TLS)
			cfgs[id] = c
		}
	}
	if spec.Workload != plan.WorkloadPing {
		// sysbench's point selects read the sbtest table.
		d, err := driver.New(st.Engine(), cfgs[vs[0].ID])
		if err != nil {
			t.Fatal(err)
		}
		if err := d.(driver.Preparer).Prepare(ctx, spec.Tables, spec.Rows, nil); err != nil {
			t.Fatal(err)
		}
	}
	r := &bench.Runner{Spec: spec, Variants: vs, Scheme: st.Engine(), Configs: cfgs, Before: st.Before, Locate: st.Locate, Untuned: true}
	t.Cleanup(func() { r.Close() })
	checks, err := r.Check(ctx)
	skipMissingStack(t, err)
	if err != nil {
		t.Fatal(err)
	}
	return checks, r
}
