package site

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/host"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// events is what the stand-ins did, in order: "start stunnel", "stop
// haproxy", "stop server", "use-key ecdsa-p256".
type events struct {
	mu   sync.Mutex
	list []string
}

func (e *events) add(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, fmt.Sprintf(format, args...))
}

func (e *events) all() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.list)
}

// standInServer is a lab.Server that runs nothing: a plaintext port and a
// TLS port on loopback that nobody listens on, one key at a time.
type standInServer struct {
	engine string
	ev     *events
	dead   error // what Alive says
	key    string
}

const (
	standInPlain = "127.0.0.1:6001"
	standInTLS   = "127.0.0.1:6002"
	standInCPU   = 3 * time.Second
)

func (s *standInServer) Engine() string { return s.engine }

func (s *standInServer) URL(auth string, tls bool) (string, error) {
	scheme, addr := s.engine, standInPlain
	if tls {
		scheme, addr = map[string]string{"redis": "rediss"}[s.engine], standInTLS
		if scheme == "" {
			scheme = s.engine
		}
	}
	return fmt.Sprintf("%s://bench:secret@%s/db", scheme, addr), nil
}

func (s *standInServer) Auths() []string         { return []string{"password"} }
func (s *standInServer) PasswordFile() string    { return "" }
func (s *standInServer) CAFile() string          { return "" }
func (s *standInServer) RootCAs() *x509.CertPool { return x509.NewCertPool() }

func (s *standInServer) UseKey(_ context.Context, key string) (string, error) {
	s.ev.add("use-key %s", key)
	s.key = key
	return "swapped by the stand-in", nil
}

func (s *standInServer) CPU() (time.Duration, error) { return standInCPU, nil }
func (s *standInServer) Memory() (host.Memory, error) {
	return host.Memory{Bytes: 1 << 20, Kind: "pss"}, nil
}
func (s *standInServer) Alive() error { return s.dead }
func (s *standInServer) Info() result.Server {
	return result.Server{Software: "stand-in", Endpoints: map[string]string{"": standInPlain}}
}
func (s *standInServer) Notes() []string { return []string{"stand-in server note"} }
func (s *standInServer) Stop() error {
	s.ev.add("stop server")
	return nil
}

// standInMiddle is a middle of a --via kind that starts nothing: it sends
// every variant to its own address.
type standInMiddle struct {
	kind, addr string
	ev         *events
	vs         []string // the variants it was started for
	dead       error
}

func (m *standInMiddle) Route(v plan.Variant, ep bench.Endpoint) (bench.Endpoint, error) {
	return through(ep, m.addr, false), nil
}
func (m *standInMiddle) CPU() (time.Duration, error) { return time.Second, nil }
func (m *standInMiddle) Alive() error                { return m.dead }
func (m *standInMiddle) Results() []result.Tunnel {
	return []result.Tunnel{{Label: m.kind, Addr: m.addr}}
}
func (m *standInMiddle) Notes() []string { return []string{m.kind + " note"} }
func (m *standInMiddle) Stop() error {
	m.ev.add("stop %s", m.kind)
	return nil
}

// standInMiddles puts stand-ins in the place of every registered --via
// kind's starter for the test, and returns the middles they start by kind;
// a kind in fail fails to start.
func standInMiddles(t *testing.T, ev *events, fail ...string) map[string]*standInMiddle {
	t.Helper()
	saved := maps.Clone(middleStarters)
	t.Cleanup(func() { middleStarters = saved })
	started := map[string]*standInMiddle{}
	port := 7000
	for kind := range saved {
		port++
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		middleStarters[kind] = func(_ context.Context, _ *Site, via plan.Route, vs []plan.Variant) (middle, error) {
			if via.Kind != kind {
				return nil, fmt.Errorf("the %s starter was given --via %s", kind, via.Label())
			}
			if slices.Contains(fail, kind) {
				return nil, errors.New("stand-in failure")
			}
			ev.add("start %s", kind)
			m := &standInMiddle{kind: kind, addr: addr, ev: ev}
			for _, v := range vs {
				m.vs = append(m.vs, v.ID)
			}
			started[kind] = m
			return m, nil
		}
	}
	return started
}

