package clientstack

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/lab/labtest"
)

// nodeCase is a lab server that one of the Node program's stacks serves.
type nodeCase struct {
	lab, engine string
	workload    string
	// resumes is what a resume=1 connection after another gets: "1" where
	// the server resumes, "0" where it never does (PostgreSQL), "refused"
	// where the stack has no way to (the MongoDB driver).
	resumes string
}

var nodeCases = []nodeCase{
	{"postgres", "postgres", "ping", "0"},
	{"mariadb", "mysql", "ping", "1"},
	{"redis", "redis", "get", "1"},
	{"mongodb", "mongodb", "ping", "refused"},
	{"builtin", "http", "request", "1"},
}

// TestNodeStacks runs clients/node/client.js through Start against real
// lab servers, for every stack it serves: plain and TLS 1.3 connect runs
// whose operations equal the sessions the server counted (and its TLS
// sessions, where it counts them), the version the program says it
// negotiated, and a pool run whose pool opened its concurrency's
// connections; then a wrong password, a closed port and a CA that signed
// nothing the server has, each failing in its phase; then resumption:
// none with resume=0, and with resume=1 what the server allows.
func TestNodeStacks(t *testing.T) {
	labtest.Slow(t)
	for _, nc := range nodeCases {
		t.Run(nc.lab, func(t *testing.T) {
			// Side by side: each engine's server counts its own
			// connections, and nothing here is timed.
			t.Parallel()
			srv := sharedLab(t, nc.engine)
			for _, tls := range []string{"off", "1.3"} {
				cfg := nodeConfig(t, srv, nc.workload, tls)
				c := startStack(t, cfg)
				checkConnect(t, c, srv, cfg, 12)
				checkPool(t, c, srv, cfg, Run{Experiment: "pool", Concurrency: 4, Duration: time.Second, Warmup: 200 * time.Millisecond})
			}
			for _, resume := range []bool{false, true} {
				cfg := nodeConfig(t, srv, nc.workload, "1.3")
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
			for _, tc := range failures(t) {
				cfg := nodeConfig(t, srv, nc.workload, "1.3")
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

// nodeConfig is l.config for the Node stack of l's engine, with workload
// and the query mode prepared.
func nodeConfig(t *testing.T, l *labServer, workload, tls string) Config {
	cfg := l.config(t, "node", tls)
	cfg.Workload, cfg.QueryMode = workload, "prepared"
	return cfg
}
