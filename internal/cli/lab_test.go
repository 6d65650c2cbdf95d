package cli

import (
	"bytes"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// needServer skips a test whose server binary is missing, except in CI,
// where a missing server is a failure; and under -short (labtest.Slow).
func needServer(t testing.TB, bin string) {
	t.Helper()
	labtest.Slow(t)
	if _, err := exec.LookPath(bin); err == nil {
		return
	}
	if _, err := os.Stat(bin); err == nil {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not installed: run scripts/install.sh", bin)
	}
	t.Skipf("%s is not installed: run scripts/install.sh", bin)
}

var labBinaries = map[string]string{
	"postgres": "/usr/lib/postgresql/15/bin/postgres",
	"mariadb":  "mariadbd",
	"redis":    "redis-server",
}

// TestLabRuns runs each engine's lab end to end through the command line:
// start, prepare, check (client and server agree), trials, result.
func TestLabRuns(t *testing.T) {
	besideOthers(t)
	tests := []struct {
		engine, workload string
		ops              int  // enough for the server's CPU to show in 10 ms ticks
		serverSays       bool // the engine reports the connection's TLS itself
	}{
		{"postgres", "read-only", 30, true},
		{"mariadb", "read-only", 30, true},
		{"redis", "get", 3000, true},
	}
	for _, tt := range tests {
		t.Run(tt.engine, func(t *testing.T) {
			needServer(t, labBinaries[tt.engine])
			out := filepath.Join(t.TempDir(), "r.json")
			code, stdout, stderr := runProcess(t, "pool", "--lab", tt.engine, "--tls", "off,1.3", "--key", "ecdsa-p256",
				"--workload", tt.workload, "-c", "1,2", "-n", strconv.Itoa(tt.ops), "--warmup", "0s", "--trials", "1", "--tables", "2", "--rows", "300", "-o", out)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			r, err := result.Read(out)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Trials) != 4 || r.Target.Server == nil || r.Target.Server.Version == "" {
				t.Fatalf("%d trials, server %+v", len(r.Trials), r.Target.Server)
			}
			var serverCPU time.Duration
			for _, tr := range r.Trials {
				serverCPU += tr.ServerCPU
				if tr.Ops != int64(tt.ops) || len(tr.Errors) > 0 {
					t.Errorf("%s c=%d: ops %d, errors %v %q", tr.Variant, tr.Concurrency, tr.Ops, tr.Errors, tr.ErrorSamples)
				}
				if tt.workload == "read-only" && tr.Queries != 16*tr.Ops {
					t.Errorf("%s: %d queries for %d read-only transactions", tr.Variant, tr.Queries, tr.Ops)
				}
			}
			// /proc counts CPU in 10 ms ticks: short trials may show none
			// each, but not all of them together.
			if serverCPU <= 0 {
				t.Errorf("no server CPU measured in %d trials", len(r.Trials))
			}
			if len(r.Checks) != 2 {
				t.Fatalf("checks %+v", r.Checks)
			}
			for _, c := range r.Checks {
				tls := strings.HasPrefix(c.Variant, "tls")
				if tt.serverSays && (c.Server == nil || c.Server.TLS != tls) {
					t.Errorf("%s: the server says %+v", c.Variant, c.Server)
				}
				if tls && (c.Client == nil || c.Client.Version != "TLS 1.3" || c.Client.PeerKey != "ECDSA-P256") {
					t.Errorf("%s: the client negotiated %+v", c.Variant, c.Client)
				}
			}
			if !strings.Contains(stdout, "server says") && tt.engine != "redis" {
				t.Errorf("the report does not show what the server says:\n%s", stdout)
			}
		})
	}
}

// TestServerKilledMidRun kills the lab PostgreSQL server during a run: the
// run must end with a clear error, keep the trials that finished, and exit 1.
func TestServerKilledMidRun(t *testing.T) {
	needServer(t, labBinaries["postgres"])
	besideOthers(t)
	tmp := sharedTempDir(t)
	// A backend starts as a fork of the postmaster, same command line:
	// the postmaster is the one whose parent is none of them.
	postmaster := func() []int {
		var pids []string
		for _, p := range processesMentioning(tmp) {
			cmdline, _ := os.ReadFile(filepath.Join("/proc", p, "cmdline"))
			if bytes.Contains(cmdline, []byte("postgres\x00-D")) {
				pids = append(pids, p)
			}
		}
		if pid := rootOf(pids); pid != 0 {
			return []int{pid}
		}
		return nil
	}
	killMidRun(t, tmp, postmaster, "", "connect", "--lab", "postgres", "--tls", "off,1.3", "--key", "ecdsa-p256",
		"-d", "300ms", "--trials", "100", "--tables", "1", "--rows", "100")
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		// A kept log of the failure is allowed; keys are not.
		for _, n := range names {
			if !strings.HasSuffix(n, ".log") {
				t.Errorf("left behind in TMPDIR: %v", names)
				break
			}
		}
	}
}

