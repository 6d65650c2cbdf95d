package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tlsbench/tlsbench/internal/result"
)

// TestReplicateInterrupted: Ctrl-C in the middle of a replicate run
// stops both nodes and removes their directories (keys, passfiles),
// exits 130 with one error line, and keeps the trials that finished, each
// with its replication figures and the link the primary showed.
func TestReplicateInterrupted(t *testing.T) {
	needServer(t, labBinaries["postgres"])
	besideOthers(t)
	tmp, cwd := sharedTempDir(t), t.TempDir()
	run := startWatched(t, cwd, tmp, false, "replicate", "--tls", "off,1.3", "--key", "ecdsa-p256",
		"-c", "2", "-d", "1s", "--warmup", "100ms", "--trials", "20", "-o", "out.json")
	run.waitProgress(t, "tls1.3 async #2")
	r := interrupted(t, run, cwd, tmp)
	if len(r.Trials) < 3 || r.Replicate == nil {
		t.Fatalf("%d trials; want at least 3", len(r.Trials))
	}
	for _, tr := range r.Trials {
		if tr.Replication == nil || tr.Replication.LinkEncrypted != strings.HasPrefix(tr.Variant, "tls") {
			t.Errorf("trial %s: replication %+v", tr.Variant, tr.Replication)
		}
	}
}

// interrupted sends Ctrl-C to a replicate run writing out.json in cwd
// with TMPDIR tmp, checks that it exits 130 with one error line, leaving
// nothing in tmp and no server running, and returns the result it saved,
// marked interrupted.
func interrupted(t *testing.T, run *watchedRun, cwd, tmp string) *result.Result {
	t.Helper()
	syscall.Kill(run.cmd.Process.Pid, syscall.SIGINT)
	code := run.wait(t, "the run did not stop")
	stderr := run.stderr()
	if code != exitInterrupted {
		t.Errorf("exit %d, want 130; stderr:\n%s", code, stderr)
	}
	if lines := errorLines(stderr); len(lines) != 1 || lines[0] != "tlsbench: interrupted" {
		t.Errorf("want one error line, got %q", lines)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("left behind in TMPDIR (keys, passfiles, data, logs): %v", left)
	}
	if pids := processesMentioning(tmp); len(pids) > 0 {
		t.Errorf("server processes still running: %v", pids)
	}
	r, err := result.Read(filepath.Join(cwd, "out.json"))
	if err != nil {
		t.Fatalf("the result: %v", err)
	}
	if !r.Interrupted {
		t.Errorf("the result is not marked interrupted")
	}
	return r
}

// TestReplicateBadInput: what replicate refuses, in one line that says
// what to do, before anything starts.
func TestReplicateBadInput(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"replicate", "postgres://u@127.0.0.1/db"}, "--replica: give the replica's URL (--replica postgres://...) beside the primary's"},
		{[]string{"replicate", "postgres://u@127.0.0.1/db", "--replica", "postgres://u@127.0.0.2/db", "--tls", "1.3"}, "--tls changes a lab cluster's link: your own cluster is measured as it is"},
		{[]string{"replicate", "redis://u@127.0.0.1/0", "--replica", "redis://u@127.0.0.2/0"}, "your own cluster is measured on PostgreSQL only so far"},
		{[]string{"replicate", "a", "b"}, "replicate takes one URL, the primary's"},
		{[]string{"replicate", "--lab", "mysql"}, `lab: no lab cluster of "mysql": use postgres, redis, mariadb, galera`},
		{[]string{"replicate", "--lab", "galera", "--sync", "on"}, "a Galera cluster commits one way"},
		{[]string{"replicate", "--lab", "mariadb", "--resync"}, "no MariaDB resync figure"},
		{[]string{"replicate", "--lab", "redis", "--sync", "on"}, "Redis replicates asynchronously only"},
		{[]string{"replicate", "--sync", "sometimes"}, `"sometimes" is no commit mode: use off (asynchronous), on or remote_apply`},
		{[]string{"replicate", "--heartbeat", "1ms", "--lag-poll", "5ms"}, "--lag-poll"},
		{[]string{"replicate", "--lag-slo", "2s"}, "--lag-slo is the bound of a write-rate search: give --rate auto or a range such as 100..5000"},
		{[]string{"replicate", "--rate", "auto", "--slo", "1s"}, "--slo bounds a synchronous commit's p99: add --sync on or remote_apply, or drop it"},
		{[]string{"replicate", "--rate", "fast"}, `"fast": give arrivals per second`},
		{[]string{"replicate", "--rate", "500..100"}, "a search range goes up from above 0"},
		{[]string{"replicate", "-c", "4,1,4"}, "-c/--concurrency: 4 is given twice"},
	} {
		code, _, stderr := runMain(t, tt.args...)
		if code == 0 || !strings.Contains(stderr, tt.want) || len(errorLines(stderr)) != 1 {
			t.Errorf("%v: exit %d, stderr %q; want one line with %q", tt.args, code, stderr, tt.want)
		}
	}
}
