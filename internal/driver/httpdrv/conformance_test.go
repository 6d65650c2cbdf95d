package httpdrv

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/drivertest"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labexe"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// TestConformance runs the drivers' shared checks (drivertest.Conformance)
// against the built-in server, a child process as in a run, with an HTTPS
// endpoint a key: the request is one round trip, the response (the rest of
// the body) none, and after a Connection: close request the close phase,
// which waits for the server to close first, none; a reused connection
// (keep-alive) closes at once, timed as its close phase too. Go's server resumes TLS 1.2 and 1.3
// sessions and says nothing of a session's TLS.
func TestConformance(t *testing.T) {
	labtest.Slow(t)
	exe, err := labexe.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"rsa2048", "rsa4096", "rsa1024", "ecdsa-p256"}
	srv, err := lab.StartBuiltin(context.Background(), lab.BuiltinOptions{Keys: keys, ResponseSize: 1024, Exe: exe})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	const reuse = "reuse"
	drivertest.Conformance(t, drivertest.Engine{
		New: New,
		Config: func(t testing.TB, v plan.Variant, c drivertest.Case) driver.Config {
			cfg := driver.Config{Variant: v, Addr: srv.Endpoint(""), Host: "127.0.0.1", Path: "/", Dialer: &netx.Dialer{},
				Timeout: 10 * time.Second, Reuse: c.Option == reuse}
			if !v.Plain() {
				o := tlsx.ClientOptions{RootCAs: srv.RootCAs(), ServerName: "127.0.0.1", ALPN: []string{"http/1.1"}}
				if v.Resume {
					o.Sessions = tls.NewLRUClientSessionCache(8)
				}
				var err error
				if cfg.TLS, err = tlsx.ClientConfig(v, o); err != nil {
					t.Fatal(err)
				}
				cfg.Addr = srv.Endpoint(v.Key)
			}
			return cfg
		},
		Cases: []drivertest.Case{{Name: "close"}, {Name: "keep-alive", Option: reuse}},
		Phases: func(v plan.Variant, c drivertest.Case, handshake int) []drivertest.Trips {
			p := []drivertest.Trips{drivertest.Trip(netx.PhaseTCP, 1)}
			if !v.Plain() {
				p = append(p, drivertest.Trip(netx.PhaseTLSHandshake, handshake))
			}
			return append(p, drivertest.Trip(PhaseRequest, 1), drivertest.Trip(PhaseResponse, 0), drivertest.Trip(netx.PhaseClose, 0))
		},
		QueryPhase: PhaseRequest,
		Resumes:    true,
		Keys:       keys,
		// Three GETs on one connection, each the whole response.
		Workloads: []drivertest.Workload{{Case: drivertest.Case{Name: "get", Option: reuse}, MinBytes: 1024}},
	})
}