// sharedTempDir is a TMPDIR for a run whose lab PostgreSQL runs as the
// postgres user, which must be able to enter it.
func sharedTempDir(t *testing.T) string {
	t.Helper()
	tmp, err := os.MkdirTemp("", "tlsbench-killtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	os.Chmod(tmp, 0o755)
	return tmp
}

// killMidRun runs tlsbench with args and TMPDIR=tmp, waits until two
// trials have finished (its progress says the third begins), kills the
// server processes find names and checks that the run ends with exit 1,
// one error line naming the saved trials (and containing want), and the
// finished trials kept in the result, which it returns. It waits for the
// progress line, not for a time: a loaded machine may take half a minute
// to start a lab.
func killMidRun(t *testing.T, tmp string, find func() []int, want string, args ...string) *result.Result {
	t.Helper()
	out := filepath.Join(t.TempDir(), "r.json")
	run := startWatched(t, "", tmp, false, append(args, "-o", out)...)
	run.waitProgress(t, "trial 3/")
	pids := find()
	if len(pids) == 0 {
		t.Fatalf("found no server process to kill; stderr: %s", run.stderr())
	}
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	code := run.wait(t, "the run did not end after its server was killed")
	stderr := run.stderr()
	if code != 1 {
		t.Errorf("exit %d, want 1; stderr: %s", code, stderr)
	}
	if msg := errorLines(stderr); len(msg) != 1 || !strings.Contains(msg[0], "finished trials are in") || !strings.Contains(msg[0], want) {
		t.Errorf("stderr should have one clear error line naming the saved trials (and %q): %q", want, msg)
	}
	r, err := result.Read(out)
	if err != nil {
		t.Fatalf("no result after the server died: %v", err)
	}
	if len(r.Trials) < 2 || r.Error == "" {
		t.Errorf("%d trials kept, error %q; want the 2 finished before the kill and the error", len(r.Trials), r.Error)
	}
	return r
}

// watchedRun is tlsbench run as a subprocess (this test binary, see
// TestMain) whose stderr the test reads as it comes: its progress lines
// say when to signal it or kill its servers.
type watchedRun struct {
	cmd  *exec.Cmd
	out  syncBuffer
	done chan struct{} // closed once stderr is read to its end and the process reaped
}

// watchTimeout bounds each wait of a watched run: a lab's start, fill and
// checks, or its stop, on a loaded machine.
const watchTimeout = 3 * time.Minute

// startWatched starts tlsbench with args in dir ("" for the test's) with
// TMPDIR=tmp, in a process group of its own if group (as under timeout
// and CI runners). The process is killed and reaped when t ends.
func startWatched(t *testing.T, dir, tmp string, group bool, args ...string) *watchedRun {
	t.Helper()
	w := &watchedRun{cmd: exec.Command(os.Args[0], args...), done: make(chan struct{})}
	w.cmd.Dir = dir
	w.cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	w.cmd.Stderr = &w.out
	if group {
		w.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { w.cmd.Wait(); close(w.done) }()
	t.Cleanup(func() { w.cmd.Process.Kill(); <-w.done })
	return w
}

func (w *watchedRun) stderr() string { return w.out.String() }

// waitProgress returns once a progress line contains s; it fails t if
// the run ends first or watchTimeout passes.
func (w *watchedRun) waitProgress(t *testing.T, s string) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(watchTimeout)
	for {
		for _, l := range strings.Split(w.stderr(), "\n") {
			if strings.HasPrefix(l, progressPrefix) && strings.Contains(l, s) {
				return
			}
		}
		select {
		case <-tick.C:
		case <-w.done:
			t.Fatalf("the run ended (%v) before a progress line with %q; stderr:\n%s", w.cmd.ProcessState, s, w.stderr())
		case <-deadline:
			t.Fatalf("no progress line with %q in %v; stderr:\n%s", s, watchTimeout, w.stderr())
		}
	}
}

// wait waits for the run to end and returns its exit code; it fails t
// with msg after watchTimeout.
func (w *watchedRun) wait(t *testing.T, msg string) int {
	t.Helper()
	select {
	case <-w.done:
		return w.cmd.ProcessState.ExitCode()
	case <-time.After(watchTimeout):
		t.Fatalf("%s; stderr:\n%s", msg, w.stderr())
		return 0
	}
}

// errorLines drops from a run's stderr the lines naming the files it wrote
// and its progress lines.
func errorLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if !strings.HasPrefix(l, "result: ") && !strings.HasPrefix(l, "report: ") && !strings.HasPrefix(l, progressPrefix) {
			out = append(out, l)
		}
	}
	return out
}

