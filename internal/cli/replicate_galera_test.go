package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/result"
)

// TestReplicateGaleraInterrupted: Ctrl-C while a Galera cluster restarts
// for a new group link stops all three nodes (their SST and rsync
// helpers too) and removes their directories and logs, exits 130 with
// one error line, and keeps the trial that finished.
func TestReplicateGaleraInterrupted(t *testing.T) {
	needServer(t, labBinaries["mariadb"])
	tmp, cwd := sharedTempDir(t), t.TempDir()
	run := startWatched(t, cwd, tmp, false, "replicate", "--lab", "galera", "--tls", "off,1.3", "--key", "ecdsa-p256",
		"-c", "2", "-d", "1s", "--warmup", "100ms", "--trials", "5", "-o", "out.json")
	run.waitProgress(t, "tls1.3 galera #1") // its restart begins
	time.Sleep(time.Second)
	syscall.Kill(run.cmd.Process.Pid, syscall.SIGINT)
	code := run.wait(t, "the run did not stop")
	stderr := run.stderr()
	if code != exitInterrupted {
		t.Errorf("exit %d, want 130; stderr:\n%s", code, stderr)
	}
	if lines := errorLines(stderr); len(lines) != 1 || lines[0] != "tlsbench: interrupted" {
		t.Errorf("want one error line, got %q", lines)
	}
	r, err := result.Read(filepath.Join(cwd, "out.json"))
	if err != nil {
		t.Fatalf("the result: %v", err)
	}
	if !r.Interrupted || len(r.Trials) < 1 || r.Trials[0].Replication == nil || len(r.Trials[0].Replication.NodeCPU) != 3 {
		t.Fatalf("interrupted %v with %d trials; want true and the first, with 3 nodes' CPU", r.Interrupted, len(r.Trials))
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("left behind in TMPDIR (keys, data, logs): %v", left)
	}
	if pids := processesMentioning(tmp); len(pids) > 0 {
		t.Errorf("server processes still running: %v", pids)
	}
	if !strings.Contains(stderr, "starting the lab cluster: 3 Galera nodes") {
		t.Errorf("no progress line says what starts:\n%s", stderr)
	}
}
