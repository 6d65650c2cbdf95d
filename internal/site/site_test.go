package site

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/lab/labexe"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/plan"
)

func TestMain(m *testing.M) {
	if flag.Parse(); testing.Short() {
		os.Exit(m.Run()) // no built-in server: its tests skip
	}
	dir, err := os.MkdirTemp("", "tlsbench-sitetest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if builtinExe, err = labexe.Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func spec(t *testing.T, raw plan.Spec) plan.Spec {
	t.Helper()
	s, err := plan.New(raw)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func variant(t *testing.T, s plan.Spec, id string) plan.Variant {
	t.Helper()
	for _, v := range s.Variants() {
		if v.ID == id {
			return v
		}
	}
	t.Fatalf("no variant %q in %v", id, s.Variants())
	return plan.Variant{}
}

// TestBuiltin opens the built-in server as a run does: a listener per key,
// its CPU measured, alive until stopped, nothing to switch.
func TestBuiltin(t *testing.T) {
	labtest.Slow(t)
	ctx := context.Background()
	sp := spec(t, plan.Spec{Target: plan.Builtin, TLS: []string{"off", "1.3"}, Keys: []string{"rsa2048", "ecdsa-p256"}})
	s, err := Open(ctx, sp)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if s.Engine() != "builtin" || s.Target().Kind != "builtin" || s.Target().Server == nil || s.ClientTLS().RootCAs == nil {
		t.Errorf("engine %q, target %+v", s.Engine(), s.Target())
	}
	info := s.Target().Server
	for id, key := range map[string]string{"plain": "", "tls1.3 rsa2048": "rsa2048", "tls1.3 ecdsa-p256": "ecdsa-p256"} {
		v := variant(t, sp, id)
		if err := s.Before(ctx, v); err != nil {
			t.Errorf("Before %s: %v", id, err)
		}
		ep, err := s.Locate(v)
		if err != nil || ep.Addr != info.Endpoints[key] || ep.Host != "127.0.0.1" {
			t.Errorf("Locate %s: %+v, %v; want %s", id, ep, err, info.Endpoints[key])
		}
	}
	if _, err := s.CPU(); err != nil {
		t.Errorf("CPU: %v", err)
	}
	if err := s.Alive(); err != nil {
		t.Errorf("Alive: %v", err)
	}
	if len(s.Notes()) != 0 || s.Tunnels() != nil {
		t.Errorf("notes %q, tunnels %v", s.Notes(), s.Tunnels())
	}
	if err := s.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if err := s.Alive(); err == nil {
		t.Error("Alive after Stop is nil")
	}
}

// TestURL: a URL is reached as given; its server's CPU is not tlsbench's
// to measure; a bad --ca and an unusable --via URL are errors in the spec.
func TestURL(t *testing.T) {
	labtest.Slow(t)
	t.Setenv("HOME", t.TempDir()) // no ~/.ssh
	ctx := context.Background()
	sp := spec(t, plan.Spec{Target: "https://user:secret@127.0.0.1:1/x", Via: []string{"direct", "ssh://bob@127.0.0.1:2"}})
	s, err := Open(ctx, sp)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if !slices.Equal(s.ClientTLS().ALPN, []string{"http/1.1"}) {
		t.Errorf("ALPN %v", s.ClientTLS().ALPN)
	}
	if _, err := s.CPU(); !errors.Is(err, bench.ErrNoServerCPU) {
		t.Errorf("CPU of a URL target: %v, want ErrNoServerCPU", err)
	}
	var direct, tunnelled plan.Variant
	for _, v := range sp.Variants() {
		if v.Tunnel == "" {
			direct = v
		} else {
			tunnelled = v
		}
	}
	ep, err := s.Locate(direct)
	if err != nil || ep.Addr != "127.0.0.1:1" || ep.URL == nil || ep.URL.User.String() != "user:secret" {
		t.Errorf("Locate: %+v, %v", ep, err)
	}
	_, err = s.Locate(tunnelled)
	var pe *plan.Error
	if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), "via ssh://bob@127.0.0.1:2: no password and no key") {
		t.Errorf("a --via URL without a way to log in: %v", err)
	}

	_, err = Open(ctx, spec(t, plan.Spec{Target: "https://127.0.0.1:1/", CAFile: "/nonexistent/ca.pem"}))
	if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), "ca_file: ") {
		t.Errorf("a --ca that cannot be read: %v", err)
	}
}

