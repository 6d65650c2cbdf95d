package cli

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/result"
)

// TestDoubleInterrupt stops lab PostgreSQL runs as `timeout -s INT` and CI
// runners do: SIGINT to tlsbench, then (here 50 ms later) to its process
// group, so it gets two. Mid-trials, the run must still save the finished
// trials (never an empty or missing result); mid-fill, with nothing
// finished, it must leave no result and no claim on the default name.
// Either way: exit 130, one error line, the server stopped and its
// directory (keys, passfile) removed. (The second SIGINT used to end
// tlsbench at once, saving nothing and stopping nothing.)
func TestDoubleInterrupt(t *testing.T) {
	needServer(t, labBinaries["postgres"])
	besideOthers(t)
	for _, tt := range []struct {
		name, after string
		args        []string
		trials      bool
	}{
		{"mid-trials", "trial 3/", []string{"connect", "--lab", "postgres", "--tls", "off,1.3", "--key", "ecdsa-p256",
			"-d", "300ms", "--trials", "100", "--tables", "1", "--rows", "100"}, true},
		// 3 million rows take tens of seconds to load: long enough to
		// land the signals in the fill.
		{"mid-fill", "filling the server", []string{"pool", "--lab", "postgres", "--tls", "off", "--key", "ecdsa-p256",
			"-d", "300ms", "--tables", "1", "--rows", "3000000"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tmp, cwd := sharedTempDir(t), t.TempDir()
			// No -o: the default name, claimed in cwd; a group of its
			// own, as under timeout.
			run := startWatched(t, cwd, tmp, true, tt.args...)
			run.waitProgress(t, tt.after)
			time.Sleep(300 * time.Millisecond)
			pid := run.cmd.Process.Pid
			syscall.Kill(pid, syscall.SIGINT)
			time.Sleep(50 * time.Millisecond)
			syscall.Kill(-pid, syscall.SIGINT)
			code := run.wait(t, "the run did not stop")
			stderr := run.stderr()
			if code != exitInterrupted {
				t.Errorf("exit %d (%v), want 130; stderr:\n%s", code, run.cmd.ProcessState, stderr)
			}
			if lines := errorLines(stderr); len(lines) != 1 || lines[0] != "tlsbench: interrupted" {
				t.Errorf("want one error line, got %q", lines)
			}
			files, _ := filepath.Glob(filepath.Join(cwd, "*.json"))
			hidden, _ := filepath.Glob(filepath.Join(cwd, ".*"))
			switch {
			case tt.trials && len(files) != 1:
				t.Errorf("want one result file in %s, got %v", cwd, files)
			case tt.trials:
				r, err := result.Read(files[0])
				if err != nil {
					t.Fatalf("the result: %v", err)
				}
				if !r.Interrupted || len(r.Trials) < 2 {
					t.Errorf("interrupted %v with %d trials; want true and at least 2 (trial 3 had begun)", r.Interrupted, len(r.Trials))
				}
			case len(files) > 0:
				t.Errorf("nothing finished, yet result files: %v", files)
			}
			if len(hidden) > 0 {
				t.Errorf("a claim or temporary file is left behind: %v", hidden)
			}
			if left, _ := os.ReadDir(tmp); len(left) > 0 {
				t.Errorf("left behind in TMPDIR (keys, passfile): %v", left)
			}
			if pids := processesMentioning(tmp); len(pids) > 0 {
				t.Errorf("server processes still running: %v", pids)
			}
		})
	}
}
