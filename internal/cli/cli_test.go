package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/result"
)

// The test binary doubles as tlsbench: with TLSBENCH_AS_MAIN set it runs
// Main, so the built-in server a run starts (os.Executable() serve ...) and
// the subprocesses of these tests run the real command line.
func TestMain(m *testing.M) {
	if os.Getenv("TLSBENCH_AS_MAIN") != "" {
		if n, err := strconv.Atoi(os.Getenv("TLSBENCH_TEST_PANIC_AT")); err == nil {
			panicAt(int64(n))
		}
		code := Main(os.Args[1:], os.Stdout, os.Stderr)
		if f := os.Getenv("TLSBENCH_TEST_PEAK_FILE"); f != "" {
			writePeakRSS(f)
		}
		os.Exit(code)
	}
	os.Setenv("TLSBENCH_AS_MAIN", "1")
	code := m.Run()
	atExit.Lock()
	for _, f := range slices.Backward(atExit.fns) {
		f()
	}
	atExit.Unlock()
	os.Exit(code)
}

// atExit holds what TestMain does after the tests: stop what they shared.
var atExit struct {
	sync.Mutex
	fns []func()
}

// onExit has TestMain call f after the tests, the last registered first.
func onExit(f func()) {
	atExit.Lock()
	defer atExit.Unlock()
	atExit.fns = append(atExit.fns, f)
}

// besideOthers runs t beside the package's other tests that call it, after
// the rest: t runs tlsbench only as processes of its own (never Main in
// this process, whose runs set its GOMAXPROCS and collector per trial),
// with TMPDIRs and files of its own, and times nothing another run beside
// it could push past a bound a loaded machine meets. Most of such a
// test's time is waiting (a lab's start, a timeout, a run to notice a
// kill), which the one beside it fills.
func besideOthers(t *testing.T) {
	t.Helper()
	t.Parallel()
}

