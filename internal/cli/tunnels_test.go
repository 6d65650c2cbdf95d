package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/result"
)

// phaseRoundTrips lists a trial's phases as "name:min-max".
func phaseRoundTrips(tr result.Trial) string {
	var out []string
	for _, p := range tr.Phases {
		out = append(out, p.Name+":"+roundTripRange(p.RoundTrips))
	}
	return strings.Join(out, " ")
}

func roundTripRange(rt result.RoundTrips) string {
	if rt.Min == rt.Max {
		return strconv.Itoa(rt.Min)
	}
	return strconv.Itoa(rt.Min) + "-" + strconv.Itoa(rt.Max)
}

// TestTunnels runs the seed's tunnel table on lab MariaDB: plain, native
// TLS, an SSH tunnel and stunnel. A channel open is one round trip and
// replaces TCP's; the database protocol inside keeps its round trips; the
// server sees plaintext through both tunnels; the SSH connection's setup is
// recorded once, apart.
func TestTunnels(t *testing.T) {
	needServer(t, labBinaries["mariadb"])
	needServer(t, "/usr/sbin/sshd")
	needServer(t, "stunnel4")
	besideOthers(t)
	out := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := runProcess(t, "connect", "--lab", "mariadb", "--tls", "off,1.3", "--key", "ecdsa-p256",
		"--via", "direct,ssh:aes128-ctr,stunnel", "-n", "20", "--trials", "1", "--tables", "1", "--rows", "100", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"plain":              "tcp:1 greeting:1 auth:1 query:2 close:0",
		"tls1.3 ecdsa-p256":  "tcp:1 greeting:1 tls-handshake:1 auth:1 query:2 close:0",
		"ssh aes128-ctr":     "tunnel:1 greeting:0 auth:1 query:2 close:0",
		"stunnel ecdsa-p256": "tcp:1 greeting:1 auth:1 query:2 close:0",
	}
	if len(r.Trials) != len(want) {
		t.Fatalf("%d trials, want %d", len(r.Trials), len(want))
	}
	for _, tr := range r.Trials {
		if got := phaseRoundTrips(tr); got != want[tr.Variant] {
			t.Errorf("%s: phases [round trips] %s, want %s", tr.Variant, got, want[tr.Variant])
		}
		if tr.Ops != 20 || len(tr.Errors) > 0 {
			t.Errorf("%s: %d ops, errors %v", tr.Variant, tr.Ops, tr.Errors)
		}
	}
	for _, c := range r.Checks {
		encrypted := strings.HasPrefix(c.Variant, "tls")
		if c.Server == nil || c.Server.TLS != encrypted {
			t.Errorf("%s: the server says %+v", c.Variant, c.Server)
		}
	}
	if len(r.Tunnels) != 2 {
		t.Fatalf("tunnels %+v", r.Tunnels)
	}
	ssh := r.Tunnels[0]
	var setup []string
	for _, p := range ssh.Setup {
		setup = append(setup, p.Name)
		if p.Duration <= 0 {
			t.Errorf("ssh setup phase %s took %v", p.Name, p.Duration)
		}
	}
	if ssh.Label != "ssh aes128-ctr" || ssh.Cipher != "aes128-ctr" || ssh.MAC == "" || !strings.Contains(ssh.Server, "OpenSSH") ||
		strings.Join(setup, " ") != "tcp ssh-kex ssh-auth" || ssh.BytesReceived == 0 {
		t.Errorf("ssh tunnel %+v", ssh)
	}
	if st := r.Tunnels[1]; st.Label != "stunnel" || !strings.HasPrefix(st.Server, "stunnel ") {
		t.Errorf("stunnel %+v", st)
	}
	for _, s := range []string{"tunnels, each set up once per run", "ssh aes128-ctr", "stunnel ecdsa-p256"} {
		if !strings.Contains(stdout, s) {
			t.Errorf("the report lacks %q:\n%s", s, stdout)
		}
	}
}