// TestLabCommand starts `tlsbench lab redis`, reads the URL it prints (no
// password, a passfile instead), prepares data through it with `prepare`
// twice (idempotent), and stops the server with Ctrl-C.
func TestLabCommand(t *testing.T) {
	needServer(t, labBinaries["redis"])
	tmp := t.TempDir()
	cmd, out := startLab(t, tmp, "redis")
	defer cmd.Process.Kill()
	var plainURL string
	for _, f := range strings.Fields(out) {
		if strings.HasPrefix(f, "redis://") {
			plainURL = f
		}
	}
	u, err := url.Parse(plainURL)
	if plainURL == "" || err != nil || u.Query().Get("passfile") == "" {
		t.Fatalf("no plain URL with a passfile in:\n%s", out)
	}
	if _, has := u.User.Password(); has {
		t.Errorf("the printed URL holds the password: %s", plan.Redact(plainURL))
	}
	for i := range 2 {
		code, so, se := runMain(t, "prepare", plainURL, "--rows", "500")
		if code != 0 || !strings.Contains(so, "prepared") {
			t.Fatalf("prepare #%d: exit %d, %q %q", i+1, code, so, se)
		}
	}
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("lab after Ctrl-C: exit %d, want 130 as every interrupted command", code)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestSignalMidHandshake interrupts a lab PostgreSQL run whose four workers
// spend most of their time in RSA-4096 TLS handshakes (Ctrl-C, then
// SIGTERM) once two trials have finished: the run must stop with exit 130
// and one line, keep the finished trials, and stop the server with its
// keys and passfile removed. (A failed handshake used to panic in pgx's
// hook and lose all of it.)
func TestSignalMidHandshake(t *testing.T) {
	needServer(t, labBinaries["postgres"])
	besideOthers(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		tmp := sharedTempDir(t)
		out := filepath.Join(t.TempDir(), "r.json")
		run := startWatched(t, "", tmp, false, "connect", "--lab", "postgres", "--tls", "1.3", "--key", "rsa4096", "-c", "4",
			"-d", "300ms", "--trials", "100", "--tables", "1", "--rows", "100", "-o", out)
		// Trial 3 begins: two are kept, and the four workers are in
		// their first handshakes of the third.
		run.waitProgress(t, "trial 3/")
		run.cmd.Process.Signal(sig)
		code := run.wait(t, sig.String()+": the run did not stop")
		stderr := run.stderr()
		if code != 130 {
			t.Errorf("%v: exit %d, want 130; stderr: %s", sig, code, stderr)
		}
		if lines := errorLines(stderr); len(lines) != 1 || lines[0] != "tlsbench: interrupted" {
			t.Errorf("%v: stderr should be one line, got %q", sig, lines)
		}
		r, err := result.Read(out)
		if err != nil {
			t.Fatalf("%v: no result: %v", sig, err)
		}
		if !r.Interrupted || len(r.Trials) < 2 {
			t.Errorf("%v: interrupted %v with %d trials; want true and the 2 finished", sig, r.Interrupted, len(r.Trials))
		}
		if left, _ := os.ReadDir(tmp); len(left) > 0 {
			t.Errorf("%v: left behind in TMPDIR (keys, passfile): %v", sig, left)
		}
		if pids := processesMentioning(tmp); len(pids) > 0 {
			t.Errorf("%v: server processes still running: %v", sig, pids)
		}
	}
}

// TestMissingData runs, on the shared lab PostgreSQL and MariaDB with their
// 2 tables of 100 rows (sharedLab), workloads that read a third table, or 200 rows: the
// check before the trials finds every table the workload reads (not just
// the one its single query picks) and says to run prepare; exit 1, no trial.
func TestMissingData(t *testing.T) {
	labtest.Slow(t)
	for _, engine := range []string{"postgres", "mariadb"} {
		t.Run(engine, func(t *testing.T) {
			_, url := sharedLab(t, engine)
			for _, tt := range []struct {
				args []string
				want string
			}{
				// The check's own query may pick sbtest3 first: then the
				// server's message says so ("relation "sbtest3" does not
				// exist", "Table 'sbtest.sbtest3' doesn't exist").
				{[]string{"--tables", "3", "--rows", "100"}, "sbtest3"},
				{[]string{"--tables", "2", "--rows", "200"}, "sbtest1 holds ids up to 100, the workload reads ids up to 200"},
			} {
				out := filepath.Join(t.TempDir(), "r.json")
				args := append([]string{"pool", url, "--tls", "off", "-n", "10", "--trials", "1", "-o", out}, tt.args...)
				code, _, stderr := runMain(t, args...)
				if code != 1 || !strings.Contains(stderr, tt.want) || !strings.Contains(stderr, "exist") && tt.want == "sbtest3" || !strings.Contains(stderr, "run tlsbench prepare") {
					t.Errorf("%v: exit %d, %q; want 1 and %q with the prepare hint", tt.args, code, stderr, tt.want)
				}
				if _, err := os.Stat(out); err == nil {
					t.Errorf("%v: a result without trials was written", tt.args)
				}
			}
			if code, _, stderr := runMain(t, "pool", url, "--tls", "off", "-n", "10", "--trials", "1", "--tables", "2", "--rows", "100",
				"-o", filepath.Join(t.TempDir(), "r.json")); code != 0 {
				t.Errorf("the prepared data: exit %d: %s", code, stderr)
			}
		})
	}
}

// TestStaleLabSwept SIGKILLs `tlsbench lab redis` (as the OOM killer
// would): its lab dir with the server's keys and password stays behind, and
// the next run that starts a server removes it and says so.
func TestStaleLabSwept(t *testing.T) {
	needServer(t, labBinaries["redis"])
	tmp := t.TempDir()
	cmd, _ := startLab(t, tmp, "redis")
	cmd.Process.Kill()
	cmd.Wait()
	left, _ := filepath.Glob(filepath.Join(tmp, "tlsbench-redis-*"))
	if len(left) != 1 {
		t.Fatalf("after SIGKILL: lab dirs %v, want the one left behind", left)
	}
	out := filepath.Join(t.TempDir(), "r.json")
	c := exec.Command(os.Args[0], "connect", "builtin", "--tls", "off", "-n", "5", "--trials", "1", "-o", out)
	c.Env = append(os.Environ(), "TMPDIR="+tmp)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err := c.Run(); err != nil {
		t.Fatalf("the next run: %v: %s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "note: removed 1 lab directory") {
		t.Errorf("the next run does not say what it removed: %s", stderr.String())
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "tlsbench-redis-*")); len(left) > 0 {
		t.Errorf("still left behind: %v", left)
	}
	if pids := processesMentioning(tmp); len(pids) > 0 {
		t.Errorf("processes still running: %v", pids)
	}
}

// startLab starts `tlsbench lab ENGINE --key ecdsa-p256` with TMPDIR=tmp
// and returns once it has printed its URLs (what it printed).
func startLab(t *testing.T, tmp, engine string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "lab", engine, "--key", "ecdsa-p256")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var printed strings.Builder
	buf := make([]byte, 4096)
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(printed.String(), "Ctrl-C stops") && time.Now().Before(deadline); {
		n, err := stdout.Read(buf)
		printed.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return cmd, printed.String()
}

// TestSource runs against a PostgreSQL and a MariaDB that let clients in
// from 127.0.0.1 only, as Debian's stock pg_hba.conf and a user@'127.0.0.1'
// grant do: the kernel's source address (--source auto, the default for a
// URL) and --source 127.0.0.1 get in; --source spread is refused by the
// server, and the one error line says so and names --source.
func TestSource(t *testing.T) {
	labtest.Slow(t)
	for _, tt := range []struct{ engine, refusal string }{
		{"postgres", "no pg_hba.conf entry for host"},
		{"mariadb", "is not allowed to connect"},
	} {
		t.Run(tt.engine, func(t *testing.T) {
			_, url := sharedLab(t, tt.engine) // clients from 127.0.0.1 only
			run := func(source ...string) (int, string, *result.Result) {
				out := filepath.Join(t.TempDir(), "r.json")
				args := append([]string{"connect", url, "--tls", "off", "-n", "20", "--trials", "1", "--tables", "1", "--rows", "100", "-o", out}, source...)
				code, _, stderr := runMain(t, args...)
				r, _ := result.Read(out)
				return code, stderr, r
			}
			for _, tt := range []struct {
				source []string
				note   string
			}{{nil, "the kernel picks the source address"}, {[]string{"--source", "127.0.0.1"}, "every connection comes from 127.0.0.1"}} {
				code, stderr, r := run(tt.source...)
				if code != 0 || r == nil || !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, tt.note) }) {
					t.Errorf("%v: exit %d, %s; want 0 and the note %q", tt.source, code, stderr, tt.note)
				}
			}
			code, stderr, _ := run("--source", "spread")
			lines := errorLines(stderr)
			if code != 1 || len(lines) != 1 || !strings.Contains(lines[0], tt.refusal) || !strings.Contains(lines[0], "use --source auto") {
				t.Errorf("--source spread: exit %d, %q; want 1 and one line with the refusal and the fix", code, lines)
			}
		})
	}
}