func runMain(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

// runProcess is runMain in a process of its own (this test binary as
// tlsbench, see TestMain), for the tests that run besideOthers. args are
// on its command line, which every process may read: no password (a
// --lab run has none; a URL's goes in a passfile). A run still going
// after processTimeout gets Ctrl-C, so that it stops its servers.
func runProcess(tb testing.TB, args ...string) (code int, stdout, stderr string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), processTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGINT) }
	cmd.WaitDelay = 30 * time.Second
	if err := cmd.Run(); err != nil && cmd.ProcessState == nil {
		tb.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// processTimeout bounds a runProcess run: far above what any of them
// takes on a loaded machine, below the package's timeout.
const processTimeout = 10 * time.Minute

// startServer starts a real built-in server for a test; under -short it
// skips the test (labtest.Slow).
func startServer(t *testing.T, o lab.BuiltinOptions) *lab.Builtin {
	t.Helper()
	labtest.Slow(t)
	s, err := lab.StartBuiltin(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	return s
}

func TestBadInput(t *testing.T) {
	srv := startServer(t, lab.BuiltinOptions{Keys: []string{"ecdsa-p256"}, ResponseSize: 16})
	only12 := startServer(t, lab.BuiltinOptions{Keys: []string{"ecdsa-p256"}, ResponseSize: 16, MaxTLS: "1.2"})
	https := "https://127.0.0.1" + port(srv.Endpoint("ecdsa-p256")) + "/"
	short := []string{"--trials", "1", "-n", "5"}
	notResult := filepath.Join(t.TempDir(), "x.json")
	os.WriteFile(notResult, []byte(`{"hello":1}`), 0o644)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown scheme", []string{"connect", "ftp://127.0.0.1/"}, 2, `unsupported target scheme "ftp": use http://, https://, postgres://`},
		{"not a URL", []string{"pool", "127.0.0.1:80"}, 2, "is not a URL"},
		{"no target", []string{"connect"}, 2, "connect takes one TARGET"},
		{"unreachable", append([]string{"connect", "http://127.0.0.1:1/"}, short...), 1, "cannot connect to 127.0.0.1:1: connection refused"},
		{"bad tls", []string{"connect", "builtin", "--tls", "1.4"}, 2, `--tls: unknown mode "1.4"`},
		{"bad key", []string{"connect", "builtin", "--key", "rsa512"}, 2, `--key: unknown key type "rsa512"`},
		{"bad concurrency", []string{"pool", "builtin", "-c", "0"}, 2, "-c/--concurrency: 0 is out of range"},
		{"not a number", []string{"pool", "builtin", "-c", "x"}, 2, `invalid argument "x"`},
		{"bad resume", []string{"connect", "builtin", "--resume", "maybe"}, 2, `--resume: "maybe" is not off or on`},
		{"bad cipher", []string{"connect", "builtin", "--tls", "1.2", "--cipher", "RC5"}, 2, `--cipher: unknown TLS 1.2 cipher suite "RC5"`},
		{"direct on postgres 15", []string{"connect", "--lab", "postgres", "--tls", "1.3", "--negotiation", "direct"}, 2, "--negotiation direct needs PostgreSQL 17 or later: lab postgres is PostgreSQL the distribution's (15 on Debian 12), which takes TLS only after an SSLRequest: use --lab postgres:18"},
		{"direct on mariadb", []string{"connect", "--lab", "mariadb", "--negotiation", "direct"}, 2, "--negotiation is how a PostgreSQL client starts TLS: it applies to postgres targets only"},
		{"direct without tls", []string{"connect", "--lab", "postgres:18", "--tls", "off", "--negotiation", "direct"}, 2, "--negotiation direct starts TLS: add 1.2, 1.3 or auto to --tls"},
		{"bad negotiation", []string{"connect", "--lab", "postgres:18", "--negotiation", "quick"}, 2, "--negotiation quick: use postgres (an SSLRequest first) or direct"},
		{"bad sslnegotiation", []string{"connect", "postgres://u@127.0.0.1/db?sslnegotiation=fast"}, 2, "sslnegotiation=fast: use postgres or direct, as libpq spells them"},
		{"pgbouncer before mariadb", []string{"connect", "--lab", "mariadb", "--via", "pgbouncer"}, 2, "--via pgbouncer puts PgBouncer before a PostgreSQL server tlsbench starts: use --lab postgres"},
		{"pgbouncer pool mode", []string{"connect", "--lab", "postgres", "--via", "pgbouncer?pool_mode=statement"}, 2, "--via pgbouncer: pool_mode=statement: use session or transaction"},
		{"pgbouncer transaction prepared", []string{"connect", "--lab", "postgres", "--via", "pgbouncer?pool_mode=transaction"}, 2, "PgBouncer before 1.21 keeps no prepared statement from one transaction to the next: add --query-mode simple"},
		{"pgbouncer local plain", []string{"connect", "--lab", "postgres", "--via", "pgbouncer:local?server_tls_sslmode=disable"}, 2, "--via pgbouncer:local pools TLS connections to the server"},
		{"pgbouncer direct", []string{"connect", "--lab", "postgres:18", "--negotiation", "direct", "--via", "pgbouncer"}, 2, "PgBouncer takes TLS only after an SSLRequest"},
		{"haproxy before mariadb", []string{"connect", "--lab", "mariadb", "--via", "haproxy"}, 2, "--via haproxy cannot carry MySQL/MariaDB TLS: TLS starts inside their protocol"},
		{"haproxy before postgres", []string{"connect", "--lab", "postgres", "--tls", "1.3", "--via", "haproxy"}, 2, "--via haproxy with PostgreSQL needs --negotiation direct"},
		{"haproxy before a URL", []string{"connect", "https://127.0.0.1:1/", "--via", "haproxy"}, 2, "--via haproxy puts HAProxy before a plaintext server tlsbench starts"},
		{"openssh cipher", []string{"connect", "--lab", "mariadb", "--via", "openssh:rot13-cbc"}, 2, "--via openssh: unknown cipher rot13-cbc: use one of"},
		{"openssh before a URL", []string{"connect", "https://127.0.0.1:1/", "--via", "openssh"}, 2, "--via openssh runs OpenSSH's client through the lab's sshd"},
		{"wireguard before a URL", []string{"connect", "https://127.0.0.1:1/", "--via", "wireguard"}, 2, "--via wireguard puts the lab server behind a VPN tlsbench builds"},
		{"wireguard before the built-in server", []string{"connect", "builtin", "--via", "wireguard"}, 2, "--via wireguard puts the lab server behind a VPN tlsbench builds"},
		{"lab engines mixed", []string{"connect", "--lab", "postgres,mariadb"}, 2, "--lab postgres,mariadb: compare versions of one engine (postgres:15,postgres:18), not engines"},
		{"lab version of redis", []string{"connect", "--lab", "redis:7"}, 2, "--lab redis: only PostgreSQL comes in versions here, as postgres:15 or postgres:18"},
		// Checked before any server starts (Redis used to start first).
		{"lab command's last engine", []string{"lab", "redis", "mysql"}, 2, "--lab mysql: no such lab server: use postgres, mariadb, redis or mongodb"},
		{"lab command's key, sshd first", []string{"lab", "sshd", "redis", "--key", "rsa512"}, 2, `--key: unknown key type "rsa512"`},
		{"unknown flag", []string{"connect", "builtin", "--fast"}, 2, "unknown flag: --fast (see tlsbench connect --help)"},
		{"misspelled flag", []string{"connect", "builtin", "--trails", "3"}, 2, "unknown flag: --trails: did you mean --trials?"},
		{"another command's flag", []string{"pool", "builtin", "--clients", "3"}, 2, "unknown flag: --clients: --clients belongs to storm"},
		{"misspelled command", []string{"conect", "builtin"}, 2, `unknown command "conect": did you mean connect?`},
		{"unknown command", []string{"bogus"}, 2, `unknown command "bogus" (see tlsbench --help)`},
		{"key on external", []string{"connect", https, "--key", "rsa2048"}, 2, "--key applies to servers tlsbench starts"},
		{"tls on http URL", []string{"connect", "http://127.0.0.1:1/", "--tls", "1.3"}, 2, "is plain HTTP: use an https:// URL"},
		{"unknown CA", append([]string{"connect", https}, short...), 1, "signed by an unknown authority: pass --ca FILE"},
		{"ca not PEM", append([]string{"connect", https, "--ca", notResult}, short...), 2, "--ca:"},
		{"TLS 1.3 of a 1.2 server", append([]string{"connect", "https://127.0.0.1" + port(only12.Endpoint("ecdsa-p256")) + "/", "--tls", "1.3", "--ca", only12.CAFile()}, short...), 1, "does not speak TLS 1.3"},
		{"report of no result", []string{"report", notResult}, 1, "is not a tlsbench result file"},
		{"report of nothing", []string{"report", "/nonexistent.json"}, 2, "/nonexistent.json: no such result file"},
		{"empty target", []string{"connect", ""}, 2, "the TARGET given is empty"},
		{"bad source", []string{"connect", "builtin", "--source", "127.0.1"}, 2, `--source "127.0.1": use auto, spread or an IP address`},
		{"report of a device", []string{"report", "/dev/zero"}, 2, "result file /dev/zero is not a regular file (a character device)"},
		{"ca of a device", []string{"connect", https, "--ca", "/dev/zero"}, 2, "--ca: CA file /dev/zero is not a regular file"},
		{"trials 0", []string{"connect", "builtin", "--trials", "0"}, 2, "--trials: 0 is out of range"},
		{"timeout 0", []string{"connect", "builtin", "--timeout", "0"}, 2, "--timeout: 0 is out of range"},
		{"bad error rate", []string{"connect", "builtin", "--max-error-rate", "x"}, 2, `--max-error-rate: "x" is not a share`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runMain(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.code, stderr)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr %q, want it to say %q", stderr, tt.want)
			}
			if len(errorLines(stderr)) != 1 || strings.Contains(stderr, "goroutine") {
				t.Errorf("want one line on stderr, got %q", stderr)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
		})
	}
}

