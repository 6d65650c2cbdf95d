package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/result"
)

// TestOpenSSH tunnels lab MariaDB through OpenSSH's own client (ssh -L)
// with the seed's aes256-cbc and with aes256-ctr: to the client a plain
// TCP connection to ssh's port, the server sees plaintext, the cipher is
// the one asked for, and the setup is timed once.
func TestOpenSSH(t *testing.T) {
	needServer(t, labBinaries["mariadb"])
	needServer(t, "/usr/sbin/sshd")
	needServer(t, "/usr/bin/ssh")
	besideOthers(t)
	out := filepath.Join(t.TempDir(), "r.json")
	code, _, stderr := runProcess(t, "connect", "--lab", "mariadb", "--tls", "off", "--via", "openssh:aes256-cbc,openssh:aes256-ctr",
		"-n", "10", "--trials", "1", "--tables", "1", "--rows", "100", "-o", out)
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
		if got, want := phaseRoundTrips(tr), "tcp:1 greeting:1 auth:1 query:2 close:0"; got != want {
			t.Errorf("%s: phases [round trips] %s, want %s", tr.Variant, got, want)
		}
		if tr.Ops != 10 || len(tr.Errors) > 0 {
			t.Errorf("%s: %d ops, errors %v", tr.Variant, tr.Ops, tr.Errors)
		}
	}
	for _, c := range r.Checks {
		if c.Server == nil || c.Server.TLS {
			t.Errorf("%s: the server says %+v", c.Variant, c.Server)
		}
	}
	if len(r.Tunnels) != 2 {
		t.Fatalf("tunnels %+v", r.Tunnels)
	}
	for i, cipher := range []string{"aes256-cbc", "aes256-ctr"} {
		tu := r.Tunnels[i]
		if tu.Label != "openssh "+cipher || tu.Cipher != cipher || tu.MAC == "" || tu.KeyExchange == "" ||
			len(tu.Setup) != 1 || tu.Setup[0].Duration <= 0 || !strings.Contains(tu.Server, "OpenSSH") {
			t.Errorf("tunnel %d: %+v", i, tu)
		}
	}
}

// TestOpenSSHDiesMidRun kills the ssh client during a run: one line
// naming it, the finished trials kept.
func TestOpenSSHDiesMidRun(t *testing.T) {
	needServer(t, labBinaries["postgres"])
	needServer(t, "/usr/sbin/sshd")
	needServer(t, "/usr/bin/ssh")
	besideOthers(t)
	tmp := sharedTempDir(t)
	find := func() []int {
		var pids []int
		for _, p := range processesMentioning(filepath.Join(tmp, "tlsbench-sshd-")) {
			if n, err := strconv.Atoi(p); err == nil && commandOf(p) == "/usr/bin/ssh" {
				pids = append(pids, n)
			}
		}
		return pids
	}
	r := killMidRun(t, tmp, find, "ssh -L", "connect", "--lab", "postgres", "--tls", "off", "--auth", "trust",
		"--via", "openssh", "-d", "300ms", "--trials", "100", "--tables", "1", "--rows", "100")
	if !strings.Contains(r.Error, "ssh -L") {
		t.Errorf("the error should name ssh -L: %q", r.Error)
	}
}

// commandOf is the executable a process runs ("/usr/bin/ssh"), "" if
// unknown.
func commandOf(pid string) string {
	exe, _ := os.Readlink(filepath.Join("/proc", pid, "exe"))
	return exe
}
