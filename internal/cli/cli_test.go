package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/result"
)

// The test binary doubles as tlsbench: with TLSBENCH_AS_MAIN set it runs
// Main, so the built-in server a run starts (os.Executable() serve ...) and
// the subprocesses of these tests run the real command line.
func TestMain(m *testing.M) {
	if os.Getenv("TLSBENCH_AS_MAIN") != "" {
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Setenv("TLSBENCH_AS_MAIN", "1")
	os.Exit(m.Run())
}

func runMain(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

// startServer starts a real built-in server for a test.
func startServer(t *testing.T, o lab.BuiltinOptions) *lab.Builtin {
	t.Helper()
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
		{"unknown flag", []string{"connect", "builtin", "--fast"}, 2, "unknown flag: --fast"},
		{"key on external", []string{"connect", https, "--key", "rsa2048"}, 2, "--key applies to servers tlsbench starts"},
		{"tls on http URL", []string{"connect", "http://127.0.0.1:1/", "--tls", "1.3"}, 2, "is plain HTTP: use an https:// URL"},
		{"unknown CA", append([]string{"connect", https}, short...), 1, "signed by an unknown authority: pass --ca FILE"},
		{"ca not PEM", append([]string{"connect", https, "--ca", notResult}, short...), 2, "--ca:"},
		{"TLS 1.3 of a 1.2 server", append([]string{"connect", "https://127.0.0.1" + port(only12.Endpoint("ecdsa-p256")) + "/", "--tls", "1.3", "--ca", only12.CAFile()}, short...), 1, "does not speak TLS 1.3"},
		{"report of no result", []string{"report", notResult}, 1, "is not a tlsbench result file"},
		{"report of nothing", []string{"report", "/nonexistent.json"}, 1, "no such file"},
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
			if n := strings.Count(stderr, "\n"); n != 1 || strings.Contains(stderr, "goroutine") {
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

// TestNoSecrets checks that a password in the target URL reaches neither
// the output nor the result file.
func TestNoSecrets(t *testing.T) {
	srv := startServer(t, lab.BuiltinOptions{Keys: []string{"ecdsa-p256"}, ResponseSize: 16})
	out := filepath.Join(t.TempDir(), "r.json")
	url := "http://bench:s3cr3t-pw@127.0.0.1" + port(srv.Endpoint("")) + "/"
	code, stdout, stderr := runMain(t, "connect", url, "-n", "5", "--trials", "1", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	data, _ := os.ReadFile(out)
	for what, s := range map[string]string{"stdout": stdout, "stderr": stderr, "result": string(data)} {
		if strings.Contains(s, "s3cr3t-pw") {
			t.Errorf("the password is in %s", what)
		}
	}
	if !strings.Contains(string(data), "bench:xxxxx@") {
		t.Errorf("the result does not name the redacted target")
	}
}

// TestInterrupt sends Ctrl-C (SIGINT) to a real run: it must stop within 2 s,
// exit 130, keep the finished trials and stop the server it started,
// removing its keys.
func TestInterrupt(t *testing.T) {
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