// TestLabKeySwitch: a lab server presents one certificate at a time; Before
// switches it for a variant with another key, and a note says how, once.
func TestLabKeySwitch(t *testing.T) {
	labtest.Slow(t)
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed")
	}
	ctx := context.Background()
	sp := spec(t, plan.Spec{Target: "lab:redis", TLS: []string{"1.3"}, Keys: []string{"rsa2048", "ecdsa-p256"}})
	s, err := Open(ctx, sp)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if s.Target().Kind != "lab" || s.Engine() != "redis" {
		t.Errorf("target %+v, engine %s", s.Target(), s.Engine())
	}
	before := len(s.Notes())
	for _, id := range []string{"tls1.3 rsa2048", "tls1.3 ecdsa-p256", "tls1.3 rsa2048"} {
		if err := s.Before(ctx, variant(t, sp, id)); err != nil {
			t.Fatalf("Before %s: %v", id, err)
		}
	}
	notes := s.Notes()
	if len(notes) != before+1 || !strings.HasPrefix(notes[len(notes)-1], "server keys switched between variants: ") {
		t.Errorf("notes %q: want one key switch note", notes)
	}
	ep, err := s.Locate(variant(t, sp, "tls1.3 ecdsa-p256"))
	if err != nil || ep.URL == nil || ep.URL.Scheme != "rediss" {
		t.Errorf("Locate: %+v, %v", ep, err)
	}
	if err := s.Alive(); err != nil {
		t.Errorf("Alive: %v", err)
	}
}

// TestStartsServers asks the parsed target and routes: the built-in
// server, a lab server and every --via kind but direct and the user's own
// sshd start something of tlsbench's.
func TestStartsServers(t *testing.T) {
	for _, tt := range []struct {
		raw  plan.Spec
		want bool
	}{
		{plan.Spec{}, true}, // the built-in server
		{plan.Spec{Target: "https://127.0.0.1:8443/"}, false},
		{plan.Spec{Target: "https://127.0.0.1:8443/", Via: []string{"direct", "ssh://bench:pw@127.0.0.1:22"}}, false},
		{plan.Spec{Target: "https://127.0.0.1:8443/", Via: []string{"ssh"}}, true},
		{plan.Spec{Lab: "redis"}, true},
		{plan.Spec{Target: "lab:redis"}, true},
		{plan.Spec{Target: "postgres://127.0.0.1:5432/db"}, false},
	} {
		if got := StartsServers(spec(t, tt.raw)); got != tt.want {
			t.Errorf("StartsServers(%+v) = %v, want %v", tt.raw, got, tt.want)
		}
	}
}

// TestOpenNeedsNew: a spec plan.New did not make (one read from a result)
// has no parsed target to open.
func TestOpenNeedsNew(t *testing.T) {
	if s, err := Open(context.Background(), plan.Spec{Target: plan.Builtin}); !errors.Is(err, errNotNew) {
		if s != nil {
			s.Stop()
		}
		t.Errorf("Open of a Spec New did not make: %v, want errNotNew", err)
	}
}

// TestTunnelRoutes: each tunnelled variant reaches the built-in server
// through the tunnel of the route it records: an SSH connection per --via
// ssh entry through the lab's sshd, stunnel's service of its key.
func TestTunnelRoutes(t *testing.T) {
	labtest.Slow(t)
	for _, exe := range []string{"sshd", "stunnel4"} {
		if _, err := exec.LookPath(exe); err != nil {
			if _, err := exec.LookPath("/usr/sbin/" + exe); err != nil {
				t.Skipf("%s is not installed", exe)
			}
		}
	}
	ctx := context.Background()
	sp := spec(t, plan.Spec{TLS: []string{"off"}, Keys: []string{"rsa2048", "ecdsa-p256"}, Via: []string{"direct", "ssh", "ssh:aes128-ctr", "stunnel"}})
	s, err := Open(ctx, sp)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	plain, err := s.Locate(variant(t, sp, "plain"))
	if err != nil || plain.Via != nil {
		t.Fatalf("Locate plain: %+v, %v", plain, err)
	}
	tunnels := map[plan.RouteInfo]any{}
	for _, id := range []string{"ssh", "ssh aes128-ctr", "stunnel rsa2048", "stunnel ecdsa-p256"} {
		v := variant(t, sp, id)
		ep, err := s.Locate(v)
		if err != nil {
			t.Fatalf("Locate %s: %v", id, err)
		}
		switch v.Route.Kind {
		case plan.RouteSSH:
			if ep.Via == nil || ep.Addr != plain.Addr {
				t.Errorf("Locate %s: %+v, want the server's address through an SSH tunnel", id, ep)
			}
			tunnels[v.Route] = ep.Via
		case plan.RouteStunnel:
			if ep.Via != nil || ep.Addr == plain.Addr {
				t.Errorf("Locate %s: %+v, want stunnel's service", id, ep)
			}
		default:
			t.Errorf("variant %s records route %+v", id, v.Route)
		}
	}
	if len(tunnels) != 2 || tunnels[plan.RouteInfo{Kind: plan.RouteSSH}] == tunnels[plan.RouteInfo{Kind: plan.RouteSSH, Arg: "aes128-ctr"}] {
		t.Errorf("SSH tunnels %v: want one per --via entry", tunnels)
	}
	var labels []string
	for _, tu := range s.Tunnels() {
		labels = append(labels, tu.Label)
	}
	if !slices.Contains(labels, "ssh") || !slices.Contains(labels, "ssh aes128-ctr") || !slices.Contains(labels, "stunnel") {
		t.Errorf("tunnels %q", labels)
	}
	if err := s.Alive(); err != nil {
		t.Errorf("Alive: %v", err)
	}
	if _, err := s.CPU(); err != nil {
		t.Errorf("CPU: %v", err)
	}
}
