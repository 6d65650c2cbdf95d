package bench_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/bench"
	_ "github.com/tlsbench/tlsbench/internal/driver/mongodrv"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/site"
	"github.com/tlsbench/tlsbench/internal/wire"
)

// TestStacksOnTheWire runs connect --wire through one client stack per
// engine on real lab servers (one per engine), plain and TLS 1.3, as the
// cli runs it: the capture gives every connection the stack reported to
// its variant, with the protocol's phases and round trips (TCP 1,
// PostgreSQL's SSLRequest 1, a TLS 1.3 handshake 1, or 2 after a
// HelloRetryRequest), TLS 1.3 as the wire shows it negotiated and a
// check that passed; a plain variant has no TLS phase and no TLS.
func TestStacksOnTheWire(t *testing.T) {
	labtest.Slow(t)
	needCapture(t)
	// The wire decoder's phases of each engine, TLS and plain.
	const pgTLS, tlsOnly = "tcp startup tls-handshake encrypted close", "tcp tls-handshake encrypted close"
	tests := []struct {
		engine, client string
		tls            bool // TLS 1.3 only: a JVM's first trial warms up 10 s (bench.jvmWarmup)
		tlsPhases      string
		plainPhases    string
	}{
		{"postgres", "psycopg", false, pgTLS, "tcp startup auth query close"},
		{"postgres", "pgjdbc", true, pgTLS, ""},
		{"mariadb", "pymysql", false, "tcp greeting tls-handshake encrypted close", "tcp greeting auth query close"},
		{"redis", "redis-py", false, tlsOnly, "tcp data close"},
		{"mongodb", "pymongo", false, tlsOnly, "tcp data close"},
		{"builtin", "curl", false, tlsOnly, "tcp request response close"},
	}
	servers := map[string]lab.Server{"builtin": srv}
	for _, tt := range tests {
		if servers[tt.engine] == nil {
			servers[tt.engine] = labtest.Start(t, tt.engine, lab.Options{Keys: []string{"ecdsa-p256"}})
		}
		t.Run(tt.client, func(t *testing.T) {
			tlsVersions := []string{"off", "1.3"}
			if tt.tls {
				tlsVersions = tlsVersions[1:]
			}
			raw := plan.Spec{Target: "lab:" + tt.engine, Experiments: []plan.Experiment{plan.Connect}, TLS: tlsVersions,
				Keys: []string{"ecdsa-p256"}, ClientStacks: []string{tt.client}, Count: 6, Duration: 20 * time.Second,
				Concurrency: []int{1}, Trials: 1, Tables: 1, Rows: 100, Warmup: new(time.Duration), Timeout: 20 * time.Second}
			switch tt.engine {
			case "builtin":
				raw.Target, raw.Tables, raw.Rows = plan.Builtin, 0, 0
			case "postgres", "mariadb":
				raw.QueryMode = "simple" // pymysql has no prepared statements
			}
			res := stackWireRun(t, raw, servers[tt.engine])
			if len(res.WireStacks) != len(tlsVersions) {
				t.Fatalf("the wire's negotiated of %d variants, want %d; notes %q", len(res.WireStacks), len(tlsVersions), res.Notes)
			}
			for _, tr := range res.Trials {
				var names []string
				rts := map[string]float64{}
				for _, c := range res.WireChecks {
					if c.Variant != tr.Variant {
						continue
					}
					names = append(names, c.Phase)
					rts[c.Phase] = c.WireRoundTrips
					// Every connection the stack reported, and no other
					// (not its warm-up's, not the check's).
					if c.Conns != tr.Conns || c.Client != tt.client || c.Tool != 0 || c.Split == nil {
						t.Errorf("%s %s: %d connections on the wire (the trial reported %d), client %q, tlsbench %.3f ms, split %v",
							tr.Variant, c.Phase, c.Conns, tr.Conns, c.Client, c.Tool, c.Split)
					}
				}
				w := res.WireStacks[slices.IndexFunc(res.WireStacks, func(w result.WireNegotiated) bool { return w.Variant == tr.Variant })]
				if w.Failed != "" || w.Conns != tr.Conns {
					t.Errorf("%s: %d connections, check %q", tr.Variant, w.Conns, w.Failed)
				}
				want := tt.plainPhases
				if strings.Contains(tr.Variant, "tls1.3") {
					want = tt.tlsPhases
					if w.TLS != w.Conns || w.Negotiated == nil || w.Negotiated.Version != "TLS 1.3" || w.ClientCert != "hidden" {
						t.Errorf("%s: %d of %d connections over TLS, negotiated %+v, client certificate %q", tr.Variant, w.TLS, w.Conns, w.Negotiated, w.ClientCert)
					}
					// A TLS 1.3 full handshake is one round trip, two
					// after a HelloRetryRequest.
					if hs := 1 + float64(w.HelloRetries)/float64(max(w.TLS, 1)); rts[netx.PhaseTLSHandshake] != hs {
						t.Errorf("%s: TLS handshake %.2f round trips, want %.2f (%d HelloRetryRequests of %d)", tr.Variant, rts[netx.PhaseTLSHandshake], hs, w.HelloRetries, w.TLS)
					}
					if tt.engine == "postgres" && rts["startup"] != 1 {
						t.Errorf("%s: SSLRequest %.2f round trips, want 1", tr.Variant, rts["startup"])
					}
				} else if w.TLS != 0 || w.Negotiated != nil {
					t.Errorf("%s: %d connections over TLS (%+v), want none", tr.Variant, w.TLS, w.Negotiated)
				}
				if got := strings.Join(names, " "); got != want {
					t.Errorf("%s: the wire's phases %q, want %q", tr.Variant, got, want)
				}
				if rts[netx.PhaseTCP] != 1 {
					t.Errorf("%s: tcp %.2f round trips, want 1", tr.Variant, rts[netx.PhaseTCP])
				}
			}
		})
	}
}

// stackWireRun runs raw on srv through the run pipeline with connect
// --wire's capture around it, as the cli does, and returns the result
// with the wire's checks.
func stackWireRun(t *testing.T, raw plan.Spec, srv lab.Server) *result.Result {
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
	defer st.Stop()
	locate := func(v plan.Variant) (string, error) {
		ep, err := st.Locate(v)
		return ep.Addr, err
	}
	wc, err := wire.StartSelfCheck(ctx, spec, locate)
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Remove()
	res := result.New()
	res.Spec = spec
	if err := bench.Execute(ctx, res, st, bench.Options{Dialer: &netx.Dialer{Sources: netx.LoopbackSources(4)}}); err != nil {
		if strings.Contains(err.Error(), "is not installed") && os.Getenv("CI") == "" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	if err := wc.Finish(res); err != nil {
		t.Fatal(err)
	}
	return res
}