// standInSite is the site of raw on a stand-in server, as Open makes it for
// a lab server it started (the server is the site's to stop).
func standInSite(t *testing.T, raw plan.Spec, ev *events) (*Site, plan.Spec, *standInServer) {
	t.Helper()
	sp := spec(t, raw)
	srv := &standInServer{engine: sp.ParsedTarget().Lab, ev: ev, key: sp.Keys[0]}
	s, err := Attach(context.Background(), sp, srv)
	if err != nil {
		t.Fatal(err)
	}
	s.owned = true
	t.Cleanup(func() { s.Stop() })
	return s, sp, srv
}

// TestStandInRoutes: on a stand-in lab server, a direct variant reaches
// the server's plaintext or TLS port, and the variants of each --via kind
// reach that kind's middle, which was started once, for exactly them.
func TestStandInRoutes(t *testing.T) {
	for _, tt := range []struct {
		lab, via string
		through  []string // the variants through the middle
	}{
		{"redis", "stunnel", []string{"stunnel rsa2048", "stunnel ecdsa-p256"}},
		{"postgres", "pgbouncer", []string{"pgbouncer", "pgbouncer tls1.3 rsa2048", "pgbouncer tls1.3 ecdsa-p256"}},
		{"redis", "haproxy", []string{"haproxy", "haproxy tls1.3 rsa2048", "haproxy tls1.3 ecdsa-p256"}},
		{"mariadb", "openssh", []string{"openssh"}},
		{"redis", "wireguard", []string{"wireguard"}},
	} {
		t.Run(tt.via, func(t *testing.T) {
			ev := &events{}
			started := standInMiddles(t, ev)
			s, sp, _ := standInSite(t, plan.Spec{Lab: tt.lab, TLS: []string{"off", "1.3"}, Keys: []string{"rsa2048", "ecdsa-p256"},
				Via: []string{"direct", tt.via}}, ev)
			m := started[tt.via]
			if len(started) != 1 || m == nil || !slices.Equal(m.vs, tt.through) {
				t.Fatalf("started %v; want the %s middle alone, for %q", slices.Collect(maps.Keys(started)), tt.via, tt.through)
			}
			for _, v := range sp.Variants() {
				ep, err := s.Locate(v)
				want := standInPlain
				switch {
				case v.Route.Kind == tt.via:
					want = m.addr
				case v.Route != (plan.RouteInfo{}):
					t.Errorf("variant %s records route %+v", v.ID, v.Route)
				case !v.Plain():
					want = standInTLS
				}
				if err != nil || ep.Addr != want || ep.URL == nil || ep.URL.Host != want {
					t.Errorf("Locate %s: %+v, %v; want %s", v.ID, ep, err, want)
				}
			}
			if tu := s.Tunnels(); len(tu) != 1 || tu[0].Label != tt.via || tu[0].Addr != m.addr {
				t.Errorf("tunnels %+v", tu)
			}
			if cpu, err := s.CPU(); err != nil || cpu != standInCPU+time.Second {
				t.Errorf("CPU %v, %v: want the server's and the middle's", cpu, err)
			}
		})
	}
}

