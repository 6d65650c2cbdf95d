package cli

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/result"
)

// TestLongRunBounded: a pool run's memory and result file do not grow
// with its operations: after 20,000 keep-alive requests and then 200,000
// (ten times as many) the process's peak RSS has grown by less than 8 MB
// and stays under 100 MB, and the result file (histograms, not samples)
// by less than double (a histogram gains buckets as the tail fills, a
// list of samples would grow tenfold). The full figure, 10 million operations, is in
// the closing note of issue 12.
func TestLongRunBounded(t *testing.T) {
	labtest.Slow(t)
	dir := t.TempDir()
	run := func(n int) (hwm int64, size int64) {
		out := filepath.Join(dir, strconv.Itoa(n)+".json")
		// The peak is the process's since it started, other tests' too
		// (one at 102 MB before this ran): give the memory back and
		// reset the peak to what is in use now (Linux 4.0+).
		debug.FreeOSMemory()
		if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
			t.Fatalf("resetting the peak RSS: %v", err)
		}
		code, _, stderr := runMain(t, "pool", "builtin", "--tls", "off", "-c", "4", "-n", strconv.Itoa(n),
			"--trials", "1", "--warmup", "0s", "-o", out)
		if code != 0 {
			t.Fatalf("-n %d: exit %d: %s", n, code, stderr)
		}
		r, err := result.Read(out)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Trials) != 1 || r.Trials[0].Ops != int64(n) {
			t.Fatalf("-n %d: %d trials, want 1 of %d operations", n, len(r.Trials), n)
		}
		fi, err := os.Stat(out)
		if err != nil {
			t.Fatal(err)
		}
		return peakRSS(t), fi.Size()
	}
	hwm1, size1 := run(20_000)
	hwm2, size2 := run(200_000)
	t.Logf("peak RSS %d kB after 20,000 requests, %d kB after 200,000; result %d and %d bytes", hwm1>>10, hwm2>>10, size1, size2)
	if hwm2-hwm1 > 8<<20 || hwm2 > 100<<20 {
		t.Errorf("peak RSS grew from %d to %d kB over ten times the operations: want under 8 MB more and 100 MB in all", hwm1>>10, hwm2>>10)
	}
	if size2 > size1*2 {
		t.Errorf("result file grew from %d to %d bytes with ten times the operations", size1, size2)
	}
}

// peakRSS is this process's VmHWM, bytes.
func peakRSS(t *testing.T) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}
