package drivertest

import (
	"context"
	"crypto/tls"
	"errors"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
)

// stallPhase is the phase a cancelled Open of v reports when the server
// stops answering after phase after: e.StallPhase, or the first phase
// after it that waits for the server.
func (e Engine) stallPhase(v plan.Variant, after string) string {
	if e.StallPhase != "" {
		return e.StallPhase
	}
	phases := e.Phases(v, e.Cases[0], e.handshake(v, false, false))
	i := slices.IndexFunc(phases, func(p Trips) bool { return p.Phase == after })
	for _, p := range phases[i+1:] {
		if p.RoundTrips > 0 {
			return p.Phase
		}
	}
	return "none"
}

// cancelSteps are where the cancel check stalls the server: from the
// start; from the end of the client's TLS handshake on (TLS 1.3: its
// Finished, after which it goes on as if answered); after Open.
var cancelSteps = []struct {
	name string
	v    plan.Variant
}{
	{"open", plan.Variant{TLS: "off"}},
	{"open", plan.Variant{TLS: "1.3"}},
	{"after-handshake", plan.Variant{TLS: "1.3"}},
	{"do", plan.Variant{TLS: "off"}},
	{"do", plan.Variant{TLS: "1.3"}},
}

func (e Engine) testCancel(t *testing.T) {
	e.useKey(t, e.Keys[0])
	for _, step := range cancelSteps {
		t.Run("tls-"+step.v.TLS+" "+step.name, func(t *testing.T) {
			cfg := e.config(t, step.v, e.Cases[0])
			p := NewProxy(t, cfg.Addr)
			cfg.Addr = p.Addr
			// Only the cancel can end the step in time; a driver that
			// missed it fails at its timeout.
			cfg.Timeout = 10 * prompt
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			// The cancel comes cancelAfter after the stall began: after
			// the handshake, however long a loaded machine takes for it.
			var stalled atomic.Int64
			arm := func() {
				stalled.Store(time.Now().UnixNano())
				time.AfterFunc(cancelAfter, cancel)
			}
			var want string
			switch step.name {
			case "open":
				want = e.stallPhase(step.v, netx.PhaseTCP)
				p.Stall()
			case "after-handshake":
				want = e.stallPhase(step.v, netx.PhaseTLSHandshake)
				cfg.TLS = cfg.TLS.Clone()
				check := cfg.TLS.VerifyConnection
				cfg.TLS.VerifyConnection = func(cs tls.ConnectionState) error {
					p.StallClient()
					arm()
					if check != nil {
						return check(cs)
					}
					return nil
				}
			case "do":
				want = e.QueryPhase
			}
			d := e.driver(t, cfg)
			var s driver.Session
			if step.name == "do" {
				var err error
				if s, err = e.open(ctx, d); err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				p.Stall()
			}
			if step.name != "after-handshake" {
				arm()
			}
			var err error
			if step.name == "do" {
				err = s.Do(ctx)
			} else if s, err = d.Open(ctx); err == nil {
				// A driver whose Open waits for nothing more (HTTP)
				// stalls in its first Do.
				err = s.Do(ctx)
				s.Close()
			}
			took := time.Since(time.Unix(0, stalled.Load()))
			if !errors.Is(err, context.Canceled) || driver.Kind(err) != want+": canceled" {
				t.Errorf("%v (%s), want a cancelled %s", err, driver.Kind(err), want)
			}
			if took > prompt {
				t.Errorf("the step returned %v after its stall began, the cancel came %v after it", took, cancelAfter)
			}
			t.Logf("%v after %v", err, took.Round(time.Millisecond))
		})
	}
}

func (e Engine) testWorkloads(t *testing.T) {
	if len(e.Workloads) == 0 {
		t.Skip("the engine has no workloads")
	}
	e.useKey(t, e.Keys[0])
	for _, w := range e.Workloads {
		t.Run(w.Name, func(t *testing.T) {
			d := e.driver(t, e.config(t, plan.Variant{TLS: "1.3"}, w.Case))
			if w.Statements != 0 {
				if c, ok := d.(driver.MultiStatement); !ok || c.Statements() != w.Statements {
					t.Errorf("the driver is a Counter: %v; want one of %d statements", ok, w.Statements)
				}
			}
			ctx := context.Background()
			s, err := e.open(ctx, d)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for i := range 3 {
				_, before := s.Conn().Counters()
				if err := s.Do(ctx); err != nil {
					t.Fatalf("operation %d: %v", i, err)
				}
				if _, after := s.Conn().Counters(); after-before < w.MinBytes {
					t.Errorf("operation %d received %d bytes, want at least %d", i, after-before, w.MinBytes)
				}
			}
		})
	}
	known := e.Workloads[0].Workload.Name
	if known == "" {
		return // the engine's one workload has no name
	}
	t.Run("unknown", func(t *testing.T) {
		c := e.Workloads[0].Case
		c.Workload.Name = "no-such-workload"
		if _, err := e.New(e.config(t, plan.Variant{TLS: "off"}, c)); err == nil || !strings.Contains(err.Error(), `"no-such-workload"`) || !strings.Contains(err.Error(), known) {
			t.Errorf("New: %v, want an error that names the unknown workload and the known ones (%s)", err, known)
		}
	})
}

func (e Engine) testLogin(t *testing.T) {
	l := e.Login
	if l == nil {
		t.Skip("the engine has no login")
	}
	e.useKey(t, e.Keys[0])
	for _, auth := range l.Auths {
		for _, v := range []plan.Variant{{TLS: "off"}, {TLS: "1.3"}} {
			t.Run(auth+" tls-"+v.TLS, func(t *testing.T) {
				c := e.Cases[0]
				c.Auth = auth
				cfg := e.config(t, v, c)
				password, _ := cfg.URL.User.Password()
				if password == "" {
					t.Fatal("the URL has no password")
				}
				wrong := *cfg.URL
				wrong.User = url.UserPassword(cfg.URL.User.Username(), password+"x")
				bad := cfg
				bad.URL = &wrong
				s, err := e.open(context.Background(), e.driver(t, bad))
				if err == nil {
					s.Close()
				}
				var oe *driver.OpError
				if !errors.As(err, &oe) || oe.Phase != l.Phase || !strings.Contains(err.Error(), l.Refused) {
					t.Errorf("a wrong password: %v, want a %s error with %q", err, l.Phase, l.Refused)
				}
				if err != nil && strings.Contains(err.Error(), password) {
					t.Errorf("the error shows the password: %v", err)
				}
				t.Log(err)

				// The password from a passfile= parameter.
				fromFile := *cfg.URL
				fromFile.User = url.User(cfg.URL.User.Username())
				q := fromFile.Query()
				q.Set("passfile", l.PasswordFile)
				fromFile.RawQuery = q.Encode()
				good := cfg
				good.URL = &fromFile
				e.connectOnce(t, e.driver(t, good))
			})
		}
	}
}
