package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/result"
)

// TestKilledRunLeavesNoEmptyResult SIGKILLs a run that writes to a default
// name: it leaves no empty tlsbench-*.json for `report` to trip on, the
// next run sweeps its claim and writes its own result, and a run stopped
// with Ctrl-C still writes the trials it finished.
func TestKilledRunLeavesNoEmptyResult(t *testing.T) {
	labtest.Slow(t)
	dir, tmp := t.TempDir(), t.TempDir() // the runs' working directory, their TMPDIR
	start := func(args ...string) (*exec.Cmd, *bytes.Buffer) {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &stderr
	}
	long := []string{"connect", "builtin", "--tls", "off", "--key", "ecdsa-p256", "-d", "300ms", "--trials", "50"}
	results := func() []string {
		t.Helper()
		paths, _ := filepath.Glob(filepath.Join(dir, "tlsbench-*.json"))
		for _, p := range paths {
			if code, _, stderr := runMain(t, "report", p); code != 0 {
				t.Errorf("report %s: exit %d: %s", filepath.Base(p), code, stderr)
			}
		}
		return paths
	}
	claims := func() []string {
		paths, _ := filepath.Glob(filepath.Join(dir, ".tlsbench-*.claim"))
		return paths
	}

	killed, _ := start(long...)
	time.Sleep(3 * time.Second)
	killed.Process.Kill()
	killed.Wait()
	if got := results(); len(got) != 0 {
		t.Errorf("the killed run left %v", got)
	}
	if len(claims()) != 1 {
		t.Errorf("claims %v: want the killed run's", claims())
	}

	next, stderr := start("connect", "builtin", "--tls", "off", "--key", "ecdsa-p256", "-n", "5", "--trials", "1")
	if err := next.Wait(); err != nil {
		t.Fatalf("the next run: %v: %s", err, stderr)
	}
	if got := results(); len(got) != 1 {
		t.Errorf("after the next run: results %v, want its own", got)
	}
	if len(claims()) != 0 {
		t.Errorf("claims %v left after the next run", claims())
	}

	interrupted, stderr := start(long...)
	time.Sleep(3 * time.Second)
	interrupted.Process.Signal(syscall.SIGINT)
	interrupted.Wait()
	if code := interrupted.ProcessState.ExitCode(); code != 130 {
		t.Errorf("Ctrl-C: exit %d, want 130: %s", code, stderr)
	}
	got := results()
	if len(got) != 2 {
		t.Fatalf("after Ctrl-C: results %v, want 2", got)
	}
	for _, p := range got {
		if r, err := result.Read(p); err != nil || len(r.Trials) == 0 {
			t.Errorf("%s: %v", p, err)
		}
	}
	if len(claims()) != 0 {
		t.Errorf("claims %v left after Ctrl-C", claims())
	}
	if pids := processesMentioning(tmp); len(pids) > 0 {
		t.Errorf("server processes still running: %v", pids)
	}
}