// TestTunnelRTT times a channel open over an emulated 100 ms link: one
// round trip, whatever the turns on the shared SSH connection show. At
// 20 ms a loaded machine (stress-ng --cpu 4 beside other tests) added
// 11 ms to the median, past the bound of 1.5 RTT; at 100 ms the same
// delay stays far inside it, and two round trips far outside.
func TestTunnelRTT(t *testing.T) {
	needServer(t, labBinaries["postgres"])
	needServer(t, "/usr/sbin/sshd")
	out := filepath.Join(t.TempDir(), "r.json")
	const rtt = 100 * time.Millisecond
	code, _, stderr := runMain(t, "connect", "--lab", "postgres", "--tls", "off", "--auth", "trust", "--via", "ssh:aes256-ctr",
		"--rtt", rtt.String(), "-n", "5", "--trials", "1", "--tables", "1", "--rows", "100", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Trials) != 1 || len(r.Tunnels) != 1 || r.Tunnels[0].RTT != rtt {
		t.Fatalf("%d trials, tunnels %+v", len(r.Trials), r.Tunnels)
	}
	tunnel := r.Trials[0].Phases[0]
	if got := time.Duration(tunnel.Latency.P50 * float64(time.Millisecond)); tunnel.Name != "tunnel" || got < rtt*9/10 || got > rtt*3/2 {
		t.Errorf("%s phase: median %v, want about one RTT (%v)", tunnel.Name, got, rtt)
	}
	// The SSH connection's own setup paid the RTT too: tcp alone is one.
	if tcp := r.Tunnels[0].Setup[0]; tcp.Name != "tcp" || tcp.Duration < rtt*9/10 {
		t.Errorf("ssh setup %+v: tcp should take one RTT", r.Tunnels[0].Setup)
	}
}

// TestTunnelDiesMidRun kills the lab sshd (listener and connection
// process) during a run through it: a clear one-line error naming the
// tunnel, the finished trials kept, exit 1.
func TestTunnelDiesMidRun(t *testing.T) {
	needServer(t, labBinaries["postgres"])
	needServer(t, "/usr/sbin/sshd")
	besideOthers(t)
	tmp := sharedTempDir(t)
	// The listener is the sshd whose parent is no sshd of this run (a
	// connection's process starts as a fork of it, same command line).
	// Once it serves the tunnel, kill it with its children: each
	// connection's process calls setsid.
	sshd := func() []int {
		listener := rootOf(processesMentioning(filepath.Join(tmp, "tlsbench-sshd-")))
		children := descendants(listener)
		if listener == 0 || len(children) == 0 {
			return nil
		}
		return append(children, listener)
	}
	r := killMidRun(t, tmp, sshd, "SSH tunnel", "connect", "--lab", "postgres", "--tls", "off", "--auth", "trust", "--via", "ssh",
		"-d", "300ms", "--trials", "100", "--tables", "1", "--rows", "100")
	if strings.Count(r.Error, "SSH tunnel") != 1 {
		t.Errorf("the error should name the tunnel once: %q", r.Error)
	}
}

// rootOf returns the one of pids whose parent is none of them (a server
// whose children start as forks with its command line), 0 if none.
func rootOf(pids []string) int {
	for _, p := range pids {
		if !slices.Contains(pids, strconv.Itoa(parentOf(p))) {
			pid, _ := strconv.Atoi(p)
			return pid
		}
	}
	return 0
}

// parentOf returns a process's parent pid, 0 if unknown.
func parentOf(pid string) int {
	stat, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return 0
	}
	// pid (comm) state ppid ...: comm may hold spaces, so read after ")".
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// descendants lists the processes below pid.
func descendants(pid int) []int {
	parent := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if p, err := strconv.Atoi(e.Name()); err == nil {
			parent[p] = parentOf(e.Name())
		}
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// TestTunnelURL goes through an sshd named by URL, as a user's would be:
// its key file and known_hosts checked; a host key missing from
// known_hosts stops the run with one line naming the fix.
func TestTunnelURL(t *testing.T) {
	needServer(t, "/usr/sbin/sshd")
	sshd, err := lab.StartSSHD(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer sshd.Stop()
	out := filepath.Join(t.TempDir(), "r.json")
	via := sshd.URL() + "&cipher=aes256-ctr"
	code, _, stderr := runMain(t, "connect", "builtin", "--tls", "off", "--via", via, "-n", "5", "--trials", "1", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Tunnels) != 1 || r.Tunnels[0].Cipher != "aes256-ctr" || r.Tunnels[0].Addr != sshd.Addr() || r.Trials[0].Phases[0].Name != "tunnel" {
		t.Errorf("tunnels %+v, first phase %s", r.Tunnels, r.Trials[0].Phases[0].Name)
	}

	empty := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	unknown := strings.Replace(sshd.URL(), "known_hosts="+sshd.KnownHostsFile(), "known_hosts="+empty, 1)
	code, _, stderr = runMain(t, "connect", "builtin", "--tls", "off", "--via", unknown, "-n", "5", "--trials", "1", "-o", filepath.Join(t.TempDir(), "r.json"))
	if code != 1 || !strings.Contains(stderr, "is not in "+empty) || !strings.Contains(stderr, "--insecure") || len(errorLines(stderr)) != 1 {
		t.Errorf("an unknown host key: exit %d, stderr %q", code, stderr)
	}
}
