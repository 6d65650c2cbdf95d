package lab

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/host"
)

// TestPinnedServer: with PinClient, every thread of this process runs on
// the client CPUs and every thread of a server started afterwards (the
// built-in server, a Go process with a thread per P) on the server CPUs,
// from its first instruction; undone, servers start unpinned again.
func TestPinnedServer(t *testing.T) {
	slow(t)
	all := host.CPUs()
	if len(all) < 2 {
		t.Skipf("%d CPU: nothing to split", len(all))
	}
	client, servers := all[:1], all[1:]
	t.Cleanup(func() {
		if err := host.PinClient(all, nil); err != nil {
			t.Error(err)
		}
	})
	if err := host.PinClient(client, servers); err != nil {
		t.Fatal(err)
	}
	srv, err := StartBuiltin(context.Background(), BuiltinOptions{Keys: []string{"ecdsa-p256"}, ResponseSize: 16, Exe: tlsbenchExe})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	checkThreads(t, "tlsbench", "self", host.FormatCPUList(client))
	checkThreads(t, "the built-in server", strconv.Itoa(srv.proc.cmd.Process.Pid), host.FormatCPUList(servers))

	if err := host.PinClient(all, nil); err != nil {
		t.Fatal(err)
	}
	free, err := StartBuiltin(context.Background(), BuiltinOptions{Keys: []string{"ecdsa-p256"}, ResponseSize: 16, Exe: tlsbenchExe})
	if err != nil {
		t.Fatal(err)
	}
	defer free.Stop()
	checkThreads(t, "an unpinned server", strconv.Itoa(free.proc.cmd.Process.Pid), host.FormatCPUList(all))
}

// checkThreads checks every thread of /proc/PID has the CPU list want.
func checkThreads(t *testing.T, who, pid, want string) {
	t.Helper()
	tasks, err := filepath.Glob(filepath.Join("/proc", pid, "task", "*", "status"))
	if err != nil || len(tasks) == 0 {
		t.Fatalf("%s: no threads in /proc/%s (%v)", who, pid, err)
	}
	for _, st := range tasks {
		data, err := os.ReadFile(st)
		if err != nil {
			continue // the thread ended
		}
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok && strings.TrimSpace(v) != want {
				t.Errorf("%s: thread %s runs on CPUs %s, want %s", who, filepath.Base(filepath.Dir(st)), strings.TrimSpace(v), want)
			}
		}
	}
}
