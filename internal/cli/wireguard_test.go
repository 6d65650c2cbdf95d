package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/result"
)

// TestWireGuard reaches the lab PostgreSQL and MariaDB through wireguard-go
// between a network namespace and the server's: the protocol's own round
// trips as plain, the server sees plaintext, the tunnel's setup is timed,
// and nothing of it is left after the run.
func TestWireGuard(t *testing.T) {
	needServer(t, "/usr/bin/wireguard-go")
	needServer(t, "/usr/bin/wg")
	for _, tt := range []struct{ engine, want string }{
		{"postgres", "tcp:1 startup:1 auth:2 query:2 close:0"},
		{"mariadb", "tcp:1 greeting:1 auth:1 query:2 close:0"},
	} {
		t.Run(tt.engine, func(t *testing.T) {
			needServer(t, labBinaries[tt.engine])
			out := filepath.Join(t.TempDir(), "r.json")
			code, _, stderr := runMain(t, "connect", "--lab", tt.engine, "--tls", "off", "--via", "direct,wireguard",
				"-n", "20", "--trials", "1", "--tables", "1", "--rows", "100", "-o", out)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			r, err := result.Read(out)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Trials) != 2 {
				t.Fatalf("%d trials, want 2", len(r.Trials))
			}
			for _, tr := range r.Trials {
				if got := phaseRoundTrips(tr); got != tt.want {
					t.Errorf("%s: phases [round trips] %s, want %s", tr.Variant, got, tt.want)
				}
				if tr.Ops != 20 || len(tr.Errors) > 0 {
					t.Errorf("%s: %d ops, errors %v", tr.Variant, tr.Ops, tr.Errors)
				}
			}
			for _, c := range r.Checks {
				if c.Server == nil || c.Server.TLS {
					t.Errorf("%s: the server says %+v", c.Variant, c.Server)
				}
				if c.Variant == "wireguard" && !strings.HasPrefix(c.Remote, "10.213.") {
					t.Errorf("wireguard: connected to %s, not the server's tunnel address", c.Remote)
				}
			}
			if len(r.Tunnels) != 1 || len(r.Tunnels[0].Setup) != 3 || !strings.HasPrefix(r.Tunnels[0].Server, "wireguard-go ") {
				t.Errorf("tunnels %+v", r.Tunnels)
			}
			ns, _ := exec.Command("ip", "netns", "list").Output()
			if strings.Contains(string(ns), "tlsbench-wg-"+strconv.Itoa(os.Getpid())) {
				t.Errorf("a namespace of this run is left: %s", ns)
			}
		})
	}
}

// TestWireGuardDiesMidRun kills the server side's wireguard-go during a
// run: one line naming it, the finished trials kept, the namespace gone.
func TestWireGuardDiesMidRun(t *testing.T) {
	needServer(t, labBinaries["postgres"])
	needServer(t, "/usr/bin/wireguard-go")
	besideOthers(t)
	tmp := sharedTempDir(t)
	find := func() []int {
		// Not before the server runs: the tunnel comes first, and a kill
		// during initdb would test the start, not a death mid-run.
		if !slices.ContainsFunc(processesMentioning(tmp), func(p string) bool { return commandOf(p) == labBinaries["postgres"] }) {
			return nil
		}
		var pids []int
		for _, p := range processesMentioning("tbwgs") {
			if n, err := strconv.Atoi(p); err == nil && commandOf(p) == "/usr/bin/wireguard-go" && inLabDir(p, tmp) {
				pids = append(pids, n)
			}
		}
		return pids
	}
	r := killMidRun(t, tmp, find, "wireguard-go", "connect", "--lab", "postgres", "--tls", "off", "--auth", "trust",
		"--via", "wireguard", "-d", "300ms", "--trials", "100", "--tables", "1", "--rows", "100", "--timeout", "3s")
	if !strings.Contains(r.Error, "wireguard-go") {
		t.Errorf("the error should name wireguard-go: %q", r.Error)
	}
}

// inLabDir reports whether a process runs in a lab dir under tmp.
func inLabDir(pid, tmp string) bool {
	cwd, _ := os.Readlink(filepath.Join("/proc", pid, "cwd"))
	return strings.HasPrefix(cwd, tmp)
}