// TestGroups compares key-exchange groups: on the built-in server each
// TLS 1.3 variant negotiates the group it offers in one round trip, and the
// post-quantum hybrid's ClientHello is over a kilobyte larger; on
// PostgreSQL 15, which accepts P-256 only, Go's default offer pays a
// HelloRetryRequest (2 round trips), --group p256 does not (1), and a lone
// x25519 is refused with one line naming --group.
func TestGroups(t *testing.T) {
	labtest.Slow(t) // the built-in server, then the shared lab PostgreSQL
	handshake := func(tr result.Trial) int {
		for _, p := range tr.Phases {
			if p.Name == "tls-handshake" {
				return p.RoundTrips.Max
			}
		}
		return -1
	}
	out := filepath.Join(t.TempDir(), "r.json")
	if code, _, stderr := runMain(t, "connect", "builtin", "--tls", "1.3", "--key", "ecdsa-p256", "--group", "x25519,x25519mlkem768", "-n", "10", "--trials", "1", "-o", out); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	hello := map[string]int{}
	for _, tr := range r.Trials {
		n := tr.Negotiated
		if n == nil || handshake(tr) != 1 || n.HelloRetry {
			t.Fatalf("%s: negotiated %+v in %d round trips", tr.Variant, n, handshake(tr))
		}
		hello[n.Group] = n.ClientHelloBytes
	}
	if len(hello) != 2 || hello["X25519"] < 100 || hello["X25519MLKEM768"] < hello["X25519"]+1000 {
		t.Errorf("ClientHello bytes by group %v: want X25519 and X25519MLKEM768, the hybrid over 1000 bytes larger", hello)
	}

	srv, url := sharedLab(t, "postgres")
	out = filepath.Join(t.TempDir(), "r.json")
	args := []string{"connect", url, "--ca", srv.CAFile(), "--tls", "1.3", "-n", "10", "--trials", "1", "--tables", "1", "--rows", "100"}
	if code, _, stderr := runMain(t, append(args, "--group", "p256", "-o", out)...); code != 0 {
		t.Fatalf("postgres --group p256: exit %d: %s", code, stderr)
	}
	if r, err = result.Read(out); err != nil {
		t.Fatal(err)
	}
	if n := r.Trials[0].Negotiated; n.Group != "P-256" || n.HelloRetry || handshake(r.Trials[0]) != 1 {
		t.Errorf("postgres --group p256: %+v in %d round trips, want P-256 in 1 without a HelloRetryRequest", n, handshake(r.Trials[0]))
	}
	if code, _, stderr := runMain(t, append(args, "-o", out)...); code != 0 {
		t.Fatalf("postgres: exit %d: %s", code, stderr)
	}
	if r, err = result.Read(out); err != nil {
		t.Fatal(err)
	}
	if n := r.Trials[0].Negotiated; !n.HelloRetry || handshake(r.Trials[0]) != 2 {
		t.Errorf("postgres, Go's default offer: %+v in %d round trips, want a HelloRetryRequest and 2", n, handshake(r.Trials[0]))
	}
	code, _, stderr := runMain(t, append(args, "--group", "x25519", "-o", out)...)
	if lines := errorLines(stderr); code != 1 || len(lines) != 1 || !strings.Contains(lines[0], "does not accept the key-exchange group x25519") || !strings.Contains(lines[0], "--group") {
		t.Errorf("postgres --group x25519: exit %d, %q", code, lines)
	}
}

// TestLabSSHDFirst: `tlsbench lab sshd` (the Commands table's example) starts
// sshd and prints its --via URL; its keys were once checked as if sshd were
// a database engine, which refused it.
func TestLabSSHDFirst(t *testing.T) {
	needServer(t, "/usr/sbin/sshd")
	tmp := t.TempDir()
	cmd, out := startLab(t, tmp, "sshd")
	defer cmd.Process.Kill()
	if !strings.Contains(out, "--via ssh://") {
		t.Fatalf("lab sshd printed no --via URL:\n%s", out)
	}
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("lab sshd after Ctrl-C: exit %d, want 130", code)
	}
}