func port(addr string) string { return addr[strings.LastIndex(addr, ":"):] }

// TestReportRerendersRun checks that `report` prints, byte for byte, what
// the run printed, and that the result holds what it must.
func TestReportRerendersRun(t *testing.T) {
	labtest.Slow(t)
	out := filepath.Join(t.TempDir(), "r.json")
	code, runOut, stderr := runMain(t, "connect", "builtin", "--tls", "off,1.3", "--key", "ecdsa-p256", "-c", "1,2", "-n", "20", "--trials", "2", "-o", out)
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	code, reportOut, stderr := runMain(t, "report", out)
	if code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	if runOut != reportOut {
		t.Errorf("report differs from the run's output\nrun:\n%s\nreport:\n%s", runOut, reportOut)
	}
	r, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Trials) != 2*2*2 || r.Interrupted || r.Error != "" {
		t.Errorf("%d trials, interrupted %v, error %q; want 8 clean trials", len(r.Trials), r.Interrupted, r.Error)
	}
	if r.Env.CPUModel == "" || r.Env.Cores == 0 || r.Tool.Go == "" || r.Target.Server == nil || len(r.Command) < 2 {
		t.Errorf("environment, tool or server missing: %+v %+v %+v %v", r.Env, r.Tool, r.Target, r.Command)
	}
	for _, tr := range r.Trials {
		if tr.Latency.HDR == "" || tr.Ops != 20 {
			t.Errorf("trial %s c=%d: %d ops, histogram %d bytes", tr.Variant, tr.Concurrency, tr.Ops, len(tr.Latency.HDR))
		}
	}
}

