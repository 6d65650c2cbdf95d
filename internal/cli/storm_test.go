package cli

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// TestStormTenThousand holds 10,000 connections to the built-in server at
// once, plain, and releases them: every client connects, the server's
// memory is read with all of them held, and the open-file limit was
// raised as far as needed (the default soft limit is often 1024).
func TestStormTenThousand(t *testing.T) {
	labtest.Slow(t)
	const clients = 10000
	out := filepath.Join(t.TempDir(), "r.json")
	start := time.Now()
	code, stdout, stderr := runMain(t, "storm", "builtin", "--clients", fmt.Sprint(clients), "--tls", "off", "--trials", "1",
		"--timeout", "50s", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if took := time.Since(start); took > 60*time.Second {
		t.Errorf("the storm of %d took %v, want under 60 s", clients, took)
	}
	r, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Trials) != 1 {
		t.Fatalf("%d trials, want 1", len(r.Trials))
	}
	tr := r.Trials[0]
	if tr.Experiment != plan.Storm || tr.Concurrency != clients || tr.Ops != clients || tr.Conns != clients || len(tr.Errors) > 0 ||
		tr.Storm == nil || tr.Storm.Connected != clients || tr.Storm.Clients != clients {
		t.Fatalf("%s c=%d: %d ops, %d conns, errors %v, storm %+v; want %d connected, no errors", tr.Experiment, tr.Concurrency, tr.Ops, tr.Conns, tr.Errors, tr.Storm, clients)
	}
	if m := tr.ServerMemory; m == nil || m.Conns != clients || m.HeldBytes <= m.IdleBytes {
		t.Errorf("server memory %+v: want it read with %d connections held, above idle", m, clients)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < clients {
		t.Errorf("RLIMIT_NOFILE soft limit %d (%v), want it raised to %d or more", lim.Cur, err, clients)
	}
	if !strings.Contains(stdout, "storm: 10000 clients at one instant") || !strings.Contains(stdout, "10000/10000") {
		t.Errorf("the report has no storm table of 10000/10000 clients:\n%s", stdout)
	}
}

// TestPoolTenThousand holds 10,000 persistent connections to the built-in
// server, plain, runs requests on them and releases them: every connection
// opens and the count is exact.
func TestPoolTenThousand(t *testing.T) {
	labtest.Slow(t)
	const conns, ops = 10000, 20000
	out := filepath.Join(t.TempDir(), "r.json")
	code, _, stderr := runMain(t, "pool", "builtin", "-c", fmt.Sprint(conns), "-n", fmt.Sprint(ops), "--tls", "off", "--warmup", "0s",
		"--trials", "1", "--timeout", "50s", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Trials) != 1 {
		t.Fatalf("%d trials, want 1", len(r.Trials))
	}
	tr := r.Trials[0]
	if tr.Concurrency != conns || tr.Ops != ops || len(tr.Errors) > 0 {
		t.Fatalf("pool c=%d: %d ops, errors %v; want c=%d, %d ops, no errors", tr.Concurrency, tr.Ops, tr.Errors, conns, ops)
	}
	if m := tr.ServerMemory; m == nil || m.Conns != conns || m.HeldBytes <= m.IdleBytes {
		t.Errorf("server memory %+v: want it read with %d connections held, above idle", m, conns)
	}
}

// TestStormBadInput: what a storm does not take is one line naming the
// flag and the fix, exit 2; a storm beyond the open-file hard limit names
// the limit and ulimit -n.
func TestStormBadInput(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Max+1 > plan.MaxStormClients {
		// A hard limit above the largest storm: lower it for the test
		// (root may raise it again).
		low := lim
		low.Max, low.Cur = 50000, min(lim.Cur, 50000)
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim) })
		lim = low
	}
	beyond := fmt.Sprint(lim.Max)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"storm", "builtin", "--clients", "0"}, "--clients: 0 is out of range: use 1 to 100000"},
		{[]string{"storm", "builtin", "--clients", "100001"}, "--clients: 100001 is out of range: use 1 to 100000"},
		{[]string{"storm", "builtin", "--clients", "5,5"}, "--clients: 5 is given twice"},
		{[]string{"storm", "builtin", "--clients", beyond}, fmt.Sprintf("--clients %s needs %d open files and this process may open %d (RLIMIT_NOFILE, hard limit): raise it, e.g. ulimit -n %d", beyond, lim.Max+256, lim.Max, lim.Max+256)},
		{[]string{"pool", "builtin", "-c", beyond}, fmt.Sprintf("--concurrency %s needs %d open files and this process may open %d (RLIMIT_NOFILE, hard limit): raise it, e.g. ulimit -n %d", beyond, lim.Max+256, lim.Max, lim.Max+256)},
		{[]string{"pool", "builtin", "-c", "100001"}, "--concurrency: 100001 is out of range: use 1 to 100000"},
		{[]string{"storm", "builtin", "-c", "4"}, "storm: --concurrency does not apply: every client connects once; give --clients N"},
		{[]string{"connect", "builtin", "--clients", "4"}, "unknown flag: --clients"},
		{[]string{"storm"}, "storm takes one TARGET"},
	} {
		code, _, stderr := runMain(t, tt.args...)
		if lines := errorLines(stderr); code != 2 || len(lines) != 1 || !strings.Contains(lines[0], tt.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 and one line with %q", tt.args, code, stderr, tt.want)
		}
	}
}
