package cli

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/result"
)

// TestHAProxy terminates TLS at HAProxy before the built-in server, the lab
// Redis and PostgreSQL 18 (direct TLS): through it, round trips are those
// of the direct connection, and the server itself sees plaintext.
func TestHAProxy(t *testing.T) {
	needServer(t, "/usr/sbin/haproxy")
	besideOthers(t)
	tests := []struct {
		name   string
		target []string
		need   string
		want   map[string]string
	}{
		{"builtin", []string{"builtin"}, "", map[string]string{
			"haproxy":                   "tcp:1 request:1 response:0 close:0",
			"haproxy tls1.3 ecdsa-p256": "tcp:1 tls-handshake:1 request:1 response:0 close:0",
		}},
		{"redis", []string{"--lab", "redis"}, labBinaries["redis"], map[string]string{
			"haproxy":                   "tcp:1 auth:1 query:1 close:0",
			"haproxy tls1.3 ecdsa-p256": "tcp:1 tls-handshake:1 auth:1 query:1 close:0",
		}},
		{"postgres 18 direct", []string{"--lab", "postgres:18", "--negotiation", "direct", "--tables", "1", "--rows", "100"}, pg18, map[string]string{
			"haproxy":                          "tcp:1 startup:1 auth:2 query:2 close:0",
			"haproxy tls1.3 ecdsa-p256 direct": "tcp:1 tls-handshake:1 auth:3 query:2 close:0",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.need != "" {
				needServer(t, tt.need)
			}
			out := filepath.Join(t.TempDir(), "r.json")
			args := append([]string{"connect"}, tt.target...)
			args = append(args, "--tls", "off,1.3", "--key", "ecdsa-p256", "--via", "haproxy", "-n", "20", "--trials", "1", "-o", out)
			code, _, stderr := runProcess(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			r, err := result.Read(out)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Trials) != len(tt.want) {
				t.Fatalf("%d trials, want %d", len(r.Trials), len(tt.want))
			}
			for _, tr := range r.Trials {
				if got := phaseRoundTrips(tr); got != tt.want[tr.Variant] {
					t.Errorf("%s: phases [round trips] %s, want %s", tr.Variant, got, tt.want[tr.Variant])
				}
				if tr.Ops != 20 || len(tr.Errors) > 0 || tr.ServerCPU <= 0 {
					t.Errorf("%s: %d ops, errors %v, server CPU %v", tr.Variant, tr.Ops, tr.Errors, tr.ServerCPU)
				}
			}
			for _, c := range r.Checks {
				if c.Server != nil && c.Server.TLS {
					t.Errorf("%s: the server says TLS behind HAProxy: %+v", c.Variant, c.Server)
				}
				if strings.Contains(c.Variant, "tls1.3") && (c.Client == nil || c.Client.Version != "TLS 1.3") {
					t.Errorf("%s: the client saw %+v", c.Variant, c.Client)
				}
			}
			if len(r.Tunnels) != 2 || !strings.HasPrefix(r.Tunnels[0].Server, "HAProxy 2.") {
				t.Errorf("tunnels %+v", r.Tunnels)
			}
		})
	}
}

// TestHAProxyDiesMidRun kills HAProxy during a run: one line naming it,
// the finished trials kept.
func TestHAProxyDiesMidRun(t *testing.T) {
	needServer(t, "/usr/sbin/haproxy")
	besideOthers(t)
	tmp := sharedTempDir(t)
	find := func() []int {
		var pids []int
		for _, p := range processesMentioning(filepath.Join(tmp, "tlsbench-haproxy-")) {
			if n, err := strconv.Atoi(p); err == nil {
				pids = append(pids, n)
			}
		}
		return pids
	}
	r := killMidRun(t, tmp, find, "haproxy", "connect", "builtin", "--tls", "1.3", "--via", "haproxy", "-d", "300ms", "--trials", "100")
	if !strings.Contains(r.Error, "haproxy") {
		t.Errorf("the error should name haproxy: %q", r.Error)
	}
}