// TestNoSecrets checks that a password in the target URL, a token in its
// query and passwords in inputs that are no URL at all reach neither the
// output, the result file nor its HTML page; the token still reaches the
// server, which refuses requests without it.
func TestNoSecrets(t *testing.T) {
	labtest.Slow(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("token") != "s3cr3t-tok" {
			http.Error(w, "no token", http.StatusForbidden)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	dir := t.TempDir()
	out := filepath.Join(dir, "r.json")
	url := strings.Replace(srv.URL, "http://", "http://bench:s3cr3t-pw@", 1) + "/x?token=s3cr3t-tok&a=1"
	code, stdout, stderr := runMain(t, "connect", url, "-n", "5", "--trials", "1", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	data, _ := os.ReadFile(out)
	page, _ := os.ReadFile(filepath.Join(dir, "r.html"))
	seen := map[string]string{"stdout": stdout, "stderr": stderr, "result": string(data), "page": string(page)}
	for i, bad := range []string{
		"host=127.0.0.1 user=app password=s3cr3t-pw dbname=app",
		"app:s3cr3t-pw@tcp(127.0.0.1:3306)/bench",
		"postgres:///app?host=/var/run/postgresql&password=s3cr3t-pw",
		"postgres://[::1/app?password=s3cr3t-pw",
		"https://admin:12#s3cr3t-pw@127.0.0.1/",
	} {
		code, so, se := runMain(t, "connect", bad, "-n", "1")
		if code != 2 {
			t.Errorf("%d: exit %d, want 2: %s", i, code, se)
		}
		seen[fmt.Sprintf("bad input %d", i)] = so + se
	}
	for what, s := range seen {
		if strings.Contains(s, "s3cr3t-pw") || strings.Contains(s, "s3cr3t-tok") {
			t.Errorf("a secret is in %s:\n%s", what, s)
		}
	}
	if !strings.Contains(string(data), "bench:xxxxx@") || !strings.Contains(string(data), "token=xxxxx") {
		t.Errorf("the result does not name the redacted target")
	}
}

// TestInterrupt sends Ctrl-C (SIGINT) to a real run: it must stop within 2 s,
// exit 130, keep the finished trials and stop the server it started,
// removing its keys.
func TestInterrupt(t *testing.T) {
	labtest.Slow(t)
	tmp := t.TempDir()
	out := filepath.Join(t.TempDir(), "r.json")
	cmd := exec.Command(os.Args[0], "connect", "builtin", "--tls", "off,1.3", "--key", "ecdsa-p256", "-d", "400ms", "--trials", "50", "-o", out)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // server start, check, a few trials
	sent := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	took := time.Since(sent)
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit %d (%v), want 130; stderr: %s", code, err, stderr.String())
	}
	if took > 2*time.Second {
		t.Errorf("stopping took %v, want at most 2 s", took)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("no result file after Ctrl-C: %v", err)
	}
	var r result.Result
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	if !r.Interrupted || len(r.Trials) == 0 || len(r.Trials) >= 100 {
		t.Errorf("interrupted %v with %d trials; want true and some of 100", r.Interrupted, len(r.Trials))
	}
	left, _ := os.ReadDir(tmp)
	if len(left) > 0 {
		t.Errorf("the server's temp dir (keys) is left behind: %v", left)
	}
	if pids := processesMentioning(tmp); len(pids) > 0 {
		t.Errorf("server processes still running: %v", pids)
	}
}

// processesMentioning lists processes whose command line contains s.
func processesMentioning(s string) []string {
	var pids []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(s)) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// panicAt makes the built-in target's driver panic in its nth Open, in a
// worker goroutine as a driver bug would: a stand-in for tlsbench's own
// driver seam, wrapping the real HTTP driver.
func panicAt(n int64) {
	var opens atomic.Int64
	driver.Register(func(cfg driver.Config) (driver.Driver, error) {
		d, err := driver.New("http", cfg)
		return panicky{d, &opens, n}, err
	}, "builtin")
}

type panicky struct {
	driver.Driver
	opens *atomic.Int64
	at    int64
}

func (p panicky) Open(ctx context.Context) (driver.Session, error) {
	if p.opens.Add(1) == p.at {
		var s driver.Session
		s.Close() // a nil interface: the kind of bug pgx's hook had
	}
	return p.Driver.Open(ctx)
}

// TestPanicKeepsTrials makes a driver panic mid-run, in a worker (open 30:
// the check opens one connection per variant, each trial 20, so it falls in
// the second trial) and on the run's own goroutine (open 2, in the check).
// Either way the run ends with one line and exit 1, not a stack trace; the
// finished trials are in the result file; the server it started is stopped
// and its keys removed.
func TestPanicKeepsTrials(t *testing.T) {
	labtest.Slow(t)
	for _, tt := range []struct {
		at     string
		trials int
	}{{"30", 1}, {"2", 0}} {
		tmp := t.TempDir()
		out := filepath.Join(t.TempDir(), "r.json")
		cmd := exec.Command(os.Args[0], "connect", "builtin", "--tls", "off,1.3", "--key", "ecdsa-p256", "-n", "20", "--trials", "3", "-o", out)
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "TLSBENCH_TEST_PANIC_AT="+tt.at)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code != 1 {
			t.Errorf("panic at open %s: exit %d, want 1; stderr: %s", tt.at, code, stderr.String())
		}
		lines := errorLines(stderr.String())
		if len(lines) != 1 || !strings.Contains(lines[0], "internal error at cli_test.go:") {
			t.Errorf("panic at open %s: want one error line naming the panic's site, got %q", tt.at, lines)
		}
		if strings.Contains(stderr.String(), "goroutine ") {
			t.Errorf("panic at open %s: a stack trace was printed:\n%s", tt.at, stderr.String())
		}
		r, err := result.Read(out)
		switch {
		case tt.trials == 0 && err == nil:
			t.Errorf("panic at open %s: a result file with no trial was written", tt.at)
		case tt.trials > 0 && err != nil:
			t.Errorf("panic at open %s: no result: %v", tt.at, err)
		case tt.trials > 0 && (len(r.Trials) != tt.trials || !strings.Contains(r.Error, "internal error") || !strings.Contains(lines[0], "finished trials are in")):
			t.Errorf("panic at open %s: result has %d trials and error %q; want %d and the internal error", tt.at, len(r.Trials), r.Error, tt.trials)
		}
		if left, _ := os.ReadDir(tmp); len(left) > 0 {
			t.Errorf("panic at open %s: the server's temp dir (keys) is left behind: %v", tt.at, left)
		}
		if pids := processesMentioning(tmp); len(pids) > 0 {
			t.Errorf("panic at open %s: server processes still running: %v", tt.at, pids)
		}
	}
}

// TestErrorRate runs against a real HTTP server that fails every third
// request: a third of the operations failing is past the default
// --max-error-rate of 5%, so the run stops with exit 1 after saving the
// trial, with the first message of the failing kind; a rate above a third
// lets it through; a trial with no operation at all (-d 1ns) is an error.
func TestErrorRate(t *testing.T) {
	labtest.Slow(t)
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if n.Add(1)%3 == 0 {
			http.Error(w, "third", http.StatusInternalServerError)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	dir := t.TempDir()
	for _, tt := range []struct {
		name   string
		args   []string
		code   int
		want   string
		trials int
	}{
		{"default 5%", nil, 1, "operations failed (33.", 1},
		{"50%", []string{"--max-error-rate", "50%"}, 0, "", 2},
		{"fraction", []string{"--max-error-rate", "0.4"}, 0, "", 2},
		{"no operation", []string{"-d", "1ns", "-n", "0"}, 1, "no operation finished within the trial", 0},
		{"bad rate", []string{"--max-error-rate", "120%"}, 2, "--max-error-rate: 120% is out of range", 0},
	} {
		n.Store(0)
		out := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".json")
		args := append([]string{"connect", srv.URL + "/", "-n", "30", "--trials", "2", "-o", out}, tt.args...)
		code, stdout, stderr := runMain(t, args...)
		if code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and %q", tt.name, code, stderr, tt.code, tt.want)
		}
		if tt.trials > 0 && !strings.Contains(stdout, "response: status 500 errors, the first: response: HTTP status 500") {
			t.Errorf("%s: the report does not quote the first error:\n%s", tt.name, stdout)
		}
		r, err := result.Read(out)
		if tt.trials == 0 {
			if err == nil {
				t.Errorf("%s: a result with no trial was written", tt.name)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if len(r.Trials) != tt.trials {
			t.Errorf("%s: %d trials saved, want %d", tt.name, len(r.Trials), tt.trials)
		}
		tr := r.Trials[0]
		if got := tr.ErrorSamples["response: status 500"]; tr.Errors["response: status 500"] != 10 || !strings.Contains(got, "HTTP status 500") {
			t.Errorf("%s: errors %v, samples %v; want 10 of kind response: status 500 with its message", tt.name, tr.Errors, tr.ErrorSamples)
		}
	}
}

// TestHelpDefaults checks that every flag of the measuring commands shows
// at most one default in --help (the command's own, or plan's when it has
// none): --key once showed two.
func TestHelpDefaults(t *testing.T) {
	for _, cmd := range [][]string{{"--help"}, {"connect", "--help"}, {"pool", "--help"}} {
		_, stdout, _ := runMain(t, cmd...)
		for _, line := range strings.Split(stdout, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "-") && strings.Count(line, "(default ")+strings.Count(line, "(default:") > 1 {
				t.Errorf("%v: two defaults: %s", cmd, strings.TrimSpace(line))
			}
		}
	}
}
