package httpdrv

import (
	"context"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labexe"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// TestKeepAliveAllocs: a keep-alive request to the built-in server (a
// child process: its allocations are not counted), plain and TLS 1.3,
// allocates nothing on the client but crypto/tls's own one (the reader
// it wraps the socket in for every record read, readFromUntil): the load
// generator's work per request stays off the garbage collector.
func TestKeepAliveAllocs(t *testing.T) {
	labtest.Slow(t)
	exe, err := labexe.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := lab.StartBuiltin(context.Background(), lab.BuiltinOptions{Keys: []string{"ecdsa-p256"}, ResponseSize: 1024, Exe: exe})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	for _, tc := range []struct {
		v   plan.Variant
		max float64
	}{{plan.Variant{TLS: "off"}, 0}, {plan.Variant{TLS: "1.3", Key: "ecdsa-p256"}, 1}} {
		v := tc.v
		t.Run(v.TLS, func(t *testing.T) {
			cfg := driver.Config{Variant: v, Addr: srv.Endpoint(""), Host: "127.0.0.1", Path: "/", Dialer: &netx.Dialer{},
				Timeout: 10 * time.Second, Reuse: true}
			if !v.Plain() {
				if cfg.TLS, err = tlsx.ClientConfig(v, tlsx.ClientOptions{RootCAs: srv.RootCAs(), ServerName: "127.0.0.1"}); err != nil {
					t.Fatal(err)
				}
				cfg.Addr = srv.Endpoint(v.Key)
			}
			d, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			s, err := d.Open(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var doErr error
			do := func() {
				if err := s.Do(ctx); err != nil && doErr == nil {
					doErr = err
				}
			}
			do() // the first request marks phases
			allocs := testing.AllocsPerRun(200, do)
			if doErr != nil {
				t.Fatal(doErr)
			}
			if allocs > tc.max {
				t.Errorf("%.1f allocations per keep-alive request, want at most %.0f", allocs, tc.max)
			}
		})
	}
}