// TestStandInStop: Stop stops the middles in the reverse of their start
// order, then the server it owns, and may be called again; a server the
// caller started (Attach) is left running.
func TestStandInStop(t *testing.T) {
	ev := &events{}
	standInMiddles(t, ev)
	s, _, _ := standInSite(t, plan.Spec{Lab: "redis", TLS: []string{"off", "1.3"}, Keys: []string{"rsa2048"},
		Via: []string{"direct", "wireguard", "stunnel", "haproxy"}}, ev)
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	want := []string{"start wireguard", "start stunnel", "start haproxy", "stop haproxy", "stop stunnel", "stop wireguard", "stop server"}
	if got := ev.all(); !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	if err := s.Stop(); err != nil {
		t.Errorf("Stop again: %v", err)
	}

	ev2 := &events{}
	standInMiddles(t, ev2)
	attached, err := Attach(context.Background(), spec(t, plan.Spec{Lab: "redis", Via: []string{"direct", "stunnel"}}), &standInServer{engine: "redis", ev: ev2})
	if err != nil {
		t.Fatal(err)
	}
	attached.Stop()
	if got := ev2.all(); !slices.Equal(got, []string{"start stunnel", "stop stunnel"}) {
		t.Errorf("Attach, then Stop: events %q, want the server left running", got)
	}
}

// TestStandInMiddleFails: a middle that cannot start stops those started
// before it, leaves the server to the caller, and names its --via entry.
func TestStandInMiddleFails(t *testing.T) {
	ev := &events{}
	standInMiddles(t, ev, "haproxy")
	sp := spec(t, plan.Spec{Lab: "redis", TLS: []string{"off", "1.3"}, Keys: []string{"rsa2048"}, Via: []string{"direct", "stunnel", "haproxy"}})
	_, err := Attach(context.Background(), sp, &standInServer{engine: "redis", ev: ev})
	if err == nil || !strings.Contains(err.Error(), "starting --via haproxy: stand-in failure") {
		t.Errorf("error %v, want one naming --via haproxy", err)
	}
	if got, want := ev.all(), []string{"start stunnel", "stop stunnel"}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}

// TestStandInNotes: the server's notes, then each middle's in --via order,
// then, once the server switched keys, one note on how; Before switches
// only when a variant's key differs from the one presented.
func TestStandInNotes(t *testing.T) {
	ev := &events{}
	standInMiddles(t, ev)
	s, sp, _ := standInSite(t, plan.Spec{Lab: "redis", TLS: []string{"off", "1.3"}, Keys: []string{"rsa2048", "ecdsa-p256"},
		Via: []string{"direct", "haproxy", "stunnel"}}, ev)
	want := []string{"stand-in server note", "haproxy note", "stunnel note"}
	if got := s.Notes(); !slices.Equal(got, want) {
		t.Errorf("notes %q, want %q", got, want)
	}
	for _, id := range []string{"plain", "tls1.3 rsa2048", "tls1.3 ecdsa-p256", "tls1.3 ecdsa-p256", "tls1.3 rsa2048", "plain"} {
		if err := s.Before(context.Background(), variant(t, sp, id)); err != nil {
			t.Fatalf("Before %s: %v", id, err)
		}
	}
	if got, want := ev.all(), []string{"start haproxy", "start stunnel", "use-key ecdsa-p256", "use-key rsa2048"}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	want = append(want, "server keys switched between variants: swapped by the stand-in")
	if got := s.Notes(); !slices.Equal(got, want) {
		t.Errorf("notes %q, want %q", got, want)
	}
}

// TestStandInAlive: Alive names what is gone, the server or a middle.
func TestStandInAlive(t *testing.T) {
	ev := &events{}
	started := standInMiddles(t, ev)
	s, _, srv := standInSite(t, plan.Spec{Lab: "redis", TLS: []string{"off"}, Via: []string{"direct", "stunnel"}}, ev)
	if err := s.Alive(); err != nil {
		t.Fatalf("Alive: %v", err)
	}
	started["stunnel"].dead = errors.New("stunnel exited")
	srv.dead = errors.New("redis-server exited")
	err := s.Alive()
	if err == nil || !strings.Contains(err.Error(), "stunnel exited") || !strings.Contains(err.Error(), "redis-server exited") {
		t.Errorf("Alive: %v, want both gone", err)
	}
}
