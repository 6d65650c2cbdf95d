package cli

import (
	"strings"
	"testing"
	"time"
)

// TestReplicateGaleraInterrupted: Ctrl-C while a Galera cluster restarts
// for a new group link stops all three nodes (their SST and rsync
// helpers too) and removes their directories and logs, exits 130 with
// one error line, and keeps the trial that finished.
func TestReplicateGaleraInterrupted(t *testing.T) {
	needServer(t, labBinaries["mariadb"])
	besideOthers(t)
	tmp, cwd := sharedTempDir(t), t.TempDir()
	run := startWatched(t, cwd, tmp, false, "replicate", "--lab", "galera", "--tls", "off,1.3", "--key", "ecdsa-p256",
		"-c", "2", "-d", "1s", "--warmup", "100ms", "--trials", "5", "-o", "out.json")
	run.waitProgress(t, "tls1.3 galera #1") // its restart begins
	time.Sleep(time.Second)
	r := interrupted(t, run, cwd, tmp)
	if len(r.Trials) < 1 || r.Trials[0].Replication == nil || len(r.Trials[0].Replication.NodeCPU) != 3 {
		t.Fatalf("%d trials; want the first, with 3 nodes' CPU", len(r.Trials))
	}
	if stderr := run.stderr(); !strings.Contains(stderr, "starting the lab cluster: 3 Galera nodes") {
		t.Errorf("no progress line says what starts:\n%s", stderr)
	}
}
